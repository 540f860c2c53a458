"""ToACP through the servicer (``conversion_servicer.to_acp``) against the general path.

The general path decodes the whole envelope (``E2AEnvelope.from_proto``) and writes the call
(``conversion.to_acp``). For every message the servicer must give the same answer, and the same
error under the request's ``envelope`` field.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2a.v1 import conversion_service_pb2 as pb
from e2a_grpc import E2AEnvelope, conversion, jsontext
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.grpc import conversion_servicer
from e2a_grpc.model import proto
from tests.support.strategies import assert_identical, canonical_envelopes

# How many examples: the hypothesis profile (tests/conftest.py; HYPOTHESIS_PROFILE=thorough for 1000).
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def general_path(message: Any, **options: Any) -> str:
    call = conversion.to_acp(E2AEnvelope.from_proto(message), **options)
    assert isinstance(call, dict)
    return jsontext.dumps(call, parsed=True)


def servicer_path(message: Any, *, session_prompt_methods: tuple[str, ...] = (), wire: bool = False) -> str:
    """The servicer's ToACP reply text; errors in the envelope are named as the general path names them."""
    request = pb.ToACPRequest(
        envelope=message,
        session_prompt_methods=session_prompt_methods,
        dialect=pb.ACP_DIALECT_WIRE if wire else pb.ACP_DIALECT_UNSPECIFIED,
    )
    try:
        return conversion_servicer.to_acp(request).jsonrpc
    except E2AFieldError as exc:
        if exc.field.startswith("envelope."):
            raise type(exc)(exc.field.removeprefix("envelope."), exc.problem) from None
        raise


@PROPERTY
@given(canonical_envelopes, st.booleans(), st.booleans(), st.booleans())
def test_servicer_equals_general_path(envelope: dict[str, Any], as_prompt: bool, with_prompt: bool, wire: bool) -> None:
    if with_prompt:
        # Both branches of the prompt merge: session/prompt with and without a prompt of its own.
        envelope = {**envelope, "params": {**envelope["params"], "prompt": [{"type": "text", "text": "hi"}]}}
    message = proto.encode(envelope, E2AEnvelope.CODEC)
    options: dict[str, Any] = {
        "session_prompt_methods": (envelope["method"],) if as_prompt and envelope["method"] else (),
        "wire": wire,
    }
    try:
        expected = general_path(message, **options)
    except E2AFieldError as exc:
        with pytest.raises(type(exc)) as raised:
            servicer_path(message, **options)
        assert (raised.value.field, raised.value.problem) == (exc.field, exc.problem)
        return
    assert servicer_path(message, **options) == expected


def test_params_text_of_another_writer_is_read_as_json() -> None:
    # Another writer's spacing and escapes: the same JSON value in the call.
    params_text = '{ "text" : "caf\\u00e9", "n": 1.50, "big": 123456789012345678901234567890 }'
    message = proto.encode(E2AEnvelope(method="chat.send", jsonrpc_id=7).to_dict(), E2AEnvelope.CODEC)
    message.params = params_text
    text = servicer_path(message)
    assert text == general_path(message)
    assert_identical(json.loads(text)["params"], json.loads(params_text))


def test_prompt_merge_and_wire_dialect_are_applied() -> None:
    envelope = E2AEnvelope(method="chat.send", session_id="s1", params={"text": "hello"}, acp_meta={"k": 1})
    message = envelope.to_proto()
    merged = json.loads(servicer_path(message, session_prompt_methods=("chat.send",)))
    assert merged["method"] == "session/prompt"
    assert merged["params"] == {
        "text": "hello",
        "prompt": [{"type": "text", "text": "hello"}],
        "session_id": "s1",
        "_meta": {"k": 1},
    }
    wire = json.loads(servicer_path(message, session_prompt_methods=("chat.send",), wire=True))
    assert wire["params"] == {"sessionId": "s1", "prompt": [{"type": "text", "text": "hello"}], "_meta": {"k": 1}}


def test_jsonrpc_id_beyond_64_bits_is_written_exactly() -> None:
    message = E2AEnvelope(method="chat.send", jsonrpc_id=2**70, params={"a": 1}).to_proto()
    text = servicer_path(message)
    assert text == general_path(message)
    assert text.startswith('{"jsonrpc":"2.0","id":1180591620717411303424,')


def _set(message: Any, path: str, value: Any) -> None:
    *parents, name = path.split(".")
    for parent in parents:
        message = getattr(message, parent)
    setattr(message, name, value)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("params", '{"a": ', "invalid JSON text"),
        ("params", "[1, 2]", "expected JSON text of an object"),
        ("channel_context", "{oops}", "invalid JSON text"),
        ("agent_ref", '"agent-1"', "expected JSON text of an object"),
        ("acp_meta", "{} {}", "invalid JSON text"),
        ("provenance.details", "nul", "invalid JSON text"),
        ("identity_origin", 99, "unknown IdentityOrigin value 99"),
        ("jsonrpc_id.number_value", float("nan"), "is not a JSON number"),
    ],
)
def test_bad_fields_raise_the_general_paths_error(field: str, value: Any, problem: str) -> None:
    message = E2AEnvelope(method="chat.send", params={"a": 1}).to_proto()
    _set(message, field, value)
    with pytest.raises(E2AFieldError) as served:
        servicer_path(message)
    with pytest.raises(E2AFieldError) as general:
        E2AEnvelope.from_proto(message)
    assert served.value.field == general.value.field
    assert served.value.problem == general.value.problem
    assert served.value.field.startswith(field.split(".")[0]) and problem in served.value.problem


def test_lone_surrogate_escape_in_params_is_kept() -> None:
    # orjson refuses "\ud800"; the standard decoder reads it, and the general path writes it back.
    message = E2AEnvelope(method="chat.send").to_proto()
    message.params = '{"u":"\\ud800"}'
    text = servicer_path(message)
    assert text == general_path(message)
    assert json.loads(text)["params"] == {"u": "\ud800"}


def test_a_prompt_key_written_with_escapes_is_still_found() -> None:
    # An escaped key is still a prompt: nothing is merged in.
    message = E2AEnvelope(method="session/prompt", session_id="s1").to_proto()
    message.params = '{"\\u0070rompt":[{"type":"text","text":"hi"}]}'
    text = servicer_path(message)
    assert text == general_path(message)
    assert json.loads(text)["params"] == {"prompt": [{"type": "text", "text": "hi"}]}


@pytest.mark.parametrize("depth", [jsontext.MAX_DEPTH - 1, jsontext.MAX_DEPTH, jsontext.MAX_DEPTH + 1, 1000])
def test_params_nesting_has_one_limit_on_both_paths(depth: int) -> None:
    # params is an object holding (depth - 1) nested arrays: ``depth`` levels in all.
    message = E2AEnvelope(method="chat.send", jsonrpc_id=1).to_proto()
    message.params = '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    if depth < jsontext.MAX_DEPTH:
        assert servicer_path(message) == general_path(message)
        return
    # At MAX_DEPTH the params can be read, but the call holding them would be one level deeper.
    with pytest.raises(E2AFieldError) as general:
        general_path(message)
    with pytest.raises(E2AFieldError) as served:
        servicer_path(message)
    assert (served.value.field, served.value.problem) == (general.value.field, general.value.problem)
    assert served.value.problem.endswith(f"nesting deeper than {jsontext.MAX_DEPTH} levels")

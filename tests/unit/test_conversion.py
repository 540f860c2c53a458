"""ToACP's hot path (``conversion.acp_fast_path``) against the general path.

The hot path forwards the caller's params JSON text when ToACP does not change params; the
general path decodes the whole envelope and re-encodes the call. For every message both must give
the same answer, and where the params text is in orjson's compact form (as this codec writes all
but big integers and lone surrogates) the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2a_grpc import E2AEnvelope, conversion, jsontext
from e2a_grpc.conversion.acp_fast_path import envelope_message_to_acp_json
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import proto
from tests.support.strategies import assert_identical, canonical_envelopes

# How many examples: the hypothesis profile (tests/conftest.py; HYPOTHESIS_PROFILE=thorough for 1000).
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def general_path(message: Any, **options: Any) -> str:
    call = conversion.to_acp(E2AEnvelope.from_proto(message), **options)
    assert isinstance(call, dict)
    return jsontext.dumps(call, parsed=True)


@PROPERTY
@given(canonical_envelopes, st.booleans(), st.booleans(), st.booleans())
def test_hot_path_equals_general_path(envelope: dict[str, Any], as_prompt: bool, with_prompt: bool, wire: bool) -> None:
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
            envelope_message_to_acp_json(message, **options)
        assert (raised.value.field, raised.value.problem) == (exc.field, exc.problem)
        return
    text = envelope_message_to_acp_json(message, **options)
    if _orjson_canonical(message.params):
        assert text == expected
    else:
        # The codec's standard-encoder fallback (big ints, lone surrogates) escapes non-ASCII text.
        assert_identical(json.loads(text), json.loads(expected))


def _orjson_canonical(text: str) -> bool:
    try:
        return orjson.dumps(orjson.loads(text)) == text.encode()
    except orjson.JSONDecodeError:
        return False


def test_params_text_is_forwarded_as_written() -> None:
    # Another writer's spacing and escapes: the same JSON value, forwarded byte for byte.
    params_text = '{ "text" : "caf\\u00e9", "n": 1.50, "big": 123456789012345678901234567890 }'
    message = proto.encode(E2AEnvelope(method="chat.send", jsonrpc_id=7).to_dict(), E2AEnvelope.CODEC)
    message.params = params_text
    text = envelope_message_to_acp_json(message)
    assert text == f'{{"jsonrpc":"2.0","id":7,"method":"chat.send","params":{params_text}}}'
    assert json.loads(text)["params"] == json.loads(general_path(message))["params"]


def test_prompt_merge_and_wire_dialect_are_applied() -> None:
    envelope = E2AEnvelope(method="chat.send", session_id="s1", params={"text": "hello"}, acp_meta={"k": 1})
    message = envelope.to_proto()
    merged = json.loads(envelope_message_to_acp_json(message, session_prompt_methods=("chat.send",)))
    assert merged["method"] == "session/prompt"
    assert merged["params"] == {
        "text": "hello",
        "prompt": [{"type": "text", "text": "hello"}],
        "session_id": "s1",
        "_meta": {"k": 1},
    }
    wire = json.loads(envelope_message_to_acp_json(message, session_prompt_methods=("chat.send",), wire=True))
    assert wire["params"] == {"sessionId": "s1", "prompt": [{"type": "text", "text": "hello"}], "_meta": {"k": 1}}


def test_jsonrpc_id_beyond_64_bits_is_written_exactly() -> None:
    message = E2AEnvelope(method="chat.send", jsonrpc_id=2**70, params={"a": 1}).to_proto()
    text = envelope_message_to_acp_json(message)
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
    with pytest.raises(E2AFieldError) as hot:
        envelope_message_to_acp_json(message)
    with pytest.raises(E2AFieldError) as general:
        E2AEnvelope.from_proto(message)
    assert hot.value.field == general.value.field
    assert hot.value.problem == general.value.problem
    assert hot.value.field.startswith(field.split(".")[0]) and problem in hot.value.problem


def test_lone_surrogate_escape_in_params_is_kept() -> None:
    # orjson refuses "\ud800"; the standard decoder reads it, and the general path writes it back.
    message = E2AEnvelope(method="chat.send").to_proto()
    message.params = '{"u":"\\ud800"}'
    text = envelope_message_to_acp_json(message)
    assert text == general_path(message)
    assert json.loads(text)["params"] == {"u": "\ud800"}


def test_a_prompt_key_written_with_escapes_is_still_found() -> None:
    # The hot path skips its parse when the text has no "prompt" at all; an escaped key is still a
    # prompt, and the general path finds it: nothing is merged in.
    message = E2AEnvelope(method="session/prompt", session_id="s1").to_proto()
    message.params = '{"\\u0070rompt":[{"type":"text","text":"hi"}]}'
    text = envelope_message_to_acp_json(message)
    assert text == general_path(message)
    assert json.loads(text)["params"] == {"prompt": [{"type": "text", "text": "hi"}]}


@pytest.mark.parametrize("depth", [jsontext.MAX_DEPTH - 1, jsontext.MAX_DEPTH, jsontext.MAX_DEPTH + 1, 1000])
def test_params_nesting_has_one_limit_on_both_paths(depth: int) -> None:
    # params is an object holding (depth - 1) nested arrays: ``depth`` levels in all. Before this test,
    # the hot path forwarded params up to orjson's 1,024 levels that the general path refused.
    message = E2AEnvelope(method="chat.send", jsonrpc_id=1).to_proto()
    message.params = '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    if depth < jsontext.MAX_DEPTH:
        assert envelope_message_to_acp_json(message) == general_path(message)
        return
    # At MAX_DEPTH the params can be read, but the call holding them would be one level deeper.
    with pytest.raises(E2AFieldError) as general:
        general_path(message)
    with pytest.raises(E2AFieldError) as hot:
        envelope_message_to_acp_json(message)
    assert (hot.value.field, hot.value.problem) == (general.value.field, general.value.problem)
    assert hot.value.problem.endswith(f"nesting deeper than {jsontext.MAX_DEPTH} levels")

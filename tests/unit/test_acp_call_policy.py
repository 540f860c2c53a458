"""ToACP's call policy (``acp.envelope_to_acp_call``) against its reference composition.

The reference is how the call was built before the policy had one home: the envelope copied with
``method="session/prompt"`` when its method is in ``session_prompt_methods``, then the reference
adapter's call (``jsonrpc_id``, ``ext_method`` for ``ext``, ``merge_params_to_acp_prompt``), then
the wire dialect as ``wire_request`` wrote it (written out here, so a change to it shows). For any
envelope and options both give the same call, or the same error.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from e2a_grpc import E2AEnvelope
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError
from e2a_grpc.model.constants import ACP_SESSION_PROMPT
from e2a_grpc.protocols import acp, jsonrpc
from tests.support.strategies import canonical_envelopes, json_objects, json_values

# How many examples: the hypothesis profile (tests/conftest.py; HYPOTHESIS_PROFILE=thorough for 1000).
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

_METHODS = st.sampled_from([ACP_SESSION_PROMPT, "chat.send", acp.EXT_METHOD, "session/new", "", None])
_BLOCKS = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "resource"])},
        optional={"text": st.text(max_size=4), "mime_type": st.text(max_size=4), "resource": json_values},
    ),
    max_size=3,
)
_TEXTS = st.sampled_from(["hi", "", None]) | json_values
# The keys the policy reads or renames, in both spellings, each with values that pass its checks
# and values of every other kind.
_PARAM_VALUES = {
    "prompt": _BLOCKS | json_values,
    "content_blocks": _BLOCKS | json_values,
    "text": _TEXTS,
    "content": _TEXTS,
    "query": _TEXTS,
    "session_id": st.sampled_from(["s1", "", None, 7]),
    "sessionId": st.sampled_from(["s2", "", None, 7]),
    "_meta": json_objects | json_values,
    "mime_type": json_values,
    "x_y": json_values,
}
_PARAMS = st.lists(st.sampled_from(list(_PARAM_VALUES)), unique=True, max_size=5).flatmap(
    lambda keys: st.tuples(*(_PARAM_VALUES[key] for key in keys)).map(
        lambda values: dict(zip(keys, values, strict=True))
    )
)
# Params a wire session/prompt accepts more often than not (the others mostly fail its checks):
# a text, or a prompt and an ACP session id of their own.
_OPTIONAL_PROMPT_KEYS = {"session_id": st.just("s1"), "_meta": json_objects, "x_y": json_values}
_PROMPT_PARAMS = st.fixed_dictionaries({"text": st.just("hi")}, optional=_OPTIONAL_PROMPT_KEYS) | st.fixed_dictionaries(
    {"prompt": _BLOCKS, "sessionId": st.just("s2")}, optional=_OPTIONAL_PROMPT_KEYS
)


def _camel(key: str) -> str:
    if key.startswith("_") or "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _camel_keys(values: dict[str, Any]) -> dict[str, Any]:
    return {_camel(key): value for key, value in values.items()}


def reference_wire(call: dict[str, Any]) -> dict[str, Any]:
    method = call["method"]
    if not isinstance(method, str) or not method:
        raise E2AValueError("method", "a wire ACP request needs a method")
    params = _camel_keys(call["params"])
    if method == ACP_SESSION_PROMPT:
        if not isinstance(params.get("sessionId"), str) or not params["sessionId"]:
            raise E2AValueError("session_id", "ACP session/prompt needs a session id (session_id or params)")
        prompt = params.get("prompt")
        if not isinstance(prompt, list) or not prompt:
            raise E2AValueError("params", "ACP session/prompt needs a prompt: give prompt, content_blocks or text")
        blocks = []
        for index, block in enumerate(prompt):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise E2ATypeError(f"params.prompt[{index}]", "an ACP content block is an object with a string 'type'")
            out = _camel_keys(block)
            if isinstance(out.get("resource"), dict):
                out["resource"] = _camel_keys(out["resource"])
            blocks.append(out)
        params["prompt"] = blocks
        params = {key: params[key] for key in ("sessionId", "prompt", "_meta") if key in params}
    if call["id"] is None:
        return jsonrpc.notification(method, params)
    return jsonrpc.request(call["id"], method, params)


def reference_call(envelope: E2AEnvelope, session_prompt_methods: tuple[str, ...], wire: bool) -> dict[str, Any]:
    if envelope.method in session_prompt_methods:
        envelope = dataclasses.replace(envelope, method=ACP_SESSION_PROMPT)
    method = envelope.ext_method if envelope.method == acp.EXT_METHOD and envelope.ext_method else envelope.method
    call = jsonrpc.request(envelope.jsonrpc_id, method, acp.merge_params_to_acp_prompt(envelope))
    return reference_wire(call) if wire else call


def _outcome(build: Any) -> tuple[str, str]:
    """The call (its repr: key order counts, as in the JSON text written), or the error."""
    try:
        return "call", repr(build())
    except E2AFieldError as exc:
        return type(exc).__name__, repr((exc.field, exc.problem))


@PROPERTY
@given(
    canonical_envelopes,
    _METHODS,
    st.none() | st.sampled_from(["", "_co/do"]),
    st.sampled_from([None, "", "s1"]),
    _PARAMS | _PROMPT_PARAMS,
    st.lists(st.sampled_from(["chat.send", ACP_SESSION_PROMPT, acp.EXT_METHOD, "other"]), max_size=3),
    st.booleans(),
)
def test_the_policy_is_the_reference(
    values: dict[str, Any],
    method: str | None,
    ext_method: str | None,
    session_id: str | None,
    params: dict[str, Any],
    session_prompt_methods: list[str],
    wire: bool,
) -> None:
    envelope = E2AEnvelope.from_dict(
        {**values, "method": method, "ext_method": ext_method, "session_id": session_id, "params": params}
    )
    before = envelope.to_dict()
    methods = tuple(session_prompt_methods)
    got = _outcome(lambda: acp.envelope_to_acp_call(envelope, session_prompt_methods=methods, wire=wire))
    assert got == _outcome(lambda: reference_call(envelope, methods, wire))
    event(f"{got[0]}, wire={wire}, {envelope.method in methods or envelope.method == ACP_SESSION_PROMPT}")
    assert envelope.to_dict() == before  # the envelope is not changed


def test_empty_params_are_written_as_an_object() -> None:
    envelope = E2AEnvelope(method="session/new", jsonrpc_id=3)
    assert acp.envelope_to_acp_call(envelope) == {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {}}
    assert acp.envelope_to_acp_call(envelope, wire=True)["params"] == {}


def test_the_readme_call() -> None:
    envelope = E2AEnvelope.from_json('{"method":"chat.send","session_id":"s1","jsonrpc_id":1,"params":{"text":"hi"}}')
    assert acp.envelope_to_acp_call(envelope, session_prompt_methods=("chat.send",), wire=True) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]},
    }


@pytest.mark.parametrize(
    ("method", "ext_method", "sent_as"),
    [("ext", "_co/do", "_co/do"), ("ext", "", "ext"), ("ext", None, "ext"), ("m", "_co/do", "m")],
)
def test_ext_takes_its_method_from_ext_method(method: str, ext_method: str | None, sent_as: str) -> None:
    envelope = E2AEnvelope(method=method, ext_method=ext_method, params={"a": 1})
    assert acp.envelope_to_acp_call(envelope)["method"] == sent_as


def test_an_aliased_ext_is_a_session_prompt() -> None:
    envelope = E2AEnvelope(method="ext", ext_method="_co/do", session_id="s", params={"text": "hi"})
    call = acp.envelope_to_acp_call(envelope, session_prompt_methods=("ext",))
    assert call["method"] == ACP_SESSION_PROMPT
    assert call["params"]["prompt"] == [{"type": "text", "text": "hi"}]

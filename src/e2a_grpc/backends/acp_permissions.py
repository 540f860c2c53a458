"""An ACP agent's ``session/request_permission`` as an E2A question, and the answer as ACP's outcome.

The request (ACP ``RequestPermissionRequest``: ``sessionId``; ``toolCall``, the tool call it is about,
with ``toolCallId``, ``title``, ``kind``, ``content``, ``locations``, ...; ``options``, each
``{optionId, name, kind}``) becomes the ``InputRequired`` that ends a turn waiting for the client
(reason ``permission``, docs/wire-json.md section 8): the tool call as the agent sent it in
``request``, the options in E2A's snake_case. The client's answer (``e2a_grpc.chat.answers``) or a
policy's choice becomes the ``outcome`` of ACP's response: ``selected`` with the option's id, or
``cancelled``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from e2a_grpc.chat.answers import Answer
from e2a_grpc.chat.events import InputRequired
from e2a_grpc.model import WaitReason
from e2a_grpc.settings import PermissionAnswer

#: The option kinds a policy picks, best first.
_KINDS = {
    PermissionAnswer.ALLOW: ("allow_once", "allow_always"),
    PermissionAnswer.DENY: ("reject_once", "reject_always"),
}
#: The outcome that needs no option: the question is withdrawn (ACP also requires it for every
#: request still pending when the client cancels the prompt turn).
CANCELLED: dict[str, Any] = {"outcome": "cancelled"}


def question_options(params: Any) -> tuple[dict[str, Any], ...]:
    """The request's options as E2A options ``{option_id, name, kind}``; one without a string
    ``optionId`` cannot be chosen and is left out (a name or kind that is no string too)."""
    options = params.get("options") if isinstance(params, dict) else None
    chosen: list[dict[str, Any]] = []
    for option in options if isinstance(options, list) else ():
        if not (isinstance(option, dict) and isinstance(option.get("optionId"), str)):
            continue
        entry: dict[str, Any] = {"option_id": option["optionId"]}
        for key in ("name", "kind"):
            if isinstance(option.get(key), str):
                entry[key] = option[key]
        chosen.append(entry)
    return tuple(chosen)


def permission_question(params: dict[str, Any], options: tuple[dict[str, Any], ...]) -> InputRequired:
    """The question for a permission request with these ``options``; its ``result`` (the text of the
    turn before it) is filled in when it is asked."""
    tool_call = params.get("toolCall")
    tool_call = tool_call if isinstance(tool_call, dict) else {}
    title = tool_call.get("title")
    if not (isinstance(title, str) and title.strip()):
        title = f"tool call {tool_call.get('toolCallId', '?')}"
    request = {"tool_call": tool_call, "session_id": params.get("sessionId")}
    return InputRequired(WaitReason.PERMISSION, f"{title}: allow?", {}, request=request, options=options)


def selected(option_id: str) -> dict[str, Any]:
    return {"outcome": "selected", "optionId": option_id}


def outcome_of(answer: Answer) -> dict[str, Any]:
    """ACP's outcome for the client's answer."""
    return CANCELLED if answer.option_id is None else selected(answer.option_id)


def policy_outcome(options: Sequence[Mapping[str, Any]], answer: PermissionAnswer) -> dict[str, Any]:
    """The outcome a fixed policy gives: the first option of the best kind it picks; without one,
    ``cancelled``, the one outcome that needs no option."""
    for kind in _KINDS[answer]:
        for option in options:
            if option.get("kind") == kind:
                return selected(option["option_id"])
    return CANCELLED

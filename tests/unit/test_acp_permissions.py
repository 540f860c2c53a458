"""The mapping between an ACP ``session/request_permission`` and the E2A question (acp backend)."""

from __future__ import annotations

from typing import Any

from e2a_grpc.backends.acp_permissions import (
    CANCELLED,
    outcome_of,
    permission_question,
    policy_outcome,
    question_options,
)
from e2a_grpc.chat.answers import Answer
from e2a_grpc.model import WaitReason
from e2a_grpc.settings import PermissionAnswer

REQUEST: dict[str, Any] = {
    "sessionId": "acp-1",
    "toolCall": {"toolCallId": "t1", "title": "Run tests", "kind": "execute", "rawInput": {"n": 1}},
    "options": [
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "once", "name": "Once", "kind": "allow_once"},
        {"optionId": "no", "name": "No", "kind": "reject_once"},
    ],
}


def test_options_become_e2a_options_and_unusable_ones_are_left_out() -> None:
    params = {
        "options": [*REQUEST["options"], {"name": "no id"}, "junk", {"optionId": 7}, {"optionId": "x", "kind": 3}]
    }
    assert question_options(params) == (
        {"option_id": "always", "name": "Always", "kind": "allow_always"},
        {"option_id": "once", "name": "Once", "kind": "allow_once"},
        {"option_id": "no", "name": "No", "kind": "reject_once"},
        {"option_id": "x"},
    )
    assert question_options({"options": "none"}) == question_options(None) == ()


def test_the_question_names_the_tool_call() -> None:
    options = question_options(REQUEST)
    asked = permission_question(REQUEST, options)
    assert (asked.reason, asked.message, asked.options) == (WaitReason.PERMISSION, "Run tests: allow?", options)
    assert asked.request == {"tool_call": REQUEST["toolCall"], "session_id": "acp-1"}
    untitled = permission_question({"sessionId": "acp-1", "toolCall": {"toolCallId": "t2"}}, options)
    assert untitled.message == "tool call t2: allow?"


def test_policies_pick_the_best_option_of_their_kind_or_cancel() -> None:
    options = question_options(REQUEST)
    assert policy_outcome(options, PermissionAnswer.ALLOW) == {"outcome": "selected", "optionId": "once"}
    assert policy_outcome(options, PermissionAnswer.DENY) == {"outcome": "selected", "optionId": "no"}
    assert policy_outcome(options[:2], PermissionAnswer.DENY) == CANCELLED


def test_the_clients_answer_is_acps_outcome() -> None:
    assert outcome_of(Answer("always")) == {"outcome": "selected", "optionId": "always"}
    assert outcome_of(Answer(None)) == CANCELLED

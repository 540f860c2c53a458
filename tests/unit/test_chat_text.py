"""The text view of ``e2a-grpc chat``: what a person reads from each kind of frame."""

from __future__ import annotations

import io
from typing import Any

from e2a_grpc.client.chat_text import ChatTextPrinter
from e2a_grpc.model import E2AResponse


def frame(kind: str, body: dict[str, Any], status: str = "in_progress") -> E2AResponse:
    return E2AResponse.from_dict({"request_id": "r1", "response_kind": kind, "status": status, "body": body})


def printed(*frames: E2AResponse, styled: bool = False) -> str:
    out = io.StringIO()
    printer = ChatTextPrinter(out, styled=styled)
    for each in frames:
        printer.frame(each)
    printer.finish()
    return out.getvalue()


def complete(content: str) -> E2AResponse:
    return frame("e2a.complete", {"result": {"content": content}}, "succeeded")


def a2a_event(branch: str, payload: dict[str, Any]) -> E2AResponse:
    return frame("a2a.stream_event", {"branch": branch, "payload": payload})


def test_a2a_message_and_artifact_text() -> None:
    task = a2a_event("task", {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}})
    message = a2a_event("message", {"role": "ROLE_AGENT", "parts": [{"text": "Hi, "}]})
    artifact = a2a_event("artifact_update", {"artifact": {"parts": [{"text": "an artifact"}, {"data": {}}]}})
    assert printed(task, message, artifact, complete("Hi, an artifact")) == "Hi, an artifact\n"


def test_acp_message_chunks_passed_through() -> None:
    message = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "from ACP"}}
    plan = {"sessionUpdate": "plan", "entries": []}
    updates = [frame("acp.session_update", {"sessionId": "s", "update": update}) for update in (plan, message)]
    assert printed(*updates) == "from ACP\n"


def test_the_final_content_when_no_text_streamed() -> None:
    assert printed(complete("all at once")) == "all at once\n"
    assert printed(frame("e2a.chunk", {"delta_kind": "text", "delta": "streamed"}), complete("streamed")) == (
        "streamed\n"
    )


def test_reasoning_and_tools_get_lines_of_their_own() -> None:
    frames = (
        frame("e2a.chunk", {"delta_kind": "reasoning", "delta": "let me "}),
        frame("e2a.chunk", {"delta_kind": "reasoning", "delta": "see"}),
        frame("e2a.chunk", {"delta_kind": "tool", "delta": {"toolCallId": "c1", "title": "Read", "status": "pending"}}),
        frame("e2a.chunk", {"delta_kind": "text", "delta": "Done"}),
    )
    assert printed(*frames) == "thinking: let me see\n[tool] Read (pending)\nDone\n"
    assert printed(*frames, styled=True) == (
        "\x1b[2mthinking: let me see\x1b[0m\n\x1b[36m[tool] Read (pending)\x1b[0m\nDone\n"
    )


def test_nothing_printed_ends_without_a_blank_line() -> None:
    assert printed(frame("e2a.error", {"code": "x", "message": "y"}, "failed")) == ""


PERMISSION_OPTIONS = [
    {"option_id": "once", "name": "Allow once", "kind": "allow_once"},
    {"option_id": "never", "name": "Reject always", "kind": "reject_always"},
]


def waiting(reason: str, message: str, content: str, **extra: Any) -> E2AResponse:
    body = {"reason": reason, "message": message, "result": {"content": content}, **extra}
    return frame("e2a.input_required", body)


def test_a_question_with_options_is_listed_numbered_with_names_and_kinds() -> None:
    question = waiting("permission", "May I edit notes.txt?", "", options=PERMISSION_OPTIONS)
    streamed = frame("e2a.chunk", {"delta_kind": "text", "delta": "Checking"})
    assert printed(streamed, question) == (
        "Checking\n[permission] May I edit notes.txt?\n  1. Allow once (allow_once)\n  2. Reject always (reject_always)\n"
    )
    assert printed(question, styled=True).startswith("\x1b[33m[permission] May I edit notes.txt?\x1b[0m\n  1. ")


def test_a_question_without_options_prints_its_text_after_what_the_turn_answered() -> None:
    # Nothing streamed: the turn's result comes first, as with e2a.complete.
    assert printed(waiting("input", "What is your name?", "Hello.")) == "Hello.\n[input] What is your name?\n"
    assert printed(waiting("auth", "Sign in at https://example.test", "")) == "[auth] Sign in at https://example.test\n"


def test_an_option_without_a_name_or_kind_shows_its_id() -> None:
    question = waiting("permission", "Go?", "", options=[{"option_id": "go"}, {"option_id": 7}, "junk"])
    assert printed(question) == "[permission] Go?\n  1. go\n"  # options without a string id cannot be chosen

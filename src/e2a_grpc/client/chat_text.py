"""The ``e2a-grpc chat`` text view of a Chat stream: what a person reads, as it arrives.

Answer text goes to stdout as it streams; reasoning ("thinking:") and tool calls ("[tool] ...") get
lines of their own, and so does a question the agent waits on (``e2a.input_required``: the question
and its numbered options). Colours and the terminal width are used only when the output is a terminal, so
that a pipe or a file gets plain text.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from enum import Enum, auto
from typing import Any, TextIO

from e2a_grpc.client.questions import Question
from e2a_grpc.model import A2AStreamBranch, DeltaKind, E2AResponse, ResponseKind

_DIM = "\x1b[2m"
_CYAN = "\x1b[36m"
_YELLOW = "\x1b[33m"
_RESET = "\x1b[0m"


class _Line(Enum):
    """What the current output line holds, so that a change of kind starts a new line."""

    EMPTY = auto()
    ANSWER = auto()
    THINKING = auto()


def _part_texts(parts: Any) -> Iterator[str]:
    """The text of A2A parts (``{"text": ...}``; older agents also say ``"kind": "text"``)."""
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            yield part["text"]


def _a2a_text(body: dict[str, Any]) -> str:
    """The message or artifact text an ``a2a.stream_event`` carries, or ``""``."""
    payload = body.get("payload")
    if not isinstance(payload, dict):
        return ""
    branch = body.get("branch")
    if branch == A2AStreamBranch.MESSAGE:
        return "".join(_part_texts(payload.get("parts")))
    if branch == A2AStreamBranch.ARTIFACT_UPDATE:
        artifact = payload.get("artifact")
        return "".join(_part_texts(artifact.get("parts"))) if isinstance(artifact, dict) else ""
    return ""


def _acp_message_text(body: dict[str, Any]) -> str:
    """The text of an ACP ``agent_message_chunk`` session update, or ``""``."""
    update = body.get("update")
    if not isinstance(update, dict) or update.get("sessionUpdate") != "agent_message_chunk":
        return ""
    content = update.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else ""


def _tool_line(update: Any) -> str:
    """``title (status)`` of an ACP tool call (or its update, which may only name the call's id)."""
    if not isinstance(update, dict):
        return "tool call"
    name = update.get("title") or update.get("toolCallId") or "tool call"
    status = update.get("status")
    return f"{name} ({status})" if status else str(name)


class ChatTextPrinter:
    """Writes the readable text of each frame to ``out``; ``finish`` ends the last line."""

    def __init__(self, out: TextIO, *, styled: bool) -> None:
        self._out = out
        self._styled = styled
        self._line = _Line.EMPTY
        self._answered = False

    def frame(self, frame: E2AResponse) -> None:
        body = frame.body if isinstance(frame.body, dict) else {}
        kind = frame.response_kind
        if kind == ResponseKind.E2A_CHUNK:
            delta_kind, delta = body.get("delta_kind"), body.get("delta")
            if delta_kind == DeltaKind.TEXT:
                self._answer(str(delta or ""))
            elif delta_kind == DeltaKind.REASONING:
                self._thinking(str(delta or ""))
            elif delta_kind == DeltaKind.TOOL:
                self._own_line(_tool_line(delta), "[tool] ", _CYAN)
        elif kind == ResponseKind.A2A_STREAM_EVENT:
            self._answer(_a2a_text(body))
        elif kind == ResponseKind.ACP_SESSION_UPDATE:
            self._answer(_acp_message_text(body))
        elif kind in (ResponseKind.E2A_COMPLETE, ResponseKind.E2A_INPUT_REQUIRED):
            if not self._answered:
                result = body.get("result")
                content = result.get("content") if isinstance(result, dict) else None
                if isinstance(content, str):
                    self._answer(content)
            question = Question.of(frame)
            if question is not None:
                self._question(question)
        self._out.flush()

    def finish(self) -> None:
        """End the output with a newline, also after a partial answer cut short by an error."""
        if self._line is not _Line.EMPTY:
            self._end_style()
            self._out.write("\n")
            self._line = _Line.EMPTY
        self._out.flush()

    def _answer(self, text: str) -> None:
        if not text:
            return
        if self._line is not _Line.ANSWER:
            self.finish()
            self._line = _Line.ANSWER
        self._answered = True
        self._out.write(text)

    def _thinking(self, text: str) -> None:
        if not text:
            return
        if self._line is not _Line.THINKING:
            self.finish()
            self._line = _Line.THINKING
            self._out.write(self._style(_DIM) + "thinking: ")
        self._out.write(text)

    def _own_line(self, text: str, prefix: str, colour: str) -> None:
        self.finish()
        line = prefix + text
        if self._styled:  # a tool title can be long: one terminal line each keeps the answer readable
            width = shutil.get_terminal_size().columns
            line = line if len(line) <= width else line[: max(width - 1, 0)] + "…"
        self._out.write(self._style(colour) + line + self._style(_RESET) + "\n")

    def _question(self, question: Question) -> None:
        self.finish()
        first, *options = question.lines()
        self._out.write(self._style(_YELLOW) + first + self._style(_RESET) + "\n")
        self._out.writelines(line + "\n" for line in options)

    def _style(self, code: str) -> str:
        return code if self._styled else ""

    def _end_style(self) -> None:
        if self._line is _Line.THINKING:
            self._out.write(self._style(_RESET))

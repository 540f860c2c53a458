"""A scripted ACP agent for the acp backend tests, built on the official ACP Python SDK (``acp``).

Run as a real stdio subprocess: ``python tests/support/agents/acp_agent.py [--events FILE]``. By default a
prompt turn streams a thought, a plan, a tool call and its update, then the prompt text back word by
word, and ends with ``end_turn``. Words in the prompt change that:

- ``crash``: one message chunk, a line on stderr, then exit 3 in the middle of the turn
- ``error``: the turn fails with JSON-RPC error -32042 (with ``data``)
- ``refuse``: ends the turn with stop reason ``refusal``
- ``slow``: says its pid, then a chunk every 50 ms for a minute; stops on ``session/cancel``
  with stop reason ``cancelled``
- ``stubborn``: like ``slow`` but ignores ``session/cancel``
- ``permission``: asks ``session/request_permission`` and says the outcome
- ``write``: asks permission to write ``notes.txt`` in the session's cwd (options ``allow``,
  ``always``, ``reject``) and writes it only if an allowing option was chosen; says what it did
- ``twice``: as ``write``, for ``first.txt`` and then ``second.txt``: two questions in one turn
- ``vanish``: says its pid and "about to ask", a line on stderr, asks for permission and exits 3 without waiting
  for the answer
- ``withdraw``: asks for permission and ends the turn a moment later without the answer, saying
  "never mind"
- after ``write`` or ``twice``, ``slow`` streams as below
- ``fs``: calls ``fs/read_text_file``, ``terminal/create`` and an extension method; says each error
- ``cwd``: says the session's cwd
- ``whoami``: says its pid, the ACP session id and the turn number within the session
- ``image``: adds an image message chunk to the default turn
- ``files``: adds message chunks with an image, an embedded PDF resource and a resource link

It declares the prompt capabilities image and embedded context, not audio, and records each prompt's
content blocks (``prompt`` events).

``--events FILE`` appends one JSON line per notable event (start, cancel, permission outcome, turn end) with a
timestamp, so tests can see what the agent received and when. ``--linger`` keeps the process
running after its stdin closes (until a signal ends it), as some agents do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    embedded_blob_resource,
    image_block,
    plan_entry,
    resource_block,
    resource_link_block,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    FileEditToolCallContent,
    Implementation,
    PermissionOption,
    PromptCapabilities,
    TextContentBlock,
    ToolCallLocation,
    ToolCallUpdate,
)

_PIECES = re.compile(r"\s+|\S+\s*")
STREAM_SECONDS = 60.0
TICK_SECONDS = 0.05
#: What ``write`` and ``twice`` offer, and the options that let them write.
WRITE_OPTIONS = [
    PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]
ALLOWING = {"allow", "always"}


@dataclass
class Session:
    cwd: str
    turns: int = 0
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


class ScriptedAgent:
    def __init__(self, events: Path | None) -> None:
        self._events = events
        self._sessions: dict[str, Session] = {}
        self._client: Client | None = None
        #: A permission request the agent gave up waiting for (``withdraw``).
        self._asking: asyncio.Task[Any] | None = None

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    def _record(self, event: str, **fields: Any) -> None:
        if self._events is not None:
            with self._events.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"event": event, "pid": os.getpid(), "t": time.time(), **fields}) + "\n")

    async def _say(self, session_id: str, text: str) -> None:
        assert self._client is not None
        await self._client.session_update(session_id=session_id, update=update_agent_message_text(text))

    async def _write(self, session_id: str, session: Session, name: str) -> None:
        """Ask to write a file; write it only if allowed, and say what happened."""
        assert self._client is not None
        path = os.path.join(session.cwd, name)
        text = f"written by the test agent, pid {os.getpid()}\n"
        tool_call = ToolCallUpdate(
            tool_call_id=f"write-{name}",
            title=f"Write {name}",
            kind="edit",
            status="pending",
            content=[FileEditToolCallContent(type="diff", path=path, new_text=text)],
            locations=[ToolCallLocation(path=path)],
        )
        response = await self._client.request_permission(
            session_id=session_id, tool_call=tool_call, options=WRITE_OPTIONS
        )
        outcome = response.outcome.model_dump(by_alias=True, exclude_none=True)
        self._record("permission", session=session_id, tool_call=f"write-{name}", outcome=outcome)
        if outcome.get("optionId") in ALLOWING:
            Path(path).write_text(text, encoding="utf-8")
            await self._say(session_id, f"wrote {name}\n")
        else:
            await self._say(session_id, f"did not write {name} ({outcome.get('optionId', outcome['outcome'])})\n")

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_info=Implementation(name="e2a-test-agent", version="1"),
            # No audio: a prompt with audio must not reach this agent.
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True)
            ),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = uuid.uuid4().hex
        self._sessions[session_id] = Session(cwd)
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._record("cancel", session=session_id)
        self._sessions[session_id].cancelled.set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._sessions[session_id]
        session.turns += 1
        session.cancelled.clear()
        self._record(
            "prompt",
            session=session_id,
            blocks=[block.model_dump(by_alias=True, exclude_none=True) for block in prompt],
        )
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        stop_reason = await self._turn(session_id, session, text, set(text.split()))
        self._record("turn_end", session=session_id, stop_reason=stop_reason)
        return PromptResponse(stop_reason=stop_reason)

    async def _turn(self, session_id: str, session: Session, text: str, words: set[str]) -> Any:
        assert self._client is not None
        client = self._client
        if "crash" in words:
            await self._say(session_id, "about to crash")
            sys.stderr.write("test agent: crashing on request\n")
            sys.stderr.flush()
            os._exit(3)
        if "error" in words:
            raise RequestError(-32042, "the test agent failed on request", {"trigger": "error"})
        if "refuse" in words:
            await self._say(session_id, "no")
            return "refusal"
        if "vanish" in words:
            await self._say(session_id, f"pid {os.getpid()} about to ask")
            sys.stderr.write("test agent: leaving while asking\n")
            sys.stderr.flush()
            asking = asyncio.create_task(
                client.request_permission(
                    session_id=session_id,
                    tool_call=ToolCallUpdate(tool_call_id="vanish", title="Delete everything"),
                    options=WRITE_OPTIONS,
                )
            )
            await asyncio.wait({asking}, timeout=TICK_SECONDS)  # long enough to send it, too short for an answer
            os._exit(3)
        if "withdraw" in words:
            self._asking = asyncio.create_task(
                client.request_permission(
                    session_id=session_id,
                    tool_call=ToolCallUpdate(tool_call_id="withdraw", title="Format the disk"),
                    options=WRITE_OPTIONS,
                )
            )
            await asyncio.wait({self._asking}, timeout=TICK_SECONDS)
            await self._say(session_id, "never mind")
            return "end_turn"
        if words & {"write", "twice"}:
            for name in ("notes.txt",) if "write" in words else ("first.txt", "second.txt"):
                await self._write(session_id, session, name)
            if "slow" not in words:
                return "end_turn"
        if words & {"slow", "stubborn"}:
            await self._say(session_id, f"pid {os.getpid()} ")
            deadline = time.monotonic() + STREAM_SECONDS
            while time.monotonic() < deadline:
                if session.cancelled.is_set() and "stubborn" not in words:
                    return "cancelled"
                await self._say(session_id, "tick ")
                await asyncio.sleep(TICK_SECONDS)
            return "end_turn"
        if "permission" in words:
            options = [
                PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ]
            response = await client.request_permission(
                session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="call-p", title="write"), options=options
            )
            outcome = response.outcome
            await self._say(session_id, f"permission {outcome.outcome} {getattr(outcome, 'option_id', '-')}")
            return "end_turn"
        if "fs" in words:
            calls = {
                "fs": client.read_text_file(session_id=session_id, path=os.path.join(session.cwd, "x.txt")),
                "terminal": client.create_terminal(session_id=session_id, command="true"),
                "ext": client.ext_method("e2a.test/hello", {}),
            }
            for name, call in calls.items():
                try:
                    await call
                    await self._say(session_id, f"{name} ok\n")
                except RequestError as exc:
                    await self._say(session_id, f"{name} error {exc.code} {exc}\n")
            return "end_turn"
        if "cwd" in words:
            await self._say(session_id, f"cwd {session.cwd}")
            return "end_turn"
        if "whoami" in words:
            await self._say(session_id, f"pid {os.getpid()} session {session_id} turn {session.turns}")
            return "end_turn"
        await client.session_update(session_id=session_id, update=update_agent_thought_text("thinking about it"))
        await client.session_update(
            session_id=session_id, update=update_plan([plan_entry("echo the prompt", status="in_progress")])
        )
        await client.session_update(
            session_id=session_id, update=start_tool_call("call-1", "Echo", kind="other", status="pending")
        )
        await client.session_update(
            session_id=session_id,
            update=update_tool_call("call-1", status="completed", content=None, raw_output={"words": len(words)}),
        )
        if "image" in words:
            await client.session_update(
                session_id=session_id, update=update_agent_message(image_block("aGVsbG8=", "image/png"))
            )
        if "files" in words:
            for block in (
                image_block("iVBORw0KGgo=", "image/png"),
                resource_block(
                    embedded_blob_resource("file:///work/out/report.pdf", "JVBERi0=", mime_type="application/pdf")
                ),
                resource_link_block("notes.md", "file:///work/notes.md", mime_type="text/markdown"),
            ):
                await client.session_update(session_id=session_id, update=update_agent_message(block))
        for piece in _PIECES.findall(text):
            await client.session_update(session_id=session_id, update=update_agent_message(text_block(piece)))
        return "end_turn"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=Path)
    parser.add_argument("--linger", action="store_true", help="keep running after stdin closes, until a signal")
    args = parser.parse_args()
    agent = ScriptedAgent(args.events)
    agent._record("start")
    # The SDK answers the methods an agent does not define with "method not found"; its Agent
    # protocol lists every method, so this partial agent is cast to it.
    asyncio.run(run_agent(cast(Agent, agent)))
    if args.linger:
        time.sleep(STREAM_SECONDS)


if __name__ == "__main__":
    main()

"""Fake Chat backends for in-process servicer tests, driven by ``asyncio.Event`` objects the test holds.

They implement the backend interface of ``e2a_grpc.chat.events`` (``info``, ``stream(envelope, prompt)``,
``aclose()``), so a test can wait for "the backend is now waiting", then cancel, let a deadline
pass or shut the server down, and wait for "the backend stopped": no sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field

from e2a_grpc.chat.answers import CANCEL_WORD, answer_of
from e2a_grpc.chat.coalesce import EventInbox
from e2a_grpc.chat.events import (
    AgentIds,
    BackendError,
    BackendInfo,
    Complete,
    Delta,
    Event,
    InputRequired,
    TurnsNeverWait,
)
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.model import DeltaKind, E2AEnvelope, ErrorCode

FAKE_INFO = BackendInfo(name="fake", source_protocol="e2a", details={"fake": True})


@dataclass
class Turn:
    """One request as the fake backend saw it."""

    envelope: E2AEnvelope
    #: Every event before the wait has been yielded (and so written): the backend awaits ``release``.
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    #: ``asyncio.CancelledError`` reached the backend at its ``await`` (client cancel, deadline, shutdown).
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    #: The stream's generator has ended, however it ended.
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    #: Events yielded so far.
    yielded: list[Event] = field(default_factory=list)


class ControlledBackend(TurnsNeverWait):
    """Yields ``before`` as text deltas, then waits for ``release``; then yields ``after`` and either
    raises ``error`` or completes with the whole text.

    ``release`` is shared by all turns; ``turns`` lists every request in arrival order.
    """

    def __init__(
        self,
        before: Sequence[str | Event] = ("first ",),
        after: Sequence[str | Event] = ("last",),
        error: BackendError | None = None,
    ) -> None:
        self.info = FAKE_INFO
        self.before = list(before)
        self.after = list(after)
        self.error = error
        self.release = asyncio.Event()
        self.closed = asyncio.Event()
        self.turns: list[Turn] = []
        self._changed = asyncio.Condition()

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        turn = Turn(envelope)
        self.turns.append(turn)
        try:
            for item in self.before:
                event = _event(item)
                turn.yielded.append(event)
                yield event
            turn.waiting.set()
            await self._notify()
            await self.release.wait()
            for item in self.after:
                event = _event(item)
                turn.yielded.append(event)
                yield event
            if self.error is not None:
                raise self.error
            text = "".join(item for item in (*self.before, *self.after) if isinstance(item, str))
            complete = Complete({"content": text})
            turn.yielded.append(complete)
            yield complete
        except asyncio.CancelledError:
            turn.cancelled.set()
            raise
        finally:
            turn.finished.set()
            await self._notify()

    async def waiting_turns(self, count: int) -> list[Turn]:
        """Return once ``count`` turns wait for ``release`` (the test bounds this with a timeout)."""
        async with self._changed:
            await self._changed.wait_for(lambda: sum(turn.waiting.is_set() for turn in self.turns) >= count)
        return [turn for turn in self.turns if turn.waiting.is_set()]

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def aclose(self) -> None:
        self.closed.set()


class FloodBackend(TurnsNeverWait):
    """Yields ``limit`` text deltas of ``delta_bytes`` each as fast as the servicer takes them.

    The servicer asks for the next event only once it has written the previous one, so ``written``
    counts deltas written to the call; ``first_written`` and ``all_written`` are set as that happens.
    A server that respects flow control stops writing when the client stops reading.
    """

    def __init__(self, delta_bytes: int, limit: int) -> None:
        self.info = FAKE_INFO
        self.delta = "w" * delta_bytes
        self.limit = limit
        self.written = 0
        self.first_written = asyncio.Event()
        self.all_written = asyncio.Event()

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        for _ in range(self.limit):
            yield Delta(DeltaKind.TEXT, self.delta)
            self.written += 1
            self.first_written.set()
        self.all_written.set()
        yield Complete({"content": ""})

    async def aclose(self) -> None:
        return None


def _event(item: str | Event) -> Event:
    return Delta(DeltaKind.TEXT, item) if isinstance(item, str) else item


class EndlessBackend(TurnsNeverWait):
    """Never completes: yields ``deltas`` text deltas of ``delta_bytes`` each (``None``: without end,
    and without awaiting anything), then waits forever.

    For the servicer's limits: ``stopped`` is set when its generator ends however it ends (closed at
    a yield, or ``cancelled`` at its wait); ``yielded`` counts the deltas taken from it.
    """

    def __init__(self, deltas: int | None = None, delta_bytes: int = 1) -> None:
        self.info = FAKE_INFO
        self.deltas = deltas
        self.delta = "w" * delta_bytes
        self.yielded = 0
        #: Every delta has been taken: the backend waits for nothing now.
        self.waiting = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.stopped = asyncio.Event()

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        try:
            while self.deltas is None or self.yielded < self.deltas:
                self.yielded += 1
                yield Delta(DeltaKind.TEXT, self.delta)
            self.waiting.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        finally:
            self.stopped.set()

    async def aclose(self) -> None:
        return None


class PushBackend(TurnsNeverWait):
    """An agent that pushes its events, as an ACP agent does: the test ``put``s them into the turn's
    ``EventInbox`` (the servicer takes them from there, text deltas that waited merged) and ends the
    turn with ``finish``. ``taken`` lists the events as the servicer took them; ``taken_at_least(n)``
    returns once it took ``n``.
    """

    def __init__(self, max_coalesced_bytes: int) -> None:
        self.info = FAKE_INFO
        self.max_coalesced_bytes = max_coalesced_bytes
        self.inbox: EventInbox | None = None
        self.started = asyncio.Event()
        self.taken: list[Event] = []
        self.cancelled = asyncio.Event()
        self.stopped = asyncio.Event()
        self.closed = asyncio.Event()
        self._changed = asyncio.Condition()

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        self.inbox = EventInbox(self.max_coalesced_bytes)
        self.started.set()
        try:
            async for event in self.inbox:
                self.taken.append(event)
                async with self._changed:
                    self._changed.notify_all()
                yield event
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        finally:
            self.stopped.set()

    def put(self, *events: str | Event) -> None:
        assert self.inbox is not None, "no turn started yet"
        for item in events:
            self.inbox.put(_event(item))

    def finish(self, text: str) -> None:
        """The agent's answer is complete: ``text`` is its whole message."""
        self.put(Complete({"content": text}))
        assert self.inbox is not None
        self.inbox.close()

    async def taken_at_least(self, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.taken) >= count)

    async def aclose(self) -> None:
        self.closed.set()


@dataclass
class _Asking:
    """A task of ``AskingBackend`` that waits: which of its questions, and the answers so far."""

    task_id: str
    question: int = 0
    answers: list[str] = field(default_factory=list)


class AskingBackend:
    """An agent that asks ``questions`` in a row before it answers, each a turn ending in ``InputRequired``.

    A prompt starts a task (``task-1``, ``task-2``, ... named to the client with ``AgentIds``) in the
    request's session and asks the first question. A request naming that task in that session answers
    the question that waits: read with the servers' rule (``chat.answers``) when it has options, else
    its text. An answer naming no option gets ``invalid_answer`` and the question stays open; a request
    naming a task with no question waiting gets ``no_question_pending``. After the last answer the turn
    completes with ``answers: ...``, so what the client chose shows in the answer. ``answers`` records
    ``(session_id, task_id, answer)`` as the agent received them, ``cancel`` for a withdrawn question.
    """

    def __init__(self, questions: Sequence[InputRequired]) -> None:
        self.info = FAKE_INFO
        self.questions = list(questions)
        self.answers: list[tuple[str | None, str, str]] = []
        self.cancelled_tasks: list[str] = []
        self._waiting: dict[tuple[str | None, str], _Asking] = {}
        self._tasks = 0

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        if envelope.task_id is None:
            self._tasks += 1
            task = _Asking(f"task-{self._tasks}")
            yield Delta(DeltaKind.TEXT, "let me see")
            yield AgentIds(task.task_id, None)
        else:
            waiting = self._waiting.pop((envelope.session_id, envelope.task_id), None)
            if waiting is None:
                raise BackendError(ErrorCode.NO_QUESTION_PENDING, f"no question waits on task {envelope.task_id}")
            task = waiting
            try:
                answer = self._answer(self.questions[task.question], envelope, prompt)
            except BackendError:
                self._waiting[envelope.session_id, task.task_id] = task
                raise
            self.answers.append((envelope.session_id, task.task_id, answer))
            task.answers.append(answer)
            task.question += 1
        if task.question < len(self.questions):
            self._waiting[envelope.session_id, task.task_id] = task
            yield self.questions[task.question]
            return
        content = "answers: " + ", ".join(task.answers)
        yield Delta(DeltaKind.TEXT, content)
        yield Complete({"content": content})

    @staticmethod
    def _answer(question: InputRequired, envelope: E2AEnvelope, prompt: Prompt) -> str:
        if not question.options:
            return prompt.text
        answer = answer_of(envelope, prompt, question.options)
        if answer is None:
            raise BackendError(ErrorCode.INVALID_ANSWER, "the answer names none of the options")
        return answer.option_id or CANCEL_WORD

    async def cancel_task(self, task_id: str) -> bool:
        self.cancelled_tasks.append(task_id)
        waiting = [key for key in self._waiting if key[1] == task_id]
        for key in waiting:
            del self._waiting[key]
        return bool(waiting)

    async def aclose(self) -> None:
        return None

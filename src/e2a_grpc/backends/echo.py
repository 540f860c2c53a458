"""The ``echo`` backend: a deterministic demo and test agent that streams the request's text back.

It is the embedded default so that ``make serve`` works with nothing else installed. It is not an
agent: use it to try clients, run tests and benchmark the streaming path.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Iterator

from e2a_grpc.chat.events import BackendInfo, Complete, Delta, Event, TurnsNeverWait
from e2a_grpc.chat.prompt import Prompt
from e2a_grpc.model import DeltaKind, E2AEnvelope, SourceProtocol
from e2a_grpc.settings import BackendName

# Each word with the whitespace after it (leading whitespace is its own piece): the pieces
# concatenate back to exactly the input text.
_PIECES = re.compile(r"\s+|\S+\s*")
#: The text is split this many characters at a time: a stream paused by a slow client holds the
#: pieces of one window, not of the whole text (a prompt may have a megabyte).
WINDOW_CHARS = 4096


def piece_windows(text: str, window_chars: int = WINDOW_CHARS) -> Iterator[list[str]]:
    """The pieces of ``text`` (see ``_PIECES``), in order, a list per window of about ``window_chars``
    characters: ``findall`` makes a window's strings at once, much faster than a match object per piece."""
    position, length = 0, len(text)
    window = window_chars
    while position < length:
        end = position + window
        if end >= length:
            yield _PIECES.findall(text, position)
            return
        pieces = _PIECES.findall(text, position, end)
        if len(pieces) == 1:  # a piece at least as long as the window: look further
            window *= 2
            continue
        # The last piece may go on past the window's end: it is found again, whole, in the next window.
        last = pieces.pop()
        yield pieces
        position = end - len(last)
        window = window_chars


class EchoBackend(TurnsNeverWait):
    """Streams the text word by word as ``e2a.chunk`` text deltas, then ``e2a.complete``."""

    def __init__(self, delay_seconds: float = 0.0) -> None:
        self.info = BackendInfo(name=BackendName.ECHO, source_protocol=SourceProtocol.E2A)
        self._delay = delay_seconds

    async def stream(
        self, envelope: E2AEnvelope, prompt: Prompt, *, incremental: bool = True
    ) -> AsyncGenerator[Event, None]:
        text = prompt.text
        delay = self._delay
        text_kind = DeltaKind.TEXT  # looked up once: an enum member is a slow attribute in Python 3.11
        for pieces in piece_windows(text):
            for piece in pieces:
                if delay:
                    await asyncio.sleep(delay)
                yield Delta(text_kind, piece)
        yield Complete({"content": text})

    async def aclose(self) -> None:
        return None

"""The ``echo`` backend: a deterministic demo and test agent that streams the request's text back.

It is the embedded default so that ``make serve`` works with nothing else installed. It is not an
agent: use it to try clients, run tests and benchmark the streaming path.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator

from e2a_grpc.chat.events import BackendInfo, Complete, Delta, Event, prompt_text
from e2a_grpc.model import DeltaKind, E2AEnvelope, SourceProtocol
from e2a_grpc.settings import BackendName

# Each word with the whitespace after it (leading whitespace is its own piece): the pieces
# concatenate back to exactly the input text.
_PIECES = re.compile(r"\s+|\S+\s*")


class EchoBackend:
    """Streams the text word by word as ``e2a.chunk`` text deltas, then ``e2a.complete``."""

    def __init__(self, delay_seconds: float = 0.0) -> None:
        self.info = BackendInfo(name=BackendName.ECHO, source_protocol=SourceProtocol.E2A)
        self._delay = delay_seconds

    async def stream(self, envelope: E2AEnvelope) -> AsyncGenerator[Event, None]:
        text = prompt_text(envelope)
        # One piece at a time: a stream paused by a slow client holds one piece, not a list of them all.
        text_kind = DeltaKind.TEXT  # looked up once: an enum member is a slow attribute in Python 3.11
        for match in _PIECES.finditer(text):
            if self._delay:
                await asyncio.sleep(self._delay)
            yield Delta(text_kind, match.group())
        yield Complete({"content": text})

    async def aclose(self) -> None:
        return None

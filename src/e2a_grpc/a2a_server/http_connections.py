"""The A2A HTTP port's connections against slow and idle clients: a header timeout and a connection cap.

uvicorn (0.54, its h11 protocol) bounds a request's header size (h11: 16 KiB) and the idle time
between requests (``timeout_keep_alive``), but not the time a client takes to send its headers: a
connection that sends nothing, or trickles its headers, was held for ever (slowloris: one file
descriptor each). Its ``limit_concurrency`` answers 503 to *requests* past a number, while the
connections themselves stay open. So ``guarded_protocol`` is uvicorn's h11 protocol with:

- a header timeout: from the connection, or from the first byte of a next request, its headers must be
  complete within ``header_timeout`` seconds, or it gets HTTP 408 and is closed (the body's own
  timeout is ``body_limit``'s);
- a connection cap: a connection accepted while ``max_connections`` are open gets HTTP 503 and is
  closed at once, its socket freed, so the process never holds more than the cap (plus the one being
  refused). One WARNING when refusing starts, one INFO when a connection is accepted again. Pausing
  accept() instead would leave clients waiting in the backlog with no answer.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


def _response(status: int, reason: str, text: str) -> bytes:
    """A complete HTTP/1.1 response that closes its connection (written raw: h11 sends a response only
    to a request it has read)."""
    body = text.encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


@dataclass
class ConnectionLimits:
    """The limits of one server's connections, and how many it refused since it last accepted one."""

    header_timeout: float
    max_connections: int
    refused: int = 0


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the module docstring's header timeout and connection cap."""
    header_timed_out = _response(
        408,
        "Request Timeout",
        f"the request headers did not arrive within {limits.header_timeout:g} s (--a2a-header-timeout-seconds)\n",
    )
    over_cap = _response(
        503,
        "Service Unavailable",
        f"this server has {limits.max_connections} connections open (--a2a-max-connections); retry later\n",
    )

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._header_timer: asyncio.TimerHandle | None = None
            self._refused = False

        # uvicorn's own override narrows the type the same way (uvloop's transports are not asyncio's classes).
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            open_now = len(self.server_state.connections)
            if open_now >= limits.max_connections:
                self._refused = True
                if not limits.refused:
                    log.warning(
                        "A2A HTTP: %d connections open (--a2a-max-connections): new connections get 503 "
                        "until some close",
                        open_now,
                    )
                limits.refused += 1
                transport.write(over_cap)
                transport.close()
                return
            if limits.refused:
                log.info("A2A HTTP: accepting connections again (%d refused at the cap)", limits.refused)
                limits.refused = 0
            super().connection_made(transport)
            self._watch_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return  # never served: uvicorn's bookkeeping never saw it
            self._stop_header_timer()
            super().connection_lost(exc)

        def _watch_headers(self) -> None:
            """Start the header timer while a request's headers are awaited, stop it once they came.
            Between requests uvicorn's keep-alive timer runs instead: this one starts with the first
            byte of the next request (``data_received``)."""
            cycle = self.cycle
            awaiting_headers = self.conn.their_state is h11.IDLE and (cycle is None or cycle.response_complete)
            if awaiting_headers and not self.transport.is_closing():
                if self._header_timer is None:
                    self._header_timer = self.loop.call_later(limits.header_timeout, self._headers_timed_out)
            else:
                self._stop_header_timer()

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_timed_out(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            log.debug("A2A HTTP: closed a connection from %s: no request headers within the timeout", self.client)
            self.transport.write(header_timed_out)
            self.transport.close()

    return GuardedH11Protocol

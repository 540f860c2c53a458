"""Every log record of the process while a test runs, and an event a test can await for the one it
expects (a line another task or callback logs: nothing else says when it happened)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator


class LogRecords(logging.Handler):
    """The records logged, and ``seen``, set once one matches ``wanted``."""

    def __init__(self, wanted: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.seen = asyncio.Event()
        self._wanted = wanted
        self._loop = asyncio.get_running_loop()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self._wanted(record):
            self._loop.call_soon_threadsafe(self.seen.set)

    def at_least(self, level: int) -> list[str]:
        """``logger: message`` of each record at ``level`` or above."""
        return [f"{record.name}: {record.getMessage()}" for record in self.records if record.levelno >= level]

    def matching(self, level: int, text: str) -> list[str]:
        """The messages at exactly ``level`` that contain ``text``."""
        return [
            record.getMessage() for record in self.records if record.levelno == level and text in record.getMessage()
        ]


@contextlib.contextmanager
def log_records(wanted: Callable[[logging.LogRecord], bool] = lambda record: False) -> Iterator[LogRecords]:
    """Every record at DEBUG and above, of every logger, while the block runs."""
    root = logging.getLogger()
    handler = LogRecords(wanted)
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)

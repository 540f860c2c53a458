"""How the command line's logs are written: text lines (the default) or one JSON object per line.

A JSON line has ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``; a record logged with
``extra={"request_id": ..., "method": ..., "status": ...}`` (call logs) carries those keys too, and
one with an exception its traceback as ``exception``. Nothing else of a record is written: its
``args`` and other attributes never reach the log, so a secret passed along with a record does not
either. The server logs no token and no request body (the frame log has ids and kinds only).
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import UTC, datetime

import orjson

from e2a_grpc.settings import LogFormat, env_var

#: The attributes of a call log record written as keys of their own.
CALL_FIELDS = ("request_id", "method", "status")
_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in CALL_FIELDS:
            value = record.__dict__.get(field)
            if value is not None:
                line[field] = value if isinstance(value, int | float | bool) else str(value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line).decode()


def configure_logging(*, verbose: bool, log_format: str | None) -> None:
    """Log to stderr in ``log_format`` (``None``: the ``E2A_GRPC_LOG_FORMAT`` environment variable's,
    else text). An unknown format is text here; the settings reject it with a message of their own."""
    chosen = log_format or os.environ.get(env_var("log_format")) or LogFormat.TEXT
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if chosen == LogFormat.JSON else logging.Formatter(_TEXT_FORMAT))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    if not verbose:
        # httpx logs every request at INFO: one line per call the a2a backend or a webhook makes.
        logging.getLogger("httpx").setLevel(logging.WARNING)

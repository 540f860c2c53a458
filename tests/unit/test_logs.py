"""JSON log lines (``--log-format json``): one object per record, with the call fields when given."""

from __future__ import annotations

import json
import logging
import sys

from e2a_grpc.logs import JsonFormatter, configure_logging


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("e2a_grpc.test", logging.WARNING, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


def test_a_record_is_one_json_line_with_time_level_logger_and_message() -> None:
    line = JsonFormatter().format(_record("served %d calls", 3))
    assert "\n" not in line
    parsed = json.loads(line)
    assert set(parsed) == {"time", "level", "logger", "message"}
    assert (parsed["level"], parsed["logger"], parsed["message"]) == ("WARNING", "e2a_grpc.test", "served 3 calls")
    assert parsed["time"].endswith("+00:00")


def test_call_fields_are_keys_of_their_own_and_nothing_else_of_the_record_is() -> None:
    record = _record("Chat turn ended", request_id="req-1", method="/e2a.v1.AgentService/Chat", status="ok")
    record.__dict__["token"] = "s3cret"  # an attribute the formatter does not know is never written
    parsed = json.loads(JsonFormatter().format(record))
    assert {key: parsed[key] for key in ("request_id", "method", "status")} == {
        "request_id": "req-1",
        "method": "/e2a.v1.AgentService/Chat",
        "status": "ok",
    }
    assert "s3cret" not in json.dumps(parsed)


def test_an_exception_is_its_traceback_in_one_line() -> None:
    try:
        raise ValueError("broken\nacross lines")
    except ValueError:
        record = _record("failed")
        record.exc_info = sys.exc_info()
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert "ValueError: broken\nacross lines" in json.loads(line)["exception"]


def test_httpx_request_lines_are_left_out_unless_verbose() -> None:
    httpx_log = logging.getLogger("httpx")
    root = logging.getLogger()
    saved = (httpx_log.level, root.level, list(root.handlers))
    try:
        configure_logging(verbose=False, log_format="text")
        assert not httpx_log.isEnabledFor(logging.INFO) and httpx_log.isEnabledFor(logging.WARNING)
        httpx_log.setLevel(logging.NOTSET)
        configure_logging(verbose=True, log_format="text")
        assert httpx_log.level == logging.NOTSET
    finally:
        httpx_log.setLevel(saved[0])
        root.setLevel(saved[1])
        root.handlers[:] = saved[2]

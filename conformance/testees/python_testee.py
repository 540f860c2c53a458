"""The Python reference testee of the E2A conformance suite (protocol: conformance/README.md).

Reads one request per line on stdin and answers each on one line of stdout, in order. Every input
becomes the protobuf message first (wire JSON through ``from_json(...).to_proto()``, protobuf bytes
through ``from_bytes``), and every output is written from that message, so wire JSON -> wire JSON
checks exactly what wire JSON -> protobuf -> wire JSON does.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from typing import Any

from e2a_grpc import E2AEnvelope, E2AFieldError, E2AResponse, E2AValueError

RecordType = type[E2AEnvelope] | type[E2AResponse]
RECORD_TYPES: dict[str, RecordType] = {"envelope": E2AEnvelope, "response": E2AResponse}


def _record(record_type: RecordType, source: str, payload: str) -> E2AEnvelope | E2AResponse:
    """The input as the record its protobuf message reads back as."""
    if source == "wire_json":
        data = record_type.from_json(payload).to_bytes()
    else:
        try:
            data = base64.b64decode(payload, validate=True)
        except binascii.Error as exc:
            raise E2AValueError("$", f"payload is not base64: {exc}") from None
    return record_type.from_bytes(data)


def convert(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request: the output payload, or the error naming the field at fault."""
    try:
        record = _record(RECORD_TYPES[request["message"]], request["from"], request["payload"])
        if request["to"] == "wire_json":
            payload = record.to_json()
        else:
            payload = base64.b64encode(record.to_bytes()).decode("ascii")
    except E2AFieldError as exc:
        return {"id": request["id"], "error": {"field": exc.field, "message": exc.problem}}
    return {"id": request["id"], "payload": payload}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            answer = convert(json.loads(line))
            # ensure_ascii: the payload may hold lone surrogates, which only an escape carries in UTF-8.
            sys.stdout.write(json.dumps(answer, ensure_ascii=True, separators=(",", ":")) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

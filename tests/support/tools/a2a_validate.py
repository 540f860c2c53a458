"""Validate A2A StreamResponse JSON documents with the official a2a-sdk, one per stdin line.

Runs in its own process: a2a-sdk ships a compiled a2a.proto, and one process cannot load two
compiled copies of it. Prints one line per input: "ok" or "error: <why>".
"""

from __future__ import annotations

import json
import sys
from typing import Any

from a2a.types import a2a_pb2
from a2a.utils.proto_utils import validate_proto_required_fields
from google.protobuf import json_format


def check(document: dict[str, Any]) -> str:
    message = a2a_pb2.StreamResponse()
    try:
        json_format.ParseDict(document, message)
        if message.WhichOneof("payload") is None:
            return "error: no payload branch"
        validate_proto_required_fields(message)
    except Exception as exc:  # report every failure as data, the caller asserts on it
        return f"error: {type(exc).__name__}: {getattr(exc, 'data', None) or exc}"
    return "ok"


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            print(check(json.loads(line)), flush=True)


if __name__ == "__main__":
    main()

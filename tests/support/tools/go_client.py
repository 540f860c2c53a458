"""The Python client's side of the Go client test (gen/go/internal/interop/service_test.go).

    python -m tests.support.tools.go_client ADDRESS CASES_FILE

CASES_FILE has one JSON object a line, {"name", "rpc", "request"}: the rpc is ToACP, FromACP,
ToA2AStream or Chat, the request the base64 of the binary request message the Go client sent.
Each request is sent as is through the Python grpcio stub, and one JSON line per case is printed:
{"name", "reply": base64} for a unary reply, {"name", "frames": [base64 of each E2AResponse]} for a
Chat stream (checked on the way with e2a_grpc.chat.invariants.StreamChecker, the section 12
invariants), or {"name", "error": {"code", "message", "details": [{"type_url", "value"}]}} when the
call fails, or {"name", "invariant_error": "..."} when a stream breaks an invariant.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any, cast

import grpc
from grpc_status import rpc_status

from e2a.v1 import agent_service_pb2 as agent
from e2a.v1 import agent_service_pb2_grpc as agent_grpc
from e2a.v1 import conversion_service_pb2 as conversion
from e2a.v1 import conversion_service_pb2_grpc as conversion_grpc
from e2a_grpc.chat.invariants import StreamChecker, StreamInvariantError
from e2a_grpc.model import E2AEnvelope, E2AResponse

CALL_TIMEOUT = 30.0
REQUEST_TYPES: dict[str, Any] = {
    "ToACP": conversion.ToACPRequest,
    "FromACP": conversion.FromACPRequest,
    "ToA2AStream": conversion.ToA2AStreamRequest,
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _error(exc: grpc.RpcError) -> dict[str, Any]:
    status = rpc_status.from_call(cast(grpc.Call, exc))  # what a sync call raises is also its Call
    details = [{"type_url": d.type_url, "value": _b64(d.value)} for d in (status.details if status else ())]
    return {"code": exc.code().value[0], "message": exc.details() or "", "details": details}


def _chat(stub: Any, data: bytes) -> dict[str, Any]:
    request = agent.ChatRequest.FromString(data)
    checker = StreamChecker(E2AEnvelope.from_proto(request.envelope))
    frames = []
    try:
        for reply in stub.Chat(request, timeout=CALL_TIMEOUT):
            checker.check(E2AResponse.from_proto(reply.response))
            frames.append(_b64(reply.response.SerializeToString()))
        checker.finish()
    except StreamInvariantError as exc:
        return {"invariant_error": str(exc)}
    return {"frames": frames}


def run(address: str, cases: list[dict[str, Any]]) -> None:
    with grpc.insecure_channel(address) as channel:
        conversion_stub = conversion_grpc.ConversionServiceStub(channel)
        agent_stub = agent_grpc.AgentServiceStub(channel)
        for case in cases:
            data = base64.b64decode(case["request"])
            line: dict[str, Any] = {"name": case["name"]}
            try:
                if case["rpc"] == "Chat":
                    line.update(_chat(agent_stub, data))
                else:
                    request = REQUEST_TYPES[case["rpc"]].FromString(data)
                    reply = getattr(conversion_stub, case["rpc"])(request, timeout=CALL_TIMEOUT)
                    line["reply"] = _b64(reply.SerializeToString())
            except grpc.RpcError as exc:
                line["error"] = _error(exc)
            print(json.dumps(line), flush=True)


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    with open(argv[1], encoding="utf-8") as handle:
        cases = [json.loads(line) for line in handle if line.strip()]
    run(argv[0], cases)


if __name__ == "__main__":
    main(sys.argv[1:])

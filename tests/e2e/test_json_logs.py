"""``e2a-grpc serve --log-format json``: every line of the process's log is a JSON object, a Chat call
has its call log line, and neither the server's token nor a request's bearer token is ever written."""

from __future__ import annotations

import json

import grpc

from e2a.v1 import agent_service_pb2 as agent_pb
from e2a.v1 import agent_service_pb2_grpc as agent_pb_grpc
from e2a_grpc import E2AAuth, E2AEnvelope
from tests.support.processes import process_output, running_server_process, stop_process

SERVER_TOKEN = "server-token-7c1f"
BEARER_TOKEN = "request-bearer-token-93ab"


def test_json_logs_have_call_fields_and_no_secrets() -> None:
    envelope = E2AEnvelope(
        method="chat.send", request_id="req-json", params={"text": "hi"}, auth=E2AAuth(bearer_token=BEARER_TOKEN)
    )
    with running_server_process(
        "--log-format", "json", "--verbose", "--log-frames", env={"E2A_GRPC_TOKEN": SERVER_TOKEN}
    ) as (address, process, output):
        with grpc.insecure_channel(address) as channel:
            frames = list(
                agent_pb_grpc.AgentServiceStub(channel).Chat(
                    agent_pb.ChatRequest(envelope=envelope.to_proto()),
                    metadata=(("authorization", f"Bearer {SERVER_TOKEN}"),),
                    timeout=10,
                )
            )
        assert frames[-1].response.is_final
        stop_process(process)
        log = process_output(output)

    assert SERVER_TOKEN not in log
    assert BEARER_TOKEN not in log
    lines = [json.loads(line) for line in log.splitlines()]
    # The frame log (--log-frames) keeps its own JSON lines, spec 12.7's: one per frame, no level.
    records = [line for line in lines if "response_id" not in line]
    assert len(records) < len(lines)
    assert all({"time", "level", "logger", "message"} <= set(record) for record in records), log
    calls = [line for line in lines if line.get("method") == "/e2a.v1.AgentService/Chat"]
    assert [(call["request_id"], call["status"]) for call in calls] == [("req-json", "ok")], log

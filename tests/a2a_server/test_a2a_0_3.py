"""A2A 0.3 clients (``message/send``, ``tasks/get``, ``tasks/cancel``) reach the same server through the
SDK's compatibility layer, with the same checks and error codes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from e2a_grpc.a2a_server.errors import FrontDoorError
from tests.a2a_server.conftest import a2a_server
from tests.support.a2a_errors import json_rpc_code


def message_send(message_id: str, **configuration: Any) -> dict[str, Any]:
    message = {"messageId": message_id, "role": "user", "kind": "message", "parts": [{"kind": "text", "text": "hi"}]}
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {"message": message, "configuration": configuration},
    }


@pytest.mark.asyncio
async def test_an_a2a_0_3_client_sends_reads_and_gets_the_same_codes() -> None:
    async with a2a_server() as server, httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http:
        sent = (await http.post("/", json=message_send("m1"))).json()["result"]
        assert sent["kind"] == "task" and sent["status"]["state"] == "completed"
        assert sent["artifacts"][0]["parts"][0]["text"] == "hi"
        read = (
            await http.post("/", json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": sent["id"]}})
        ).json()
        assert read["result"]["id"] == sent["id"]
        cancel = {"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": sent["id"]}}
        assert (await http.post("/", json=cancel)).json()["error"]["code"] == -32002
        refused = (await http.post("/", json=message_send("m2", acceptedOutputModes=["image/png"]))).json()["error"]
    assert refused["code"] == json_rpc_code(FrontDoorError.OUTPUT_MODE_UNSUPPORTED)
    assert refused["data"]["reason"] == FrontDoorError.OUTPUT_MODE_UNSUPPORTED

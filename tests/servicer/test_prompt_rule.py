"""One rule says what a request's prompt is (``protocols.acp.prompt_source``), and Chat, the echo
backend, the acp backend and ``merge_params_to_acp_prompt`` all follow it.

Each case is a request's ``params`` and what every path makes of it: the text an agent answers (the
echo backend streams it back; the test ACP agent, a real subprocess, echoes the text blocks it was
sent) or the ``params`` field Chat refuses with INVALID_ARGUMENT before any backend runs. The
expected outcomes are written by hand from the rule: ``prompt`` whatever it holds, else a non-empty
``content_blocks``, else the first of ``text`` / ``content`` / ``query`` that is set.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from e2a_grpc import E2AEnvelope, merge_params_to_acp_prompt
from e2a_grpc.client.chat import achat, chat
from tests.conftest import in_process_server
from tests.support.acp_servers import TIMEOUT, Server, acp_server, content
from tests.support.status import field_violations


@dataclass(frozen=True)
class Refused:
    """Chat refuses the request with INVALID_ARGUMENT naming this field."""

    field: str


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


CASES: list[tuple[dict[str, Any], str | Refused]] = [
    # The case: the first text key that is set holds no string, so there is no prompt to send.
    ({"text": 5, "content": "hi"}, Refused("envelope.params.text")),
    ({"text": ["x"], "query": "q"}, Refused("envelope.params.text")),
    ({"text": "", "content": None, "query": "from query"}, "from query"),
    ({"content": "from content", "query": "not this"}, "from content"),
    ({"text": "plain", "content": "not this"}, "plain"),
    ({"content_blocks": [_text("a "), _text("b")], "text": "not this"}, "a b"),
    ({"content_blocks": [], "text": "empty blocks give way"}, "empty blocks give way"),
    ({"prompt": [_text("from prompt")], "content_blocks": [_text("not this")]}, "from prompt"),
    ({"prompt": [], "text": "a prompt key wins even when empty"}, Refused("envelope.params.prompt")),
    ({"prompt": "raw", "text": "not this"}, Refused("envelope.params.prompt")),
    ({"content_blocks": ["not a block"]}, Refused("envelope.params.content_blocks[0]")),
    ({"content_blocks": [{"text": "no type"}]}, Refused("envelope.params.content_blocks[0]")),
    ({"query": 0, "other": "x"}, Refused("envelope.params")),
]
IDS = [f"case{index}" for index in range(len(CASES))]


def _envelope(params: dict[str, Any], session_id: str | None = None) -> E2AEnvelope:
    return E2AEnvelope(method="chat.send", request_id=str(uuid.uuid4()), session_id=session_id, params=params)


def _check_refusal(error: grpc.RpcError, refused: Refused) -> None:
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [field for field, _ in field_violations(error)] == [refused.field]


@pytest.mark.parametrize(("params", "expected"), CASES, ids=IDS)
def test_the_acp_call_sends_the_prompt_chat_accepts(params: dict[str, Any], expected: str | Refused) -> None:
    """``merge_params_to_acp_prompt`` fills ``prompt`` with the text blocks Chat answers, and sends no
    usable prompt for a request Chat refuses."""
    merged = merge_params_to_acp_prompt(E2AEnvelope(method="session/prompt", params=params))
    prompt = merged.get("prompt")
    if isinstance(expected, Refused):
        usable = (
            isinstance(prompt, list) and prompt and all(isinstance(block, dict) and "type" in block for block in prompt)
        )
        assert not usable, merged
    else:
        assert isinstance(prompt, list)
        assert "".join(block["text"] for block in prompt) == expected


@pytest.mark.parametrize(("params", "expected"), CASES, ids=IDS)
@pytest.mark.asyncio
async def test_the_echo_backend_answers_the_prompt(params: dict[str, Any], expected: str | Refused) -> None:
    async with in_process_server() as running, grpc.aio.insecure_channel(running.address) as channel:
        if isinstance(expected, Refused):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                [frame async for frame in achat(channel, _envelope(params), timeout=TIMEOUT)]
            _check_refusal(caught.value, expected)
        else:
            frames = [frame async for frame in achat(channel, _envelope(params), timeout=TIMEOUT)]
            assert frames[-1].body == {"result": {"content": expected}}


@pytest.fixture(scope="module")
def acp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with acp_server(tmp_path_factory.mktemp("prompt-rule")) as server:
        yield server


@pytest.fixture(scope="module")
def session_id() -> str:
    """All cases on one session: one agent, started once."""
    return f"prompt-rule-{uuid.uuid4()}"


@pytest.mark.subprocess  # e2a-grpc serve with the ACP test agent
@pytest.mark.parametrize(("params", "expected"), CASES, ids=IDS)
def test_the_acp_backend_answers_the_same_prompt(
    acp: Server, session_id: str, params: dict[str, Any], expected: str | Refused
) -> None:
    if isinstance(expected, Refused):
        with pytest.raises(grpc.RpcError) as caught:
            list(chat(acp.channel, _envelope(params, session_id), timeout=TIMEOUT))
        _check_refusal(caught.value, expected)
    else:
        assert content(list(chat(acp.channel, _envelope(params, session_id), timeout=TIMEOUT))) == expected

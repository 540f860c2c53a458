"""The bus route's publish is made again while JetStream does not answer, until the request's Start-By."""

from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors
import pytest

from e2a_grpc.backends.bus import _until_start_by

pytestmark = [pytest.mark.in_process, pytest.mark.asyncio]


async def test_an_attempt_jetstream_did_not_answer_is_made_again() -> None:
    failures = [nats.errors.TimeoutError(), nats.js.errors.NoStreamResponseError()]
    attempts = 0

    async def attempt() -> str:
        nonlocal attempts
        attempts += 1
        if failures:
            raise failures.pop(0)
        return "stored"

    assert await _until_start_by(5.0, attempt) == "stored"
    assert attempts == 3


async def test_past_the_start_by_the_last_error_is_raised() -> None:
    async def attempt() -> None:
        await asyncio.sleep(0.01)
        raise nats.errors.TimeoutError

    with pytest.raises(nats.errors.TimeoutError):
        await _until_start_by(0.05, attempt)


async def test_other_errors_are_not_tried_again() -> None:
    attempts = 0

    async def attempt() -> None:
        nonlocal attempts
        attempts += 1
        raise nats.errors.BadSubjectError

    with pytest.raises(nats.errors.BadSubjectError):
        await _until_start_by(5.0, attempt)
    assert attempts == 1

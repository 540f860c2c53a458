"""The agent registry against a real nats-server: entries written on start and by the heartbeat,
deleted on a clean stop, expired with the bucket's TTL when their process is killed; worker counts;
``e2a-grpc agents`` (text, --json, exit codes, a timeout not read as no broker); no secret in any
entry; a broker outage during the heartbeats (one WARNING, one INFO, serving throughout)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nats
import pytest
from nats.aio.msg import Msg
from pydantic import SecretStr

from e2a_grpc.broker.agent_records import AgentRecord, entry_key, new_instance_id
from e2a_grpc.broker.agent_registry import AgentRegistry, Registration
from e2a_grpc.cli.exits import EXIT_FAILED, EXIT_NO_SERVER
from e2a_grpc.settings import BackendName, ServerSettings
from tests.support.log_records import log_records
from tests.support.nats_server import NatsServer, running_nats_server
from tests.support.processes import REPO_ROOT, free_port, running_server_process
from tests.support.registry_entries import (
    HEARTBEAT,
    TTL,
    lasting_registration,
    short_lived_registration,
    worker_record,
)
from tests.support.waiting import within

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio]
#: How long a poll of another process's doing (an expiry the broker does on its own timer) may take.
EXPIRY_DEADLINE_SECONDS = 15.0


def _bucket() -> str:
    """A bucket of the test's own, so that its TTL and entries are its own."""
    return f"AGENTS_{uuid.uuid4().hex[:12]}"


async def _workers(url: str, bucket: str, agent_id: str) -> list[AgentRecord]:
    registry = await AgentRegistry.open(url, bucket=bucket)
    try:
        return await registry.workers(agent_id)
    finally:
        await registry.close()


async def _until_workers(url: str, bucket: str, agent_id: str, count: int) -> list[AgentRecord]:
    """Poll until ``agent_id`` has ``count`` live workers, or the deadline passed: an expiry is the
    broker's own doing, on its own timer, which no watch reports (a bucket's TTL leaves no marker)."""
    deadline = time.monotonic() + EXPIRY_DEADLINE_SECONDS
    while len(workers := await _workers(url, bucket, agent_id)) != count and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return workers


async def _stored_values(url: str, bucket: str) -> list[bytes]:
    """The raw value of every entry of the bucket."""
    nc = await nats.connect(url)
    try:
        kv = await nc.jetstream().key_value(bucket)
        return [(await kv.get(key)).value or b"" for key in await kv.keys()]
    finally:
        await nc.close()


async def test_a_registration_is_live_from_its_start_and_gone_on_a_clean_stop(broker: NatsServer) -> None:
    bucket = _bucket()
    registration = short_lived_registration(broker.url, bucket, "echo")
    await registration.start()
    try:
        (worker,) = await _workers(broker.url, bucket, "echo")
        assert worker == registration.record
        assert await _workers(broker.url, bucket, "other") == []
    finally:
        await registration.close()
    assert await _workers(broker.url, bucket, "echo") == []


async def test_the_heartbeat_keeps_an_entry_alive_past_the_ttl(broker: NatsServer) -> None:
    bucket = _bucket()
    registration = short_lived_registration(broker.url, bucket, "steady")
    await registration.start()
    try:
        nc = await nats.connect(broker.url)
        try:
            kv = await nc.jetstream().key_value(bucket)
            watcher = await kv.watch(registration.record.key)
            # Each heartbeat is a new value of the key: wait for those of three TTLs.
            while True:
                entry = await within(watcher.updates(timeout=5 * TTL))  # type: ignore[no-untyped-call]
                if entry is None:
                    continue
                record = AgentRecord.from_json(entry.value or b"")
                if (record.heartbeat_at - record.started_at).total_seconds() > 3 * TTL:
                    break
            await watcher.stop()  # type: ignore[no-untyped-call]  # nats-py's KeyWatcher is untyped
        finally:
            await nc.close()
        (worker,) = await _workers(broker.url, bucket, "steady")
        assert worker.instance_id == registration.record.instance_id
        assert registration.failing is None
    finally:
        await registration.close()


async def test_two_registrants_of_one_agent_id_are_two_workers(broker: NatsServer) -> None:
    bucket = _bucket()
    first, second, other = (lasting_registration(broker.url, bucket, agent) for agent in ("twin", "twin", "solo"))
    with log_records() as logs:
        for registration in (first, second, other):
            await registration.start()
    # The bucket the first created has the TTL the others are configured with: nothing to warn of.
    assert not logs.at_least(logging.WARNING), logs.at_least(logging.WARNING)
    try:
        registry = await AgentRegistry.open(broker.url, bucket=bucket)
        try:
            twins = await registry.workers("twin")
            agents = await registry.agents()
        finally:
            await registry.close()
        assert {worker.instance_id for worker in twins} == {first.record.instance_id, second.record.instance_id}
        assert [(agent.record.agent_id, agent.workers) for agent in agents] == [("solo", 1), ("twin", 2)]
        await first.close()
        (left,) = await _workers(broker.url, bucket, "twin")
        assert left.instance_id == second.record.instance_id
    finally:
        for registration in (second, other):
            await registration.close()


async def test_an_empty_or_missing_bucket_is_an_empty_registry(broker: NatsServer) -> None:
    registry = await AgentRegistry.open(broker.url, bucket=_bucket())
    try:
        assert await registry.agents() == []
        assert await registry.workers("anyone") == []
    finally:
        await registry.close()


async def test_entries_that_are_not_records_of_their_key_are_skipped_and_logged(broker: NatsServer) -> None:
    bucket = _bucket()
    registration = short_lived_registration(broker.url, bucket, "real")
    await registration.start()
    try:
        nc = await nats.connect(broker.url)
        try:
            kv = await nc.jetstream().key_value(bucket)
            await kv.put(entry_key("junk", new_instance_id()), b'{"schema_version": 99}')
            # A valid record under another agent's key.
            await kv.put(entry_key("thief", new_instance_id()), worker_record("thief").to_json())
        finally:
            await nc.close()
        with log_records() as logs:
            registry = await AgentRegistry.open(broker.url, bucket=bucket)
            try:
                agents = await registry.agents()
            finally:
                await registry.close()
        assert [agent.record.agent_id for agent in agents] == ["real"]
        skipped = logs.matching(logging.WARNING, "skipped")
        assert len(skipped) == 2, skipped
    finally:
        await registration.close()


@pytest.mark.parametrize(
    "backend_settings",
    [
        {"backend": BackendName.A2A, "a2a_url": "https://agent-user:url-password-7f3e@agents.example/a2a?key=qs-9c2d"},
        {"backend": BackendName.ACP, "acp_command": "agent-bin --api-key arg-secret-51aa"},
    ],
    ids=["a2a-url-userinfo", "acp-command-arguments"],
)
async def test_no_entry_carries_a_secret(broker: NatsServer, backend_settings: dict[str, object]) -> None:
    bucket = _bucket()
    config = ServerSettings(
        token=SecretStr("bearer-token-0d94"),
        registry_nats=broker.url,
        registry_bucket=bucket,
        registry_ttl_seconds=TTL * 10,
        registry_heartbeat_seconds=TTL,
        **backend_settings,  # type: ignore[arg-type]  # the fields of one backend
    )
    (registration,) = Registration.of_server(config)
    await registration.start()
    try:
        nc = await nats.connect(broker.url)
        try:
            entry = await (await nc.jetstream().key_value(bucket)).get(registration.record.key)
        finally:
            await nc.close()
    finally:
        await registration.close()
    stored = (entry.value or b"").decode()
    for secret in (
        "bearer-token-0d94",
        "agent-user",
        "url-password-7f3e",
        "qs-9c2d",
        "agents.example",
        "arg-secret-51aa",
        "agent-bin",
    ):
        assert secret not in stored
    assert json.loads(stored)["backend"] == config.backend.value


async def test_a_routing_tables_local_agents_register_one_entry_each(
    broker: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each local agent under its own id, name and skills; the upstream (registered by the service that runs
    it) not at all, nor its address or token."""
    monkeypatch.setenv("E2A_TEST_UPSTREAM_TOKEN", "upstream-token-66b1")
    table = tmp_path / "agents.toml"
    table.write_text(
        '[agents.writer]\ntarget = "local:echo"\nname = "Writer"\ndescription = "Writes"\nskills = ["write: Writes"]\n'
        '[agents.reader]\ntarget = "local:echo"\n'
        '[agents.far]\ntarget = "grpc://upstream-host-3c1e:7000"\ntoken_env = "E2A_TEST_UPSTREAM_TOKEN"\n'
    )
    bucket = _bucket()
    config = ServerSettings(
        agents=table,
        registry_nats=broker.url,
        registry_bucket=bucket,
        registry_ttl_seconds=TTL * 10,
        registry_heartbeat_seconds=TTL,
    )
    registrations = Registration.of_server(config)
    for registration in registrations:
        await registration.start()
    registry = await AgentRegistry.open(broker.url, bucket=bucket)
    try:
        agents = await registry.agents()
        nc = await nats.connect(broker.url)
        try:
            kv = await nc.jetstream().key_value(bucket)
            stored = [((await kv.get(registration.record.key)).value or b"").decode() for registration in registrations]
        finally:
            await nc.close()
    finally:
        await registry.close()
        for registration in registrations:
            await registration.close()
    assert [(agent.record.agent_id, agent.workers) for agent in agents] == [("reader", 1), ("writer", 1)]
    writer = next(agent.record for agent in agents if agent.record.agent_id == "writer")
    assert (writer.name, writer.description, [skill.id for skill in writer.skills]) == ("Writer", "Writes", ["write"])
    reader = next(agent.record for agent in agents if agent.record.agent_id == "reader")
    assert (reader.name, reader.backend) == (config.a2a_agent_name, "echo")  # the server's card settings
    assert writer.instance_id == reader.instance_id  # one server instance
    for value in stored:
        assert "upstream-host-3c1e" not in value and "upstream-token-66b1" not in value


def _agents_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "e2a_grpc", "agents", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_agents_command_lists_agents_and_worker_counts(broker: NatsServer) -> None:
    bucket = _bucket()
    registrations = [lasting_registration(broker.url, bucket, agent) for agent in ("coder", "coder", "echo")]
    for registration in registrations:
        await registration.start()
    try:
        text = await asyncio.to_thread(_agents_command, "--nats", broker.url, "--registry-bucket", bucket)
        as_json = await asyncio.to_thread(_agents_command, "--nats", broker.url, "--registry-bucket", bucket, "--json")
    finally:
        for registration in registrations:
            await registration.close()
    assert text.returncode == 0, text.stderr
    header, *rows = text.stdout.splitlines()
    assert header.split() == ["AGENT", "WORKERS", "BACKEND", "VERSION", "NAME", "SKILLS"]
    assert [row.split()[:3] for row in rows] == [["coder", "2", "echo"], ["echo", "1", "echo"]]
    assert as_json.returncode == 0, as_json.stderr
    agents = json.loads(as_json.stdout)["agents"]
    assert [(agent["agent_id"], agent["workers"]) for agent in agents] == [("coder", 2), ("echo", 1)]
    assert agents[0]["name"] == "coder agent" and agents[0]["input_modes"] == ["text/plain"]
    assert "instance_id" not in agents[0]


async def test_the_agents_command_without_a_broker_exits_4_and_without_agents_says_so(broker: NatsServer) -> None:
    unreachable = await asyncio.to_thread(_agents_command, "--nats", f"nats://127.0.0.1:{free_port()}")
    assert unreachable.returncode == EXIT_NO_SERVER
    assert "cannot reach NATS" in unreachable.stderr
    empty = await asyncio.to_thread(_agents_command, "--nats", broker.url, "--registry-bucket", _bucket())
    assert (empty.returncode, empty.stdout) == (0, "no live agents\n")
    assert json.loads(
        (
            await asyncio.to_thread(_agents_command, "--nats", broker.url, "--registry-bucket", _bucket(), "--json")
        ).stdout
    ) == {"agents": []}


async def test_the_agents_command_exits_1_when_the_broker_is_reached_but_its_jetstream_does_not_answer(
    tmp_path: Path,
) -> None:
    """A timeout is an OSError in Python: it must not read as "no broker" (exit 4)."""
    # NatsServer passes extra options last: "-js=false" turns off the JetStream its command enables, and
    # a subscriber of the JetStream API that never answers makes each request of the registry time out.
    server = NatsServer(tmp_path, cluster_options=["-js=false"])
    server.start()
    try:
        nc = await nats.connect(server.url)
        try:
            await nc.subscribe("$JS.API.>", cb=_never_answer)
            await nc.flush()
            silent = await asyncio.to_thread(_agents_command, "--nats", server.url, "--registry-bucket", _bucket())
        finally:
            await nc.close()
    finally:
        server.stop()
    assert silent.returncode == EXIT_FAILED, silent.stderr
    assert "cannot read the agent registry" in silent.stderr and "Timeout" in silent.stderr


async def _never_answer(message: Msg) -> None:
    """A JetStream API that takes requests and answers none."""


def _serve_args(url: str, bucket: str, agent_id: str) -> tuple[str, ...]:
    return (
        "--registry-nats",
        url,
        "--registry-bucket",
        bucket,
        "--registry-ttl-seconds",
        str(TTL),
        "--registry-heartbeat-seconds",
        str(HEARTBEAT),
        "--agent-id",
        agent_id,
    )


async def test_serve_registers_leaves_on_sigterm_and_a_killed_servers_entry_expires(broker: NatsServer) -> None:
    bucket = _bucket()
    with running_server_process(
        *_serve_args(broker.url, bucket, "served"), env={"E2A_GRPC_TOKEN": "serve-token-77e1"}
    ) as (
        _,
        stopped,
        _,
    ):
        with running_server_process(*_serve_args(broker.url, bucket, "served")) as (_, killed, _):
            # Health says SERVING only once the entry is written.
            workers = await _workers(broker.url, bucket, "served")
            assert len(workers) == 2
            assert {worker.backend for worker in workers} == {"echo"}
            assert not any(b"serve-token-77e1" in value for value in await _stored_values(broker.url, bucket))
            killed.send_signal(signal.SIGKILL)
            await asyncio.to_thread(killed.wait, 10)
            # Gone within the TTL of its last heartbeat, while the other's heartbeats keep it.
            assert len(await _until_workers(broker.url, bucket, "served", 1)) == 1
        stopped.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(stopped.wait, 30) == 0
        # A clean stop deletes its entry: no waiting for the TTL.
        assert await _workers(broker.url, bucket, "served") == []


async def test_each_worker_process_of_serve_is_a_worker_of_its_agent(broker: NatsServer) -> None:
    bucket = _bucket()
    with running_server_process(*_serve_args(broker.url, bucket, "parallel"), "--workers", "2"):
        # Health answers once one worker serves; the other registers on its own time.
        workers = await _until_workers(broker.url, bucket, "parallel", 2)
        assert len({worker.instance_id for worker in workers}) == 2


async def test_a_bucket_with_another_ttl_keeps_its_own_and_says_so(broker: NatsServer) -> None:
    bucket = _bucket()
    first = Registration(broker.url, worker_record("early"), bucket=bucket, ttl=TTL * 10, replicas=1, heartbeat=TTL)
    late = short_lived_registration(broker.url, bucket, "late")
    await first.start()
    try:
        with log_records() as logs:
            await late.start()
        await late.close()
    finally:
        await first.close()
    (warning,) = logs.matching(logging.WARNING, f"the agent registry's bucket {bucket} has a TTL of 10 s")
    assert f"not the {TTL:g} s configured" in warning


async def test_a_broker_outage_during_heartbeats_is_one_warning_then_one_info(tmp_path: Path) -> None:
    with running_nats_server(tmp_path / "jetstream") as broker:
        bucket = _bucket()
        # A TTL long enough for the entry to outlive the outage, so that the recovery finds it kept.
        registration = Registration(
            broker.url, worker_record("resilient"), bucket=bucket, ttl=30.0, replicas=1, heartbeat=HEARTBEAT
        )
        await registration.start()
        try:
            with (
                log_records(lambda record: "heartbeat recovered" in record.getMessage()) as logs,
                log_records(lambda record: "heartbeat failing" in record.getMessage()) as failing,
            ):
                await asyncio.to_thread(broker.stop)
                await within(failing.seen.wait(), 30)
                beats = registration.beats
                await asyncio.to_thread(broker.start)  # (same port, same JetStream directory)
                await within(logs.seen.wait(), 30)
            assert registration.beats > beats
            (warning,) = logs.matching(logging.WARNING, "agent registry heartbeat failing")
            assert "'resilient'" in warning
            assert len(logs.matching(logging.INFO, "agent registry heartbeat recovered")) == 1
            assert not logs.at_least(logging.ERROR), logs.at_least(logging.ERROR)
            (worker,) = await _workers(broker.url, bucket, "resilient")
            assert worker.heartbeat_at > registration.record.started_at
        finally:
            await registration.close()


async def test_a_stop_during_an_outage_leaves_the_entry_to_expire_and_says_so(tmp_path: Path) -> None:
    with running_nats_server(tmp_path / "jetstream") as broker:
        registration = short_lived_registration(broker.url, _bucket(), "stranded")
        await registration.start()
        with log_records(lambda record: "heartbeat failing" in record.getMessage()) as logs:
            await asyncio.to_thread(broker.stop)
            await within(logs.seen.wait())
            await within(registration.close())
        (warning,) = logs.matching(logging.WARNING, "could not delete the registry entry of agent 'stranded'")
        assert f"it expires within {TTL:g} s" in warning
        assert not logs.at_least(logging.ERROR), logs.at_least(logging.ERROR)

"""Tasks nobody will end are marked failed by the sweeper (``a2a_server.leases``): those of a server
instance whose lease expired (one SIGKILLed with a turn in flight, on a real PostgreSQL shared with two
live instances) and this instance's own whose turn ended without a final state; a live instance's
running tasks are left alone. SQLite and PostgreSQL keep the leases alike."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from a2a.server.cluster import VersionedTaskStore
from a2a.server.cluster.version import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import GetTaskRequest, Task, TaskState, TaskStatus
from google.protobuf import json_format
from pydantic import ValidationError
from sqlalchemy import select

from e2a_grpc.a2a_server.leases import INSTANCES, TASK_OWNERS, InstanceLeases
from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.a2a_server.store_outage import StoreHealth
from e2a_grpc.chat.events import AgentBackend
from tests.a2a_server.conftest import a2a_client, a2a_server, send_request, stream_events, task_of, user_message
from tests.conftest import server_config
from tests.support.fakes import EndlessBackend
from tests.support.postgres import Cluster, throwaway_cluster
from tests.support.processes import free_port, running_server_process
from tests.support.waiting import within

pytestmark = [pytest.mark.postgres, pytest.mark.subprocess]  # PostgreSQL, serve and an ACP agent process

AGENT = Path(__file__).resolve().parents[1] / "support" / "agents" / "acp_agent.py"
#: Short enough for a test to outlive a lease; the sweep interval is at most half of it.
LEASE_SECONDS, SWEEP_SECONDS = 2.0, 0.5


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as started:
        yield started


@contextlib.asynccontextmanager
async def database_server(
    store: str, cluster: Cluster, tmp_path: Path, backend: AgentBackend | None = None, lease_seconds: float = 600
) -> AsyncIterator[A2AServer]:
    """An in-process server on ``store``, its own sweeps every half lease (a test sweeps when it wants)."""
    database = (
        {"a2a_sqlite_path": tmp_path / "tasks.sqlite"} if store == "sqlite" else {"a2a_postgres_url": cluster.url}
    )
    async with a2a_server(
        backend, **database, a2a_lease_seconds=lease_seconds, a2a_sweep_interval_seconds=lease_seconds / 2
    ) as server:
        yield server


def _task(state: TaskState) -> Task:
    return Task(id=str(uuid.uuid4()), context_id=str(uuid.uuid4()), status=TaskStatus(state=state))


def _error_code(task: Task) -> object:
    return json_format.MessageToDict(task.metadata).get("e2a_error", {}).get("code")


@pytest.mark.asyncio
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
async def test_the_sweeper_fails_the_running_tasks_of_gone_instances_and_its_lost_turns_only(
    store: str, cluster: Cluster, tmp_path: Path
) -> None:
    async with database_server(store, cluster, tmp_path) as server:
        storage, sweeper = server.storage, server.orphan_sweeper
        assert storage is not None and storage.engine is not None and storage.leases is not None and sweeper is not None
        tasks, context, now = storage.versioned_store(), ServerCallContext(), time.time()
        live = InstanceLeases(storage.engine, StoreHealth(), lease_seconds=600)
        gone = InstanceLeases(storage.engine, StoreHealth(), lease_seconds=1)
        await live.renew(now)
        await gone.renew(now - 10)  # expired 9 s ago
        owned = {
            "gone working": (gone, _task(TaskState.TASK_STATE_WORKING)),
            "gone submitted": (gone, _task(TaskState.TASK_STATE_SUBMITTED)),
            "gone completed": (gone, _task(TaskState.TASK_STATE_COMPLETED)),
            "gone waiting": (gone, _task(TaskState.TASK_STATE_INPUT_REQUIRED)),
            "live working": (live, _task(TaskState.TASK_STATE_WORKING)),
            "own lost turn": (storage.leases, _task(TaskState.TASK_STATE_WORKING)),
        }
        for leases, task in owned.values():
            await tasks.save(task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=context)
            await leases.record_owner(task.id)

        assert await sweeper.sweep() == 3

        async def state(name: str) -> Task:
            stored = await tasks.get(owned[name][1].id, context)
            assert stored is not None
            return stored.task

        for name in ("gone working", "gone submitted"):
            failed = await state(name)
            assert failed.status.state == TaskState.TASK_STATE_FAILED
            assert _error_code(failed) == "instance_gone"
            assert "server instance running this task stopped" in failed.status.message.parts[0].text
        lost = await state("own lost turn")
        assert lost.status.state == TaskState.TASK_STATE_FAILED and _error_code(lost) == "turn_lost"
        assert (await state("gone completed")).status.state == TaskState.TASK_STATE_COMPLETED
        assert (await state("gone waiting")).status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert (await state("live working")).status.state == TaskState.TASK_STATE_WORKING
        # Only the live instance's row is left, and the gone instance's lease is forgotten.
        async with storage.engine.connect() as connection:
            owners = (await connection.execute(select(TASK_OWNERS.c.task_id))).scalars().all()
            instances = set((await connection.execute(select(INSTANCES.c.instance_id))).scalars().all())
        assert owners == [owned["live working"][1].id]
        assert gone.instance_id not in instances and {live.instance_id, storage.leases.instance_id} <= instances
        assert await sweeper.sweep() == 0  # nothing twice


@pytest.mark.asyncio
async def test_a_turn_that_runs_here_is_not_swept(cluster: Cluster, tmp_path: Path) -> None:
    backend = EndlessBackend(deltas=1)
    async with database_server("postgresql", cluster, tmp_path, backend) as server:
        assert server.orphan_sweeper is not None
        async with a2a_client(server, "JSONRPC", streaming=False) as client:
            request = send_request(user_message("never ends"), return_immediately=True)
            task = task_of(await stream_events(client, request))
            await backend.waiting.wait()  # the turn runs, its task working
            assert await server.orphan_sweeper.sweep() == 0
            assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == TaskState.TASK_STATE_WORKING


@pytest.mark.asyncio
async def test_a_killed_instances_turn_is_failed_by_another_once_its_lease_expired_and_a_live_ones_kept(
    cluster: Cluster, tmp_path: Path
) -> None:
    urls, processes = [], []
    with contextlib.ExitStack() as stack:
        for name in ("killed", "live"):
            a2a_port = free_port()
            _, process, _ = stack.enter_context(
                running_server_process(
                    *("--backend", "acp", "--acp-command", shlex.join([sys.executable, str(AGENT)])),
                    *("--a2a-port", str(a2a_port), "--a2a-postgres-url", cluster.url),
                    *("--a2a-lease-seconds", str(LEASE_SECONDS), "--a2a-sweep-interval-seconds", str(SWEEP_SECONDS)),
                    log=tmp_path / f"server-{name}.log",
                )
            )
            urls.append(f"http://127.0.0.1:{a2a_port}")
            processes.append(process)
        running = []
        for url in urls:  # a minute of ticks each
            async with a2a_client(url, "JSONRPC", streaming=False) as client:
                request = send_request(user_message("slow", str(uuid.uuid4())), return_immediately=True)
                running.append(task_of(await stream_events(client, request)))
        processes[0].kill()
        processes[0].wait()
        await asyncio.sleep(LEASE_SECONDS)  # its last renewal was before the kill: the lease has expired now
        async with database_server("postgresql", cluster, tmp_path) as sweeping:
            assert sweeping.orphan_sweeper is not None
            await sweeping.orphan_sweeper.sweep()
            async with a2a_client(sweeping, "JSONRPC", streaming=False) as client:
                killed = await client.get_task(GetTaskRequest(id=running[0].id))
                live = await client.get_task(GetTaskRequest(id=running[1].id))
    assert killed.status.state == TaskState.TASK_STATE_FAILED and _error_code(killed) == "instance_gone"
    assert live.status.state == TaskState.TASK_STATE_WORKING


@pytest.mark.asyncio
async def test_after_an_outage_the_other_instances_get_a_whole_lease_to_renew_theirs(
    cluster: Cluster, tmp_path: Path
) -> None:
    async with database_server("postgresql", cluster, tmp_path, lease_seconds=LEASE_SECONDS) as server:
        storage, sweeper = server.storage, server.orphan_sweeper
        assert storage is not None and storage.engine is not None and storage.health is not None
        assert sweeper is not None
        expired = InstanceLeases(storage.engine, StoreHealth(), lease_seconds=1)
        await expired.renew(time.time() - 10)
        task = _task(TaskState.TASK_STATE_WORKING)
        await storage.versioned_store().save(
            task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=ServerCallContext()
        )
        await expired.record_owner(task.id)
        # The database was down and answers again: every lease may have expired meanwhile.
        storage.health.probed("ConnectionRefusedError: [Errno 111] Connection refused")
        storage.health.probed(None)
        await sweeper.sweep()
        assert await _state(storage.versioned_store(), task.id) == TaskState.TASK_STATE_WORKING
        await asyncio.sleep(LEASE_SECONDS)  # a lease of a working database: the live ones renewed theirs
        await sweeper.sweep()  # (or the server's own sweep did, every half lease)
        assert await _state(storage.versioned_store(), task.id) == TaskState.TASK_STATE_FAILED


@pytest.mark.asyncio
async def test_the_end_of_an_outage_has_the_sweeper_sweep_at_once(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own sweeps are half an hour apart: only the database answering again can have it sweep now."""
    async with database_server("postgresql", cluster, tmp_path, lease_seconds=3600) as server:
        storage, sweeper = server.storage, server.orphan_sweeper
        assert storage is not None and storage.health is not None and storage.leases is not None
        assert sweeper is not None
        swept = asyncio.Event()
        sweep = sweeper.sweep

        async def sweep_and_tell() -> int:
            failed = await sweep()
            swept.set()
            return failed

        monkeypatch.setattr(sweeper, "sweep", sweep_and_tell)
        task = _task(TaskState.TASK_STATE_WORKING)  # its turn failed in the outage, here
        await storage.versioned_store().save(
            task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=ServerCallContext()
        )
        await storage.leases.record_owner(task.id)
        storage.health.probed("ConnectionRefusedError: [Errno 111] Connection refused")
        assert not swept.is_set()
        storage.health.probed(None)
        await within(swept.wait())
        stored = await storage.versioned_store().get(task.id, ServerCallContext())
        assert stored is not None and stored.task.status.state == TaskState.TASK_STATE_FAILED
        assert _error_code(stored.task) == "turn_lost"


async def _state(tasks: VersionedTaskStore, task_id: str) -> TaskState:
    stored = await tasks.get(task_id, ServerCallContext())
    assert stored is not None
    return stored.task.status.state


def test_a_lease_must_outlast_two_sweeps() -> None:
    with pytest.raises(ValidationError, match="at most half of --a2a-lease-seconds"):
        server_config(a2a_port=0, a2a_lease_seconds=10, a2a_sweep_interval_seconds=6)

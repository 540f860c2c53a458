"""``e2a-grpc serve --workers N``: N processes on one port (SO_REUSEPORT), as one service.

The kernel spreads connections over the workers; SIGTERM to the parent drains them all, and every
Chat stream, whichever worker serves it, gets its final ``server_shutting_down`` frame. A worker that
dies is restarted while the others serve the port, until deaths come too often. A taken port is
still one line and exit 1; settings that one process must own are refused with more than one.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from e2a.v1 import conversion_service_pb2 as pb
from e2a.v1 import conversion_service_pb2_grpc as pb_grpc
from e2a_grpc import E2AEnvelope, E2AResponse
from e2a_grpc.client.chat import achat
from tests.support.processes import REPO_ROOT, running_server, running_server_process, wait_until

WORKERS = 2
#: Separate channels share one connection unless each has a subchannel pool of its own.
OWN_CONNECTION = (("grpc.use_local_subchannel_pool", 1),)


def _workers(pid: int) -> list[int]:
    """The worker processes of the server ``pid`` (multiprocessing also starts a resource tracker)."""
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
        pids = [int(child) for child in children.read().split()]
    workers = []
    for child in pids:
        with open(f"/proc/{child}/cmdline", "rb") as cmdline:
            if b"spawn_main" in cmdline.read():
                workers.append(child)
    return workers


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _established_connections(pid: int, port: int) -> int:
    """How many TCP connections to ``port`` the process ``pid`` has accepted and holds open (grpc
    listens on IPv6 sockets that take IPv4 too, so the connections to 127.0.0.1 are in tcp6)."""
    owned = _socket_inodes(pid)
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as lines:
            for line in lines.read().splitlines()[1:]:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] == "01" and fields[9] in owned:  # 01: ESTABLISHED
                    count += 1
    return count


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "e2a_grpc", "serve", "--host", "127.0.0.1", *args]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def test_sigterm_drains_every_worker_and_every_stream_gets_its_final_frame(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    streams = 16
    args = ("--workers", str(WORKERS), "--echo-delay-seconds", "0.05", "--grace-seconds", "5")
    with running_server_process(*args, log=log) as (address, process, _):
        port = int(address.rsplit(":", 1)[1])
        # Health answers once one worker listens; the streams must reach all of them.
        assert wait_until(lambda: f"all {WORKERS} workers serving" in log.read_text(), timeout=60)
        workers = _workers(process.pid)
        assert len(workers) == WORKERS
        all_in_flight = asyncio.Event()
        started: set[int] = set()
        connections: dict[int, int] = {}

        async def stream(index: int) -> list[E2AResponse]:
            frames = []
            async with grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as channel:
                envelope = E2AEnvelope(method="chat.send", params={"text": "w " * 400}, request_id=f"r{index}")
                async for frame in achat(channel, envelope, timeout=60):  # checks the stream invariants
                    frames.append(frame)
                    started.add(index)
                    if len(started) == streams:
                        all_in_flight.set()
            return frames

        async def signal_when_all_in_flight() -> list[list[E2AResponse]]:
            calls = asyncio.gather(*(stream(index) for index in range(streams)))
            await asyncio.wait_for(all_in_flight.wait(), 60)
            connections.update({worker: _established_connections(worker, port) for worker in workers})
            process.send_signal(signal.SIGTERM)
            return await asyncio.wait_for(calls, 30)

        results = asyncio.run(signal_when_all_in_flight())
        assert process.wait(timeout=20) == 0
    # Both workers served streams (16 connections all on one of two workers: 1 in 2**15).
    assert sum(connections.values()) == streams and all(connections.values()), connections
    for frames in results:
        final = frames[-1]
        assert (final.response_kind, final.status, final.is_final) == ("e2a.error", "failed", True)
        assert final.body["code"] == "server_shutting_down"
        assert len(frames) < 400  # ended by the signal, not by running out of words
    text = log.read_text()
    assert text.count("e2a-grpc stopped") == WORKERS, text
    assert all(not os.path.exists(f"/proc/{worker}") for worker in workers)


def test_workers_answer_unary_calls_and_streams_on_uvloop() -> None:
    with (
        running_server("--workers", str(WORKERS), "--event-loop", "uvloop") as address,
        grpc.insecure_channel(address) as channel,
    ):
        stub = pb_grpc.ConversionServiceStub(channel)
        reply = stub.FromA2A(pb.FromA2ARequest(json='{"message": {"parts": [{"text": "hi"}]}}'), timeout=10)
        assert E2AEnvelope.from_proto(reply.envelope).params["message"]["parts"] == [{"text": "hi"}]
        conversion = pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json='{"message": {"parts": []}}'))
        batch = pb.ConvertStreamRequest(conversions=[conversion] * 3)
        replies = list(stub.ConvertStream(iter([batch] * 10), timeout=10))
        assert [result.index for reply in replies for result in reply.results] == list(range(30))


def _allowed_cpus(pid: int) -> set[str]:
    """The CPU lists (as /proc writes them) the threads of process ``pid`` may run on."""
    lists: set[str] = set()
    for thread in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{thread}/status", encoding="ascii") as status:
            lists.update(line.split()[1] for line in status if line.startswith("Cpus_allowed_list:"))
    return lists


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < WORKERS, reason="needs a CPU per worker")
def test_pinned_workers_run_each_on_a_cpu_of_its_own(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with running_server_process("--workers", str(WORKERS), "--pin-workers", log=log) as (address, process, _):
        # Health answers once one worker listens; the other may not have pinned itself yet.
        assert wait_until(lambda: f"all {WORKERS} workers serving" in log.read_text(), timeout=60)
        with grpc.insecure_channel(address) as channel:  # serving, with gRPC's threads started
            reply = pb_grpc.ConversionServiceStub(channel).FromA2A(
                pb.FromA2ARequest(json='{"message": {}}'), timeout=10
            )
            assert reply.HasField("envelope")
        cpus = [_allowed_cpus(worker) for worker in _workers(process.pid)]
        parent = _allowed_cpus(process.pid)
    pinned: set[str] = set().union(*cpus)
    assert [len(threads) for threads in cpus] == [1] * WORKERS  # every thread of a worker on one CPU
    assert len(pinned) == WORKERS  # and each worker on its own
    assert parent.isdisjoint(pinned)  # the parent is not pinned


def _more_connections(pid: int, port: int, than: int) -> bool:
    return _established_connections(pid, port) > than


def _worker_serving_again(log: Path, number: int) -> bool:
    return f"worker {number} serving again" in log.read_text()


def test_a_worker_killed_under_load_is_restarted_and_the_port_stays_served(tmp_path: Path) -> None:
    """Callers on connections of their own call ToACP one call after another; one worker is SIGKILLed.
    Only calls on its connections fail (each caller at most the one it had in flight), every caller
    goes on being answered, and the restarted worker serves new connections."""
    log = tmp_path / "server.log"
    callers, calls_after_kill = 8, 20
    request = pb.ToACPRequest(envelope=E2AEnvelope(method="session/prompt", params={"text": "hi"}).to_proto())
    with running_server_process("--workers", str(WORKERS), log=log) as (address, process, _):
        port = int(address.rsplit(":", 1)[1])
        assert wait_until(lambda: f"all {WORKERS} workers serving" in log.read_text(), timeout=60)
        victim, survivor = _workers(process.pid)
        killed = asyncio.Event()

        async def caller(warm: asyncio.Event) -> tuple[int, int]:
            """Calls until ``calls_after_kill`` answers after the kill; (failures, answers after the kill)."""
            failures = answered_after = 0
            async with grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as channel:
                stub: pb_grpc.ConversionServiceAsyncStub = pb_grpc.ConversionServiceStub(channel)
                for _ in range(100_000):  # bounded: far more calls than the kill and its recovery take
                    after = killed.is_set()
                    try:
                        reply = await stub.ToACP(request, timeout=10, wait_for_ready=True)
                    except grpc.aio.AioRpcError as exc:
                        assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
                        # Only while its connection to the killed worker ends: once answered again, never.
                        assert not answered_after, "a call failed after the caller had been answered again"
                        failures += 1
                        continue
                    assert '"session/prompt"' in reply.jsonrpc
                    warm.set()
                    answered_after += after
                    if answered_after == calls_after_kill:
                        return failures, answered_after
            raise AssertionError("a caller was not answered after the kill")

        async def kill_under_load() -> list[tuple[int, int]]:
            warm = [asyncio.Event() for _ in range(callers)]
            calls = asyncio.gather(*(caller(event) for event in warm))
            await asyncio.wait_for(asyncio.gather(*(event.wait() for event in warm)), 60)
            os.kill(victim, signal.SIGKILL)
            killed.set()
            return await asyncio.wait_for(calls, 60)

        results = asyncio.run(kill_under_load())
        # Each caller had one call in flight, on one connection: it lost that one, and at most one more
        # sent on that connection as it ended, before the channel saw it end.
        assert all(failures <= 2 for failures, _ in results), results
        assert wait_until(lambda: _worker_serving_again(log, 1) or _worker_serving_again(log, 2), timeout=60)
        [restarted] = [worker for worker in _workers(process.pid) if worker != survivor]
        assert restarted != victim

        async def reach_the_restarted_worker() -> None:
            """New connections until one lands on the restarted worker, which answers (connections land
            on a worker at random: 2**-39 to miss it 40 times)."""
            channels: list[grpc.aio.Channel] = []
            try:
                for _ in range(40):
                    before = _established_connections(restarted, port)
                    channel = grpc.aio.insecure_channel(address, options=OWN_CONNECTION)
                    channels.append(channel)
                    stub: pb_grpc.ConversionServiceAsyncStub = pb_grpc.ConversionServiceStub(channel)
                    assert '"session/prompt"' in (await stub.ToACP(request, timeout=10)).jsonrpc
                    if wait_until(functools.partial(_more_connections, restarted, port, before), timeout=0.5):
                        return
                raise AssertionError("no connection reached the restarted worker")
            finally:
                for channel in channels:
                    await channel.close()

        asyncio.run(reach_the_restarted_worker())
    text = log.read_text()
    number = 1 if _worker_serving_again(log, 1) else 2
    assert f"e2a-grpc worker {number} died (killed by SIGKILL): restarting it in" in text, text
    assert "giving up" not in text


def test_after_more_deaths_than_the_restarts_allow_the_parent_gives_up_with_exit_code_1(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    args = ("--workers", str(WORKERS), "--worker-max-restarts", "1", "--worker-restart-window-seconds", "600")
    with running_server_process(*args, log=log) as (_, process, _):
        assert wait_until(lambda: f"all {WORKERS} workers serving" in log.read_text(), timeout=60)
        first, second = _workers(process.pid)
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: _worker_serving_again(log, 1), timeout=60), log.read_text()
        os.kill(second, signal.SIGKILL)
        assert process.wait(timeout=30) == 1
        assert not _workers_alive(first, second)
    text = log.read_text()
    assert "e2a-grpc worker 1 died (killed by SIGKILL): restarting it in 0.5 s" in text
    [giving_up] = [line for line in text.splitlines() if "giving up" in line]
    assert (
        "2 worker deaths within 600 s (at most 1 restarts; the last: e2a-grpc worker 2, killed by SIGKILL)" in giving_up
    )
    assert text.count("e2a-grpc stopped") == 1  # the restarted worker drained


def test_with_no_restarts_a_worker_that_dies_takes_the_service_down(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with running_server_process("--workers", str(WORKERS), "--worker-max-restarts", "0", log=log) as (_, process, _):
        first, second = _workers(process.pid)
        os.kill(first, signal.SIGKILL)
        assert process.wait(timeout=20) == 1
        assert wait_until(lambda: not os.path.exists(f"/proc/{second}"), timeout=10)
    assert "1 worker deaths within 60 s (at most 0 restarts" in log.read_text()


def _workers_alive(*pids: int) -> bool:
    return any(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_workers_stop_when_the_parent_is_killed() -> None:
    """SIGKILL cannot be forwarded (a test harness's kill(), the OOM killer): the workers must not
    outlive the parent, holding the port."""
    with running_server_process("--workers", str(WORKERS)) as (address, process, _):
        workers = _workers(process.pid)
        process.kill()
        process.wait(timeout=10)
        assert wait_until(lambda: not any(os.path.exists(f"/proc/{worker}") for worker in workers), timeout=20)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", int(address.rsplit(":", 1)[1])))  # the port is free again


def test_a_taken_port_is_one_line_and_exit_code_1() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = int(holder.getsockname()[1])
        result = _serve("--port", str(port), "--workers", str(WORKERS))
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: address already in use"]
    # Nor can a second service join the workers of a running one.
    with running_server("--workers", str(WORKERS)) as address:
        port = int(address.rsplit(":", 1)[1])
        result = _serve("--port", str(port), "--workers", str(WORKERS))
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: address already in use"]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--backend", "acp", "--acp-command", "agent"), "an ACP chat's agent session lives in the worker process"),
        (("--metrics-port", "0"), "each worker process counts its own calls"),
    ],
    ids=["acp-backend", "metrics-port"],
)
def test_what_one_process_must_own_refuses_more_than_one_worker(args: tuple[str, ...], reason: str) -> None:
    result = _serve("--port", "0", "--workers", str(WORKERS), *args)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: --workers > 1 cannot serve") and reason in line


async def _indexes(call: grpc.aio.StreamStreamCall[pb.ConvertStreamRequest, pb.ConvertStreamResponse]) -> list[int]:
    """The indexes of the next reply of a ConvertStream."""
    reply = await call.read()
    assert isinstance(reply, pb.ConvertStreamResponse)
    return [result.index for result in reply.results]


def test_during_a_sigterm_drain_every_worker_reports_not_serving_and_in_flight_calls_finish(tmp_path: Path) -> None:
    """Health goes NOT_SERVING on every worker as soon as the drain starts (a load balancer stops
    sending new calls), while the calls in flight on each worker carry on to their end."""
    log = tmp_path / "server.log"
    conversion = pb.ConvertRequest(from_a2a=pb.FromA2ARequest(json='{"message": {"parts": [{"text": "hi"}]}}'))
    batch = pb.ConvertStreamRequest(conversions=[conversion])
    with running_server_process("--workers", str(WORKERS), "--grace-seconds", "30", log=log) as (address, process, _):
        port = int(address.rsplit(":", 1)[1])
        assert wait_until(lambda: f"all {WORKERS} workers serving" in log.read_text(), timeout=60)
        workers = _workers(process.pid)

        def connections() -> dict[int, int]:
            return {worker: _established_connections(worker, port) for worker in workers}

        def new_connection_owner(before: dict[int, int]) -> int:
            """The worker that accepted the one connection opened since ``before``. Polled: a read of
            /proc/net/tcp* is not a snapshot, and now and then misses a connection."""
            owners: list[int] = []

            def one_owner() -> bool:
                owners[:] = [worker for worker, count in connections().items() if count == before[worker] + 1]
                return len(owners) == 1

            assert wait_until(one_owner, timeout=10), (before, connections())
            return owners[0]

        async def drain() -> None:
            channels: list[grpc.aio.Channel] = []
            # A ConvertStream in flight on each worker: one batch answered, the stream left open.
            in_flight: dict[int, grpc.aio.StreamStreamCall[pb.ConvertStreamRequest, pb.ConvertStreamResponse]] = {}
            try:
                for _ in range(40):  # connections land on a worker at random: 2**-39 to miss one
                    if len(in_flight) == WORKERS:
                        break
                    before = connections()
                    channel = grpc.aio.insecure_channel(address, options=OWN_CONNECTION)
                    channels.append(channel)
                    call = pb_grpc.ConversionServiceStub(channel).ConvertStream(timeout=60)
                    await call.write(batch)
                    assert await _indexes(call) == [0]
                    owner = new_connection_owner(before)
                    if owner in in_flight:
                        await call.done_writing()
                        assert await call.code() == grpc.StatusCode.OK
                    else:
                        in_flight[owner] = call
                assert set(in_flight) == set(workers)
                process.send_signal(signal.SIGTERM)
                # A health check on a new connection, until each worker has answered one NOT_SERVING.
                not_serving: set[int] = set()
                for _ in range(40):
                    if not_serving == set(workers):
                        break
                    before = connections()
                    channel = grpc.aio.insecure_channel(address, options=OWN_CONNECTION)
                    channels.append(channel)
                    health = health_pb2_grpc.HealthStub(channel)
                    status = None
                    for _ in range(100):  # the worker may not have taken the signal yet
                        reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)  # type: ignore[attr-defined]  # the stubs list no methods
                        status = reply.status
                        if status == health_pb2.HealthCheckResponse.NOT_SERVING:
                            break
                        await asyncio.sleep(0.05)
                    assert status == health_pb2.HealthCheckResponse.NOT_SERVING
                    not_serving.add(new_connection_owner(before))
                assert not_serving == set(workers)
                assert process.poll() is None  # still draining: the calls in flight hold it
                for call in in_flight.values():
                    await call.write(batch)
                    assert await _indexes(call) == [1]
                    await call.done_writing()
                    assert await call.code() == grpc.StatusCode.OK
            finally:
                for channel in channels:
                    await channel.close()

        asyncio.run(drain())
        assert process.wait(timeout=30) == 0
    text = log.read_text()
    assert text.count("e2a-grpc stopped") == WORKERS, text
    assert "grace period over" not in text  # the calls ended on their own, none was cancelled

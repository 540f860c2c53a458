"""The A2A server while its PostgreSQL task store is stopped, restarted under load, and back (a real
throwaway cluster on loopback): every call gets a result or the one retryable error, on every path and
transport; the outage is logged once, without tracebacks; tasks are readable after it and none is left
SUBMITTED or WORKING once the sweeper ran."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import asyncpg.exceptions
import grpc
import httpx
import pytest
from a2a.client import A2AClientError
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, VERSION_HEADER, TransportProtocol
from google.protobuf import json_format
from sqlalchemy import exc as sqlalchemy_exc

from e2a_grpc.a2a_server.errors import (
    TASK_STORE_UNAVAILABLE_CODE,
    TASK_STORE_UNAVAILABLE_REASON,
    TaskStoreUnavailableError,
)
from e2a_grpc.a2a_server.leases import RUNNING_STATES
from e2a_grpc.a2a_server.server import A2AServer
from e2a_grpc.a2a_server.store_outage import StoreHealth, is_outage
from e2a_grpc.settings import A2A_REST_PATH
from tests.a2a_server.conftest import a2a_client, a2a_server, send_request, stream_events, task_of, user_message
from tests.support.fakes import ControlledBackend
from tests.support.log_records import LogRecords, log_records
from tests.support.postgres import Cluster, throwaway_cluster

MESSAGE = "task store unavailable; retry"
DATA = {"reason": "task_store_unavailable", "retryable": True}
OUTAGE_LOGGER = "e2a_grpc.a2a_server.store_outage"
#: Callers and blocking sends each, in the restart under load (the issue measured 8 callers).
CALLERS, SENDS_PER_CALLER = 8, 12

pytestmark = pytest.mark.postgres  # a throwaway PostgreSQL cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as started:
        yield started


@contextlib.contextmanager
def database_stopped(cluster: Cluster) -> Iterator[None]:
    cluster.stop()
    try:
        yield
    finally:
        cluster.start()


def assert_store_unavailable(error: BaseException, transport: str) -> None:
    """``error`` is what the SDK's client makes of the server's TaskStoreUnavailableError on ``transport``."""
    if transport == TransportProtocol.JSONRPC:
        # The SDK's JSON-RPC client knows A2A's codes only: -32000 comes as its generic error.
        assert isinstance(error, A2AClientError), repr(error)
        assert f"JSON-RPC Error {TASK_STORE_UNAVAILABLE_CODE}: {MESSAGE}" in str(error)
        return
    # HTTP+JSON and gRPC name the error by its ErrorInfo reason, which the SDK's client maps back.
    assert isinstance(error, TaskStoreUnavailableError), repr(error)
    assert error.message == MESSAGE
    if transport == TransportProtocol.GRPC:
        assert isinstance(error.__cause__, grpc.aio.AioRpcError)
        assert error.__cause__.code() == grpc.StatusCode.UNAVAILABLE


@contextlib.contextmanager
def outage_log() -> Iterator[LogRecords]:
    """Every record while the block runs, and those of the tasks it leaked."""
    with log_records() as records:
        yield records
        gc.collect()  # "Task was destroyed but it is pending!" is logged when a leaked task is collected


def outage_problems(records: LogRecords) -> list[str]:
    """What the log must not have for an expected outage: tracebacks, the SDK's unhandled exceptions, leaked
    tasks, raw driver text other than in the outage's one WARNING, a line per call."""
    problems = []
    for record in records.records:
        message = record.getMessage()
        if record.exc_info is not None and record.levelno >= logging.INFO:
            problems.append(f"traceback: {record.name}: {message[:200]}")
        if any(text in message for text in ("Unhandled exception", "Task was destroyed", "never retrieved")):
            problems.append(f"{record.name}: {message[:200]}")
        if record.levelno >= logging.INFO and record.name != OUTAGE_LOGGER and "sqlalchemy" in message.lower():
            problems.append(f"driver text: {record.name}: {message[:200]}")
        if record.levelno >= logging.INFO and MESSAGE in message:  # the SDK's line per request answered
            problems.append(f"per call: {record.name}: {message[:200]}")
    return problems


def outage_lines(records: LogRecords) -> list[tuple[int, str]]:
    """The lines about the database's availability at INFO and above (a call's failure is DEBUG)."""
    return [
        (record.levelno, record.getMessage())
        for record in records.records
        if record.name == OUTAGE_LOGGER and record.levelno >= logging.INFO
    ]


async def call_outcome(call: Awaitable[Any]) -> BaseException | None:
    try:
        await call
    except Exception as error:
        return error
    return None


async def first_event(events: AsyncIterator[Any]) -> None:
    async for _ in events:
        return


@pytest.mark.asyncio
async def test_every_a2a_path_answers_the_retryable_error_while_the_database_is_stopped(
    cluster: Cluster, transport: str
) -> None:
    with outage_log() as records:
        async with (
            a2a_server(a2a_postgres_url=cluster.url, a2a_push_notifications=True) as server,
            a2a_client(server, transport, streaming=False) as client,
            a2a_client(server, transport) as streaming,
        ):
            before = task_of(await stream_events(client, send_request(user_message("before the outage"))))
            hook = TaskPushNotificationConfig(task_id=before.id, id="hook", url="http://8.8.8.8/hook")
            await client.create_task_push_notification_config(hook)
            calls: dict[str, Callable[[], Awaitable[Any]]] = {
                "send": lambda: stream_events(client, send_request(user_message("during"))),
                "stream": lambda: first_event(streaming.send_message(send_request(user_message("during")))),
                "get": lambda: client.get_task(GetTaskRequest(id=before.id)),
                "list": lambda: client.list_tasks(ListTasksRequest()),
                "cancel": lambda: client.cancel_task(CancelTaskRequest(id=before.id)),
                "resubscribe": lambda: first_event(streaming.subscribe(SubscribeToTaskRequest(id=before.id))),
                "create push config": lambda: client.create_task_push_notification_config(hook),
                "get push config": lambda: client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=before.id, id="hook")
                ),
                "list push configs": lambda: client.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id=before.id)
                ),
                "delete push config": lambda: client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=before.id, id="hook")
                ),
            }
            with database_stopped(cluster):
                for name, call in calls.items():
                    error = await call_outcome(call())
                    assert error is not None, f"{name} succeeded with the database stopped"
                    assert_store_unavailable(error, transport)
            # Back: the task created before is read whole, and new sends work.
            read = await client.get_task(GetTaskRequest(id=before.id))
            after = task_of(await stream_events(client, send_request(user_message("after the outage"))))
    assert read.status.state == after.status.state == TaskState.TASK_STATE_COMPLETED
    lines = outage_lines(records)
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO], lines
    assert "database is unreachable (" in lines[0][1] and "calls failed meanwhile" in lines[1][1]
    assert outage_problems(records) == []


@pytest.mark.asyncio
async def test_the_error_on_the_wire_is_json_rpc_minus_32000_and_http_503_with_its_reason(cluster: Cluster) -> None:
    async with (
        a2a_server(a2a_postgres_url=cluster.url) as server,
        httpx.AsyncClient(timeout=30, headers={VERSION_HEADER: PROTOCOL_VERSION_CURRENT}) as http,
    ):
        base = f"http://127.0.0.1:{server.port}"
        with database_stopped(cluster):
            rpc = await http.post(
                f"{base}/", json={"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "some-task"}}
            )
            rest = await http.get(f"{base}{A2A_REST_PATH}/tasks/some-task")
            legacy = await http.post(  # A2A 0.3: an empty A2A-Version is read as none
                f"{base}/",
                json={"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": "some-task"}},
                headers={VERSION_HEADER: ""},
            )
    assert rpc.status_code == 200  # JSON-RPC errors travel in a 200 response, as the SDK's do
    error = rpc.json()["error"]
    assert (error["code"], error["message"]) == (TASK_STORE_UNAVAILABLE_CODE, MESSAGE)
    assert [(info["reason"], info["metadata"]) for info in error["data"]] == [(TASK_STORE_UNAVAILABLE_REASON, DATA)]
    # a2a-sdk 1.3 answers an A2A 0.3 client an error 0.3 does not define as -32603 (its only generic
    # code); the message and data are the same.
    legacy_error = legacy.json()["error"]
    assert (legacy_error["code"], legacy_error["message"], legacy_error["data"]) == (-32603, MESSAGE, DATA)
    assert rest.status_code == 503
    body = rest.json()["error"]
    assert (body["code"], body["status"], body["message"]) == (503, "UNAVAILABLE", MESSAGE)
    assert [(info["reason"], info["metadata"]) for info in body["details"]] == [(TASK_STORE_UNAVAILABLE_REASON, DATA)]


async def _open_tasks(server: A2AServer) -> list[str]:
    assert server.storage is not None
    found = []
    for state in RUNNING_STATES:
        page = await server.storage.store.list(ListTasksRequest(status=state, page_size=100), ServerCallContext())
        found += [task.id for task in page.tasks]
    return found


@pytest.mark.asyncio
async def test_a_restart_under_load_answers_every_call_and_leaves_no_task_working(cluster: Cluster) -> None:
    outcomes: Counter[str] = Counter()
    task_ids: list[str] = []
    answered = asyncio.Event()

    async def caller(http: httpx.AsyncClient, url: str) -> None:
        for _ in range(SENDS_PER_CALLER):
            body = {
                "jsonrpc": "2.0",
                "id": str(uuid.uuid4()),
                "method": "SendMessage",
                "params": {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
            }
            answer = (await http.post(url, json=body)).json()
            if "error" in answer:
                error = answer["error"]
                assert (error["code"], error["message"]) == (TASK_STORE_UNAVAILABLE_CODE, MESSAGE), error
                assert error["data"][0]["metadata"] == DATA
                outcomes["retryable error"] += 1
            else:
                task = answer["result"]["task"]
                task_ids.append(task["id"])
                outcomes[task["status"]["state"]] += 1
            if sum(outcomes.values()) >= CALLERS:  # every caller is under way: restart now
                answered.set()

    with outage_log() as records:
        async with (
            a2a_server(a2a_postgres_url=cluster.url) as server,
            httpx.AsyncClient(timeout=60, headers={VERSION_HEADER: PROTOCOL_VERSION_CURRENT}) as http,
        ):
            url = f"http://127.0.0.1:{server.port}/"
            callers = asyncio.gather(*(caller(http, url) for _ in range(CALLERS)))
            await answered.wait()
            await asyncio.to_thread(cluster.restart)
            await callers
            assert server.orphan_sweeper is not None
            await server.orphan_sweeper.sweep()
            left_open = await _open_tasks(server)
            async with a2a_client(server, TransportProtocol.JSONRPC, streaming=False) as client:
                for task_id in task_ids:  # every task a caller was given is readable after the restart
                    assert (await client.get_task(GetTaskRequest(id=task_id))).id == task_id
    assert outcomes.total() == CALLERS * SENDS_PER_CALLER
    assert set(outcomes) <= {"retryable error", "TASK_STATE_COMPLETED"}, outcomes
    assert outcomes["TASK_STATE_COMPLETED"] > 0
    assert left_open == []
    levels = [level for level, _ in outage_lines(records)]
    assert levels.count(logging.WARNING) == levels.count(logging.INFO) >= 1  # each outage logged once, and its end
    assert outage_problems(records) == []


@pytest.mark.asyncio
async def test_the_first_calls_after_a_restart_work_on_the_pooled_connections_it_cut(cluster: Cluster) -> None:
    """The pool pings a connection before a call uses it (``pool_pre_ping``): none fails once after."""
    async with (
        a2a_server(a2a_postgres_url=cluster.url) as server,
        a2a_client(server, TransportProtocol.JSONRPC, streaming=False) as client,
    ):
        # Tasks read at once: as many pooled connections as calls at a time.
        tasks = [task_of(await stream_events(client, send_request(user_message(f"before {n}")))) for n in range(3)]
        reads = [client.get_task(GetTaskRequest(id=task.id)) for task in tasks]
        await asyncio.gather(*reads)
        await asyncio.to_thread(cluster.restart)
        again = await asyncio.gather(*(client.get_task(GetTaskRequest(id=task.id)) for task in tasks))
    assert [task.id for task in again] == [task.id for task in tasks]


class _AdaptedDriverError(Exception):
    """What SQLAlchemy's asyncpg adapter puts in ``DBAPIError.orig``: an error with the SQLSTATE."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


def _wrapped(orig: BaseException) -> sqlalchemy_exc.DBAPIError:
    return sqlalchemy_exc.DBAPIError("SELECT 1", {}, orig)


def _caused_by(cause: BaseException) -> BaseException:
    adapted = Exception("adapted")
    adapted.__cause__ = cause
    return adapted


@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (ConnectionRefusedError(111, "Connection refused"), True),
        (sqlalchemy_exc.OperationalError("SELECT 1", {}, Exception("database is locked")), True),
        (sqlalchemy_exc.InterfaceError("SELECT 1", {}, Exception("cannot switch to state 15")), True),
        (sqlalchemy_exc.TimeoutError("QueuePool limit reached"), True),
        (_wrapped(_AdaptedDriverError("57P01")), True),  # terminating connection due to administrator command
        (_wrapped(_AdaptedDriverError("57P03")), True),  # the database system is starting up
        (_wrapped(_AdaptedDriverError("08006")), True),  # connection failure
        (_wrapped(_caused_by(asyncpg.exceptions.ConnectionDoesNotExistError("closed mid-operation"))), True),
        (_wrapped(_AdaptedDriverError("23505")), False),  # a unique violation: the data, not the database
        (sqlalchemy_exc.IntegrityError("INSERT", {}, Exception("duplicate key")), False),
        (sqlalchemy_exc.ProgrammingError("SELEC", {}, _AdaptedDriverError("42601")), False),
        (ValueError("a bug"), False),
    ],
)
def test_which_driver_errors_are_an_outage(error: BaseException, outage: bool) -> None:
    assert is_outage(error) is outage


REFUSED = "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432)"


async def _refused() -> None:
    raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")


async def _works() -> int:
    return 1


@pytest.mark.asyncio
async def test_an_outage_is_logged_once_when_the_probe_finds_it_and_once_when_it_ends() -> None:
    health = StoreHealth()
    changes: list[bool] = []
    health.on_change(changes.append)
    with log_records() as records:
        for _ in range(2):  # before the probe has answered: the database still counts as available
            with pytest.raises(TaskStoreUnavailableError) as raised:
                await health.guard(_refused())
            assert raised.value.__cause__ is None and raised.value.data == DATA  # no driver text for the client
        assert health.available and health.check_wanted.is_set()  # the probe is asked to check at once
        health.check_wanted.clear()
        health.probed(REFUSED)
        assert not health.available and changes == [False]
        for _ in range(3):
            with pytest.raises(TaskStoreUnavailableError):
                await health.guard(_refused())
        assert not health.check_wanted.is_set()  # in an outage the probe keeps its interval
        health.probed(REFUSED)  # still down: nothing new to say
        with pytest.raises(ValueError, match="a bug"):  # not an outage: as it was
            await health.guard(_raise(ValueError("a bug")))
        assert [await health.guard(_works()) for _ in range(3)] == [1, 1, 1]
        health.probed(None)  # answers, as the calls said
    lines = outage_lines(records)
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO]
    assert REFUSED in lines[0][1]  # the driver's text, once
    assert "5 calls failed meanwhile" in lines[1][1]
    assert health.available and changes == [False, True]
    assert health.recovered_at is not None


@pytest.mark.asyncio
async def test_the_probe_ends_an_outage_without_any_call() -> None:
    health = StoreHealth()
    changes: list[bool] = []
    health.on_change(changes.append)
    with log_records() as records:
        health.probed("TimeoutError: no answer within 2 s")
        health.probed(None)
    assert [level for level, _ in outage_lines(records)] == [logging.WARNING, logging.INFO]
    assert "0 calls failed meanwhile" in outage_lines(records)[1][1]
    assert changes == [False, True]


@pytest.mark.asyncio
async def test_calls_that_lost_a_cut_connection_are_no_outage_when_the_probe_answers() -> None:
    """A restart cut the pool's connections: each fails once, the database answers a new one."""
    health = StoreHealth()
    changes: list[bool] = []
    health.on_change(changes.append)
    cut = ConnectionResetError(104, "Connection reset by peer")
    with log_records() as records:
        for _ in range(4):
            assert health.outage(cut)
        health.probed(None)
        assert [await health.guard(_works()) for _ in range(2)] == [1, 1]
        health.probed("OSError: the next outage")  # its count starts afresh
        health.probed(None)
    lines = outage_lines(records)
    assert [level for level, _ in lines] == [logging.WARNING, logging.INFO], lines
    assert "0 calls failed meanwhile" in lines[1][1]
    assert changes == [False, True]


async def _raise(error: Exception) -> None:
    raise error


@pytest.mark.asyncio
async def test_a_stream_whose_turn_outlives_the_database_ends_with_the_error_and_its_task_is_failed_after(
    cluster: Cluster, transport: str
) -> None:
    backend = ControlledBackend(before=("first ",), after=("last",))
    with outage_log() as records:
        async with a2a_server(backend, a2a_postgres_url=cluster.url) as server, a2a_client(server, transport) as client:
            stream = client.send_message(send_request(user_message("outlive")))
            task_id = ""
            async for event in stream:  # the task, working, and the first chunk
                task_id = task_id or event.task.id or event.status_update.task_id or event.artifact_update.task_id
                if event.HasField("artifact_update"):
                    break
            await backend.waiting_turns(1)
            with database_stopped(cluster):
                backend.release.set()  # the turn's last chunk and its end meet a stopped database
                error = await call_outcome(anext(stream))
                assert error is not None, "the stream went on with the database stopped"
                assert_store_unavailable(error, transport)
            assert server.orphan_sweeper is not None
            await server.orphan_sweeper.sweep()
            async with a2a_client(server, transport, streaming=False) as reader:
                task = await reader.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    # Written by the SDK when its write worked, else by the sweeper, with the reason.
    assert _error_code(task) in (None, "turn_lost")
    assert outage_problems(records) == []


def _error_code(task: Task) -> object:
    return json_format.MessageToDict(task.metadata).get("e2a_error", {}).get("code")


@pytest.mark.asyncio
async def test_a_call_under_way_when_the_outage_began_does_not_end_it() -> None:
    health, entered, release = StoreHealth(), asyncio.Event(), asyncio.Event()

    async def slow() -> int:
        entered.set()
        await release.wait()
        return 1

    with log_records() as records:
        under_way = asyncio.ensure_future(health.guard(slow()))
        await entered.wait()  # the call is under way
        health.probed("ConnectionResetError: [Errno 104] Connection reset by peer")
        release.set()
        assert await under_way == 1  # on a connection that still worked
        assert not health.available
        assert await health.guard(slow()) == 1  # started after: the database answers again
    assert [level for level, _ in outage_lines(records)] == [logging.WARNING, logging.INFO]
    assert health.available

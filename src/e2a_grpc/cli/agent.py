"""``e2a-grpc agent``: run an agent worker on the bus (docs/agent-bus.md) until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from e2a_grpc.cli.exits import EXIT_BAD_INPUT, EXIT_CODES_HELP, EXIT_FAILED, EXIT_NO_SERVER, EXIT_OK
from e2a_grpc.cli.options import add_setting_options, settings_from
from e2a_grpc.cli.serve import server_logging
from e2a_grpc.errors import error_text
from e2a_grpc.settings import AgentWorkerSettings, BackendName

#: The settings of ``serve`` a worker uses: its backend, turn limits, frame publishing, registry
#: entry and card (the same fields, so one home for them), and the bus's. The registry is the bus's
#: (``registry_nats`` is serve's own).
_WORKER_SETTING_PREFIXES = ("backend", "echo_", "acp_", "chat_", "nats_", "registry_", "bus_", "cloudevents_")
_WORKER_SETTINGS = (
    "host",
    "health_port",
    "a2a_url",
    "a2a_timeout_seconds",
    "a2a_transports",
    "sessions_bucket",
    "agent_id",
    "grace_seconds",
    "log_frames",
    "log_format",
    "a2a_agent_name",
    "a2a_agent_description",
    "a2a_skills",
    "a2a_input_modes",
    "a2a_output_modes",
)


def worker_options() -> list[str]:
    """The settings ``e2a-grpc agent`` takes as options, in the settings' order."""
    return [
        name
        for name in AgentWorkerSettings.model_fields
        if (name.startswith(_WORKER_SETTING_PREFIXES) or name in _WORKER_SETTINGS) and name != "registry_nats"
    ]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "agent",
        help="run an agent worker that takes Chat requests of its agent id from NATS JetStream",
        description="Run an agent worker on the agent bus: it takes the requests of --agent-id from a JetStream "
        "work queue shared by every worker of that id, runs each as a Chat turn with --backend (the same backend "
        "options and limits as serve), publishes the frames on the broker's frame subjects, and registers in the "
        "agent registry. SIGTERM/SIGINT drains: no new requests, running turns finish within --grace-seconds. "
        "Needs the 'nats' extra (nats-py). Every option can also be set with the environment variable shown.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging")
    parser.add_argument(
        "--nats", dest="bus_nats", default=argparse.SUPPRESS, help="the same as --bus-nats: URL[,URL...]"
    )
    add_setting_options(parser, AgentWorkerSettings, *worker_options())
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = settings_from(AgentWorkerSettings, args)
    server_logging(log_frames=config.log_frames)
    try:
        import nats.errors

        from e2a_grpc.backends import make_backend
        from e2a_grpc.broker.agent_worker import AgentWorker
        from e2a_grpc.broker.jetstream_setup import JetStreamSetupError
        from e2a_grpc.grpc.worker_health import WorkerHealth
    except ImportError as exc:
        print(f"error: {exc} (pip install 'e2a-grpc[nats]')", file=sys.stderr)
        return EXIT_FAILED
    if config.backend is BackendName.A2A:
        try:  # a2a-sdk is optional: say so now, not with a traceback
            import e2a_grpc.backends.a2a  # noqa: F401
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED

    async def work() -> None:
        health = None if config.health_port is None else await WorkerHealth.listen(config)
        worker = AgentWorker(config, make_backend(config))
        try:
            await worker.start()
        except BaseException:
            if health is not None:
                await health.stop()
            raise
        if health is not None:
            await health.follow(worker)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        if health is not None:
            await health.drain()
        await worker.stop(config.grace_seconds)
        if health is not None:
            await health.stop()

    try:
        asyncio.run(work())
    except (nats.errors.NoServersError, OSError) as exc:
        print(f"error: cannot reach NATS at {config.bus_nats}: {error_text(exc)}", file=sys.stderr)
        return EXIT_NO_SERVER
    except (nats.errors.Error, TimeoutError) as exc:
        # Only the start raises these (the drain logs its own): the server answers, JetStream does not.
        print(f"error: the agent worker cannot start on NATS at {config.bus_nats}: {error_text(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except JetStreamSetupError as exc:
        # The broker refused a stream or bucket as configured (--nats-replicas beyond its servers).
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK

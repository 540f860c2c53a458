"""``e2a-grpc serve``: run the gRPC service (and the A2A server with ``--a2a-port``)."""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import sys
from typing import Any

from e2a_grpc.chat.frames import frame_log
from e2a_grpc.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from e2a_grpc.cli.options import add_setting_options, settings_from
from e2a_grpc.grpc.workers import run_on_event_loop, run_server
from e2a_grpc.logs import configure_logging
from e2a_grpc.settings import BackendName, ServerSettings, env_var

#: Server settings with no command-line option: a command line shows in ``ps`` and shell history.
_ENV_ONLY_SETTINGS = frozenset({"token"})


def add_parser(commands: Any) -> None:
    token = ServerSettings.model_fields["token"]
    parser = commands.add_parser(
        "serve",
        help="run the gRPC service",
        description="Run the E2A gRPC service (ConversionService, CodecService, AgentService.Chat, health, reflection) "
        "until SIGTERM/SIGINT. "
        "Every option can also be set with the environment variable shown.",
        epilog=f"{env_var('token')}: {token.description} (environment only: a command line shows in ps).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging")
    options = [name for name in ServerSettings.model_fields if name not in _ENV_ONLY_SETTINGS]
    add_setting_options(parser, ServerSettings, *options)
    parser.set_defaults(run=run)


#: Libraries whose DEBUG records are their own internals (grpc's event loop bookkeeping, one line per
#: call; asyncio's selector): -v is for e2a-grpc's records. gRPC's core has its own switches for that
#: (GRPC_VERBOSITY, GRPC_TRACE); asyncio's debug mode (PYTHONASYNCIODEBUG) warns at WARNING.
# grpc and asyncio log their internals; a2a-sdk's card resolver logs every card it fetches, whole.
_QUIET_LIBRARY_LOGGERS = ("grpc", "asyncio", "a2a.client.card_resolver")


def server_logging(*, log_frames: bool) -> None:
    for name in _QUIET_LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    if log_frames:
        # Spec 12.7: each frame's log record is one line of pure JSON, whatever the other logs look like.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        frame_log.addHandler(handler)
        frame_log.propagate = False


def _worker_logging(*, verbose: bool, log_format: str, log_frames: bool) -> None:
    """The logging of ``serve`` in a worker process (a fresh interpreter): as ``main`` sets it up."""
    configure_logging(verbose=verbose, log_format=log_format)
    server_logging(log_frames=log_frames)


def run(args: argparse.Namespace) -> int:
    config = settings_from(ServerSettings, args)
    # a2a-sdk opens an OpenTelemetry span around most of its own calls (hundreds per A2A turn) unless
    # told otherwise before it is imported: only with --tracing, unless the environment says. Set
    # before the workers start, so they inherit it.
    os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "true" if config.tracing else "false")
    server_logging(log_frames=config.log_frames)
    if config.backend is BackendName.A2A:
        try:  # a2a-sdk is optional: say so now, not with a traceback from inside the server
            import e2a_grpc.backends.a2a  # noqa: F401
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
    for option, value, module in (
        ("--publish-nats", config.publish_nats, "e2a_grpc.broker.frame_publisher"),
        ("--registry-nats", config.registry_nats, "e2a_grpc.broker.agent_registry"),
    ):
        try:  # nats-py is optional (the nats extra): say so now, not with a traceback
            if value:
                importlib.import_module(module)
        except ImportError as exc:
            print(f"error: {option}: {exc} (pip install 'e2a-grpc[nats]')", file=sys.stderr)
            return EXIT_FAILED
    if config.tracing:
        try:  # the tracing extra and its exporter: say what is missing now, not with a traceback
            from e2a_grpc.grpc import tracing

            tracing.check_environment()
        except (ImportError, ValueError) as exc:
            print(f"error: --tracing: {exc} (pip install 'e2a-grpc[tracing]' and an exporter)", file=sys.stderr)
            return EXIT_BAD_INPUT
    if config.a2a_port is not None:
        try:  # the a2a-server extra: say so now, not with a traceback from inside the server
            from e2a_grpc.a2a_server.server import serve_with_a2a
        except ImportError as exc:
            print(f"error: --a2a-port: {exc} (pip install 'e2a-grpc[a2a-server]')", file=sys.stderr)
            return EXIT_FAILED
        run_on_event_loop(serve_with_a2a(config), config)
        return EXIT_OK
    worker_logging = functools.partial(
        _worker_logging, verbose=args.verbose, log_format=config.log_format, log_frames=config.log_frames
    )
    return run_server(config, setup_worker=worker_logging)

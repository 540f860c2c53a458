"""The ``e2a-grpc`` command: run the service, or convert E2A / ACP / A2A JSON from a file or stdin.

One module per command (``serve``, ``convert``, ``chat``, ``subscribe``, ``agents``); this one builds the parser
and turns what a command raises into a message and an exit code (``exits``)."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Sequence

import grpc
from pydantic import ValidationError

from e2a_grpc.chat.invariants import StreamInvariantError
from e2a_grpc.cli import agent, agents, chat, convert, serve, subscribe
from e2a_grpc.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NO_SERVER,
    EXIT_TIMEOUT,
)
from e2a_grpc.cli.options import settings_error
from e2a_grpc.cli.service import ServerUnreachable
from e2a_grpc.client import ServiceError
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.logs import configure_logging

DESCRIPTION = """\
E2A (Everything-to-Agent) over gRPC.

  e2a-grpc serve                          start the service on 127.0.0.1:50051
  e2a-grpc chat "Hello"                   stream an answer from the running service
  e2a-grpc convert to-acp envelope.json   E2A -> ACP JSON-RPC, printed to stdout
  echo '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}' \\
    | e2a-grpc convert from-acp           ACP JSON-RPC -> E2A
  e2a-grpc agents --nats URL              the live agents of the agent registry

convert works offline by default; add --server HOST:PORT to ask a running service instead.
--server takes HOST, HOST:PORT, [IPv6]:PORT or http(s)://HOST:PORT (port 50051 by default; https:// uses TLS).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="e2a-grpc",
        description=DESCRIPTION,
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"%(prog)s {importlib.metadata.version('e2a-grpc')}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(commands)
    convert.add_parser(commands)
    chat.add_parser(commands)
    subscribe.add_parser(commands)
    agent.add_parser(commands)
    agents.add_parser(commands)
    return parser


#: Errors reading the user's input (a file named on the command line, a CA file): bad input, not a failure.
_BAD_INPUT_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, UnicodeDecodeError)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(verbose=args.verbose, log_format=getattr(args, "log_format", None))
    try:
        return int(args.run(args))
    except ValidationError as exc:
        for error in exc.errors():
            print(f"error: {settings_error(error, args)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except E2AFieldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ServerUnreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(f"hint: is `e2a-grpc serve` running on {exc.address.target}?", file=sys.stderr)
        return EXIT_NO_SERVER
    except ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for field, description in exc.violations:
            print(f"  {field}: {description}", file=sys.stderr)
        if exc.code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return EXIT_TIMEOUT
        return EXIT_BAD_INPUT if exc.code == grpc.StatusCode.INVALID_ARGUMENT else EXIT_FAILED
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT if isinstance(exc, _BAD_INPUT_ERRORS) else EXIT_FAILED
    except StreamInvariantError as exc:
        print(f"error: the stream broke the E2A invariants: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED

"""``e2a-grpc subscribe``: Chat streams read back from NATS JetStream, as ``serve --publish-nats``
publishes them."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from e2a_grpc.cli.exits import EXIT_BAD_INPUT, EXIT_CODES_HELP, EXIT_FAILED, EXIT_NO_SERVER, EXIT_OK, EXIT_TIMEOUT
from e2a_grpc.cli.options import add_setting_options, settings_from
from e2a_grpc.client.chat_text import ChatTextPrinter
from e2a_grpc.errors import error_text
from e2a_grpc.settings import SubscribeSettings


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "subscribe",
        help="read Chat streams from NATS JetStream (as serve --publish-nats publishes them)",
        description="Rebuild Chat streams from the broker: every frame of each stream in sequence order, each "
        "checked against the E2A stream invariants (spec section 12), redeliveries dropped, from the stream's "
        "first frame even when it ended before this command started. Ends after --streams streams ended with "
        "their final frame. Needs the 'nats' extra (nats-py).",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--request-id", help="the stream of this request only")
    parser.add_argument("--session-id", help="the streams of this session only")
    parser.add_argument(
        "--streams", type=int, default=1, help="end after this many streams ended (0: never) (default: %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print each frame as a line of E2A wire JSON")
    add_setting_options(parser, SubscribeSettings, *SubscribeSettings.model_fields)
    # The short name of --nats-idle-timeout-seconds, as chat's --timeout.
    parser.add_argument(
        "--timeout",
        dest="nats_idle_timeout_seconds",
        default=argparse.SUPPRESS,
        help=f"the same as --nats-idle-timeout-seconds (exit {EXIT_TIMEOUT} when it passes)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(SubscribeSettings, args)
    if args.streams < 0:
        print("error: --streams: must be 0 or more", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        import nats.errors

        from e2a_grpc.broker.stream_reader import read_streams
    except ImportError as exc:
        print(f"error: {exc} (pip install 'e2a-grpc[nats]')", file=sys.stderr)
        return EXIT_FAILED
    printer = ChatTextPrinter(sys.stdout, styled=sys.stdout.isatty())

    async def follow() -> None:
        frames = read_streams(
            settings.nats_url,
            stream=settings.nats_stream,
            subject_prefix=settings.nats_subject_prefix,
            session_id=args.session_id,
            request_id=args.request_id,
            streams=args.streams or None,
            idle_timeout=settings.nats_idle_timeout_seconds,
        )
        async for frame in frames:
            if args.json:
                sys.stdout.write(frame.to_json() + "\n")
                sys.stdout.flush()
            else:
                printer.frame(frame)

    try:
        asyncio.run(follow())
    except TimeoutError as exc:
        printer.finish()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_TIMEOUT
    except (nats.errors.NoServersError, OSError) as exc:
        printer.finish()
        print(f"error: cannot reach NATS at {settings.nats_url}: {error_text(exc)}", file=sys.stderr)
        return EXIT_NO_SERVER
    printer.finish()
    return EXIT_OK

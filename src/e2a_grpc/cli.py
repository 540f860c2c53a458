"""The ``e2a-grpc`` command: run the service, or convert E2A / ACP / A2A JSON from a file or stdin."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import grpc

from e2a_grpc import conversion, jsontext
from e2a_grpc.chat.frames import frame_log
from e2a_grpc.chat.invariants import StreamInvariantError
from e2a_grpc.client import ConversionClient, ServiceError, chat
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.grpc.server import serve
from e2a_grpc.model import E2AEnvelope, E2AResponse, IdentityOrigin, ResponseKind, ResponseStatus
from e2a_grpc.settings import (
    DEFAULT_A2A_TIMEOUT_SECONDS,
    DEFAULT_GRACE_SECONDS,
    DEFAULT_HOST,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_PORT,
    BackendName,
    PermissionPolicy,
    ServerConfig,
)

EXIT_OK = 0
EXIT_FAILED = 1  # the server failed or could not be reached
EXIT_BAD_INPUT = 2  # also argparse's exit code for usage errors
EXIT_NOT_APPLICABLE = 3

DESCRIPTION = """\
E2A (Everything-to-Agent) over gRPC.

  e2a-grpc serve                          start the service on 127.0.0.1:50051
  e2a-grpc chat "Hello"                   stream an answer from the running service
  e2a-grpc convert to-acp envelope.json   E2A -> ACP JSON-RPC, printed to stdout
  echo '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}' \\
    | e2a-grpc convert from-acp           ACP JSON-RPC -> E2A

convert works offline by default; add --server HOST:PORT to ask a running service instead.
Exit codes: 0 ok, 1 server error, 2 bad input, 3 the conversion does not apply to this record.
"""


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def _add_serve(commands: Any) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the gRPC service",
        description="Run the E2A gRPC service (ConversionService, health, reflection) until SIGTERM/SIGINT. "
        "Every option can also be set with the environment variable shown.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging")
    parser.add_argument("--host", default=_env("E2A_GRPC_HOST", DEFAULT_HOST), help="address to bind [E2A_GRPC_HOST]")
    parser.add_argument(
        "--port", type=int, default=int(_env("E2A_GRPC_PORT", str(DEFAULT_PORT)) or DEFAULT_PORT),
        help="port; 0 picks a free one [E2A_GRPC_PORT]",
    )  # fmt: skip
    parser.add_argument(
        "--max-message-bytes", type=int,
        default=int(_env("E2A_GRPC_MAX_MESSAGE_BYTES", str(DEFAULT_MAX_MESSAGE_BYTES)) or DEFAULT_MAX_MESSAGE_BYTES),
        help="largest request or reply; bigger ones get RESOURCE_EXHAUSTED [E2A_GRPC_MAX_MESSAGE_BYTES]",
    )  # fmt: skip
    parser.add_argument(
        "--grace-seconds", type=float,
        default=float(_env("E2A_GRPC_GRACE_SECONDS", str(DEFAULT_GRACE_SECONDS)) or DEFAULT_GRACE_SECONDS),
        help="on SIGTERM/SIGINT, how long in-flight calls may finish [E2A_GRPC_GRACE_SECONDS]",
    )  # fmt: skip
    parser.add_argument(
        "--tls-cert", type=Path, default=_env("E2A_GRPC_TLS_CERT"), help="PEM certificate [E2A_GRPC_TLS_CERT]"
    )
    parser.add_argument(
        "--tls-key", type=Path, default=_env("E2A_GRPC_TLS_KEY"), help="PEM private key [E2A_GRPC_TLS_KEY]"
    )
    parser.add_argument(
        "--token-file", type=Path, default=_env("E2A_GRPC_TOKEN_FILE"),
        help="require 'authorization: Bearer <token>' with the token in this file [E2A_GRPC_TOKEN_FILE]; "
        "or set E2A_GRPC_TOKEN. Health checks stay open.",
    )  # fmt: skip
    parser.add_argument(
        "--backend", type=BackendName, choices=list(BackendName), default=_env("E2A_GRPC_BACKEND", "echo"),
        help="agent backend of the Chat RPC; echo is a deterministic demo/test backend [E2A_GRPC_BACKEND]",
    )  # fmt: skip
    parser.add_argument(
        "--echo-delay-seconds", type=float, default=float(_env("E2A_GRPC_ECHO_DELAY_SECONDS", "0") or 0),
        help="echo backend: pause before each word (demos and tests) [E2A_GRPC_ECHO_DELAY_SECONDS]",
    )  # fmt: skip
    parser.add_argument(
        "--log-frames", action="store_true", default=_env("E2A_GRPC_LOG_FRAMES", "") not in ("", "0"),
        help="log one JSON line per Chat frame (spec 12.7; no bodies, no secrets) [E2A_GRPC_LOG_FRAMES]",
    )  # fmt: skip
    parser.add_argument(
        "--acp-command", type=shlex.split, default=_env("E2A_GRPC_ACP_COMMAND", ""),
        metavar="COMMAND",
        help="acp backend: the ACP agent to run, as a shell-style command line, e.g. 'python agent.py' "
        "(needed with --backend acp) [E2A_GRPC_ACP_COMMAND]",
    )  # fmt: skip
    parser.add_argument(
        "--acp-cwd", type=Path, default=_env("E2A_GRPC_ACP_CWD"),
        help="acp backend: session cwd when a request gives no params.workspace_dir or params.cwd; "
        "default: the server's cwd [E2A_GRPC_ACP_CWD]",
    )  # fmt: skip
    parser.add_argument(
        "--acp-permission-policy", type=PermissionPolicy, choices=list(PermissionPolicy),
        default=_env("E2A_GRPC_ACP_PERMISSION_POLICY", "deny"),
        help="acp backend: how the agent's session/request_permission is answered [E2A_GRPC_ACP_PERMISSION_POLICY]",
    )  # fmt: skip
    parser.add_argument(
        "--acp-max-sessions", type=int, default=int(_env("E2A_GRPC_ACP_MAX_SESSIONS", "16") or 16),
        help="acp backend: agent processes kept for requests with a session_id; the least recently used "
        "idle one is closed to make room [E2A_GRPC_ACP_MAX_SESSIONS]",
    )  # fmt: skip
    parser.add_argument(
        "--a2a-url", default=_env("E2A_GRPC_A2A_URL"), metavar="URL",
        help="a2a backend: base URL of the remote A2A agent, where its agent card is served "
        "(needed with --backend a2a) [E2A_GRPC_A2A_URL]",
    )  # fmt: skip
    parser.add_argument(
        "--a2a-timeout-seconds", type=float,
        default=float(_env("E2A_GRPC_A2A_TIMEOUT_SECONDS") or DEFAULT_A2A_TIMEOUT_SECONDS),
        help="a2a backend: longest silence on the agent's stream, and the connect timeout "
        "[E2A_GRPC_A2A_TIMEOUT_SECONDS]",
    )  # fmt: skip
    parser.set_defaults(run=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    token = _env("E2A_GRPC_TOKEN")
    if args.token_file:
        token = args.token_file.read_text(encoding="utf-8").strip()
    config = ServerConfig(
        host=args.host,
        port=args.port,
        max_message_bytes=args.max_message_bytes,
        grace_seconds=args.grace_seconds,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        token=token or None,
        backend=args.backend,
        echo_delay_seconds=args.echo_delay_seconds,
        log_frames=args.log_frames,
        acp_command=tuple(args.acp_command),
        acp_cwd=args.acp_cwd,
        acp_permission_policy=args.acp_permission_policy,
        acp_max_sessions=args.acp_max_sessions,
        a2a_url=args.a2a_url,
        a2a_timeout_seconds=args.a2a_timeout_seconds,
    )
    if config.backend == "acp" and not config.acp_command:
        print("error: --backend acp needs --acp-command (or E2A_GRPC_ACP_COMMAND)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if config.backend == "a2a":
        if not config.a2a_url:
            print("error: --backend a2a needs --a2a-url (or E2A_GRPC_A2A_URL)", file=sys.stderr)
            return EXIT_BAD_INPUT
        try:  # a2a-sdk is optional: say so now, not with a traceback from inside the server
            import e2a_grpc.backends.a2a  # noqa: F401
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if config.log_frames:
        # Spec 12.7: each frame's log record is one line of pure JSON, whatever the other logs look like.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        frame_log.addHandler(handler)
        frame_log.propagate = False
    asyncio.run(serve(config))
    return EXIT_OK


def _add_convert(commands: Any) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert one document (file or stdin) and print JSON",
        description="Convert JSON read from FILE (or stdin when FILE is '-' or missing) and print JSON to stdout.",
    )
    kinds = convert.add_subparsers(dest="kind", required=True, metavar="KIND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("file", nargs="?", default="-", help="input file, '-' for stdin (default)")
    common.add_argument(
        "--server", metavar="HOST:PORT", help="ask a running e2a-grpc service instead of converting here"
    )
    common.add_argument(
        "--token-env", metavar="VAR", default="E2A_GRPC_TOKEN", help="env var with the bearer token for --server"
    )
    common.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) to reach --server over TLS")

    to_acp = kinds.add_parser("to-acp", parents=[common], help="E2A envelope or response -> ACP JSON-RPC")
    to_acp.add_argument(
        "--session-prompt-method", action="append", default=[], metavar="METHOD",
        help="send this gateway method as ACP session/prompt (e.g. chat.send); repeatable",
    )  # fmt: skip
    to_acp.add_argument("--wire", action="store_true", help="camelCase ACP as agents expect it (sessionId, ...)")
    to_acp.set_defaults(run=_run_to_acp)

    from_acp = kinds.add_parser("from-acp", parents=[common], help="ACP JSON-RPC message or batch -> E2A records")
    from_acp.add_argument("--channel", help="ingress channel to record")
    from_acp.set_defaults(run=_run_from_acp)

    to_a2a = kinds.add_parser("to-a2a-stream", parents=[common], help="E2A response -> A2A StreamResponse JSON")
    to_a2a.add_argument("--native", action="store_true", help="also project e2a.chunk / e2a.complete / e2a.error")
    to_a2a.set_defaults(run=_run_to_a2a_stream)

    from_a2a = kinds.add_parser("from-a2a", parents=[common], help="A2A SendMessage params -> E2A envelope")
    from_a2a.add_argument("--channel", help="ingress channel to record")
    from_a2a.set_defaults(run=_run_from_a2a)


def _read(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    return Path(file).read_text(encoding="utf-8")


def _print(document: Any, out: TextIO) -> None:
    out.write(jsontext.dumps_document(document) + "\n")


def _is_response(document: Any) -> bool:
    """E2A JSON is a response when it has ``response_kind`` (envelopes never do)."""
    return isinstance(document, dict) and "response_kind" in document


def _answer(result: Any, out: TextIO) -> int:
    if isinstance(result, conversion.NotApplicable):
        print(f"not applicable: {result.reason}", file=sys.stderr)
        return EXIT_NOT_APPLICABLE
    if isinstance(result, str):
        out.write(result + "\n")
    else:
        _print(result, out)
    return EXIT_OK


def _run_to_acp(args: argparse.Namespace) -> int:
    text = _read(args.file)
    document = jsontext.loads(text, "$")
    methods = tuple(args.session_prompt_method)
    if args.server:
        with ConversionClient.connect(args.server, token=_env(args.token_env), tls_ca=args.tls_ca) as client:
            result = client.to_acp_json(
                text, is_response=_is_response(document), session_prompt_methods=methods, wire=args.wire
            )
        return _answer(result, sys.stdout)
    record = E2AResponse.from_dict(document) if _is_response(document) else E2AEnvelope.from_dict(document)
    return _answer(conversion.to_acp(record, session_prompt_methods=methods, wire=args.wire), sys.stdout)


def _run_from_acp(args: argparse.Namespace) -> int:
    text = _read(args.file)
    if args.server:
        with ConversionClient.connect(args.server, token=_env(args.token_env), tls_ca=args.tls_ca) as client:
            records = client.from_acp(text, channel=args.channel)
    else:
        records = conversion.from_acp(text, channel=args.channel, identity_origin=IdentityOrigin.USER)
    dicts = [record.to_dict() for record in records]
    _print(dicts if text.lstrip().startswith("[") else dicts[0], sys.stdout)
    return EXIT_OK


def _run_to_a2a_stream(args: argparse.Namespace) -> int:
    text = _read(args.file)
    if args.server:
        with ConversionClient.connect(args.server, token=_env(args.token_env), tls_ca=args.tls_ca) as client:
            return _answer(client.to_a2a_stream_json(text, project_native_kinds=args.native), sys.stdout)
    response = E2AResponse.from_json(text)
    return _answer(conversion.to_a2a_stream(response, project_native_kinds=args.native), sys.stdout)


def _run_from_a2a(args: argparse.Namespace) -> int:
    text = _read(args.file)
    if args.server:
        with ConversionClient.connect(args.server, token=_env(args.token_env), tls_ca=args.tls_ca) as client:
            envelope = client.from_a2a(text, channel=args.channel)
    else:
        envelope = conversion.from_a2a(text, channel=args.channel)
    _print(envelope.to_dict(), sys.stdout)
    return EXIT_OK


def _add_chat(commands: Any) -> None:
    parser = commands.add_parser(
        "chat",
        help="send text to the service's Chat RPC and print the answer as it streams",
        description="Send TEXT to a running service (AgentService.Chat) and print the answer's text deltas as they "
        "arrive. Every frame is checked against the E2A stream invariants (spec section 12).",
    )
    parser.add_argument("text", help="what to say")
    parser.add_argument(
        "--server", metavar="HOST:PORT", default=_env("E2A_GRPC_SERVER", f"{DEFAULT_HOST}:{DEFAULT_PORT}"),
        help="the service [E2A_GRPC_SERVER] (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument("--method", default="chat.send", help="envelope method (default: %(default)s)")
    parser.add_argument("--session-id", help="session to continue")
    parser.add_argument("--json", action="store_true", help="print each frame as a line of E2A wire JSON instead")
    parser.add_argument("--timeout", type=float, help="deadline in seconds")
    parser.add_argument("--token-env", metavar="VAR", default="E2A_GRPC_TOKEN", help="env var with the bearer token")
    parser.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) to reach --server over TLS")
    parser.set_defaults(run=_run_chat)


def _run_chat(args: argparse.Namespace) -> int:
    envelope = E2AEnvelope(
        method=args.method, session_id=args.session_id, is_stream=True, channel="cli", params={"text": args.text}
    )
    envelope.ensure_timestamp()
    token = _env(args.token_env)
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    final = None
    with ConversionClient.connect(args.server, token=token, tls_ca=args.tls_ca) as client:
        try:
            for frame in chat(client.channel, envelope, timeout=args.timeout, metadata=metadata):
                final = frame
                if args.json:
                    sys.stdout.write(frame.to_json() + "\n")
                elif frame.response_kind == ResponseKind.E2A_CHUNK and frame.body.get("delta_kind") == "text":
                    sys.stdout.write(str(frame.body.get("delta", "")))
                sys.stdout.flush()
        except grpc.RpcError as error:
            raise ServiceError.from_rpc_error(error) from None
    if not args.json:
        sys.stdout.write("\n")
    if final is not None and final.status == ResponseStatus.FAILED:
        print(f"error: {final.body.get('code')}: {final.body.get('message')}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="e2a-grpc", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(commands)
    _add_convert(commands)
    _add_chat(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.run(args))
    except E2AFieldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ServiceError as exc:
        print(f"error: {exc.code.name}", file=sys.stderr)
        for field, description in exc.violations or [("", str(exc))]:
            print(f"  {field}: {description}" if field else f"  {description}", file=sys.stderr)
        return EXIT_BAD_INPUT if exc.code == grpc.StatusCode.INVALID_ARGUMENT else EXIT_FAILED
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT if isinstance(exc, (FileNotFoundError, UnicodeDecodeError)) else EXIT_FAILED
    except StreamInvariantError as exc:
        print(f"error: the stream broke the E2A invariants: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

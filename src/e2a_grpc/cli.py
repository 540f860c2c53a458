"""The ``e2a-grpc`` command: run the service, or convert E2A / ACP / A2A JSON from a file or stdin."""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import functools
import importlib
import importlib.metadata
import logging
import os
import shlex
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, TextIO, TypeVar

import grpc
from pydantic import ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings

from e2a.cloudevents.v1 import cloudevents_pb2
from e2a_grpc import conversion, jsontext
from e2a_grpc.address import ServerAddress
from e2a_grpc.chat.frames import frame_log
from e2a_grpc.chat.invariants import StreamInvariantError
from e2a_grpc.client import ConversionClient, ServiceError, chat
from e2a_grpc.client.chat_text import ChatTextPrinter
from e2a_grpc.client.questions import Question, ask
from e2a_grpc.client.terminal_input import read_line
from e2a_grpc.errors import E2AFieldError, E2ATypeError, E2AValueError, type_name
from e2a_grpc.grpc.workers import run_on_event_loop, run_server
from e2a_grpc.logs import configure_logging
from e2a_grpc.model import E2AEnvelope, E2AResponse, IdentityOrigin, ResponseStatus
from e2a_grpc.model.proto import parse
from e2a_grpc.protocols import cloudevents
from e2a_grpc.protocols.cloudevent_formats import (
    CONTENT_TYPE_HEADER,
    attribute_text,
    event_from_headers,
    from_batch_json,
    from_http_binary,
    from_protobuf,
    from_protobuf_batch,
    from_structured_json,
    to_batch_json,
    to_http_binary,
    to_protobuf,
    to_protobuf_batch,
    to_structured_json,
    utf8_text,
)
from e2a_grpc.protocols.cloudevents import CloudEvent
from e2a_grpc.settings import (
    BackendName,
    ClientSettings,
    CloudEventsSettings,
    ServerSettings,
    SubscribeSettings,
    env_var,
)

EXIT_OK = 0
EXIT_FAILED = 1  # the server or the agent failed
EXIT_BAD_INPUT = 2  # also argparse's exit code for usage errors
EXIT_NOT_APPLICABLE = 3
EXIT_NO_SERVER = 4
EXIT_WAITING = 5  # the turn ended with a question nobody answered: its task waits
EXIT_TIMEOUT = 124  # as timeout(1) exits
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK:<4} ok
  {EXIT_FAILED:<4} the server or the agent failed
  {EXIT_BAD_INPUT:<4} bad input or usage (also a missing or unreadable file)
  {EXIT_NOT_APPLICABLE:<4} the conversion does not apply to this record
  {EXIT_NO_SERVER:<4} no server could be reached at --server
  {EXIT_WAITING:<4} the agent waits for an answer (chat: a question not answered here)
  {EXIT_TIMEOUT:<4} --timeout passed before the answer was complete
  {EXIT_INTERRUPTED:<4} interrupted (Ctrl-C)
"""

DESCRIPTION = """\
E2A (Everything-to-Agent) over gRPC.

  e2a-grpc serve                          start the service on 127.0.0.1:50051
  e2a-grpc chat "Hello"                   stream an answer from the running service
  e2a-grpc convert to-acp envelope.json   E2A -> ACP JSON-RPC, printed to stdout
  echo '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}' \\
    | e2a-grpc convert from-acp           ACP JSON-RPC -> E2A

convert works offline by default; add --server HOST:PORT to ask a running service instead.
--server takes HOST, HOST:PORT, [IPv6]:PORT or http(s)://HOST:PORT (port 50051 by default; https:// uses TLS).
"""


SettingsT = TypeVar("SettingsT", bound=BaseSettings)

#: Server settings with no command-line option: a command line shows in ``ps`` and shell history.
_ENV_ONLY_SETTINGS = frozenset({"token"})


def _option(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _shown_default(value: object) -> str:
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _setting_help(settings_class: type[BaseSettings], name: str) -> str:
    field = settings_class.model_fields[name]
    return f"{field.description} (default: {_shown_default(field.default)}) [{env_var(name)}]"


def _add_setting_options(parser: argparse.ArgumentParser, settings_class: type[BaseSettings], *names: str) -> None:
    """Options for settings fields. Not given, an option is absent from the namespace, so that the
    environment and then the field's default apply when the settings are built."""
    for name in names:
        annotation = settings_class.model_fields[name].annotation
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": _setting_help(settings_class, name)}
        if annotation is bool:
            kwargs["action"] = "store_true"
        elif isinstance(annotation, type) and issubclass(annotation, StrEnum):
            kwargs["choices"] = list(annotation)
        parser.add_argument(_option(name), **kwargs)


def _settings(settings_class: type[SettingsT], args: argparse.Namespace) -> SettingsT:
    """The settings, with the options given on the command line over the environment and defaults.

    Built only by the command that uses them, so that a bad value for another command does not matter.
    """
    options = {name: value for name, value in vars(args).items() if name in settings_class.model_fields}
    return settings_class(**options)


def _settings_error(error: ErrorDetails, args: argparse.Namespace) -> str:
    """One line for a settings error, naming where the bad value came from."""
    message = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
    if not error["loc"]:
        return message  # a rule across settings: its message names them
    name = str(error["loc"][0])
    return f"{_option(name) if name in vars(args) else env_var(name)}: {message}"


def _add_serve(commands: Any) -> None:
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
    _add_setting_options(parser, ServerSettings, *options)
    parser.set_defaults(run=_run_serve)


#: Libraries whose DEBUG records are their own internals (grpc's event loop bookkeeping, one line per
#: call; asyncio's selector): -v is for e2a-grpc's records. gRPC's core has its own switches for that
#: (GRPC_VERBOSITY, GRPC_TRACE); asyncio's debug mode (PYTHONASYNCIODEBUG) warns at WARNING.
# grpc and asyncio log their internals; a2a-sdk's card resolver logs every card it fetches, whole.
_QUIET_LIBRARY_LOGGERS = ("grpc", "asyncio", "a2a.client.card_resolver")


def _server_logging(*, log_frames: bool) -> None:
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
    _server_logging(log_frames=log_frames)


def _run_serve(args: argparse.Namespace) -> int:
    config = _settings(ServerSettings, args)
    # a2a-sdk opens an OpenTelemetry span around most of its own calls (hundreds per A2A turn) unless
    # told otherwise before it is imported: only with --tracing, unless the environment says. Set
    # before the workers start, so they inherit it.
    os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "true" if config.tracing else "false")
    _server_logging(log_frames=config.log_frames)
    if config.backend is BackendName.A2A:
        try:  # a2a-sdk is optional: say so now, not with a traceback from inside the server
            import e2a_grpc.backends.a2a  # noqa: F401
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if config.publish_nats:
        try:  # nats-py is optional (the nats extra): say so now, not with a traceback
            importlib.import_module("e2a_grpc.broker.frame_publisher")
        except ImportError as exc:
            print(f"error: --publish-nats: {exc} (pip install 'e2a-grpc[nats]')", file=sys.stderr)
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


def _add_convert(commands: Any) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert one document (file or stdin) and print JSON",
        description="Convert JSON read from FILE (or stdin when FILE is '-' or missing) and print JSON to stdout.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = convert.add_subparsers(dest="kind", required=True, metavar="KIND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("file", nargs="?", default="-", help="input file, '-' for stdin (default)")
    common.add_argument(
        "--server",
        metavar="ADDRESS",
        help="ask a running e2a-grpc service instead of converting here: HOST, HOST:PORT, [IPv6]:PORT or "
        "http(s)://HOST:PORT (port default 50051; https:// means TLS)",
    )
    _add_setting_options(common, ClientSettings, "token_env")
    common.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) to reach --server over TLS")

    to_acp = kinds.add_parser(
        "to-acp",
        parents=[common],
        help="E2A envelope or response -> ACP JSON-RPC",
        description="Convert an E2A envelope (a request) or response (a record with response_kind) to the ACP "
        "JSON-RPC message it stands for. Exits 3 when the record has no ACP form.",
    )
    to_acp.add_argument(
        "--session-prompt-method", action="append", default=[], metavar="METHOD",
        help="send this gateway method as ACP session/prompt (e.g. chat.send); repeatable",
    )  # fmt: skip
    to_acp.add_argument("--wire", action="store_true", help="camelCase ACP as agents expect it (sessionId, ...)")
    to_acp.set_defaults(run=_run_to_acp)

    from_acp = kinds.add_parser(
        "from-acp",
        parents=[common],
        help="ACP JSON-RPC message or batch -> E2A records",
        description="Convert an ACP JSON-RPC message (request, notification, result or error) to an E2A envelope "
        "or response; a JSON array (a batch) gives an array of records.",
    )
    from_acp.add_argument("--channel", help="ingress channel to record")
    from_acp.set_defaults(run=_run_from_acp)

    to_a2a = kinds.add_parser(
        "to-a2a-stream",
        parents=[common],
        help="E2A response -> A2A StreamResponse JSON",
        description="Convert one E2A response frame to the A2A StreamResponse an A2A client expects. E2A's own "
        "kinds (e2a.chunk, e2a.complete, e2a.error) have no A2A form unless --native; without it they exit 3.",
    )
    to_a2a.add_argument("--native", action="store_true", help="also project e2a.chunk / e2a.complete / e2a.error")
    to_a2a.set_defaults(run=_run_to_a2a_stream)

    from_a2a = kinds.add_parser(
        "from-a2a",
        parents=[common],
        help="A2A SendMessage params -> E2A envelope",
        description="Convert the params of an A2A SendMessage (or SendStreamingMessage) request to the E2A "
        "envelope a gateway routes.",
    )
    from_a2a.add_argument("--channel", help="ingress channel to record")
    from_a2a.set_defaults(run=_run_from_a2a)
    _add_cloudevents_kinds(kinds, common)


def _read(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    return Path(file).read_text(encoding="utf-8")


def _print(document: Any, out: TextIO) -> None:
    out.write(jsontext.dumps(document) + "\n")


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


class ServerUnreachable(Exception):
    """No server answered at the address: the call failed with UNAVAILABLE."""

    def __init__(self, error: ServiceError, address: ServerAddress) -> None:
        super().__init__(str(error))
        self.address = address


@contextlib.contextmanager
def _connect(args: argparse.Namespace) -> Iterator[ConversionClient]:
    """A client of ``--server`` (or ``E2A_GRPC_SERVER``) for ``convert`` and ``chat``."""
    client_settings = _settings(ClientSettings, args)
    address = client_settings.server_address
    token = client_settings.bearer_token()
    with ConversionClient.connect(address.target, token=token, tls=address.tls, tls_ca=args.tls_ca) as client:
        try:
            yield client
        except ServiceError as error:
            if error.code == grpc.StatusCode.UNAVAILABLE:
                raise ServerUnreachable(error, address) from None
            raise


def _run_to_acp(args: argparse.Namespace) -> int:
    text = _read(args.file)
    document = jsontext.loads(text, "$")
    methods = tuple(args.session_prompt_method)
    if args.server:
        with _connect(args) as client:
            result = client.to_acp_json(
                text, is_response=_is_response(document), session_prompt_methods=methods, wire=args.wire
            )
        return _answer(result, sys.stdout)
    record = E2AResponse.from_dict(document) if _is_response(document) else E2AEnvelope.from_dict(document)
    return _answer(conversion.to_acp(record, session_prompt_methods=methods, wire=args.wire), sys.stdout)


def _run_from_acp(args: argparse.Namespace) -> int:
    text = _read(args.file)
    if args.server:
        with _connect(args) as client:
            records = client.from_acp(text, channel=args.channel)
    else:
        records = conversion.from_acp(text, channel=args.channel, identity_origin=IdentityOrigin.USER)
    dicts = [record.to_dict() for record in records]
    _print(dicts if text.lstrip().startswith("[") else dicts[0], sys.stdout)
    return EXIT_OK


def _run_to_a2a_stream(args: argparse.Namespace) -> int:
    text = _read(args.file)
    if args.server:
        with _connect(args) as client:
            return _answer(client.to_a2a_stream_json(text, project_native_kinds=args.native), sys.stdout)
    response = E2AResponse.from_json(text)
    return _answer(conversion.to_a2a_stream(response, project_native_kinds=args.native), sys.stdout)


def _run_from_a2a(args: argparse.Namespace) -> int:
    text = _read(args.file)
    if args.server:
        with _connect(args) as client:
            envelope = client.from_a2a(text, channel=args.channel)
    else:
        envelope = conversion.from_a2a(text, channel=args.channel)
    _print(envelope.to_dict(), sys.stdout)
    return EXIT_OK


# --- the CloudEvents formats as bytes (to-cloudevents' output, from-cloudevents' input), and the
# Kafka binding's binary mode, which only they use -------------------------------------------------

_KAFKA_PREFIX: Final = "ce_"


@dataclass(frozen=True)
class KafkaMessage:
    """An event in the Kafka binding's binary mode: ``ce_*`` headers (and content-type), key, value."""

    headers: list[tuple[str, bytes]]
    key: bytes | None
    value: bytes | None


def to_kafka_binary(event: CloudEvent) -> KafkaMessage:
    """Binary mode: each attribute a UTF-8 ``ce_`` header, datacontenttype as content-type; the
    ``partitionkey`` extension, if any, is the message key."""
    headers = []
    key = None
    for name, value in event.attributes().items():
        if name == "datacontenttype":
            headers.append((CONTENT_TYPE_HEADER, str(value).encode()))
        else:
            headers.append((_KAFKA_PREFIX + name, attribute_text(value).encode()))
            if name == "partitionkey":
                key = attribute_text(value).encode()
    return KafkaMessage(headers=headers, key=key, value=event.data)


def from_kafka_binary(
    headers: Sequence[tuple[str, bytes]], value: bytes | None, key: bytes | None = None
) -> CloudEvent:
    """Binary mode; a message key without a ``ce_partitionkey`` header is the ``partitionkey`` extension."""
    attributes: dict[str, str] = {}
    content_type = None
    for name, raw in headers:
        lowered = name.lower()
        if lowered == CONTENT_TYPE_HEADER:
            content_type = utf8_text(raw, CONTENT_TYPE_HEADER)
        elif lowered.startswith(_KAFKA_PREFIX):
            attribute = lowered[len(_KAFKA_PREFIX) :]
            attributes[attribute] = utf8_text(raw, attribute)
    if key is not None and "partitionkey" not in attributes:
        attributes["partitionkey"] = utf8_text(key, "partitionkey")
    return event_from_headers(attributes, content_type, value)


class Format(StrEnum):
    """A format as bytes: HTTP and Kafka messages as one JSON object per line (headers, body/value)."""

    STRUCTURED = "structured"  # application/cloudevents+json, one event per line
    BATCH = "batch"  # application/cloudevents-batch+json
    HTTP = "http"  # {"headers": {...}, "body": "..."} per line
    KAFKA = "kafka"  # {"headers": [[name, value], ...], "key": ..., "value": ...} per line
    PROTOBUF = "protobuf"  # one io.cloudevents.v1.CloudEvent
    PROTOBUF_BATCH = "protobuf-batch"  # io.cloudevents.v1.CloudEventBatch


def encode(events: Sequence[CloudEvent], form: Format) -> bytes:
    """The events in ``form``, as bytes to write to a file or a pipe."""
    if form is Format.BATCH:
        return (to_batch_json(events) + "\n").encode()
    if form is Format.PROTOBUF_BATCH:
        return to_protobuf_batch(events).SerializeToString()
    if form is Format.PROTOBUF:
        if len(events) != 1:
            raise E2AValueError("$", f"the protobuf format holds one event, got {len(events)} (use protobuf-batch)")
        return to_protobuf(events[0]).SerializeToString()
    lines = []
    for event in events:
        if form is Format.STRUCTURED:
            lines.append(to_structured_json(event))
        elif form is Format.HTTP:
            message = to_http_binary(event)
            lines.append(jsontext.dumps({"headers": message.headers, "body": utf8_text(message.body, "data")}))
        else:
            kafka = to_kafka_binary(event)
            headers = [[name, utf8_text(value, name)] for name, value in kafka.headers]
            key = None if kafka.key is None else utf8_text(kafka.key, "partitionkey")
            value = None if kafka.value is None else utf8_text(kafka.value, "data")
            lines.append(jsontext.dumps({"headers": headers, "key": key, "value": value}))
    return "".join(line + "\n" for line in lines).encode()


def decode(data: bytes, form: Format) -> list[CloudEvent]:
    """The events ``encode`` wrote (or a peer did) in ``form``: one JSON document per line, or a single
    document over several lines; errors name the event and attribute."""
    if form is Format.PROTOBUF:
        return [from_protobuf(parse(cloudevents_pb2.CloudEvent, data))]
    if form is Format.PROTOBUF_BATCH:
        return from_protobuf_batch(parse(cloudevents_pb2.CloudEventBatch, data))
    text = utf8_text(data, "$")
    if form in (Format.STRUCTURED, Format.BATCH) and text.lstrip().startswith("["):
        return from_batch_json(text)
    lines = [line for line in text.splitlines() if line.strip()]
    if not all(line.lstrip().startswith("{") for line in lines):
        return [_decode_line(text, form)]  # one document written over several lines (pretty-printed)
    events = []
    for index, line in enumerate(lines):
        try:
            events.append(_decode_line(line, form))
        except E2AFieldError as exc:
            raise exc.under(f"[{index}]") from None
    if not events:
        raise E2AValueError("$", "no event in the input")
    return events


def _decode_line(line: str, form: Format) -> CloudEvent:
    if form in (Format.STRUCTURED, Format.BATCH):
        return from_structured_json(line)
    document = jsontext.loads(line, "$")
    if not isinstance(document, dict):
        raise E2ATypeError("$", f"expected a JSON object, got {type_name(document)}")
    if form is Format.HTTP:
        headers, body = document.get("headers"), document.get("body", "")
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise E2ATypeError("headers", "expected an object of header strings")
        if not isinstance(body, str):
            raise E2ATypeError("body", f"expected a string, got {type_name(body)}")
        return from_http_binary(headers, body.encode())
    pairs, value = document.get("headers"), document.get("value")
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(item, str) for item in pair) for pair in pairs
    ):
        raise E2ATypeError("headers", "expected a list of [name, value] strings")
    if value is not None and not isinstance(value, str):
        raise E2ATypeError("value", f"expected a string, got {type_name(value)}")
    key = document.get("key")
    if key is not None and not isinstance(key, str):
        raise E2ATypeError("key", f"expected a string, got {type_name(key)}")
    return from_kafka_binary(
        [(name, text.encode()) for name, text in pairs],
        None if value is None else value.encode(),
        None if key is None else key.encode(),
    )


def _add_cloudevents_kinds(kinds: Any, common: argparse.ArgumentParser) -> None:
    formats = [str(form) for form in Format]
    to_events = kinds.add_parser(
        "to-cloudevents",
        parents=[common],
        help="E2A records -> CloudEvents",
        description="Send E2A records (one record, or a JSON array of them) as CloudEvents 1.0, one event per "
        "record with the record's wire JSON as data. Formats: structured and http and kafka write one event per "
        "line (http/kafka as {headers, body|value}); batch writes one JSON array; protobuf and protobuf-batch "
        "write io.cloudevents.v1.CloudEvent / CloudEventBatch bytes.",
    )
    to_events.add_argument("--format", choices=formats, default=Format.STRUCTURED.value)
    _add_setting_options(to_events, CloudEventsSettings, "cloudevents_type_prefix", "cloudevents_source")
    to_events.set_defaults(run=_run_to_cloudevents)
    from_events = kinds.add_parser(
        "from-cloudevents",
        parents=[common],
        help="CloudEvents -> E2A records",
        description="Read CloudEvents carrying E2A records (in --format, as to-cloudevents writes them) and print "
        "the record, or a JSON array of records when there are several. Attributes that contradict the record "
        "in data are refused, naming the attribute.",
    )
    from_events.add_argument("--format", choices=formats, default=Format.STRUCTURED.value)
    from_events.set_defaults(run=_run_from_cloudevents)


def _records(document: Any) -> list[E2AEnvelope | E2AResponse]:
    items = document if isinstance(document, list) else [document]
    records: list[E2AEnvelope | E2AResponse] = []
    for index, item in enumerate(items):
        try:
            records.append(E2AResponse.from_dict(item) if _is_response(item) else E2AEnvelope.from_dict(item))
        except E2AFieldError as exc:
            raise exc.under(f"[{index}]") if isinstance(document, list) else exc from None
    return records


def _run_to_cloudevents(args: argparse.Namespace) -> int:
    text = _read(args.file)
    # An array of records is one level deeper than the records in it.
    depth = jsontext.MAX_DEPTH + 1 if text.lstrip().startswith("[") else jsontext.MAX_DEPTH
    records = _records(jsontext.loads(text, "$", max_depth=depth))
    settings = _settings(CloudEventsSettings, args)
    prefix, source = settings.cloudevents_type_prefix, settings.cloudevents_source
    if args.server:
        # Only what was given (option or environment) overrides the server's own settings.
        given = settings.model_fields_set
        with _connect(args) as client:
            events = client.to_cloudevents(
                records,
                type_prefix=prefix if "cloudevents_type_prefix" in given else None,
                source=source if "cloudevents_source" in given else None,
            )
    else:
        events = cloudevents.records_to_events(records, type_prefix=prefix, source=source)
    sys.stdout.buffer.write(encode(events, Format(args.format)))
    sys.stdout.flush()
    return EXIT_OK


def _run_from_cloudevents(args: argparse.Namespace) -> int:
    data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    form = Format(args.format)
    events = decode(data, form)
    if args.server:
        with _connect(args) as client:
            records = client.from_cloudevents(events)
    else:
        # A batch (possibly empty: to-cloudevents writes one for []) has its errors name the event.
        records = (
            cloudevents.events_to_records(events) if len(events) != 1 else [cloudevents.event_to_record(events[0])]
        )
    several = len(records) > 1 or form in (Format.BATCH, Format.PROTOBUF_BATCH)
    # The records' own wire JSON, joined: an array is one level deeper than the records in it.
    texts = [record.to_json() for record in records]
    sys.stdout.write(("[" + ",".join(texts) + "]" if several else texts[0]) + "\n")
    return EXIT_OK


def _add_chat(commands: Any) -> None:
    parser = commands.add_parser(
        "chat",
        help="send text to the service's Chat RPC and print the answer as it streams",
        description="Send TEXT to a running service (AgentService.Chat) and print the answer as it arrives: its "
        "text, then reasoning ('thinking:') and tool calls ('[tool] ...') on lines of their own (in colour on a "
        "terminal). Every frame is checked against the E2A stream invariants (spec section 12). When the agent "
        "asks a question and waits (e2a.input_required), a terminal shows it with its numbered options and "
        "reads the answer (a number, an option's id or name, or 'cancel'; for a question without options, a "
        f"line of text; Ctrl-D leaves it unanswered, exit {EXIT_WAITING}; Ctrl-C too, exit {EXIT_INTERRUPTED}), "
        "then the answer's frames stream on. With --json, or when stdin or stdout is not a terminal, the "
        f"question is printed and the command exits {EXIT_WAITING}, naming the --session-id and --task-id "
        "that answer it.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("text", nargs="?", help="what to say (none with --task-id: the answer is --answer)")
    _add_setting_options(parser, ClientSettings, "server")
    parser.add_argument("--method", default="chat.send", help="envelope method (default: %(default)s)")
    parser.add_argument("--session-id", help="session to continue (default: a new one for this command)")
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="ANSWER",
        help="answer the agent's next question without asking: an option's id or name, 'cancel', or the text "
        "for a question without options; repeat it for questions that follow, in order",
    )
    parser.add_argument(
        "--task-id",
        help="the waiting task a question is on (the task_id of its e2a.input_required frame): the first "
        "--answer answers it; needs --session-id",
    )
    parser.add_argument("--json", action="store_true", help="print each frame as a line of E2A wire JSON instead")
    parser.add_argument(
        "--timeout",
        type=float,
        help=f"deadline in seconds of each call (not the time at a prompt); exit {EXIT_TIMEOUT}",
    )
    _add_setting_options(parser, ClientSettings, "token_env")
    parser.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) to reach --server over TLS")
    parser.set_defaults(run=_run_chat)


#: Lines of an agent's stderr shown under its error: the end, where the reason usually is.
_STDERR_TAIL_LINES = 10


def _print_agent_error(final: E2AResponse) -> None:
    """The final e2a.error: its code and message, then the end of the agent's stderr if the server sent it."""
    body = final.body if isinstance(final.body, dict) else {}
    print(f"error: {body.get('code')}: {body.get('message')}", file=sys.stderr)
    details = body.get("details")
    stderr_tail = details.get("stderr_tail") if isinstance(details, dict) else None
    if isinstance(stderr_tail, str) and stderr_tail.strip():
        print("agent stderr (last lines):", file=sys.stderr)
        for line in stderr_tail.rstrip("\n").splitlines()[-_STDERR_TAIL_LINES:]:
            print(f"  {line}", file=sys.stderr)


class _Unanswered(Exception):
    """A question stays unanswered here: the command ends with ``exit_code`` and says how to answer it."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


def _chat_usage_error(args: argparse.Namespace) -> str | None:
    if any(not answer.strip() for answer in args.answer):
        return "--answer: an answer is empty"
    if args.task_id is None:
        if args.text is None or not args.text.strip():
            return "nothing to send: give some text"
        return None
    if args.text is not None:
        return "with --task-id the request is the answer: give it as --answer, not as TEXT"
    if not args.answer:
        return "--task-id needs --answer: the answer to the question waiting on that task"
    if not args.session_id:
        return "--task-id needs --session-id: the session the question was asked in"
    return None


def _chat_envelope(
    args: argparse.Namespace,
    params: dict[str, Any],
    *,
    session_id: str | None,
    task_id: str | None = None,
    context_id: str | None = None,
) -> E2AEnvelope:
    envelope = E2AEnvelope(
        method=args.method,
        session_id=session_id,
        task_id=task_id,
        context_id=context_id,
        is_stream=True,
        channel="cli",
        params=params,
    )
    envelope.ensure_timestamp()
    return envelope


def _chat_call(
    client: ConversionClient, envelope: E2AEnvelope, args: argparse.Namespace, metadata: tuple[tuple[str, str], ...]
) -> E2AResponse | None:
    """One Chat call, its frames printed as they arrive; its final frame."""
    printer = ChatTextPrinter(sys.stdout, styled=sys.stdout.isatty())
    final = None
    try:
        for frame in chat(client.channel, envelope, timeout=args.timeout, metadata=metadata):
            final = frame
            if args.json:
                sys.stdout.write(frame.to_json() + "\n")
                sys.stdout.flush()
            else:
                printer.frame(frame)
    except grpc.RpcError as error:
        raise ServiceError.from_rpc_error(error) from None
    finally:
        printer.finish()  # an error line, if any, starts on a line of its own
    return final


def _print_how_to_answer(question: Question) -> None:
    if question.session_id is None or question.task_id is None:
        print("the agent waits for an answer (its question names no session or task to answer it in)", file=sys.stderr)
        return
    command = shlex.join(["e2a-grpc", "chat", "--session-id", question.session_id, "--task-id", question.task_id])
    print(
        f"the agent waits for an answer: {command} --answer {'OPTION' if question.options else 'TEXT'}", file=sys.stderr
    )


def _answer_params(question: Question, answers: collections.deque[str], *, interactive: bool) -> dict[str, Any]:
    """The next answer's ``params``: the next ``--answer``, else what the person types at the terminal."""
    if answers:
        given = answers.popleft()
        params = question.answer_params(given)
        if params is None:
            print(f"error: --answer {given!r} is none of the question's options", file=sys.stderr)
            raise _Unanswered(EXIT_BAD_INPUT)
        return params
    if not interactive:
        raise _Unanswered(EXIT_WAITING)
    try:
        return ask(question, read_line, sys.stderr)
    except EOFError:
        print()  # end the prompt's line
        raise _Unanswered(EXIT_WAITING) from None
    except KeyboardInterrupt:
        print()
        raise _Unanswered(EXIT_INTERRUPTED) from None


def _run_chat(args: argparse.Namespace) -> int:
    problem = _chat_usage_error(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    answers = collections.deque(args.answer)
    if args.task_id is not None:
        envelope = _chat_envelope(args, {"text": answers.popleft()}, session_id=args.session_id, task_id=args.task_id)
    else:
        # Always a session: a question can only be answered in the session it was asked in (the acp
        # backend stops a call's agent process after a call without one), and the agent asks during
        # the call, too late to choose one then.
        envelope = _chat_envelope(args, {"text": args.text}, session_id=args.session_id or str(uuid.uuid4()))
    token = _settings(ClientSettings, args).bearer_token()
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    interactive = not args.json and sys.stdin.isatty() and sys.stdout.isatty()
    try:
        # One connection for the whole exchange: the answer reaches the server process (with `serve
        # --workers`, the worker) that holds the question.
        with _connect(args) as client:
            while True:
                final = _chat_call(client, envelope, args, metadata)
                question = Question.of(final)
                if question is None:
                    break
                try:
                    params = _answer_params(question, answers, interactive=interactive)
                except _Unanswered as unanswered:
                    _print_how_to_answer(question)
                    return unanswered.exit_code
                envelope = _chat_envelope(
                    args,
                    params,
                    session_id=question.session_id,
                    task_id=question.task_id,
                    context_id=question.context_id,
                )
    except ServiceError as error:
        if error.code != grpc.StatusCode.DEADLINE_EXCEEDED or args.timeout is None:
            raise
        print(f"error: no complete answer within --timeout {args.timeout:g} s (DEADLINE_EXCEEDED)", file=sys.stderr)
        return EXIT_TIMEOUT
    if final is not None and final.status == ResponseStatus.FAILED:
        _print_agent_error(final)
        return EXIT_FAILED
    return EXIT_OK


def _add_subscribe(commands: Any) -> None:
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
    _add_setting_options(parser, SubscribeSettings, *SubscribeSettings.model_fields)
    # The short name of --nats-idle-timeout-seconds, as chat's --timeout.
    parser.add_argument(
        "--timeout",
        dest="nats_idle_timeout_seconds",
        default=argparse.SUPPRESS,
        help=f"the same as --nats-idle-timeout-seconds (exit {EXIT_TIMEOUT} when it passes)",
    )
    parser.set_defaults(run=_run_subscribe)


def _run_subscribe(args: argparse.Namespace) -> int:
    settings = _settings(SubscribeSettings, args)
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
        print(f"error: cannot reach NATS at {settings.nats_url}: {exc or repr(exc)}", file=sys.stderr)
        return EXIT_NO_SERVER
    printer.finish()
    return EXIT_OK


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
    _add_serve(commands)
    _add_convert(commands)
    _add_chat(commands)
    _add_subscribe(commands)
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
            print(f"error: {_settings_error(error, args)}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())

"""``e2a-grpc convert KIND``: one document (a file or stdin) converted here, or by a running service
(``--server``), and printed. Each kind is a row of ``KINDS``: how it reads and parses its input, and
what it does with that here and through the service."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from e2a_grpc import conversion, jsontext
from e2a_grpc.cli import cloudevent_forms
from e2a_grpc.cli.exits import EXIT_CODES_HELP, EXIT_NOT_APPLICABLE, EXIT_OK
from e2a_grpc.cli.options import add_setting_options, settings_from
from e2a_grpc.cli.service import connect
from e2a_grpc.client import ConversionClient
from e2a_grpc.errors import E2AFieldError
from e2a_grpc.model import E2AEnvelope, E2AResponse, IdentityOrigin
from e2a_grpc.protocols import cloudevents
from e2a_grpc.settings import ClientSettings, CloudEventsSettings

Given = TypeVar("Given")
Records = list[E2AEnvelope | E2AResponse]


@dataclass(frozen=True)
class Kind(Generic[Given]):
    """A kind of conversion: its subcommand and what it does.

    ``read`` reads the input (``args.file``) and parses it, before any service is asked, so that bad
    input is refused alike offline and with ``--server``. ``here`` converts that offline and
    ``there`` asks the service; each returns what is printed: JSON text or a JSON document, bytes as
    they are, or ``NotApplicable`` (exit 3)."""

    name: str
    help: str
    description: str
    add_options: Callable[[argparse.ArgumentParser], None]
    read: Callable[[argparse.Namespace], Given]
    here: Callable[[Given, argparse.Namespace], Any]
    there: Callable[[ConversionClient, Given, argparse.Namespace], Any]


def _read(args: argparse.Namespace) -> str:
    if args.file == "-":
        return sys.stdin.read()
    return Path(args.file).read_text(encoding="utf-8")


def _is_response(document: Any) -> bool:
    """E2A JSON is a response when it has ``response_kind`` (envelopes never do)."""
    return isinstance(document, dict) and "response_kind" in document


def _answer(result: Any) -> int:
    if isinstance(result, conversion.NotApplicable):
        print(f"not applicable: {result.reason}", file=sys.stderr)
        return EXIT_NOT_APPLICABLE
    if isinstance(result, bytes):
        sys.stdout.buffer.write(result)
        sys.stdout.flush()
    elif isinstance(result, str):
        sys.stdout.write(result + "\n")
    else:
        sys.stdout.write(jsontext.dumps(result) + "\n")
    return EXIT_OK


# --- to-acp ---------------------------------------------------------------------------------------


def _to_acp_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--session-prompt-method", action="append", default=[], metavar="METHOD",
        help="send this gateway method as ACP session/prompt (e.g. chat.send); repeatable",
    )  # fmt: skip
    parser.add_argument("--wire", action="store_true", help="camelCase ACP as agents expect it (sessionId, ...)")


def _read_record(args: argparse.Namespace) -> tuple[str, Any]:
    """The text of an E2A record, and its JSON document."""
    text = _read(args)
    return text, jsontext.loads(text, "$")


def _to_acp_here(given: tuple[str, Any], args: argparse.Namespace) -> Any:
    _, document = given
    record = E2AResponse.from_dict(document) if _is_response(document) else E2AEnvelope.from_dict(document)
    return conversion.to_acp(record, session_prompt_methods=tuple(args.session_prompt_method), wire=args.wire)


def _to_acp_there(client: ConversionClient, given: tuple[str, Any], args: argparse.Namespace) -> Any:
    text, document = given
    methods = tuple(args.session_prompt_method)
    return client.to_acp_json(text, is_response=_is_response(document), session_prompt_methods=methods, wire=args.wire)


# --- from-acp and from-a2a ------------------------------------------------------------------------


def _channel_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--channel", help="ingress channel to record")


def _acp_records(records: Records, text: str) -> Any:
    """The records of an ACP message, or of a batch (a JSON array) as an array."""
    dicts = [record.to_dict() for record in records]
    return dicts if text.lstrip().startswith("[") else dicts[0]


def _from_acp_here(text: str, args: argparse.Namespace) -> Any:
    records = conversion.from_acp(text, channel=args.channel, identity_origin=IdentityOrigin.USER)
    return _acp_records(records, text)


def _from_acp_there(client: ConversionClient, text: str, args: argparse.Namespace) -> Any:
    return _acp_records(client.from_acp(text, channel=args.channel), text)


def _from_a2a_here(text: str, args: argparse.Namespace) -> Any:
    return conversion.from_a2a(text, channel=args.channel).to_dict()


def _from_a2a_there(client: ConversionClient, text: str, args: argparse.Namespace) -> Any:
    return client.from_a2a(text, channel=args.channel).to_dict()


# --- to-a2a-stream --------------------------------------------------------------------------------


def _native_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--native", action="store_true", help="also project e2a.chunk / e2a.complete / e2a.error")


def _to_a2a_stream_here(text: str, args: argparse.Namespace) -> Any:
    return conversion.to_a2a_stream(E2AResponse.from_json(text), project_native_kinds=args.native)


def _to_a2a_stream_there(client: ConversionClient, text: str, args: argparse.Namespace) -> Any:
    return client.to_a2a_stream_json(text, project_native_kinds=args.native)


# --- to-cloudevents and from-cloudevents ----------------------------------------------------------


def _format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=[str(form) for form in cloudevent_forms.Format],
        default=cloudevent_forms.Format.STRUCTURED.value,
    )


def _to_cloudevents_options(parser: argparse.ArgumentParser) -> None:
    _format_option(parser)
    add_setting_options(parser, CloudEventsSettings, "cloudevents_type_prefix", "cloudevents_source")


def _read_records(args: argparse.Namespace) -> tuple[Records, CloudEventsSettings]:
    """One record, or a JSON array of them; and the settings of their events."""
    text = _read(args)
    # An array of records is one level deeper than the records in it.
    depth = jsontext.MAX_DEPTH + 1 if text.lstrip().startswith("[") else jsontext.MAX_DEPTH
    document = jsontext.loads(text, "$", max_depth=depth)
    items = document if isinstance(document, list) else [document]
    records: Records = []
    for index, item in enumerate(items):
        try:
            records.append(E2AResponse.from_dict(item) if _is_response(item) else E2AEnvelope.from_dict(item))
        except E2AFieldError as exc:
            raise exc.under(f"[{index}]") if isinstance(document, list) else exc from None
    return records, settings_from(CloudEventsSettings, args)


def _to_cloudevents_here(given: tuple[Records, CloudEventsSettings], args: argparse.Namespace) -> bytes:
    records, settings = given
    events = cloudevents.records_to_events(
        records, type_prefix=settings.cloudevents_type_prefix, source=settings.cloudevents_source
    )
    return cloudevent_forms.encode(events, cloudevent_forms.Format(args.format))


def _to_cloudevents_there(
    client: ConversionClient, given: tuple[Records, CloudEventsSettings], args: argparse.Namespace
) -> bytes:
    records, settings = given
    # Only what was given (option or environment) overrides the server's own settings.
    set_here = settings.model_fields_set
    events = client.to_cloudevents(
        records,
        type_prefix=settings.cloudevents_type_prefix if "cloudevents_type_prefix" in set_here else None,
        source=settings.cloudevents_source if "cloudevents_source" in set_here else None,
    )
    return cloudevent_forms.encode(events, cloudevent_forms.Format(args.format))


def _read_events(args: argparse.Namespace) -> list[cloudevents.CloudEvent]:
    data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    return cloudevent_forms.decode(data, cloudevent_forms.Format(args.format))


def _records_text(records: Records, args: argparse.Namespace) -> str:
    """One record, or an array when there are several or the format is a batch."""
    form = cloudevent_forms.Format(args.format)
    several = len(records) > 1 or form in (cloudevent_forms.Format.BATCH, cloudevent_forms.Format.PROTOBUF_BATCH)
    # The records' own wire JSON, joined: an array is one level deeper than the records in it.
    texts = [record.to_json() for record in records]
    return "[" + ",".join(texts) + "]" if several else texts[0]


def _from_cloudevents_here(events: list[cloudevents.CloudEvent], args: argparse.Namespace) -> str:
    # A batch (possibly empty: to-cloudevents writes one for []) has its errors name the event.
    records = cloudevents.events_to_records(events) if len(events) != 1 else [cloudevents.event_to_record(events[0])]
    return _records_text(records, args)


def _from_cloudevents_there(
    client: ConversionClient, events: list[cloudevents.CloudEvent], args: argparse.Namespace
) -> str:
    return _records_text(client.from_cloudevents(events), args)


KINDS: tuple[Kind[Any], ...] = (
    Kind(
        name="to-acp",
        help="E2A envelope or response -> ACP JSON-RPC",
        description="Convert an E2A envelope (a request) or response (a record with response_kind) to the ACP "
        "JSON-RPC message it stands for. Exits 3 when the record has no ACP form.",
        add_options=_to_acp_options,
        read=_read_record,
        here=_to_acp_here,
        there=_to_acp_there,
    ),
    Kind(
        name="from-acp",
        help="ACP JSON-RPC message or batch -> E2A records",
        description="Convert an ACP JSON-RPC message (request, notification, result or error) to an E2A envelope "
        "or response; a JSON array (a batch) gives an array of records.",
        add_options=_channel_option,
        read=_read,
        here=_from_acp_here,
        there=_from_acp_there,
    ),
    Kind(
        name="to-a2a-stream",
        help="E2A response -> A2A StreamResponse JSON",
        description="Convert one E2A response frame to the A2A StreamResponse an A2A client expects. E2A's own "
        "kinds (e2a.chunk, e2a.complete, e2a.error) have no A2A form unless --native; without it they exit 3.",
        add_options=_native_option,
        read=_read,
        here=_to_a2a_stream_here,
        there=_to_a2a_stream_there,
    ),
    Kind(
        name="from-a2a",
        help="A2A SendMessage params -> E2A envelope",
        description="Convert the params of an A2A SendMessage (or SendStreamingMessage) request to the E2A "
        "envelope a gateway routes.",
        add_options=_channel_option,
        read=_read,
        here=_from_a2a_here,
        there=_from_a2a_there,
    ),
    Kind(
        name="to-cloudevents",
        help="E2A records -> CloudEvents",
        description="Send E2A records (one record, or a JSON array of them) as CloudEvents 1.0, one event per "
        "record with the record's wire JSON as data. Formats: structured and http and kafka write one event per "
        "line (http/kafka as {headers, body|value}); batch writes one JSON array; protobuf and protobuf-batch "
        "write io.cloudevents.v1.CloudEvent / CloudEventBatch bytes.",
        add_options=_to_cloudevents_options,
        read=_read_records,
        here=_to_cloudevents_here,
        there=_to_cloudevents_there,
    ),
    Kind(
        name="from-cloudevents",
        help="CloudEvents -> E2A records",
        description="Read CloudEvents carrying E2A records (in --format, as to-cloudevents writes them) and print "
        "the record, or a JSON array of records when there are several. Attributes that contradict the record "
        "in data are refused, naming the attribute.",
        add_options=_format_option,
        read=_read_events,
        here=_from_cloudevents_here,
        there=_from_cloudevents_there,
    ),
)


def _run(kind: Kind[Any], args: argparse.Namespace) -> int:
    given = kind.read(args)
    if args.server:
        with connect(args) as client:
            return _answer(kind.there(client, given, args))
    return _answer(kind.here(given, args))


def add_parser(commands: Any) -> None:
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
    add_setting_options(common, ClientSettings, "token_env")
    common.add_argument("--tls-ca", type=Path, help="CA certificate (PEM) to reach --server over TLS")
    for kind in KINDS:
        parser = kinds.add_parser(kind.name, parents=[common], help=kind.help, description=kind.description)
        kind.add_options(parser)
        parser.set_defaults(run=lambda args, kind=kind: _run(kind, args))

"""The E2A records: request ``E2AEnvelope`` and response ``E2AResponse`` (spec sections 4 and 12).

The classes keep the dict semantics of the protocol document (``params`` and ``body`` are plain
dicts) and read the legacy shapes of its sections 9-11 in ``from_dict``. Values whose JSON type the
protocol does not allow raise an ``E2ATypeError`` / ``E2AValueError`` naming the field, instead of
being coerced into something else.

The fields are declared once, in the schema: each record class extends the dataclass of its fields
that ``make gen`` writes from it (``model.generated_fields``). ``FIELDS`` (see ``model.fields``) joins
that dataclass and the protobuf descriptor's options, and ``to_dict``, ``from_dict`` and the
protobuf codec work from that table. Only the legacy readers (``model.legacy``, bound by the name
the schema gives them) are written per field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Self, TypeVar

from google.protobuf.message import Message

from e2a.v1 import e2a_pb2
from e2a_grpc import jsontext
from e2a_grpc.errors import E2AValueError
from e2a_grpc.model import legacy, proto, readers
from e2a_grpc.model.fields import Kind, RecordField, record_fields
from e2a_grpc.model.generated_fields import EnvelopeFields, ResponseFields
from e2a_grpc.model.parts import E2AAuth, E2AProvenance


def utc_now_iso() -> str:
    """The current UTC time as an RFC 3339 string."""
    return datetime.now(UTC).isoformat()


# How ``from_dict`` reads a present key of each kind (an absent key gets the field's default).
_READERS: dict[Kind, Callable[[Any, str], Any]] = {
    Kind.TEXT: readers.text,
    Kind.PLAIN_TEXT: readers.required_text,
    Kind.FLAG: readers.flag,
    Kind.INTEGER: readers.integer,
    Kind.TEXT_LIST: readers.text_list,
    Kind.OBJECT: readers.json_object,
    Kind.OPTIONAL_OBJECT: readers.optional_json_object,
    Kind.JSONRPC_ID: readers.jsonrpc_id,
    Kind.ORIGIN: readers.identity_origin,
    Kind.PROVENANCE: lambda value, path: E2AProvenance.from_dict(value, path),
    Kind.AUTH: lambda value, path: None if value is None else E2AAuth.from_dict(value, path),
}
# How ``to_dict`` copies an attribute of each kind into the plain-dict form; other kinds are immutable.
_COPIERS: dict[Kind, Callable[[Any], Any]] = {
    Kind.TEXT_LIST: list,
    Kind.OBJECT: dict,
    Kind.OPTIONAL_OBJECT: lambda value: None if value is None else dict(value),
    Kind.ORIGIN: str,  # an IdentityOrigin member (or its value) as the plain string
    Kind.PROVENANCE: E2AProvenance.to_dict,
    Kind.AUTH: lambda auth: None if auth is None else auth.to_dict(),
}

# How ``to_json`` hands an attribute of each kind to ``jsontext.dumps``: as ``to_dict`` would, but
# without copying what is already a plain dict or list (only read, never kept).
_PLAIN: dict[Kind, Callable[[Any], Any]] = {
    **_COPIERS,
    Kind.TEXT_LIST: lambda value: value if type(value) is list else list(value),
    Kind.OBJECT: lambda value: value if type(value) is dict else dict(value),
    Kind.OPTIONAL_OBJECT: lambda value: value if value is None or type(value) is dict else dict(value),
}

# The types of values that the reader of each kind returns unchanged (and the field defaults have):
# ``from_dict`` takes such a value without calling the reader.
_TAKEN_AS_IS: dict[Kind, frozenset[type]] = {
    Kind.TEXT: frozenset({str, type(None)}),
    Kind.PLAIN_TEXT: frozenset({str}),
    Kind.FLAG: frozenset({bool}),
    Kind.INTEGER: frozenset({int}),
}

LegacyReader = Callable[[dict[str, Any]], Any]

# For ``from_json``'s canonical form (see ``_compile_canonical_reader``): per kind, the statements
# that take the value ``{v}`` as ``to_dict`` writes it, or return None for any other value.
_CANONICAL: dict[Kind, str] = {
    Kind.TEXT: "if {v} is not None and type({v}) is not str: return None",
    Kind.PLAIN_TEXT: "if type({v}) is not str: return None",
    Kind.FLAG: "if type({v}) is not bool: return None",
    Kind.INTEGER: "if type({v}) is not int: return None",
    Kind.TEXT_LIST: "if type({v}) is not list or {v} and not all(type(item) is str for item in {v}): return None",
    Kind.OBJECT: "if type({v}) is not dict: return None",
    Kind.OPTIONAL_OBJECT: "if {v} is not None and type({v}) is not dict: return None",
    Kind.JSONRPC_ID: "if {v} is not None and type({v}) not in jsonrpc_id_types: return None",
    Kind.ORIGIN: "{v} = origins.get({v}) if type({v}) is str else None\n    if {v} is None: return None",
    Kind.PROVENANCE: "{v} = provenance({v})\n    if {v} is None: return None",
    Kind.AUTH: "if {v} is not None and ({v} := auth({v})) is None: return None",
}
_CANONICAL_NAMESPACE: dict[str, Any] = {
    "jsonrpc_id_types": (str, int, float),
    "origins": readers.ORIGINS,
    "provenance": E2AProvenance.from_canonical,
    "auth": E2AAuth.from_canonical,
}


def _reader(item: RecordField) -> Callable[[Any, str], Any]:
    """How ``from_dict`` reads a present key of this field.

    A null for a field that is never null (an enum or a string with a default) reads as the field's
    default, as protobuf's JSON mapping reads null; the other kinds' readers decide what null means.
    """
    read = _READERS[item.kind]
    if item.kind not in (Kind.ORIGIN, Kind.PLAIN_TEXT):
        return read
    default = item.default
    return lambda value, path: default if value is None else read(value, path)


def _legacy_reader(item: RecordField) -> LegacyReader:
    """The reader in ``model.legacy`` that the schema names for this field."""
    try:
        return legacy.READERS[item.legacy_reader]
    except KeyError:
        raise TypeError(
            f"{item.descriptor.full_name}: no legacy reader {item.legacy_reader!r} in model.legacy"
        ) from None


def _compile_dict_reader(
    fields: tuple[tuple[str, LegacyReader | None, Callable[[Any, str], Any], Any, Any], ...],
    as_is: tuple[tuple[str, frozenset[type], Any], ...],
) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """``_read_dict``'s common case as one function written for the record class, as ``dataclasses``
    writes ``__init__``: None when a value of an ``as_is`` field is not of a type its reader returns
    unchanged; else those values taken without a call, the other fields read by their readers in
    field order, and the attributes in one dict display. A loop over the field table costs twice
    as much: most of the time of reading a record is the interpreter's work per field.
    """
    namespace: dict[str, Any] = {}
    lines = ["def read(data):", "    get = data.get"]
    taken = {name for name, _, _ in as_is}
    for index, (name, types, default) in enumerate(as_is):
        namespace[f"types_{index}"], namespace[f"default_{index}"] = types, default
        lines += [f"    v_{name} = get({name!r}, default_{index})", f"    if type(v_{name}) not in types_{index}:"]
        lines.append("        return None")
    for index, (name, legacy_reader, reader, default, factory) in enumerate(fields):
        if name in taken:
            continue
        if legacy_reader is not None:
            namespace[f"legacy_{index}"] = legacy_reader
            lines.append(f"    v_{name} = legacy_{index}(data)")
            continue
        namespace[f"reader_{index}"] = reader
        namespace[f"absent_{index}"] = default if factory is None else factory
        absent = f"absent_{index}" if factory is None else f"absent_{index}()"
        lines.append(f"    v_{name} = reader_{index}(data[{name!r}], {name!r}) if {name!r} in data else {absent}")
    lines.append("    return {" + ", ".join(f"{name!r}: v_{name}" for name, *_ in fields) + "}")
    exec("\n".join(lines), namespace)  # the text is built above from the field table alone
    read: Callable[[dict[str, Any]], dict[str, Any] | None] = namespace["read"]
    return read


def _compile_canonical_reader(
    fields: tuple[RecordField, ...], legacy_readers: Mapping[str, LegacyReader]
) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """A reader of the canonical form of a record dict, compiled as ``_compile_dict_reader`` is:
    exactly what ``to_dict`` writes (every field's key, in field order, and no other key; each value
    of the type written), or None for any other dict, which ``_read_dict`` then reads or rejects.

    It takes the values themselves (for ``from_json``, which owns the dict it parsed: nothing is
    copied), so the record they make writes the dict back unchanged. A legacy reader is called only
    if a fallback key of it is a field or it strips strings, and must return the value unchanged.
    """
    names = tuple(item.name for item in fields)
    namespace = {**_CANONICAL_NAMESPACE, "names": names}
    unpacked = ", ".join(f"v_{name}" for name in names)
    lines = ["def read(data):", "    if tuple(data) != names: return None", f"    ({unpacked},) = data.values()"]
    for index, item in enumerate(fields):
        value = f"v_{item.name}"
        lines.append("    " + _CANONICAL[item.kind].format(v=value))
        read = legacy_readers.get(item.name)
        if read is None:
            continue
        namespace[f"legacy_{index}"] = read
        if not set(item.fallback_keys).isdisjoint(names):
            lines.append(f"    if legacy_{index}(data) is not {value}: return None")
        elif read in legacy.NORMALIZING:  # null stays null: it is not a string
            lines.append(f"    if {value} is not None and legacy_{index}(data) is not {value}: return None")
    lines.append("    return {" + ", ".join(f"{name!r}: v_{name}" for name in names) + "}")
    exec("\n".join(lines), namespace)  # the text is built above from the field table alone
    read_canonical: Callable[[dict[str, Any]], dict[str, Any] | None] = namespace["read"]
    return read_canonical


Msg = TypeVar("Msg", bound=Message)


class _Record(Generic[Msg]):
    """Everything envelopes and responses do alike, from their field table; ``Msg`` is the message type."""

    timestamp: str | None
    FIELDS: ClassVar[tuple[RecordField, ...]]
    #: Fields read from the whole input dict (current key, then legacy keys) instead of one key:
    #: those the schema names a legacy reader for, bound by that name.
    LEGACY_READERS: ClassVar[dict[str, LegacyReader]]
    _NAMES: ClassVar[tuple[str, ...]]
    _COPIED: ClassVar[tuple[tuple[str, Callable[[Any], Any]], ...]]
    _PLAIN: ClassVar[tuple[tuple[str, Callable[[Any], Any]], ...]]
    # Per field: name, legacy reader or None, reader of a present key, default, default factory or None.
    _FROM_DICT: ClassVar[tuple[tuple[str, LegacyReader | None, Callable[[Any, str], Any], Any, Any], ...]]
    _TEMPLATE: ClassVar[dict[str, None]]
    #: ``_read_dict``'s common case, compiled per class (see ``_compile_dict_reader``).
    _READ_TAKING_AS_IS: ClassVar[Callable[[dict[str, Any]], dict[str, Any] | None]]
    #: ``from_json``'s reader of a dict in canonical form (see ``_compile_canonical_reader``).
    _READ_CANONICAL: ClassVar[Callable[[dict[str, Any]], dict[str, Any] | None]]
    #: How the attributes become the protobuf message and back: a ``proto.Codec[Msg]``, which each
    #: record class declares (a ClassVar cannot name a type variable).
    CODEC: ClassVar[proto.Codec[Any]]
    #: What an error about the whole input calls it.
    _DOCUMENT: ClassVar[str]

    @classmethod
    def _bind(cls, message_type: type[Msg]) -> None:
        """Derive the class's tables from its dataclass fields and its message type."""
        cls.FIELDS = record_fields(cls, message_type)
        cls.LEGACY_READERS = {item.name: _legacy_reader(item) for item in cls.FIELDS if item.legacy_reader}
        cls._NAMES = tuple(item.name for item in cls.FIELDS)
        cls._COPIED = tuple((item.name, _COPIERS[item.kind]) for item in cls.FIELDS if item.kind in _COPIERS)
        cls._PLAIN = tuple((item.name, _PLAIN[item.kind]) for item in cls.FIELDS if item.kind in _PLAIN)
        cls._FROM_DICT = tuple(
            (item.name, cls.LEGACY_READERS.get(item.name), _reader(item), item.default, item.factory)
            for item in cls.FIELDS
        )
        as_is = [item for item in cls.FIELDS if item.kind in _TAKEN_AS_IS and item.name not in cls.LEGACY_READERS]
        cls._TEMPLATE = dict.fromkeys(cls._NAMES)
        # Per field without a legacy reader whose kind is in _TAKEN_AS_IS: name, types taken as is, default.
        taken_as_is = tuple((item.name, _TAKEN_AS_IS[item.kind], item.default) for item in as_is)
        cls._READ_TAKING_AS_IS = _compile_dict_reader(cls._FROM_DICT, taken_as_is)
        cls._READ_CANONICAL = _compile_canonical_reader(cls.FIELDS, cls.LEGACY_READERS)
        cls.CODEC = proto.codec(message_type, cls.FIELDS)

    def to_dict(self) -> dict[str, Any]:
        """Every field in protocol order, as plain JSON values (nested records as dicts)."""
        values = self._attributes()
        for name, copy in self._COPIED:
            values[name] = copy(values[name])
        return values

    def _attributes(self) -> dict[str, Any]:
        """A copy of the fields' values, in field order."""
        values = self.__dict__.copy()  # the attributes, in field order: __init__ and from_proto set them so
        if len(values) != len(self._NAMES):  # an attribute set on the instance besides the fields
            values = {name: values[name] for name in self._NAMES}
        return values

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Read a record dict, including the legacy keys of spec sections 9-11."""
        record = cls.__new__(cls)
        # Every field is set, in field order: what __init__ would do, without its 29 keyword arguments.
        record.__dict__.update(cls._read_dict(data))
        return record

    @classmethod
    def _read_dict(cls, data: Any) -> dict[str, Any]:
        """The attributes of the record ``data`` reads as, in field order."""
        readers.require_object(data, cls._DOCUMENT)
        values = cls._READ_TAKING_AS_IS(data)
        # A value that its reader would change: every field through its reader.
        return cls._read_every_field(data) if values is None else values

    @classmethod
    def _read_every_field(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Every field of ``data`` read by its reader, in field order, so that an error names the
        first field at fault."""
        values = cls._TEMPLATE.copy()  # every field, in field order, sized once
        for name, legacy_reader, reader, default, factory in cls._FROM_DICT:
            if legacy_reader is not None:
                values[name] = legacy_reader(data)
            elif name in data:
                values[name] = reader(data[name], name)
            else:
                values[name] = default if factory is None else factory()
        return values

    def to_proto(self) -> Msg:
        """The protobuf message (``e2a.v1.E2AEnvelope`` / ``e2a.v1.E2AResponse``)."""
        message: Msg = proto.encode(self.__dict__, self.CODEC)  # CODEC is this class's Codec[Msg]
        return message

    @classmethod
    def from_proto(cls, message: Msg) -> Self:
        # The codec yields the attributes already typed and in field order: no re-validation.
        record = cls.__new__(cls)
        record.__dict__.update(proto.decode(message, cls.CODEC))
        return record

    def to_bytes(self) -> bytes:
        """Binary protobuf encoding of ``to_proto()``."""
        return self.to_proto().SerializeToString()

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """The record binary protobuf holds; raises as ``from_proto`` does, naming the field at fault."""
        return cls.from_proto(proto.parse(cls.CODEC.message_type, data))

    def to_json(self) -> str:
        """The E2A wire JSON: ``to_dict()`` as compact JSON text."""
        return jsontext.dumps(self._plain(self._attributes()))

    @classmethod
    def _plain(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Attributes (changed in place) as ``to_dict()`` has them, for writing only: nothing is copied."""
        for name, plain in cls._PLAIN:
            values[name] = plain(values[name])
        return values

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        if isinstance(text, (bytes, bytearray)):
            try:
                text = text.decode()
            except UnicodeDecodeError as exc:
                raise E2AValueError("$", f"JSON text is not UTF-8: {exc}") from None
        data, values = cls._canonical_values(text)
        if values is None:
            values = cls._read_dict(jsontext.loads(text, "$") if data is None else data)
        record = cls.__new__(cls)
        record.__dict__.update(values)
        return record

    @classmethod
    def from_canonical_json(cls, text: str) -> Self | None:
        """The record of ``text`` when it is in canonical form (exactly what ``to_json`` writes), else
        None: ``from_json`` reads any other text, or says what is wrong with it. For a reader with a
        general path of its own to fall back on."""
        _, values = cls._canonical_values(text)
        if values is None:
            return None
        record = cls.__new__(cls)
        record.__dict__.update(values)
        return record

    @classmethod
    def _canonical_values(cls, text: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The object ``text`` holds when it is written as ``dumps`` writes it (else None), and the
        record's attributes when that object is also in the record's canonical form (else None)."""
        data = jsontext.canonical_object(text)
        return data, None if data is None else cls._READ_CANONICAL(data)

    def ensure_timestamp(self) -> None:
        """Set ``timestamp`` to now (RFC 3339 UTC) if it is unset."""
        if self.timestamp is None:
            self.timestamp = utc_now_iso()


class E2AEnvelope(EnvelopeFields, _Record[e2a_pb2.E2AEnvelope]):
    """A request from the gateway to an agent server (spec section 4); its fields are declared in
    ``model.generated_fields``, generated from the schema."""

    CODEC: ClassVar[proto.Codec[e2a_pb2.E2AEnvelope]]
    _DOCUMENT: ClassVar[str] = "envelope"


class E2AResponse(ResponseFields, _Record[e2a_pb2.E2AResponse]):
    """One outbound record from an agent; each streaming frame is one (spec section 12). Its fields
    are declared in ``model.generated_fields``, generated from the schema."""

    CODEC: ClassVar[proto.Codec[e2a_pb2.E2AResponse]]
    _DOCUMENT: ClassVar[str] = "response"


E2AEnvelope._bind(e2a_pb2.E2AEnvelope)
E2AResponse._bind(e2a_pb2.E2AResponse)

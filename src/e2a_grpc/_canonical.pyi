# A field's check: (wire type, action, argument). The argument is None, an int mask of the enum
# values allowed (ACTION_ENUM), or (plan, key field number or 0) (ACTION_MESSAGE: with a key, a repeated
# field whose elements' keys must be distinct; with 0, a singular message, which must occur once).
FieldCheck = tuple[int, int, object]
# (fields indexed by field number, mask of required field numbers, mask of which one must be present)
WirePlan = tuple[tuple[FieldCheck | None, ...], int, int]

WIRE_VARINT: int
WIRE_I64: int
WIRE_LEN: int
WIRE_I32: int
ACTION_SKIP: int
ACTION_OBJECT: int
ACTION_OPTIONAL_OBJECT: int
ACTION_ENUM: int
ACTION_MESSAGE: int
ACTION_NONEMPTY_TEXT: int
ACTION_FINITE_DOUBLE: int
MAX_FIELD_NUMBER: int

def is_canonical_object(text: str, /) -> bool: ...
def canonical_object_has_key(text: str, key: str, /) -> bool | None: ...
def message_round_trips(data: bytes, plan: WirePlan, /) -> bool: ...
def floats_finite(value: object, /) -> bool | None: ...

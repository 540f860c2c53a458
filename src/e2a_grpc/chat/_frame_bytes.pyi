# The pieces of a text delta frame, in the order the C source's enum names them: the frame's tag, the
# fields before the response id's hex digits, those before the sequence, the sequence's tag, those before
# the timestamp, those before the body's size, the body's JSON before and after the string, the fields
# after the body, and the number of hex digits.
TextLayout = tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, int]

def text_chunk(layout: TextLayout, sequence: int, timestamp: bytes, text: object, /) -> bytes | None: ...
def utc_timestamp() -> bytes: ...

//! Protobuf decoding as protobuf's own runtimes do it (the Python reference's upb, Go's
//! protobuf-go): a known field that arrives with another wire type than its declared one is
//! taken as an unknown field and skipped, where prost rejects the whole message. [`strip`]
//! removes such fields, in the nested messages too, before prost decodes the bytes.

/// The messages of `e2a.v1` that a record holds.
#[derive(Clone, Copy)]
pub enum Schema {
    Envelope,
    Response,
    Provenance,
    JsonRpcId,
    Auth,
    Header,
}

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

impl Schema {
    /// The wire type of field `number` and, for a message field, its message; `None` for a
    /// field the message does not declare.
    fn field(self, number: u64) -> Option<(u8, Option<Schema>)> {
        let declared = match self {
            Schema::Envelope => match number {
                2 => return Some((LEN, Some(Schema::Provenance))),
                4 => return Some((LEN, Some(Schema::JsonRpcId))),
                26 => return Some((LEN, Some(Schema::Auth))),
                11 | 24 => return Some((VARINT, None)),
                _ => 1..=29,
            },
            Schema::Response => match number {
                9 => return Some((LEN, Some(Schema::Provenance))),
                11 => return Some((LEN, Some(Schema::JsonRpcId))),
                4 | 5 | 17 | 18 => return Some((VARINT, None)),
                _ => 1..=28,
            },
            Schema::JsonRpcId => match number {
                2 => return Some((VARINT, None)),
                3 => return Some((FIXED64, None)),
                _ => 1..=4,
            },
            Schema::Provenance => 1..=4,
            Schema::Auth => match number {
                5 => return Some((LEN, Some(Schema::Header))),
                _ => 1..=6,
            },
            Schema::Header => 1..=2,
        };
        declared.contains(&number).then_some((LEN, None))
    }
}

fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Skips the value of a field with wire type `wire` at `pos` (a group up to its end); `None`
/// if the data is malformed.
fn skip(data: &[u8], pos: &mut usize, wire: u8, number: u64) -> Option<()> {
    let size = match wire {
        VARINT => return varint(data, pos).map(drop),
        FIXED64 => 8,
        FIXED32 => 4,
        LEN => usize::try_from(varint(data, pos)?).ok()?,
        START_GROUP => loop {
            let key = varint(data, pos)?;
            let (inner_wire, inner_number) = ((key & 7) as u8, key >> 3);
            if inner_wire == END_GROUP {
                return (inner_number == number).then_some(());
            }
            skip(data, pos, inner_wire, inner_number)?;
        },
        _ => return None,
    };
    let end = pos.checked_add(size).filter(|&end| end <= data.len())?;
    *pos = end;
    Some(())
}

/// `data` without the declared fields of `schema` that carry another wire type. Malformed data
/// comes back as it is, for the decoder to report.
pub fn strip(data: &[u8], schema: Schema) -> Vec<u8> {
    strip_message(data, schema).unwrap_or_else(|| data.to_vec())
}

fn strip_message(data: &[u8], schema: Schema) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len());
    let mut pos = 0;
    while pos < data.len() {
        let start = pos;
        let key = varint(data, &mut pos)?;
        let (wire, number) = ((key & 7) as u8, key >> 3);
        let value_start = pos;
        skip(data, &mut pos, wire, number)?;
        match schema.field(number) {
            Some((declared, _)) if declared != wire => {} // an unknown field: dropped
            Some((LEN, Some(inner))) => {
                let mut len_end = value_start;
                varint(data, &mut len_end)?;
                let stripped = strip_message(&data[len_end..pos], inner)?;
                out.extend_from_slice(&data[start..value_start]);
                push_varint(&mut out, stripped.len() as u64);
                out.extend_from_slice(&stripped);
            }
            _ => out.extend_from_slice(&data[start..pos]),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatched_wire_types_are_dropped() {
        // Envelope field 4 (jsonrpc_id) holding JsonRpcId field 1 (a string) as fixed32.
        let data = [0x22, 0x05, 0x0d, 0x03, 0x31, 0x32, 0x78];
        assert_eq!(strip(&data, Schema::Envelope), [0x22, 0x00]);
        // Response field 4 (sequence) as a length-delimited value, then field 5 = 1.
        let data = [0x22, 0x01, 0x61, 0x28, 0x01];
        assert_eq!(strip(&data, Schema::Response), [0x28, 0x01]);
        // A group in a declared field; an undeclared field is kept.
        let data = [0x0b, 0x08, 0x01, 0x0c, 0xf8, 0x01, 0x05];
        assert_eq!(strip(&data, Schema::Envelope), [0xf8, 0x01, 0x05]);
        // Truncated data is left for the decoder.
        assert_eq!(
            strip(&[0x0a, 0x05, 0x31], Schema::Envelope),
            [0x0a, 0x05, 0x31]
        );
    }
}

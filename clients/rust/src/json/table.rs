//! Reading and writing records by looping over their field tables (`fields`, generated from the
//! schema's `(e2a.v1.json)` options by `codegen/e2a_tables.py`): per field, its kind's reader or
//! writer, or the legacy reader the schema names. A new field of a known kind needs no code here.

use super::fields::Slot;
use super::read::{Reader, Text};
use super::write::Writer;
use super::FieldError;
use crate::v1::{E2aAuth, E2aProvenance, JsonRpcId};

/// How a field of message `M` is got and set, by its JSON kind (`e2a.v1.JsonKind`).
pub(crate) enum Access<M: 'static> {
    /// A string or null.
    Text(fn(&M) -> &Option<String>, fn(&mut M) -> &mut Option<String>),
    /// A string that is never null.
    PlainText(fn(&M) -> &String, fn(&mut M) -> &mut String),
    Flag(fn(&M) -> &bool, fn(&mut M) -> &mut bool),
    Integer(fn(&M) -> &i64, fn(&mut M) -> &mut i64),
    TextList(fn(&M) -> &Vec<String>, fn(&mut M) -> &mut Vec<String>),
    /// A free-form object as JSON text, `""` meaning `{}`.
    Object(fn(&M) -> &String, fn(&mut M) -> &mut String),
    /// A free-form object or null as JSON text, `""` meaning null.
    OptionalObject(fn(&M) -> &String, fn(&mut M) -> &mut String),
    JsonrpcId(
        fn(&M) -> &Option<JsonRpcId>,
        fn(&mut M) -> &mut Option<JsonRpcId>,
    ),
    /// An enum by the `json_value` of its values.
    Enum(fn(&M) -> &i32, fn(&mut M) -> &mut i32),
    Provenance(
        fn(&M) -> &Option<E2aProvenance>,
        fn(&mut M) -> &mut Option<E2aProvenance>,
    ),
    Auth(
        fn(&M) -> &Option<E2aAuth>,
        fn(&mut M) -> &mut Option<E2aAuth>,
    ),
}

/// A legacy reader: reads a field from the whole document (its own key, then legacy keys).
pub(crate) type LegacyReader = fn(&mut Reader<'_>, &Field) -> Result<Value, FieldError>;

/// What a field's reader gives, to be set into the message.
pub(crate) enum Value {
    Text(Option<String>),
    /// A plain text, or the JSON text of a free-form object.
    String(String),
    Flag(bool),
    Integer(i64),
    TextList(Vec<String>),
    JsonrpcId(Option<JsonRpcId>),
    Enum(i32),
    Provenance(E2aProvenance),
    Auth(Option<E2aAuth>),
}

/// What a reader knows of its field, apart from how it is accessed.
pub(crate) struct Field {
    pub(crate) slot: Slot,
    /// The value of an absent key (an enum's `json_value`); `""` is the kind's own default.
    pub(crate) default: &'static str,
    pub(crate) enum_values: &'static [(&'static str, i32)],
    /// Members of a fallback object never merged into the field.
    pub(crate) internal: &'static [&'static str],
}

/// One field of a record's table.
pub(crate) struct FieldSpec<M: 'static> {
    pub(crate) slot: Slot,
    pub(crate) default: &'static str,
    /// The name of an enum field's type (for errors), `""` for other kinds.
    pub(crate) enum_name: &'static str,
    pub(crate) enum_values: &'static [(&'static str, i32)],
    pub(crate) legacy: Option<LegacyReader>,
    pub(crate) internal: &'static [&'static str],
    pub(crate) access: Access<M>,
}

impl<M> FieldSpec<M> {
    fn field(&self) -> Field {
        Field {
            slot: self.slot,
            default: self.default,
            enum_values: self.enum_values,
            internal: self.internal,
        }
    }

    /// Sets the field of `m` to what its reader gave.
    fn set(&self, m: &mut M, value: Value) -> Result<(), FieldError> {
        match (&self.access, value) {
            (Access::Text(_, set), Value::Text(v)) => *set(m) = v,
            (
                Access::PlainText(_, set) | Access::Object(_, set) | Access::OptionalObject(_, set),
                Value::String(v),
            ) => *set(m) = v,
            (Access::Flag(_, set), Value::Flag(v)) => *set(m) = v,
            (Access::Integer(_, set), Value::Integer(v)) => *set(m) = v,
            (Access::TextList(_, set), Value::TextList(v)) => *set(m) = v,
            (Access::JsonrpcId(_, set), Value::JsonrpcId(v)) => *set(m) = v,
            (Access::Enum(_, set), Value::Enum(v)) => *set(m) = v,
            (Access::Provenance(_, set), Value::Provenance(v)) => *set(m) = Some(v),
            (Access::Auth(_, set), Value::Auth(v)) => *set(m) = v,
            _ => {
                return Err(FieldError::new(
                    self.slot.name(),
                    "the field's reader gave a value of another kind than the field's",
                ))
            }
        }
        Ok(())
    }
}

/// Reads a record's wire JSON into its message, field by field in field order, so that the first
/// error is the one Python reports; `what` names the record in the error for a non-object.
pub(crate) fn read_record<M: Default>(
    text: &[u8],
    what: &str,
    table: &[FieldSpec<M>],
) -> Result<M, FieldError> {
    let doc = Text::read(text, what)?;
    let mut d = doc.reader();
    let mut m = M::default();
    for spec in table {
        let field = spec.field();
        let value = match spec.legacy {
            Some(read) => read(&mut d, &field)?,
            None => read_value(&mut d, &spec.access, &field)?,
        };
        spec.set(&mut m, value)?;
    }
    d.finish()?;
    Ok(m)
}

/// Reads the key of `field` by its kind.
fn read_value<M>(
    d: &mut Reader<'_>,
    access: &Access<M>,
    field: &Field,
) -> Result<Value, FieldError> {
    let s = field.slot;
    Ok(match access {
        Access::Text(..) if d.raw(s).is_none() && !field.default.is_empty() => {
            Value::Text(Some(field.default.to_owned()))
        }
        Access::Text(..) => Value::Text(d.text(s)?),
        Access::PlainText(..) => Value::String(d.plain_text(s, field.default)?),
        Access::Flag(..) => Value::Flag(d.flag(s)?),
        Access::Integer(..) => Value::Integer(d.integer(s)?),
        Access::TextList(..) => Value::TextList(d.text_list(s)?),
        Access::Object(..) => Value::String(d.object_field(s)?),
        Access::OptionalObject(..) => Value::String(d.optional_object(s)?),
        Access::JsonrpcId(..) => Value::JsonrpcId(d.jsonrpc_id(s)?),
        Access::Enum(..) => Value::Enum(d.enum_value(field)?),
        Access::Provenance(..) => {
            let (mut provenance, details) = d.provenance(s)?;
            provenance.details = details.map(str::to_owned).unwrap_or_default();
            Value::Provenance(provenance)
        }
        Access::Auth(..) => Value::Auth(d.auth(s)?),
    })
}

/// Writes the wire JSON of `m`: every field of its table, in field order.
pub(crate) fn write_record<M>(m: &M, table: &[FieldSpec<M>]) -> Result<String, FieldError> {
    let free_form = table
        .iter()
        .map(|spec| match spec.access {
            Access::Object(get, _) | Access::OptionalObject(get, _) => get(m).len(),
            Access::Provenance(get, _) => get(m).as_ref().map_or(0, |p| p.details.len()),
            _ => 0,
        })
        .sum();
    let mut w = Writer::new(free_form);
    for spec in table {
        let name = spec.slot.name();
        w.key(name);
        match spec.access {
            Access::Text(get, _) => w.opt_str(get(m).as_deref()),
            Access::PlainText(get, _) => w.str(get(m)),
            Access::Flag(get, _) => w.bool(*get(m)),
            Access::Integer(get, _) => w.int(*get(m)),
            Access::TextList(get, _) => w.string_list(get(m)),
            Access::Object(get, _) => w.object(name, get(m), false, 2),
            Access::OptionalObject(get, _) => w.object(name, get(m), true, 2),
            Access::JsonrpcId(get, _) => w.jsonrpc_id(name, get(m).as_ref()),
            Access::Enum(get, _) => w.enum_value(name, spec, *get(m)),
            Access::Provenance(get, _) => w.provenance(get(m).as_ref()),
            Access::Auth(get, _) => w.auth(get(m).as_ref()),
        }
    }
    w.finish()
}

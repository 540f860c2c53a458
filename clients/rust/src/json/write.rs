//! Writing a message as wire JSON: every field, in field order, compact.

use super::canonical::is_object;
use super::fields::IDENTITY_ORIGIN_VALUES;
use super::normalize::{format_float, push_quoted, py_float_repr, Normalizer, MAX_INT_DIGITS};
use super::read::DEFAULT_SOURCE_PROTOCOL;
use super::table::FieldSpec;
use super::FieldError;
use crate::v1::{json_rpc_id, E2aAuth, E2aProvenance, IdentityOrigin, JsonRpcId};

/// Writes the wire JSON of one record into `buf`, keeping the first error.
pub(crate) struct Writer {
    pub(crate) buf: String,
    pub(crate) err: Option<FieldError>,
}

impl Writer {
    /// A writer whose buffer fits a record with `free_form` bytes of free-form JSON text.
    pub(crate) fn new(free_form: usize) -> Self {
        let mut buf = String::with_capacity(1024 + free_form);
        buf.push('{');
        Writer { buf, err: None }
    }

    fn fail(&mut self, err: FieldError) {
        self.err.get_or_insert(err);
    }

    /// Closes the record's object.
    pub(crate) fn finish(mut self) -> Result<String, FieldError> {
        self.buf.push('}');
        match self.err {
            Some(err) => Err(err),
            None => Ok(self.buf),
        }
    }

    /// Writes the key of the next member of the object being written.
    pub(crate) fn key(&mut self, name: &str) {
        if !self.buf.ends_with('{') {
            self.buf.push(',');
        }
        self.buf.push('"');
        self.buf.push_str(name);
        self.buf.push_str("\":");
    }

    pub(crate) fn str(&mut self, s: &str) {
        push_quoted(&mut self.buf, s);
    }

    pub(crate) fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.str(s),
            None => self.buf.push_str("null"),
        }
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.buf.push_str(if b { "true" } else { "false" });
    }

    pub(crate) fn int(&mut self, i: i64) {
        self.buf.push_str(&i.to_string());
    }

    /// Writes the JSON text of a free-form object field, checked and in canonical form. Empty
    /// text is the field's default: `{}` or, for `agent_ref`, null. `depth` is the level of the
    /// field's object in the document (2 for a record field), which may nest 512 levels.
    pub(crate) fn object(&mut self, path: &str, text: &str, empty_is_null: bool, depth: usize) {
        if text.is_empty() {
            self.buf.push_str(if empty_is_null { "null" } else { "{}" });
            return;
        }
        if self.err.is_some() {
            return;
        }
        let start = self.buf.len();
        let mut n = Normalizer::new(text, path, std::mem::take(&mut self.buf));
        let result = n.document(depth);
        self.buf = n.dst;
        match result {
            Err(err) => self.fail(err),
            Ok(()) if !is_object(&self.buf[start..]) => {
                let err =
                    FieldError::type_error(path, "JSON text of an object", &self.buf[start..]);
                self.fail(err);
            }
            Ok(()) => {}
        }
    }

    pub(crate) fn jsonrpc_id(&mut self, path: &str, id: Option<&JsonRpcId>) {
        match id.and_then(|id| id.kind.as_ref()) {
            None => self.buf.push_str("null"),
            Some(json_rpc_id::Kind::StringValue(s)) => self.str(s),
            Some(json_rpc_id::Kind::IntegerValue(i)) => self.int(*i),
            Some(json_rpc_id::Kind::NumberValue(f)) => {
                if f.is_finite() {
                    self.buf.push_str(&format_float(*f));
                } else {
                    self.fail(FieldError::new(
                        path,
                        format!("number_value {} is not a JSON number", py_float_repr(*f)),
                    ));
                }
            }
            Some(json_rpc_id::Kind::BigIntegerValue(digits)) => match big_int_text(path, digits) {
                Ok(text) => self.buf.push_str(&text),
                Err(err) => self.fail(err),
            },
        }
    }

    /// Writes an enum field as its value's `json_value`; unspecified (0) is the field's default.
    pub(crate) fn enum_value<M>(&mut self, path: &str, spec: &FieldSpec<M>, number: i32) {
        if number == 0 {
            self.str(spec.default);
            return;
        }
        match spec.enum_values.iter().find(|(_, each)| *each == number) {
            Some((json, _)) => self.str(json),
            None => self.fail(FieldError::new(
                path,
                format!("unknown {} value {number}", spec.enum_name),
            )),
        }
    }

    /// Writes the provenance object; an unset one is the default (`source_protocol` "e2a").
    pub(crate) fn provenance(&mut self, p: Option<&E2aProvenance>) {
        let Some(p) = p else {
            self.buf.push_str(concat!(
                "{\"source_protocol\":\"e2a\",\"converter\":null,",
                "\"converted_at\":null,\"details\":{}}"
            ));
            debug_assert_eq!(DEFAULT_SOURCE_PROTOCOL, "e2a");
            return;
        };
        self.buf.push('{');
        self.key("source_protocol");
        self.str(&p.source_protocol);
        self.key("converter");
        self.opt_str(p.converter.as_deref());
        self.key("converted_at");
        self.opt_str(p.converted_at.as_deref());
        self.key("details");
        self.object("provenance.details", &p.details, false, 3);
        self.buf.push('}');
    }

    /// Writes the auth object or null. `extra_headers` becomes an object: a repeated header name
    /// keeps its first position and takes its last value, as a Python dict built from the list
    /// does.
    pub(crate) fn auth(&mut self, auth: Option<&E2aAuth>) {
        let Some(a) = auth else {
            self.buf.push_str("null");
            return;
        };
        self.buf.push('{');
        self.key("method_id");
        self.opt_str(a.method_id.as_deref());
        self.key("bearer_token");
        self.opt_str(a.bearer_token.as_deref());
        self.key("api_key_ref");
        self.opt_str(a.api_key_ref.as_deref());
        self.key("credential_ref");
        self.opt_str(a.credential_ref.as_deref());
        self.key("extra_headers");
        self.buf.push('{');
        let mut last = std::collections::HashMap::new();
        for header in &a.extra_headers {
            last.insert(header.name.as_str(), header.value.as_str());
        }
        for header in &a.extra_headers {
            // Written at the name's first position; later ones are gone from `last`.
            let Some(value) = last.remove(header.name.as_str()) else {
                continue;
            };
            if !self.buf.ends_with('{') {
                self.buf.push(',');
            }
            self.str(&header.name);
            self.buf.push(':');
            self.str(value);
        }
        self.buf.push('}');
        self.key("_meta");
        self.object("auth._meta", &a.meta, false, 3);
        self.buf.push('}');
    }

    pub(crate) fn string_list(&mut self, list: &[String]) {
        self.buf.push('[');
        for (i, s) in list.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            self.str(s);
        }
        self.buf.push(']');
    }
}

impl IdentityOrigin {
    /// The wire JSON name of an origin (`"user"`): its `json_value` in the schema; unspecified has
    /// none and is written as the record's default.
    pub fn as_wire_str(self) -> &'static str {
        IDENTITY_ORIGIN_VALUES
            .iter()
            .find(|(_, number)| *number == self as i32)
            .map_or("", |(json, _)| json)
    }
}

/// The canonical decimal text of a protobuf `big_integer_value`.
pub(crate) fn big_int_text(path: &str, digits: &str) -> Result<String, FieldError> {
    let (negative, unsigned) = match digits.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, digits),
    };
    if unsigned.is_empty() || !unsigned.bytes().all(|c| c.is_ascii_digit()) {
        return Err(FieldError::new(
            path,
            format!("big_integer_value {digits:?} is not a decimal integer"),
        ));
    }
    if unsigned.len() > MAX_INT_DIGITS {
        return Err(FieldError::new(
            path,
            format!(
                "big_integer_value has {} digits, more than {MAX_INT_DIGITS}",
                unsigned.len()
            ),
        ));
    }
    let trimmed = unsigned.trim_start_matches('0');
    Ok(match (negative, trimmed) {
        (_, "") => "0".to_owned(),
        (true, t) => format!("-{t}"),
        (false, t) => t.to_owned(),
    })
}

//! Reading a record's wire JSON into its protobuf message.

use super::canonical::{
    decode_string, first_lone_surrogate, int_string, is_bool, is_float, is_integer, is_null,
    is_number, is_object, is_py_space, is_string, is_zero, items, key_name, member, members,
    py_float_text, truthy, ObjectBuilder,
};
use super::fields::{Slot, SLOT_NAMES};
use super::normalize::Normalizer;
use super::table::{Field, Value};
use super::FieldError;
use crate::v1::{json_rpc_id, E2aAuth, E2aProvenance, HttpHeader, JsonRpcId};

type Result<T> = std::result::Result<T, FieldError>;

impl Slot {
    /// The key of the slot.
    pub(crate) fn name(self) -> &'static str {
        SLOT_NAMES[self as usize]
    }
}

const NUM_SLOTS: usize = SLOT_NAMES.len();

pub(crate) const DEFAULT_SOURCE_PROTOCOL: &str = "e2a";

/// A record's JSON object in canonical text, and where each known key's value is in it (the
/// last value of a repeated key, as Python's `json` module keeps).
pub(crate) struct Text {
    text: String,
    spans: [Option<(usize, usize)>; NUM_SLOTS],
}

impl Text {
    /// Reads a whole record document; `what` names it in the error for a non-object.
    pub(crate) fn read(data: &[u8], what: &str) -> Result<Text> {
        let src = std::str::from_utf8(data).map_err(|err| {
            FieldError::new(
                "$",
                format!(
                    "JSON text is not UTF-8: invalid byte at offset {}",
                    err.valid_up_to()
                ),
            )
        })?;
        let mut n = Normalizer::new(src, "$", String::with_capacity(src.len()));
        n.skip_space();
        if n.peek() != Some(b'{') {
            n.document(1)?;
            return Err(FieldError::type_error(what, "an object", &n.dst));
        }
        let mut spans = [None; NUM_SLOTS];
        n.pos += 1;
        n.skip_space();
        if n.peek() == Some(b'}') {
            n.pos += 1;
        } else {
            loop {
                let (key_start, key_end) = n.key()?;
                let slot = Slot::of(&n.dst[key_start + 1..key_end - 1]);
                n.dst.truncate(key_start);
                let value_start = n.dst.len();
                n.value(2)?; // the record's object is level 1
                if let Some(slot) = slot {
                    spans[slot as usize] = Some((value_start, n.dst.len()));
                }
                n.skip_space();
                match n.peek() {
                    None => return Err(n.syntax_error("unexpected end of text in an object")),
                    Some(b'}') => {
                        n.pos += 1;
                        break;
                    }
                    Some(b',') => n.pos += 1,
                    Some(_) => {
                        return Err(n.syntax_error(format!(
                            "unexpected character at offset {}, expecting ',' or '}}'",
                            n.pos
                        )))
                    }
                }
            }
        }
        n.finish()?;
        Ok(Text { text: n.dst, spans })
    }

    /// A reader of the fields.
    pub(crate) fn reader(&self) -> Reader<'_> {
        let mut values = [None; NUM_SLOTS];
        for (value, span) in values.iter_mut().zip(&self.spans) {
            *value = span.map(|(start, end)| &self.text[start..end]);
        }
        Reader {
            values,
            encode_err: None,
            build_err: None,
        }
    }
}

/// Reads the fields of a record in field order, so that the first error is the one Python
/// reports.
pub(crate) struct Reader<'t> {
    values: [Option<&'t str>; NUM_SLOTS],
    // The errors Python reports only when it builds the protobuf message, after every field has
    // been read: the first from auth (whose submessage is built first), else the first from the
    // other fields (a lone surrogate in a string, a sequence beyond int64).
    encode_err: Option<FieldError>,
    build_err: Option<FieldError>,
}

/// A free-form object's canonical text as a message field holds it: `{}` is `""`.
fn object_text(value: Option<&str>) -> String {
    value.map(str::to_owned).unwrap_or_default()
}

fn empty_as_none(object: String) -> Option<String> {
    (object.len() > 2).then_some(object)
}

impl<'t> Reader<'t> {
    /// The canonical text of a key; `None` if absent.
    pub(crate) fn raw(&self, s: Slot) -> Option<&'t str> {
        self.values[s as usize]
    }

    /// The canonical text of a key; `None` if absent or null.
    fn value(&self, s: Slot) -> Option<&'t str> {
        self.raw(s).filter(|v| !is_null(v))
    }

    fn defer_encode(&mut self, err: FieldError) {
        self.encode_err.get_or_insert(err);
    }

    pub(crate) fn defer_build(&mut self, err: FieldError) {
        self.build_err.get_or_insert(err);
    }

    /// The error Python reports once all fields are read, if any.
    pub(crate) fn finish(self) -> Result<()> {
        match self.encode_err.or(self.build_err) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Reads a string-or-null value for the field at `path`.
    fn opt_text(&mut self, value: Option<&str>, path: &str) -> Result<Option<String>> {
        let Some(value) = value.filter(|v| !is_null(v)) else {
            return Ok(None);
        };
        if !is_string(value) {
            return Err(FieldError::type_error(path, "a string or null", value));
        }
        let (s, lone) = decode_string(value);
        if lone {
            self.defer_build(FieldError::lone_surrogate(path));
        }
        Ok(Some(s))
    }

    /// Reads the optional string field `s` (absent or null: `None`).
    pub(crate) fn text(&mut self, s: Slot) -> Result<Option<String>> {
        self.opt_text(self.raw(s), s.name())
    }

    /// Reads a string that may not be null; absent, it is `default`. The flag tells of a lone
    /// surrogate.
    fn required_text(value: Option<&str>, path: &str, default: &str) -> Result<(String, bool)> {
        let Some(value) = value else {
            return Ok((default.to_owned(), false));
        };
        if !is_string(value) {
            return Err(FieldError::type_error(path, "a string", value));
        }
        Ok(decode_string(value))
    }

    /// Reads a string field that is never null (a proto3 string): absent or null, it is
    /// `default`, as protobuf's JSON mapping reads null.
    pub(crate) fn plain_text(&mut self, s: Slot, default: &str) -> Result<String> {
        let (text, lone) = Self::required_text(self.value(s), s.name(), default)?;
        if lone {
            self.defer_build(FieldError::lone_surrogate(s.name()));
        }
        Ok(text)
    }

    /// Reads a boolean: null is false, and a legacy integer flag its truth value.
    pub(crate) fn flag(&self, s: Slot) -> Result<bool> {
        match self.value(s) {
            None => Ok(false),
            Some(v) if is_bool(v) => Ok(v == "true"),
            Some(v) if is_integer(v) => Ok(!is_zero(v)),
            Some(v) => Err(FieldError::type_error(s.name(), "a boolean", v)),
        }
    }

    /// Reads an int64 field; null is 0.
    pub(crate) fn integer(&mut self, s: Slot) -> Result<i64> {
        let Some(value) = self.value(s) else {
            return Ok(0);
        };
        if !is_integer(value) {
            return Err(FieldError::type_error(s.name(), "an integer", value));
        }
        match value.parse::<i64>() {
            Ok(i) => Ok(i),
            Err(_) => {
                self.defer_build(FieldError::new(
                    s.name(),
                    format!(
                        "integer {} is outside the signed 64-bit range",
                        int_string(value)
                    ),
                ));
                Ok(0)
            }
        }
    }

    /// Reads a free-form object as its canonical text: null and `{}` are `None` (the default).
    fn object(value: Option<&'t str>, path: &str) -> Result<Option<&'t str>> {
        let Some(value) = value.filter(|v| !is_null(v)) else {
            return Ok(None);
        };
        if !is_object(value) {
            return Err(FieldError::type_error(path, "an object", value));
        }
        Ok((value.len() > 2).then_some(value))
    }

    /// Reads the free-form object field `s` as the message's JSON text.
    pub(crate) fn object_field(&self, s: Slot) -> Result<String> {
        Self::object(self.raw(s), s.name()).map(object_text)
    }

    /// Reads an object-or-null field (`agent_ref`): null is `""`, `{}` stays `"{}"`.
    pub(crate) fn optional_object(&self, s: Slot) -> Result<String> {
        match self.value(s) {
            None => Ok(String::new()),
            Some(v) if is_object(v) => Ok(v.to_owned()),
            Some(v) => Err(FieldError::type_error(s.name(), "an object or null", v)),
        }
    }

    /// Reads an array of strings (null: empty).
    pub(crate) fn text_list(&mut self, s: Slot) -> Result<Vec<String>> {
        let Some(value) = self.value(s) else {
            return Ok(Vec::new());
        };
        let path = s.name();
        if !value.starts_with('[') {
            return Err(FieldError::type_error(path, "an array of strings", value));
        }
        let mut list = Vec::new();
        for item in items(value) {
            if !is_string(item) {
                return Err(FieldError::type_error(
                    format!("{path}[{}]", list.len()),
                    "a string",
                    item,
                ));
            }
            let (text, lone) = decode_string(item);
            if lone {
                self.defer_build(FieldError::lone_surrogate(path));
            }
            list.push(text);
        }
        Ok(list)
    }

    /// Reads a JSON-RPC id: a string, an integer of any size or a float; null is unset.
    pub(crate) fn jsonrpc_id(&self, s: Slot) -> Result<Option<JsonRpcId>> {
        let Some(value) = self.value(s) else {
            return Ok(None);
        };
        let path = s.name();
        let kind = if is_string(value) {
            if let Some(unit) = first_lone_surrogate(value) {
                return Err(FieldError::new(
                    path,
                    format!("a lone surrogate (U+{unit:04X}) is not Unicode text"),
                ));
            }
            json_rpc_id::Kind::StringValue(decode_string(value).0)
        } else if is_integer(value) {
            match value.parse::<i64>() {
                Ok(i) => json_rpc_id::Kind::IntegerValue(i),
                Err(_) => json_rpc_id::Kind::BigIntegerValue(value.to_owned()),
            }
        } else if is_number(value) {
            // Finite: the normalizer checked it.
            json_rpc_id::Kind::NumberValue(value.parse().unwrap_or_default())
        } else {
            return Err(FieldError::type_error(
                path,
                "a string, number or null",
                value,
            ));
        };
        Ok(Some(JsonRpcId { kind: Some(kind) }))
    }

    /// Reads an enum field by the `json_value` of its values: absent or null, it is the
    /// field's default, as protobuf's JSON mapping reads null.
    pub(crate) fn enum_value(&self, field: &Field) -> Result<i32> {
        let name = field.slot.name();
        let text = match self.value(field.slot) {
            None => field.default.to_owned(),
            Some(value) if is_string(value) => decode_string(value).0,
            Some(value) => return Err(FieldError::type_error(name, "a string", value)),
        };
        match field.enum_values.iter().find(|(json, _)| *json == text) {
            Some(&(_, number)) => Ok(number),
            None => {
                let allowed: Vec<&str> = field.enum_values.iter().map(|(json, _)| *json).collect();
                Err(FieldError::new(
                    name,
                    format!("{text:?} is not one of {}", allowed.join(", ")),
                ))
            }
        }
    }

    /// Reads a provenance object (absent or null: the default) and its details' text.
    pub(crate) fn provenance(&mut self, s: Slot) -> Result<(E2aProvenance, Option<&'t str>)> {
        let mut p = E2aProvenance {
            source_protocol: DEFAULT_SOURCE_PROTOCOL.into(),
            ..Default::default()
        };
        let Some(value) = self.value(s) else {
            return Ok((p, None));
        };
        if !is_object(value) {
            return Err(FieldError::type_error("provenance", "an object", value));
        }
        let (mut source, mut converter, mut converted_at, mut details) = (None, None, None, None);
        for (key, item) in members(value) {
            match key {
                "\"source_protocol\"" => source = Some(item),
                "\"converter\"" => converter = Some(item),
                "\"converted_at\"" => converted_at = Some(item),
                "\"details\"" => details = Some(item),
                _ => {}
            }
        }
        let (source, mut any_lone) = Self::required_text(
            source,
            "provenance.source_protocol",
            DEFAULT_SOURCE_PROTOCOL,
        )?;
        p.source_protocol = source;
        for (item, path, dst) in [
            (converter, "provenance.converter", &mut p.converter),
            (converted_at, "provenance.converted_at", &mut p.converted_at),
        ] {
            let Some(item) = item.filter(|v| !is_null(v)) else {
                continue;
            };
            if !is_string(item) {
                return Err(FieldError::type_error(path, "a string or null", item));
            }
            let (text, lone) = decode_string(item);
            any_lone |= lone;
            *dst = Some(text);
        }
        let details = Self::object(details, "provenance.details")?;
        if any_lone {
            // Python builds the whole submessage at once and names it.
            self.defer_build(FieldError::lone_surrogate("provenance"));
        }
        Ok((p, details))
    }

    /// The envelope's provenance, with the legacy `binding` moved into
    /// `details.migrated_from_binding` (spec 4.2).
    pub(crate) fn envelope_provenance(&mut self) -> Result<E2aProvenance> {
        let (mut p, details) = self.provenance(Slot::Provenance)?;
        let mut binding = self.value(Slot::Binding);
        if binding.is_some()
            && details
                .and_then(|d| member(d, "\"migrated_from_binding\""))
                .is_some_and(|m| !is_null(m))
        {
            binding = None; // already migrated
        }
        let Some(mut binding) = binding else {
            p.details = object_text(details);
            return Ok(p);
        };
        if is_object(binding) {
            if let Some(inner) = member(binding, "\"value\"") {
                binding = inner;
            }
        }
        // The JSON string of Python's str(binding).
        let text = if is_null(binding) {
            "\"\"".to_owned()
        } else if is_string(binding) {
            binding.to_owned()
        } else if is_bool(binding) {
            if binding == "true" {
                "\"True\""
            } else {
                "\"False\""
            }
            .to_owned()
        } else if is_integer(binding) {
            format!("\"{}\"", int_string(binding))
        } else if is_number(binding) {
            format!("\"{}\"", py_float_text(binding))
        } else {
            return Err(FieldError::type_error("binding", "a string", binding));
        };
        let name = decode_string(&text).0;
        if p.source_protocol == DEFAULT_SOURCE_PROTOCOL && (name == "acp" || name == "a2a") {
            p.source_protocol = name;
        }
        let mut merged = ObjectBuilder::default();
        let mut replaced = false;
        for (key, item) in details.into_iter().flat_map(members) {
            if key == "\"migrated_from_binding\"" {
                replaced = true;
                merged.add(key, &text);
            } else {
                merged.add(key, item);
            }
        }
        if !replaced {
            merged.add("\"migrated_from_binding\"", &text);
        }
        p.details = merged.text();
        Ok(p)
    }

    /// Reads `timestamp`: an RFC 3339 string as given, or legacy epoch seconds as Python's
    /// `datetime.fromtimestamp(value, UTC).isoformat()` writes them.
    pub(crate) fn timestamp(&mut self) -> Result<Option<String>> {
        match self.value(Slot::Timestamp) {
            None => Ok(None),
            Some(v) if is_string(v) => self.opt_text(Some(v), "timestamp"),
            Some(v) if is_number(v) => epoch_to_iso(v).map(Some),
            Some(v) => Err(FieldError::type_error(
                "timestamp",
                "an RFC 3339 string or epoch seconds",
                v,
            )),
        }
    }

    /// Reads `channel`, or the legacy `channel_id` when `channel` is absent or null.
    pub(crate) fn channel(&mut self) -> Result<Option<String>> {
        if let Some(channel) = self.text(Slot::Channel)? {
            return Ok(Some(channel));
        }
        match self.value(Slot::ChannelId) {
            None => Ok(None),
            Some(v) if is_string(v) => self.opt_text(Some(v), "channel"),
            Some(v) => Err(FieldError::type_error("channel_id", "a string or null", v)),
        }
    }

    /// Reads `method`, or the legacy `req_method` (when a string) when `method` is null.
    pub(crate) fn method(&mut self) -> Result<Option<String>> {
        if let Some(method) = self.text(Slot::Method)? {
            return Ok(Some(method));
        }
        match self.raw(Slot::ReqMethod) {
            Some(v) if is_string(v) => self.opt_text(Some(v), "method"),
            _ => Ok(None),
        }
    }

    /// Reads a tenant routing key: a non-blank string, stripped as Python's `str.strip` does;
    /// any other value counts as absent. The fallback key is read when the first gives nothing.
    pub(crate) fn stripped(&mut self, path: &str, keys: &[Slot]) -> Option<String> {
        for &s in keys {
            let Some(value) = self.raw(s).filter(|v| is_string(v)) else {
                continue;
            };
            let (text, lone) = decode_string(value);
            let text = text.trim_matches(is_py_space);
            if !text.is_empty() {
                if lone {
                    self.defer_build(FieldError::lone_surrogate(path));
                }
                return Some(text.to_owned());
            }
        }
        None
    }

    /// Reads `params` plus the keys of a legacy top-level `payload` object it does not have,
    /// leaving out null, `[]` and `{}` values.
    pub(crate) fn params(&self) -> Result<String> {
        let params = Self::object(self.raw(Slot::Params), "params")?;
        let payload = match self.value(Slot::Payload) {
            Some(p) if is_object(p) && p.len() > 2 => p,
            _ => return Ok(object_text(params)),
        };
        let mut merged = ObjectBuilder::default();
        let mut have = Vec::new();
        for (key, item) in params.into_iter().flat_map(members) {
            merged.add(key, item);
            have.push(key);
        }
        for (key, item) in members(payload) {
            if have.contains(&key) || is_null(item) || item == "[]" || item == "{}" {
                continue;
            }
            merged.add(key, item);
        }
        Ok(empty_as_none(merged.text()).unwrap_or_default())
    }

    /// Reads `channel_context` plus the keys of a legacy `metadata` object (except the
    /// transport-internal ones) and a truthy legacy `app_id` that it does not have yet.
    pub(crate) fn channel_context(&self, internal: &[&str]) -> Result<String> {
        let context = Self::object(self.raw(Slot::ChannelContext), "channel_context")?;
        let metadata = self
            .value(Slot::Metadata)
            .filter(|m| is_object(m) && m.len() > 2);
        let app_id = self.raw(Slot::AppId).filter(|a| truthy(a));
        if metadata.is_none() && app_id.is_none() {
            return Ok(object_text(context));
        }
        let mut merged = ObjectBuilder::default();
        let mut have = Vec::new();
        for (key, item) in context.into_iter().flat_map(members) {
            merged.add(key, item);
            have.push(key);
        }
        for (key, item) in metadata.into_iter().flat_map(members) {
            let quoted_internal =
                |name: &&str| key.len() == name.len() + 2 && &key[1..key.len() - 1] == *name;
            if !internal.iter().any(quoted_internal) && !have.contains(&key) {
                merged.add(key, item);
                have.push(key);
            }
        }
        if let Some(app_id) = app_id {
            if !have.contains(&"\"app_id\"") {
                merged.add("\"app_id\"", app_id);
            }
        }
        Ok(empty_as_none(merged.text()).unwrap_or_default())
    }

    /// Reads the `auth` object, or null.
    pub(crate) fn auth(&mut self, s: Slot) -> Result<Option<E2aAuth>> {
        let Some(value) = self.value(s) else {
            return Ok(None);
        };
        if !is_object(value) {
            return Err(FieldError::type_error(s.name(), "an object", value));
        }
        let field = |name: &str| member(value, name);
        let mut auth = E2aAuth::default();
        let headers = Self::object(field("\"extra_headers\""), "auth.extra_headers")?;
        for (key, item) in headers.into_iter().flat_map(members) {
            let name = key_name(key);
            if !is_string(item) {
                return Err(FieldError::type_error(
                    format!("auth.extra_headers.{name}"),
                    "a string",
                    item,
                ));
            }
            let (header_name, lone_name) = decode_string(key);
            let (header_value, lone_value) = decode_string(item);
            if lone_name {
                self.defer_encode(FieldError::lone_surrogate(format!(
                    "auth.extra_headers.{name}.name"
                )));
            }
            if lone_value {
                self.defer_encode(FieldError::lone_surrogate(format!(
                    "auth.extra_headers.{name}.value"
                )));
            }
            auth.extra_headers.push(HttpHeader {
                name: header_name,
                value: header_value,
            });
        }
        for (key, path, dst) in [
            ("\"method_id\"", "auth.method_id", &mut auth.method_id),
            (
                "\"bearer_token\"",
                "auth.bearer_token",
                &mut auth.bearer_token,
            ),
            ("\"api_key_ref\"", "auth.api_key_ref", &mut auth.api_key_ref),
            (
                "\"credential_ref\"",
                "auth.credential_ref",
                &mut auth.credential_ref,
            ),
        ] {
            let Some(item) = field(key).filter(|v| !is_null(v)) else {
                continue;
            };
            if !is_string(item) {
                return Err(FieldError::type_error(path, "a string or null", item));
            }
            let (text, lone) = decode_string(item);
            if lone {
                self.defer_encode(FieldError::lone_surrogate(path));
            }
            *dst = Some(text);
        }
        auth.meta = object_text(Self::object(field("\"_meta\""), "auth._meta")?);
        Ok(Some(auth))
    }
}

/// The legacy readers the schema names (`(e2a.v1.json).legacy_reader`), bound by name in
/// `fields`: each reads its field from the whole document (docs/wire-json.md section 3).
impl Reader<'_> {
    pub(crate) fn legacy_provenance(&mut self, _: &Field) -> Result<Value> {
        self.envelope_provenance().map(Value::Provenance)
    }

    pub(crate) fn legacy_timestamp(&mut self, _: &Field) -> Result<Value> {
        self.timestamp().map(Value::Text)
    }

    pub(crate) fn legacy_channel(&mut self, _: &Field) -> Result<Value> {
        self.channel().map(Value::Text)
    }

    pub(crate) fn legacy_agent_id(&mut self, field: &Field) -> Result<Value> {
        let keys = [field.slot, Slot::SourceAgentId];
        Ok(Value::Text(self.stripped(field.slot.name(), &keys)))
    }

    pub(crate) fn legacy_service_id(&mut self, field: &Field) -> Result<Value> {
        Ok(Value::Text(self.stripped(field.slot.name(), &[field.slot])))
    }

    pub(crate) fn legacy_workspace_key(&mut self, field: &Field) -> Result<Value> {
        let keys = [field.slot, Slot::WorkspaceDir];
        Ok(Value::Text(self.stripped(field.slot.name(), &keys)))
    }

    pub(crate) fn legacy_method(&mut self, _: &Field) -> Result<Value> {
        self.method().map(Value::Text)
    }

    pub(crate) fn legacy_params(&mut self, _: &Field) -> Result<Value> {
        self.params().map(Value::String)
    }

    pub(crate) fn legacy_channel_context(&mut self, field: &Field) -> Result<Value> {
        self.channel_context(field.internal).map(Value::String)
    }

    /// `response_kind`; null reads as `""` (no kind), as older writers sent it.
    pub(crate) fn legacy_response_kind(&mut self, field: &Field) -> Result<Value> {
        Ok(Value::String(self.text(field.slot)?.unwrap_or_default()))
    }
}

/// Epoch seconds (JSON number text) as Python's `datetime.fromtimestamp(value, UTC).isoformat()`
/// writes them.
fn epoch_to_iso(number: &str) -> Result<String> {
    let seconds: f64 = number.parse().unwrap_or(f64::INFINITY);
    let shown = if is_float(number) {
        py_float_text(number)
    } else if seconds.is_infinite() {
        return Err(FieldError::new(
            "timestamp",
            format!(
                "epoch seconds {} out of range (int too large to convert to float)",
                int_string(number)
            ),
        ));
    } else {
        int_string(number).to_owned()
    };
    // Python rounds to microseconds half to even, carrying into the seconds.
    let mut whole = seconds.trunc();
    let mut micros = ((seconds - whole) * 1e6).round_ties_even();
    if micros >= 1e6 {
        whole += 1.0;
        micros -= 1e6;
    } else if micros < 0.0 {
        whole -= 1.0;
        micros += 1e6;
    }
    let out_of_range = |why: String| {
        FieldError::new(
            "timestamp",
            format!("epoch seconds {shown} out of range ({why})"),
        )
    };
    if whole.abs() >= i64::MAX as f64 {
        return Err(out_of_range(
            "timestamp out of range for platform time_t".into(),
        ));
    }
    let whole = whole as i64;
    let days = whole.div_euclid(86_400);
    let secs = whole.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    if !(1..=9999).contains(&year) {
        return Err(out_of_range(format!("year {year} is out of range")));
    }
    let mut text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if micros != 0.0 {
        text.push_str(&format!(".{:06}", micros as u32));
    }
    text.push_str("+00:00");
    Ok(text)
}

/// The proleptic Gregorian date of a day count from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_seconds() {
        assert_eq!(
            epoch_to_iso("1700000000").unwrap(),
            "2023-11-14T22:13:20+00:00"
        );
        assert_eq!(
            epoch_to_iso("1700000000.25").unwrap(),
            "2023-11-14T22:13:20.250000+00:00"
        );
        assert_eq!(
            epoch_to_iso("-1.5").unwrap(),
            "1969-12-31T23:59:58.500000+00:00"
        );
        assert_eq!(epoch_to_iso("0").unwrap(), "1970-01-01T00:00:00+00:00");
        assert!(epoch_to_iso("1e300").is_err());
        assert!(epoch_to_iso(&"9".repeat(400)).is_err());
    }
}

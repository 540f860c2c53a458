//! Helpers over canonical JSON text, as the normalizer writes it: valid, no whitespace, object
//! keys unique. A value's JSON type is known from its first byte.

use super::normalize::{hex4, py_float_repr};

fn first(value: &str) -> u8 {
    value.as_bytes().first().copied().unwrap_or(b'n')
}

/// The JSON type of a value as Python's error messages name it.
pub(crate) fn type_name(value: &str) -> &'static str {
    match first(value) {
        b'n' => "null",
        b't' | b'f' => "boolean",
        b'"' => "string",
        b'[' => "array",
        b'{' => "object",
        _ if is_float(value) => "number",
        _ => "integer",
    }
}

pub(crate) fn is_null(value: &str) -> bool {
    first(value) == b'n'
}

pub(crate) fn is_string(value: &str) -> bool {
    first(value) == b'"'
}

pub(crate) fn is_object(value: &str) -> bool {
    first(value) == b'{'
}

pub(crate) fn is_bool(value: &str) -> bool {
    matches!(first(value), b't' | b'f')
}

pub(crate) fn is_number(value: &str) -> bool {
    matches!(first(value), b'-' | b'0'..=b'9')
}

/// Whether a number has a fraction or an exponent: Python reads it as a float.
pub(crate) fn is_float(number: &str) -> bool {
    number.bytes().any(|c| matches!(c, b'.' | b'e' | b'E'))
}

pub(crate) fn is_integer(value: &str) -> bool {
    is_number(value) && !is_float(value)
}

/// Whether an integer's text is zero (`0` or `-0`).
pub(crate) fn is_zero(integer: &str) -> bool {
    integer.strip_prefix('-').unwrap_or(integer) == "0"
}

/// An integer's text as Python's `str()` writes the int it reads (`-0` is `0`).
pub(crate) fn int_string(integer: &str) -> &str {
    if is_zero(integer) {
        "0"
    } else {
        integer
    }
}

/// Python's truth value of the value read from JSON.
pub(crate) fn truthy(value: &str) -> bool {
    match first(value) {
        b'n' | b'f' => false,
        b't' => true,
        b'"' | b'[' | b'{' => value.len() > 2, // not "", [] or {}
        _ if is_float(value) => value.parse::<f64>().is_ok_and(|f| f != 0.0),
        _ => !is_zero(value),
    }
}

/// The text of a canonical JSON string. A lone surrogate, which a Rust string cannot hold,
/// comes back as U+FFFD and the flag is true.
pub(crate) fn decode_string(quoted: &str) -> (String, bool) {
    let content = &quoted[1..quoted.len() - 1];
    if !content.contains('\\') {
        return (content.to_owned(), false);
    }
    let mut out = String::with_capacity(content.len());
    let mut lone = false;
    let mut chars = content.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some((_, escape)) = chars.next() else {
            break;
        };
        match escape {
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => {
                // A control character or a lone surrogate.
                let unit = hex4(content.as_bytes(), i + 2).unwrap_or(0xfffd);
                for _ in 0..4 {
                    chars.next();
                }
                match char::from_u32(unit) {
                    Some(c) => out.push(c),
                    None => {
                        lone = true;
                        out.push('\u{fffd}');
                    }
                }
            }
            other => out.push(other), // '"' or '\\'
        }
    }
    (out, lone)
}

/// An object key (canonical quoted text) for an error path: its text or, if it holds a lone
/// surrogate, its JSON escapes as they are.
pub(crate) fn key_name(quoted: &str) -> String {
    match decode_string(quoted) {
        (text, false) => text,
        (_, true) => quoted[1..quoted.len() - 1].to_owned(),
    }
}

/// The first lone surrogate of a canonical JSON string, which holds one only as an escape.
pub(crate) fn first_lone_surrogate(quoted: &str) -> Option<u32> {
    let bytes = quoted.as_bytes();
    let mut i = 1;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes[i + 1] == b'u' {
                if let Some(unit) = hex4(bytes, i + 2).filter(|u| (0xd800..0xe000).contains(u)) {
                    return Some(unit);
                }
            }
            i += 1; // past the escaped character
        }
        i += 1;
    }
    None
}

/// The index just past the canonical value starting at `text[i]`.
pub(crate) fn skip_value(text: &[u8], mut i: usize) -> usize {
    match text[i] {
        b'"' => skip_string(text, i),
        b'[' | b'{' => {
            let mut depth = 0;
            loop {
                match text[i] {
                    b'"' => {
                        i = skip_string(text, i);
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while i < text.len() && !matches!(text[i], b',' | b']' | b'}') {
                i += 1;
            }
            i
        }
    }
}

fn skip_string(text: &[u8], mut i: usize) -> usize {
    i += 1;
    while text[i] != b'"' {
        if text[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// The quoted key and the value of each member of a canonical object, in order.
pub(crate) fn members(object: &str) -> impl Iterator<Item = (&str, &str)> {
    let bytes = object.as_bytes();
    let mut i = 1;
    std::iter::from_fn(move || {
        if i + 1 >= bytes.len() {
            return None;
        }
        let colon = skip_string(bytes, i);
        let end = skip_value(bytes, colon + 1);
        let member = (&object[i..colon], &object[colon + 1..end]);
        i = end + 1; // past the ','
        Some(member)
    })
}

/// The items of a canonical array, in order.
pub(crate) fn items(array: &str) -> impl Iterator<Item = &str> {
    let bytes = array.as_bytes();
    let mut i = 1;
    std::iter::from_fn(move || {
        if i + 1 >= bytes.len() {
            return None;
        }
        let end = skip_value(bytes, i);
        let item = &array[i..end];
        i = end + 1;
        Some(item)
    })
}

/// The value of a key (given as its quoted text) in a canonical object.
pub(crate) fn member<'a>(object: &'a str, quoted_key: &str) -> Option<&'a str> {
    members(object).find_map(|(key, value)| (key == quoted_key).then_some(value))
}

/// Writes a canonical object member by member.
#[derive(Default)]
pub(crate) struct ObjectBuilder {
    buf: String,
}

impl ObjectBuilder {
    pub(crate) fn add(&mut self, quoted_key: &str, value: &str) {
        self.buf.push(if self.buf.is_empty() { '{' } else { ',' });
        self.buf.push_str(quoted_key);
        self.buf.push(':');
        self.buf.push_str(value);
    }

    pub(crate) fn text(mut self) -> String {
        if self.buf.is_empty() {
            return "{}".into();
        }
        self.buf.push('}');
        self.buf
    }
}

/// Python's `str.isspace` for one character: Unicode White_Space plus the four information
/// separators U+001C to U+001F, which Python's `str.strip` also removes.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str()` of a float read from JSON text, for messages and legacy values.
pub(crate) fn py_float_text(number: &str) -> String {
    py_float_repr(number.parse().unwrap_or(f64::NAN))
}

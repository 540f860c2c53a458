//! Checking JSON text and writing it in canonical form.

use std::collections::{HashMap, HashSet};

use super::FieldError;

/// The deepest nesting of arrays and objects in a JSON text (`[]` is 1 level, `[[]]` 2), as in
/// the Python reference (`jsontext.MAX_DEPTH`). It holds for the wire JSON document, whose own
/// object counts, and for the free-form JSON text of each protobuf field.
pub const MAX_DEPTH: usize = 512;

/// The longest integer (in digits) the Python reference reads from JSON text, its int/str
/// conversion limit.
pub const MAX_INT_DIGITS: usize = 4300;

/// The member count up to which duplicate keys are found by comparing with each earlier key;
/// bigger objects index their keys in a set.
const SMALL_OBJECT: usize = 16;

/// One object member in `dst`: the key's quoted text is `dst[key..colon]`, the value
/// `dst[colon + 1..end]`.
#[derive(Clone, Copy)]
struct MemberSpan {
    key: usize,
    colon: usize,
    end: usize,
}

/// Checks one JSON value of `src` and appends its canonical text to `dst`: no insignificant
/// whitespace, number text as written, strings with only the escapes of the wire JSON (see
/// [`push_quoted`]) and duplicate object keys resolved as Python's `json` module does (the key
/// keeps its first position and takes its last value). A string has one canonical text, so keys
/// are compared by it.
pub(crate) struct Normalizer<'a> {
    src: &'a str,
    pub(crate) pos: usize,
    pub(crate) dst: String,
    /// The field named by errors: `$` for a whole document.
    field: &'a str,
    /// The members of the objects being read, for finding duplicate keys.
    members: Vec<MemberSpan>,
}

type Result<T> = std::result::Result<T, FieldError>;

impl<'a> Normalizer<'a> {
    /// A normalizer of `src` appending to `dst`, naming `field` in its errors.
    pub(crate) fn new(src: &'a str, field: &'a str, dst: String) -> Self {
        Normalizer {
            src,
            pos: 0,
            dst,
            field,
            members: Vec::new(),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    pub(crate) fn syntax_error(&self, what: impl AsRef<str>) -> FieldError {
        FieldError::new(self.field, format!("invalid JSON text: {}", what.as_ref()))
    }

    pub(crate) fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Normalizes `src` as one whole JSON text: a value with nothing but whitespace after it.
    /// `depth` is the nesting level the value has if it is an array or object.
    pub(crate) fn document(&mut self, depth: usize) -> Result<()> {
        self.value(depth)?;
        self.finish()
    }

    /// Checks that nothing but whitespace is left.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.skip_space();
        if self.pos < self.src.len() {
            return Err(self.syntax_error(format!("extra data at offset {}", self.pos)));
        }
        Ok(())
    }

    /// Normalizes the value at `pos`; `depth` is its nesting level if it is an array or object.
    pub(crate) fn value(&mut self, depth: usize) -> Result<()> {
        self.skip_space();
        let Some(c) = self.peek() else {
            return Err(self.syntax_error("unexpected end of text, expecting a value"));
        };
        match c {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            _ => {
                let rest = &self.src[self.pos..];
                for literal in ["true", "false", "null"] {
                    if rest.starts_with(literal) {
                        self.dst.push_str(literal);
                        self.pos += literal.len();
                        return Ok(());
                    }
                }
                for constant in ["NaN", "Infinity"] {
                    if rest.starts_with(constant) {
                        return Err(self.syntax_error(format!("{constant} is not a JSON value")));
                    }
                }
                let shown = rest.chars().next().unwrap_or('?');
                Err(self.syntax_error(format!(
                    "unexpected character {shown:?} at offset {}, expecting a value",
                    self.pos
                )))
            }
        }
    }

    fn check_depth(&self, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(FieldError::new(
                self.field,
                format!("JSON nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<()> {
        self.check_depth(depth)?;
        self.pos += 1;
        self.dst.push('[');
        self.skip_space();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.dst.push(']');
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            self.skip_space();
            match self.peek() {
                None => return Err(self.syntax_error("unexpected end of text in an array")),
                Some(b',') => self.dst.push(','),
                Some(b']') => {
                    self.pos += 1;
                    self.dst.push(']');
                    return Ok(());
                }
                Some(_) => return Err(self.unexpected("']'")),
            }
            self.pos += 1;
        }
    }

    fn unexpected(&self, closing: &str) -> FieldError {
        let shown = self.src[self.pos..].chars().next().unwrap_or('?');
        self.syntax_error(format!(
            "unexpected character {shown:?} at offset {}, expecting ',' or {closing}",
            self.pos
        ))
    }

    /// Reads an object key (a string) and the colon after it; returns the span of the key's
    /// canonical text in `dst` without the colon, which is written.
    pub(crate) fn key(&mut self) -> Result<(usize, usize)> {
        self.skip_space();
        if self.peek() != Some(b'"') {
            return Err(self.syntax_error(format!(
                "expecting a property name in double quotes at offset {}",
                self.pos
            )));
        }
        let start = self.dst.len();
        self.string()?;
        let end = self.dst.len();
        self.skip_space();
        if self.peek() != Some(b':') {
            return Err(self.syntax_error(format!("expecting ':' at offset {}", self.pos)));
        }
        self.pos += 1;
        Ok((start, end))
    }

    fn object(&mut self, depth: usize) -> Result<()> {
        self.check_depth(depth)?;
        let start = self.dst.len();
        self.pos += 1;
        self.dst.push('{');
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.dst.push('}');
            return Ok(());
        }
        let base = self.members.len();
        // The keys so far, once the object outgrows SMALL_OBJECT.
        let mut index: Option<HashSet<String>> = None;
        let mut duplicates = false;
        loop {
            let (key, colon) = self.key()?;
            self.dst.push(':');
            self.value(depth + 1)?;
            let key_text = &self.dst[key..colon];
            let count = self.members.len() - base;
            if index.is_none() && count >= SMALL_OBJECT {
                index = Some(
                    self.members[base..]
                        .iter()
                        .map(|m| self.dst[m.key..m.colon].to_owned())
                        .collect(),
                );
            }
            match index.as_mut() {
                Some(index) => {
                    if !index.insert(key_text.to_owned()) {
                        duplicates = true;
                    }
                }
                None => {
                    if self.members[base..]
                        .iter()
                        .any(|m| &self.dst[m.key..m.colon] == key_text)
                    {
                        duplicates = true;
                    }
                }
            }
            self.members.push(MemberSpan {
                key,
                colon,
                end: self.dst.len(),
            });
            self.skip_space();
            match self.peek() {
                None => return Err(self.syntax_error("unexpected end of text in an object")),
                Some(b',') => {
                    self.pos += 1;
                    self.dst.push(',');
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.dst.push('}');
                    if duplicates {
                        self.dedupe(start, base);
                    }
                    self.members.truncate(base);
                    return Ok(());
                }
                Some(_) => return Err(self.unexpected("'}'")),
            }
        }
    }

    /// Rewrites the object at `dst[start..]` so that each key appears once, where it first
    /// appeared, with the value it was last given: what a Python dict built from the pairs holds.
    fn dedupe(&mut self, start: usize, base: usize) {
        let members = &self.members[base..];
        let dst = &self.dst;
        let key_of = |m: &MemberSpan| &dst[m.key..m.colon];
        // Each key's last member; a key leaves the map once written.
        let mut last: HashMap<&str, &MemberSpan> = members.iter().map(|m| (key_of(m), m)).collect();
        let mut out = String::with_capacity(dst.len() - start);
        out.push('{');
        for member in members {
            let Some(winner) = last.remove(key_of(member)) else {
                continue; // written already, at the key's first position
            };
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&dst[member.key..=member.colon]);
            out.push_str(&dst[winner.colon + 1..winner.end]);
        }
        out.push('}');
        self.dst.truncate(start);
        self.dst.push_str(&out);
    }

    fn number(&mut self) -> Result<()> {
        let src = self.bytes();
        let start = self.pos;
        let digit = |i: usize| src.get(i).is_some_and(u8::is_ascii_digit);
        let invalid = |n: &Self| n.syntax_error(format!("invalid number at offset {start}"));
        let mut i = start;
        if src[i] == b'-' {
            i += 1;
            if self.src[i..].starts_with("Infinity") {
                return Err(self.syntax_error("-Infinity is not a JSON value"));
            }
        }
        let digits = i;
        match src.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while digit(i) {
                    i += 1;
                }
            }
            _ => return Err(invalid(self)),
        }
        let int_digits = i - digits;
        let mut float = false;
        if src.get(i) == Some(&b'.') {
            i += 1;
            if !digit(i) {
                return Err(invalid(self));
            }
            while digit(i) {
                i += 1;
            }
            float = true;
        }
        if let Some(b'e' | b'E') = src.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = src.get(i) {
                i += 1;
            }
            if !digit(i) {
                return Err(invalid(self));
            }
            while digit(i) {
                i += 1;
            }
            float = true;
        }
        let text = &self.src[start..i];
        if float {
            // A double must hold it, as in Python; the text is kept as written all the same.
            if text.parse::<f64>().map_or(true, f64::is_infinite) {
                return Err(self.syntax_error(format!("number {text} is out of range")));
            }
        } else if int_digits > MAX_INT_DIGITS {
            return Err(self.syntax_error(format!(
                "integer with {int_digits} digits exceeds the limit of {MAX_INT_DIGITS} digits"
            )));
        }
        self.dst.push_str(text);
        self.pos = i;
        Ok(())
    }

    /// Normalizes the JSON string at `pos`, which starts with `"`.
    fn string(&mut self) -> Result<()> {
        let src = self.bytes();
        let opening = self.pos;
        let mut i = self.pos + 1;
        self.dst.push('"');
        loop {
            // Copy the run of characters that need no rewriting in one go.
            let run = i;
            while i < src.len() && src[i] >= 0x20 && src[i] != b'"' && src[i] != b'\\' {
                i += 1;
            }
            self.dst.push_str(&self.src[run..i]);
            let Some(&c) = src.get(i) else {
                return Err(
                    self.syntax_error(format!("unterminated string starting at offset {opening}"))
                );
            };
            match c {
                b'"' => {
                    self.dst.push('"');
                    self.pos = i + 1;
                    return Ok(());
                }
                b'\\' => {}
                _ => {
                    return Err(
                        self.syntax_error(format!("invalid control character at offset {i}"))
                    )
                }
            }
            let Some(&escape) = src.get(i + 1) else {
                return Err(
                    self.syntax_error(format!("unterminated string starting at offset {opening}"))
                );
            };
            match escape {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    self.dst.push('\\');
                    self.dst.push(escape as char);
                    i += 2;
                }
                b'/' => {
                    self.dst.push('/');
                    i += 2;
                }
                b'u' => {
                    let Some(mut unit) = hex4(src, i + 2) else {
                        return Err(
                            self.syntax_error(format!("invalid \\uXXXX escape at offset {i}"))
                        );
                    };
                    i += 6;
                    if (0xd800..0xdc00).contains(&unit)
                        && src.get(i) == Some(&b'\\')
                        && src.get(i + 1) == Some(&b'u')
                    {
                        if let Some(low) = hex4(src, i + 2).filter(|u| (0xdc00..0xe000).contains(u))
                        {
                            unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                            i += 6;
                        }
                    }
                    push_code_point(&mut self.dst, unit);
                }
                _ => return Err(self.syntax_error(format!("invalid escape at offset {i}"))),
            }
        }
    }
}

/// The four hex digits of a `\uXXXX` escape at `src[i..]`.
pub(crate) fn hex4(src: &[u8], i: usize) -> Option<u32> {
    let digits = src.get(i..i + 4)?;
    digits.iter().try_fold(0u32, |acc, &c| {
        let d = (c as char).to_digit(16)?;
        Some(acc << 4 | d)
    })
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

fn push_unicode_escape(dst: &mut String, unit: u32) {
    dst.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        dst.push(HEX_DIGITS[(unit >> shift & 0xf) as usize] as char);
    }
}

/// Appends one code point as canonical string content: control characters, `"` and `\`
/// escaped, a lone surrogate (which UTF-8 cannot hold) as its `\uXXXX` escape, the rest as is.
fn push_code_point(dst: &mut String, unit: u32) {
    match char::from_u32(unit) {
        Some(c) => push_char(dst, c),
        None => push_unicode_escape(dst, unit), // a lone surrogate
    }
}

fn push_char(dst: &mut String, c: char) {
    match c {
        '"' => dst.push_str("\\\""),
        '\\' => dst.push_str("\\\\"),
        '\u{8}' => dst.push_str("\\b"),
        '\u{c}' => dst.push_str("\\f"),
        '\n' => dst.push_str("\\n"),
        '\r' => dst.push_str("\\r"),
        '\t' => dst.push_str("\\t"),
        c if (c as u32) < 0x20 => push_unicode_escape(dst, c as u32),
        c => dst.push(c),
    }
}

/// Appends `s` as a canonical JSON string (the escapes of `docs/wire-json.md` section 5).
pub(crate) fn push_quoted(dst: &mut String, s: &str) {
    dst.push('"');
    let mut run = 0;
    for (i, c) in s.char_indices() {
        if (c as u32) < 0x20 || c == '"' || c == '\\' {
            dst.push_str(&s[run..i]);
            push_char(dst, c);
            run = i + 1;
        }
    }
    dst.push_str(&s[run..]);
    dst.push('"');
}

/// Writes a finite double as the wire JSON writes floats: the shortest digits that read back as
/// `f`, positional with at least one fraction digit for decimal exponents -5 to 15, else
/// `d.ddde±X` with the exponent's sign always written and no leading zeros (`1e-6`, `1e+16`).
pub(crate) fn format_float(f: f64) -> String {
    format_float_with(f, -5, 1)
}

/// Writes `f` as Python's `repr` does (for Python's `str` of a number): as [`format_float`],
/// but positional from exponent -4 on and with at least two exponent digits (`1e-05`).
pub(crate) fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    format_float_with(f, -4, 2)
}

fn format_float_with(f: f64, lowest: i32, exponent_digits: usize) -> String {
    let scientific = format!("{f:e}"); // shortest round-trip digits, e.g. -1.5e-7
    let (mantissa, power) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = power.parse().unwrap_or(0);
    if (lowest..16).contains(&exponent) {
        let mut text = format!("{f}"); // shortest round-trip digits, positional
        if !text.contains('.') {
            text.push_str(".0");
        }
        return text;
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!(
        "{mantissa}e{sign}{:0width$}",
        exponent.unsigned_abs(),
        width = exponent_digits
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(text: &str) -> std::result::Result<String, FieldError> {
        let mut n = Normalizer::new(text, "$", String::new());
        n.document(1)?;
        Ok(n.dst)
    }

    #[test]
    fn canonical_text() {
        assert_eq!(
            normalized(
                " { \"a\" : [ 1 , 1.50 , -0.0 ] , \"b\\/\" : \"\\u00e9\\ud83d\\ude00\\ud800\" } "
            )
            .unwrap(),
            "{\"a\":[1,1.50,-0.0],\"b/\":\"é😀\\ud800\"}"
        );
        assert_eq!(
            normalized(r#""\u001F\u007f""#).unwrap(),
            "\"\\u001f\u{7f}\""
        );
    }

    #[test]
    fn duplicate_keys_keep_first_position_and_last_value() {
        assert_eq!(
            normalized(r#"{"a":1,"b":2,"a":3}"#).unwrap(),
            r#"{"a":3,"b":2}"#
        );
        let many: Vec<String> = (0..20).map(|i| format!("\"k{i}\":{i}")).collect();
        let text = format!("{{{},\"k3\":\"x\"}}", many.join(","));
        assert!(normalized(&text).unwrap().contains("\"k3\":\"x\",\"k4\""));
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "[1,]",
            "{\"a\"}",
            "NaN",
            "-Infinity",
            "1e400",
            "01",
            "\"\t\"",
            "[] x",
        ] {
            assert_eq!(normalized(bad).unwrap_err().field, "$", "{bad}");
        }
        let deep = format!("{}{}", "[".repeat(513), "]".repeat(513));
        assert!(normalized(&deep).is_err());
        let ok = format!("{}{}", "[".repeat(512), "]".repeat(512));
        assert!(normalized(&ok).is_ok());
        assert!(normalized(&"9".repeat(4300)).is_ok());
        assert!(normalized(&"9".repeat(4301)).is_err());
    }

    #[test]
    fn floats() {
        for (f, text) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (0.00001, "0.00001"),
            (0.000015, "0.000015"),
            (9999999999999998.0, "9999999999999998.0"),
            (-0.0, "-0.0"),
            (1e-6, "1e-6"),
            (9.999999999999999e-6, "9.999999999999999e-6"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(format_float(f), text);
        }
        assert_eq!(py_float_repr(1e-5), "1e-05");
        assert_eq!(py_float_repr(0.0001), "0.0001");
    }
}

//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

/// This crate's directory, as cargo tells the running test. Not the path compiled in: a test
/// binary that cargo reuses from a build in another checkout (CI shares its target directory)
/// would look there.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR"),
    )
}

/// The repository root (the crate is `clients/rust`).
pub fn repo_root() -> PathBuf {
    crate_dir().join("../..")
}

/// A JSON value as the wire JSON rules compare it: key order kept, integers by their exact
/// value, floats by their double (sign of zero included), strings as UTF-16 code units (lone
/// surrogates included).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// An integer's decimal digits without leading zeros, `-` when negative.
    Int(String),
    /// A float's bits.
    Float(u64),
    Str(Vec<u16>),
    Array(Vec<Json>),
    Object(Vec<(Vec<u16>, Json)>),
}

impl Json {
    /// Parses a whole JSON text; panics on invalid text (tests compare valid documents).
    pub fn parse(text: &str) -> Json {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let value = p.value();
        p.space();
        assert_eq!(p.i, p.s.len(), "text after the JSON value: {text}");
        value
    }

    /// The value at `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        let key: Vec<u16> = key.encode_utf16().collect();
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string value of `key` in an object.
    pub fn str(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Json::Str(units) => Some(String::from_utf16_lossy(units)),
            _ => None,
        }
    }

    /// Sets the top-level member `key` of an object to a string.
    pub fn set_str(&mut self, key: &str, value: &str) {
        let key: Vec<u16> = key.encode_utf16().collect();
        if let Json::Object(members) = self {
            for (k, v) in members.iter_mut() {
                if *k == key {
                    *v = Json::Str(value.encode_utf16().collect());
                }
            }
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.space();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Json {
        self.space();
        let rest = &self.s[self.i..];
        for (literal, value) in [
            ("null", Json::Null),
            ("true", Json::Bool(true)),
            ("false", Json::Bool(false)),
        ] {
            if rest.starts_with(literal.as_bytes()) {
                self.i += literal.len();
                return value;
            }
        }
        match rest[0] {
            b'"' => Json::Str(self.string()),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value());
                        if self.eat(b']') {
                            break;
                        }
                        assert!(self.eat(b','), "bad array");
                    }
                }
                Json::Array(items)
            }
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.space();
                        let key = self.string();
                        assert!(self.eat(b':'), "bad object");
                        members.push((key, self.value()));
                        if self.eat(b'}') {
                            break;
                        }
                        assert!(self.eat(b','), "bad object");
                    }
                }
                Json::Object(members)
            }
            _ => self.number(),
        }
    }

    fn number(&mut self) -> Json {
        let start = self.i;
        while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap();
        if text.contains(['.', 'e', 'E']) {
            let f: f64 = text.parse().expect("a float");
            return Json::Float(f.to_bits());
        }
        let (sign, digits) = match text.strip_prefix('-') {
            Some(d) => ("-", d),
            None => ("", text),
        };
        let digits = digits.trim_start_matches('0');
        Json::Int(if digits.is_empty() {
            "0".into()
        } else {
            format!("{sign}{digits}")
        })
    }

    fn string(&mut self) -> Vec<u16> {
        assert_eq!(self.s[self.i], b'"');
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i];
            match c {
                b'"' => {
                    self.i += 1;
                    return out;
                }
                b'\\' => {
                    let e = self.s[self.i + 1];
                    self.i += 2;
                    let unit = match e {
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => 10,
                        b'r' => 13,
                        b't' => 9,
                        b'u' => {
                            let hex = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
                            self.i += 4;
                            u16::from_str_radix(hex, 16).unwrap()
                        }
                        other => u16::from(other),
                    };
                    out.push(unit);
                }
                _ => {
                    let rest = std::str::from_utf8(&self.s[self.i..]).unwrap_or_else(|e| {
                        std::str::from_utf8(&self.s[self.i..self.i + e.valid_up_to()]).unwrap()
                    });
                    let ch = rest.chars().next().unwrap();
                    self.i += ch.len_utf8();
                    let mut buf = [0u16; 2];
                    out.extend_from_slice(ch.encode_utf16(&mut buf));
                }
            }
        }
    }
}

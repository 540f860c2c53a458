//! The error type of the codec.

use std::fmt;

/// The longest field path a [`FieldError`] keeps, in characters (paths may quote the input).
const MAX_FIELD_CHARS: usize = 200;
/// The longest message a [`FieldError`] keeps, in characters.
const MAX_MESSAGE_CHARS: usize = 400;

/// An error about one field of an E2A record.
///
/// `field` is the dotted path the Python reference names for the same input (`params`,
/// `auth.extra_headers.X`, `expected_output_modes[2]`); `$` stands for the whole JSON text (not
/// UTF-8, not JSON, nested too deep, or protobuf bytes that do not decode), `envelope` /
/// `response` for a document that is not a JSON object. `message` is free text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The dotted path of the field at fault (`docs/wire-json.md` section 7).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// An error about `field`; the path and the message are cut to their limits (200 and 400
    /// characters), as the Python reference cuts them.
    pub fn new(field: impl AsRef<str>, message: impl AsRef<str>) -> Self {
        FieldError {
            field: shortened(field.as_ref(), MAX_FIELD_CHARS),
            message: shortened(message.as_ref(), MAX_MESSAGE_CHARS),
        }
    }

    /// The message of a value of the wrong JSON type, worded as Python words it.
    pub(crate) fn type_error(field: impl AsRef<str>, expected: &str, value: &str) -> Self {
        FieldError::new(
            field,
            format!(
                "expected {expected}, got {}",
                super::canonical::type_name(value)
            ),
        )
    }

    /// What Python's protobuf encoder reports for a string field (not a free-form JSON field)
    /// holding a lone surrogate, which UTF-8 and so protobuf cannot carry.
    pub(crate) fn lone_surrogate(field: impl AsRef<str>) -> Self {
        FieldError::new(
            field,
            "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field",
        )
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// `text` if it fits `limit` characters, else its start and how much was left out.
fn shortened(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_owned();
    }
    let cut = text
        .char_indices()
        .nth(limit)
        .map_or(text.len(), |(i, _)| i);
    format!("{}... ({} more characters)", &text[..cut], count - limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_field_colon_message() {
        let err = FieldError::new("params", "expected an object, got string");
        assert_eq!(err.to_string(), "params: expected an object, got string");
    }

    #[test]
    fn long_paths_are_cut() {
        let err = FieldError::new("x".repeat(250), "m");
        assert_eq!(
            err.field,
            format!("{}... (50 more characters)", "x".repeat(200))
        );
    }
}

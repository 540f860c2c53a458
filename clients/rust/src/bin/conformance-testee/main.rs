//! The Rust testee of the E2A conformance suite (`conformance/README.md`): converts E2A records
//! between wire JSON and binary protobuf with [`e2a_grpc::json`].
//!
//! It reads one request a line on stdin,
//! `{"id": 1, "message": "envelope"|"response", "from": "wire_json"|"protobuf", "to": ..., "payload": "..."}`
//! (a protobuf payload is the message's bytes in standard base64), and writes one line a request
//! to stdout, flushed at once: `{"id": 1, "payload": "..."}` or
//! `{"id": 1, "error": {"field": "params", "message": "..."}}`.

mod lenient;

use std::io::{self, BufRead, Write};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use e2a_grpc::json::{
    envelope_from_json, envelope_to_json, response_from_json, response_to_json, FieldError,
};
use e2a_grpc::v1::{E2aEnvelope, E2aResponse};
use prost::Message;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request {
    id: Option<Box<RawValue>>,
    message: Option<String>,
    from: Option<String>,
    to: Option<String>,
    payload: Option<String>,
}

#[derive(Serialize)]
struct ErrorBody {
    field: String,
    message: String,
}

#[derive(Serialize)]
struct Answer {
    id: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody>,
}

/// What went wrong with one request: a record error, or a request the testee cannot carry out
/// (field "").
enum Failure {
    Field(FieldError),
    Request(String),
}

impl From<FieldError> for Failure {
    fn from(err: FieldError) -> Self {
        Failure::Field(err)
    }
}

/// The conversions of one record type.
trait Record: Message + Default + Sized {
    const NAME: &'static str;
    const SCHEMA: lenient::Schema;
    fn from_json(text: &str) -> Result<Self, FieldError>;
    fn to_json(&self) -> Result<String, FieldError>;
}

impl Record for E2aEnvelope {
    const NAME: &'static str = "e2a.v1.E2AEnvelope";
    const SCHEMA: lenient::Schema = lenient::Schema::Envelope;
    fn from_json(text: &str) -> Result<Self, FieldError> {
        envelope_from_json(text)
    }
    fn to_json(&self) -> Result<String, FieldError> {
        envelope_to_json(self)
    }
}

impl Record for E2aResponse {
    const NAME: &'static str = "e2a.v1.E2AResponse";
    const SCHEMA: lenient::Schema = lenient::Schema::Response;
    fn from_json(text: &str) -> Result<Self, FieldError> {
        response_from_json(text)
    }
    fn to_json(&self) -> Result<String, FieldError> {
        response_to_json(self)
    }
}

/// Carries out one request on record type `R`; returns the output payload.
fn convert<R: Record>(from_wire: bool, to_wire: bool, payload: &str) -> Result<String, Failure> {
    let message = if from_wire {
        R::from_json(payload)?
    } else {
        let data = BASE64
            .decode(payload)
            .map_err(|err| Failure::Request(format!("payload is not standard base64: {err}")))?;
        // As protobuf's runtimes, take a declared field of another wire type as unknown.
        let data = lenient::strip(&data, R::SCHEMA);
        let message = R::decode(data.as_slice()).map_err(|err| {
            FieldError::new("$", format!("not a valid {} message: {err}", R::NAME))
        })?;
        // Decoding a message checks it: its JSON texts and strings must make a valid record.
        let wire = message.to_json()?;
        if to_wire {
            return Ok(wire);
        }
        R::from_json(&wire)?
    };
    if to_wire {
        Ok(message.to_json()?)
    } else {
        Ok(BASE64.encode(message.encode_to_vec()))
    }
}

fn answer(line: &str) -> Answer {
    let null = || RawValue::from_string("null".into()).expect("null is JSON");
    let request: Request = match serde_json::from_str(line) {
        Ok(request) => request,
        Err(err) => {
            return Answer {
                id: null(),
                payload: None,
                error: Some(ErrorBody {
                    field: String::new(),
                    message: format!("request is not a JSON object of the testee protocol: {err}"),
                }),
            }
        }
    };
    let result = (|| {
        let format = |f: &Option<String>| match f.as_deref() {
            Some("wire_json") => Ok(true),
            Some("protobuf") => Ok(false),
            other => Err(Failure::Request(format!(
                "unknown format {other:?} (want wire_json or protobuf)"
            ))),
        };
        let (from_wire, to_wire) = (format(&request.from)?, format(&request.to)?);
        let payload = request
            .payload
            .as_deref()
            .ok_or_else(|| Failure::Request("payload is missing or not a string".into()))?;
        match request.message.as_deref() {
            Some("envelope") => convert::<E2aEnvelope>(from_wire, to_wire, payload),
            Some("response") => convert::<E2aResponse>(from_wire, to_wire, payload),
            other => Err(Failure::Request(format!(
                "unknown message {other:?} (want envelope or response)"
            ))),
        }
    })();
    let id = request.id.unwrap_or_else(null);
    match result {
        Ok(payload) => Answer {
            id,
            payload: Some(payload),
            error: None,
        },
        Err(failure) => {
            let (field, message) = match failure {
                Failure::Field(err) => (err.field, err.message),
                Failure::Request(message) => (String::new(), message),
            };
            Answer {
                id,
                payload: None,
                error: Some(ErrorBody { field, message }),
            }
        }
    }
}

fn main() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    for line in stdin.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = serde_json::to_string(&answer(&line)).map_err(io::Error::other)?;
        writeln!(stdout, "{answer}")?;
        stdout.flush()?;
    }
    Ok(())
}

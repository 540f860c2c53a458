//! The wire JSON codec on the edge cases of `docs/wire-json.md`: lossless free-form values,
//! defaults, legacy keys, escaping, limits and errors naming fields.

use e2a_grpc::json::{
    envelope_from_json, envelope_to_json, response_from_json, response_to_json, FieldError,
};
use e2a_grpc::v1::{json_rpc_id::Kind, E2aAuth, E2aEnvelope, E2aResponse, HttpHeader, JsonRpcId};

/// The envelope built from an empty message (`docs/wire-json.md` section 1).
const EMPTY_ENVELOPE: &str = concat!(
    r#"{"protocol_version":null,"provenance":{"source_protocol":"e2a","converter":null,"#,
    r#""converted_at":null,"details":{}},"request_id":null,"jsonrpc_id":null,"#,
    r#""correlation_id":null,"task_id":null,"context_id":null,"session_id":null,"#,
    r#""message_id":null,"timestamp":null,"identity_origin":"user","channel":null,"#,
    r#""user_id":null,"agent_ref":null,"chat_id":null,"source_agent_id":null,"agent_id":null,"#,
    r#""service_id":null,"workspace_key":null,"method":null,"params":{},"ext_method":null,"#,
    r#""session_update_kind":null,"is_stream":false,"expected_output_modes":[],"auth":null,"#,
    r#""channel_context":{},"a2a_metadata":{},"acp_meta":{}}"#
);

fn envelope_field_error(text: &str) -> String {
    envelope_from_json(text).expect_err(text).field
}

fn response_field_error(text: &str) -> String {
    response_from_json(text).expect_err(text).field
}

/// The wire JSON the envelope `text` reads as.
fn envelope_wire(text: &str) -> String {
    envelope_to_json(&envelope_from_json(text).unwrap()).unwrap()
}

#[test]
fn empty_message_writes_every_key_in_field_order() {
    assert_eq!(
        envelope_to_json(&E2aEnvelope::default()).unwrap(),
        EMPTY_ENVELOPE
    );
    let response = response_to_json(&E2aResponse::default()).unwrap();
    assert!(response.starts_with(
        r#"{"protocol_version":null,"response_id":null,"request_id":null,"sequence":0,"is_final":false,"status":"","response_kind":"","#
    ));
    assert!(response.ends_with(r#""metadata":{},"a2a_metadata":{},"acp_meta":{}}"#));
}

#[test]
fn absent_keys_read_as_record_defaults() {
    let envelope = envelope_from_json("{}").unwrap();
    assert_eq!(envelope.protocol_version.as_deref(), Some("1.0"));
    assert_eq!(envelope.provenance.unwrap().source_protocol, "e2a");
    let response = response_from_json(" {} ").unwrap();
    assert_eq!(response.status, "in_progress");
    assert!(response_to_json(&response)
        .unwrap()
        .contains(r#""identity_origin":"agent""#));
    // An explicit null protocol_version stays null; null status is its default.
    assert_eq!(
        envelope_from_json(r#"{"protocol_version":null}"#)
            .unwrap()
            .protocol_version,
        None
    );
    let response =
        response_from_json(r#"{"status":null,"response_kind":null,"sequence":null}"#).unwrap();
    assert_eq!(
        (
            response.status.as_str(),
            response.response_kind.as_str(),
            response.sequence
        ),
        ("in_progress", "", 0)
    );
}

#[test]
fn free_form_values_are_kept_exactly() {
    let numbers = concat!(
        r#"{"z":1,"a":18446744073709551616,"f":1.0,"e":1E+2,"neg":-0.0,"big":-"#,
        "123456789012345678901234567890,"
    );
    let text = format!(
        r#"{{"params":{numbers}"s":"\u{{10FFFF}}\/\u007f","empty":{{"o":{{}},"a":[],"s":""}},"n":null}}}}"#
    );
    let text = text.replace("\\u{10FFFF}", "\u{10FFFF}");
    let envelope = envelope_from_json(&text).unwrap();
    assert_eq!(
        envelope.params,
        format!("{numbers}\"s\":\"\u{10FFFF}/\u{7f}\",\"empty\":{{\"o\":{{}},\"a\":[],\"s\":\"\"}},\"n\":null}}")
    );
    let wire = envelope_to_json(&envelope).unwrap();
    assert!(
        wire.contains(&format!(r#""params":{}"#, envelope.params)),
        "{wire}"
    );
}

#[test]
fn whitespace_and_escapes_are_normalized() {
    let wire = envelope_wire(
        "{ \"params\" : { \"k\" : [ 1 , \"\\u00e9\\ud83d\\ude00\\ud800\\/\\u001F\\n\\u2028\" ] } }",
    );
    assert!(
        wire.contains("\"params\":{\"k\":[1,\"é😀\\ud800/\\u001f\\n\u{2028}\"]}"),
        "{wire}"
    );
    // Duplicate keys: the first position, the last value.
    assert!(
        envelope_wire(r#"{"params":{"a":1,"b":2,"a":3}}"#).contains(r#""params":{"a":3,"b":2}"#)
    );
}

#[test]
fn jsonrpc_id_keeps_its_kind() {
    for (text, kind) in [
        (r#""7""#, Kind::StringValue("7".into())),
        ("7", Kind::IntegerValue(7)),
        ("-9223372036854775808", Kind::IntegerValue(i64::MIN)),
        (
            "9223372036854775808",
            Kind::BigIntegerValue("9223372036854775808".into()),
        ),
        ("1.0", Kind::NumberValue(1.0)),
    ] {
        let envelope = envelope_from_json(format!(r#"{{"jsonrpc_id":{text}}}"#)).unwrap();
        assert_eq!(envelope.jsonrpc_id.clone().unwrap().kind, Some(kind));
        assert!(envelope_to_json(&envelope)
            .unwrap()
            .contains(&format!(r#""jsonrpc_id":{text},"#)));
    }
    let floats = E2aEnvelope {
        jsonrpc_id: Some(JsonRpcId {
            kind: Some(Kind::NumberValue(1e16)),
        }),
        ..Default::default()
    };
    assert!(envelope_to_json(&floats)
        .unwrap()
        .contains(r#""jsonrpc_id":1e+16,"#));
}

#[test]
fn legacy_keys() {
    let envelope = envelope_from_json(
        r#"{"channel_id":"web","req_method":"chat.send","metadata":{"x":1,"_jiuwenswarm_server_push":true},
            "payload":{"text":"hi","skip":null,"empty":[]},"binding":"acp","app_id":"app",
            "workspace_dir":" /w ","source_agent_id":" agent-1 ","timestamp":1700000000.25}"#,
    )
    .unwrap();
    assert_eq!(envelope.channel.as_deref(), Some("web"));
    assert_eq!(envelope.method.as_deref(), Some("chat.send"));
    assert_eq!(envelope.channel_context, r#"{"x":1,"app_id":"app"}"#);
    assert_eq!(envelope.params, r#"{"text":"hi"}"#);
    let provenance = envelope.provenance.unwrap();
    assert_eq!(provenance.source_protocol, "acp");
    assert_eq!(provenance.details, r#"{"migrated_from_binding":"acp"}"#);
    assert_eq!(envelope.workspace_key.as_deref(), Some("/w"));
    assert_eq!(envelope.agent_id.as_deref(), Some("agent-1"));
    assert_eq!(
        envelope.timestamp.as_deref(),
        Some("2023-11-14T22:13:20.250000+00:00")
    );
    // Writers never write legacy keys.
    let wire = envelope_wire(r#"{"channel_id":"web","req_method":"m"}"#);
    assert!(!wire.contains("channel_id") && !wire.contains("req_method"));
    // Integer flags of older writers.
    assert!(envelope_from_json(r#"{"is_stream":2}"#).unwrap().is_stream);
}

#[test]
fn extra_headers_keep_header_order() {
    let envelope = E2aEnvelope {
        auth: Some(E2aAuth {
            extra_headers: ["b", "a", "b"]
                .iter()
                .zip(["1", "2", "3"])
                .map(|(name, value)| HttpHeader {
                    name: (*name).into(),
                    value: value.into(),
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(envelope_to_json(&envelope)
        .unwrap()
        .contains(r#""extra_headers":{"b":"3","a":"2"},"_meta":{}}"#));
}

#[test]
fn nesting_limit() {
    let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    // The record's object is level 1 and params level 2: 510 more arrays fit.
    assert!(envelope_from_json(format!(r#"{{"params":{{"a":{}}}}}"#, nested(510))).is_ok());
    assert_eq!(
        envelope_field_error(&format!(r#"{{"params":{{"a":{}}}}}"#, nested(511))),
        "$"
    );
    // Free-form text in protobuf may nest 511 levels below its field in the document.
    let deep = E2aEnvelope {
        params: format!(r#"{{"a":{}}}"#, nested(511)),
        ..Default::default()
    };
    assert_eq!(envelope_to_json(&deep).unwrap_err().field, "params");
}

#[test]
fn integer_digit_limit() {
    let digits = |n: usize| "9".repeat(n);
    assert!(envelope_from_json(format!(r#"{{"params":{{"n":{}}}}}"#, digits(4300))).is_ok());
    assert_eq!(
        envelope_field_error(&format!(r#"{{"params":{{"n":{}}}}}"#, digits(4301))),
        "$"
    );
    let big = E2aEnvelope {
        jsonrpc_id: Some(JsonRpcId {
            kind: Some(Kind::BigIntegerValue(digits(4301))),
        }),
        ..Default::default()
    };
    assert_eq!(envelope_to_json(&big).unwrap_err().field, "jsonrpc_id");
}

#[test]
fn errors_name_the_field() {
    for (text, field) in [
        (r#"{"params":"{}"}"#, "params"),
        (
            r#"{"auth":{"extra_headers":{"X":1}}}"#,
            "auth.extra_headers.X",
        ),
        (
            r#"{"expected_output_modes":["text",1]}"#,
            "expected_output_modes[1]",
        ),
        (r#"{"provenance":{"details":[]}}"#, "provenance.details"),
        (
            r#"{"provenance":{"source_protocol":null}}"#,
            "provenance.source_protocol",
        ),
        (r#"{"binding":["acp"]}"#, "binding"),
        (r#"{"identity_origin":3}"#, "identity_origin"),
        (r#"{"identity_origin":"robot"}"#, "identity_origin"),
        (r#"{"jsonrpc_id":true}"#, "jsonrpc_id"),
        (r#"{"jsonrpc_id":"\udc00"}"#, "jsonrpc_id"),
        (r#"{"request_id":"\ud800"}"#, "request_id"),
        (r#"{"params":"#, "$"),
        (r#"{"params":{"x":NaN}}"#, "$"),
        (r#"{"params":{"x":1e400}}"#, "$"),
        ("[]", "envelope"),
        // The first field in field order.
        (r#"{"acp_meta":1,"params":1}"#, "params"),
    ] {
        assert_eq!(envelope_field_error(text), field, "{text}");
    }
    assert_eq!(
        envelope_from_json(b"{\"params\":{\"a\":\"\xff\"}}")
            .unwrap_err()
            .field,
        "$"
    );
    for (text, field) in [
        (r#"{"sequence":"1"}"#, "sequence"),
        (r#"{"sequence":9223372036854775808}"#, "sequence"),
        // A sequence beyond 64 bits is found after every type check.
        (r#"{"sequence":9223372036854775808,"body":[]}"#, "body"),
        ("1", "response"),
    ] {
        assert_eq!(response_field_error(text), field, "{text}");
    }
    let bad = E2aEnvelope {
        params: "[1]".into(),
        ..Default::default()
    };
    let err = envelope_to_json(&bad).unwrap_err();
    assert_eq!(err.field, "params");
    assert_eq!(err.to_string(), format!("params: {}", err.message));
    let as_error: &dyn std::error::Error = &err;
    assert!(as_error.to_string().starts_with("params: "));
    let unknown = E2aEnvelope {
        identity_origin: 9,
        ..Default::default()
    };
    assert_eq!(
        envelope_to_json(&unknown).unwrap_err(),
        FieldError {
            field: "identity_origin".into(),
            message: "unknown IdentityOrigin value 9".into()
        }
    );
}

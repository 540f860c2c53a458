//! The conformance testee binary: the line protocol of `conformance/README.md`, and the whole
//! suite (`conformance/run.py`, 1221 cases) run against it.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::Json;

const TESTEE: &str = env!("CARGO_BIN_EXE_conformance-testee");

/// The testee's answer lines to `input`.
fn run_testee(input: &str) -> Vec<Json> {
    let mut child = Command::new(TESTEE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the testee starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(Json::parse)
        .collect()
}

#[test]
fn line_protocol() {
    // Python: base64.b64encode(E2AEnvelope.from_json('{"params":{"a":1.0},"request_id":"r"}').to_bytes())
    let python_bytes = "CgMxLjASBQoDZTJhGgFyWAKqAQl7ImEiOjEuMH0=";
    let requests = [
        r#"{"id":1,"message":"envelope","from":"wire_json","to":"protobuf","payload":"{\"params\":{\"a\":1.0},\"request_id\":\"r\"}"}"#.into(),
        format!(r#"{{"id":2,"message":"envelope","from":"protobuf","to":"protobuf","payload":"{python_bytes}"}}"#),
        r#"{"id":3,"message":"response","from":"wire_json","to":"wire_json","payload":"{\"sequence\":true}"}"#.into(),
        r#"{"id":4,"message":"response","from":"protobuf","to":"wire_json","payload":"/w=="}"#.into(),
        r#"{"id":5,"message":"response","from":"protobuf","to":"wire_json","payload":"not base64"}"#.into(),
        r#"{"id":6,"message":"record","from":"wire_json","to":"wire_json","payload":"{}"}"#.into(),
        r#"{"id":7,"message":"envelope","from":"yaml","to":"wire_json","payload":"{}"}"#.into(),
        r#"{"id":8,"message":"envelope","from":"wire_json","to":"wire_json"}"#.into(),
        String::new(), // blank lines are skipped
        "not json".into(),
    ];
    let answers = run_testee(&(requests.join("\n") + "\n"));
    let expected: [(&str, Option<&str>, Option<&str>); 9] = [
        ("1", Some(python_bytes), None),
        ("2", Some(python_bytes), None),
        ("3", None, Some("sequence")),
        ("4", None, Some("$")),
        ("5", None, Some("")),
        ("6", None, Some("")),
        ("7", None, Some("")),
        ("8", None, Some("")),
        ("null", None, Some("")),
    ];
    assert_eq!(answers.len(), expected.len());
    for (answer, (id, payload, field)) in answers.iter().zip(expected) {
        assert_eq!(answer.get("id"), Some(&Json::parse(id)));
        assert_eq!(answer.str("payload").as_deref(), payload, "request {id}");
        let error_field = answer.get("error").and_then(|e| e.str("field"));
        assert_eq!(error_field.as_deref(), field, "request {id}");
    }
}

#[test]
fn conformance_suite() {
    let root = common::repo_root();
    let output = Command::new(root.join(".venv/bin/python"))
        .args(["conformance/run.py", "--command", TESTEE])
        .current_dir(&root)
        .output()
        .expect("running conformance/run.py with the repository's .venv");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "conformance failures:\n{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.contains(" passed, 0 failed"), "{report}");
}

#[test]
fn declared_field_of_another_wire_type_is_an_unknown_field() {
    // E2AEnvelope.jsonrpc_id holding JsonRpcId field 1 (a string) as fixed32: protobuf's
    // runtimes (and so the Python reference) skip it, prost alone would reject the message.
    let answers = run_testee(
        r#"{"id":1,"message":"envelope","from":"protobuf","to":"wire_json","payload":"IgUNAzEyeA=="}"#,
    );
    let payload = answers[0].str("payload").expect("a payload");
    assert!(payload.contains(r#""jsonrpc_id":null,"#), "{payload}");
}

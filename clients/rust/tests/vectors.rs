//! The conformance vectors of `testdata/vectors` (`E2AEnvelope.from_dict`,
//! `E2AResponse.from_dict`): each input read with the codec, sent through binary protobuf and
//! written again must give the vector's `output.ok`; the ill-typed inputs the Python reference
//! rejects must be rejected naming the same field.

mod common;

use std::collections::HashMap;

use common::{repo_root, Json};
use e2a_grpc::json::{
    envelope_from_json, envelope_to_json, response_from_json, response_to_json, FieldError,
};
use e2a_grpc::v1::{E2aEnvelope, E2aResponse};
use prost::Message;
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Vector {
    i: usize,
    input: Input,
    output: Output,
}

#[derive(Deserialize)]
struct Input {
    data: Box<RawValue>,
}

#[derive(Deserialize)]
struct Output {
    ok: Option<Box<RawValue>>,
}

fn vectors(name: &str) -> Vec<Vector> {
    let path = repo_root().join(format!("testdata/vectors/{name}.jsonl"));
    let text = std::fs::read_to_string(&path).expect("the vectors file");
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a vector"))
        .collect()
}

/// The vector inputs the Python reference rejects (ill-typed inputs, which the vectors' README
/// allows an implementation to reject), with the field it names: found once with
/// `E2AEnvelope/E2AResponse.from_json(json.dumps(input["data"])).to_proto()`.
const ENVELOPE_REJECTS: &[(usize, &str)] = &[
    (12, "provenance.source_protocol"),
    (15, "is_stream"),
    (18, "expected_output_modes"),
    (24, "protocol_version"),
    (33, "provenance"),
    (36, "protocol_version"),
    (39, "params"),
    (42, "is_stream"),
    (48, "expected_output_modes"),
    (54, "agent_ref"),
    (60, "agent_ref"),
    (63, "provenance"),
    (66, "agent_ref"),
    (69, "provenance.source_protocol"),
    (72, "identity_origin"),
    (75, "is_stream"),
    (81, "identity_origin"),
    (84, "agent_ref"),
    (87, "timestamp"),
    (99, "is_stream"),
    (102, "identity_origin"),
    (111, "params"),
    (114, "timestamp"),
    (129, "provenance.source_protocol"),
    (150, "params"),
    (168, "protocol_version"),
    (171, "identity_origin"),
    (186, "is_stream"),
    (192, "binding"),
    (195, "is_stream"),
    (198, "protocol_version"),
    (204, "agent_ref"),
    (210, "agent_ref"),
    (222, "timestamp"),
    (225, "identity_origin"),
    (231, "timestamp"),
    (234, "provenance.source_protocol"),
    (243, "identity_origin"),
    (246, "timestamp"),
    (255, "is_stream"),
    (261, "identity_origin"),
    (264, "identity_origin"),
    (267, "source_agent_id"),
    (270, "identity_origin"),
    (291, "identity_origin"),
    (294, "identity_origin"),
];

const RESPONSE_REJECTS: &[(usize, &str)] = &[
    (0, "sequence"),
    (18, "provenance"),
    (27, "provenance"),
    (30, "is_final"),
    (33, "provenance"),
    (42, "sequence"),
    (48, "provenance"),
    (51, "provenance"),
    (54, "provenance"),
    (63, "sequence"),
    (69, "is_final"),
    (81, "sequence"),
    (87, "sequence"),
    (105, "sequence"),
    (108, "identity_origin"),
    (111, "timestamp"),
    (114, "is_final"),
    (117, "is_final"),
    (126, "is_final"),
    (132, "provenance"),
    (147, "sequence"),
    (153, "sequence"),
    (177, "provenance"),
    (201, "sequence"),
    (210, "sequence"),
    (216, "provenance"),
    (219, "body"),
    (228, "sequence"),
    (231, "provenance"),
    (243, "sequence"),
    (258, "provenance"),
    (261, "is_final"),
    (279, "provenance"),
    (288, "sequence"),
    (291, "sequence"),
    (294, "sequence"),
    (297, "body"),
];

/// Reads `text`, sends the message through binary protobuf and writes it again.
fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(
    text: &str,
    read: fn(&str) -> Result<M, FieldError>,
    write: fn(&M) -> Result<String, FieldError>,
) -> Result<String, FieldError> {
    let message = read(text)?;
    let decoded = M::decode(message.encode_to_vec().as_slice()).expect("protobuf decodes");
    assert_eq!(decoded, message, "protobuf round trip changed the message");
    write(&decoded)
}

/// Runs one vector file; `null_defaults` are the never-null fields whose explicit null the
/// codec reads as their default (as protobuf's JSON mapping does) where the vectors' reference
/// copies the null through.
fn check_file<M: Message + Default + PartialEq + std::fmt::Debug>(
    name: &str,
    rejects: &[(usize, &str)],
    null_defaults: &[(&str, &str)],
    read: fn(&str) -> Result<M, FieldError>,
    write: fn(&M) -> Result<String, FieldError>,
) {
    let rejects: HashMap<usize, &str> = rejects.iter().copied().collect();
    let cases = vectors(name);
    assert!(!cases.is_empty(), "no vectors in {name}");
    let (mut compared, mut rejected) = (0, 0);
    for case in &cases {
        let input = case.input.data.get();
        let got = round_trip(input, read, write);
        if let Some(field) = rejects.get(&case.i) {
            let err = got.expect_err(&format!("{name} #{}: Python rejects it", case.i));
            assert_eq!(err.field, *field, "{name} #{}: {err}", case.i);
            rejected += 1;
            continue;
        }
        let got = got.unwrap_or_else(|err| panic!("{name} #{}: {err}", case.i));
        let want = case
            .output
            .ok
            .as_ref()
            .unwrap_or_else(|| panic!("{name} #{}: no output.ok", case.i));
        let mut want = Json::parse(want.get());
        let input_tree = Json::parse(input);
        for (field, default) in null_defaults {
            if input_tree.get(field) == Some(&Json::Null) {
                want.set_str(field, default);
            }
        }
        assert_eq!(Json::parse(&got), want, "{name} #{}: got {got}", case.i);
        compared += 1;
    }
    assert_eq!(compared + rejected, cases.len());
    assert_eq!(
        rejected,
        rejects.len(),
        "{name}: every listed reject is a vector"
    );
    assert!(compared >= 50, "{name}: only {compared} vectors compared");
}

#[test]
fn envelope_from_dict_vectors() {
    check_file::<E2aEnvelope>(
        "E2AEnvelope.from_dict",
        ENVELOPE_REJECTS,
        &[("identity_origin", "user")],
        |text| envelope_from_json(text),
        envelope_to_json,
    );
}

#[test]
fn response_from_dict_vectors() {
    check_file::<E2aResponse>(
        "E2AResponse.from_dict",
        RESPONSE_REJECTS,
        &[("identity_origin", "agent"), ("status", "in_progress")],
        |text| response_from_json(text),
        response_to_json,
    );
}

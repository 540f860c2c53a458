//! The E2A wire JSON codec (`docs/wire-json.md`): whole records between their wire JSON text and
//! their protobuf messages, as the Python reference reads and writes them.
//!
//! [`envelope_from_json`] / [`response_from_json`] read a record's wire JSON (the legacy keys of
//! spec sections 9-11 included) into its message, and [`envelope_to_json`] /
//! [`response_to_json`] write a message as wire JSON: every key in field order, null for unset
//! optional fields, compact, with the escapes and number forms of the document. A bad input
//! gives a [`FieldError`] naming the field the Python reference names.
//!
//! Free-form values (`params`, `body`, `channel_context`, ...) never go through a JSON tree:
//! they are checked and copied as canonical JSON text, so integers of any size, `1.0` vs `1`,
//! key order and all of Unicode survive.
//!
//! ```
//! use e2a_grpc::json::{envelope_from_json, envelope_to_json};
//!
//! let envelope = envelope_from_json(r#"{"method":"chat.send","params":{"n":18446744073709551617,"x":1.0}}"#)?;
//! assert_eq!(envelope.params, r#"{"n":18446744073709551617,"x":1.0}"#);
//! assert!(envelope_to_json(&envelope)?.contains(r#""params":{"n":18446744073709551617,"x":1.0}"#));
//! # Ok::<(), e2a_grpc::json::FieldError>(())
//! ```

mod canonical;
mod error;
mod normalize;
mod read;
mod write;

pub use error::FieldError;
pub use normalize::{MAX_DEPTH, MAX_INT_DIGITS};

use crate::v1::{E2aEnvelope, E2aResponse, IdentityOrigin};
use read::{Slot, Text, DEFAULT_PROTOCOL_VERSION, DEFAULT_STATUS};
use write::Writer;

/// Reads the wire JSON of a request record into its protobuf message, as the Python
/// reference's `E2AEnvelope.from_json(text).to_proto()` does.
///
/// The text may be a `&str` or bytes (bytes that are not UTF-8 are an error naming `$`).
/// Free-form values are kept as canonical JSON text: numbers as written, key order kept,
/// whitespace removed, `{}` as `""`.
///
/// # Errors
///
/// A [`FieldError`] naming the first field at fault (`$` for text that is not JSON).
pub fn envelope_from_json(text: impl AsRef<[u8]>) -> Result<E2aEnvelope, FieldError> {
    let doc = Text::read(text.as_ref(), "envelope")?;
    let mut d = doc.reader();
    let protocol_version = protocol_version(&mut d)?;
    let provenance = d.envelope_provenance()?;
    let request_id = d.text(Slot::RequestId)?;
    let jsonrpc_id = d.jsonrpc_id(Slot::JsonrpcId)?;
    let correlation_id = d.text(Slot::CorrelationId)?;
    let task_id = d.text(Slot::TaskId)?;
    let context_id = d.text(Slot::ContextId)?;
    let session_id = d.text(Slot::SessionId)?;
    let message_id = d.text(Slot::MessageId)?;
    let timestamp = d.timestamp()?;
    let identity_origin = d.identity_origin(IdentityOrigin::User)?;
    let channel = d.channel()?;
    let user_id = d.text(Slot::UserId)?;
    let agent_ref = d.agent_ref()?;
    let chat_id = d.text(Slot::ChatId)?;
    let source_agent_id = d.text(Slot::SourceAgentId)?;
    let agent_id = d.stripped("agent_id", &[Slot::AgentId, Slot::SourceAgentId]);
    let service_id = d.stripped("service_id", &[Slot::ServiceId]);
    let workspace_key = d.stripped("workspace_key", &[Slot::WorkspaceKey, Slot::WorkspaceDir]);
    let method = d.method()?;
    let params = d.params()?;
    let ext_method = d.text(Slot::ExtMethod)?;
    let session_update_kind = d.text(Slot::SessionUpdateKind)?;
    let is_stream = d.flag(Slot::IsStream)?;
    let expected_output_modes = d.text_list(Slot::ExpectedOutputModes)?;
    let auth = d.auth()?;
    let channel_context = d.channel_context()?;
    let a2a_metadata = d.object_field(Slot::A2aMetadata)?;
    let acp_meta = d.object_field(Slot::AcpMeta)?;
    d.finish()?;
    Ok(E2aEnvelope {
        protocol_version,
        provenance: Some(provenance),
        request_id,
        jsonrpc_id,
        correlation_id,
        task_id,
        context_id,
        session_id,
        message_id,
        timestamp,
        identity_origin,
        channel,
        user_id,
        agent_ref,
        chat_id,
        source_agent_id,
        agent_id,
        service_id,
        workspace_key,
        method,
        params,
        ext_method,
        session_update_kind,
        is_stream,
        expected_output_modes,
        auth,
        channel_context,
        a2a_metadata,
        acp_meta,
    })
}

/// Reads the wire JSON of a response record (a stream frame) into its protobuf message, as the
/// Python reference's `E2AResponse.from_json(text).to_proto()` does.
///
/// # Errors
///
/// A [`FieldError`] naming the first field at fault (`$` for text that is not JSON).
pub fn response_from_json(text: impl AsRef<[u8]>) -> Result<E2aResponse, FieldError> {
    let doc = Text::read(text.as_ref(), "response")?;
    let mut d = doc.reader();
    let protocol_version = protocol_version(&mut d)?;
    let response_id = d.text(Slot::ResponseId)?;
    let request_id = d.text(Slot::RequestId)?;
    let sequence = d.integer(Slot::Sequence)?;
    let is_final = d.flag(Slot::IsFinal)?;
    // A null status reads as its default, as an absent one does.
    let status = d.plain_text(Slot::Status, DEFAULT_STATUS)?;
    // A null response_kind reads as "" (no kind), as older writers sent it.
    let response_kind = d.text(Slot::ResponseKind)?.unwrap_or_default();
    let timestamp = d.timestamp()?;
    let (mut provenance, details) = d.provenance()?;
    provenance.details = details.map(str::to_owned).unwrap_or_default();
    let body = d.object_field(Slot::Body)?;
    let jsonrpc_id = d.jsonrpc_id(Slot::JsonrpcId)?;
    let correlation_id = d.text(Slot::CorrelationId)?;
    let task_id = d.text(Slot::TaskId)?;
    let context_id = d.text(Slot::ContextId)?;
    let session_id = d.text(Slot::SessionId)?;
    let message_id = d.text(Slot::MessageId)?;
    let is_stream = d.flag(Slot::IsStream)?;
    let identity_origin = d.identity_origin(IdentityOrigin::Agent)?;
    let channel = d.channel()?;
    let user_id = d.text(Slot::UserId)?;
    let agent_ref = d.agent_ref()?;
    let source_agent_id = d.text(Slot::SourceAgentId)?;
    let method = d.text(Slot::Method)?;
    let projections = d.object_field(Slot::Projections)?;
    let channel_context = d.object_field(Slot::ChannelContext)?;
    let metadata = d.object_field(Slot::Metadata)?;
    let a2a_metadata = d.object_field(Slot::A2aMetadata)?;
    let acp_meta = d.object_field(Slot::AcpMeta)?;
    d.finish()?;
    Ok(E2aResponse {
        protocol_version,
        response_id,
        request_id,
        sequence,
        is_final,
        status,
        response_kind,
        timestamp,
        provenance: Some(provenance),
        body,
        jsonrpc_id,
        correlation_id,
        task_id,
        context_id,
        session_id,
        message_id,
        is_stream,
        identity_origin,
        channel,
        user_id,
        agent_ref,
        source_agent_id,
        method,
        projections,
        channel_context,
        metadata,
        a2a_metadata,
        acp_meta,
    })
}

/// Reads `protocol_version`: absent is "1.0", null stays null.
fn protocol_version(d: &mut read::Reader<'_>) -> Result<Option<String>, FieldError> {
    if d.raw(Slot::ProtocolVersion).is_none() {
        return Ok(Some(DEFAULT_PROTOCOL_VERSION.to_owned()));
    }
    d.text(Slot::ProtocolVersion)
}

/// Writes the wire JSON of a request message, as the Python reference's
/// `E2AEnvelope.from_proto(msg).to_json()` does: every field in field order, null for unset
/// optional fields, free-form JSON text embedded as JSON values in canonical form.
///
/// # Errors
///
/// A [`FieldError`] naming the field whose free-form text is not a JSON object (or nests too
/// deep), a `jsonrpc_id` that is not a JSON number, or an unknown `identity_origin` value.
pub fn envelope_to_json(m: &E2aEnvelope) -> Result<String, FieldError> {
    let provenance = m.provenance.as_ref();
    let mut w = Writer::new(
        m.params.len()
            + m.channel_context.len()
            + m.agent_ref.len()
            + m.a2a_metadata.len()
            + m.acp_meta.len()
            + provenance.map_or(0, |p| p.details.len()),
    );
    w.key("protocol_version");
    w.opt_str(m.protocol_version.as_deref());
    w.key("provenance");
    w.provenance(provenance);
    w.key("request_id");
    w.opt_str(m.request_id.as_deref());
    w.key("jsonrpc_id");
    w.jsonrpc_id("jsonrpc_id", m.jsonrpc_id.as_ref());
    for (key, value) in [
        ("correlation_id", &m.correlation_id),
        ("task_id", &m.task_id),
        ("context_id", &m.context_id),
        ("session_id", &m.session_id),
        ("message_id", &m.message_id),
        ("timestamp", &m.timestamp),
    ] {
        w.key(key);
        w.opt_str(value.as_deref());
    }
    w.key("identity_origin");
    w.origin(m.identity_origin, IdentityOrigin::User);
    w.key("channel");
    w.opt_str(m.channel.as_deref());
    w.key("user_id");
    w.opt_str(m.user_id.as_deref());
    w.key("agent_ref");
    w.object("agent_ref", &m.agent_ref, true, 2);
    for (key, value) in [
        ("chat_id", &m.chat_id),
        ("source_agent_id", &m.source_agent_id),
        ("agent_id", &m.agent_id),
        ("service_id", &m.service_id),
        ("workspace_key", &m.workspace_key),
        ("method", &m.method),
    ] {
        w.key(key);
        w.opt_str(value.as_deref());
    }
    w.key("params");
    w.object("params", &m.params, false, 2);
    w.key("ext_method");
    w.opt_str(m.ext_method.as_deref());
    w.key("session_update_kind");
    w.opt_str(m.session_update_kind.as_deref());
    w.key("is_stream");
    w.bool(m.is_stream);
    w.key("expected_output_modes");
    w.string_list(&m.expected_output_modes);
    w.key("auth");
    w.auth(m.auth.as_ref());
    for (key, value) in [
        ("channel_context", &m.channel_context),
        ("a2a_metadata", &m.a2a_metadata),
        ("acp_meta", &m.acp_meta),
    ] {
        w.key(key);
        w.object(key, value, false, 2);
    }
    w.finish()
}

/// Writes the wire JSON of a response message, as the Python reference's
/// `E2AResponse.from_proto(msg).to_json()` does (see [`envelope_to_json`]).
///
/// # Errors
///
/// As [`envelope_to_json`].
pub fn response_to_json(m: &E2aResponse) -> Result<String, FieldError> {
    let provenance = m.provenance.as_ref();
    let mut w = Writer::new(
        m.body.len()
            + m.projections.len()
            + m.channel_context.len()
            + m.agent_ref.len()
            + m.metadata.len()
            + m.a2a_metadata.len()
            + m.acp_meta.len()
            + provenance.map_or(0, |p| p.details.len()),
    );
    w.key("protocol_version");
    w.opt_str(m.protocol_version.as_deref());
    w.key("response_id");
    w.opt_str(m.response_id.as_deref());
    w.key("request_id");
    w.opt_str(m.request_id.as_deref());
    w.key("sequence");
    w.int(m.sequence);
    w.key("is_final");
    w.bool(m.is_final);
    w.key("status");
    w.str(&m.status);
    w.key("response_kind");
    w.str(&m.response_kind);
    w.key("timestamp");
    w.opt_str(m.timestamp.as_deref());
    w.key("provenance");
    w.provenance(provenance);
    w.key("body");
    w.object("body", &m.body, false, 2);
    w.key("jsonrpc_id");
    w.jsonrpc_id("jsonrpc_id", m.jsonrpc_id.as_ref());
    for (key, value) in [
        ("correlation_id", &m.correlation_id),
        ("task_id", &m.task_id),
        ("context_id", &m.context_id),
        ("session_id", &m.session_id),
        ("message_id", &m.message_id),
    ] {
        w.key(key);
        w.opt_str(value.as_deref());
    }
    w.key("is_stream");
    w.bool(m.is_stream);
    w.key("identity_origin");
    w.origin(m.identity_origin, IdentityOrigin::Agent);
    w.key("channel");
    w.opt_str(m.channel.as_deref());
    w.key("user_id");
    w.opt_str(m.user_id.as_deref());
    w.key("agent_ref");
    w.object("agent_ref", &m.agent_ref, true, 2);
    w.key("source_agent_id");
    w.opt_str(m.source_agent_id.as_deref());
    w.key("method");
    w.opt_str(m.method.as_deref());
    for (key, value) in [
        ("projections", &m.projections),
        ("channel_context", &m.channel_context),
        ("metadata", &m.metadata),
        ("a2a_metadata", &m.a2a_metadata),
        ("acp_meta", &m.acp_meta),
    ] {
        w.key(key);
        w.object(key, value, false, 2);
    }
    w.finish()
}

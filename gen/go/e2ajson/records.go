package e2ajson

import (
	"strconv"

	e2av1 "e2agrpc/gen/go/e2a/v1"
)

// UnmarshalEnvelope reads the E2A wire JSON of a request (legacy keys of spec sections 9-11
// included) into its protobuf message, as the Python reference's
// E2AEnvelope.from_json(data).to_proto() does. Free-form values (params, channel_context, ...) are
// carried over as canonical JSON text: numbers as written, key order kept. A bad input gives a
// *FieldError naming the field Python names.
func UnmarshalEnvelope(data []byte) (*e2av1.E2AEnvelope, error) {
	d, err := readDocument(data, "envelope")
	if err != nil {
		return nil, err
	}
	m := &e2av1.E2AEnvelope{}
	if m.ProtocolVersion, err = d.protocolVersion(); err != nil {
		return nil, err
	}
	if m.Provenance, err = d.envelopeProvenance(); err != nil {
		return nil, err
	}
	if m.RequestId, err = d.text(sRequestID); err != nil {
		return nil, err
	}
	if m.JsonrpcId, err = d.jsonrpcID(sJSONRPCID); err != nil {
		return nil, err
	}
	for _, field := range []struct {
		s   slot
		dst **string
	}{
		{sCorrelationID, &m.CorrelationId}, {sTaskID, &m.TaskId}, {sContextID, &m.ContextId},
		{sSessionID, &m.SessionId}, {sMessageID, &m.MessageId},
	} {
		if *field.dst, err = d.text(field.s); err != nil {
			return nil, err
		}
	}
	if m.Timestamp, err = d.timestamp(); err != nil {
		return nil, err
	}
	if m.IdentityOrigin, err = d.identityOrigin(e2av1.IdentityOrigin_IDENTITY_ORIGIN_USER); err != nil {
		return nil, err
	}
	if m.Channel, err = d.channel(); err != nil {
		return nil, err
	}
	if m.UserId, err = d.text(sUserID); err != nil {
		return nil, err
	}
	if m.AgentRef, err = d.agentRef(); err != nil {
		return nil, err
	}
	if m.ChatId, err = d.text(sChatID); err != nil {
		return nil, err
	}
	if m.SourceAgentId, err = d.text(sSourceAgentID); err != nil {
		return nil, err
	}
	m.AgentId = d.stripped("agent_id", sAgentID, sSourceAgentID)
	m.ServiceId = d.stripped("service_id", sServiceID)
	m.WorkspaceKey = d.stripped("workspace_key", sWorkspaceKey, sWorkspaceDir)
	if m.Method, err = d.method(); err != nil {
		return nil, err
	}
	if m.Params, err = d.params(); err != nil {
		return nil, err
	}
	if m.ExtMethod, err = d.text(sExtMethod); err != nil {
		return nil, err
	}
	if m.SessionUpdateKind, err = d.text(sSessionUpdateKind); err != nil {
		return nil, err
	}
	if m.IsStream, err = d.flag(sIsStream); err != nil {
		return nil, err
	}
	if m.ExpectedOutputModes, err = d.textList(sExpectedOutputModes); err != nil {
		return nil, err
	}
	if m.Auth, err = d.auth(); err != nil {
		return nil, err
	}
	if m.ChannelContext, err = d.channelContext(); err != nil {
		return nil, err
	}
	if m.A2AMetadata, err = d.objectField(sA2AMetadata); err != nil {
		return nil, err
	}
	if m.AcpMeta, err = d.objectField(sACPMeta); err != nil {
		return nil, err
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return m, nil
}

// UnmarshalResponse reads the E2A wire JSON of a response record (legacy keys included) into its
// protobuf message, as E2AResponse.from_json(data).to_proto() does in the Python reference.
func UnmarshalResponse(data []byte) (*e2av1.E2AResponse, error) {
	d, err := readDocument(data, "response")
	if err != nil {
		return nil, err
	}
	m := &e2av1.E2AResponse{}
	if m.ProtocolVersion, err = d.protocolVersion(); err != nil {
		return nil, err
	}
	if m.ResponseId, err = d.text(sResponseID); err != nil {
		return nil, err
	}
	if m.RequestId, err = d.text(sRequestID); err != nil {
		return nil, err
	}
	if m.Sequence, err = d.integer(sSequence); err != nil {
		return nil, err
	}
	if m.IsFinal, err = d.flag(sIsFinal); err != nil {
		return nil, err
	}
	// A null status reads as its default, as an absent one does.
	status, lone, err := d.plainText(sStatus, defaultStatus)
	if err != nil {
		return nil, err
	}
	if lone {
		d.deferBuild(loneSurrogateError("status"))
	}
	m.Status = status
	// A null response_kind reads as "" (no kind), as older writers sent it.
	kind, err := d.text(sResponseKind)
	if err != nil {
		return nil, err
	}
	if kind != nil {
		m.ResponseKind = *kind
	}
	if m.Timestamp, err = d.timestamp(); err != nil {
		return nil, err
	}
	provenance, details, err := d.provenance(d.values[sProvenance])
	if err != nil {
		return nil, err
	}
	provenance.Details = objectText(details)
	m.Provenance = provenance
	if m.Body, err = d.objectField(sBody); err != nil {
		return nil, err
	}
	if m.JsonrpcId, err = d.jsonrpcID(sJSONRPCID); err != nil {
		return nil, err
	}
	for _, field := range []struct {
		s   slot
		dst **string
	}{
		{sCorrelationID, &m.CorrelationId}, {sTaskID, &m.TaskId}, {sContextID, &m.ContextId},
		{sSessionID, &m.SessionId}, {sMessageID, &m.MessageId},
	} {
		if *field.dst, err = d.text(field.s); err != nil {
			return nil, err
		}
	}
	if m.IsStream, err = d.flag(sIsStream); err != nil {
		return nil, err
	}
	if m.IdentityOrigin, err = d.identityOrigin(e2av1.IdentityOrigin_IDENTITY_ORIGIN_AGENT); err != nil {
		return nil, err
	}
	if m.Channel, err = d.channel(); err != nil {
		return nil, err
	}
	if m.UserId, err = d.text(sUserID); err != nil {
		return nil, err
	}
	if m.AgentRef, err = d.agentRef(); err != nil {
		return nil, err
	}
	if m.SourceAgentId, err = d.text(sSourceAgentID); err != nil {
		return nil, err
	}
	if m.Method, err = d.text(sMethod); err != nil {
		return nil, err
	}
	for _, field := range []struct {
		s   slot
		dst *string
	}{
		{sProjections, &m.Projections}, {sChannelContext, &m.ChannelContext}, {sMetadata, &m.Metadata},
		{sA2AMetadata, &m.A2AMetadata}, {sACPMeta, &m.AcpMeta},
	} {
		if *field.dst, err = d.objectField(field.s); err != nil {
			return nil, err
		}
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return m, nil
}

// protocolVersion reads protocol_version: absent is "1.0", null stays null.
func (d *document) protocolVersion() (*string, error) {
	if d.values[sProtocolVersion] == nil {
		version := defaultProtocolVersion
		return &version, nil
	}
	return d.text(sProtocolVersion)
}

// objectField reads the free-form object field s as the message's JSON text.
func (d *document) objectField(s slot) (string, error) {
	value, err := d.object(d.values[s], slotNames[s])
	return objectText(value), err
}

// MarshalEnvelope writes the E2A wire JSON of a request message, as the Python reference's
// E2AEnvelope.from_proto(m).to_json() does: every field in field order, null for unset optional
// fields, free-form JSON text embedded as JSON values in canonical form. Free-form text that is
// not a JSON object, or a string that is not UTF-8, gives a *FieldError naming the field.
func MarshalEnvelope(m *e2av1.E2AEnvelope) ([]byte, error) {
	w := newWriter(len(m.GetParams()) + len(m.GetChannelContext()) + len(m.GetAgentRef()) +
		len(m.GetA2AMetadata()) + len(m.GetAcpMeta()) + len(m.GetProvenance().GetDetails()))
	w.buf = append(w.buf, '{')
	w.key("protocol_version")
	w.optStr("protocol_version", m.ProtocolVersion)
	w.key("provenance")
	w.provenance(m.GetProvenance())
	w.key("request_id")
	w.optStr("request_id", m.RequestId)
	w.key("jsonrpc_id")
	w.jsonrpcID("jsonrpc_id", m.GetJsonrpcId())
	w.key("correlation_id")
	w.optStr("correlation_id", m.CorrelationId)
	w.key("task_id")
	w.optStr("task_id", m.TaskId)
	w.key("context_id")
	w.optStr("context_id", m.ContextId)
	w.key("session_id")
	w.optStr("session_id", m.SessionId)
	w.key("message_id")
	w.optStr("message_id", m.MessageId)
	w.key("timestamp")
	w.optStr("timestamp", m.Timestamp)
	w.key("identity_origin")
	w.origin(m.GetIdentityOrigin(), e2av1.IdentityOrigin_IDENTITY_ORIGIN_USER)
	w.key("channel")
	w.optStr("channel", m.Channel)
	w.key("user_id")
	w.optStr("user_id", m.UserId)
	w.key("agent_ref")
	w.object("agent_ref", m.GetAgentRef(), true, 2)
	w.key("chat_id")
	w.optStr("chat_id", m.ChatId)
	w.key("source_agent_id")
	w.optStr("source_agent_id", m.SourceAgentId)
	w.key("agent_id")
	w.optStr("agent_id", m.AgentId)
	w.key("service_id")
	w.optStr("service_id", m.ServiceId)
	w.key("workspace_key")
	w.optStr("workspace_key", m.WorkspaceKey)
	w.key("method")
	w.optStr("method", m.Method)
	w.key("params")
	w.object("params", m.GetParams(), false, 2)
	w.key("ext_method")
	w.optStr("ext_method", m.ExtMethod)
	w.key("session_update_kind")
	w.optStr("session_update_kind", m.SessionUpdateKind)
	w.key("is_stream")
	w.bool(m.GetIsStream())
	w.key("expected_output_modes")
	w.stringList("expected_output_modes", m.GetExpectedOutputModes())
	w.key("auth")
	w.auth(m.GetAuth())
	w.key("channel_context")
	w.object("channel_context", m.GetChannelContext(), false, 2)
	w.key("a2a_metadata")
	w.object("a2a_metadata", m.GetA2AMetadata(), false, 2)
	w.key("acp_meta")
	w.object("acp_meta", m.GetAcpMeta(), false, 2)
	w.buf = append(w.buf, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

// MarshalResponse writes the E2A wire JSON of a response message, as the Python reference's
// E2AResponse.from_proto(m).to_json() does (see MarshalEnvelope).
func MarshalResponse(m *e2av1.E2AResponse) ([]byte, error) {
	w := newWriter(len(m.GetBody()) + len(m.GetProjections()) + len(m.GetChannelContext()) + len(m.GetAgentRef()) +
		len(m.GetMetadata()) + len(m.GetA2AMetadata()) + len(m.GetAcpMeta()) + len(m.GetProvenance().GetDetails()))
	w.buf = append(w.buf, '{')
	w.key("protocol_version")
	w.optStr("protocol_version", m.ProtocolVersion)
	w.key("response_id")
	w.optStr("response_id", m.ResponseId)
	w.key("request_id")
	w.optStr("request_id", m.RequestId)
	w.key("sequence")
	w.buf = strconv.AppendInt(w.buf, m.GetSequence(), 10)
	w.key("is_final")
	w.bool(m.GetIsFinal())
	w.key("status")
	w.str("status", m.GetStatus())
	w.key("response_kind")
	w.str("response_kind", m.GetResponseKind())
	w.key("timestamp")
	w.optStr("timestamp", m.Timestamp)
	w.key("provenance")
	w.provenance(m.GetProvenance())
	w.key("body")
	w.object("body", m.GetBody(), false, 2)
	w.key("jsonrpc_id")
	w.jsonrpcID("jsonrpc_id", m.GetJsonrpcId())
	w.key("correlation_id")
	w.optStr("correlation_id", m.CorrelationId)
	w.key("task_id")
	w.optStr("task_id", m.TaskId)
	w.key("context_id")
	w.optStr("context_id", m.ContextId)
	w.key("session_id")
	w.optStr("session_id", m.SessionId)
	w.key("message_id")
	w.optStr("message_id", m.MessageId)
	w.key("is_stream")
	w.bool(m.GetIsStream())
	w.key("identity_origin")
	w.origin(m.GetIdentityOrigin(), e2av1.IdentityOrigin_IDENTITY_ORIGIN_AGENT)
	w.key("channel")
	w.optStr("channel", m.Channel)
	w.key("user_id")
	w.optStr("user_id", m.UserId)
	w.key("agent_ref")
	w.object("agent_ref", m.GetAgentRef(), true, 2)
	w.key("source_agent_id")
	w.optStr("source_agent_id", m.SourceAgentId)
	w.key("method")
	w.optStr("method", m.Method)
	w.key("projections")
	w.object("projections", m.GetProjections(), false, 2)
	w.key("channel_context")
	w.object("channel_context", m.GetChannelContext(), false, 2)
	w.key("metadata")
	w.object("metadata", m.GetMetadata(), false, 2)
	w.key("a2a_metadata")
	w.object("a2a_metadata", m.GetA2AMetadata(), false, 2)
	w.key("acp_meta")
	w.object("acp_meta", m.GetAcpMeta(), false, 2)
	w.buf = append(w.buf, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

package io.e2a.v1.json;

import io.e2a.v1.E2AAuth;
import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AProvenance;
import io.e2a.v1.E2AResponse;
import io.e2a.v1.HttpHeader;
import io.e2a.v1.IdentityOrigin;
import io.e2a.v1.JsonRpcId;
import java.math.BigInteger;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Writes a record's wire JSON: every field, in field order, compact (docs/wire-json.md 1, 5). */
final class WireWriter {
  private final StringBuilder out = new StringBuilder(1024);

  private WireWriter() {}

  private void key(String name) {
    char last = out.charAt(out.length() - 1);
    if (last != '{') {
      out.append(',');
    }
    out.append('"').append(name).append("\":");
  }

  private void str(String path, String s) {
    if (JsonValue.firstLoneSurrogate(s) >= 0) {
      throw new E2AJsonException(path, "string is not valid Unicode (lone surrogate)");
    }
    JsonValue.quote(s, out);
  }

  private void optStr(String path, boolean has, String s) {
    if (!has) {
      out.append("null");
    } else {
      str(path, s);
    }
  }

  /** Field key plus optional string value. */
  private void opt(String name, boolean has, String s) {
    key(name);
    optStr(name, has, s);
  }

  /**
   * A free-form object field, checked and in canonical form. Empty text is the field's default:
   * {} or, for agent_ref, null. depth is the level of the field's object in the document.
   */
  private void object(String path, String text, boolean emptyIsNull, int depth) {
    if (text.isEmpty()) {
      out.append(emptyIsNull ? "null" : "{}");
      return;
    }
    JsonValue value = JsonValue.parse(text, path, depth);
    if (!(value instanceof JsonValue.Obj)) {
      throw WireReader.typeError(path, "JSON text of an object", value);
    }
    JsonValue.write(value, out);
  }

  private void jsonrpcId(String path, boolean has, JsonRpcId id) {
    if (!has) {
      out.append("null");
      return;
    }
    switch (id.getKindCase()) {
      case STRING_VALUE -> str(path, id.getStringValue());
      case INTEGER_VALUE -> out.append(id.getIntegerValue());
      case NUMBER_VALUE -> {
        double d = id.getNumberValue();
        if (Double.isNaN(d) || Double.isInfinite(d)) {
          throw new E2AJsonException(
              path, "number_value " + Floats.pyRepr(d) + " is not a JSON number");
        }
        out.append(Floats.wire(d));
      }
      case BIG_INTEGER_VALUE -> out.append(bigIntText(path, id.getBigIntegerValue()));
      default -> out.append("null");
    }
  }

  /** The canonical decimal text of a protobuf big_integer_value. */
  static String bigIntText(String path, String digits) {
    String unsigned = digits.startsWith("-") ? digits.substring(1) : digits;
    if (unsigned.isEmpty() || !unsigned.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new E2AJsonException(
          path, "big_integer_value '" + digits + "' is not a decimal integer");
    }
    if (unsigned.length() > JsonValue.MAX_INT_DIGITS) {
      throw new E2AJsonException(
          path,
          "big_integer_value has "
              + unsigned.length()
              + " digits, more than "
              + JsonValue.MAX_INT_DIGITS);
    }
    return new BigInteger(digits).toString();
  }

  private void origin(int value, IdentityOrigin def) {
    IdentityOrigin origin = IdentityOrigin.forNumber(value);
    if (origin == IdentityOrigin.IDENTITY_ORIGIN_UNSPECIFIED) {
      origin = def;
    }
    if (origin == null) {
      throw new E2AJsonException("identity_origin", "unknown IdentityOrigin value " + value);
    }
    out.append(
        switch (origin) {
          case IDENTITY_ORIGIN_SYSTEM -> "\"system\"";
          case IDENTITY_ORIGIN_USER -> "\"user\"";
          case IDENTITY_ORIGIN_AGENT -> "\"agent\"";
          case IDENTITY_ORIGIN_SERVICE -> "\"service\"";
          default -> throw new E2AJsonException(
              "identity_origin", "unknown IdentityOrigin value " + value);
        });
  }

  private void provenance(boolean has, E2AProvenance p) {
    if (!has) {
      out.append(
          "{\"source_protocol\":\"e2a\",\"converter\":null,\"converted_at\":null,\"details\":{}}");
      return;
    }
    out.append('{');
    key("source_protocol");
    str("provenance.source_protocol", p.getSourceProtocol());
    key("converter");
    optStr("provenance.converter", p.hasConverter(), p.getConverter());
    key("converted_at");
    optStr("provenance.converted_at", p.hasConvertedAt(), p.getConvertedAt());
    key("details");
    object("provenance.details", p.getDetails(), false, 3);
    out.append('}');
  }

  /**
   * The auth object or null. extra_headers becomes an object: a repeated header name keeps its
   * first position and takes its last value, as a Python dict built from the list does.
   */
  private void auth(boolean has, E2AAuth a) {
    if (!has) {
      out.append("null");
      return;
    }
    out.append('{');
    key("method_id");
    optStr("auth.method_id", a.hasMethodId(), a.getMethodId());
    key("bearer_token");
    optStr("auth.bearer_token", a.hasBearerToken(), a.getBearerToken());
    key("api_key_ref");
    optStr("auth.api_key_ref", a.hasApiKeyRef(), a.getApiKeyRef());
    key("credential_ref");
    optStr("auth.credential_ref", a.hasCredentialRef(), a.getCredentialRef());
    key("extra_headers");
    out.append('{');
    List<HttpHeader> headers = a.getExtraHeadersList();
    Map<String, Integer> last = new HashMap<>();
    for (int i = 0; i < headers.size(); i++) {
      last.put(headers.get(i).getName(), i);
    }
    for (HttpHeader header : headers) {
      Integer winner = last.remove(header.getName());
      if (winner == null) {
        continue; // written at the name's first position
      }
      if (out.charAt(out.length() - 1) != '{') {
        out.append(',');
      }
      str("auth.extra_headers", header.getName());
      out.append(':');
      str("auth.extra_headers." + header.getName(), headers.get(winner).getValue());
    }
    out.append('}');
    key("_meta");
    object("auth._meta", a.getMeta(), false, 3);
    out.append('}');
  }

  private void stringList(String path, List<String> list) {
    out.append('[');
    for (int i = 0; i < list.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      str(path, list.get(i));
    }
    out.append(']');
  }

  static String envelope(E2AEnvelope m) {
    WireWriter w = new WireWriter();
    w.out.append('{');
    w.opt("protocol_version", m.hasProtocolVersion(), m.getProtocolVersion());
    w.key("provenance");
    w.provenance(m.hasProvenance(), m.getProvenance());
    w.opt("request_id", m.hasRequestId(), m.getRequestId());
    w.key("jsonrpc_id");
    w.jsonrpcId("jsonrpc_id", m.hasJsonrpcId(), m.getJsonrpcId());
    w.opt("correlation_id", m.hasCorrelationId(), m.getCorrelationId());
    w.opt("task_id", m.hasTaskId(), m.getTaskId());
    w.opt("context_id", m.hasContextId(), m.getContextId());
    w.opt("session_id", m.hasSessionId(), m.getSessionId());
    w.opt("message_id", m.hasMessageId(), m.getMessageId());
    w.opt("timestamp", m.hasTimestamp(), m.getTimestamp());
    w.key("identity_origin");
    w.origin(m.getIdentityOriginValue(), IdentityOrigin.IDENTITY_ORIGIN_USER);
    w.opt("channel", m.hasChannel(), m.getChannel());
    w.opt("user_id", m.hasUserId(), m.getUserId());
    w.key("agent_ref");
    w.object("agent_ref", m.getAgentRef(), true, 2);
    w.opt("chat_id", m.hasChatId(), m.getChatId());
    w.opt("source_agent_id", m.hasSourceAgentId(), m.getSourceAgentId());
    w.opt("agent_id", m.hasAgentId(), m.getAgentId());
    w.opt("service_id", m.hasServiceId(), m.getServiceId());
    w.opt("workspace_key", m.hasWorkspaceKey(), m.getWorkspaceKey());
    w.opt("method", m.hasMethod(), m.getMethod());
    w.key("params");
    w.object("params", m.getParams(), false, 2);
    w.opt("ext_method", m.hasExtMethod(), m.getExtMethod());
    w.opt("session_update_kind", m.hasSessionUpdateKind(), m.getSessionUpdateKind());
    w.key("is_stream");
    w.out.append(m.getIsStream());
    w.key("expected_output_modes");
    w.stringList("expected_output_modes", m.getExpectedOutputModesList());
    w.key("auth");
    w.auth(m.hasAuth(), m.getAuth());
    w.key("channel_context");
    w.object("channel_context", m.getChannelContext(), false, 2);
    w.key("a2a_metadata");
    w.object("a2a_metadata", m.getA2AMetadata(), false, 2);
    w.key("acp_meta");
    w.object("acp_meta", m.getAcpMeta(), false, 2);
    w.out.append('}');
    return w.out.toString();
  }

  static String response(E2AResponse m) {
    WireWriter w = new WireWriter();
    w.out.append('{');
    w.opt("protocol_version", m.hasProtocolVersion(), m.getProtocolVersion());
    w.opt("response_id", m.hasResponseId(), m.getResponseId());
    w.opt("request_id", m.hasRequestId(), m.getRequestId());
    w.key("sequence");
    w.out.append(m.getSequence());
    w.key("is_final");
    w.out.append(m.getIsFinal());
    w.key("status");
    w.str("status", m.getStatus());
    w.key("response_kind");
    w.str("response_kind", m.getResponseKind());
    w.opt("timestamp", m.hasTimestamp(), m.getTimestamp());
    w.key("provenance");
    w.provenance(m.hasProvenance(), m.getProvenance());
    w.key("body");
    w.object("body", m.getBody(), false, 2);
    w.key("jsonrpc_id");
    w.jsonrpcId("jsonrpc_id", m.hasJsonrpcId(), m.getJsonrpcId());
    w.opt("correlation_id", m.hasCorrelationId(), m.getCorrelationId());
    w.opt("task_id", m.hasTaskId(), m.getTaskId());
    w.opt("context_id", m.hasContextId(), m.getContextId());
    w.opt("session_id", m.hasSessionId(), m.getSessionId());
    w.opt("message_id", m.hasMessageId(), m.getMessageId());
    w.key("is_stream");
    w.out.append(m.getIsStream());
    w.key("identity_origin");
    w.origin(m.getIdentityOriginValue(), IdentityOrigin.IDENTITY_ORIGIN_AGENT);
    w.opt("channel", m.hasChannel(), m.getChannel());
    w.opt("user_id", m.hasUserId(), m.getUserId());
    w.key("agent_ref");
    w.object("agent_ref", m.getAgentRef(), true, 2);
    w.opt("source_agent_id", m.hasSourceAgentId(), m.getSourceAgentId());
    w.opt("method", m.hasMethod(), m.getMethod());
    w.key("projections");
    w.object("projections", m.getProjections(), false, 2);
    w.key("channel_context");
    w.object("channel_context", m.getChannelContext(), false, 2);
    w.key("metadata");
    w.object("metadata", m.getMetadata(), false, 2);
    w.key("a2a_metadata");
    w.object("a2a_metadata", m.getA2AMetadata(), false, 2);
    w.key("acp_meta");
    w.object("acp_meta", m.getAcpMeta(), false, 2);
    w.out.append('}');
    return w.out.toString();
  }
}

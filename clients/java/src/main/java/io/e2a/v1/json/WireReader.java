package io.e2a.v1.json;

import io.e2a.v1.E2AAuth;
import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AProvenance;
import io.e2a.v1.E2AResponse;
import io.e2a.v1.HttpHeader;
import io.e2a.v1.IdentityOrigin;
import io.e2a.v1.JsonRpcId;
import io.e2a.v1.json.JsonValue.Arr;
import io.e2a.v1.json.JsonValue.Bool;
import io.e2a.v1.json.JsonValue.Num;
import io.e2a.v1.json.JsonValue.Obj;
import io.e2a.v1.json.JsonValue.Str;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Reads one record document into its protobuf message, in field order, so that the first error is
 * the one the Python reference reports (docs/wire-json.md sections 2, 3 and 7).
 */
final class WireReader {
  static final String DEFAULT_PROTOCOL_VERSION = "1.0";
  static final String DEFAULT_SOURCE_PROTOCOL = "e2a";
  static final String DEFAULT_STATUS = "in_progress";

  /** Transport-internal keys of a legacy envelope metadata object, never copied. */
  private static final Set<String> INTERNAL_METADATA_KEYS =
      Set.of(
          "_e2a_wire_legacy_agent_response",
          "_e2a_wire_legacy_agent_chunk",
          "_jiuwenswarm_server_push",
          "_jiuwenswarm_cancel_source");

  private static final Map<String, IdentityOrigin> ORIGINS =
      Map.of(
          "system", IdentityOrigin.IDENTITY_ORIGIN_SYSTEM,
          "user", IdentityOrigin.IDENTITY_ORIGIN_USER,
          "agent", IdentityOrigin.IDENTITY_ORIGIN_AGENT,
          "service", IdentityOrigin.IDENTITY_ORIGIN_SERVICE);

  /** The members of the record object (a repeated key: its last value). */
  private final Map<String, JsonValue> values;

  /**
   * The errors Python reports only once every field is read: the first from auth, else the first
   * from the other fields (a lone surrogate in a string, a sequence beyond 64 bits).
   */
  private E2AJsonException encodeError;

  private E2AJsonException buildError;

  private WireReader(Map<String, JsonValue> values) {
    this.values = values;
  }

  private static WireReader document(String text, String what) {
    JsonValue value = JsonValue.parse(text, "$", 1);
    if (!(value instanceof Obj object)) {
      throw typeError(what, "an object", value);
    }
    return new WireReader(object.members());
  }

  static E2AJsonException typeError(String field, String expected, JsonValue value) {
    return new E2AJsonException(field, "expected " + expected + ", got " + JsonValue.typeName(value));
  }

  static E2AJsonException loneSurrogateError(String field) {
    return new E2AJsonException(
        field, "string is not valid Unicode (lone surrogate); use JSON escapes in a JSON field");
  }

  private void deferEncode(E2AJsonException e) {
    if (encodeError == null) {
      encodeError = e;
    }
  }

  private void deferBuild(E2AJsonException e) {
    if (buildError == null) {
      buildError = e;
    }
  }

  private void finish() {
    if (encodeError != null) {
      throw encodeError;
    }
    if (buildError != null) {
      throw buildError;
    }
  }

  private JsonValue get(String key) {
    return values.get(key);
  }

  private static boolean lone(String s) {
    return JsonValue.firstLoneSurrogate(s) >= 0;
  }

  // ---- records ----

  static E2AEnvelope envelope(String text) {
    WireReader d = document(text, "envelope");
    E2AEnvelope.Builder m = E2AEnvelope.newBuilder();
    d.protocolVersion(m::setProtocolVersion);
    m.setProvenance(d.envelopeProvenance());
    d.text("request_id", m::setRequestId);
    JsonRpcId id = d.jsonrpcId();
    if (id != null) {
      m.setJsonrpcId(id);
    }
    d.text("correlation_id", m::setCorrelationId);
    d.text("task_id", m::setTaskId);
    d.text("context_id", m::setContextId);
    d.text("session_id", m::setSessionId);
    d.text("message_id", m::setMessageId);
    d.timestamp(m::setTimestamp);
    m.setIdentityOrigin(d.identityOrigin(IdentityOrigin.IDENTITY_ORIGIN_USER));
    d.channel(m::setChannel);
    d.text("user_id", m::setUserId);
    m.setAgentRef(d.agentRef());
    d.text("chat_id", m::setChatId);
    d.text("source_agent_id", m::setSourceAgentId);
    d.stripped("agent_id", m::setAgentId, "agent_id", "source_agent_id");
    d.stripped("service_id", m::setServiceId, "service_id");
    d.stripped("workspace_key", m::setWorkspaceKey, "workspace_key", "workspace_dir");
    d.method(m::setMethod);
    m.setParams(d.params());
    d.text("ext_method", m::setExtMethod);
    d.text("session_update_kind", m::setSessionUpdateKind);
    m.setIsStream(d.flag("is_stream"));
    m.addAllExpectedOutputModes(d.textList("expected_output_modes"));
    E2AAuth auth = d.auth();
    if (auth != null) {
      m.setAuth(auth);
    }
    m.setChannelContext(d.channelContext());
    m.setA2AMetadata(d.objectField("a2a_metadata"));
    m.setAcpMeta(d.objectField("acp_meta"));
    d.finish();
    return m.build();
  }

  static E2AResponse response(String text) {
    WireReader d = document(text, "response");
    E2AResponse.Builder m = E2AResponse.newBuilder();
    d.protocolVersion(m::setProtocolVersion);
    d.text("response_id", m::setResponseId);
    d.text("request_id", m::setRequestId);
    m.setSequence(d.integer("sequence"));
    m.setIsFinal(d.flag("is_final"));
    JsonValue status = d.get("status");
    if (JsonValue.isNull(status)) {
      m.setStatus(DEFAULT_STATUS);
    } else if (status instanceof Str s) {
      if (lone(s.value())) {
        d.deferBuild(loneSurrogateError("status"));
      }
      m.setStatus(s.value());
    } else {
      throw typeError("status", "a string", status);
    }
    d.text("response_kind", m::setResponseKind);
    d.timestamp(m::setTimestamp);
    E2AProvenance.Builder provenance = d.provenance(d.get("provenance"));
    m.setProvenance(provenance);
    m.setBody(d.objectField("body"));
    JsonRpcId id = d.jsonrpcId();
    if (id != null) {
      m.setJsonrpcId(id);
    }
    d.text("correlation_id", m::setCorrelationId);
    d.text("task_id", m::setTaskId);
    d.text("context_id", m::setContextId);
    d.text("session_id", m::setSessionId);
    d.text("message_id", m::setMessageId);
    m.setIsStream(d.flag("is_stream"));
    m.setIdentityOrigin(d.identityOrigin(IdentityOrigin.IDENTITY_ORIGIN_AGENT));
    d.channel(m::setChannel);
    d.text("user_id", m::setUserId);
    m.setAgentRef(d.agentRef());
    d.text("source_agent_id", m::setSourceAgentId);
    d.text("method", m::setMethod);
    m.setProjections(d.objectField("projections"));
    m.setChannelContext(d.objectField("channel_context"));
    m.setMetadata(d.objectField("metadata"));
    m.setA2AMetadata(d.objectField("a2a_metadata"));
    m.setAcpMeta(d.objectField("acp_meta"));
    d.finish();
    return m.build();
  }

  // ---- fields ----

  /** protocol_version: absent is "1.0", null stays unset. */
  private void protocolVersion(Consumer<String> set) {
    if (!values.containsKey("protocol_version")) {
      set.accept(DEFAULT_PROTOCOL_VERSION);
      return;
    }
    text("protocol_version", set);
  }

  /** A string-or-null value for the field at path; null leaves it unset. */
  private void optText(JsonValue value, String path, Consumer<String> set) {
    if (JsonValue.isNull(value)) {
      return;
    }
    if (!(value instanceof Str s)) {
      throw typeError(path, "a string or null", value);
    }
    if (lone(s.value())) {
      deferBuild(loneSurrogateError(path));
    }
    set.accept(s.value());
  }

  private void text(String key, Consumer<String> set) {
    optText(get(key), key, set);
  }

  /** A boolean: null is false, a legacy integer flag its truth value. */
  private boolean flag(String key) {
    JsonValue value = get(key);
    if (JsonValue.isNull(value)) {
      return false;
    }
    if (value instanceof Bool b) {
      return b.value();
    }
    if (JsonValue.isInteger(value)) {
      return !JsonValue.isZeroInteger((Num) value);
    }
    throw typeError(key, "a boolean", value);
  }

  /** A signed 64-bit integer; null is 0. */
  private long integer(String key) {
    JsonValue value = get(key);
    if (JsonValue.isNull(value)) {
      return 0;
    }
    if (!JsonValue.isInteger(value)) {
      throw typeError(key, "an integer", value);
    }
    Num n = (Num) value;
    try {
      return Long.parseLong(n.text());
    } catch (NumberFormatException e) {
      deferBuild(
          new E2AJsonException(
              key, "integer " + JsonValue.intString(n) + " is outside the signed 64-bit range"));
      return 0;
    }
  }

  /** A free-form object as its JSON text: null and {} are "" (the protobuf default). */
  private static String object(JsonValue value, String path) {
    Obj object = objectOrNull(value, path);
    return object == null ? "" : JsonValue.text(object);
  }

  /** A free-form object, or null for null, absent and {}. */
  private static Obj objectOrNull(JsonValue value, String path) {
    if (JsonValue.isNull(value)) {
      return null;
    }
    if (!(value instanceof Obj object)) {
      throw typeError(path, "an object", value);
    }
    return object.members().isEmpty() ? null : object;
  }

  private String objectField(String key) {
    return object(get(key), key);
  }

  /** agent_ref, an object or null: null is "", {} stays "{}". */
  private String agentRef() {
    JsonValue value = get("agent_ref");
    if (JsonValue.isNull(value)) {
      return "";
    }
    if (!(value instanceof Obj)) {
      throw typeError("agent_ref", "an object or null", value);
    }
    return JsonValue.text(value);
  }

  private List<String> textList(String key) {
    JsonValue value = get(key);
    if (JsonValue.isNull(value)) {
      return List.of();
    }
    if (!(value instanceof Arr array)) {
      throw typeError(key, "an array of strings", value);
    }
    List<String> list = new java.util.ArrayList<>();
    for (JsonValue item : array.items()) {
      if (!(item instanceof Str s)) {
        throw typeError(key + "[" + list.size() + "]", "a string", item);
      }
      if (lone(s.value())) {
        deferBuild(loneSurrogateError(key));
      }
      list.add(s.value());
    }
    return list;
  }

  private JsonRpcId jsonrpcId() {
    JsonValue value = get("jsonrpc_id");
    if (JsonValue.isNull(value)) {
      return null;
    }
    if (value instanceof Str s) {
      int at = JsonValue.firstLoneSurrogate(s.value());
      if (at >= 0) {
        throw new E2AJsonException(
            "jsonrpc_id",
            String.format(
                "a lone surrogate (U+%04X) is not Unicode text", (int) s.value().charAt(at)));
      }
      return JsonRpcId.newBuilder().setStringValue(s.value()).build();
    }
    if (value instanceof Num n) {
      if (n.isFloat()) {
        return JsonRpcId.newBuilder().setNumberValue(Double.parseDouble(n.text())).build();
      }
      try {
        return JsonRpcId.newBuilder().setIntegerValue(Long.parseLong(n.text())).build();
      } catch (NumberFormatException e) {
        return JsonRpcId.newBuilder().setBigIntegerValue(n.text()).build();
      }
    }
    throw typeError("jsonrpc_id", "a string, number or null", value);
  }

  /** identity_origin: absent or null is the record's default. */
  private IdentityOrigin identityOrigin(IdentityOrigin def) {
    JsonValue value = get("identity_origin");
    if (JsonValue.isNull(value)) {
      return def;
    }
    if (!(value instanceof Str s)) {
      throw typeError("identity_origin", "a string", value);
    }
    IdentityOrigin origin = ORIGINS.get(s.value());
    if (origin == null) {
      throw new E2AJsonException(
          "identity_origin", "'" + s.value() + "' is not one of system, user, agent, service");
    }
    return origin;
  }

  /** A provenance object (absent or null: the default); its details are set as text. */
  private E2AProvenance.Builder provenance(JsonValue value) {
    return provenance(value, null);
  }

  /**
   * A provenance object; details, when given, receives the details object (null for none) and
   * the builder's details are left for the caller to set.
   */
  private E2AProvenance.Builder provenance(JsonValue value, Obj[] details) {
    E2AProvenance.Builder p = E2AProvenance.newBuilder().setSourceProtocol(DEFAULT_SOURCE_PROTOCOL);
    if (JsonValue.isNull(value)) {
      return p;
    }
    if (!(value instanceof Obj object)) {
      throw typeError("provenance", "an object", value);
    }
    Map<String, JsonValue> fields = object.members();
    boolean anyLone = false;
    JsonValue source = fields.get("source_protocol");
    if (source != null) {
      if (!(source instanceof Str s)) {
        throw typeError("provenance.source_protocol", "a string", source);
      }
      anyLone = lone(s.value());
      p.setSourceProtocol(s.value());
    }
    for (String key : new String[] {"converter", "converted_at"}) {
      JsonValue item = fields.get(key);
      if (JsonValue.isNull(item)) {
        continue;
      }
      if (!(item instanceof Str s)) {
        throw typeError("provenance." + key, "a string or null", item);
      }
      anyLone |= lone(s.value());
      if (key.equals("converter")) {
        p.setConverter(s.value());
      } else {
        p.setConvertedAt(s.value());
      }
    }
    Obj detailsObject = objectOrNull(fields.get("details"), "provenance.details");
    if (anyLone) {
      deferBuild(loneSurrogateError("provenance")); // Python builds the submessage at once
    }
    if (details != null) {
      details[0] = detailsObject;
    } else {
      p.setDetails(detailsObject == null ? "" : JsonValue.text(detailsObject));
    }
    return p;
  }

  /** An envelope's provenance, the legacy binding moved into details.migrated_from_binding. */
  private E2AProvenance.Builder envelopeProvenance() {
    Obj[] holder = new Obj[1];
    E2AProvenance.Builder p = provenance(get("provenance"), holder);
    Obj details = holder[0];
    JsonValue binding = get("binding");
    boolean none = JsonValue.isNull(binding);
    if (!none && details != null) {
      JsonValue migrated = details.members().get("migrated_from_binding");
      if (migrated != null && !JsonValue.isNull(migrated)) {
        none = true; // already migrated
      }
    }
    if (!none) {
      if (binding instanceof Obj b && b.members().containsKey("value")) {
        binding = b.members().get("value");
      }
      String text; // Python's str(binding)
      if (JsonValue.isNull(binding)) {
        text = "";
      } else if (binding instanceof Str s) {
        text = s.value();
      } else if (binding instanceof Bool b) {
        text = b.value() ? "True" : "False";
      } else if (binding instanceof Num n && !n.isFloat()) {
        text = new BigInteger(n.text()).toString();
      } else if (binding instanceof Num n) {
        text = Floats.pyRepr(Double.parseDouble(n.text()));
      } else {
        throw typeError("binding", "a string", binding);
      }
      if (p.getSourceProtocol().equals(DEFAULT_SOURCE_PROTOCOL)
          && (text.equals("acp") || text.equals("a2a"))) {
        p.setSourceProtocol(text);
      }
      LinkedHashMap<String, JsonValue> merged = new LinkedHashMap<>();
      if (details != null) {
        merged.putAll(details.members());
      }
      merged.put("migrated_from_binding", new Str(text));
      details = new Obj(merged);
    }
    p.setDetails(details == null ? "" : JsonValue.text(details));
    return p;
  }

  /** timestamp: an RFC 3339 string as given, or legacy epoch seconds. */
  private void timestamp(Consumer<String> set) {
    JsonValue value = get("timestamp");
    if (JsonValue.isNull(value)) {
      return;
    }
    if (value instanceof Str) {
      optText(value, "timestamp", set);
      return;
    }
    if (value instanceof Num n) {
      set.accept(epochToIso(n));
      return;
    }
    throw typeError("timestamp", "an RFC 3339 string or epoch seconds", value);
  }

  /** Epoch seconds as Python's datetime.fromtimestamp(value, UTC).isoformat() writes them. */
  static String epochToIso(Num number) {
    double seconds = Double.parseDouble(number.text());
    String shown = number.isFloat() ? Floats.pyRepr(seconds) : JsonValue.intString(number);
    if (Double.isInfinite(seconds)) {
      throw new E2AJsonException(
          "timestamp",
          "epoch seconds " + shown + " out of range (int too large to convert to float)");
    }
    double whole = seconds < 0 ? Math.ceil(seconds) : Math.floor(seconds);
    double fraction = seconds - whole;
    double micros = Math.rint(fraction * 1e6);
    if (micros >= 1e6) {
      whole += 1;
      micros -= 1e6;
    } else if (micros < 0) {
      whole -= 1;
      micros += 1e6;
    }
    if (Math.abs(whole) >= 0x1p63) {
      throw new E2AJsonException(
          "timestamp",
          "epoch seconds "
              + shown
              + " out of range (timestamp out of range for platform time_t)");
    }
    long epoch = (long) whole;
    // Python's datetime holds years 1 to 9999.
    if (epoch < -62135596800L || epoch > 253402300799L) {
      throw new E2AJsonException(
          "timestamp", "epoch seconds " + shown + " out of range (year is out of range)");
    }
    java.time.LocalDateTime t =
        java.time.LocalDateTime.ofEpochSecond(epoch, 0, java.time.ZoneOffset.UTC);
    String text =
        String.format(
            "%04d-%02d-%02dT%02d:%02d:%02d",
            t.getYear(),
            t.getMonthValue(),
            t.getDayOfMonth(),
            t.getHour(),
            t.getMinute(),
            t.getSecond());
    if (micros != 0) {
      text += String.format(".%06d", (long) micros);
    }
    return text + "+00:00";
  }

  /** channel, or the legacy channel_id when channel is absent or null. */
  private void channel(Consumer<String> set) {
    JsonValue channel = get("channel");
    if (!JsonValue.isNull(channel)) {
      optText(channel, "channel", set);
      return;
    }
    JsonValue legacy = get("channel_id");
    if (JsonValue.isNull(legacy)) {
      return;
    }
    if (!(legacy instanceof Str)) {
      throw typeError("channel_id", "a string or null", legacy);
    }
    optText(legacy, "channel", set);
  }

  /** method, or the legacy req_method (when a string) when method is absent or null. */
  private void method(Consumer<String> set) {
    JsonValue method = get("method");
    if (!JsonValue.isNull(method)) {
      optText(method, "method", set);
      return;
    }
    if (get("req_method") instanceof Str legacy) {
      optText(legacy, "method", set);
    }
  }

  /**
   * A tenant routing key: a non-blank string, stripped as Python's str.strip does; any other value
   * counts as absent. The fallback keys are read when the first gives nothing.
   */
  private void stripped(String path, Consumer<String> set, String... keys) {
    for (String key : keys) {
      if (!(get(key) instanceof Str s)) {
        continue;
      }
      String text = pyStrip(s.value());
      if (!text.isEmpty()) {
        if (lone(text)) {
          deferBuild(loneSurrogateError(path));
        }
        set.accept(text);
        return;
      }
    }
  }

  /** Python's str.isspace for one BMP character. */
  private static boolean isPySpace(char c) {
    return (c >= 0x09 && c <= 0x0d)
        || (c >= 0x1c && c <= 0x20)
        || c == 0x85
        || Character.isSpaceChar(c);
  }

  static String pyStrip(String s) {
    int start = 0;
    int end = s.length();
    while (start < end && isPySpace(s.charAt(start))) {
      start++;
    }
    while (end > start && isPySpace(s.charAt(end - 1))) {
      end--;
    }
    return s.substring(start, end);
  }

  /** params plus the keys of a legacy payload object it lacks (null, [] and {} values left out). */
  private String params() {
    Obj params = objectOrNull(get("params"), "params");
    if (!(get("payload") instanceof Obj payload) || payload.members().isEmpty()) {
      return params == null ? "" : JsonValue.text(params);
    }
    LinkedHashMap<String, JsonValue> merged = new LinkedHashMap<>();
    if (params != null) {
      merged.putAll(params.members());
    }
    for (Map.Entry<String, JsonValue> member : payload.members().entrySet()) {
      JsonValue item = member.getValue();
      if (merged.containsKey(member.getKey())
          || JsonValue.isNull(item)
          || (item instanceof Arr a && a.items().isEmpty())
          || (item instanceof Obj o && o.members().isEmpty())) {
        continue;
      }
      merged.put(member.getKey(), item);
    }
    return merged.isEmpty() ? "" : JsonValue.text(new Obj(merged));
  }

  /** channel_context plus legacy metadata keys (not the internal ones) and a truthy app_id. */
  private String channelContext() {
    Obj context = objectOrNull(get("channel_context"), "channel_context");
    JsonValue metadataValue = get("metadata");
    Obj metadata =
        metadataValue instanceof Obj o && !o.members().isEmpty() ? o : null;
    JsonValue appId = get("app_id");
    boolean hasAppId = appId != null && JsonValue.truthy(appId);
    if (metadata == null && !hasAppId) {
      return context == null ? "" : JsonValue.text(context);
    }
    LinkedHashMap<String, JsonValue> merged = new LinkedHashMap<>();
    if (context != null) {
      merged.putAll(context.members());
    }
    if (metadata != null) {
      for (Map.Entry<String, JsonValue> member : metadata.members().entrySet()) {
        if (!INTERNAL_METADATA_KEYS.contains(member.getKey())) {
          merged.putIfAbsent(member.getKey(), member.getValue());
        }
      }
    }
    if (hasAppId) {
      merged.putIfAbsent("app_id", appId);
    }
    return merged.isEmpty() ? "" : JsonValue.text(new Obj(merged));
  }

  /**
   * A key for an error path: the key itself, as Python names it (a Java string, like a Python
   * one, can hold a lone surrogate from an escape).
   */
  static String keyName(String key) {
    return key;
  }

  /** The auth object, or null. */
  private E2AAuth auth() {
    JsonValue value = get("auth");
    if (JsonValue.isNull(value)) {
      return null;
    }
    if (!(value instanceof Obj object)) {
      throw typeError("auth", "an object", value);
    }
    Map<String, JsonValue> fields = object.members();
    E2AAuth.Builder auth = E2AAuth.newBuilder();
    Obj headers = objectOrNull(fields.get("extra_headers"), "auth.extra_headers");
    if (headers != null) {
      for (Map.Entry<String, JsonValue> member : headers.members().entrySet()) {
        String name = keyName(member.getKey());
        if (!(member.getValue() instanceof Str headerValue)) {
          throw typeError("auth.extra_headers." + name, "a string", member.getValue());
        }
        if (lone(member.getKey())) {
          deferEncode(loneSurrogateError("auth.extra_headers." + name + ".name"));
        }
        if (lone(headerValue.value())) {
          deferEncode(loneSurrogateError("auth.extra_headers." + name + ".value"));
        }
        auth.addExtraHeaders(
            HttpHeader.newBuilder().setName(member.getKey()).setValue(headerValue.value()));
      }
    }
    String[] keys = {"method_id", "bearer_token", "api_key_ref", "credential_ref"};
    for (String key : keys) {
      JsonValue item = fields.get(key);
      if (JsonValue.isNull(item)) {
        continue;
      }
      String path = "auth." + key;
      if (!(item instanceof Str s)) {
        throw typeError(path, "a string or null", item);
      }
      if (lone(s.value())) {
        deferEncode(loneSurrogateError(path));
      }
      switch (key) {
        case "method_id" -> auth.setMethodId(s.value());
        case "bearer_token" -> auth.setBearerToken(s.value());
        case "api_key_ref" -> auth.setApiKeyRef(s.value());
        default -> auth.setCredentialRef(s.value());
      }
    }
    auth.setMeta(object(fields.get("_meta"), "auth._meta"));
    return auth.build();
  }
}

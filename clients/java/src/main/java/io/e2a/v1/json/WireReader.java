package io.e2a.v1.json;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.e2a.v1.E2AAuth;
import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AProvenance;
import io.e2a.v1.E2AResponse;
import io.e2a.v1.HttpHeader;
import io.e2a.v1.JsonKind;
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
import java.util.function.Consumer;

/**
 * Reads one record document into its protobuf message, in field order, so that the first error is
 * the one the Python reference reports (docs/wire-json.md sections 2, 3 and 7).
 */
final class WireReader {
  static final String DEFAULT_SOURCE_PROTOCOL = "e2a";

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
    return (E2AEnvelope) read(text, "envelope", ENVELOPE, E2AEnvelope.newBuilder());
  }

  static E2AResponse response(String text) {
    return (E2AResponse) read(text, "response", RESPONSE, E2AResponse.newBuilder());
  }

  static final List<FieldSpec> ENVELOPE = checked(RecordFields.ENVELOPE, E2AEnvelope.getDescriptor());
  static final List<FieldSpec> RESPONSE = checked(RecordFields.RESPONSE, E2AResponse.getDescriptor());

  /** A generated table, checked against the message compiled into this program (same schema). */
  private static List<FieldSpec> checked(List<FieldSpec> table, Descriptor message) {
    List<FieldDescriptor> fields = message.getFields();
    if (fields.size() != table.size()) {
      throw new IllegalStateException(message.getFullName() + " and its field table differ in size");
    }
    for (int i = 0; i < table.size(); i++) {
      FieldSpec f = table.get(i);
      if (fields.get(i).getNumber() != f.number() || !fields.get(i).getName().equals(f.name())) {
        throw new IllegalStateException(fields.get(i).getFullName() + " differs from " + f.name());
      }
    }
    return table;
  }

  /**
   * Reads a record document into m field by field, in field order, so that the first error is the
   * one Python reports; what names the record in the error for a non-object.
   */
  private static Message read(
      String text, String what, List<FieldSpec> table, Message.Builder m) {
    WireReader d = document(text, what);
    List<FieldDescriptor> fields = m.getDescriptorForType().getFields();
    for (int i = 0; i < table.size(); i++) {
      FieldSpec f = table.get(i);
      FieldDescriptor fd = fields.get(i);
      Object value = f.legacy() != null ? f.legacy().read(d, f) : d.field(f);
      if (value == null) {
        continue;
      }
      if (f.kind() == JsonKind.JSON_KIND_ENUM) {
        value = fd.getEnumType().findValueByNumber((Integer) value);
      }
      m.setField(fd, value);
    }
    d.finish();
    return m.build();
  }

  /** A field's value by its kind, or null to leave it unset. */
  private Object field(FieldSpec f) {
    String name = f.name();
    return switch (f.kind()) {
      case JSON_KIND_TEXT ->
          !values.containsKey(name) && !f.def().isEmpty()
              ? f.def()
              : captured(set -> text(name, set));
      case JSON_KIND_PLAIN_TEXT -> plainText(name, f.def());
      case JSON_KIND_FLAG -> flag(name);
      case JSON_KIND_INTEGER -> integer(name);
      case JSON_KIND_TEXT_LIST -> textList(name);
      case JSON_KIND_OBJECT -> objectField(name);
      case JSON_KIND_OPTIONAL_OBJECT -> optionalObject(name);
      case JSON_KIND_JSONRPC_ID -> jsonrpcId(name);
      case JSON_KIND_ENUM -> enumNumber(f);
      case JSON_KIND_PROVENANCE -> provenance(get(name)).build();
      case JSON_KIND_AUTH -> auth(name);
      default ->
          throw new E2AJsonException(name, "JSON kind " + f.kind() + " is unknown to this codec");
    };
  }

  /** The string a reader that sets one gives, or null when it sets none. */
  private static String captured(Consumer<Consumer<String>> reader) {
    String[] value = {null};
    reader.accept(s -> value[0] = s);
    return value[0];
  }

  // ---- the legacy readers the schema names ((e2a.v1.json).legacy_reader), bound in RecordFields

  Object legacyProvenance(FieldSpec f) {
    return envelopeProvenance().build();
  }

  Object legacyTimestamp(FieldSpec f) {
    return captured(this::timestamp);
  }

  Object legacyChannel(FieldSpec f) {
    return captured(this::channel);
  }

  Object legacyAgentId(FieldSpec f) {
    return captured(set -> stripped(f.name(), set, f.name(), "source_agent_id"));
  }

  Object legacyServiceId(FieldSpec f) {
    return captured(set -> stripped(f.name(), set, f.name()));
  }

  Object legacyWorkspaceKey(FieldSpec f) {
    return captured(set -> stripped(f.name(), set, f.name(), "workspace_dir"));
  }

  Object legacyMethod(FieldSpec f) {
    return captured(this::method);
  }

  Object legacyParams(FieldSpec f) {
    return params();
  }

  Object legacyChannelContext(FieldSpec f) {
    return channelContext(f.internalKeys());
  }

  /** response_kind; null reads as "" (no kind), as older writers sent it. */
  Object legacyResponseKind(FieldSpec f) {
    return captured(set -> text(f.name(), set));
  }

  // ---- fields ----

  /** A string that is never null: absent or null is def, as protobuf's JSON mapping reads null. */
  private String plainText(String key, String def) {
    JsonValue value = get(key);
    if (JsonValue.isNull(value)) {
      return def;
    }
    if (!(value instanceof Str s)) {
      throw typeError(key, "a string", value);
    }
    if (lone(s.value())) {
      deferBuild(loneSurrogateError(key));
    }
    return s.value();
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

  /** An object-or-null field (agent_ref): null is "", {} stays "{}". */
  private String optionalObject(String key) {
    JsonValue value = get(key);
    if (JsonValue.isNull(value)) {
      return "";
    }
    if (!(value instanceof Obj)) {
      throw typeError(key, "an object or null", value);
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

  private JsonRpcId jsonrpcId(String key) {
    JsonValue value = get(key);
    if (JsonValue.isNull(value)) {
      return null;
    }
    if (value instanceof Str s) {
      int at = JsonValue.firstLoneSurrogate(s.value());
      if (at >= 0) {
        throw new E2AJsonException(
            key,
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
    throw typeError(key, "a string, number or null", value);
  }

  /** An enum field by its values' json_value: absent or null is the field's default. */
  private int enumNumber(FieldSpec f) {
    JsonValue value = get(f.name());
    String text = f.def();
    if (!JsonValue.isNull(value)) {
      if (!(value instanceof Str s)) {
        throw typeError(f.name(), "a string", value);
      }
      text = s.value();
    }
    for (FieldSpec.EnumValue each : f.enumValues()) {
      if (each.name().equals(text)) {
        return each.number();
      }
    }
    StringBuilder allowed = new StringBuilder();
    for (FieldSpec.EnumValue each : f.enumValues()) {
      allowed.append(allowed.length() == 0 ? "" : ", ").append(each.name());
    }
    throw new E2AJsonException(f.name(), "'" + text + "' is not one of " + allowed);
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
  private String channelContext(List<String> internalKeys) {
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
        if (!internalKeys.contains(member.getKey())) {
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
  private E2AAuth auth(String field) {
    JsonValue value = get(field);
    if (JsonValue.isNull(value)) {
      return null;
    }
    if (!(value instanceof Obj object)) {
      throw typeError(field, "an object", value);
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

package io.e2a.v1.json;

import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.MessageOrBuilder;
import io.e2a.v1.E2AAuth;
import io.e2a.v1.E2AEnvelope;
import io.e2a.v1.E2AProvenance;
import io.e2a.v1.E2AResponse;
import io.e2a.v1.HttpHeader;
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

  /** An enum field as its value's json_value; unspecified (0) is the field's default. */
  private void enumValue(FieldSpec f, FieldDescriptor fd, int number) {
    if (number == 0) {
      str(f.name(), f.def());
      return;
    }
    for (FieldSpec.EnumValue each : f.enumValues()) {
      if (each.number() == number) {
        str(f.name(), each.name());
        return;
      }
    }
    throw new E2AJsonException(
        f.name(), "unknown " + fd.getEnumType().getName() + " value " + number);
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
    return write(m, WireReader.ENVELOPE);
  }

  static String response(E2AResponse m) {
    return write(m, WireReader.RESPONSE);
  }

  /** A record's wire JSON: every field of its table, in field order. */
  @SuppressWarnings("unchecked") // a repeated string field's value is a List<String>
  private static String write(MessageOrBuilder m, List<FieldSpec> table) {
    WireWriter w = new WireWriter();
    w.out.append('{');
    List<FieldDescriptor> fields = m.getDescriptorForType().getFields();
    for (int i = 0; i < table.size(); i++) {
      FieldSpec f = table.get(i);
      FieldDescriptor fd = fields.get(i);
      String name = f.name();
      w.key(name);
      switch (f.kind()) {
        case JSON_KIND_TEXT -> w.optStr(name, m.hasField(fd), (String) m.getField(fd));
        case JSON_KIND_PLAIN_TEXT -> w.str(name, (String) m.getField(fd));
        case JSON_KIND_FLAG -> w.out.append((boolean) m.getField(fd));
        case JSON_KIND_INTEGER -> w.out.append((long) m.getField(fd));
        case JSON_KIND_TEXT_LIST -> w.stringList(name, (List<String>) m.getField(fd));
        case JSON_KIND_OBJECT -> w.object(name, (String) m.getField(fd), false, 2);
        case JSON_KIND_OPTIONAL_OBJECT -> w.object(name, (String) m.getField(fd), true, 2);
        case JSON_KIND_JSONRPC_ID ->
            w.jsonrpcId(name, m.hasField(fd), (JsonRpcId) m.getField(fd));
        case JSON_KIND_ENUM ->
            w.enumValue(f, fd, ((EnumValueDescriptor) m.getField(fd)).getNumber());
        case JSON_KIND_PROVENANCE ->
            w.provenance(m.hasField(fd), (E2AProvenance) m.getField(fd));
        case JSON_KIND_AUTH -> w.auth(m.hasField(fd), (E2AAuth) m.getField(fd));
        default ->
            throw new E2AJsonException(name, "JSON kind " + f.kind() + " is unknown to this codec");
      }
    }
    w.out.append('}');
    return w.out.toString();
  }
}

package io.e2a.v1.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A JSON value as read from text, exactly: numbers keep their text (integers of any size, 1.0 vs
 * 1), objects keep their key order, strings may hold lone surrogates (from escapes). Duplicate keys
 * resolve as Python's json module does: the key keeps its first position and takes its last value.
 */
sealed interface JsonValue {

  /** The deepest nesting of arrays and objects in a JSON text ({@code []} is 1 level). */
  int MAX_DEPTH = 512;

  /** The longest integer (in digits) read, as Python's int/str conversion limit. */
  int MAX_INT_DIGITS = 4300;

  /** JSON null. */
  record Null() implements JsonValue {}

  /** true or false. */
  record Bool(boolean value) implements JsonValue {}

  /** A number as written; {@code isFloat} when it has a fraction or an exponent. */
  record Num(String text, boolean isFloat) implements JsonValue {}

  /** A string (a Java string, which may hold lone surrogates). */
  record Str(String value) implements JsonValue {}

  /** An array. */
  record Arr(List<JsonValue> items) implements JsonValue {}

  /** An object, in key order. */
  record Obj(LinkedHashMap<String, JsonValue> members) implements JsonValue {}

  Null NULL = new Null();

  /** The JSON type as Python's error messages name it. */
  static String typeName(JsonValue value) {
    if (value instanceof Null) {
      return "null";
    } else if (value instanceof Bool) {
      return "boolean";
    } else if (value instanceof Str) {
      return "string";
    } else if (value instanceof Arr) {
      return "array";
    } else if (value instanceof Obj) {
      return "object";
    }
    return ((Num) value).isFloat() ? "number" : "integer";
  }

  static boolean isNull(JsonValue value) {
    return value == null || value instanceof Null;
  }

  static boolean isInteger(JsonValue value) {
    return value instanceof Num n && !n.isFloat();
  }

  static boolean isZeroInteger(Num n) {
    String text = n.text().startsWith("-") ? n.text().substring(1) : n.text();
    return text.equals("0");
  }

  /** An integer's text as Python's str() writes the int it reads ("-0" is 0). */
  static String intString(Num n) {
    return isZeroInteger(n) ? "0" : n.text();
  }

  /** Python's truth value of the value read from JSON. */
  static boolean truthy(JsonValue value) {
    if (value instanceof Null) {
      return false;
    } else if (value instanceof Bool b) {
      return b.value();
    } else if (value instanceof Str s) {
      return !s.value().isEmpty();
    } else if (value instanceof Arr a) {
      return !a.items().isEmpty();
    } else if (value instanceof Obj o) {
      return !o.members().isEmpty();
    }
    Num n = (Num) value;
    return n.isFloat() ? Double.parseDouble(n.text()) != 0 : !isZeroInteger(n);
  }

  // ---- reading ----

  /** Jackson set up to leave every limit to this reader (depth 512, 4300 integer digits). */
  JsonFactory FACTORY =
      JsonFactory.builder()
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxNestingDepth(MAX_DEPTH + 8)
                  .maxNumberLength(Integer.MAX_VALUE)
                  .maxStringLength(Integer.MAX_VALUE)
                  .maxNameLength(Integer.MAX_VALUE)
                  .maxDocumentLength(-1)
                  .build())
          .build();

  /**
   * Reads one whole JSON text.
   *
   * @param text the text
   * @param field the field named by errors ("$" for a whole document)
   * @param depth the nesting level the value has if it is an array or object
   */
  static JsonValue parse(String text, String field, int depth) {
    int lone = firstLoneSurrogate(text);
    if (lone >= 0) {
      throw new E2AJsonException(
          field, "JSON text is not UTF-8: lone surrogate at offset " + lone);
    }
    try (JsonParser parser = FACTORY.createParser(text)) {
      JsonToken token = parser.nextToken();
      if (token == null) {
        throw syntax(field, "unexpected end of text, expecting a value");
      }
      JsonValue value = read(parser, token, field, depth);
      JsonToken after = parser.nextToken();
      if (after != null) {
        throw syntax(field, "extra data after the value");
      }
      return value;
    } catch (JsonProcessingException e) {
      throw syntax(field, e.getOriginalMessage());
    } catch (IOException e) {
      throw syntax(field, String.valueOf(e.getMessage()));
    }
  }

  private static E2AJsonException syntax(String field, String message) {
    return new E2AJsonException(field, "invalid JSON text: " + message);
  }

  private static JsonValue read(JsonParser parser, JsonToken token, String field, int depth)
      throws IOException {
    switch (token) {
      case START_OBJECT:
        {
          checkDepth(field, depth);
          LinkedHashMap<String, JsonValue> members = new LinkedHashMap<>();
          for (JsonToken t = parser.nextToken(); t != JsonToken.END_OBJECT; t = parser.nextToken()) {
            String key = parser.currentName();
            JsonValue item = read(parser, parser.nextToken(), field, depth + 1);
            members.put(key, item); // a repeated key keeps its first position, takes the last value
          }
          return new Obj(members);
        }
      case START_ARRAY:
        {
          checkDepth(field, depth);
          List<JsonValue> items = new ArrayList<>();
          for (JsonToken t = parser.nextToken(); t != JsonToken.END_ARRAY; t = parser.nextToken()) {
            items.add(read(parser, t, field, depth + 1));
          }
          return new Arr(items);
        }
      case VALUE_STRING:
        return new Str(parser.getText());
      case VALUE_NUMBER_INT:
        {
          String text = parser.getText();
          int digits = text.startsWith("-") ? text.length() - 1 : text.length();
          if (digits > MAX_INT_DIGITS) {
            throw syntax(
                field,
                "integer with " + digits + " digits exceeds the limit of " + MAX_INT_DIGITS + " digits");
          }
          return new Num(text, false);
        }
      case VALUE_NUMBER_FLOAT:
        {
          String text = parser.getText();
          if (Double.isInfinite(Double.parseDouble(text))) {
            throw syntax(field, "number " + text + " is out of range");
          }
          return new Num(text, true);
        }
      case VALUE_TRUE:
        return new Bool(true);
      case VALUE_FALSE:
        return new Bool(false);
      case VALUE_NULL:
        return NULL;
      default:
        throw syntax(field, "unexpected token " + token);
    }
  }

  private static void checkDepth(String field, int depth) {
    if (depth > MAX_DEPTH) {
      throw new E2AJsonException(field, "JSON nesting deeper than " + MAX_DEPTH + " levels");
    }
  }

  /** The index of the first unpaired surrogate in s, or -1. */
  static int firstLoneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
          continue;
        }
        return i;
      }
      if (Character.isLowSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }

  // ---- writing ----

  /** Appends the canonical text of a value: compact, strings escaped as the wire JSON does. */
  static void write(JsonValue value, StringBuilder out) {
    if (value instanceof Null) {
      out.append("null");
    } else if (value instanceof Bool b) {
      out.append(b.value());
    } else if (value instanceof Num n) {
      out.append(n.text());
    } else if (value instanceof Str s) {
      quote(s.value(), out);
    } else if (value instanceof Arr a) {
      out.append('[');
      boolean first = true;
      for (JsonValue item : a.items()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(item, out);
      }
      out.append(']');
    } else {
      out.append('{');
      boolean first = true;
      for (Map.Entry<String, JsonValue> member : ((Obj) value).members().entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        quote(member.getKey(), out);
        out.append(':');
        write(member.getValue(), out);
      }
      out.append('}');
    }
  }

  /** The canonical text of a value. */
  static String text(JsonValue value) {
    StringBuilder out = new StringBuilder();
    write(value, out);
    return out.toString();
  }

  String HEX = "0123456789abcdef";

  /**
   * Appends s as a JSON string with exactly the escapes of docs/wire-json.md section 5: {@code \"},
   * {@code \\}, the short control escapes, other control characters and lone surrogates as
   * lowercase {@code \\u00XX}; everything else as itself.
   */
  static void quote(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            hexEscape(c, out);
          } else if (Character.isHighSurrogate(c)
              && i + 1 < s.length()
              && Character.isLowSurrogate(s.charAt(i + 1))) {
            out.append(c).append(s.charAt(++i));
          } else if (Character.isSurrogate(c)) {
            hexEscape(c, out);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private static void hexEscape(char c, StringBuilder out) {
    out.append("\\u")
        .append(HEX.charAt(c >> 12))
        .append(HEX.charAt((c >> 8) & 0xf))
        .append(HEX.charAt((c >> 4) & 0xf))
        .append(HEX.charAt(c & 0xf));
  }
}

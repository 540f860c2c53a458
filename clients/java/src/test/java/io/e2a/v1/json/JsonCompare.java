package io.e2a.v1.json;

import java.math.BigInteger;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Compares JSON texts as the conformance runner does: same keys in the same order, same strings,
 * numbers of the same kind (integer or float) and exactly the same value (the sign of a float zero
 * included). Number text is not compared: 1.5 and 1.50 are the same float.
 */
final class JsonCompare {
  private JsonCompare() {}

  /** Where the two texts first differ, or null if they are the same JSON. */
  static String difference(String expected, String actual) {
    return difference(
        JsonValue.parse(expected, "$", 1), JsonValue.parse(actual, "$", 1), "$");
  }

  private static String difference(JsonValue a, JsonValue b, String path) {
    if (a.getClass() != b.getClass()) {
      return path + ": " + JsonValue.typeName(a) + " vs " + JsonValue.typeName(b);
    }
    if (a instanceof JsonValue.Num x) {
      JsonValue.Num y = (JsonValue.Num) b;
      if (x.isFloat() != y.isFloat()) {
        return path + ": " + x.text() + " vs " + y.text() + " (integer vs float)";
      }
      boolean same =
          x.isFloat()
              ? Double.compare(Double.parseDouble(x.text()), Double.parseDouble(y.text())) == 0
              : new BigInteger(x.text()).equals(new BigInteger(y.text()));
      return same ? null : path + ": " + x.text() + " vs " + y.text();
    }
    if (a instanceof JsonValue.Arr x) {
      List<JsonValue> xs = x.items();
      List<JsonValue> ys = ((JsonValue.Arr) b).items();
      if (xs.size() != ys.size()) {
        return path + ": " + xs.size() + " vs " + ys.size() + " items";
      }
      for (int i = 0; i < xs.size(); i++) {
        String d = difference(xs.get(i), ys.get(i), path + "[" + i + "]");
        if (d != null) {
          return d;
        }
      }
      return null;
    }
    if (a instanceof JsonValue.Obj x) {
      Map<String, JsonValue> xs = x.members();
      Map<String, JsonValue> ys = ((JsonValue.Obj) b).members();
      if (!List.copyOf(xs.keySet()).equals(List.copyOf(ys.keySet()))) {
        return path + ": keys " + xs.keySet() + " vs " + ys.keySet();
      }
      Iterator<Map.Entry<String, JsonValue>> it = ys.entrySet().iterator();
      for (Map.Entry<String, JsonValue> member : xs.entrySet()) {
        String d = difference(member.getValue(), it.next().getValue(), path + "." + member.getKey());
        if (d != null) {
          return d;
        }
      }
      return null;
    }
    return a.equals(b) ? null : path + ": " + JsonValue.text(a) + " vs " + JsonValue.text(b);
  }
}

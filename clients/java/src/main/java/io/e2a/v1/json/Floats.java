package io.e2a.v1.json;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;

/** Shortest round-trip formatting of doubles, as the wire JSON and Python's repr write them. */
final class Floats {
  private Floats() {}

  /**
   * A finite double as the wire JSON writes floats: positional with at least one fraction digit
   * for decimal exponents -5 to 15, else {@code d.ddde±X} ({@code 1e-6}, {@code 1e+16}).
   */
  static String wire(double d) {
    return format(d, -5, 1);
  }

  /** A double as Python's repr writes it ({@code 1e-05}, {@code 0.0001}, {@code nan}). */
  static String pyRepr(double d) {
    if (Double.isNaN(d)) {
      return "nan";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "inf" : "-inf";
    }
    return format(d, -4, 2);
  }

  private static String format(double d, int lowest, int exponentDigits) {
    StringBuilder out = new StringBuilder();
    if (d < 0 || (d == 0 && 1 / d < 0)) {
      out.append('-');
    }
    String digits;
    int exponent;
    if (d == 0) {
      digits = "0";
      exponent = 0;
    } else {
      BigDecimal shortest = shortest(Math.abs(d));
      BigDecimal stripped = shortest.stripTrailingZeros();
      digits = stripped.unscaledValue().toString();
      exponent = digits.length() - 1 - stripped.scale();
    }
    if (lowest <= exponent && exponent < 16) {
      if (exponent >= 0) {
        if (digits.length() <= exponent + 1) {
          out.append(digits).append("0".repeat(exponent + 1 - digits.length())).append(".0");
        } else {
          out.append(digits, 0, exponent + 1).append('.').append(digits.substring(exponent + 1));
        }
      } else {
        out.append("0.").append("0".repeat(-exponent - 1)).append(digits);
      }
      return out.toString();
    }
    out.append(digits.charAt(0));
    if (digits.length() > 1) {
      out.append('.').append(digits.substring(1));
    }
    out.append('e').append(exponent < 0 ? '-' : '+');
    String power = Integer.toString(Math.abs(exponent));
    out.append("0".repeat(Math.max(0, exponentDigits - power.length()))).append(power);
    return out.toString();
  }

  /** The shortest decimal that reads back as d (d positive, finite), the closest one of its length. */
  private static BigDecimal shortest(double d) {
    BigDecimal exact = new BigDecimal(d);
    for (int precision = 1; precision <= 17; precision++) {
      BigDecimal best = null;
      for (RoundingMode mode :
          new RoundingMode[] {RoundingMode.HALF_EVEN, RoundingMode.FLOOR, RoundingMode.CEILING}) {
        BigDecimal candidate = exact.round(new MathContext(precision, mode));
        if (Double.parseDouble(candidate.toString()) != d) {
          continue;
        }
        if (best == null
            || candidate.subtract(exact).abs().compareTo(best.subtract(exact).abs()) < 0) {
          best = candidate;
        }
      }
      if (best != null) {
        return best;
      }
    }
    return exact.round(new MathContext(17, RoundingMode.HALF_EVEN));
  }
}

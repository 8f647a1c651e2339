/*
 * A small strict JSON reader and writer for fencelockd's answers and requests (RFC 8259).
 *
 * JDK 17 has no JSON parser, and a fencing token must never pass through a double: a token above
 * 2^53 would silently change, and a token off by one fences the wrong writes. So numbers are kept
 * exact: an integer is a Long (a BigInteger beyond 64 bits), any other number a BigDecimal. Objects
 * are LinkedHashMaps (a duplicate key is refused), arrays Lists, strings Strings, true/false
 * Booleans, null is Json.NULL. Anything that is not JSON — trailing bytes, leading zeros, bare
 * control characters, lone surrogate escapes, nesting deeper than 64 — is refused, and so are
 * numbers longer than 100 characters or beyond a BigDecimal's exponent.
 */
package dev.fencelock;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Json {
  /** JSON's null, so that a present null can be told from a missing key. */
  static final Object NULL = new Object() {
    @Override
    public String toString() {
      return "null";
    }
  };

  private static final int kMaxDepth = 64;
  // Longer numbers are refused: no answer holds one, and reading a huge one costs quadratic time.
  private static final int kMaxNumberLength = 100;

  /** Thrown for text that is not JSON; the message says where and why. */
  static final class SyntaxException extends Exception {
    private static final long serialVersionUID = 1L;

    SyntaxException(String message) {
      super(message);
    }
  }

  private final String text;
  private int at;

  private Json(String text) {
    this.text = text;
  }

  /** The value `text` holds; SyntaxException unless it is exactly one JSON value. */
  static Object parse(String text) throws SyntaxException {
    Json reader = new Json(text);
    reader.skipSpace();
    Object value = reader.value(0);
    reader.skipSpace();
    if (reader.at != text.length()) {
      throw reader.error("unexpected text after the value");
    }
    return value;
  }

  private SyntaxException error(String why) {
    return new SyntaxException("not JSON at offset " + at + ": " + why);
  }

  private void skipSpace() {
    while (at < text.length()) {
      char c = text.charAt(at);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      ++at;
    }
  }

  private Object value(int depth) throws SyntaxException {
    if (depth > kMaxDepth) {
      throw error("nested deeper than " + kMaxDepth);
    }
    if (at >= text.length()) {
      throw error("a value is missing");
    }
    char c = text.charAt(at);
    switch (c) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", NULL);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          return number();
        }
        throw error("unexpected character '" + c + "'");
    }
  }

  private Object literal(String word, Object value) throws SyntaxException {
    if (!text.startsWith(word, at)) {
      throw error("expected " + word);
    }
    at += word.length();
    return value;
  }

  private Map<String, Object> object(int depth) throws SyntaxException {
    Map<String, Object> members = new LinkedHashMap<>();
    ++at;
    skipSpace();
    if (at < text.length() && text.charAt(at) == '}') {
      ++at;
      return members;
    }
    while (true) {
      skipSpace();
      if (at >= text.length() || text.charAt(at) != '"') {
        throw error("expected a member name");
      }
      String key = string();
      skipSpace();
      expect(':');
      skipSpace();
      Object value = value(depth + 1);
      if (members.put(key, value) != null) {
        throw error("the member \"" + key + "\" appears twice");
      }
      skipSpace();
      if (at < text.length() && text.charAt(at) == ',') {
        ++at;
        continue;
      }
      expect('}');
      return members;
    }
  }

  private List<Object> array(int depth) throws SyntaxException {
    List<Object> items = new ArrayList<>();
    ++at;
    skipSpace();
    if (at < text.length() && text.charAt(at) == ']') {
      ++at;
      return items;
    }
    while (true) {
      skipSpace();
      items.add(value(depth + 1));
      skipSpace();
      if (at < text.length() && text.charAt(at) == ',') {
        ++at;
        continue;
      }
      expect(']');
      return items;
    }
  }

  private void expect(char c) throws SyntaxException {
    if (at >= text.length() || text.charAt(at) != c) {
      throw error("expected '" + c + "'");
    }
    ++at;
  }

  private String string() throws SyntaxException {
    ++at;  // the opening quote
    StringBuilder out = new StringBuilder();
    while (true) {
      if (at >= text.length()) {
        throw error("unterminated string");
      }
      char c = text.charAt(at++);
      if (c == '"') {
        return out.toString();
      }
      if (c < 0x20) {
        throw error("a control character in a string");
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      if (at >= text.length()) {
        throw error("unterminated escape");
      }
      char e = text.charAt(at++);
      switch (e) {
        case '"': out.append('"'); break;
        case '\\': out.append('\\'); break;
        case '/': out.append('/'); break;
        case 'b': out.append('\b'); break;
        case 'f': out.append('\f'); break;
        case 'n': out.append('\n'); break;
        case 'r': out.append('\r'); break;
        case 't': out.append('\t'); break;
        case 'u': {
          char unit = hex4();
          if (Character.isHighSurrogate(unit)) {
            if (!text.startsWith("\\u", at)) {
              throw error("a lone surrogate escape");
            }
            at += 2;
            char low = hex4();
            if (!Character.isLowSurrogate(low)) {
              throw error("a lone surrogate escape");
            }
            out.append(unit).append(low);
          } else if (Character.isLowSurrogate(unit)) {
            throw error("a lone surrogate escape");
          } else {
            out.append(unit);
          }
          break;
        }
        default:
          throw error("a bad escape \\" + e);
      }
    }
  }

  private char hex4() throws SyntaxException {
    if (at + 4 > text.length()) {
      throw error("a short \\u escape");
    }
    int value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text.charAt(at + i);
      int digit = c < 0x80 ? Character.digit(c, 16) : -1;  // ASCII only, not other scripts' digits
      if (digit < 0) {
        throw error("a bad \\u escape");
      }
      value = value * 16 + digit;
    }
    at += 4;
    return (char) value;
  }

  private Object number() throws SyntaxException {
    int start = at;
    if (text.charAt(at) == '-') {
      ++at;
    }
    if (at >= text.length() || !isDigit(text.charAt(at))) {
      throw error("a digit is missing");
    }
    if (text.charAt(at) == '0') {
      ++at;
      if (at < text.length() && isDigit(text.charAt(at))) {
        throw error("a leading zero");
      }
    } else {
      while (at < text.length() && isDigit(text.charAt(at))) {
        ++at;
      }
    }
    boolean integral = true;
    if (at < text.length() && text.charAt(at) == '.') {
      integral = false;
      ++at;
      digits();
    }
    if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
      integral = false;
      ++at;
      if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) {
        ++at;
      }
      digits();
    }
    if (at - start > kMaxNumberLength) {
      at = start;
      throw error("a number of more than " + kMaxNumberLength + " characters");
    }
    String literal = text.substring(start, at);
    if (!integral) {
      try {
        return new BigDecimal(literal);
      } catch (NumberFormatException e) {  // an exponent beyond what a BigDecimal holds
        at = start;
        throw error("a number out of range");
      }
    }
    BigInteger value = new BigInteger(literal);
    return value.bitLength() < 64 ? (Object) value.longValueExact() : value;
  }

  private void digits() throws SyntaxException {
    if (at >= text.length() || !isDigit(text.charAt(at))) {
      throw error("a digit is missing");
    }
    while (at < text.length() && isDigit(text.charAt(at))) {
      ++at;
    }
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  // --- writing --------------------------------------------------------------------------------

  /** `value` (Map with String keys, List, String, Long/Integer, Boolean, null) as JSON text. */
  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value);
    return out.toString();
  }

  private static void write(StringBuilder out, Object value) {
    if (value == null || value == NULL) {
      out.append("null");
    } else if (value instanceof String) {
      quote(out, (String) value);
    } else if (value instanceof Long || value instanceof Integer || value instanceof Boolean
        || value instanceof BigInteger) {
      out.append(value);
    } else if (value instanceof Map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> member : ((Map<?, ?>) value).entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        quote(out, (String) member.getKey());
        out.append(':');
        write(out, member.getValue());
      }
      out.append('}');
    } else if (value instanceof List) {
      out.append('[');
      boolean first = true;
      for (Object item : (List<?>) value) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(out, item);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("cannot write a " + value.getClass().getName() + " as JSON");
    }
  }

  private static void quote(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }

  // --- reading fields of an answer ------------------------------------------------------------

  /** The member `name` of `object` as a long, when it is a JSON integer that fits one; else null. */
  static Long longField(Map<String, Object> object, String name) {
    Object value = object.get(name);
    return value instanceof Long ? (Long) value : null;
  }
}

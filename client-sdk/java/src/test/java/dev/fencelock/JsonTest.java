package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  @DisplayName("64-bit tokens are read exactly, never through a double")
  void largeIntegersAreExact() throws Exception {
    Map<?, ?> answer = (Map<?, ?>) Json.parse(
        "{\"a\":9007199254740993,\"b\":9223372036854775807,\"c\":18446744073709551615,\"d\":-1}");
    assertEquals(9007199254740993L, answer.get("a"));  // 2^53 + 1: a double would read 2^53
    assertEquals(Long.MAX_VALUE, answer.get("b"));
    assertEquals(new BigInteger("18446744073709551615"), answer.get("c"));
    assertEquals(-1L, answer.get("d"));
  }

  @Test
  @DisplayName("text that is not exactly one JSON value is refused")
  void strict() {
    for (String bad : List.of("", "{", "{\"a\":1,}", "{\"a\":01}", "{\"a\":1} x", "[1 2]",
        "{\"a\":1,\"a\":2}", "\"\u0001\"", "\"\\x\"", "\"\\ud800\"", "tru", "1.", "-", "{a:1}",
        "[".repeat(100) + "]".repeat(100), "1e99999999999", "1e2147483648", "9".repeat(101),
        "\"\\u\uff10\uff10\uff14\uff11\"", "\"\\u\u0661\u0662\u0663\u0664\"")) {
      assertThrows(Json.SyntaxException.class, () -> Json.parse(bad), bad);
    }
  }

  @Test
  @DisplayName("strings, escapes, nesting and literals read as JSON says")
  void values() throws Exception {
    Object value = Json.parse(" {\"s\":\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\",\"l\":[true,false,null,1.5e3],\"o\":{}} ");
    Map<?, ?> map = (Map<?, ?>) value;
    assertEquals("a\"b\\c\né\uD83D\uDE00", map.get("s"));
    List<?> list = (List<?>) map.get("l");
    assertEquals(List.of(true, false, Json.NULL), list.subList(0, 3));
    assertEquals(new java.math.BigDecimal("1.5e3"), list.get(3));
    assertTrue(((Map<?, ?>) map.get("o")).isEmpty());
  }

  @Test
  @DisplayName("what is written reads back the same")
  void roundTrip() throws Exception {
    Map<String, Object> body = new java.util.LinkedHashMap<>();
    body.put("owner", "a \"b\" \\ \n\u0000 é");
    body.put("ttl_ms", Long.MAX_VALUE);
    body.put("names", List.of("x", "y"));
    assertEquals(body, Json.parse(Json.write(body)));
  }
}

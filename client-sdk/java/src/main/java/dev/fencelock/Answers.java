/*
 * Reading fencelockd's answers (docs/api.md): an error answer into its FencelockException, a
 * success into its JSON object and checked fields, a lock's status into a LockStatus. Every
 * answer is untrusted input: a field missing, of the wrong type or out of range is internal,
 * never a wrong value handed on. Stateless.
 */
package dev.fencelock;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

final class Answers {
  private Answers() {}

  /**
   * The error a non-200 reply carries: its {"error": {code, message, retry_after_ms, permits}}
   * when present, else "http_STATUS"; retryAfter from the body or else the Retry-After header.
   */
  static FencelockException errorFrom(Reply reply) {
    String code = null;
    String message = "HTTP " + reply.status;
    Duration retryAfter = null;
    Integer permits = null;
    try {
      Object parsed = Json.parse(reply.body);
      if (parsed instanceof Map && ((Map<?, ?>) parsed).get("error") instanceof Map) {
        @SuppressWarnings("unchecked")
        Map<String, Object> error = (Map<String, Object>) ((Map<?, ?>) parsed).get("error");
        if (error.get("code") instanceof String) {
          code = (String) error.get("code");
        }
        if (error.get("message") instanceof String) {
          message = (String) error.get("message");
        }
        Long ms = Json.longField(error, "retry_after_ms");
        if (ms != null && ms >= 0) {
          retryAfter = Duration.ofMillis(ms);
        }
        Long live = Json.longField(error, "permits");
        if (live != null && live >= 0 && live <= FencelockClient.MAX_PERMITS) {
          permits = live.intValue();
        }
      }
    } catch (Json.SyntaxException notJson) {
      // the status decides
    }
    if (retryAfter == null) {
      Optional<String> header = reply.headers.firstValue("Retry-After");
      if (header.isPresent() && header.get().matches("[0-9]{1,9}")) {
        retryAfter = Duration.ofSeconds(Long.parseLong(header.get()));
      }
    }
    if (code == null || code.isEmpty()) {
      code = "http_" + reply.status;
    }
    return new FencelockException(code, message, reply.status, retryAfter,
        reply.headers.firstValue("X-Request-Id").orElse(null), permits, null);
  }

  /** A 200 reply's JSON object; any other status throws its error (errorFrom). */
  static Map<String, Object> expectObject(Reply reply) throws FencelockException {
    if (reply.status != 200) {
      throw errorFrom(reply);
    }
    return parseObject(reply);
  }

  /** The reply's body as a JSON object, whatever its status; internal when it is not one. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> parseObject(Reply reply) throws FencelockException {
    try {
      Object parsed = Json.parse(reply.body);
      if (parsed instanceof Map) {
        return (Map<String, Object>) parsed;
      }
    } catch (Json.SyntaxException e) {
      throw new FencelockException(FencelockException.INTERNAL,
          "the service's answer is not JSON: " + e.getMessage(), reply.status, null,
          reply.headers.firstValue("X-Request-Id").orElse(null), null, e);
    }
    throw internal("the service answered something that is not a JSON object");
  }

  static long positiveLong(Map<String, Object> answer, String name) throws FencelockException {
    return boundedLong(answer, name, 1, Long.MAX_VALUE);
  }

  /** The integer field `name` of `answer`, `min` .. `max`; internal when absent or out of range. */
  static long boundedLong(Map<String, Object> answer, String name, long min, long max)
      throws FencelockException {
    Object value = answer.get(name);
    if (!(value instanceof Long) || (Long) value < min || (Long) value > max) {
      throw internal("the service's answer lacks the integer '" + name + "' (" + min + " .. " + max
          + ")" + (value instanceof java.math.BigInteger ? ": it does not fit 64 bits" : ""));
    }
    return (Long) value;
  }

  /** A status's answer, or a watch's (`lastToken` 0, and `changed`). */
  static LockStatus lockStatus(Map<String, Object> answer, long lastToken, boolean changed)
      throws FencelockException {
    Object held = answer.get("held");
    Long remaining = Json.longField(answer, "remaining_ms");
    // The holder's token and owner: null (or absent) when not held, the owner also when none was sent.
    Object holderToken = answer.get("token");
    OptionalLong token = holderToken == null || holderToken == Json.NULL ? OptionalLong.empty()
        : OptionalLong.of(positiveLong(answer, "token"));
    Object owner = answer.get("owner") == Json.NULL ? null : answer.get("owner");
    if (owner != null && !(owner instanceof String)) {
      throw internal("the service's answer holds an 'owner' that is not a string");
    }
    return new LockStatus(Boolean.TRUE.equals(held),
        remaining == null ? Optional.empty() : Optional.of(Duration.ofMillis(remaining)),
        lastToken, token, Optional.ofNullable((String) owner), changed);
  }

  static FencelockException internal(String message) {
    return new FencelockException(FencelockException.INTERNAL, message);
  }
}

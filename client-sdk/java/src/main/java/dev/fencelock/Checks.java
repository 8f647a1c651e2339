/*
 * The client's argument checks, made before anything is sent: names, lock sets, request ids and
 * durations. Each returns the value as the request carries it, or throws invalid_request naming
 * what is wrong; none touches the network or any state.
 */
package dev.fencelock;

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Pattern;

final class Checks {
  private static final Pattern kName = Pattern.compile("[A-Za-z0-9._:-]{1,200}");
  private static final Pattern kRequestId = Pattern.compile("[\\x21-\\x7e]{1,64}");
  private static final long kMaxMillis = 1L << 31;

  private Checks() {}

  /** invalid_request unless `name` is a valid lock name (docs/api.md, "Names"). */
  static void name(String name) throws FencelockException {
    if (name == null || !kName.matcher(name).matches() || name.equals(".") || name.equals("..")) {
      throw invalid(FencelockClient.NAME_RULE);
    }
  }

  /** A lock set's names, checked (1 .. MAX_SET_NAMES valid, distinct names) and sorted. */
  static List<String> setNames(Collection<String> names) throws FencelockException {
    if (names == null || names.isEmpty() || names.size() > FencelockClient.MAX_SET_NAMES) {
      throw invalid("a lock set has 1 to " + FencelockClient.MAX_SET_NAMES + " names");
    }
    for (String name : names) {
      name(name);
    }
    if (new HashSet<>(names).size() != names.size()) {
      throw invalid("a lock set's names must be distinct");
    }
    return List.copyOf(new TreeSet<>(names));
  }

  /** invalid_request unless `requestId` is null or 1 .. 64 printable ASCII characters without spaces. */
  static void requestId(String requestId) throws FencelockException {
    if (requestId != null && !kRequestId.matcher(requestId).matches()) {
      throw invalid("a request id is 1 to 64 printable ASCII characters without spaces");
    }
  }

  /** `value` in whole milliseconds, `min` .. 2^31; `what` names it in the error. */
  static long millis(Duration value, String what, long min) throws FencelockException {
    if (value == null || value.isNegative()) {
      throw invalid(what + " must be a non-negative duration");
    }
    long ms;
    try {
      ms = value.toMillis();
    } catch (ArithmeticException e) {
      throw invalid(what + " out of range");
    }
    if (ms < min || ms > kMaxMillis) {
      throw invalid(what + " out of range: " + value);
    }
    return ms;
  }

  /** `value` itself, if it is `min` .. `max` (an option of the Builder, named `what`). */
  static Duration bounded(Duration value, Duration min, Duration max, String what)
      throws FencelockException {
    if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw invalid(what + " must be " + min + " .. " + max);
    }
    return value;
  }

  static FencelockException invalid(String message) {
    return new FencelockException(FencelockException.INVALID_REQUEST, message);
  }
}

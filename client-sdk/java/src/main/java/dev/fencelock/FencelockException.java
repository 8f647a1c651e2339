/*
 * The one error type of the fencelock client. code() is the API's stable error code
 * (docs/api.md, "Errors") as fencelockd sent it, or one of the client's own codes for what no
 * answer can say. Messages are for people, are not stable, and never hold a lease string or an
 * API key.
 */
package dev.fencelock;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Every failure of the client, told apart by {@link #code()}.
 *
 * <p>The service's codes (docs/api.md): {@link #LOCKED} (an expected outcome of acquire: someone
 * else holds it; {@link #retryAfter()} when known), {@link #NOT_HELD} (the lease is gone: stop
 * writing), {@link #PERMITS_MISMATCH} ({@link #permits()}: the live count), {@link #UNAVAILABLE}
 * (too few lock nodes or the token source: retry later), {@link #UNAUTHENTICATED}, {@link
 * #FORBIDDEN}, {@link #RATE_LIMITED}, {@link #QUOTA_EXCEEDED}, {@link #INVALID_REQUEST}, {@link
 * #PLAIN_HTTP_ON_TLS_PORT}, {@link #PAYLOAD_TOO_LARGE}, {@link #INTERNAL}, and any other code a
 * newer fencelockd sends, passed on as is ({@code http_<status>} for an answer without one).
 *
 * <p>The client's own: {@link #INVALID_REQUEST} also for an argument refused before anything is
 * sent, {@link #TRANSPORT} (no usable answer: refused, timed out, broken), {@link #TLS} (the
 * handshake failed: fix the certificates), {@link #CANCELLED} (the calling thread was interrupted;
 * its interrupt status is set again), {@link #LEASE_LOST} (the lease keeper gave up on a lease;
 * {@link #getCause()} says why), {@link #INTERNAL} (an answer the client cannot read).
 */
public final class FencelockException extends Exception {
  private static final long serialVersionUID = 1L;

  public static final String LOCKED = "locked";
  public static final String NOT_HELD = "not_held";
  public static final String PERMITS_MISMATCH = "permits_mismatch";
  public static final String UNAVAILABLE = "unavailable";
  public static final String UNAUTHENTICATED = "unauthenticated";
  public static final String FORBIDDEN = "forbidden";
  public static final String RATE_LIMITED = "rate_limited";
  public static final String QUOTA_EXCEEDED = "quota_exceeded";
  public static final String INVALID_REQUEST = "invalid_request";
  public static final String PLAIN_HTTP_ON_TLS_PORT = "plain_http_on_tls_port";
  public static final String PAYLOAD_TOO_LARGE = "payload_too_large";
  public static final String INTERNAL = "internal";
  public static final String TRANSPORT = "transport";
  public static final String TLS = "tls";
  public static final String CANCELLED = "cancelled";
  public static final String LEASE_LOST = "lease_lost";

  private final String code;
  private final int httpStatus;
  private final Duration retryAfter;
  private final String requestId;
  private final Integer permits;

  FencelockException(String code, String message) {
    this(code, message, 0, null, null, null, null);
  }

  FencelockException(String code, String message, Throwable cause) {
    this(code, message, 0, null, null, null, cause);
  }

  FencelockException(String code, String message, int httpStatus, Duration retryAfter,
      String requestId, Integer permits, Throwable cause) {
    super(message, cause);
    this.code = code;
    this.httpStatus = httpStatus;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
    this.permits = permits;
  }

  /** The stable code: one of the constants of this class, or a code a newer service sent. */
  public String code() {
    return code;
  }

  /** The answer's HTTP status; 0 when there was no answer. */
  public int httpStatus() {
    return httpStatus;
  }

  /** How long until a retry may succeed, when the service said (retry_after_ms, Retry-After). */
  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }

  /** The answer's X-Request-Id: names the request in fencelockd's log. */
  public Optional<String> requestId() {
    return Optional.ofNullable(requestId);
  }

  /** permits_mismatch: the live semaphore's permit count, when the service said. */
  public OptionalInt permits() {
    return permits == null ? OptionalInt.empty() : OptionalInt.of(permits);
  }

  /** True for codes after which the same call may succeed later: unavailable, transport, rate limits. */
  public boolean isRetryable() {
    return code.equals(UNAVAILABLE) || code.equals(TRANSPORT) || code.equals(RATE_LIMITED)
        || code.equals(QUOTA_EXCEEDED);
  }

  @Override
  public String toString() {
    return "FencelockException(" + code + (httpStatus != 0 ? ", HTTP " + httpStatus : "") + "): "
        + getMessage();
  }
}

/*
 * Sends one call of the client to its endpoints, retrying as FencelockClient's file comment
 * promises: each attempt goes to the next endpoint (starting at the last one that answered), with
 * requestTimeout (plus the call's wait) per attempt and retryBackoff, doubled, between attempts.
 *
 * How far a call may be repeated is its Retry; a TLS failure is reported rather than a later
 * connection failure, since it names the misconfiguration. An interrupted call ends with
 * "cancelled" and the thread's interrupt status set again. Thread safety: safe from any thread.
 */
package dev.fencelock;

import java.time.Duration;
import java.util.List;
import java.util.Map;

final class Transport {
  /**
   * When a call is sent again. ONLY_IF_UNDELIVERED: only if it never reached fencelockd (a grant).
   * REPEATABLE: also when it may have, but not on a 503 (an acquire that names its request: the
   * service answers the same grant again). SAFE: also on a 503.
   */
  enum Retry { ONLY_IF_UNDELIVERED, REPEATABLE, SAFE }

  private final List<Endpoint> endpoints;
  private final Duration requestTimeout;
  private final int maxRetries;
  private final Duration retryBackoff;
  private final Object mutex = new Object();
  private int preferred;

  /** `endpoints`: 1 or more; the other options as the Builder checked them. */
  Transport(List<Endpoint> endpoints, Duration requestTimeout, int maxRetries, Duration retryBackoff) {
    this.endpoints = List.copyOf(endpoints);
    this.requestTimeout = requestTimeout;
    this.maxRetries = maxRetries;
    this.retryBackoff = retryBackoff;
  }

  /**
   * Sends one request — `body` as JSON, or none when null — retrying as `retry` allows; each
   * attempt may take `extraMillis` beyond requestTimeout, and the whole call at most
   * `withinNanos` when that is not null. Returns the reply whose status is not a retried 503.
   * Throws the last attempt's error (a TLS failure before a later connection failure).
   * `late`: a grant's, see Endpoint.roundTrip; null for any other call.
   */
  Reply call(String method, String path, Map<String, Object> body, Retry retry,
      long extraMillis, Long withinNanos, Endpoint.LateGrant late) throws FencelockException {
    if (Thread.currentThread().isInterrupted()) {
      throw new FencelockException(FencelockException.CANCELLED, "the calling thread is interrupted");
    }
    String data = body == null ? null : Json.write(body);
    long started = System.nanoTime();
    long backoff = retryBackoff.toNanos();
    FencelockException last = null;
    FencelockException tls = null;
    int first;
    synchronized (mutex) {
      first = preferred;
    }
    for (int attempt = 0; attempt <= maxRetries; ++attempt) {
      int index = (first + attempt) % endpoints.size();
      Endpoint endpoint = endpoints.get(index);
      long timeout = requestTimeout.toNanos() + extraMillis * 1_000_000;
      if (withinNanos != null) {
        timeout = Math.min(timeout, started + withinNanos - System.nanoTime());
      }
      if (timeout <= 0) {
        break;
      }
      try {
        Reply reply = endpoint.roundTrip(method, path, data, Duration.ofNanos(timeout), late);
        synchronized (mutex) {
          preferred = index;
        }
        if (!(reply.status == 503 && retry == Retry.SAFE)) {
          return reply;
        }
        last = Answers.errorFrom(reply);
      } catch (Endpoint.RoundTripFailure failure) {
        last = failure.error;
        if (last.code().equals(FencelockException.CANCELLED)) {
          Thread.currentThread().interrupt();
          throw last;
        }
        if (failure.maybeDelivered && retry == Retry.ONLY_IF_UNDELIVERED) {
          throw last;
        }
        if (last.code().equals(FencelockException.TLS)) {
          tls = tls == null ? last : tls;
          if (endpoints.size() == 1) {
            break;
          }
        }
      }
      if (attempt == maxRetries) {
        break;
      }
      if (withinNanos != null && System.nanoTime() + backoff >= started + withinNanos) {
        break;
      }
      try {
        Thread.sleep(backoff / 1_000_000, (int) (backoff % 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new FencelockException(FencelockException.CANCELLED, "interrupted while waiting to retry");
      }
      backoff *= 2;
    }
    if (tls != null && (last == null || last.code().equals(FencelockException.TRANSPORT))) {
      throw tls;
    }
    throw last != null ? last
        : new FencelockException(FencelockException.TRANSPORT, "no time left to send the request");
  }

  /** A GET of `path`, safe to repeat: its answer, a JSON object (errors as Answers.expectObject). */
  Map<String, Object> getSafely(String path) throws FencelockException {
    return Answers.expectObject(call("GET", path, null, Retry.SAFE, 0, null, null));
  }
}

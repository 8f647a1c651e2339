/*
 * A lease's requests: asking for a grant (a lock, a revoke, a lock set, a semaphore permit, a
 * read/write lock's read or write grant), reading the answer into a Lease, extending and
 * releasing it. The public contracts are FencelockClient's, which delegates here.
 *
 * Every grant is one shape — a body of ttl_ms, wait_ms and owner, a POST, an answer of lease and
 * validity_ms plus the kind's own token fields — so a kind is a route, its extra body field, its
 * Retry and an AnswerReader. A lease's deadline is conservative: the request's send time plus
 * waited_ms plus validity_ms. A grant whose answer arrives after its caller was interrupted is released at
 * once on a worker thread (or a thread of its own once the client is closed).
 */
package dev.fencelock;

import dev.fencelock.Transport.Retry;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;

final class Grants {
  private static final SecureRandom kRandom = new SecureRandom();
  private static final System.Logger kLog = System.getLogger("dev.fencelock");

  /** Turns a grant's answer into its Lease; `sentAtNanos` is when the granting request was sent. */
  private interface AnswerReader {
    Lease read(Map<String, Object> answer, long sentAtNanos) throws FencelockException;
  }

  private final FencelockClient client;
  private final Transport transport;
  private final ExecutorService workers;

  /** The leases made belong to `client`; late grants are released on `workers`. */
  Grants(FencelockClient client, Transport transport, ExecutorService workers) {
    this.client = client;
    this.transport = transport;
    this.workers = workers;
  }

  /** FencelockClient.acquire; `owner` and `requestId` may be null. */
  Lease lock(String name, Duration ttl, Duration wait, String owner, String requestId)
      throws FencelockException {
    Checks.name(name);
    Checks.requestId(requestId);
    Map<String, Object> body = body(ttl, wait, owner);
    body.put("request_id", requestId != null ? requestId : newRequestId());
    return grant("/v1/locks/" + name, body, Retry.REPEATABLE, lockReader(name, body));
  }

  /** A request id for one acquire call: 128 bits from SecureRandom, in hex. */
  private static String newRequestId() {
    byte[] bytes = new byte[16];
    kRandom.nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }

  /** FencelockClient.revoke; `owner` may be null. */
  Lease revoke(String name, Duration ttl, String owner) throws FencelockException {
    Checks.name(name);
    Map<String, Object> body = body(ttl, Duration.ZERO, owner);
    return grant("/v1/locks/" + name + "/revoke", body, Retry.ONLY_IF_UNDELIVERED, lockReader(name, body));
  }

  /** Reads the grant of lock `name` (acquire, revoke). */
  private AnswerReader lockReader(String name, Map<String, Object> body) {
    return (answer, sentAt) -> {
      long token = Answers.positiveLong(answer, "token");
      Map<String, Long> tokens = new LinkedHashMap<>();
      tokens.put(name, token);
      return lease(answer, sentAt, Lease.Kind.LOCK, List.of(name), tokens, token, 0, 0, body);
    };
  }

  /** FencelockClient.acquireSet: a token per name, the names sorted. */
  Lease set(Collection<String> names, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    List<String> sorted = Checks.setNames(names);
    Map<String, Object> body = body(ttl, wait, owner);
    body.put("names", sorted);
    return grant("/v1/locks", body, Retry.ONLY_IF_UNDELIVERED, (answer, sentAt) -> {
      Object granted = answer.get("tokens");
      if (!(granted instanceof Map) || !new TreeSet<>(((Map<?, ?>) granted).keySet()).equals(new TreeSet<>(sorted))) {
        throw Answers.internal("the service's answer lacks a token per name");
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> byName = (Map<String, Object>) granted;
      Map<String, Long> tokens = new LinkedHashMap<>();
      for (String name : sorted) {
        tokens.put(name, Answers.positiveLong(byName, name));
      }
      return lease(answer, sentAt, Lease.Kind.SET, sorted, tokens, 0, 0, 0, body);
    });
  }

  /** FencelockClient.acquirePermit: the live permit count and the slot held come with the token. */
  Lease permit(String name, int permits, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    Checks.name(name);
    if (permits < 1 || permits > FencelockClient.MAX_PERMITS) {
      throw Checks.invalid("permits must be 1 .. " + FencelockClient.MAX_PERMITS);
    }
    Map<String, Object> body = body(ttl, wait, owner);
    body.put("permits", (long) permits);
    return grant("/v1/semaphores/" + name, body, Retry.ONLY_IF_UNDELIVERED, (answer, sentAt) -> {
      long token = Answers.positiveLong(answer, "token");
      Map<String, Long> tokens = new LinkedHashMap<>();
      tokens.put(name, token);
      int live = (int) Answers.boundedLong(answer, "permits", 1, FencelockClient.MAX_PERMITS);
      int slot = (int) Answers.boundedLong(answer, "slot", 0, live - 1);
      return lease(answer, sentAt, Lease.Kind.PERMIT, List.of(name), tokens, token, live, slot, body);
    });
  }

  /** FencelockClient.acquireRead (`kind` READ) and acquireWrite (WRITE). */
  Lease readWrite(String name, Lease.Kind kind, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    Checks.name(name);
    String mode = kind == Lease.Kind.WRITE ? "write" : "read";
    Map<String, Object> body = body(ttl, wait, owner);
    body.put("mode", mode);
    return grant("/v1/rwlocks/" + name, body, Retry.ONLY_IF_UNDELIVERED, (answer, sentAt) -> {
      long token = Answers.positiveLong(answer, "token");
      Map<String, Long> tokens = new LinkedHashMap<>();
      tokens.put(name, token);
      Lease lease = lease(answer, sentAt, kind, List.of(name), tokens, token, 0, 0, body);
      // A reader that believed it wrote alone, or a writer that believed it shared, would be
      // wrong about what its token fences.
      if (!mode.equals(answer.get("mode"))) {
        lease.close();
        throw Answers.internal("the service's answer does not grant the mode asked for");
      }
      return lease;
    });
  }

  /** FencelockClient.extendDeadline: the deadline an extend by `ttl` gives. */
  long extendDeadline(Lease lease, Duration ttl, Long withinNanos) throws FencelockException {
    long ttlMs = Checks.millis(ttl, "ttl", 1);
    Map<String, Object> body = leaseBody(lease);
    body.put("ttl_ms", ttlMs);
    String path = lease.kind() == Lease.Kind.SET ? "/v1/locks:extend" : leasePath(lease) + "/extend";
    Reply reply = transport.call("POST", path, body, Retry.SAFE, 0, withinNanos, null);
    Map<String, Object> answer = Answers.expectObject(reply);
    long validity = Answers.boundedLong(answer, "validity_ms", 0, Long.MAX_VALUE / 1_000_000);
    return reply.sentAtNanos + validity * 1_000_000;
  }

  /** FencelockClient.release: true iff the lease still held its names. */
  boolean release(Lease lease) throws FencelockException {
    Reply reply = transport.call("DELETE", leasePath(lease), leaseBody(lease), Retry.SAFE, 0, null, null);
    Object released = Answers.expectObject(reply).get("released");
    if (!(released instanceof Boolean)) {
      throw Answers.internal("the service's answer lacks 'released'");
    }
    return (Boolean) released;
  }

  private static Map<String, Object> body(Duration ttl, Duration wait, String owner)
      throws FencelockException {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("ttl_ms", Checks.millis(ttl, "ttl", 1));
    long waitMs = Checks.millis(wait == null ? Duration.ZERO : wait, "wait", 0);
    if (waitMs > 0) {
      body.put("wait_ms", waitMs);
    }
    if (owner != null && !owner.isEmpty()) {
      body.put("owner", owner);
    }
    return body;
  }

  private Lease grant(String path, Map<String, Object> body, Retry retry, AnswerReader reader)
      throws FencelockException {
    long waitMs = body.containsKey("wait_ms") ? (Long) body.get("wait_ms") : 0;
    // A grant whose answer arrived although the call was interrupted: release it at once.
    Endpoint.LateGrant late = reply -> {
      if (reply.status != 200) {
        return;
      }
      Runnable release = () -> {
        try {
          reader.read(Answers.parseObject(reply), reply.sentAtNanos).release();
        } catch (FencelockException e) {
          kLog.log(System.Logger.Level.WARNING, "fencelock: releasing a grant that arrived after"
              + " its caller was interrupted failed (" + e.code() + "); its ttl will free it");
        }
      };
      try {
        workers.execute(release);
      } catch (java.util.concurrent.RejectedExecutionException closed) {
        Thread thread = new Thread(release, "fencelock-late-release");
        thread.setDaemon(true);
        thread.start();
      }
    };
    Reply reply = transport.call("POST", path, body, retry, waitMs, null, late);
    return reader.read(Answers.expectObject(reply), reply.sentAtNanos);
  }

  private Lease lease(Map<String, Object> answer, long sentAt, Lease.Kind kind, List<String> names,
      Map<String, Long> tokens, long token, int permits, int slot, Map<String, Object> body)
      throws FencelockException {
    Object lease = answer.get("lease");
    if (!(lease instanceof String) || ((String) lease).isEmpty()) {
      throw Answers.internal("the service's answer lacks the lease");
    }
    long validity = Answers.boundedLong(answer, "validity_ms", 0, Long.MAX_VALUE / 2_000_000);
    long waited = answer.containsKey("waited_ms")
        ? Answers.boundedLong(answer, "waited_ms", 0, Long.MAX_VALUE / 2_000_000) : 0;
    // Conservative: validity counts from the start of the winning attempt, which is no earlier
    // than our send time plus the time the service says it waited.
    long deadline = sentAt + (waited + validity) * 1_000_000;
    return new Lease(client, kind, names, tokens, token, permits, slot, (String) lease,
        Duration.ofMillis((Long) body.get("ttl_ms")), deadline);
  }

  private static Map<String, Object> leaseBody(Lease lease) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("lease", lease.leaseString());
    if (lease.kind() == Lease.Kind.SET) {
      body.put("names", lease.names());
    }
    return body;
  }

  private static String leasePath(Lease lease) {
    switch (lease.kind()) {
      case SET:
        return "/v1/locks";
      case PERMIT:
        return "/v1/semaphores/" + lease.name();
      case READ:
      case WRITE:
        return "/v1/rwlocks/" + lease.name();
      default:
        return "/v1/locks/" + lease.name();
    }
  }
}

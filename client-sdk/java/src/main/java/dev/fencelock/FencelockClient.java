/*
 * The fencelock client: locks, lock sets, semaphore permits, read/write locks and tokens over
 * fencelockd's HTTP API v1 (docs/api.md), on the JDK's java.net.http and nothing else. Same shape
 * as the C++ SDK (docs/sdk.md) and the Python and Node clients, with a checked FencelockException
 * instead of Result values and java.time.Duration for times.
 *
 * Retries: calls that are safe to repeat (extend, release, status, watch, the listings, tokens) are
 * retried on transport errors and 503s, up to maxRetries times, on the next endpoint. acquire
 * names its request (request_id), so it is also retried after a transport error once its request
 * may have reached fencelockd — the service answers the grant it already made — but not on a 503.
 * acquireSet, acquirePermit, acquireRead, acquireWrite and revoke are retried only when their
 * request certainly did not reach fencelockd (connection refused, connect timeout, TLS
 * handshake), so that one of them can never be granted twice (nor a revoke revoke its own grant).
 * A grant is never sent on a keep-alive connection idle longer than idleReuseLimit (below
 * fencelockd's --idle-timeout): a connection the server closed meanwhile would make it look
 * maybe-delivered.
 *
 * Interruption: a call whose thread is interrupted ends with code "cancelled" and the interrupt
 * status set again. An acquire's request is not cancelled — an answer fencelockd had already sent
 * would be dropped unread and its lock held until the ttl — but left to finish in the background
 * (within its wait and requestTimeout): a grant that arrives is released at once, on a client
 * thread.
 *
 * Answers: a body over 1 MiB, or one still arriving a second after the request's timeout, fails
 * the round trip (transport) rather than growing the heap or blocking the call.
 */
package dev.fencelock;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

/**
 * A client of one or more fencelockd instances (the same lock nodes behind each).
 *
 * <pre>{@code
 * FencelockClient client = FencelockClient.fromEnvironment();  // FENCELOCK_ENDPOINT, ..._API_KEY, ..._CACERT
 * try (Lease lease = client.lock("invoice-42", Duration.ofSeconds(30), Duration.ofSeconds(5))) {
 *   writeInvoice(42, lease.token());  // fence every write with the token
 * }
 * }</pre>
 *
 * <p>Thread safety: one client per process, shared by all threads. Every call blocks the calling
 * thread, bounded by requestTimeout (an acquire adds its wait). {@link #close()} stops the
 * client's keeper threads; close the leases first.
 */
public final class FencelockClient implements AutoCloseable {
  /** The service's bounds (docs/api.md): names of one lock set, permits of one semaphore. */
  public static final int MAX_SET_NAMES = 16;
  public static final int MAX_PERMITS = 64;
  public static final String NAME_RULE =
      "a name is 1 to 200 characters from [A-Za-z0-9._:-], other than \".\" and \"..\"";

  private static final Pattern kName = Pattern.compile("[A-Za-z0-9._:-]{1,200}");
  private static final Pattern kApiKey = Pattern.compile("[\\x21-\\x7e]{1,256}");
  private static final Pattern kRequestId = Pattern.compile("[\\x21-\\x7e]{1,64}");
  private static final SecureRandom kRandom = new SecureRandom();
  // A watch's longest wait (the C++ SDK's bound; fencelockd's --max-wait may be shorter) and its
  // default.
  private static final long kMaxWatchWaitMillis = 3_600_000;
  private static final Duration kDefaultWatchWait = Duration.ofSeconds(30);
  private static final String kUserAgent = "fencelock-java/0.1.0";
  private static final long kMaxMillis = 1L << 31;
  // The largest answer body read (fencelockd's are a few hundred bytes).
  private static final int kMaxBody = 1 << 20;
  // How long past its timeout a request may take to deliver the body after its head.
  private static final long kBodySlackNanos = TimeUnit.SECONDS.toNanos(1);
  private static final System.Logger kLog = System.getLogger("dev.fencelock");

  private final List<Endpoint> endpoints;
  private final String apiKey;
  private final Duration connectTimeout;
  private final Duration requestTimeout;
  private final int maxRetries;
  private final Duration retryBackoff;
  private final Duration idleReuseLimit;
  private final SSLContext sslContext;
  private final ScheduledExecutorService timers;
  private final ExecutorService workers;
  private final Object mutex = new Object();
  private int preferred;

  /** Options of a client; every setter documents its default and bounds. */
  public static final class Builder {
    private List<String> endpoints = List.of("http://127.0.0.1:8080");
    private String apiKey;
    private Path caFile;
    private SSLContext sslContext;
    private Duration connectTimeout = Duration.ofSeconds(1);
    private Duration requestTimeout = Duration.ofSeconds(5);
    private int maxRetries = 2;
    private Duration retryBackoff = Duration.ofMillis(50);
    private Duration idleReuseLimit = Duration.ofSeconds(30);

    private Builder() {}

    /** fencelockd base URLs (http://HOST:PORT, https://HOST:PORT), tried in order; 1 .. 16. Default http://127.0.0.1:8080. */
    public Builder endpoints(List<String> urls) {
      this.endpoints = List.copyOf(urls);
      return this;
    }

    public Builder endpoints(String... urls) {
      return endpoints(List.of(urls));
    }

    /** Sent as "Authorization: Bearer KEY" (fencelockd with --auth-file); never logged. Default none. */
    public Builder apiKey(String key) {
      this.apiKey = key == null || key.isEmpty() ? null : key;
      return this;
    }

    /** A PEM file of the CA(s) that sign fencelockd's certificate (https:// only). Default: the JDK's trust store. */
    public Builder caFile(Path file) {
      this.caFile = file;
      return this;
    }

    /** An SSLContext of your own (client certificates, say); wins over caFile. */
    public Builder sslContext(SSLContext context) {
      this.sslContext = context;
      return this;
    }

    /** Connecting, TLS handshake included; default 1 s; 1 ms .. 60 s. */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = timeout;
      return this;
    }

    /** One request until its answer's head; an acquire or a watch adds its wait; default 5 s; 1 ms .. 600 s. */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = timeout;
      return this;
    }

    /** Extra attempts of calls safe to repeat, and of an acquire whose answer was lost; default 2; 0 .. 10. */
    public Builder maxRetries(int retries) {
      this.maxRetries = retries;
      return this;
    }

    /** Pause before a retry, doubled each time; default 50 ms; 0 .. 10 s. */
    public Builder retryBackoff(Duration backoff) {
      this.retryBackoff = backoff;
      return this;
    }

    /** An acquire opens fresh connections after the endpoint was idle this long; default 30 s; 1 ms .. 1 h. */
    public Builder idleReuseLimit(Duration limit) {
      this.idleReuseLimit = limit;
      return this;
    }

    /** What the CLI reads: FENCELOCK_ENDPOINT (comma-separated), FENCELOCK_API_KEY, FENCELOCK_CACERT. */
    public Builder fromEnvironment() {
      return fromEnvironment(System.getenv());
    }

    Builder fromEnvironment(Map<String, String> environment) {
      String urls = environment.get("FENCELOCK_ENDPOINT");
      if (urls != null && !urls.isBlank()) {
        List<String> list = new ArrayList<>();
        for (String url : urls.split(",")) {
          list.add(url.strip());
        }
        endpoints(list);
      }
      apiKey(environment.get("FENCELOCK_API_KEY"));
      String ca = environment.get("FENCELOCK_CACERT");
      if (ca != null && !ca.isBlank()) {
        caFile(Path.of(ca));
      }
      return this;
    }

    /** The client; invalid_request naming what is wrong with an option (a CA file that cannot be read too). */
    public FencelockClient build() throws FencelockException {
      return new FencelockClient(this);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** builder().fromEnvironment().build(). */
  public static FencelockClient fromEnvironment() throws FencelockException {
    return builder().fromEnvironment().build();
  }

  private FencelockClient(Builder b) throws FencelockException {
    if (b.endpoints.isEmpty() || b.endpoints.size() > 16) {
      throw invalid("endpoints: need 1 to 16 fencelockd URLs");
    }
    connectTimeout = bounded(b.connectTimeout, Duration.ofMillis(1), Duration.ofSeconds(60), "connectTimeout");
    requestTimeout = bounded(b.requestTimeout, Duration.ofMillis(1), Duration.ofSeconds(600), "requestTimeout");
    retryBackoff = bounded(b.retryBackoff, Duration.ZERO, Duration.ofSeconds(10), "retryBackoff");
    idleReuseLimit = bounded(b.idleReuseLimit, Duration.ofMillis(1), Duration.ofHours(1), "idleReuseLimit");
    if (b.maxRetries < 0 || b.maxRetries > 10) {
      throw invalid("maxRetries must be 0 .. 10");
    }
    maxRetries = b.maxRetries;
    if (b.apiKey != null && !kApiKey.matcher(b.apiKey).matches()) {
      throw invalid("the API key must be 1 to 256 printable ASCII characters without spaces");
    }
    apiKey = b.apiKey;
    List<URI> bases = new ArrayList<>();
    boolean anyPlain = false;
    for (String url : b.endpoints) {
      URI base = parseEndpoint(url);
      anyPlain |= base.getScheme().equals("http");
      bases.add(base);
    }
    if ((b.caFile != null || b.sslContext != null) && anyPlain) {
      throw invalid("a CA file or SSLContext was given, but an endpoint is http://: the API key and"
          + " the leases would go unencrypted; use https:// for every endpoint");
    }
    try {
      sslContext = b.sslContext != null ? b.sslContext
          : b.caFile != null ? trusting(b.caFile) : SSLContext.getDefault();
    } catch (GeneralSecurityException e) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "no usable TLS context: " + e.getMessage(), e);
    }
    List<Endpoint> list = new ArrayList<>();
    for (URI base : bases) {
      list.add(new Endpoint(base));
    }
    endpoints = List.copyOf(list);
    ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, daemons("fencelock-timer"));
    timer.setRemoveOnCancelPolicy(true);
    timers = timer;
    workers = Executors.newCachedThreadPool(daemons("fencelock-worker"));
  }

  // --- locks -----------------------------------------------------------------------------------

  /**
   * Acquires lock `name` for `ttl`, waiting up to `wait` while another lease holds it. The lease
   * is not renewed (see {@link #lock} and {@link #keep}); close it to release it.
   * Errors: locked (held by another lease and the wait ran out; retryAfter when known),
   * unavailable, invalid_request, unauthenticated/forbidden, rate_limited/quota_exceeded,
   * transport, tls, cancelled, internal.
   */
  public Lease acquire(String name, Duration ttl, Duration wait) throws FencelockException {
    return acquire(name, ttl, wait, null);
  }

  /**
   * acquire, with `owner` (who asks; written to fencelockd's request log and shown by status as
   * the holder's owner).
   */
  public Lease acquire(String name, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    return acquire(name, ttl, wait, owner, null);
  }

  /**
   * acquire, naming its request: `requestId` (1 .. 64 printable ASCII characters without spaces;
   * null: a fresh random one, as every other acquire gets). Every acquire names its request, so
   * when an answer is lost (a timeout, a reset) the call asks again — up to maxRetries — and the
   * service answers the grant it already made instead of refusing it as held (docs/api.md,
   * "Asking again"). Give your own only to ask again yourself, with the same id, after a call
   * failed; never reuse one for another acquire. `owner` may be null.
   */
  public Lease acquire(String name, Duration ttl, Duration wait, String owner, String requestId)
      throws FencelockException {
    checkName(name);
    if (requestId != null && !kRequestId.matcher(requestId).matches()) {
      throw invalid("a request id is 1 to 64 printable ASCII characters without spaces");
    }
    Map<String, Object> body = grantBody(ttl, wait, owner);
    body.put("request_id", requestId != null ? requestId : newRequestId());
    return grant("/v1/locks/" + name, body, Retry.REPEATABLE, lockReader(name, body));
  }

  /** A request id for one acquire call: 128 bits from SecureRandom, in hex. */
  private static String newRequestId() {
    byte[] bytes = new byte[16];
    kRandom.nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }

  /**
   * Takes lock `name` for `ttl` whoever holds it (free or held; it never waits), with a new token
   * above the revoked lease's: that lease's extend fails with not_held and its release answers
   * false. Returns a lease like acquire's (not renewed: see {@link #keep}; close it to release
   * it). Needs an API key with the right "admin". Never retried once its request may have reached
   * fencelockd: a second revoke would revoke the first one's grant.
   * Errors: unavailable (the old lease may still have ended on some nodes: call again),
   * invalid_request, unauthenticated/forbidden, rate_limited/quota_exceeded, transport, tls,
   * cancelled, internal.
   */
  public Lease revoke(String name, Duration ttl) throws FencelockException {
    return revoke(name, ttl, null);
  }

  /** revoke, with `owner` (who revokes; shown by status as the holder's owner). */
  public Lease revoke(String name, Duration ttl, String owner) throws FencelockException {
    checkName(name);
    Map<String, Object> body = grantBody(ttl, Duration.ZERO, owner);
    return grant("/v1/locks/" + name + "/revoke", body, Retry.ONLY_IF_UNDELIVERED, lockReader(name, body));
  }

  /** Reads the grant of lock `name` (acquire, revoke). */
  private AnswerReader lockReader(String name, Map<String, Object> body) {
    return (answer, sentAt) -> {
      long token = positiveLong(answer, "token");
      Map<String, Long> tokens = new LinkedHashMap<>();
      tokens.put(name, token);
      return answer(answer, sentAt, Lease.Kind.LOCK, List.of(name), tokens, token, 0, 0, body);
    };
  }

  /**
   * Acquires all of `names` (1 to 16 distinct names, any order) under one lease, or none of them.
   * The lease's names are sorted; fence the write to name n's resource with tokenOf(n). Errors as
   * acquire (locked: a name is held).
   */
  public Lease acquireSet(Collection<String> names, Duration ttl, Duration wait)
      throws FencelockException {
    return acquireSet(names, ttl, wait, null);
  }

  public Lease acquireSet(Collection<String> names, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    List<String> sorted = checkSetNames(names);
    Map<String, Object> body = grantBody(ttl, wait, owner);
    body.put("names", sorted);
    return grant("/v1/locks", body, Retry.ONLY_IF_UNDELIVERED, (answer, sentAt) -> {
      Object granted = answer.get("tokens");
      if (!(granted instanceof Map) || !new TreeSet<>(((Map<?, ?>) granted).keySet()).equals(new TreeSet<>(sorted))) {
        throw internal("the service's answer lacks a token per name");
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> byName = (Map<String, Object>) granted;
      Map<String, Long> tokens = new LinkedHashMap<>();
      for (String name : sorted) {
        tokens.put(name, positiveLong(byName, name));
      }
      return answer(answer, sentAt, Lease.Kind.SET, sorted, tokens, 0, 0, 0, body);
    });
  }

  /**
   * Acquires one of the `permits` (1 .. 64) permits of semaphore `name`. At most `permits`
   * permits are live at once; the lease's slot() says which one it holds, and its token rises
   * with every grant of the semaphore: fence per (name, slot). Errors as acquire, and
   * permits_mismatch (permits(): the live count) when the semaphore is live with another count.
   */
  public Lease acquirePermit(String name, int permits, Duration ttl, Duration wait)
      throws FencelockException {
    return acquirePermit(name, permits, ttl, wait, null);
  }

  public Lease acquirePermit(String name, int permits, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    checkName(name);
    if (permits < 1 || permits > MAX_PERMITS) {
      throw invalid("permits must be 1 .. " + MAX_PERMITS);
    }
    Map<String, Object> body = grantBody(ttl, wait, owner);
    body.put("permits", (long) permits);
    return grant("/v1/semaphores/" + name, body, Retry.ONLY_IF_UNDELIVERED, (answer, sentAt) -> {
      long token = positiveLong(answer, "token");
      Map<String, Long> tokens = new LinkedHashMap<>();
      tokens.put(name, token);
      int live = (int) boundedLong(answer, "permits", 1, MAX_PERMITS);
      int slot = (int) boundedLong(answer, "slot", 0, live - 1);
      return answer(answer, sentAt, Lease.Kind.PERMIT, List.of(name), tokens, token, live, slot, body);
    });
  }

  /**
   * A read grant of read/write lock `name` (POST /v1/rwlocks/{name}) for `ttl` — shared with
   * other reads — waiting up to `wait` while a write grant is held or a writer waits. The lease's
   * kind is READ; its token comes from the counter of `name` (shared with the lock `name`, which a
   * read/write lock does not exclude). Readers hold at once, so a resource written under read
   * grants fences per reader. Not renewed (see {@link #readLock} and {@link #keep}); close it to
   * release it. Errors as acquire (locked: a write grant is held or a writer waits, and the wait
   * ran out).
   */
  public Lease acquireRead(String name, Duration ttl, Duration wait) throws FencelockException {
    return acquireRead(name, ttl, wait, null);
  }

  /** acquireRead, with `owner` (shown by rwlockStatus as the holder's owner). */
  public Lease acquireRead(String name, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    return acquireReadWrite(name, Lease.Kind.READ, ttl, wait, owner);
  }

  /**
   * The write grant of read/write lock `name` for `ttl` — held alone — waiting up to `wait` while
   * anything is held. While it waits, new reads are refused, so a stream of readers cannot starve
   * it; readers already holding keep their grants until they release or expire. The lease's kind
   * is WRITE; its token is above every earlier grant's of `name`, reads included, so a store that
   * fences on it refuses a stale reader's write once the writer wrote. Errors as acquireRead
   * (locked: held, and the wait ran out).
   */
  public Lease acquireWrite(String name, Duration ttl, Duration wait) throws FencelockException {
    return acquireWrite(name, ttl, wait, null);
  }

  /** acquireWrite, with `owner` (shown by rwlockStatus as the holder's owner). */
  public Lease acquireWrite(String name, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    return acquireReadWrite(name, Lease.Kind.WRITE, ttl, wait, owner);
  }

  private Lease acquireReadWrite(String name, Lease.Kind kind, Duration ttl, Duration wait, String owner)
      throws FencelockException {
    checkName(name);
    String mode = kind == Lease.Kind.WRITE ? "write" : "read";
    Map<String, Object> body = grantBody(ttl, wait, owner);
    body.put("mode", mode);
    return grant("/v1/rwlocks/" + name, body, Retry.ONLY_IF_UNDELIVERED, (answer, sentAt) -> {
      long token = positiveLong(answer, "token");
      Map<String, Long> tokens = new LinkedHashMap<>();
      tokens.put(name, token);
      Lease lease = answer(answer, sentAt, kind, List.of(name), tokens, token, 0, 0, body);
      // A reader that believed it wrote alone, or a writer that believed it shared, would be
      // wrong about what its token fences.
      if (!mode.equals(answer.get("mode"))) {
        lease.close();
        throw internal("the service's answer does not grant the mode asked for");
      }
      return lease;
    });
  }

  /** acquire, then {@link #keep} with the default RenewOptions: renewed until closed. */
  public Lease lock(String name, Duration ttl, Duration wait) throws FencelockException {
    return kept(acquire(name, ttl, wait), RenewOptions.defaults());
  }

  /** acquireSet, then keep. */
  public Lease lockSet(Collection<String> names, Duration ttl, Duration wait)
      throws FencelockException {
    return kept(acquireSet(names, ttl, wait), RenewOptions.defaults());
  }

  /** acquirePermit, then keep. */
  public Lease permit(String name, int permits, Duration ttl, Duration wait)
      throws FencelockException {
    return kept(acquirePermit(name, permits, ttl, wait), RenewOptions.defaults());
  }

  /** acquireRead, then keep. */
  public Lease readLock(String name, Duration ttl, Duration wait) throws FencelockException {
    return kept(acquireRead(name, ttl, wait), RenewOptions.defaults());
  }

  /** acquireWrite, then keep. */
  public Lease writeLock(String name, Duration ttl, Duration wait) throws FencelockException {
    return kept(acquireWrite(name, ttl, wait), RenewOptions.defaults());
  }

  /**
   * Renews `lease` in the background until it is closed or released (LeaseKeeper's contract:
   * extends when renewWhenLeft of the ttl is left; lease.lost() completes before the deadline when
   * renewal is refused or keeps failing). Returns `lease`. invalid_request for bad options or a
   * lease kept or released already.
   */
  public Lease keep(Lease lease, RenewOptions options) throws FencelockException {
    options.check();
    if (lease.client() != this) {
      throw invalid("the lease belongs to another client");
    }
    LeaseKeeper keeper = new LeaseKeeper(this, lease, options, timers, workers);
    lease.attach(keeper);
    keeper.start();
    return lease;
  }

  private Lease kept(Lease lease, RenewOptions options) throws FencelockException {
    try {
      return keep(lease, options);
    } catch (FencelockException e) {
      lease.close();
      throw e;
    }
  }

  /**
   * Makes the lease's remaining ttl at least `ttl` on every node that still holds it (a lock's,
   * every name of a set's, a permit's, a read/write lock grant's) and moves its deadline. Errors:
   * not_held (expired, released or taken over: stop using it), unavailable, invalid_request,
   * unauthenticated, forbidden, transport, tls, cancelled.
   */
  public void extend(Lease lease, Duration ttl) throws FencelockException {
    long deadline = extendDeadline(lease, ttl, null);
    lease.renewed(ttl, deadline);
  }

  /** The deadline an extend by `ttl` gives, without moving the lease's; the whole call within `withinNanos`. */
  long extendDeadline(Lease lease, Duration ttl, Long withinNanos) throws FencelockException {
    long ttlMs = millis(ttl, "ttl", 1);
    Map<String, Object> body = leaseBody(lease);
    body.put("ttl_ms", ttlMs);
    String path = lease.kind() == Lease.Kind.SET ? "/v1/locks:extend" : leasePath(lease) + "/extend";
    Reply reply = call("POST", path, body, Retry.SAFE, 0, withinNanos, null);
    Map<String, Object> answer = expectObject(reply);
    long validity = boundedLong(answer, "validity_ms", 0, Long.MAX_VALUE / 1_000_000);
    return reply.sentAtNanos + validity * 1_000_000;
  }

  /**
   * Releases the lease (a lock, a whole set, a permit, a read/write lock's grant): true iff it
   * still held them. Idempotent. Prefer lease.close() or lease.release(), which also stop its
   * keeper. Errors: unavailable, invalid_request, unauthenticated, forbidden, transport, tls,
   * cancelled.
   */
  public boolean release(Lease lease) throws FencelockException {
    Reply reply = call("DELETE", leasePath(lease), leaseBody(lease), Retry.SAFE, 0, null, null);
    Object released = expectObject(reply).get("released");
    if (!(released instanceof Boolean)) {
      throw internal("the service's answer lacks 'released'");
    }
    return (Boolean) released;
  }

  /**
   * Whether `name` is held, for how long, the holder's token and owner (empty when not held), and
   * the name's current token. Never the lease.
   */
  public LockStatus status(String name) throws FencelockException {
    checkName(name);
    Map<String, Object> answer = expectObject(call("GET", "/v1/locks/" + name, null, Retry.SAFE, 0, null, null));
    return lockStatus(answer, boundedLong(answer, "last_token", 0, Long.MAX_VALUE), false);
  }

  /**
   * Waits until `name` is no longer held with `afterToken` — released, expired, revoked or taken
   * again — and answers its status with changed() true, or after `wait` (0 .. 1 h, and at most
   * fencelockd's --max-wait) with the status unchanged and changed() false. A lock not held with
   * `afterToken` (a free one too) answers at once; to follow a lock, watch again with the token
   * answered. The answer's lastToken() is 0. Each attempt may take `wait` beyond requestTimeout;
   * it is retried like status(). Needs the right "read" and counts against the key's max_waiters.
   * Errors: invalid_request, unauthenticated/forbidden, unavailable, rate_limited, transport,
   * tls, cancelled, internal.
   */
  public LockStatus watch(String name, long afterToken, Duration wait) throws FencelockException {
    checkName(name);
    if (afterToken < 0) {
      throw invalid("afterToken must be a fencing token (0 or more)");
    }
    long waitMs = millis(wait, "wait", 0);
    if (waitMs > kMaxWatchWaitMillis) {
      throw invalid("wait must be at most " + Duration.ofMillis(kMaxWatchWaitMillis));
    }
    String path = "/v1/locks/" + name + "?after_token=" + afterToken + "&wait_ms=" + waitMs;
    Map<String, Object> answer = expectObject(call("GET", path, null, Retry.SAFE, waitMs, null, null));
    Object changed = answer.get("changed");
    if (!(changed instanceof Boolean)) {
      throw internal("the service's answer lacks 'changed'");
    }
    return lockStatus(answer, 0, (Boolean) changed);
  }

  /** watch(name, afterToken, wait) with the default wait of 30 s. */
  public LockStatus watch(String name, long afterToken) throws FencelockException {
    return watch(name, afterToken, kDefaultWatchWait);
  }

  /** A status's answer, or a watch's (`lastToken` 0, and `changed`). */
  private static LockStatus lockStatus(Map<String, Object> answer, long lastToken, boolean changed)
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

  /**
   * One page of the locks held whose names start with `prefix` (GET /v1/locks; null or "": every
   * name): pass the page's next() as `cursor` (null: the first page) until it is empty. A page
   * may hold fewer than `limit` (1 .. 1000) names, even none, and still have a next; a name held
   * throughout is listed (twice if a lock node failed meanwhile). Needs the right "read"; names
   * the key may not read are left out. Errors: invalid_request, unauthenticated/forbidden,
   * unavailable (start the listing again), rate_limited, transport, tls, cancelled, internal.
   */
  public LockListing listLocks(String prefix, int limit, String cursor) throws FencelockException {
    return Listings.locks(this::getSafely, prefix, limit, cursor);
  }

  /**
   * One page of the semaphores with a permit held whose names start with `prefix` (GET
   * /v1/semaphores), each as semaphoreStatus tells it; `prefix`, `limit`, `cursor`, pages, retries
   * and errors as listLocks. A semaphore on which a permit stays held throughout is listed (more
   * than once if a lock node failed or was late meanwhile, or its permits are held on different
   * sets of nodes).
   */
  public SemaphoreListing listSemaphores(String prefix, int limit, String cursor) throws FencelockException {
    return Listings.semaphores(this::getSafely, prefix, limit, cursor);
  }

  /**
   * One page of the read/write locks with a grant held whose names start with `prefix` (GET
   * /v1/rwlocks), each as rwlockStatus tells it; otherwise as listSemaphores.
   */
  public RwLockListing listRwlocks(String prefix, int limit, String cursor) throws FencelockException {
    return Listings.rwlocks(this::getSafely, prefix, limit, cursor);
  }

  /** The live permit count of semaphore `name` (0 when none is live) and the permits held. */
  public SemaphoreStatus semaphoreStatus(String name) throws FencelockException {
    checkName(name);
    return Listings.semaphoreStatus(getSafely("/v1/semaphores/" + name));
  }

  /**
   * How read/write lock `name` is held: its mode (empty when free), its grants (token, owner, time
   * left) and whether a writer waits. Never a lease. Needs the right "read"; retried like status.
   * Errors: invalid_request, unauthenticated/forbidden, unavailable (the nodes that did not answer
   * could hold it), rate_limited, transport, tls, cancelled, internal.
   */
  public RwLockStatus rwlockStatus(String name) throws FencelockException {
    checkName(name);
    return Listings.rwlockStatus(getSafely("/v1/rwlocks/" + name));
  }

  /** A GET of `path`, safe to repeat: its answer, a JSON object. */
  private Map<String, Object> getSafely(String path) throws FencelockException {
    return expectObject(call("GET", path, null, Retry.SAFE, 0, null, null));
  }

  /** The latest token drawn for `name` (0 if none ever was). */
  public long currentToken(String name) throws FencelockException {
    checkName(name);
    return boundedLong(expectObject(call("GET", "/v1/tokens/" + name, null, Retry.SAFE, 0, null, null)),
        "token", 0, Long.MAX_VALUE);
  }

  /**
   * Draws the next token of `name` without a lock. Hazard (docs/api.md): the token is newer than
   * the current holder's and can fence that holder out.
   */
  public long nextToken(String name) throws FencelockException {
    checkName(name);
    return positiveLong(expectObject(call("POST", "/v1/tokens/" + name, null, Retry.SAFE, 0, null, null)), "token");
  }

  /** Stops the keeper threads (leases still kept stop being renewed). Idempotent. */
  @Override
  public void close() {
    timers.shutdownNow();
    workers.shutdown();
  }

  @Override
  public String toString() {
    List<String> urls = new ArrayList<>();
    for (Endpoint endpoint : endpoints) {
      urls.add(endpoint.base.toString());
    }
    return "FencelockClient(endpoints=" + urls + (apiKey != null ? ", apiKey=***" : "") + ")";
  }

  /** invalid_request unless `name` is a valid lock name (docs/api.md, "Names"). */
  public static void checkName(String name) throws FencelockException {
    if (name == null || !kName.matcher(name).matches() || name.equals(".") || name.equals("..")) {
      throw invalid(NAME_RULE);
    }
  }

  // --- grants --------------------------------------------------------------------------------

  /** Turns a grant's answer into its Lease; `sentAtNanos` is when the granting request was sent. */
  private interface AnswerReader {
    Lease read(Map<String, Object> answer, long sentAtNanos) throws FencelockException;
  }

  private Map<String, Object> grantBody(Duration ttl, Duration wait, String owner)
      throws FencelockException {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("ttl_ms", millis(ttl, "ttl", 1));
    long waitMs = millis(wait == null ? Duration.ZERO : wait, "wait", 0);
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
    LateGrant late = reply -> {
      if (reply.status != 200) {
        return;
      }
      Runnable release = () -> {
        try {
          reader.read(parseObject(reply), reply.sentAtNanos).release();
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
    Reply reply = call("POST", path, body, retry, waitMs, null, late);
    return reader.read(expectObject(reply), reply.sentAtNanos);
  }

  private Lease answer(Map<String, Object> answer, long sentAt, Lease.Kind kind, List<String> names,
      Map<String, Long> tokens, long token, int permits, int slot, Map<String, Object> body)
      throws FencelockException {
    Object lease = answer.get("lease");
    if (!(lease instanceof String) || ((String) lease).isEmpty()) {
      throw internal("the service's answer lacks the lease");
    }
    long validity = boundedLong(answer, "validity_ms", 0, Long.MAX_VALUE / 2_000_000);
    long waited = answer.containsKey("waited_ms")
        ? boundedLong(answer, "waited_ms", 0, Long.MAX_VALUE / 2_000_000) : 0;
    // Conservative: validity counts from the start of the winning attempt, which is no earlier
    // than our send time plus the time the service says it waited.
    long deadline = sentAt + (waited + validity) * 1_000_000;
    return new Lease(this, kind, names, tokens, token, permits, slot, (String) lease,
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

  private static List<String> checkSetNames(Collection<String> names) throws FencelockException {
    if (names == null || names.isEmpty() || names.size() > MAX_SET_NAMES) {
      throw invalid("a lock set has 1 to " + MAX_SET_NAMES + " names");
    }
    for (String name : names) {
      checkName(name);
    }
    if (new HashSet<>(names).size() != names.size()) {
      throw invalid("a lock set's names must be distinct");
    }
    return List.copyOf(new TreeSet<>(names));
  }

  // --- one call, with retries ------------------------------------------------------------------

  /**
   * When a call is sent again. ONLY_IF_UNDELIVERED: only if it never reached fencelockd (a grant).
   * REPEATABLE: also when it may have, but not on a 503 (an acquire that names its request: the
   * service answers the same grant again). SAFE: also on a 503.
   */
  private enum Retry { ONLY_IF_UNDELIVERED, REPEATABLE, SAFE }

  private interface LateGrant {
    void release(Reply reply);
  }

  private static final class Reply {
    final int status;
    final String body;
    final HttpHeaders headers;
    final long sentAtNanos;

    Reply(int status, String body, HttpHeaders headers, long sentAtNanos) {
      this.status = status;
      this.body = body;
      this.headers = headers;
      this.sentAtNanos = sentAtNanos;
    }
  }

  private static final class RoundTripFailure extends Exception {
    private static final long serialVersionUID = 1L;
    final FencelockException error;
    final boolean maybeDelivered;

    RoundTripFailure(FencelockException error, boolean maybeDelivered) {
      super(error.getMessage(), null, false, false);
      this.error = error;
      this.maybeDelivered = maybeDelivered;
    }
  }

  /**
   * Sends one request, retrying as the file comment says. Returns the reply whose status is not
   * a retried 503. Throws the last attempt's error (a TLS failure before a later connection
   * failure).
   */
  private Reply call(String method, String path, Map<String, Object> body, Retry retry,
      long extraMillis, Long withinNanos, LateGrant late) throws FencelockException {
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
        last = errorFrom(reply);
      } catch (RoundTripFailure failure) {
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

  /** One fencelockd base URL and the HttpClient (pool of keep-alive connections) that reaches it. */
  private final class Endpoint {
    final URI base;
    private HttpClient http;
    private long lastUsedNanos;
    private boolean used;

    Endpoint(URI base) {
      this.base = base;
      this.http = newHttpClient();
    }

    private HttpClient newHttpClient() {
      HttpClient.Builder builder = HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .followRedirects(HttpClient.Redirect.NEVER)
          .connectTimeout(connectTimeout);
      if (base.getScheme().equals("https")) {
        SSLParameters parameters = new SSLParameters();
        parameters.setProtocols(new String[] {"TLSv1.3", "TLSv1.2"});
        builder.sslContext(sslContext).sslParameters(parameters);
      }
      return builder.build();
    }

    private synchronized HttpClient take(boolean unsafe) {
      long now = System.nanoTime();
      if (unsafe && used && now - lastUsedNanos > idleReuseLimit.toNanos()) {
        http = newHttpClient();  // the old one's idle connections close with it
      }
      used = true;
      lastUsedNanos = now;
      return http;
    }

    private synchronized void touched() {
      lastUsedNanos = System.nanoTime();
    }

    /**
     * One request. `late` is null for a call safe to repeat; for a grant it is what to do with
     * an answer that arrives after the calling thread was interrupted.
     */
    Reply roundTrip(String method, String path, String body, Duration timeout, LateGrant late)
        throws RoundTripFailure {
      HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
          .timeout(timeout)
          .header("User-Agent", kUserAgent)
          .header("Accept", "application/json");
      if (apiKey != null) {
        request.header("Authorization", "Bearer " + apiKey);
      }
      if (body != null) {
        request.header("Content-Type", "application/json")
            .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
      } else {
        request.method(method, HttpRequest.BodyPublishers.noBody());
      }
      HttpClient client = take(late != null);
      long sentAt = System.nanoTime();
      CompletableFuture<HttpResponse<String>> pending =
          client.sendAsync(request.build(), info -> new LimitedBody());
      try {
        // The request's own timeout covers the answer's head only: this bounds its body too.
        HttpResponse<String> response = pending.get(timeout.toNanos() + kBodySlackNanos,
            TimeUnit.NANOSECONDS);
        touched();
        return new Reply(response.statusCode(), response.body(), response.headers(), sentAt);
      } catch (InterruptedException e) {
        if (late != null) {
          // Never cancel a grant: an answer the service already sent would be dropped unread,
          // and the lock held until its ttl. The grant, if it comes, is released on arrival.
          pending.thenAccept(response -> late.release(
              new Reply(response.statusCode(), response.body(), response.headers(), sentAt)));
        } else {
          pending.cancel(true);
        }
        throw new RoundTripFailure(new FencelockException(FencelockException.CANCELLED,
            base + ": interrupted" + (late != null ? "; a grant that still arrives is released"
                : "; the request was cancelled")), true);
      } catch (TimeoutException e) {
        // An answer that arrived just now is used, not dropped: a grant would be left held (or,
        // released, be the very grant a repeat of its request is about to be answered).
        if (!pending.cancel(true) && !pending.isCompletedExceptionally()) {
          HttpResponse<String> response = pending.join();
          touched();
          return new Reply(response.statusCode(), response.body(), response.headers(), sentAt);
        }
        throw transport("timed out reading the answer", e, true);
      } catch (ExecutionException e) {
        throw classify(e.getCause());
      }
    }

    private RoundTripFailure classify(Throwable cause) {
      for (Throwable t = cause; t != null; t = t.getCause()) {
        if (t instanceof SSLException) {
          return new RoundTripFailure(new FencelockException(FencelockException.TLS,
              base + ": TLS failed: " + t.getMessage(), cause), false);
        }
      }
      if (cause instanceof HttpConnectTimeoutException) {
        return transport("timed out connecting", cause, false);
      }
      if (cause instanceof HttpTimeoutException) {
        return transport("timed out", cause, true);
      }
      for (Throwable t = cause; t != null; t = t.getCause()) {
        if (t instanceof ConnectException || t instanceof UnresolvedAddressException
            || t instanceof UnknownHostException) {
          return transport("cannot connect: " + describe(t), cause, false);
        }
      }
      return transport("sending or reading failed: " + describe(cause), cause, true);
    }

    private RoundTripFailure transport(String what, Throwable cause, boolean maybeDelivered) {
      return new RoundTripFailure(new FencelockException(FencelockException.TRANSPORT,
          base + ": " + what, cause), maybeDelivered);
    }
  }

  /**
   * An answer's body as text, at most kMaxBody bytes: a larger one (a hostile or broken server)
   * fails the round trip instead of growing the heap without bound.
   */
  private static final class LimitedBody implements HttpResponse.BodySubscriber<String> {
    private final CompletableFuture<String> result = new CompletableFuture<>();
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private Flow.Subscription subscription;

    @Override
    public CompletionStage<String> getBody() {
      return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> buffers) {
      if (result.isDone()) {
        return;
      }
      for (ByteBuffer buffer : buffers) {
        if (bytes.size() + (long) buffer.remaining() > kMaxBody) {
          subscription.cancel();
          result.completeExceptionally(
              new IOException("the answer's body is over " + kMaxBody + " bytes"));
          return;
        }
        byte[] chunk = new byte[buffer.remaining()];
        buffer.get(chunk);
        bytes.write(chunk, 0, chunk.length);
      }
    }

    @Override
    public void onError(Throwable error) {
      result.completeExceptionally(error);
    }

    @Override
    public void onComplete() {
      result.complete(new String(bytes.toByteArray(), StandardCharsets.UTF_8));
    }
  }

  private static String describe(Throwable t) {
    if (t instanceof ConnectException && t.getMessage() == null) {
      return "connection refused";
    }
    return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
  }

  // --- reading answers -----------------------------------------------------------------------

  private static FencelockException errorFrom(Reply reply) {
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
        if (live != null && live >= 0 && live <= MAX_PERMITS) {
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

  private static Map<String, Object> expectObject(Reply reply) throws FencelockException {
    if (reply.status != 200) {
      throw errorFrom(reply);
    }
    return parseObject(reply);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> parseObject(Reply reply) throws FencelockException {
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

  static long boundedLong(Map<String, Object> answer, String name, long min, long max)
      throws FencelockException {
    Object value = answer.get(name);
    if (!(value instanceof Long) || (Long) value < min || (Long) value > max) {
      throw internal("the service's answer lacks the integer '" + name + "' (" + min + " .. " + max
          + ")" + (value instanceof java.math.BigInteger ? ": it does not fit 64 bits" : ""));
    }
    return (Long) value;
  }

  // --- options -----------------------------------------------------------------------------

  private static URI parseEndpoint(String url) throws FencelockException {
    URI uri;
    try {
      uri = new URI(url);
    } catch (URISyntaxException | NullPointerException e) {
      throw invalid("endpoint " + url + " is not a URL");
    }
    String scheme = uri.getScheme();
    if (!"http".equals(scheme) && !"https".equals(scheme)) {
      throw invalid("endpoint " + url + " must start with http:// or https://");
    }
    if (uri.getHost() == null) {
      throw invalid("endpoint " + url + " has no host");
    }
    if ((uri.getRawPath() != null && !uri.getRawPath().isEmpty() && !uri.getRawPath().equals("/"))
        || uri.getRawQuery() != null || uri.getRawFragment() != null || uri.getRawUserInfo() != null) {
      throw invalid("endpoint " + url + ": only scheme://host:port is allowed");
    }
    int port = uri.getPort();
    if (port == -1) {
      port = scheme.equals("https") ? 443 : 80;
    }
    if (port < 1 || port > 65535) {
      throw invalid("endpoint " + url + ": the port must be 1 .. 65535");
    }
    try {
      return new URI(scheme, null, uri.getHost(), port, "/", null, null);
    } catch (URISyntaxException e) {
      throw invalid("endpoint " + url + " is not a URL");
    }
  }

  private static SSLContext trusting(Path caFile) throws FencelockException, GeneralSecurityException {
    Collection<? extends Certificate> certificates;
    try (InputStream in = Files.newInputStream(caFile)) {
      certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
    } catch (IOException e) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "cannot read the CA file " + caFile + ": " + e.getMessage(), e);
    }
    if (certificates.isEmpty()) {
      throw invalid("the CA file " + caFile + " holds no certificate");
    }
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    try {
      store.load(null, null);
    } catch (IOException e) {
      throw new GeneralSecurityException(e);
    }
    int i = 0;
    for (Certificate certificate : certificates) {
      store.setCertificateEntry("fencelock-ca-" + i++, certificate);
    }
    TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(store);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, trust.getTrustManagers(), null);
    return context;
  }

  private static Duration bounded(Duration value, Duration min, Duration max, String what)
      throws FencelockException {
    if (value == null || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw invalid(what + " must be " + min + " .. " + max);
    }
    return value;
  }

  private static long millis(Duration value, String what, long min) throws FencelockException {
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

  private static ThreadFactory daemons(String prefix) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }

  static FencelockException invalid(String message) {
    return new FencelockException(FencelockException.INVALID_REQUEST, message);
  }

  static FencelockException internal(String message) {
    return new FencelockException(FencelockException.INTERNAL, message);
  }
}

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

import dev.fencelock.Transport.Retry;
import java.net.URI;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;

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

  private static final Pattern kApiKey = Pattern.compile("[\\x21-\\x7e]{1,256}");
  // A watch's longest wait (the C++ SDK's bound; fencelockd's --max-wait may be shorter) and its
  // default.
  private static final long kMaxWatchWaitMillis = 3_600_000;
  private static final Duration kDefaultWatchWait = Duration.ofSeconds(30);

  private final Transport transport;
  private final Grants grants;
  private final ScheduledExecutorService timers;
  private final ExecutorService workers;
  // toString's text: the endpoints, and whether a key is sent (never the key).
  private final String description;

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
      throw Checks.invalid("endpoints: need 1 to 16 fencelockd URLs");
    }
    Duration connectTimeout = Checks.bounded(b.connectTimeout, Duration.ofMillis(1), Duration.ofSeconds(60), "connectTimeout");
    Duration requestTimeout = Checks.bounded(b.requestTimeout, Duration.ofMillis(1), Duration.ofSeconds(600), "requestTimeout");
    Duration retryBackoff = Checks.bounded(b.retryBackoff, Duration.ZERO, Duration.ofSeconds(10), "retryBackoff");
    Duration idleReuseLimit = Checks.bounded(b.idleReuseLimit, Duration.ofMillis(1), Duration.ofHours(1), "idleReuseLimit");
    if (b.maxRetries < 0 || b.maxRetries > 10) {
      throw Checks.invalid("maxRetries must be 0 .. 10");
    }
    if (b.apiKey != null && !kApiKey.matcher(b.apiKey).matches()) {
      throw Checks.invalid("the API key must be 1 to 256 printable ASCII characters without spaces");
    }
    List<URI> bases = new ArrayList<>();
    boolean anyPlain = false;
    for (String url : b.endpoints) {
      URI base = Endpoint.parse(url);
      anyPlain |= base.getScheme().equals("http");
      bases.add(base);
    }
    if ((b.caFile != null || b.sslContext != null) && anyPlain) {
      throw Checks.invalid("a CA file or SSLContext was given, but an endpoint is http://: the API key and"
          + " the leases would go unencrypted; use https:// for every endpoint");
    }
    SSLContext sslContext;
    try {
      sslContext = b.sslContext != null ? b.sslContext
          : b.caFile != null ? CaFile.context(b.caFile) : SSLContext.getDefault();
    } catch (GeneralSecurityException e) {
      throw new FencelockException(FencelockException.INVALID_REQUEST,
          "no usable TLS context: " + e.getMessage(), e);
    }
    List<Endpoint> endpoints = new ArrayList<>();
    for (URI base : bases) {
      endpoints.add(new Endpoint(base, b.apiKey, sslContext, connectTimeout, idleReuseLimit));
    }
    transport = new Transport(endpoints, requestTimeout, b.maxRetries, retryBackoff);
    description = "FencelockClient(endpoints=" + bases + (b.apiKey != null ? ", apiKey=***" : "") + ")";
    ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, daemons("fencelock-timer"));
    timer.setRemoveOnCancelPolicy(true);
    timers = timer;
    workers = Executors.newCachedThreadPool(daemons("fencelock-worker"));
    grants = new Grants(this, transport, workers);
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
    return grants.lock(name, ttl, wait, owner, requestId);
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
    return grants.revoke(name, ttl, owner);
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
    return grants.set(names, ttl, wait, owner);
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
    return grants.permit(name, permits, ttl, wait, owner);
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
    return grants.readWrite(name, Lease.Kind.READ, ttl, wait, owner);
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
    return grants.readWrite(name, Lease.Kind.WRITE, ttl, wait, owner);
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
      throw Checks.invalid("the lease belongs to another client");
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
    return grants.extendDeadline(lease, ttl, withinNanos);
  }

  /**
   * Releases the lease (a lock, a whole set, a permit, a read/write lock's grant): true iff it
   * still held them. Idempotent. Prefer lease.close() or lease.release(), which also stop its
   * keeper. Errors: unavailable, invalid_request, unauthenticated, forbidden, transport, tls,
   * cancelled.
   */
  public boolean release(Lease lease) throws FencelockException {
    return grants.release(lease);
  }

  /**
   * Whether `name` is held, for how long, the holder's token and owner (empty when not held), and
   * the name's current token. Never the lease.
   */
  public LockStatus status(String name) throws FencelockException {
    checkName(name);
    Map<String, Object> answer = transport.getSafely("/v1/locks/" + name);
    return Answers.lockStatus(answer, Answers.boundedLong(answer, "last_token", 0, Long.MAX_VALUE), false);
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
      throw Checks.invalid("afterToken must be a fencing token (0 or more)");
    }
    long waitMs = Checks.millis(wait, "wait", 0);
    if (waitMs > kMaxWatchWaitMillis) {
      throw Checks.invalid("wait must be at most " + Duration.ofMillis(kMaxWatchWaitMillis));
    }
    String path = "/v1/locks/" + name + "?after_token=" + afterToken + "&wait_ms=" + waitMs;
    Map<String, Object> answer = Answers.expectObject(transport.call("GET", path, null, Retry.SAFE, waitMs, null, null));
    Object changed = answer.get("changed");
    if (!(changed instanceof Boolean)) {
      throw Answers.internal("the service's answer lacks 'changed'");
    }
    return Answers.lockStatus(answer, 0, (Boolean) changed);
  }

  /** watch(name, afterToken, wait) with the default wait of 30 s. */
  public LockStatus watch(String name, long afterToken) throws FencelockException {
    return watch(name, afterToken, kDefaultWatchWait);
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
    return Listings.locks(transport::getSafely, prefix, limit, cursor);
  }

  /**
   * One page of the semaphores with a permit held whose names start with `prefix` (GET
   * /v1/semaphores), each as semaphoreStatus tells it; `prefix`, `limit`, `cursor`, pages, retries
   * and errors as listLocks. A semaphore on which a permit stays held throughout is listed (more
   * than once if a lock node failed or was late meanwhile, or its permits are held on different
   * sets of nodes).
   */
  public SemaphoreListing listSemaphores(String prefix, int limit, String cursor) throws FencelockException {
    return Listings.semaphores(transport::getSafely, prefix, limit, cursor);
  }

  /**
   * One page of the read/write locks with a grant held whose names start with `prefix` (GET
   * /v1/rwlocks), each as rwlockStatus tells it; otherwise as listSemaphores.
   */
  public RwLockListing listRwlocks(String prefix, int limit, String cursor) throws FencelockException {
    return Listings.rwlocks(transport::getSafely, prefix, limit, cursor);
  }

  /** The live permit count of semaphore `name` (0 when none is live) and the permits held. */
  public SemaphoreStatus semaphoreStatus(String name) throws FencelockException {
    checkName(name);
    return Listings.semaphoreStatus(transport.getSafely("/v1/semaphores/" + name));
  }

  /**
   * How read/write lock `name` is held: its mode (empty when free), its grants (token, owner, time
   * left) and whether a writer waits. Never a lease. Needs the right "read"; retried like status.
   * Errors: invalid_request, unauthenticated/forbidden, unavailable (the nodes that did not answer
   * could hold it), rate_limited, transport, tls, cancelled, internal.
   */
  public RwLockStatus rwlockStatus(String name) throws FencelockException {
    checkName(name);
    return Listings.rwlockStatus(transport.getSafely("/v1/rwlocks/" + name));
  }

  /** The latest token drawn for `name` (0 if none ever was). */
  public long currentToken(String name) throws FencelockException {
    checkName(name);
    return Answers.boundedLong(transport.getSafely("/v1/tokens/" + name), "token", 0, Long.MAX_VALUE);
  }

  /**
   * Draws the next token of `name` without a lock. Hazard (docs/api.md): the token is newer than
   * the current holder's and can fence that holder out.
   */
  public long nextToken(String name) throws FencelockException {
    checkName(name);
    return Answers.positiveLong(
        Answers.expectObject(transport.call("POST", "/v1/tokens/" + name, null, Retry.SAFE, 0, null, null)), "token");
  }

  /** Stops the keeper threads (leases still kept stop being renewed). Idempotent. */
  @Override
  public void close() {
    timers.shutdownNow();
    workers.shutdown();
  }

  @Override
  public String toString() {
    return description;
  }

  /** invalid_request unless `name` is a valid lock name (docs/api.md, "Names"). */
  public static void checkName(String name) throws FencelockException {
    Checks.name(name);
  }

  private static ThreadFactory daemons(String prefix) {
    AtomicInteger count = new AtomicInteger();
    return runnable -> {
      Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }
}

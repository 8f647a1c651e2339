/*
 * A granted lease as the client holds it: a lock, a lock set, a semaphore permit or a read/write
 * lock's grant, its fencing token(s) and a conservative deadline on System.nanoTime(): the
 * client's own send time of the granting (or last extending) request plus waited_ms (acquire only)
 * plus validity_ms — never later than the truth, however long a waiting acquire waited
 * (docs/api.md, "Acquire").
 */
package dev.fencelock;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One grant, made by {@link FencelockClient}: {@code acquire}/{@code lock} (a lock), {@code
 * acquireSet}/{@code lockSet} (several names, all or none), {@code acquirePermit}/{@code permit}
 * (one permit of a counting semaphore), or {@code acquireRead}/{@code readLock} and {@code
 * acquireWrite}/{@code writeLock} (a read/write lock's read grant, shared, or write grant, alone).
 *
 * <p>Send {@link #token()} with every write to the protected resource — for a lock set, {@link
 * #tokenOf(String)} with a write to that name's resource; for a permit, fence per (name, {@link
 * #slot()}); under read grants, fence per reader. The lease string proves ownership for extend
 * and release: it is a secret, never in {@link #toString()}, an error message or a log line.
 *
 * <p>{@link #close()} (try-with-resources) stops the keeper, if any, and releases the lease. It
 * never throws: a release that fails (the service is down, the lease was lost already) is logged
 * and the ttl frees the lock. Whether the work under the lease counted is for the fenced writes'
 * own outcomes to say, and {@link #check()}, {@link #isLost()} and {@link #lost()} tell a lost lease
 * before that.
 *
 * <p>Thread safety: every method may be called from any thread while a keeper renews the lease.
 */
public final class Lease implements AutoCloseable {
  /** What was granted: READ and WRITE are a read/write lock's grants. */
  public enum Kind { LOCK, SET, PERMIT, READ, WRITE }

  private static final System.Logger kLog = System.getLogger("dev.fencelock");

  private final FencelockClient client;
  private final Kind kind;
  private final List<String> names;
  private final Map<String, Long> tokens;
  private final long token;
  private final int permits;
  private final int slot;
  private final String leaseString;
  private final Object mutex = new Object();
  private final CompletableFuture<FencelockException> lost = new CompletableFuture<>();
  private Duration ttl;
  private long deadlineNanos;
  private FencelockException lostReason;
  private LeaseKeeper keeper;
  private boolean closed;

  Lease(FencelockClient client, Kind kind, List<String> names, Map<String, Long> tokens,
      long token, int permits, int slot, String leaseString, Duration ttl, long deadlineNanos) {
    this.client = client;
    this.kind = kind;
    this.names = List.copyOf(names);
    this.tokens = Collections.unmodifiableMap(tokens);
    this.token = token;
    this.permits = permits;
    this.slot = slot;
    this.leaseString = leaseString;
    this.ttl = ttl;
    this.deadlineNanos = deadlineNanos;
  }

  public Kind kind() {
    return kind;
  }

  /** The lock's, semaphore's or read/write lock's name; a set's names joined by "," (for messages). */
  public String name() {
    return String.join(",", names);
  }

  /** The names held: one, or a set's names sorted. */
  public List<String> names() {
    return names;
  }

  /**
   * The fencing token (a lock's, a permit's, a read/write lock grant's: a write grant's is above
   * every earlier grant's, reads included); 0 for a set: no single token fences several names.
   */
  public long token() {
    return token;
  }

  /** Each name's token, in the order of {@link #names()}. */
  public Map<String, Long> tokens() {
    return tokens;
  }

  /** The token of `name` (a set's member, or the lock's own name); IllegalArgumentException if not held. */
  public long tokenOf(String name) {
    Long value = tokens.get(name);
    if (value == null) {
      throw new IllegalArgumentException("this lease holds no name " + name);
    }
    return value;
  }

  /** A permit's semaphore permit count; 0 for any other kind. */
  public int permits() {
    return permits;
  }

  /** The slot a permit holds, 0 .. permits − 1; 0 for any other kind. */
  public int slot() {
    return slot;
  }

  /** The secret that proves ownership (extend, release): hand it on only if you must; never log it. */
  public String leaseString() {
    return leaseString;
  }

  /** The ttl of the last grant or extend. */
  public Duration ttl() {
    synchronized (mutex) {
      return ttl;
    }
  }

  /** The System.nanoTime() value after which the lease must not be relied on. */
  public long deadlineNanos() {
    synchronized (mutex) {
      return deadlineNanos;
    }
  }

  /** Time left until the deadline; zero once it passed. */
  public Duration remaining() {
    long left = deadlineNanos() - System.nanoTime();
    return left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
  }

  /**
   * True until the deadline and while not declared lost. A valid lease may still have been taken
   * over if this process was paused: that is what the token is for.
   */
  public boolean isValid() {
    return !isLost() && deadlineNanos() - System.nanoTime() > 0;
  }

  /** True once a keeper declared the lease lost. */
  public boolean isLost() {
    synchronized (mutex) {
      return lostReason != null;
    }
  }

  /**
   * Completes — before the lease's deadline — when its keeper declares it lost: an extend was
   * refused (the cause is a {@code not_held} FencelockException), renewal kept failing, or a
   * renewal bound was reached. Its value is a {@code lease_lost} FencelockException whose cause
   * says why. Dependent actions run on a thread of the client, never on the caller's. A lease
   * without a keeper never completes it; neither does a lease closed normally.
   */
  public CompletableFuture<FencelockException> lost() {
    return lost;
  }

  /** Throws lease_lost if the lease was declared lost or its deadline passed; else returns. */
  public void check() throws FencelockException {
    synchronized (mutex) {
      if (lostReason != null) {
        throw new FencelockException(FencelockException.LEASE_LOST, lostReason.getMessage(),
            lostReason.getCause());
      }
      if (deadlineNanos - System.nanoTime() <= 0) {
        throw new FencelockException(FencelockException.LEASE_LOST,
            "the lease of " + name() + " is past its deadline");
      }
    }
  }

  /** Extends by the lease's own ttl: {@link FencelockClient#extend(Lease, Duration)}. */
  public void extend() throws FencelockException {
    client.extend(this, ttl());
  }

  /**
   * Stops the keeper, if any, and releases now: true iff the lease still held its lock(s).
   * Errors as {@link FencelockClient#release(Lease)}; after the first call returns false without
   * asking the service.
   */
  public boolean release() throws FencelockException {
    stopKeeper();
    synchronized (mutex) {
      if (closed) {
        return false;
      }
      closed = true;
    }
    return client.release(this);
  }

  /**
   * {@link #release()}, with errors logged and ignored (the ttl frees the lock). Never throws.
   * Releases on an interrupted thread too (a task cancelled inside its try-with-resources block),
   * then sets the interrupt status again.
   */
  @Override
  public void close() {
    boolean interrupted = Thread.interrupted();
    try {
      release();
    } catch (FencelockException e) {
      kLog.log(Level.WARNING, "fencelock: releasing " + name() + " failed (" + e.code() + ": "
          + e.getMessage() + "); its ttl will free it");
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public String toString() {
    String state = isLost() ? "lost" : remaining().toMillis() + " ms left";
    switch (kind) {
      case SET:
        return "Lease(names=" + names + ", tokens=" + tokens + ", " + state + ")";
      case PERMIT:
        return "Lease(name=" + name() + ", permits=" + permits + ", slot=" + slot + ", token="
            + token + ", " + state + ")";
      case READ:
      case WRITE:
        return "Lease(" + kind.name().toLowerCase(java.util.Locale.ROOT) + " name=" + name()
            + ", token=" + token + ", " + state + ")";
      default:
        return "Lease(name=" + name() + ", token=" + token + ", " + state + ")";
    }
  }

  // --- for the client and the keeper ----------------------------------------------------------

  FencelockClient client() {
    return client;
  }

  /** Moves the deadline after a successful extend; false (and no change) once lost. */
  boolean renewed(Duration newTtl, long newDeadlineNanos) {
    synchronized (mutex) {
      if (lostReason != null) {
        return false;
      }
      ttl = newTtl;
      deadlineNanos = newDeadlineNanos;
      return true;
    }
  }

  /** Declares the lease lost; true only for the call that did it. The future completes on `executor`. */
  boolean markLost(FencelockException why, Executor executor) {
    synchronized (mutex) {
      if (lostReason != null) {
        return false;
      }
      lostReason = why;
    }
    try {
      executor.execute(() -> lost.complete(why));
    } catch (java.util.concurrent.RejectedExecutionException closedClient) {
      lost.complete(why);
    }
    return true;
  }

  void attach(LeaseKeeper newKeeper) throws FencelockException {
    synchronized (mutex) {
      if (keeper != null) {
        throw new FencelockException(FencelockException.INVALID_REQUEST,
            "this lease is kept already");
      }
      if (closed) {
        throw new FencelockException(FencelockException.INVALID_REQUEST,
            "this lease was released");
      }
      keeper = newKeeper;
    }
  }

  private void stopKeeper() {
    LeaseKeeper current;
    synchronized (mutex) {
      current = keeper;
    }
    if (current != null) {
      current.stop();
    }
  }
}

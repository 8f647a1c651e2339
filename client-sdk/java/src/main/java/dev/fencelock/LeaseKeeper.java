/*
 * Keeps a lease alive while work runs under it (Redisson's watchdog), and says when it is lost.
 *
 * Two kinds of task per lease, on the client's threads:
 *   - the renewal, on the client's worker pool (it blocks on HTTP): extends the lease whenever
 *     renewWhenLeft of its ttl is left; a refused extend (not_held) declares the lease lost at
 *     once; a transient failure (unavailable, transport, ...) is retried every ttl/20 (at least
 *     5 ms); each extend is cut short so that it ends before the lost point;
 *   - the watchdog, on the client's timer thread (it never blocks): declares the lease lost
 *     lostMargin before its deadline if no renewal moved the deadline by then (the service is
 *     unreachable, too slow, or a renewal bound was reached).
 * The watchdog never waits for an HTTP call, so the signal comes before the local deadline
 * whatever the network does; a renewal answered after the lease was declared lost is ignored.
 *
 * The signal narrows the window in which a paused process can act on a lost lease; it cannot
 * close it (the pause can come right after the check). That is why every write carries the token.
 */
package dev.fencelock;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

final class LeaseKeeper {
  private static final System.Logger kLog = System.getLogger("dev.fencelock");
  private static final long kMinRetryNanos = TimeUnit.MILLISECONDS.toNanos(5);
  private static final long kMinMarginNanos = TimeUnit.MILLISECONDS.toNanos(20);

  private final FencelockClient client;
  private final Lease lease;
  private final RenewOptions options;
  private final ScheduledExecutorService timers;
  private final ExecutorService workers;
  private final long startedNanos = System.nanoTime();
  private int renewals;
  private FencelockException lastFailure;
  private boolean stopped;
  private ScheduledFuture<?> renewTask;
  private ScheduledFuture<?> watchTask;

  LeaseKeeper(FencelockClient client, Lease lease, RenewOptions options,
      ScheduledExecutorService timers, ExecutorService workers) {
    this.client = client;
    this.lease = lease;
    this.options = options;
    this.timers = timers;
    this.workers = workers;
  }

  synchronized void start() {
    scheduleRenewal(lease.deadlineNanos() - renewBeforeNanos(lease.ttl()));
    scheduleWatch();
  }

  /** Stops renewing; the lease then runs out at its deadline. Idempotent; never blocks on HTTP. */
  synchronized void stop() {
    stopped = true;
    if (renewTask != null) {
      renewTask.cancel(false);
    }
    if (watchTask != null) {
      watchTask.cancel(false);
    }
  }

  synchronized int renewals() {
    return renewals;
  }

  private long marginNanos(Duration ttl) {
    if (options.lostMargin() != null) {
      return options.lostMargin().toNanos();
    }
    long ttlNanos = ttl.toNanos();
    return Math.min(Math.max(ttlNanos / 10, kMinMarginNanos), ttlNanos / 2);
  }

  private long renewBeforeNanos(Duration ttl) {
    return (long) (ttl.toNanos() * options.renewWhenLeft());
  }

  private synchronized boolean bounded() {
    return (options.maxRenewals() > 0 && renewals >= options.maxRenewals())
        || (options.maxHold() != null
            && System.nanoTime() - startedNanos >= options.maxHold().toNanos());
  }

  private synchronized void scheduleRenewal(long atNanos) {
    if (stopped || lease.isLost()) {
      return;
    }
    long delay = Math.max(0, atNanos - System.nanoTime());
    try {
      renewTask = timers.schedule(() -> submitRenewal(), delay, TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      stopped = true;  // the client was closed
    }
  }

  private void submitRenewal() {
    try {
      workers.execute(this::renewOnce);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      stop();
    }
  }

  private synchronized void scheduleWatch() {
    if (stopped || lease.isLost()) {
      return;
    }
    if (watchTask != null) {
      watchTask.cancel(false);
    }
    long lostAt = lease.deadlineNanos() - marginNanos(lease.ttl());
    try {
      watchTask = timers.schedule(this::watch, Math.max(0, lostAt - System.nanoTime()),
          TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException closed) {
      stopped = true;
    }
  }

  private void watch() {
    FencelockException reason;
    boolean bound;
    synchronized (this) {
      if (stopped || lease.isLost()) {
        return;
      }
      long lostAt = lease.deadlineNanos() - marginNanos(lease.ttl());
      if (lostAt - System.nanoTime() > 0) {  // a renewal moved the deadline meanwhile
        scheduleWatch();
        return;
      }
      reason = lastFailure;
      bound = bounded();
    }
    String message = reason != null
        ? "the lease could not be renewed in time (" + reason.code() + ": " + reason.getMessage() + ")"
        : bound ? "the renewal bound was reached; the lease is about to expire"
            : "the lease could not be renewed in time";
    declareLost(message, reason);
  }

  private void renewOnce() {
    Duration ttl;
    long deadline;
    synchronized (this) {
      if (stopped || lease.isLost() || bounded()) {
        return;  // bounded: the watchdog declares the lease lost before the deadline
      }
      ttl = lease.ttl();
      deadline = lease.deadlineNanos();
    }
    long lostAt = deadline - marginNanos(ttl);
    long now = System.nanoTime();
    if (lostAt - now <= 0) {
      return;
    }
    try {
      long newDeadline = client.extendDeadline(lease, ttl, Math.max(lostAt - now, 1_000_000L));
      synchronized (this) {
        if (stopped || !lease.renewed(ttl, newDeadline)) {
          return;
        }
        ++renewals;
        lastFailure = null;
        scheduleRenewal(newDeadline - renewBeforeNanos(ttl));
        scheduleWatch();
      }
    } catch (FencelockException e) {
      synchronized (this) {
        if (stopped) {
          return;  // closed meanwhile: a not_held now is the release's doing
        }
      }
      if (e.code().equals(FencelockException.NOT_HELD)) {
        synchronized (this) {
          lastFailure = e;
        }
        declareLost("the lease was refused: " + e.getMessage(), e);
        return;
      }
      synchronized (this) {
        lastFailure = e;
        scheduleRenewal(System.nanoTime() + Math.max(ttl.toNanos() / 20, kMinRetryNanos));
      }
    }
  }

  private void declareLost(String message, FencelockException reason) {
    FencelockException why = new FencelockException(FencelockException.LEASE_LOST, message, reason);
    synchronized (this) {
      if (stopped || !lease.markLost(why, workers)) {
        return;
      }
      stop();
    }
    kLog.log(Level.WARNING, "fencelock: the lease of " + lease.name() + " (tokens "
        + lease.tokens() + ") is lost: " + message);
  }
}

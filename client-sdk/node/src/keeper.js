// Keeps a lease alive while work runs under it (Redisson's watchdog, the C++ SDK's LeaseKeeper),
// and says when it is lost.
//
// A timer extends the lease whenever `renewWhenLeft` of its ttl is left. The lease is declared
// lost — lease.signal aborts, lease emits 'lost', lease.check() throws a LeaseLostError —
//   - at once when an extend is refused (not_held: expired, released or taken over), and
//   - `lostMarginMs` before the deadline when renewal has not succeeded by then (the service or
//     its lock nodes are unreachable, or the bound below was reached),
// so it fires *before* the deadline whenever renewal failed, never after. Each extend is bounded
// by the time left until that point, so a slow service cannot delay the signal. Failed extends are
// retried until then.
//
// Timers are unref'd: a keeper never holds the process open. A timer can only fire late if the
// event loop is blocked; lease.check() compares with the deadline itself, so it cannot be fooled.
// The signal narrows the window in which a paused process acts on a lost lease; it cannot close
// it. That is why every write still carries the token.
import { performance } from 'node:perf_hooks';

import { LeaseLostError, NotHeldError } from './errors.js';
import { declareLost } from './lease.js';

/**
 * @typedef {object} RenewOptions
 * @property {number} [renewWhenLeft] extend when this fraction of the ttl is left. Default 1/3;
 *   0.05 .. 0.95.
 * @property {number} [maxRenewals] extend at most this many times. Default: no bound.
 * @property {number} [maxHoldMs] stop extending once the lease has been held this long.
 * @property {number} [lostMarginMs] how long before the deadline the lost signal fires if renewal
 *   has not succeeded. Default a tenth of the ttl, at least 20 ms, at most half the ttl.
 */

export class LeaseKeeper {
  #client;
  #options;
  #acquiredAt = performance.now();
  #renewTimer;
  #lostTimer;
  #stopped = false;
  #lastError;
  #inFlight = new AbortController();
  #extending = false;

  /** Starts renewing at once. */
  constructor(client, lease, options = {}) {
    const renewWhenLeft = options.renewWhenLeft ?? 1 / 3;
    if (!(renewWhenLeft >= 0.05 && renewWhenLeft <= 0.95)) throw new RangeError('renewWhenLeft: 0.05 .. 0.95');
    this.#client = client;
    this.lease = lease;
    this.renewals = 0;
    this.#options = { ...options, renewWhenLeft };
    this.#schedule();
  }

  #margin() {
    const ttl = this.lease.ttlMs;
    const margin = this.#options.lostMarginMs ?? Math.max(20, Math.floor(ttl / 10));
    return Math.min(margin, Math.floor(ttl / 2));
  }

  #lostAt() {
    return this.lease.deadline - this.#margin();
  }

  #schedule() {
    if (this.#stopped || this.lease.lost) return;
    const now = performance.now();
    clearTimeout(this.#lostTimer);
    this.#lostTimer = setTimeout(() => this.#giveUp(), Math.max(0, this.#lostAt() - now));
    this.#lostTimer.unref();
    this.#renewAfter(this.lease.deadline - this.#options.renewWhenLeft * this.lease.ttlMs - now);
  }

  #renewAfter(delayMs) {
    clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(() => this.#renew(), Math.max(0, delayMs));
    this.#renewTimer.unref();
  }

  #boundReached() {
    const { maxRenewals, maxHoldMs } = this.#options;
    if (maxRenewals !== undefined && this.renewals >= maxRenewals) return true;
    return maxHoldMs !== undefined && performance.now() - this.#acquiredAt >= maxHoldMs;
  }

  async #renew() {
    if (this.#stopped || this.lease.lost) return;
    if (this.#boundReached()) return;  // the lost timer fires before the deadline
    const withinMs = Math.floor(this.#lostAt() - performance.now());
    if (withinMs <= 0) return this.#giveUp();
    this.#extending = true;
    try {
      await this.#client.extend(this.lease, this.lease.ttlMs, { withinMs, signal: this.#inFlight.signal });
      if (this.#stopped || this.lease.lost) return;
      this.renewals += 1;
      this.#schedule();
    } catch (error) {
      if (this.#stopped || this.lease.lost) return;
      if (error instanceof NotHeldError) {
        this.#stop();
        declareLost(this.lease, new LeaseLostError(`the lease on "${this.lease.name}" was taken away: ${error.message}`, error));
        return;
      }
      this.#lastError = error;
      this.#renewAfter(Math.min(200, Math.max(10, this.lease.ttlMs / 20)));
    } finally {
      this.#extending = false;
    }
  }

  #giveUp() {
    if (this.#stopped || this.lease.lost) return;
    this.#stop();
    let why = 'renewal stopped at its bound';
    if (this.#lastError) why = `renewal kept failing (${this.#lastError.message})`;
    else if (this.#extending) why = 'renewal did not succeed in time';
    declareLost(this.lease, new LeaseLostError(
      `the lease on "${this.lease.name}" is about to expire: ${why}`, this.#lastError));
  }

  #stop() {
    this.#stopped = true;
    this.#inFlight.abort(new Error('the keeper stopped'));
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#lostTimer);
  }

  /** Stops renewing; the lease runs out at its deadline. */
  stop() {
    this.#stop();
  }

  /** Stops renewing and releases: resolves true iff the lease still held the lock. */
  async release() {
    this.#stop();
    return this.#client.release(this.lease);
  }

  async [Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]() {
    await this.release().catch(() => {});
  }
}

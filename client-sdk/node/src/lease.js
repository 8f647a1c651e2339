// A granted lease as the client holds it — a lock, a lock set (several names at once), a
// semaphore permit or a read/write lock's grant: its fencing token(s), a conservative local
// deadline, and the lost-lease signal. `kind` is 'lock', 'set', 'permit', 'read' or 'write'. A set
// has `names` (sorted) and `tokens` (name → bigint token: fence the write to the resource of name
// n with tokens[n]); its `name` is the names joined by ',' and its `token` undefined. A permit has
// `permits` and `slot` (0..permits-1); its token increases with every grant of the semaphore:
// fence per (semaphore, slot). A read or write grant is shaped as a lock's lease; a write grant's
// token is above every earlier grant's of its name.
//
// The deadline is the client's own send time of the granting (or last extending) request plus the
// waited_ms (acquire only) and validity_ms the service answered, on performance.now() — never later
// than the truth, however long a waiting acquire waited or the answer took.
//
// `signal` (an AbortSignal), the 'lost' event and check() say when the lease must no longer be
// relied on: when an extend was refused (not_held), when a LeaseKeeper gave up renewing (before
// the deadline), or at the deadline itself. Once lost, a lease stays lost. A lease rebuilt from
// its string (leaseFromString) has no known deadline: it is not valid and check() throws, but it
// is not lost, until an extend gives it one.
//
// The lease string (the secret that proves ownership for extend and release) is kept outside the
// object: it never shows in toString(), util.inspect(), JSON.stringify() or Object.keys().
// leaseString() returns it for a caller who must hand it on; treat it like a password.
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { inspect } from 'node:util';

import { LeaseLostError } from './errors.js';

const internals = new WeakMap();

export class Lease extends EventEmitter {
  /**
   * @internal Created by Client.acquire, acquireSet, acquirePermit, acquireRead, acquireWrite, and
   * leaseFromString (`rebuilt`).
   */
  constructor(name, leaseString, token, ttlMs, deadline, { tokens, permits, slot, mode, rebuilt = false } = {}) {
    super();
    const state = {
      secret: leaseString,
      controller: new AbortController(),
      token,
      ttlMs,
      deadline,
      lostReason: undefined,
      expiryTimer: undefined,
      rebuilt,
    };
    internals.set(this, state);
    const kind = tokens !== undefined ? 'set' : permits !== undefined ? 'permit' : mode ?? 'lock';
    const names = kind === 'set' ? Object.freeze(Object.keys(tokens)) : Object.freeze([name]);
    Object.defineProperty(this, 'kind', { value: kind, enumerable: true });
    Object.defineProperty(this, 'name', { value: kind === 'set' ? names.join(',') : name, enumerable: true });
    Object.defineProperty(this, 'names', { value: names, enumerable: true });
    // Not enumerable: it holds BigInts, which JSON.stringify(Object.entries(lease)) cannot write.
    Object.defineProperty(this, 'tokens', {
      value: Object.freeze(kind === 'set' ? { ...tokens } : { [name]: token }), enumerable: false,
    });
    if (kind === 'permit') {
      Object.defineProperty(this, 'permits', { value: permits, enumerable: true });
      Object.defineProperty(this, 'slot', { value: slot, enumerable: true });
    }
    if (!rebuilt) armExpiry(this, state);
  }

  /** The fencing token: send it with every write to the protected resource. */
  get token() { return internals.get(this).token; }
  /** The ttl last asked for (acquire or extend), in ms. */
  get ttlMs() { return internals.get(this).ttlMs; }
  /** The local deadline on performance.now()'s clock, in ms. */
  get deadline() { return internals.get(this).deadline; }
  /** Aborted when the lease is lost; its reason is a LeaseLostError. */
  get signal() { return internals.get(this).controller.signal; }
  get lost() { return internals.get(this).lostReason !== undefined; }
  /** Why the lease was lost (a LeaseLostError), undefined while it is not. */
  get lostReason() { return internals.get(this).lostReason; }

  /** True until the deadline and while not lost. */
  valid() { return !this.lost && !internals.get(this).released && performance.now() < this.deadline; }
  /** Ms left until the deadline, 0 once it passed. */
  remainingMs() { return Math.max(0, Math.floor(this.deadline - performance.now())); }
  /** Throws the LeaseLostError if the lease is lost or past its deadline. */
  check() {
    if (internals.get(this).rebuilt) {
      throw new LeaseLostError(`the lease on "${this.name}" was rebuilt from its string: extend it first`);
    }
    if (!this.lost && performance.now() >= this.deadline) {
      declareLost(this, new LeaseLostError(`the lease on "${this.name}" reached its deadline`));
    }
    if (this.lost) throw this.lostReason;
    if (internals.get(this).released) throw new LeaseLostError(`the lease on "${this.name}" was released`);
  }
  /** The secret proof of ownership. Do not log it. */
  leaseString() { return internals.get(this).secret; }

  toString() { return `Lease(${this.name} #${this.#tokenText()})`; }
  toJSON() {
    const json = { kind: this.kind, name: this.name, ttlMs: this.ttlMs, remainingMs: this.remainingMs(), lost: this.lost };
    if (this.kind === 'set') {
      json.tokens = Object.fromEntries(Object.entries(this.tokens).map(([n, t]) => [n, t.toString()]));
    } else {
      json.token = this.token.toString();
    }
    if (this.kind === 'permit') Object.assign(json, { permits: this.permits, slot: this.slot });
    return json;
  }
  [inspect.custom]() {
    const permit = this.kind === 'permit' ? `, permits: ${this.permits}, slot: ${this.slot}` : '';
    return `Lease { kind: '${this.kind}', name: ${JSON.stringify(this.name)}, token: ${this.#tokenText()}${permit}, ttlMs: ${this.ttlMs}, remainingMs: ${this.remainingMs()}, lost: ${this.lost} }`;
  }
  #tokenText() {
    if (this.kind !== 'set') return `${this.token}n`;
    return `{ ${Object.entries(this.tokens).map(([n, t]) => `${JSON.stringify(n)}: ${t}n`).join(', ')} }`;
  }
}

// A timer at the deadline, so that `signal` fires even when nobody calls check(). Unref'd: a lease
// never holds the process open.
function armExpiry(lease, state) {
  clearTimeout(state.expiryTimer);
  const delay = Math.max(0, state.deadline - performance.now());
  state.expiryTimer = setTimeout(() => {
    declareLost(lease, new LeaseLostError(`the lease on "${lease.name}" reached its deadline`));
  }, delay);
  state.expiryTimer.unref();
}

/** @internal A successful extend moves the deadline (never after the lease was lost). */
export function renewLease(lease, ttlMs, deadline) {
  const state = internals.get(lease);
  if (state.lostReason !== undefined) return;
  state.ttlMs = ttlMs;
  state.deadline = deadline;
  state.rebuilt = false;
  armExpiry(lease, state);
}

/** @internal Marks the lease lost: aborts `signal`, emits 'lost'. Idempotent. */
export function declareLost(lease, reason) {
  const state = internals.get(lease);
  if (state.lostReason !== undefined) return;
  state.lostReason = reason;
  clearTimeout(state.expiryTimer);
  state.controller.abort(reason);
  lease.emit('lost', reason);
}

/** @internal After a release: the timer stops and check() throws, but 'lost' is not emitted. */
export function retireLease(lease) {
  const state = internals.get(lease);
  clearTimeout(state.expiryTimer);
  state.released = true;
}

// The fencelock client: talks to fencelockd's HTTP API v1 (docs/api.md) with Node's built-in
// fetch, whose connections are kept alive by default.
//
// Every request is bounded by AbortSignal.timeout (requestMs; an acquire or a watch adds its
// waitMs). Retries follow the C++ SDK: calls that are safe to repeat (extend, release, status,
// semaphoreStatus, rwlockStatus, watch, the listings, nextToken, currentToken) are retried on
// transport errors and 503s, up to maxRetries times, on the next endpoint. acquire names its
// request (request_id), so it is also retried after a transport error once its request may have
// been sent — the service answers the grant it already made — but not on a 503. acquireSet,
// acquirePermit, acquireRead, acquireWrite and revoke are retried only when their request could
// not be sent at all (connection refused, name not resolved), because a sent one may have been
// granted (and a repeated revoke would revoke its own grant). After a transport error the client
// starts its next calls at the endpoint that answered last.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import { checkInteger, checkName, maxSetNames, maxPermits } from './checks.js';
import {
  InternalError,
  InvalidArgumentError,
  LeaseLostError,
  NotHeldError,
  TransportError,
  errorFromAnswer,
} from './errors.js';
import { Lease, declareLost, renewLease, retireLease } from './lease.js';
import { LeaseKeeper } from './keeper.js';
import { everyEntry, pagePath, readPage, rwlockState, semaphoreState } from './listings.js';
import { maxToken, parseWithTokens } from './token_json.js';

const requestIdPattern = /^[\x21-\x7e]{1,64}$/;
// The longest wait a watch may ask for (the C++ SDK's bound; the server's --max-wait may be
// shorter).
const maxWatchWaitMs = 3600000;
// Errors of fetch that happen before a byte of the request left: nothing can have been granted.
const notSentCodes = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export class Client {
  #endpoints;
  #apiKey;
  #requestMs;
  #maxRetries;
  #retryBackoffMs;
  #current = 0;

  /**
   * @param {object} [options]
   * @param {string[]} [options.endpoints] fencelockd base URLs, tried in order. Default
   *   $FENCELOCK_ENDPOINT (comma-separated, as the CLI reads it), else ["http://127.0.0.1:8080"];
   *   1..16, http: or https: (a private CA: NODE_EXTRA_CA_CERTS=$FENCELOCK_CACERT).
   * @param {string} [options.apiKey] sent as "Authorization: Bearer <apiKey>"; never logged.
   *   Default $FENCELOCK_API_KEY.
   * @param {{requestMs?: number}} [options.timeouts] one request's round trip, excluding an
   *   acquire's or a watch's wait. Default 5000; 1 .. 600000.
   * @param {number} [options.maxRetries] extra attempts of retry-safe calls, and of an acquire
   *   whose answer was lost. Default 2; 0..10.
   * @param {number} [options.retryBackoffMs] pause before a retry, doubled each time. Default 50.
   */
  constructor(options = {}) {
    const endpoints = options.endpoints ??
      (process.env.FENCELOCK_ENDPOINT || 'http://127.0.0.1:8080').split(',').map((url) => url.trim());
    if (!Array.isArray(endpoints) || endpoints.length < 1 || endpoints.length > 16) {
      throw new InvalidArgumentError('invalid_request', 'endpoints: 1 to 16 URLs');
    }
    this.#endpoints = endpoints.map((endpoint) => {
      let url;
      try {
        url = new URL(endpoint);
      } catch {
        throw new InvalidArgumentError('invalid_request', `endpoints: not a URL: ${endpoint}`);
      }
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search) {
        throw new InvalidArgumentError('invalid_request', `endpoints: want http(s)://HOST:PORT, got ${endpoint}`);
      }
      return url.origin;
    });
    const apiKey = options.apiKey ?? process.env.FENCELOCK_API_KEY ?? '';
    if (typeof apiKey !== 'string' || apiKey.length > 256 || !/^[\x21-\x7e]*$/.test(apiKey)) {
      throw new InvalidArgumentError('invalid_request', 'apiKey: printable ASCII without spaces, at most 256 characters');
    }
    this.#apiKey = apiKey;
    this.#requestMs = checkInteger('timeouts.requestMs', options.timeouts?.requestMs ?? 5000, 1, 600000);
    this.#maxRetries = checkInteger('maxRetries', options.maxRetries ?? 2, 0, 10);
    this.#retryBackoffMs = checkInteger('retryBackoffMs', options.retryBackoffMs ?? 50, 0, 10000);
  }

  /**
   * Acquires `name` for `ttlMs`, waiting up to `waitMs` while someone else holds it.
   * Every call names its request: `requestId` (1..64 printable ASCII characters, no spaces;
   * default a fresh random one), so when an answer is lost (a timeout, a reset) the call asks
   * again — up to maxRetries — and the service answers the grant it already made instead of
   * refusing it as held (docs/api.md, "Asking again"). Pass your own only to ask again yourself,
   * with the same id, after this call failed; never reuse one for another acquire.
   * Rejects with LockedError (held, and the wait ran out; retryAfterMs when known),
   * UnavailableError, InvalidArgumentError, DeniedError, RateLimitedError, TransportError.
   */
  async acquire(name, { ttlMs, waitMs = 0, owner, requestId, signal } = {}) {
    checkName(name);
    if (requestId !== undefined && (typeof requestId !== 'string' || !requestIdPattern.test(requestId))) {
      throw new InvalidArgumentError('invalid_request', 'requestId: 1 to 64 printable ASCII characters without spaces');
    }
    const body = { request_id: requestId ?? randomBytes(16).toString('hex') };
    const { answer, deadline } = await this.#grant('acquire', `/v1/locks/${name}`, body,
      { ttlMs, waitMs, owner, signal }, true);
    return new Lease(name, answer.lease, grantedToken(answer.token), ttlMs, deadline);
  }

  /**
   * Takes lock `name` for `ttlMs` whoever holds it (free or held; never waits), with a new token
   * above the revoked lease's: that lease's extend rejects with NotHeldError, its release resolves
   * false. Resolves a Lease like acquire()'s. Needs an API key with the right "admin". Never
   * retried once the request may have been sent. Rejects with UnavailableError (it may still have
   * ended the old lease on some nodes: call again), InvalidArgumentError, DeniedError,
   * RateLimitedError, TransportError.
   */
  async revoke(name, { ttlMs, owner, signal } = {}) {
    checkName(name);
    const { answer, deadline } = await this.#grant('revoke', `/v1/locks/${name}/revoke`, {}, { ttlMs, owner, signal });
    return new Lease(name, answer.lease, grantedToken(answer.token), ttlMs, deadline);
  }

  /**
   * Acquires every name of `names` (1..16 distinct lock names) under one lease — all or none —
   * for `ttlMs`, waiting up to `waitMs` while any is held. The lease's `tokens` maps each name to
   * its own fencing token (bigint). Rejects as acquire().
   */
  async acquireSet(names, { ttlMs, waitMs = 0, owner, requestId, signal } = {}) {
    onlyForALock(requestId);
    if (!Array.isArray(names) || names.length < 1 || names.length > maxSetNames) {
      throw new InvalidArgumentError('invalid_request', `names: an array of 1 to ${maxSetNames} lock names`);
    }
    names.forEach(checkName);
    if (new Set(names).size !== names.length) {
      throw new InvalidArgumentError('invalid_request', 'names: must be distinct');
    }
    const { answer, deadline } = await this.#grant('acquireSet', '/v1/locks', { names: [...names] },
      { ttlMs, waitMs, owner, signal });
    const tokens = answer.tokens;
    if (tokens === null || typeof tokens !== 'object' ||
        [...Object.keys(tokens)].sort().join('\n') !== [...names].sort().join('\n')) {
      throw new InternalError('internal', 'acquireSet: the answer lacks a token per name');
    }
    const sorted = Object.fromEntries(Object.keys(tokens).sort().map((n) => [n, grantedToken(tokens[n])]));
    return new Lease('', answer.lease, undefined, ttlMs, deadline, { tokens: sorted });
  }

  /**
   * Acquires one of the `permits` (1..64) permits of semaphore `name` for `ttlMs`, waiting up to
   * `waitMs` while all are held: at most `permits` holders at once (under Redlock's timing
   * assumptions). The lease's `slot` says which permit; fence per (semaphore, slot) with its
   * token. Rejects as acquire(), and with PermitsMismatchError (`permits`: the live count) when
   * the semaphore has live permits under another count.
   */
  async acquirePermit(name, permits, { ttlMs, waitMs = 0, owner, requestId, signal } = {}) {
    onlyForALock(requestId);
    checkName(name);
    checkInteger('permits', permits, 1, maxPermits);
    const { answer, deadline } = await this.#grant('acquirePermit', `/v1/semaphores/${name}`, { permits },
      { ttlMs, waitMs, owner, signal });
    if (!Number.isSafeInteger(answer.slot) || !Number.isSafeInteger(answer.permits)) {
      throw new InternalError('internal', 'acquirePermit: the answer lacks slot or permits');
    }
    return new Lease(name, answer.lease, grantedToken(answer.token), ttlMs, deadline,
      { permits: answer.permits, slot: answer.slot });
  }

  /** Semaphore `name`: {permits (its live count, 0 when none is live), held}. Never a lease. */
  async semaphoreStatus(name, { signal } = {}) {
    checkName(name);
    const { answer } = await this.#call('GET', `/v1/semaphores/${name}`, undefined, { idempotent: true, signal });
    return semaphoreState('semaphoreStatus', answer);
  }

  /**
   * A read grant of read/write lock `name` (POST /v1/rwlocks/{name}), shared with other reads,
   * for `ttlMs`, waiting up to `waitMs` while a write grant holds it or a writer waits. The
   * lease's kind is 'read'; its token comes from the counter of `name` (shared with the lock
   * `name`, which a read/write lock does not exclude). Readers hold at once: a resource written
   * under read grants fences per reader. Rejects as acquire() (LockedError: held against this
   * mode and the wait ran out); refuses a requestId.
   */
  async acquireRead(name, options = {}) {
    return this.#acquireRw('read', name, options);
  }

  /**
   * A write grant of read/write lock `name`, alone: waits up to `waitMs` while any grant holds
   * it, and while it waits keeps new readers out, so a stream of readers cannot starve it. The
   * lease's kind is 'write'; its token is above every earlier grant's of `name`, read or write.
   * Rejects as acquireRead().
   */
  async acquireWrite(name, options = {}) {
    return this.#acquireRw('write', name, options);
  }

  async #acquireRw(mode, name, { ttlMs, waitMs = 0, owner, requestId, signal }) {
    onlyForALock(requestId);
    checkName(name);
    const what = mode === 'read' ? 'acquireRead' : 'acquireWrite';
    const { answer, deadline } = await this.#grant(what, `/v1/rwlocks/${name}`, { mode },
      { ttlMs, waitMs, owner, signal });
    if (answer.mode !== mode) {  // a reader that thinks it writes alone would fence wrongly
      throw new InternalError('internal', `${what}: the answer grants mode ${JSON.stringify(answer.mode)}`);
    }
    return new Lease(name, answer.lease, grantedToken(answer.token), ttlMs, deadline, { mode });
  }

  /**
   * Read/write lock `name`: {mode ('read', 'write', or null when free), holders (the grants held
   * on a majority of lock nodes, by token: [{token (bigint), owner (null when none was sent),
   * remainingMs}]), writerWaiting (new reads are refused meanwhile)}. Never a lease. Needs the
   * right "read". Rejects as status().
   */
  async rwlockStatus(name, { signal } = {}) {
    checkName(name);
    const { answer } = await this.#call('GET', `/v1/rwlocks/${name}`, undefined, { idempotent: true, signal });
    return rwlockState('rwlockStatus', answer);
  }

  /**
   * One page of the locks held whose names start with `prefix` (GET /v1/locks):
   * {locks: [{name, token (bigint; null when the listing cannot tell), owner (null when none was
   * sent), remainingMs}], next}. Pass `next` as `cursor` until it is null. A page may hold fewer
   * than `limit` (1..1000, default 100) names, even none, and still have a next; a name held
   * throughout is listed (twice if a lock node failed meanwhile). Needs the right "read"; names
   * the key may not read are left out. Rejects with InvalidArgumentError, DeniedError,
   * UnavailableError (start the listing again), RateLimitedError, TransportError.
   */
  async listLocks(options = {}) {
    return this.#listPage('locks', options);
  }

  /**
   * Every lock of a listing, page after page (listLocks):
   * `for await (const lock of client.iterateLocks({ prefix: 'invoice-' }))`. Rejects as listLocks.
   */
  iterateLocks(options = {}) {
    return this.#everyEntry('locks', options);
  }

  /**
   * One page of the semaphores with a permit held whose names start with `prefix` (GET
   * /v1/semaphores): {semaphores: [{name, permits, held}], next}, each as semaphoreStatus()
   * resolves it. Options, pages, `next`, retries and rejections as listLocks(). A semaphore on
   * which a permit stays held throughout is listed (more than once if a lock node failed or was
   * late meanwhile, or its permits are held on different sets of nodes).
   */
  async listSemaphores(options = {}) {
    return this.#listPage('semaphores', options);
  }

  /** Every semaphore of a listing, page after page (listSemaphores). Rejects as listSemaphores. */
  iterateSemaphores(options = {}) {
    return this.#everyEntry('semaphores', options);
  }

  /**
   * One page of the read/write locks with a grant held whose names start with `prefix` (GET
   * /v1/rwlocks): {rwlocks: [{name, mode, holders: [{token (bigint), owner, remainingMs}],
   * writerWaiting}], next}, each as rwlockStatus() resolves it. As listSemaphores() otherwise.
   */
  async listRwlocks(options = {}) {
    return this.#listPage('rwlocks', options);
  }

  /** Every read/write lock of a listing, page after page (listRwlocks). Rejects as listRwlocks. */
  iterateRwlocks(options = {}) {
    return this.#everyEntry('rwlocks', options);
  }

  async #listPage(field, { prefix, limit, cursor, signal } = {}) {
    const path = pagePath(field, { prefix, limit, cursor });
    const { answer } = await this.#call('GET', path, undefined, { idempotent: true, signal });
    return readPage(field, answer);
  }

  #everyEntry(field, { prefix = '', pageSize = 100, signal } = {}) {
    return everyEntry(field, (cursor) => this.#listPage(field, { prefix, limit: pageSize, cursor, signal }));
  }

  // The POST of every grant: bounds, the request, and the conservative deadline of its answer.
  // A revoke passes no waitMs: its body takes no wait_ms. `repeatable`: the body names its
  // request (a lock's acquire), so it is asked again after a transport error.
  async #grant(what, path, body, { ttlMs, waitMs, owner, signal }, repeatable = false) {
    checkInteger('ttlMs', ttlMs, 1, Number.MAX_SAFE_INTEGER);
    body.ttl_ms = ttlMs;
    if (waitMs !== undefined) body.wait_ms = checkInteger('waitMs', waitMs, 0, Number.MAX_SAFE_INTEGER);
    if (owner !== undefined) body.owner = String(owner);
    const { answer, sentAt } = await this.#call('POST', path, body, {
      idempotent: false,
      repeatable,
      attemptMs: this.#requestMs + (waitMs ?? 0),
      signal,
    });
    if (typeof answer.lease !== 'string' || !Number.isSafeInteger(answer.validity_ms) ||
        !Number.isSafeInteger(answer.waited_ms ?? 0)) {
      throw new InternalError('internal', `${what}: the answer lacks lease or validity_ms`);
    }
    return { answer, deadline: sentAt + (answer.waited_ms ?? 0) + answer.validity_ms };
  }

  /**
   * Makes the lease's remaining ttl at least `ttlMs` and moves its deadline. `withinMs` bounds
   * the whole call, retries included. Rejects with NotHeldError (the lease is gone: stop using
   * it; the lease is marked lost), UnavailableError, InvalidArgumentError, TransportError.
   */
  async extend(lease, ttlMs = lease.ttlMs, { withinMs, signal } = {}) {
    checkLease(lease);
    checkInteger('ttlMs', ttlMs, 1, Number.MAX_SAFE_INTEGER);
    try {
      const { path, body } = leaseRequest(lease);
      const { answer, sentAt } = await this.#call(
        'POST', lease.kind === 'set' ? '/v1/locks:extend' : `${path}/extend`, { ...body, ttl_ms: ttlMs },
        { idempotent: true, withinMs, signal });
      if (!Number.isSafeInteger(answer.validity_ms)) {
        throw new InternalError('internal', 'extend: the answer lacks validity_ms');
      }
      renewLease(lease, ttlMs, sentAt + answer.validity_ms);
    } catch (error) {
      if (error instanceof NotHeldError) {
        declareLost(lease, new LeaseLostError(`extend of "${lease.name}" was refused: ${error.message}`, error));
      }
      throw error;
    }
  }

  /**
   * Releases the lease (a lock, a whole set, a permit, a read or write grant): resolves true iff
   * it still held it.
   * Idempotent. Rejects with
   * UnavailableError, InvalidArgumentError, TransportError (the ttl frees the lock anyway).
   */
  async release(lease, { signal } = {}) {
    checkLease(lease);
    const { path, body } = leaseRequest(lease);
    const { answer } = await this.#call('DELETE', path, body, { idempotent: true, signal });
    retireLease(lease);
    return answer.released === true;
  }

  /**
   * The lock's state: {held, remainingMs (null when not held), token (the holder's, bigint; null
   * when not held), owner (what the holder sent as owner; null when not held or none was sent),
   * lastToken (bigint)}. Never the lease.
   */
  async status(name, { signal } = {}) {
    checkName(name);
    const { answer } = await this.#call('GET', `/v1/locks/${name}`, undefined, { idempotent: true, signal });
    return { ...lockState('status', answer), lastToken: answer.last_token ?? 0n };
  }

  /**
   * Waits until `name` is no longer held with `afterToken` (a bigint, or a safe integer) —
   * released, expired, revoked or taken again — and resolves its state with changed: true, or
   * after `waitMs` (0..3600000, default 30000, and at most the server's --max-wait) with the
   * state unchanged and changed: false: {changed, held, remainingMs, token, owner} as status()'s,
   * without lastToken. A lock not held with `afterToken` (a free one too) answers at once; to
   * follow a lock, watch again with the token answered. The request may take `waitMs` beyond
   * timeouts.requestMs; it is retried like status(). Needs the right "read" and counts against
   * the key's max_waiters. Rejects with InvalidArgumentError, DeniedError, UnavailableError,
   * RateLimitedError, TransportError.
   */
  async watch(name, afterToken, { waitMs = 30000, signal } = {}) {
    checkName(name);
    if (typeof afterToken === 'number' && Number.isSafeInteger(afterToken)) afterToken = BigInt(afterToken);
    if (typeof afterToken !== 'bigint' || afterToken < 0n || afterToken > maxToken) {
      throw new InvalidArgumentError('invalid_request', 'afterToken: a fencing token (a bigint from 0n)');
    }
    checkInteger('waitMs', waitMs, 0, maxWatchWaitMs);
    const { answer } = await this.#call('GET', `/v1/locks/${name}?after_token=${afterToken}&wait_ms=${waitMs}`,
      undefined, { idempotent: true, attemptMs: this.#requestMs + waitMs, signal });
    if (typeof answer.changed !== 'boolean') throw new InternalError('internal', 'watch: the answer lacks changed');
    return { changed: answer.changed, ...lockState('watch', answer) };
  }

  /** Draws the name's next token without a lock (see the hazard in docs/api.md). A bigint. */
  async nextToken(name, { signal } = {}) {
    checkName(name);
    const { answer } = await this.#call('POST', `/v1/tokens/${name}`, undefined, { idempotent: true, signal });
    return tokenOf(answer);
  }

  /** The latest token issued for the name, 0n if none. A bigint. */
  async currentToken(name, { signal } = {}) {
    checkName(name);
    const { answer } = await this.#call('GET', `/v1/tokens/${name}`, undefined, { idempotent: true, signal });
    return tokenOf(answer);
  }

  /**
   * Keeps `lease` renewed in the background until release() or stop(); see LeaseKeeper.
   * @param {Lease} lease
   * @param {import('./keeper.js').RenewOptions} [options]
   */
  keep(lease, options) {
    return new LeaseKeeper(this, lease, options);
  }

  /**
   * Acquires `name`, runs `work(lease)` while a LeaseKeeper renews it, and releases it when work
   * settles (also when it throws). Resolves with work's result; rejects with the acquire's error,
   * with work's error, or with a LeaseLostError if the lease was lost while work ran (work should
   * watch lease.signal or call lease.check() before each step and before each write).
   */
  async withLock(name, options, work) {
    return this.#withLease('withLock', () => this.acquire(name, options), options, work);
  }

  /** withLock for a lock set (acquireSet): fence with lease.tokens[name]. */
  async withLockSet(names, options, work) {
    return this.#withLease('withLockSet', () => this.acquireSet(names, options), options, work);
  }

  /** withLock for one permit of a semaphore (acquirePermit): fence per slot with lease.token. */
  async withPermit(name, permits, options, work) {
    return this.#withLease('withPermit', () => this.acquirePermit(name, permits, options), options, work);
  }

  /** withLock for a read grant of a read/write lock (acquireRead). */
  async withRead(name, options, work) {
    return this.#withLease('withRead', () => this.acquireRead(name, options), options, work);
  }

  /** withLock for a write grant of a read/write lock (acquireWrite). */
  async withWrite(name, options, work) {
    return this.#withLease('withWrite', () => this.acquireWrite(name, options), options, work);
  }

  async #withLease(what, acquire, options, work) {
    if (typeof work !== 'function') throw new InvalidArgumentError('invalid_request', `${what}: work must be a function`);
    const lease = await acquire();
    const keeper = new LeaseKeeper(this, lease, options?.renew);
    let result;
    try {
      result = await work(lease);
    } finally {
      await keeper.release().catch(() => {});
    }
    if (lease.lost) throw lease.lostReason;
    return result;
  }

  // One call: tries endpoints in turn by the retry rules. Resolves {answer, sentAt}, sentAt being
  // performance.now() just before the successful attempt was sent. `idempotent`: retried on
  // transport errors and 503s; `repeatable`: on transport errors; neither: only when not sent.
  async #call(method, path, body, { idempotent, repeatable = false, attemptMs = this.#requestMs, withinMs, signal }) {
    const start = performance.now();
    const attempts = idempotent ? this.#maxRetries + 1 : Math.max(this.#maxRetries + 1, this.#endpoints.length);
    let lastError;
    for (let attempt = 0; attempt < attempts; ++attempt) {
      let timeoutMs = attemptMs;
      if (withinMs !== undefined) {
        const left = Math.floor(start + withinMs - performance.now());
        if (left <= 0) break;
        timeoutMs = Math.min(timeoutMs, left);
      }
      if (attempt > 0 && this.#retryBackoffMs > 0) {
        const pause = Math.min(this.#retryBackoffMs * 2 ** (attempt - 1), withinMs === undefined ? Infinity : timeoutMs / 2);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
      const index = this.#current;
      const outcome = await this.#attempt(this.#endpoints[index], method, path, body, timeoutMs, signal);
      if (outcome.answer !== undefined) return outcome;
      lastError = outcome.error;
      const transport = lastError instanceof TransportError;
      if (transport) this.#current = (index + 1) % this.#endpoints.length;
      const retry = idempotent ? transport || lastError.status === 503
        : outcome.notSent === true || (repeatable && transport);
      if (!retry) break;
      if (!transport) this.#current = (index + 1) % this.#endpoints.length;
    }
    throw lastError ?? new TransportError('transport', `${method} ${path}: no time left for a request`);
  }

  // One request to one endpoint. Resolves {answer, sentAt} or {error, notSent}; rejects only
  // when the caller's own signal aborted.
  async #attempt(endpoint, method, path, body, timeoutMs, signal) {
    const headers = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    const sentAt = performance.now();
    let response;
    let text;
    try {
      response = await fetch(endpoint + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'error',  // fencelockd never redirects; a lease or key must not follow one
        signal: signal ? anySignal([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const code = causeCode(error);
      const why = timeout.aborted ? `timed out after ${timeoutMs} ms` : (code ?? error.message);
      return {
        error: new TransportError('transport', `${method} ${endpoint}${path}: ${why}`, { cause: error }),
        notSent: !timeout.aborted && notSentCodes.has(code),
      };
    }
    const requestId = response.headers.get('x-request-id') ?? undefined;
    let parsed;
    try {
      parsed = parseWithTokens(text);
    } catch {
      parsed = undefined;
    }
    if (response.ok) {
      if (parsed === null || typeof parsed !== 'object') {
        return { error: new InternalError('internal', `${method} ${path}: an answer that is not a JSON object`, { status: response.status, requestId }) };
      }
      return { answer: parsed, sentAt };
    }
    const problem = parsed?.error ?? {};
    let retryAfterMs = Number.isSafeInteger(problem.retry_after_ms) ? problem.retry_after_ms : undefined;
    const retryAfter = response.headers.get('retry-after');
    if (retryAfterMs === undefined && retryAfter !== null && /^[0-9]+$/.test(retryAfter)) {
      retryAfterMs = Number(retryAfter) * 1000;
    }
    const message = typeof problem.message === 'string' ? problem.message : `HTTP ${response.status}`;
    return {
      error: errorFromAnswer(response.status, typeof problem.code === 'string' ? problem.code : undefined, message,
        { requestId, retryAfterMs, permits: Number.isSafeInteger(problem.permits) ? problem.permits : undefined }),
    };
  }
}

function onlyForALock(requestId) {
  if (requestId !== undefined) {
    throw new InvalidArgumentError('invalid_request', "requestId: only a single lock's acquire takes one");
  }
}

// A lock's state as status and watch answer it: the holder's token and owner, null when not held
// (owner also when none was sent).
function lockState(what, answer) {
  const token = answer.token ?? null;
  if (token !== null) grantedToken(token);
  const owner = answer.owner ?? null;
  if (owner !== null && typeof owner !== 'string') {
    throw new InternalError('internal', `${what}: the answer holds an owner that is not a string`);
  }
  return { held: answer.held === true, remainingMs: answer.remaining_ms ?? null, token, owner };
}

function checkLease(lease) {
  if (!(lease instanceof Lease)) throw new InvalidArgumentError('invalid_request', 'lease: not a Lease from acquire()');
}

function grantedToken(token) {
  if (typeof token !== 'bigint' || token <= 0n) throw new InternalError('internal', 'the answer lacks a token');
  return token;
}

// Where a lease of each kind but a set is extended (+ "/extend") and released, before its name.
const leaseRoutes = {
  lock: '/v1/locks/', permit: '/v1/semaphores/', read: '/v1/rwlocks/', write: '/v1/rwlocks/',
};

// The path that names `lease` (extend appends "/extend", but for a set) and the body that proves it.
function leaseRequest(lease) {
  const body = { lease: lease.leaseString() };
  if (lease.kind === 'set') return { path: '/v1/locks', body: { names: [...lease.names], ...body } };
  return { path: leaseRoutes[lease.kind] + lease.name, body };
}

function tokenOf(answer) {
  if (typeof answer.token !== 'bigint') throw new InternalError('internal', 'the answer lacks a token');
  return answer.token;
}

function causeCode(error) {
  const cause = error?.cause;
  return cause?.code ?? cause?.errors?.[0]?.code ?? undefined;
}

// AbortSignal.any exists from Node 20.3; this covers Node 18.
function anySignal(signals) {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(signals);
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    s.addEventListener('abort', () => controller.abort(s.reason), { once: true, signal: controller.signal });
  }
  return controller.signal;
}

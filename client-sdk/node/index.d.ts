// Types of the fencelock Node client (hand-written; the sources are plain ESM JavaScript).
/// <reference types="node" />
import { EventEmitter } from 'node:events';

export interface Timeouts {
  /** One request's round trip, excluding an acquire's or a watch's wait. Default 5000; 1 .. 600000. */
  requestMs?: number;
}

export interface ClientOptions {
  /** fencelockd base URLs, tried in order. Default ["http://127.0.0.1:8080"]; 1..16. */
  endpoints?: string[];
  /** Sent as "Authorization: Bearer <apiKey>" (fencelockd with --auth-file). Never logged. */
  apiKey?: string;
  timeouts?: Timeouts;
  /** Extra attempts of retry-safe calls (extend, release, status, watch, the listings, tokens) and of an acquire whose answer was lost. Default 2; 0..10. */
  maxRetries?: number;
  /** Pause before a retry, doubled each time. Default 50; 0..10000. */
  retryBackoffMs?: number;
}

export interface RenewOptions {
  /** Extend when this fraction of the ttl is left. Default 1/3; 0.05 .. 0.95. */
  renewWhenLeft?: number;
  /** Extend at most this many times; then the lease is declared lost before its deadline. */
  maxRenewals?: number;
  /** Stop extending once the lease has been held this long (ms). */
  maxHoldMs?: number;
  /** How long before the deadline the lost signal fires if renewal has not succeeded. Default ttl/10, >= 20 ms, <= ttl/2. */
  lostMarginMs?: number;
}

export interface AcquireOptions {
  /** How long the lock holds unless extended or released (ms). */
  ttlMs: number;
  /** How long to keep trying while someone else holds it (ms). Default 0. */
  waitMs?: number;
  /** Who asks; written to fencelockd's request log and shown by status() as the holder's owner. */
  owner?: string;
  /** Aborts the call (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** A single lock's acquire (acquire, withLock); the other grants refuse requestId. */
export interface LockAcquireOptions extends AcquireOptions {
  /**
   * Names this acquire (1..64 printable ASCII characters, no spaces). Default: a fresh random one
   * per call, with which the client asks again when an answer is lost. Give your own only to ask
   * again yourself, with the same id, after a call failed; never reuse one for another acquire.
   */
  requestId?: string;
}

export interface RevokeOptions {
  /** How long the lock holds unless extended or released (ms). */
  ttlMs: number;
  /** Who asks; shown by status() as the holder's owner. */
  owner?: string;
  /** Aborts the call (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

export interface WithLockOptions extends AcquireOptions {
  renew?: RenewOptions;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** One page of a listing (listLocks, listSemaphores, listRwlocks). */
export interface ListOptions extends CallOptions {
  /** Only names that start with it. Default '' (every name). */
  prefix?: string;
  /** Names per page, 1..1000 (a page may hold fewer, or run over by a few). Default 100. */
  limit?: number;
  /** The previous page's `next`; null or absent for the first page. */
  cursor?: string | null;
}

export type ListLocksOptions = ListOptions;

/** One lock of a listing: held on a majority of lock nodes. */
export interface HeldLock {
  name: string;
  /** The holder's fencing token; null when the listing cannot tell it. */
  token: bigint | null;
  /** What the holder sent as `owner`; null when none was sent. */
  owner: string | null;
  remainingMs: number;
}

/** One page of a listing; `next` is the following page's cursor, null once complete. */
export interface LockListing {
  locks: HeldLock[];
  next: string | null;
}

/** Walking every page of a listing. */
export interface IterateOptions extends CallOptions {
  /** Only names that start with it. Default '' (every name). */
  prefix?: string;
  /** Names per page, 1..1000. Default 100. */
  pageSize?: number;
}

/** One semaphore of a listing: a permit held on a majority of lock nodes, as semaphoreStatus() told it when the page was made. */
export interface ListedSemaphore extends SemaphoreStatus {
  name: string;
}

/** One page of the semaphore listing; `next` as LockListing's. */
export interface SemaphoreListing {
  semaphores: ListedSemaphore[];
  next: string | null;
}

/** One read/write lock of a listing: a grant held on a majority of lock nodes, as rwlockStatus() told it when the page was made. */
export interface ListedRwLock extends RwLockStatus {
  name: string;
}

/** One page of the read/write lock listing; `next` as LockListing's. */
export interface RwLockListing {
  rwlocks: ListedRwLock[];
  next: string | null;
}

export interface LockStatus {
  held: boolean;
  /** Until fewer than a majority hold it; null when not held. */
  remainingMs: number | null;
  /** The holder's fencing token; null when not held. */
  token: bigint | null;
  /** What the holder sent as `owner` when it acquired; null when not held or none was sent. */
  owner: string | null;
  /** The name's current token. */
  lastToken: bigint;
}

/** A watch's answer: the lock's state as status() reports it, without lastToken. */
export interface WatchedLock {
  /** No longer held with the token watched (released, expired, revoked or taken again); false: the wait ran out with it unchanged. */
  changed: boolean;
  held: boolean;
  /** Until fewer than a majority hold it; null when not held. */
  remainingMs: number | null;
  /** The holder's fencing token; null when not held. */
  token: bigint | null;
  /** What the holder sent as `owner` when it acquired; null when not held or none was sent. */
  owner: string | null;
}

export interface WatchOptions extends CallOptions {
  /** How long to wait for a change (ms), 0..3600000 and at most the server's --max-wait; the request may take this beyond timeouts.requestMs. Default 30000. */
  waitMs?: number;
}

export interface LeaseEvents {
  lost: [reason: LeaseLostError];
}

/**
 * A granted lock, a permit of a semaphore (kind 'permit': `permits`, `slot`), or a read/write
 * lock's grant (kind 'read' or 'write'). A lock set is a LockSetLease. The lease string (the
 * secret) never shows in toString, inspect or JSON.
 */
export declare class Lease extends EventEmitter {
  private constructor();
  readonly kind: 'lock' | 'permit' | 'read' | 'write';
  readonly name: string;
  /** [name]. */
  readonly names: readonly string[];
  /** The fencing token (64-bit, exact): send it with every write to the protected resource. A
   * permit's increases with every grant of the semaphore: fence per (semaphore, slot). A write
   * grant's is above every earlier grant's of its name, read or write. */
  readonly token: bigint;
  /** {[name]: token}. */
  readonly tokens: Readonly<Record<string, bigint>>;
  /** A permit: the semaphore's permit count. */
  readonly permits?: number;
  /** A permit: which one it holds, 0 .. permits-1. */
  readonly slot?: number;
  readonly ttlMs: number;
  /** The conservative local deadline, on performance.now()'s clock (ms). */
  readonly deadline: number;
  /** Aborted (reason: a LeaseLostError) when the lease is lost. */
  readonly signal: AbortSignal;
  readonly lost: boolean;
  readonly lostReason: LeaseLostError | undefined;
  valid(): boolean;
  remainingMs(): number;
  /** Throws a LeaseLostError if the lease is lost, released, past its deadline, or rebuilt (leaseFromString) and not extended yet. */
  check(): void;
  /** The secret proof of ownership. Do not log it. */
  leaseString(): string;
  toJSON(): { kind: string; name: string; token: string; ttlMs: number; remainingMs: number; lost: boolean; permits?: number; slot?: number };
  on(event: 'lost', listener: (reason: LeaseLostError) => void): this;
  once(event: 'lost', listener: (reason: LeaseLostError) => void): this;
  off(event: 'lost', listener: (reason: LeaseLostError) => void): this;
}

/** Several names under one lease (Client.acquireSet): a token per name, no single token. */
export type LockSetLease = Omit<Lease, 'kind' | 'token' | 'toJSON' | 'permits' | 'slot'> & {
  readonly kind: 'set';
  /** Sorted. */
  readonly names: readonly string[];
  /** A lock set has no single token: fence the write to the resource of name n with tokens[n]. */
  readonly token: undefined;
  readonly tokens: Readonly<Record<string, bigint>>;
  toJSON(): { kind: 'set'; name: string; tokens: Record<string, string>; ttlMs: number; remainingMs: number; lost: boolean };
};

/** Any lease a Client grants. */
export type AnyLease = Lease | LockSetLease;

export interface SemaphoreStatus {
  /** The live permit count; 0 when no permit is live. */
  permits: number;
  /** Permits held on a majority of lock nodes. */
  held: number;
}

/** One grant of a read/write lock, as rwlockStatus() reports it. */
export interface RwLockHolder {
  token: bigint;
  /** What the holder sent as `owner`; null when none was sent. */
  owner: string | null;
  /** Until fewer than a majority of lock nodes hold this grant. */
  remainingMs: number;
}

export interface RwLockStatus {
  /** How it is held now; null when free. */
  mode: 'read' | 'write' | null;
  /** The grants held on a majority of lock nodes, by token. */
  holders: RwLockHolder[];
  /** A writer waits: new reads are refused meanwhile. */
  writerWaiting: boolean;
}

/**
 * Rebuilds a lease from its lease string (kept by another process, printed by `fencelock
 * acquire`) to extend or release it; `ttlMs` is what extend() asks for by default. Shapes:
 * 'lock', 'read', 'write', 'permit' on [name] ("<token>.<proof>", "….r", "….w",
 * "….<permits>.<slot>"); 'set' on its names in any order ("<t1>,<t2>,….<proof>", tokens in
 * sorted-name order). Its deadline is unknown until an extend succeeds: valid() is false and
 * check() throws (it is not lost) till then, so extend it before relying on it or keep()ing it.
 * Sends nothing. Throws InvalidArgumentError when the string is not of the kind's shape.
 */
export declare function leaseFromString(kind: 'lock' | 'permit' | 'read' | 'write', names: readonly [string], leaseString: string, ttlMs: number): Lease;
export declare function leaseFromString(kind: 'set', names: readonly string[], leaseString: string, ttlMs: number): LockSetLease;

export declare const maxSetNames: 16;
export declare const maxPermits: 64;

/** Renews a lease in the background; declares it lost before its deadline when renewal fails. */
export declare class LeaseKeeper {
  constructor(client: Client, lease: AnyLease, options?: RenewOptions);
  readonly lease: AnyLease;
  readonly renewals: number;
  /** Stops renewing; the lease runs out at its deadline. */
  stop(): void;
  /** Stops renewing and releases: true iff the lease still held the lock. */
  release(): Promise<boolean>;
  [Symbol.asyncDispose](): Promise<void>;
}

export declare class Client {
  constructor(options?: ClientOptions);
  /**
   * Names its request (requestId) and asks again with it when an answer is lost. Rejects with
   * LockedError, UnavailableError, InvalidArgumentError, DeniedError, RateLimitedError, TransportError.
   */
  acquire(name: string, options: LockAcquireOptions): Promise<Lease>;
  /** Takes the lock whoever holds it, with a newer token (key right "admin"); never retried once maybe sent. Rejects as acquire. */
  revoke(name: string, options: RevokeOptions): Promise<Lease>;
  /** Rejects with NotHeldError (and marks the lease lost), UnavailableError, InvalidArgumentError, TransportError. */
  extend(lease: AnyLease, ttlMs?: number, options?: CallOptions & { withinMs?: number }): Promise<void>;
  /** True iff the lease still held the lock (every name of a set; the permit). Idempotent. */
  release(lease: AnyLease, options?: CallOptions): Promise<boolean>;
  /** All of `names` (1..16, distinct) or none; a token per name. Rejects as acquire. */
  acquireSet(names: string[], options: AcquireOptions): Promise<LockSetLease>;
  /** One of `permits` (1..64) permits of semaphore `name`. Rejects as acquire, and with PermitsMismatchError. */
  acquirePermit(name: string, permits: number, options: AcquireOptions): Promise<Lease>;
  semaphoreStatus(name: string, options?: CallOptions): Promise<SemaphoreStatus>;
  /** A read grant of read/write lock `name` (kind 'read'), shared with other reads; waits while a write grant holds it or a writer waits. Retried only when not sent. Rejects as acquire. */
  acquireRead(name: string, options: AcquireOptions): Promise<Lease>;
  /** A write grant (kind 'write'), alone, with a token above every earlier grant's; while it waits, new readers are kept out. Rejects as acquire. */
  acquireWrite(name: string, options: AcquireOptions): Promise<Lease>;
  /** The read/write lock's mode, holders and whether a writer waits (key right "read"). */
  rwlockStatus(name: string, options?: CallOptions): Promise<RwLockStatus>;
  status(name: string, options?: CallOptions): Promise<LockStatus>;
  /** Resolves once the lock is no longer held with `afterToken` (changed: true; at once if it is not held with it), or after waitMs unchanged (changed: false). Key right "read". */
  watch(name: string, afterToken: bigint | number, options?: WatchOptions): Promise<WatchedLock>;
  /** One page of the held locks (key right "read"); follow `next` until it is null. */
  listLocks(options?: ListOptions): Promise<LockListing>;
  /** Every held lock of a listing, page after page (listLocks). */
  iterateLocks(options?: IterateOptions): AsyncGenerator<HeldLock, void, undefined>;
  /** One page of the semaphores with a permit held (key right "read"), each as semaphoreStatus() tells it; a semaphore may be listed more than once. Follow `next` until it is null. */
  listSemaphores(options?: ListOptions): Promise<SemaphoreListing>;
  /** Every semaphore of a listing, page after page (listSemaphores). */
  iterateSemaphores(options?: IterateOptions): AsyncGenerator<ListedSemaphore, void, undefined>;
  /** One page of the read/write locks with a grant held (key right "read"), each as rwlockStatus() tells it; one may be listed more than once. Follow `next` until it is null. */
  listRwlocks(options?: ListOptions): Promise<RwLockListing>;
  /** Every read/write lock of a listing, page after page (listRwlocks). */
  iterateRwlocks(options?: IterateOptions): AsyncGenerator<ListedRwLock, void, undefined>;
  /** Draws the name's next token without a lock (a hazard: see docs/api.md). */
  nextToken(name: string, options?: CallOptions): Promise<bigint>;
  currentToken(name: string, options?: CallOptions): Promise<bigint>;
  keep(lease: AnyLease, options?: RenewOptions): LeaseKeeper;
  /** Acquire, keep renewed, run work, release (also when work throws). Rejects with LeaseLostError if the lease was lost meanwhile. */
  withLock<T>(name: string, options: WithLockOptions & { requestId?: string }, work: (lease: Lease) => Promise<T> | T): Promise<T>;
  withLockSet<T>(names: string[], options: WithLockOptions, work: (lease: LockSetLease) => Promise<T> | T): Promise<T>;
  withPermit<T>(name: string, permits: number, options: WithLockOptions, work: (lease: Lease) => Promise<T> | T): Promise<T>;
  withRead<T>(name: string, options: WithLockOptions, work: (lease: Lease) => Promise<T> | T): Promise<T>;
  withWrite<T>(name: string, options: WithLockOptions, work: (lease: Lease) => Promise<T> | T): Promise<T>;
}

export interface ErrorDetails {
  status?: number;
  requestId?: string;
  retryAfterMs?: number;
  cause?: unknown;
}

export declare class FencelockError extends Error {
  constructor(code: string, message: string, details?: ErrorDetails);
  /** The API's stable code ("locked", "not_held", "unavailable", …), "transport" or "lease_lost". */
  readonly code: string;
  /** The HTTP status, when the service answered. */
  readonly status: number | undefined;
  /** The answer's X-Request-Id: quote it when asking about a failed request. */
  readonly requestId: string | undefined;
}
export declare class LockedError extends FencelockError {
  readonly retryAfterMs: number | undefined;
}
export declare class NotHeldError extends FencelockError {}
export declare class PermitsMismatchError extends FencelockError {
  /** The semaphore's live permit count, when the service said. */
  readonly permits: number | undefined;
}
export declare class UnavailableError extends FencelockError {}
export declare class DeniedError extends FencelockError {}
export declare class RateLimitedError extends FencelockError {
  readonly retryAfterMs: number | undefined;
}
export declare class InvalidArgumentError extends FencelockError {}
export declare class TransportError extends FencelockError {}
export declare class InternalError extends FencelockError {}
export declare class LeaseLostError extends FencelockError {
  constructor(message: string, reason?: unknown);
  readonly reason: unknown;
}

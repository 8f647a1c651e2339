// Errors of the fencelock Node client. Every error a call rejects with is a FencelockError whose
// `.code` is the API's stable code (docs/api.md, "Errors"), or "transport" when no usable answer
// came back, or "lease_lost" for a lease the keeper declared lost. Subclasses tell the outcomes a
// caller handles differently apart: LockedError (wait or give up), NotHeldError (stop writing),
// UnavailableError (retry later), PermitsMismatchError, DeniedError, RateLimitedError,
// InvalidArgumentError, TransportError, InternalError.

export class FencelockError extends Error {
  /**
   * @param {string} code the API's stable error code
   * @param {string} message for people; not stable
   * @param {{status?: number, requestId?: string, retryAfterMs?: number, cause?: unknown}} [details]
   */
  constructor(code, message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = details.status;
    this.requestId = details.requestId;
  }
}

// 409 locked: another lease holds the lock. `retryAfterMs` says for how much longer when known.
export class LockedError extends FencelockError {
  constructor(code, message, details = {}) {
    super(code, message, details);
    this.retryAfterMs = details.retryAfterMs;
  }
}

// 409 not_held: the lease no longer holds the lock (expired, released or taken over).
export class NotHeldError extends FencelockError {}

// 409 permits_mismatch: the semaphore has live permits under another permit count, `permits`.
export class PermitsMismatchError extends FencelockError {
  constructor(code, message, details = {}) {
    super(code, message, details);
    this.permits = details.permits;
  }
}

// 503 unavailable: too few lock nodes, or the token source, answered. Retry later.
export class UnavailableError extends FencelockError {}

// 401 unauthenticated / 403 forbidden: no API key, an unknown one, or one without the right.
export class DeniedError extends FencelockError {}

// 429 rate_limited / quota_exceeded: `retryAfterMs` says when a request will pass.
export class RateLimitedError extends FencelockError {
  constructor(code, message, details = {}) {
    super(code, message, details);
    this.retryAfterMs = details.retryAfterMs;
  }
}

// 400 / 413 from the service, or an argument the client refused before sending.
export class InvalidArgumentError extends FencelockError {}

// No usable answer: connection refused, timed out, or broke; every endpoint was tried.
export class TransportError extends FencelockError {}

// 500, 404/405 (a client and service that disagree about the API), or an unreadable answer.
export class InternalError extends FencelockError {}

// The lease was lost while work ran under it: `reason` is the error that made the keeper give up
// (a NotHeldError when an extend was refused; the last renewal error when the deadline came near).
export class LeaseLostError extends FencelockError {
  constructor(message, reason) {
    super('lease_lost', message, { cause: reason });
    this.reason = reason;
  }
}

const byCode = {
  locked: LockedError,
  not_held: NotHeldError,
  permits_mismatch: PermitsMismatchError,
  unavailable: UnavailableError,
  unauthenticated: DeniedError,
  forbidden: DeniedError,
  rate_limited: RateLimitedError,
  quota_exceeded: RateLimitedError,
  invalid_request: InvalidArgumentError,
  payload_too_large: InvalidArgumentError,
  plain_http_on_tls_port: InvalidArgumentError,
};

// The error for a non-2xx answer, by its code, falling back to the status.
export function errorFromAnswer(status, code, message, details) {
  let Class = byCode[code];
  if (!Class) {
    if (status === 503) Class = UnavailableError;
    else if (status === 401 || status === 403) Class = DeniedError;
    else if (status === 429) Class = RateLimitedError;
    else if (status === 400 || status === 413) Class = InvalidArgumentError;
    else Class = InternalError;
    code = code || `http_${status}`;
  }
  return new Class(code, message, { status, ...details });
}

// fencelock: a client for fencelockd's HTTP API v1 (docs/api.md). See README.md.
export { Client } from './src/client.js';
export { maxPermits, maxSetNames } from './src/checks.js';
export { Lease } from './src/lease.js';
export { leaseFromString } from './src/lease_from_string.js';
export { LeaseKeeper } from './src/keeper.js';
export {
  FencelockError,
  LockedError,
  NotHeldError,
  PermitsMismatchError,
  UnavailableError,
  DeniedError,
  RateLimitedError,
  InvalidArgumentError,
  TransportError,
  InternalError,
  LeaseLostError,
} from './src/errors.js';

// The checks the client and leaseFromString share, made before anything is sent: lock names as
// the service takes them (docs/api.md) and the service's bounds.
import { InvalidArgumentError } from './errors.js';

const namePattern = /^[A-Za-z0-9._:-]{1,200}$/;
// Names in one lock set, permits of one semaphore.
export const maxSetNames = 16;
export const maxPermits = 64;

export function checkInteger(what, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError('invalid_request', `${what}: an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

export function checkName(name) {
  if (typeof name !== 'string' || !namePattern.test(name) || name === '.' || name === '..') {
    throw new InvalidArgumentError('invalid_request', 'name: 1 to 200 characters from [A-Za-z0-9._:-], not "." or ".."');
  }
}

// A lease rebuilt from its lease string (the C++ SDK's lease_from_string), so that a process that
// holds only the string — kept by another process, printed by `fencelock acquire` — can extend or
// release it. The string's shape is checked here, not its proof (the service does):
//   - 'lock':   [name], "<token>.<proof>";
//   - 'set':    the names in any order (1..16, distinct), "<t1>,<t2>,....<proof>" with one token
//               per name in sorted-name order;
//   - 'permit': [name], "<token>.<proof>.<permits>.<slot>", slot < permits <= 64;
//   - 'read', 'write': [name], "<token>.<proof>.r" or "<token>.<proof>.w" (as the kind).
import { performance } from 'node:perf_hooks';

import { checkInteger, checkName, maxPermits, maxSetNames } from './checks.js';
import { InvalidArgumentError } from './errors.js';
import { Lease } from './lease.js';
import { maxToken } from './token_json.js';

// How many '.'-separated parts a lease string of each kind has.
const partsByKind = { lock: 2, set: 2, permit: 4, read: 3, write: 3 };

/**
 * Rebuilds the lease of `kind` on `names` from `leaseString`; `ttlMs` is what extend() asks for by
 * default. The tokens (and a permit's permits and slot) are read from the string. Its deadline is
 * unknown until an extend succeeds: till then valid() is false and check() throws (not lost), so
 * extend it before relying on it or passing it to keep() — or only release it. Sends nothing.
 * Throws InvalidArgumentError: an unknown kind, a bad or duplicate name, a string not of this
 * kind's shape, a token count that does not match the names.
 */
export function leaseFromString(kind, names, leaseString, ttlMs) {
  const parts = partsByKind[kind];
  if (parts === undefined) throw invalid(`kind: one of ${Object.keys(partsByKind).join(', ')}`);
  const most = kind === 'set' ? maxSetNames : 1;
  if (!Array.isArray(names) || names.length < 1 || names.length > most) {
    throw invalid(kind === 'set' ? `names: 1 to ${maxSetNames} lock names` : `names: [name], for a ${kind}`);
  }
  names.forEach(checkName);
  const sorted = [...names].sort();
  if (new Set(sorted).size !== sorted.length) throw invalid('names: must be distinct');
  checkInteger('ttlMs', ttlMs, 1, Number.MAX_SAFE_INTEGER);

  const fields = typeof leaseString === 'string' ? leaseString.split('.') : [];
  if (fields.length !== parts || !/^[0-9a-fA-F]+$/.test(fields[1])) throw invalid(`not a ${kind}'s lease string`);
  const tokens = fields[0].split(',').map(positiveDecimal);
  if (tokens.some((t) => t === undefined || t > maxToken)) throw invalid(`not a ${kind}'s lease string (its tokens)`);
  if (tokens.length !== names.length) {
    throw invalid(`the lease string holds ${tokens.length} token(s) for ${names.length} name(s)`);
  }
  const deadline = performance.now();
  if (kind === 'set') {
    const byName = Object.fromEntries(sorted.map((name, i) => [name, tokens[i]]));
    return new Lease('', leaseString, undefined, ttlMs, deadline, { tokens: byName, rebuilt: true });
  }
  const grant = { rebuilt: true };
  if (kind === 'permit') {
    const permits = positiveDecimal(fields[2]);
    const slot = fields[3] === '0' ? 0n : positiveDecimal(fields[3]);
    if (permits === undefined || slot === undefined || permits > BigInt(maxPermits) || slot >= permits) {
      throw invalid("not a permit's lease string (its permits or slot)");
    }
    Object.assign(grant, { permits: Number(permits), slot: Number(slot) });
  } else if (kind === 'read' || kind === 'write') {
    if (fields[2] !== kind[0]) throw invalid(`not a ${kind}'s lease string (its mode)`);
    grant.mode = kind;
  }
  return new Lease(names[0], leaseString, tokens[0], ttlMs, deadline, grant);
}

// A decimal without leading zeros, from 1; undefined otherwise.
function positiveDecimal(text) {
  return /^[1-9][0-9]{0,19}$/.test(text) ? BigInt(text) : undefined;
}

function invalid(message) {
  return new InvalidArgumentError('invalid_request', message);
}

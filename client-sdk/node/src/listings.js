// The listings — GET /v1/locks, /v1/semaphores and /v1/rwlocks ?prefix=P&limit=N&cursor=C
// (docs/api.md) — and the status answers their entries repeat. No I/O: the Client sends.
//
// The three listings page alike: a page is a bounded scan of the lock nodes, so it may hold fewer
// entries than `limit` (even none) and still have a `next`, the cursor of the following page (null
// once the listing is complete); each is safe to repeat. They differ only in their route, the
// field that holds their entries and how one entry is read: a listing is a row of `listings`, not
// a copy of the paging.
import { checkInteger } from './checks.js';
import { InternalError, InvalidArgumentError } from './errors.js';

// The largest page the service answers.
const maxListLimit = 1000;

// `what` names the Client's call in errors.
export const listings = {
  locks: { what: 'listLocks', route: '/v1/locks', entry: heldLock },
  semaphores: { what: 'listSemaphores', route: '/v1/semaphores', entry: listedSemaphore },
  rwlocks: { what: 'listRwlocks', route: '/v1/rwlocks', entry: listedRwlock },
};

// The path of one page of `field`'s listing, its query checked (before anything is sent) and
// encoded.
export function pagePath(field, { prefix = '', limit = 100, cursor }) {
  if (typeof prefix !== 'string') throw new InvalidArgumentError('invalid_request', 'prefix: a string');
  checkInteger('limit', limit, 1, maxListLimit);
  if (cursor !== undefined && cursor !== null && (typeof cursor !== 'string' || cursor === '')) {
    throw new InvalidArgumentError('invalid_request', "cursor: a page's next, or null for the first page");
  }
  let query = `limit=${limit}`;
  if (prefix !== '') query += `&prefix=${encodeURIComponent(prefix)}`;
  if (cursor) query += `&cursor=${encodeURIComponent(cursor)}`;
  return `${listings[field].route}?${query}`;
}

// One page of `field`'s listing as the Client resolves it: {[field]: entries, next}.
export function readPage(field, answer) {
  const { what, entry } = listings[field];
  const next = answer.next ?? null;
  if (!Array.isArray(answer[field]) || (next !== null && typeof next !== 'string')) {
    throw new InternalError('internal', `${what}: the answer lacks its ${field} array or next`);
  }
  return { [field]: answer[field].map(entry), next };
}

// Every entry of a listing: `page(cursor)` resolves one page of `field`, from the first (cursor
// null) until one has no next.
export async function* everyEntry(field, page) {
  let cursor = null;
  do {
    const answer = await page(cursor);
    yield* answer[field];
    cursor = answer.next;
  } while (cursor !== null);
}

// A semaphore's status as GET /v1/semaphores/{name} and each entry of its listing word it.
export function semaphoreState(what, answer) {
  if (!Number.isSafeInteger(answer.permits) || !Number.isSafeInteger(answer.held)) {
    throw new InternalError('internal', `${what}: the answer lacks permits or held`);
  }
  return { permits: answer.permits, held: answer.held };
}

// A read/write lock's status as GET /v1/rwlocks/{name} and each entry of its listing word it.
export function rwlockState(what, answer) {
  const mode = answer.mode ?? null;
  if ((mode !== null && mode !== 'read' && mode !== 'write') || !Array.isArray(answer.holders) ||
      typeof answer.writer_waiting !== 'boolean') {
    throw new InternalError('internal', `${what}: the answer is not a read/write lock's status`);
  }
  return { mode, holders: answer.holders.map((holder) => rwHolder(what, holder)), writerWaiting: answer.writer_waiting };
}

function heldLock(lock) {
  if (lock === null || typeof lock !== 'object' || typeof lock.name !== 'string' ||
      !Number.isSafeInteger(lock.remaining_ms) || lock.remaining_ms < 0) {
    throw new InternalError('internal', 'listLocks: a listed lock lacks its name or remaining_ms');
  }
  const token = lock.token ?? null;
  if (token !== null) positiveToken('listLocks', token);
  return { name: lock.name, token, owner: ownerOf('listLocks: a listed lock', lock), remainingMs: lock.remaining_ms };
}

function listedSemaphore(semaphore) {
  return { name: listedName('listSemaphores', semaphore), ...semaphoreState('listSemaphores', semaphore) };
}

function listedRwlock(rwlock) {
  return { name: listedName('listRwlocks', rwlock), ...rwlockState('listRwlocks', rwlock) };
}

function listedName(what, entry) {
  if (entry === null || typeof entry !== 'object' || typeof entry.name !== 'string') {
    throw new InternalError('internal', `${what}: a listed entry lacks its name`);
  }
  return entry.name;
}

function rwHolder(what, holder) {
  if (holder === null || typeof holder !== 'object' || !Number.isSafeInteger(holder.remaining_ms) ||
      holder.remaining_ms < 0) {
    throw new InternalError('internal', `${what}: a holder lacks its remaining_ms`);
  }
  return {
    token: positiveToken(what, holder.token), owner: ownerOf(`${what}: a holder`, holder), remainingMs: holder.remaining_ms,
  };
}

function ownerOf(whose, entry) {
  const owner = entry.owner ?? null;
  if (owner !== null && typeof owner !== 'string') {
    throw new InternalError('internal', `${whose} holds an owner that is not a string`);
  }
  return owner;
}

function positiveToken(what, token) {
  if (typeof token !== 'bigint' || token <= 0n) throw new InternalError('internal', `${what}: the answer lacks a token`);
  return token;
}

// Type check of index.d.ts and postgres.d.ts (tsc --noEmit; never run).
import {
  Client, Lease, LockedError, leaseFromString, LeaseLostError, FencelockError, PermitsMismatchError, maxPermits, maxSetNames,
  type HeldLock, type LockListing, type RwLockStatus, type SemaphoreStatus, type WatchedLock,
  type ListedSemaphore, type SemaphoreListing, type ListedRwLock, type RwLockListing,
} from 'fencelock';
import { guardedUpdate, fenceRead, FencedTable, TokenRule, type Queryable } from 'fencelock/postgres';

declare const db: Queryable;

export async function usage(): Promise<bigint> {
  const client = new Client({ endpoints: ['http://127.0.0.1:8080'], apiKey: 'k', timeouts: { requestMs: 2000 } });
  try {
    const lease: Lease = await client.acquire('invoice-42', { ttlMs: 30000, waitMs: 5000 });
    await client.extend(lease, 30000);
    const released: boolean = await client.release(lease);
    void released;
  } catch (error) {
    if (error instanceof LockedError) console.log(error.retryAfterMs);
    else if (error instanceof FencelockError) console.log(error.code);
  }
  const status = await client.status('invoice-42');
  const remaining: number | null = status.remainingMs;
  const holderToken: bigint | null = status.token;
  const holder: string | null = status.owner;
  const watched: WatchedLock = await client.watch('invoice-42', holderToken ?? 0n, { waitMs: 30000 });
  const changed: boolean = watched.changed;
  void changed;
  const revoked: Lease = await client.revoke('invoice-42', { ttlMs: 30000, owner: 'ops-oncall' });
  const again: Lease = await client.acquire('invoice-43', { ttlMs: 30000, requestId: 'job-7' });
  const page: LockListing = await client.listLocks({ prefix: 'invoice-', limit: 10, cursor: null });
  const next: string | null = page.next;
  for await (const held of client.iterateLocks({ prefix: 'invoice-', pageSize: 50 })) {
    const listed: HeldLock = held;
    const listedToken: bigint | null = listed.token;
    const listedOwner: string | null = listed.owner;
    void listedToken, listedOwner;
  }
  void remaining, holderToken, holder, revoked, again, next;
  return client.withLock('invoice-42', { ttlMs: 1000, renew: { renewWhenLeft: 0.5 } }, async (lease) => {
    lease.on('lost', (reason: LeaseLostError) => console.log(reason.code));
    lease.signal.throwIfAborted();
    lease.check();
    const written = await guardedUpdate(db, { table: 'accounts', key: 'alice', token: lease.token, values: { balance: 1 } });
    const fenced = await fenceRead(db, { table: 'accounts', key: 'alice', token: lease.token, rule: TokenRule.newerOrSame });
    const table = await FencedTable.open(db, { table: 'accounts' });
    const current: bigint | null = await table.currentToken('alice');
    await table.update('alice', { balance: 2 }, lease.token, { rule: TokenRule.newerOrSame, callerCommits: true });
    await fenceRead(db, { table: 'accounts', key: 'alice', token: lease.token, callerCommits: false });
    void current;
    return written.applied && fenced.outcome === 'applied' ? lease.token : 0n;
  });
}

// Lock sets and semaphore permits.
async function setsAndPermits(client: Client): Promise<void> {
  const set = await client.acquireSet(['a', 'b'], { ttlMs: 1000 });
  const kind: 'set' = set.kind;
  const tokenOfA: bigint | undefined = set.tokens['a'];
  const none: undefined = set.token;
  await client.extend(set, 2000);
  const setReleased: boolean = await client.release(set);
  const permit = await client.acquirePermit('workers', 3, { ttlMs: 1000, waitMs: 500 });
  const slot: number | undefined = permit.slot;
  const permitToken: bigint = permit.token;
  const status: SemaphoreStatus = await client.semaphoreStatus('workers');
  await client.withLockSet(['a', 'b'], { ttlMs: 1000 }, async (lease) => lease.tokens['b']);
  await client.withPermit('workers', 3, { ttlMs: 1000 }, async (lease) => lease.slot);
  client.keep(set).stop();
  try {
    await client.acquirePermit('workers', 5, { ttlMs: 1000 });
  } catch (error) {
    if (error instanceof PermitsMismatchError) console.log(error.permits);
  }
  const semaphores: SemaphoreListing = await client.listSemaphores({ prefix: 'work', limit: 10, cursor: null });
  for await (const semaphore of client.iterateSemaphores({ prefix: 'work', pageSize: 50 })) {
    const listed: ListedSemaphore = semaphore;
    const counts: [string, number, number] = [listed.name, listed.permits, listed.held];
    void counts;
  }
  console.log(kind, tokenOfA, none, setReleased, slot, permitToken, status, semaphores.next, maxSetNames, maxPermits);
}
void setsAndPermits;

// Read/write locks.
async function readWrite(client: Client): Promise<bigint> {
  const reader: Lease = await client.acquireRead('doc', { ttlMs: 1000, waitMs: 500, owner: 'report-7' });
  const kind: 'lock' | 'permit' | 'read' | 'write' = reader.kind;
  await client.extend(reader, 2000);
  const released: boolean = await client.release(reader);
  const status: RwLockStatus = await client.rwlockStatus('doc');
  const mode: 'read' | 'write' | null = status.mode;
  const firstToken: bigint | undefined = status.holders[0]?.token;
  const firstOwner: string | null | undefined = status.holders[0]?.owner;
  const waiting: boolean = status.writerWaiting;
  client.keep(await client.acquireWrite('doc', { ttlMs: 1000 })).stop();
  const rebuilt: Lease = leaseFromString('read', ['doc'], reader.leaseString(), 1000);
  await client.extend(rebuilt);
  const set = leaseFromString('set', ['a', 'b'], '1,2.00ff', 1000);
  const setKind: 'set' = set.kind;
  void setKind;
  await client.withRead('doc', { ttlMs: 1000, renew: { renewWhenLeft: 0.5 } }, async (lease) => lease.token);
  const rwlocks: RwLockListing = await client.listRwlocks({ prefix: 'doc', limit: 10 });
  for await (const rwlock of client.iterateRwlocks({ prefix: 'doc', pageSize: 50, signal: AbortSignal.timeout(1000) })) {
    const listed: ListedRwLock = rwlock;
    const listedToken: bigint | undefined = listed.holders[0]?.token;
    const listedMode: 'read' | 'write' | null = listed.mode;
    console.log(listed.name, listedToken, listedMode, listed.writerWaiting);
  }
  console.log(kind, released, mode, firstToken, firstOwner, waiting, rwlocks.next);
  return client.withWrite('doc', { ttlMs: 1000, waitMs: 500 }, async (lease) => lease.token);
}
void readWrite;

// Lock sets (several names under one lease) and semaphore permits against a live fencelockd.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';

import {
  Client, InvalidArgumentError, LockedError, PermitsMismatchError, maxPermits, maxSetNames,
} from 'fencelock';

import { fencelockUrl, sleep, uniqueName } from './support.js';

const client = new Client({ endpoints: [fencelockUrl] });

describe('lock sets', () => {
  it('refuses bad sets before sending anything', async () => {
    for (const names of [[], 'ab', ['a', 'a'], ['a', 'b/c'], Array.from({ length: maxSetNames + 1 }, (_, i) => `n${i}`)]) {
      await assert.rejects(client.acquireSet(names, { ttlMs: 1000 }), InvalidArgumentError, JSON.stringify(names));
    }
  });

  it('takes all names or none, with a token per name, and extends and releases them together', async () => {
    const prefix = uniqueName('set');
    const [a, b, c] = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
    const lease = await client.acquireSet([b, a], { ttlMs: 5000 });
    assert.equal(lease.kind, 'set');
    assert.deepEqual([...lease.names], [a, b]);
    assert.equal(lease.token, undefined);
    assert.equal(typeof lease.tokens[a], 'bigint');
    assert.ok(!inspect(lease).includes(lease.leaseString()) && !JSON.stringify(lease).includes(lease.leaseString()));
    for (const name of [a, b]) {
      assert.equal((await client.status(name)).held, true);
      assert.equal(await client.currentToken(name), lease.tokens[name]);
    }
    await assert.rejects(client.acquireSet([c, b], { ttlMs: 5000 }), LockedError);
    assert.equal((await client.status(c)).held, false, 'a refused set takes nothing');
    await assert.rejects(client.acquire(a, { ttlMs: 5000 }), LockedError);

    const before = lease.deadline;
    await client.extend(lease, 10000);
    assert.ok(lease.deadline > before + 3000);
    assert.equal(await client.release(lease), true);
    assert.equal((await client.status(a)).held, false);
    const again = await client.acquireSet([a, b, c], { ttlMs: 5000 });
    assert.ok(again.tokens[a] > lease.tokens[a] && again.tokens[b] > lease.tokens[b], 'tokens increase');
    assert.equal(await client.release(again), true);
  });

  it('withLockSet keeps the set renewed and releases it', async () => {
    const prefix = uniqueName('set-with');
    const names = [`${prefix}-x`, `${prefix}-y`];
    const tokens = await client.withLockSet(names, { ttlMs: 500 }, async (lease) => {
      await sleep(1200);  // past the ttl: renewed in the background
      lease.check();
      return lease.tokens;
    });
    assert.equal(Object.keys(tokens).length, 2);
    assert.equal((await client.status(names[0])).held, false);
  });
});

describe('semaphores', () => {
  it('grants at most N permits, refuses another count while live, and frees a released one', async () => {
    const name = uniqueName('semaphore');
    await assert.rejects(client.acquirePermit(name, maxPermits + 1, { ttlMs: 1000 }), InvalidArgumentError);
    const permits = [];
    for (let i = 0; i < 3; ++i) permits.push(await client.acquirePermit(name, 3, { ttlMs: 5000 }));
    assert.deepEqual(permits.map((p) => p.slot).sort(), [0, 1, 2]);
    assert.ok(permits.every((p) => p.kind === 'permit' && p.permits === 3 && typeof p.token === 'bigint'));
    await assert.rejects(client.acquirePermit(name, 3, { ttlMs: 5000 }), LockedError);
    await assert.rejects(client.acquirePermit(name, 5, { ttlMs: 5000 }), (error) => {
      assert.ok(error instanceof PermitsMismatchError);
      assert.equal(error.permits, 3);
      return true;
    });
    assert.deepEqual(await client.semaphoreStatus(name), { permits: 3, held: 3 });
    await client.extend(permits[0], 10000);
    assert.equal(await client.release(permits[1]), true);
    const fourth = await client.acquirePermit(name, 3, { ttlMs: 5000 });
    assert.equal(fourth.slot, permits[1].slot);
    assert.ok(permits.every((p) => fourth.token > p.token), 'tokens increase');
    for (const lease of [permits[0], permits[2], fourth]) assert.equal(await client.release(lease), true);
    assert.equal((await client.semaphoreStatus(name)).held, 0);
  });

  it('wakes a waiter of a full semaphore when a permit is released', async () => {
    const name = uniqueName('semaphore-wait');
    const only = await client.acquirePermit(name, 1, { ttlMs: 10000 });
    setTimeout(() => { client.release(only); }, 300);
    const started = performance.now();
    const lease = await client.withPermit(name, 1, { ttlMs: 2000, waitMs: 5000 }, async (l) => l);
    assert.ok(performance.now() - started < 4000, 'woken by the release');
    assert.ok(lease.token > only.token);
  });
});

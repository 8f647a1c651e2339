// The semaphore and read/write lock listings (GET /v1/semaphores, GET /v1/rwlocks): how a page is
// asked for and read (against a recording server), and the pages of a live fencelockd.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';

import { Client, InvalidArgumentError } from 'fencelock';

import { fencelockUrl, httpAnswer, sparePortBase, startRecordingServer, uniqueName } from './support.js';

const semaphorePage = httpAnswer(200, '{"semaphores":[{"name":"pool-1","permits":3,"held":2},' +
  '{"name":"pool-2","permits":1,"held":1}],"next":"2-1536-0"}');
const rwlockPage = httpAnswer(200, '{"rwlocks":[{"name":"doc-1","mode":"read","holders":[' +
  '{"token":18446744073709551615,"owner":"report-7","remaining_ms":2500},{"token":18,"owner":null,"remaining_ms":0}],' +
  '"writer_waiting":true},{"name":"doc-2","mode":"write","holders":[{"token":4,"owner":null,"remaining_ms":1000}],' +
  '"writer_waiting":false}],"next":null}');
const unavailable = httpAnswer(503, '{"error":{"code":"unavailable","message":"too few lock nodes"}}');
const listedSemaphores = [{ name: 'pool-1', permits: 3, held: 2 }, { name: 'pool-2', permits: 1, held: 1 }];
const listedRwlocks = [
  {
    name: 'doc-1', mode: 'read', writerWaiting: true,
    holders: [{ token: 18446744073709551615n, owner: 'report-7', remainingMs: 2500 }, { token: 18n, owner: null, remainingMs: 0 }],
  },
  { name: 'doc-2', mode: 'write', writerWaiting: false, holders: [{ token: 4n, owner: null, remainingMs: 1000 }] },
];

describe('a semaphore or read/write lock listing page', () => {
  it('is asked for with its query values encoded, and read with exact tokens and null owners', async () => {
    const server = await startRecordingServer([semaphorePage, rwlockPage]);
    try {
      const client = new Client({ endpoints: [server.url] });
      assert.deepEqual(await client.listSemaphores({ prefix: 'pool-', limit: 2, cursor: '1-0+x y' }),
        { semaphores: listedSemaphores, next: '2-1536-0' });
      assert.deepEqual(await client.listRwlocks(), { rwlocks: listedRwlocks, next: null });
      assert.deepEqual(server.targets, ['/v1/semaphores?limit=2&prefix=pool-&cursor=1-0%2Bx%20y', '/v1/rwlocks?limit=100']);
    } finally {
      await server.close();
    }
  });

  it('is asked again after a 503, as the lock listing is', async () => {
    const server = await startRecordingServer([unavailable, semaphorePage, unavailable, rwlockPage]);
    try {
      const client = new Client({ endpoints: [server.url], retryBackoffMs: 1 });
      assert.deepEqual((await client.listSemaphores()).semaphores, listedSemaphores);
      assert.deepEqual((await client.listRwlocks()).rwlocks, listedRwlocks);
      assert.equal(server.targets.length, 4);
    } finally {
      await server.close();
    }
  });

  it('is refused before sending when its limit, prefix or cursor is bad', async () => {
    const client = new Client({ endpoints: [`http://127.0.0.1:${sparePortBase + 9}`] });
    const bad = [{ limit: 0 }, { limit: 1001 }, { limit: 1.5 }, { limit: '10' }, { prefix: 7 }, { cursor: '' }];
    for (const options of bad) {
      await assert.rejects(client.listSemaphores(options), InvalidArgumentError, JSON.stringify(options));
      await assert.rejects(client.listRwlocks(options), InvalidArgumentError, JSON.stringify(options));
    }
  });
});

describe('the semaphore and read/write lock listings of a live fencelockd', () => {
  const client = new Client({ endpoints: [fencelockUrl] });
  const leases = [];
  after(async () => {
    for (const lease of leases) await client.release(lease);
  });

  // Two permits of a 3-permit semaphore and one of a 1-permit one under `prefix`, and one outside
  // it: resolves what the listing of the prefix should show, name → [permits, held].
  async function holdSemaphores(prefix) {
    for (const [name, permits, count] of [['a', 3, 2], ['b', 1, 1]]) {
      for (let i = 0; i < count; ++i) leases.push(await client.acquirePermit(prefix + name, permits, { ttlMs: 30000 }));
    }
    leases.push(await client.acquirePermit(`${prefix.slice(0, -1)}-other`, 2, { ttlMs: 30000 }));
    return new Map([[`${prefix}a`, [3, 2]], [`${prefix}b`, [1, 1]]]);
  }

  // Two read grants of one read/write lock and the write grant of another under `prefix`, and a
  // read grant outside it: name → [mode, holders sorted by token, writerWaiting].
  async function holdRwlocks(prefix) {
    const first = await client.acquireRead(`${prefix}r`, { ttlMs: 30000, owner: 'node-reader' });
    const second = await client.acquireRead(`${prefix}r`, { ttlMs: 30000 });
    const writer = await client.acquireWrite(`${prefix}w`, { ttlMs: 30000, owner: 'node-writer' });
    leases.push(first, second, writer, await client.acquireRead(`${prefix.slice(0, -1)}-other`, { ttlMs: 30000 }));
    return new Map([
      [`${prefix}r`, ['read', sortedHolders([[first.token, 'node-reader'], [second.token, null]]), false]],
      [`${prefix}w`, ['write', [[writer.token, 'node-writer']], false]],
    ]);
  }

  it('pages through the held semaphores of a prefix, one per page', async () => {
    const prefix = `${uniqueName('sem-list')}.`;
    const held = await holdSemaphores(prefix);
    const listed = new Map();
    let cursor = null;
    for (let pages = 0; pages < 100; ++pages) {
      const page = await client.listSemaphores({ prefix, limit: 1, cursor });
      for (const semaphore of page.semaphores) listed.set(semaphore.name, [semaphore.permits, semaphore.held]);
      cursor = page.next;
      if (cursor === null) break;
    }
    assert.equal(cursor, null, 'the listing ends');
    assert.deepEqual(listed, held);
    const iterated = new Map();
    for await (const semaphore of client.iterateSemaphores({ prefix, pageSize: 1 })) {
      iterated.set(semaphore.name, [semaphore.permits, semaphore.held]);
    }
    assert.deepEqual(iterated, held);
  });

  it('pages through the held read/write locks of a prefix, one per page', async () => {
    const prefix = `${uniqueName('rw-list')}.`;
    const held = await holdRwlocks(prefix);
    const listed = new Map();
    let cursor = null;
    for (let pages = 0; pages < 100; ++pages) {
      const page = await client.listRwlocks({ prefix, limit: 1, cursor });
      for (const rwlock of page.rwlocks) {
        assert.ok(rwlock.holders.every((h) => h.remainingMs > 0 && h.remainingMs <= 30000));
        listed.set(rwlock.name, rwEntry(rwlock));
      }
      cursor = page.next;
      if (cursor === null) break;
    }
    assert.equal(cursor, null, 'the listing ends');
    assert.deepEqual(listed, held);
    const iterated = new Map();
    for await (const rwlock of client.iterateRwlocks({ prefix, pageSize: 1 })) iterated.set(rwlock.name, rwEntry(rwlock));
    assert.deepEqual(iterated, held);
  });

  it('lists nothing under a prefix nothing is held under, nor once the grants are released', async () => {
    const prefix = `${uniqueName('empty-list')}.`;
    const before = leases.length;
    await holdSemaphores(prefix);
    await holdRwlocks(prefix);
    assert.deepEqual(await collect(client.iterateSemaphores({ prefix: `${prefix}none.` })), []);
    assert.deepEqual(await collect(client.iterateRwlocks({ prefix: `${prefix}none.` })), []);
    for (const lease of leases.splice(before)) await client.release(lease);
    assert.deepEqual(await collect(client.iterateSemaphores({ prefix })), []);
    assert.deepEqual(await collect(client.iterateRwlocks({ prefix })), []);
  });
});

function rwEntry(rwlock) {
  return [rwlock.mode, sortedHolders(rwlock.holders.map((h) => [h.token, h.owner])), rwlock.writerWaiting];
}

function sortedHolders(holders) {
  return [...holders].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

async function collect(iterator) {
  const all = [];
  for await (const entry of iterator) all.push(entry);
  return all;
}

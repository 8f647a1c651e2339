// The retry rules of grants against a recording server: a lock's acquire whose answer was lost is
// asked again with the same request_id; other grants are not; a 503 is never asked again. And how
// a listing page is asked for and read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Client, InternalError, InvalidArgumentError, TransportError, UnavailableError } from 'fencelock';

import { httpAnswer, repeatedGrant, sparePortBase, startRecordingServer } from './support.js';

const closedEndpoint = `http://127.0.0.1:${sparePortBase + 9}`;

describe('asking again after a lost answer', () => {
  for (const given of [undefined, 'job-7:attempt/1']) {
    it(`asks an acquire again with the same request id (${given ?? 'generated'})`, async () => {
      const server = await startRecordingServer([null, repeatedGrant]);
      try {
        const client = new Client({ endpoints: [server.url], retryBackoffMs: 1, timeouts: { requestMs: 2000 } });
        const lease = await client.acquire('x', { ttlMs: 10000, requestId: given });
        assert.equal(lease.token, 5n);
        assert.equal(lease.leaseString(), '5.repeated');
        assert.equal(server.bodies.length, 2);
        const [first, second] = server.bodies.map((body) => body.request_id);
        assert.equal(first, second);
        if (given === undefined) assert.match(first, /^[0-9a-f]{32}$/);
        else assert.equal(first, given);
      } finally {
        await server.close();
      }
    });
  }

  it('names a request of its own for each acquire call', async () => {
    const server = await startRecordingServer([repeatedGrant]);
    try {
      const client = new Client({ endpoints: [server.url] });
      await client.acquire('x', { ttlMs: 10000 });
      await client.acquire('x', { ttlMs: 10000 });
      assert.equal(new Set(server.bodies.map((body) => body.request_id)).size, 2);
    } finally {
      await server.close();
    }
  });

  it('does not ask a lock set, a permit, a read/write grant or a revoke again once it may have arrived', async () => {
    const grants = {
      acquireSet: (c) => c.acquireSet(['a', 'b'], { ttlMs: 10000 }),
      acquirePermit: (c) => c.acquirePermit('s', 3, { ttlMs: 10000 }),
      acquireRead: (c) => c.acquireRead('d', { ttlMs: 10000 }),
      acquireWrite: (c) => c.acquireWrite('d', { ttlMs: 10000 }),
      revoke: (c) => c.revoke('x', { ttlMs: 10000 }),
    };
    for (const [what, grant] of Object.entries(grants)) {
      const server = await startRecordingServer([null]);
      try {
        const client = new Client({ endpoints: [server.url], retryBackoffMs: 1, timeouts: { requestMs: 2000 } });
        const failed = await grant(client).then(() => null, (e) => e);
        assert.ok(failed instanceof TransportError, `${what}: ${failed}`);
        assert.equal(server.bodies.length, 1, what);
        assert.equal(server.bodies[0].request_id, undefined, what);
      } finally {
        await server.close();
      }
    }
  });

  it('does not ask an acquire answered 503 again', async () => {
    const server = await startRecordingServer([
      httpAnswer(503, '{"error":{"code":"unavailable","message":"too few lock nodes"}}')]);
    try {
      const client = new Client({ endpoints: [server.url], retryBackoffMs: 1 });
      const failed = await client.acquire('x', { ttlMs: 10000 }).then(() => null, (e) => e);
      assert.ok(failed instanceof UnavailableError, String(failed));
      assert.equal(server.bodies.length, 1);
    } finally {
      await server.close();
    }
  });

  it('refuses a read/write grant in another mode than it asked for', async () => {
    const server = await startRecordingServer([httpAnswer(200,
      '{"name":"d","mode":"write","lease":"5.ab.w","token":5,"ttl_ms":1000,"validity_ms":900,"waited_ms":0}')]);
    try {
      const client = new Client({ endpoints: [server.url] });
      await assert.rejects(client.acquireRead('d', { ttlMs: 1000 }), InternalError);
    } finally {
      await server.close();
    }
  });

  it('refuses a bad request id, and one given to another grant, before sending', async () => {
    const client = new Client({ endpoints: [closedEndpoint] });
    for (const bad of ['', 'has space', 'x'.repeat(65), 'é', 7]) {
      await assert.rejects(client.acquire('ok', { ttlMs: 1000, requestId: bad }), InvalidArgumentError);
    }
    await assert.rejects(client.acquireSet(['a'], { ttlMs: 1000, requestId: 'r' }), InvalidArgumentError);
    await assert.rejects(client.acquirePermit('s', 2, { ttlMs: 1000, requestId: 'r' }), InvalidArgumentError);
    await assert.rejects(client.acquireWrite('d', { ttlMs: 1000, requestId: 'r' }), InvalidArgumentError);
  });
});

describe('a listing page', () => {
  it('is asked for with its query values encoded, and read with exact tokens and null owners', async () => {
    const server = await startRecordingServer([httpAnswer(200,
      '{"locks":[{"name":"inv-1","token":18446744073709551615,"owner":"billing-7","remaining_ms":2500},' +
      '{"name":"inv-2","token":null,"owner":null,"remaining_ms":0}],"next":"2-1536-0"}')]);
    try {
      const client = new Client({ endpoints: [server.url] });
      const page = await client.listLocks({ prefix: 'inv-', limit: 2, cursor: '1-0+x y' });
      assert.deepEqual(server.targets, ['/v1/locks?limit=2&prefix=inv-&cursor=1-0%2Bx%20y']);
      assert.deepEqual(page, {
        locks: [
          { name: 'inv-1', token: 18446744073709551615n, owner: 'billing-7', remainingMs: 2500 },
          { name: 'inv-2', token: null, owner: null, remainingMs: 0 },
        ],
        next: '2-1536-0',
      });
      await client.listLocks();
      assert.equal(server.targets[1], '/v1/locks?limit=100');
      for (const limit of [0, 1001, 1.5, '10']) {
        await assert.rejects(client.listLocks({ limit }), InvalidArgumentError);
      }
    } finally {
      await server.close();
    }
  });
});

describe('a watch', () => {
  it('is asked for with its token and wait, read without lastToken, and refused before sending when bad', async () => {
    const server = await startRecordingServer([httpAnswer(200,
      '{"name":"inv-1","changed":false,"held":true,"remaining_ms":2500,"token":18446744073709551615,"owner":"billing-7"}')]);
    try {
      const client = new Client({ endpoints: [server.url] });
      const bad = [['a/b', 1n, {}], ['ok', -1n, {}], ['ok', 1n << 64n, {}], ['ok', 1.5, {}], ['ok', '7', {}],
        ['ok', 1n, { waitMs: -1 }], ['ok', 1n, { waitMs: 3600001 }], ['ok', 1n, { waitMs: 0.5 }]];
      for (const [name, token, options] of bad) {
        await assert.rejects(client.watch(name, token, options), InvalidArgumentError, `${name} ${token} ${options.waitMs}`);
      }
      assert.deepEqual(server.targets, []);
      const watched = await client.watch('inv-1', 18446744073709551615n, { waitMs: 1500 });
      assert.deepEqual(server.targets, ['/v1/locks/inv-1?after_token=18446744073709551615&wait_ms=1500']);
      assert.deepEqual(watched,
        { changed: false, held: true, remainingMs: 2500, token: 18446744073709551615n, owner: 'billing-7' });
      await client.watch('inv-1', 7);
      assert.equal(server.targets[1], '/v1/locks/inv-1?after_token=7&wait_ms=30000');
    } finally {
      await server.close();
    }
  });
});

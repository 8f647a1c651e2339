// Read/write locks (any number of readers, or one writer) against a live fencelockd.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';

import { Client, InvalidArgumentError, LeaseLostError, LockedError, NotHeldError, leaseFromString } from 'fencelock';

import { eventually, fencelockUrl, sleep, uniqueName } from './support.js';

const client = new Client({ endpoints: [fencelockUrl] });

describe('read/write locks', () => {
  it('refuses bad arguments before sending anything', async () => {
    await assert.rejects(client.acquireRead('bad name', { ttlMs: 1000 }), InvalidArgumentError);
    await assert.rejects(client.acquireWrite('ok', { ttlMs: 0 }), InvalidArgumentError);
    await assert.rejects(client.acquireRead('ok', { ttlMs: 1000, requestId: 'r' }), InvalidArgumentError);
    await assert.rejects(client.rwlockStatus('..'), InvalidArgumentError);
  });

  it('grants two readers at once with distinct tokens, and shows both with their owners', async () => {
    const name = uniqueName('rw-readers');
    const first = await client.acquireRead(name, { ttlMs: 5000, owner: 'reader-1' });
    const second = await client.acquireRead(name, { ttlMs: 5000 });
    assert.equal(first.kind, 'read');
    assert.ok(first.leaseString().endsWith('.r'));
    assert.ok(second.token > first.token, 'distinct tokens, in grant order');
    assert.ok(!inspect(first).includes(first.leaseString()) && !JSON.stringify(first).includes(first.leaseString()));

    const status = await client.rwlockStatus(name);
    assert.equal(status.mode, 'read');
    assert.equal(status.writerWaiting, false);
    assert.deepEqual(status.holders.map((h) => [h.token, h.owner]), [[first.token, 'reader-1'], [second.token, null]]);
    assert.ok(status.holders.every((h) => h.remainingMs > 3000 && h.remainingMs <= 5000));
    for (const lease of [first, second]) assert.equal(await client.release(lease), true);
    assert.deepEqual(await client.rwlockStatus(name), { mode: null, holders: [], writerWaiting: false });
  });

  it('refuses a writer while readers hold, and grants it after they release with a token above theirs', async () => {
    const name = uniqueName('rw-writer');
    const readers = [await client.acquireRead(name, { ttlMs: 5000 }), await client.acquireRead(name, { ttlMs: 5000 })];
    await assert.rejects(client.acquireWrite(name, { ttlMs: 5000 }), LockedError);
    for (const lease of readers) assert.equal(await client.release(lease), true);

    const writer = await client.acquireWrite(name, { ttlMs: 5000, owner: 'writer' });
    assert.equal(writer.kind, 'write');
    assert.ok(writer.leaseString().endsWith('.w'));
    assert.ok(readers.every((r) => writer.token > r.token), 'above both readers');
    const status = await client.rwlockStatus(name);
    assert.equal(status.mode, 'write');
    assert.deepEqual(status.holders.map((h) => [h.token, h.owner]), [[writer.token, 'writer']]);
    await assert.rejects(client.acquireRead(name, { ttlMs: 5000 }), LockedError);
    await assert.rejects(client.acquireWrite(name, { ttlMs: 5000 }), LockedError);
    assert.equal(await client.release(writer), true);
  });

  it('keeps new readers out while a writer waits, and lets the writer in when the reader releases', async () => {
    const name = uniqueName('rw-waiting');
    const reader = await client.acquireRead(name, { ttlMs: 10000 });
    const waiting = client.acquireWrite(name, { ttlMs: 5000, waitMs: 5000 });
    assert.ok(await eventually(async () => (await client.rwlockStatus(name)).writerWaiting, 3000),
      'the status shows the writer waiting');
    await assert.rejects(client.acquireRead(name, { ttlMs: 5000 }), LockedError);
    assert.equal(await client.release(reader), true);
    const writer = await waiting;
    assert.ok(writer.token > reader.token);
    assert.equal((await client.rwlockStatus(name)).writerWaiting, false);
    assert.equal(await client.release(writer), true);
    const after = await client.acquireRead(name, { ttlMs: 5000 });
    assert.ok(after.token > writer.token, 'readers come back once the writer is done');
    assert.equal(await client.release(after), true);
  });

  it('extends and releases read and write grants; a released grant is not held', async () => {
    const name = uniqueName('rw-extend');
    for (const acquire of [(n, o) => client.acquireRead(n, o), (n, o) => client.acquireWrite(n, o)]) {
      const lease = await acquire(name, { ttlMs: 2000 });
      const before = lease.deadline;
      await client.extend(lease, 10000);
      assert.equal(lease.ttlMs, 10000);
      assert.ok(lease.deadline > before + 5000, `${lease.kind}: the deadline moved`);
      assert.ok((await client.rwlockStatus(name)).holders[0].remainingMs > 8000, `${lease.kind}: extended on the nodes`);
      assert.equal(await client.release(lease), true);
      assert.equal(await client.release(lease), false, `${lease.kind}: release is idempotent`);
      await assert.rejects(client.extend(lease, 1000), NotHeldError);
      assert.ok(lease.lost);
    }
  });

  it('rebuilds a read or write grant from its lease string, bound to its mode, to extend and release it', async () => {
    const name = uniqueName('rw-string');
    const reader = await client.acquireRead(name, { ttlMs: 5000 });
    assert.throws(() => leaseFromString('write', [name], reader.leaseString(), 8000), InvalidArgumentError);
    const rebuilt = leaseFromString('read', [name], reader.leaseString(), 8000);
    assert.deepEqual([rebuilt.kind, rebuilt.token, rebuilt.leaseString()], ['read', reader.token, reader.leaseString()]);
    assert.throws(() => rebuilt.check(), LeaseLostError, 'not known to hold until extended');
    await client.extend(rebuilt);
    assert.ok(rebuilt.valid() && rebuilt.remainingMs() > 6000);
    rebuilt.check();
    assert.ok((await client.rwlockStatus(name)).holders[0].remainingMs > 6000, 'the same grant, extended');
    assert.equal(await client.release(rebuilt), true);
    assert.equal(await client.release(reader), false, 'the same grant, released');

    const writer = await client.acquireWrite(name, { ttlMs: 5000 });
    const rebuiltWriter = leaseFromString('write', [name], writer.leaseString(), 5000);
    assert.equal(rebuiltWriter.token, writer.token);
    assert.equal(await client.release(rebuiltWriter), true);
    assert.equal((await client.rwlockStatus(name)).mode, null);
  });

  it('withRead and withWrite keep the grant renewed while work runs, and release it', async () => {
    const name = uniqueName('rw-with');
    const token = await client.withRead(name, { ttlMs: 500 }, async (lease) => {
      await sleep(1200);  // past the ttl: renewed in the background
      lease.check();
      assert.equal((await client.rwlockStatus(name)).mode, 'read');
      return lease.token;
    });
    const written = await client.withWrite(name, { ttlMs: 2000, waitMs: 1000 }, async (lease) => lease.token);
    assert.ok(written > token);
    assert.equal((await client.rwlockStatus(name)).mode, null);
  });
});

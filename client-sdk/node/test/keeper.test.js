// The lease keeper and withLock against a live fencelockd: renewal past several ttls, the lost
// signal before the deadline (a refused extend, and a service that stops answering), and release
// when the work ends, also by throwing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Client, LeaseKeeper, LeaseLostError } from 'fencelock';

import { deleteLockKeys, fencelockUrl, sleep, startSilentServer, uniqueName } from './support.js';

const client = new Client({ endpoints: [fencelockUrl] });

// Resolves with performance.now() at the moment `lease` is declared lost, or null after limitMs.
function lostAt(lease, limitMs) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), limitMs);
    lease.signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(performance.now());
    }, { once: true });
  });
}

describe('the lease keeper', () => {
  it('renews a lease past several ttls while work runs', async () => {
    const name = uniqueName('renew');
    const result = await client.withLock(name, { ttlMs: 300 }, async (lease) => {
      const token = lease.token;
      for (let i = 0; i < 6; ++i) {
        await sleep(200);
        lease.check();
        const status = await client.status(name);
        assert.equal(status.held, true, `held after ${(i + 1) * 200} ms`);
        assert.equal(status.lastToken, token);
      }
      assert.ok(lease.remainingMs() > 0);
      return token;
    });
    assert.equal(typeof result, 'bigint');
    assert.equal((await client.status(name)).held, false, 'withLock released it');
  });

  it('signals a lease taken away (its keys deleted) before the deadline', async () => {
    const name = uniqueName('taken');
    const lease = await client.acquire(name, { ttlMs: 1500 });
    const keeper = client.keep(lease);
    try {
      const events = [];
      lease.on('lost', (reason) => events.push(reason));
      await deleteLockKeys(name);
      const firedAt = await lostAt(lease, 3000);
      assert.ok(firedAt !== null, 'the lost signal fired');
      assert.ok(firedAt < lease.deadline, `fired ${Math.round(lease.deadline - firedAt)} ms before the deadline`);
      assert.equal(events.length, 1);
      assert.ok(events[0] instanceof LeaseLostError);
      assert.equal(events[0].reason.code, 'not_held');
      assert.throws(() => lease.check(), LeaseLostError);
    } finally {
      await keeper.release().catch(() => {});
    }
  });

  it('signals the loss before the deadline when the service stops answering, however slow each extend', async () => {
    const silent = await startSilentServer();
    try {
      const lease = await client.acquire(uniqueName('silent'), { ttlMs: 1000 });
      // The keeper extends through an endpoint that never answers, with a long request timeout:
      // each extend must be cut short so that the signal still comes before the deadline.
      const hung = new Client({ endpoints: [silent.url], timeouts: { requestMs: 60000 } });
      const keeper = new LeaseKeeper(hung, lease, { lostMarginMs: 150 });
      const firedAt = await lostAt(lease, 3000);
      keeper.stop();
      assert.ok(firedAt !== null, 'the lost signal fired');
      const early = lease.deadline - firedAt;
      assert.ok(early > 0, `fired ${Math.round(-early)} ms after the deadline`);
      assert.ok(early < 400, `fired ${Math.round(early)} ms before the deadline, about the margin`);
      assert.match(lease.lostReason.message, /renewal (kept failing|did not succeed in time)/);
      await client.release(lease);
    } finally {
      await silent.close();
    }
  });

  it('stops at maxRenewals and signals before the deadline', async () => {
    const lease = await client.acquire(uniqueName('bounded'), { ttlMs: 300 });
    const keeper = client.keep(lease, { maxRenewals: 2 });
    const firedAt = await lostAt(lease, 3000);
    assert.ok(firedAt !== null && firedAt < lease.deadline);
    assert.equal(keeper.renewals, 2);
    await keeper.release();
  });
});

describe('withLock', () => {
  it('releases when the work throws, and rejects with the work\'s error', async () => {
    const name = uniqueName('throws');
    const failure = new Error('the work failed');
    await assert.rejects(client.withLock(name, { ttlMs: 5000 }, async () => {
      assert.equal((await client.status(name)).held, true);
      throw failure;
    }), (error) => error === failure);
    assert.equal((await client.status(name)).held, false);
  });

  it('rejects with LeaseLostError when the lease was lost while the work ran, and passes the signal', async () => {
    const name = uniqueName('lostwork');
    let aborted = false;
    await assert.rejects(client.withLock(name, { ttlMs: 600 }, async (lease) => {
      await deleteLockKeys(name);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 2000);
        lease.signal.addEventListener('abort', () => { aborted = true; clearTimeout(timer); resolve(); }, { once: true });
      });
      return 'done';
    }), LeaseLostError);
    assert.ok(aborted, 'the work saw lease.signal abort');
  });

  it('waits for a held lock, then runs', async () => {
    const name = uniqueName('queue');
    const order = [];
    await Promise.all([
      client.withLock(name, { ttlMs: 2000, waitMs: 5000 }, async () => { order.push('a'); await sleep(100); order.push('a-done'); }),
      sleep(20).then(() => client.withLock(name, { ttlMs: 2000, waitMs: 5000 }, async () => { order.push('b'); })),
    ]);
    assert.deepEqual(order, ['a', 'a-done', 'b']);
  });

  it('releases through Symbol.asyncDispose when the runtime has it', async (t) => {
    if (!Symbol.asyncDispose) return t.skip('no Symbol.asyncDispose in this Node');
    const name = uniqueName('dispose');
    const keeper = client.keep(await client.acquire(name, { ttlMs: 5000 }));
    await keeper[Symbol.asyncDispose]();
    assert.equal((await client.status(name)).held, false);
  });
});

// The client against a live fencelockd: every endpoint, the errors that tell outcomes apart,
// endpoint fail-over and the retry rules, bounded calls, and a lease whose secret never shows.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';

import {
  Client, DeniedError, FencelockError, InvalidArgumentError, RateLimitedError, LeaseLostError, LockedError, NotHeldError, TransportError, UnavailableError,
  leaseFromString,
} from 'fencelock';

import { parseWithTokens } from '../src/token_json.js';
import { fencelockUrl, sleep, sparePortBase, startFencelockdWithoutNodes, startSilentServer, uniqueName } from './support.js';

const client = new Client({ endpoints: [fencelockUrl] });
const closedEndpoint = `http://127.0.0.1:${sparePortBase + 9}`;

describe('a lease through every endpoint', () => {
  it('acquires, reports status and tokens, extends, and releases once', async () => {
    const name = uniqueName('basic');
    const lease = await client.acquire(name, { ttlMs: 2000, owner: 'node-test' });
    assert.equal(lease.name, name);
    assert.equal(typeof lease.token, 'bigint');
    assert.ok(lease.token > 0n);
    assert.ok(lease.valid());
    assert.ok(lease.remainingMs() > 1000 && lease.remainingMs() <= 2000);

    const status = await client.status(name);
    assert.equal(status.held, true);
    assert.ok(status.remainingMs > 0 && status.remainingMs <= 2000);
    assert.equal(status.token, lease.token);
    assert.equal(status.owner, 'node-test');
    assert.equal(status.lastToken, lease.token);
    assert.equal(await client.currentToken(name), lease.token);

    const before = lease.deadline;
    await client.extend(lease, 5000);
    assert.ok(lease.deadline > before, 'an extend moves the deadline');
    assert.equal(lease.ttlMs, 5000);
    assert.equal(lease.token, (await client.status(name)).lastToken, 'an extend keeps the token');

    assert.equal(await client.release(lease), true);
    assert.equal(await client.release(lease), false, 'a second release is harmless and says so');
    assert.deepEqual(await client.status(name),
      { held: false, remainingMs: null, token: null, owner: null, lastToken: lease.token });
    assert.throws(() => lease.check(), LeaseLostError);

    const drawn = await client.nextToken(name);
    assert.ok(drawn > lease.token);
    const again = await client.acquire(name, { ttlMs: 1000 });
    assert.ok(again.token > drawn, 'a grant after a draw gets a greater token');
    await client.release(again);
  });

  it('shows a holder that sent no owner with owner null', async () => {
    const name = uniqueName('anonymous');
    const lease = await client.acquire(name, { ttlMs: 2000 });
    const status = await client.status(name);
    assert.deepEqual([status.held, status.token, status.owner], [true, lease.token, null]);
    await client.release(lease);
  });

  it('revokes a held lock with a newer token: the old lease is not held, the revoker is', async () => {
    const name = uniqueName('revoke');
    const stuck = await client.acquire(name, { ttlMs: 30000, owner: 'stuck-job' });
    const revoker = await client.revoke(name, { ttlMs: 5000, owner: 'ops-oncall' });
    assert.equal(revoker.kind, 'lock');
    assert.equal(revoker.name, name);
    assert.ok(revoker.token > stuck.token, 'a revoke draws a newer token');
    assert.equal(revoker.ttlMs, 5000);
    assert.ok(revoker.valid() && revoker.remainingMs() <= 5000);
    const refused = await client.extend(stuck, 30000).then(() => null, (e) => e);
    assert.ok(refused instanceof NotHeldError, String(refused));
    assert.equal(refused.status, 409);
    assert.ok(stuck.lost, 'the refused extend marks the revoked lease lost');
    assert.equal(await client.release(stuck), false);
    const status = await client.status(name);
    assert.deepEqual([status.held, status.token, status.owner], [true, revoker.token, 'ops-oncall']);
    await client.extend(revoker, 10000);  // a lease like any other
    assert.equal(revoker.ttlMs, 10000);
    assert.equal(await client.release(revoker), true);
    assert.equal((await client.status(name)).held, false);
  });

  it('revokes a free lock: it takes it like an acquire', async () => {
    const name = uniqueName('revoke-free');
    const before = await client.currentToken(name);
    const lease = await client.revoke(name, { ttlMs: 5000 });
    assert.ok(lease.token > before);
    const status = await client.status(name);
    assert.deepEqual([status.held, status.token, status.owner], [true, lease.token, null]);
    await assert.rejects(client.acquire(name, { ttlMs: 1000 }), LockedError);
    assert.equal(await client.keep(lease).release(), true, 'a keeper takes a revoker\'s lease');
  });

  it('answers the same grant to the same request id while it is held, and refuses another id', async () => {
    const name = uniqueName('repeat');
    const [firstId, otherId] = [uniqueName('request'), uniqueName('request')];
    const lease = await client.acquire(name, { ttlMs: 5000, requestId: firstId });
    const again = await client.acquire(name, { ttlMs: 5000, requestId: firstId });
    assert.equal(again.leaseString(), lease.leaseString());
    assert.equal(again.token, lease.token);
    await assert.rejects(client.acquire(name, { ttlMs: 5000, requestId: otherId }), LockedError);
    assert.equal(await client.release(again), true);
    const fresh = await client.acquire(name, { ttlMs: 5000, requestId: firstId });
    assert.ok(fresh.token > lease.token, 'released: the same id is a new acquire');
    assert.equal(await client.release(fresh), true);
  });

  it('lists the held locks of a prefix page by page, with their tokens and owners', async () => {
    const prefix = `${uniqueName('list')}.`;
    const leases = [];
    const held = new Map();
    for (let i = 0; i < 5; ++i) {
      const owner = i % 2 === 0 ? `node-owner-${i}` : undefined;
      const lease = await client.acquire(`${prefix}${i}`, { ttlMs: 30000, owner });
      leases.push(lease);
      held.set(lease.name, [lease.token, owner ?? null]);
    }
    leases.push(await client.acquire(`${prefix.slice(0, -1)}-other`, { ttlMs: 30000 }));
    try {
      const listed = new Map();
      let cursor = null;
      for (let pages = 0; pages < 100; ++pages) {
        const page = await client.listLocks({ prefix, limit: 2, cursor });
        for (const lock of page.locks) {
          listed.set(lock.name, [lock.token, lock.owner]);
          assert.ok(lock.remainingMs > 0 && lock.remainingMs <= 30000);
        }
        cursor = page.next;
        if (cursor === null) break;
      }
      assert.equal(cursor, null, 'the listing ends');
      assert.deepEqual(listed, held);
      const iterated = new Map();
      for await (const lock of client.iterateLocks({ prefix, pageSize: 3 })) iterated.set(lock.name, [lock.token, lock.owner]);
      assert.deepEqual(iterated, held);
    } finally {
      for (const lease of leases) await client.release(lease);
    }
  });

  it('wakes a watch of a held lock when another client releases it', async () => {
    const name = uniqueName('watch');
    const lease = await client.acquire(name, { ttlMs: 30000 });
    const other = new Client({ endpoints: [fencelockUrl] });
    const started = performance.now();
    const released = sleep(500).then(() => other.release(lease));
    const watched = await client.watch(name, lease.token, { waitMs: 20000 });
    assert.ok(performance.now() - started < 5000, 'woken by the release, not by the wait');
    assert.deepEqual(watched, { changed: true, held: false, remainingMs: null, token: null, owner: null });
    assert.equal(await released, true);
  });

  it('answers a watch whose wait runs out with the lock unchanged, beyond the request timeout', async () => {
    const name = uniqueName('watch-unchanged');
    const lease = await client.acquire(name, { ttlMs: 30000, owner: 'node-watch' });
    const quick = new Client({ endpoints: [fencelockUrl], timeouts: { requestMs: 500 } });
    const started = performance.now();
    const watched = await quick.watch(name, lease.token, { waitMs: 1500 });
    assert.ok(performance.now() - started >= 1400, 'the watch waited');
    assert.deepEqual([watched.changed, watched.held, watched.token, watched.owner], [false, true, lease.token, 'node-watch']);
    assert.ok(watched.remainingMs > 0 && watched.remainingMs <= 30000);
    assert.equal('lastToken' in watched, false);
    assert.equal(await client.release(lease), true);
  });

  it('answers a watch of another token, or of a free lock, at once', async () => {
    const name = uniqueName('watch-other');
    const started = performance.now();
    const free = await client.watch(name, 1n, { waitMs: 20000 });
    assert.deepEqual([free.changed, free.held, free.token], [true, false, null]);
    const lease = await client.acquire(name, { ttlMs: 30000 });
    const other = await client.watch(name, lease.token + 1n, { waitMs: 20000 });
    assert.deepEqual([other.changed, other.held, other.token], [true, true, lease.token]);
    assert.ok(performance.now() - started < 5000);
    assert.equal(await client.release(lease), true);
  });

  it('reports a name never drawn as token 0', async () => {
    assert.equal(await client.currentToken(uniqueName('fresh')), 0n);
  });
});

describe('errors that tell outcomes apart', () => {
  it('refuses a held lock with LockedError and says how long it stays held', async () => {
    const name = uniqueName('locked');
    const lease = await client.acquire(name, { ttlMs: 3000 });
    try {
      const refused = await client.acquire(name, { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(refused instanceof LockedError);
      assert.ok(refused instanceof FencelockError);
      assert.equal(refused.code, 'locked');
      assert.equal(refused.status, 409);
      assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 3000);
      assert.match(refused.requestId, /^[0-9a-f]{16}$/);
    } finally {
      await client.release(lease);
    }
  });

  it('waits for a held lock when asked to, and gets it when it is released', async () => {
    const name = uniqueName('wait');
    const first = await client.acquire(name, { ttlMs: 10000 });
    setTimeout(() => client.release(first), 300);
    const second = await client.acquire(name, { ttlMs: 1000, waitMs: 5000 });
    assert.ok(second.token > first.token);
    assert.ok(second.remainingMs() <= 1000);
    await client.release(second);
  });

  it('refuses an extend of an expired lease with NotHeldError, and the lease says it is lost', async () => {
    const name = uniqueName('notheld');
    const lease = await client.acquire(name, { ttlMs: 100 });
    const lost = new Promise((resolve) => lease.once('lost', resolve));
    await sleep(300);
    assert.ok((await lost) instanceof LeaseLostError, 'the deadline passing is signalled without a call');
    assert.ok(lease.signal.aborted);
    assert.ok(lease.signal.reason instanceof LeaseLostError);
    assert.throws(() => lease.check(), LeaseLostError);
    const refused = await client.extend(lease, 1000).then(() => null, (e) => e);
    assert.ok(refused instanceof NotHeldError);
    assert.equal(refused.code, 'not_held');
    assert.equal(refused.status, 409);
  });

  it('answers UnavailableError when the lock nodes are down, and does not retry an acquire', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fencelock-node-'));
    const lonely = await startFencelockdWithoutNodes(dir);
    try {
      const onlyDown = new Client({ endpoints: [lonely.url] });
      const refused = await onlyDown.acquire(uniqueName('down'), { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(refused instanceof UnavailableError, String(refused));
      assert.equal(refused.code, 'unavailable');
      assert.equal(refused.status, 503);

      // An acquire answered 503 was sent: it is not tried on the next endpoint.
      const downFirst = new Client({ endpoints: [lonely.url, fencelockUrl] });
      const notRetried = await downFirst.acquire(uniqueName('down'), { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(notRetried instanceof UnavailableError);
      // A status is safe to repeat: the 503 sends it on to the working endpoint.
      const status = await new Client({ endpoints: [lonely.url, fencelockUrl] }).status(uniqueName('down'));
      assert.equal(status.held, false);
    } finally {
      await lonely.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends the API key, and tells a refused key (DeniedError) from a rate limit (RateLimitedError)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fencelock-node-'));
    const secret = `flk_${randomBytes(32).toString('hex')}`;
    const keys = { keys: [{ id: 'node-test', secret_sha256: createHash('sha256').update(secret).digest('hex'),
      names: ['app.*'], rights: ['read'], rate: 1 }] };
    await writeFile(join(dir, 'keys.json'), JSON.stringify(keys));
    const guarded = await startFencelockdWithoutNodes(dir, ['--auth-file', join(dir, 'keys.json')]);
    try {
      const options = { endpoints: [guarded.url], maxRetries: 0 };
      const anonymous = await new Client(options).status('app.x').then(() => null, (e) => e);
      assert.ok(anonymous instanceof DeniedError, String(anonymous));
      assert.deepEqual([anonymous.code, anonymous.status], ['unauthenticated', 401]);
      const keyed = new Client({ ...options, apiKey: secret });
      const noRight = await keyed.acquire('app.x', { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(noRight instanceof DeniedError);
      assert.deepEqual([noRight.code, noRight.status], ['forbidden', 403]);
      const noAdmin = await keyed.revoke('app.x', { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(noAdmin instanceof DeniedError, String(noAdmin));
      assert.deepEqual([noAdmin.code, noAdmin.status], ['forbidden', 403]);
      // The key passed (the lock nodes are down, so the status itself is 503); the next call
      // within the second is over the key's rate.
      const first = await keyed.status('app.x').then(() => null, (e) => e);
      assert.ok(first === null || first instanceof UnavailableError, String(first));
      const limited = await keyed.status('app.x').then(() => null, (e) => e);
      assert.ok(limited instanceof RateLimitedError, String(limited));
      assert.equal(limited.code, 'rate_limited');
      assert.ok(limited.retryAfterMs > 0 && limited.retryAfterMs <= 2000);
      assert.ok(!String(limited.message).includes(secret) && !inspect(keyed).includes(secret), 'the key never shows');
    } finally {
      await guarded.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad arguments before sending, and reports the service refusing others', async () => {
    await assert.rejects(client.acquire('a/b', { ttlMs: 1000 }), InvalidArgumentError);
    await assert.rejects(client.acquire('..', { ttlMs: 1000 }), InvalidArgumentError);
    await assert.rejects(client.acquire('x', { ttlMs: 1.5 }), InvalidArgumentError);
    await assert.rejects(client.acquire('x', {}), InvalidArgumentError);
    assert.throws(() => new Client({ endpoints: ['ftp://x'] }), InvalidArgumentError);
    assert.throws(() => new Client({ endpoints: [] }), InvalidArgumentError);
    const tooShort = await client.acquire(uniqueName('short'), { ttlMs: 1 }).then(() => null, (e) => e);
    assert.ok(tooShort instanceof InvalidArgumentError);
    assert.equal(tooShort.code, 'invalid_request');
    assert.equal(tooShort.status, 400);
  });
});

describe('endpoints', () => {
  it('reads FENCELOCK_ENDPOINT and FENCELOCK_API_KEY like the CLI when not given', async () => {
    const saved = process.env.FENCELOCK_ENDPOINT;
    process.env.FENCELOCK_ENDPOINT = `${closedEndpoint}, ${fencelockUrl}`;
    try {
      assert.equal((await new Client().status(uniqueName('env'))).held, false);
      process.env.FENCELOCK_API_KEY = 'not a key';  // a space: refused as the option would be
      assert.throws(() => new Client(), InvalidArgumentError);
      assert.ok(new Client({ apiKey: '' }));  // an option wins
    } finally {
      process.env.FENCELOCK_ENDPOINT = saved;
      delete process.env.FENCELOCK_API_KEY;
    }
  });

  it('fails over from a closed endpoint, acquire included (nothing was sent)', async () => {
    const failover = new Client({ endpoints: [closedEndpoint, fencelockUrl] });
    const name = uniqueName('failover');
    const lease = await failover.acquire(name, { ttlMs: 2000 });
    assert.equal((await failover.status(name)).held, true);
    await failover.extend(lease, 2000);
    assert.equal(await failover.release(lease), true);
    const revoker = await new Client({ endpoints: [closedEndpoint, fencelockUrl] }).revoke(name, { ttlMs: 2000 });
    assert.equal(await client.release(revoker), true, 'a revoke that was not sent goes to the next endpoint');
  });

  it('reports TransportError when no endpoint answers', async () => {
    const nowhere = new Client({ endpoints: [closedEndpoint], maxRetries: 1, retryBackoffMs: 0 });
    const failed = await nowhere.status('x').then(() => null, (e) => e);
    assert.ok(failed instanceof TransportError);
    assert.equal(failed.code, 'transport');
  });

  it('bounds every call by its timeout, asks an acquire again by its request id, and no other grant', async () => {
    const silent = await startSilentServer();
    try {
      const hung = new Client({ endpoints: [silent.url], timeouts: { requestMs: 300 }, maxRetries: 1, retryBackoffMs: 0 });
      let started = performance.now();
      const timedOut = await hung.acquire(uniqueName('hung'), { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(timedOut instanceof TransportError, String(timedOut));
      assert.match(timedOut.message, /timed out/);
      assert.ok(performance.now() - started < 2000);
      // The acquire names its request: after the timeout it is asked again, at the next endpoint.
      const acquireName = uniqueName('hung');
      const failover = new Client({ endpoints: [silent.url, fencelockUrl], timeouts: { requestMs: 300 }, retryBackoffMs: 0 });
      const lease = await failover.acquire(acquireName, { ttlMs: 2000 });
      assert.equal((await client.status(acquireName)).token, lease.token);
      assert.equal(await client.release(lease), true);
      // Not a lock set: it may have been granted, and would be refused by its own grant.
      const setName = uniqueName('hung');
      const hungSet = new Client({ endpoints: [silent.url, fencelockUrl], timeouts: { requestMs: 300 }, retryBackoffMs: 0 });
      const setTimedOut = await hungSet.acquireSet([setName], { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(setTimedOut instanceof TransportError, String(setTimedOut));
      assert.equal((await client.status(setName)).held, false, 'the next endpoint was never asked');
      // Nor a revoke: a second one would revoke the first one's grant.
      const revokeName = uniqueName('hung');
      const hungRevoke = new Client({ endpoints: [silent.url, fencelockUrl], timeouts: { requestMs: 300 }, retryBackoffMs: 0 });
      const revokeTimedOut = await hungRevoke.revoke(revokeName, { ttlMs: 1000 }).then(() => null, (e) => e);
      assert.ok(revokeTimedOut instanceof TransportError, String(revokeTimedOut));
      assert.equal((await client.status(revokeName)).held, false, 'the next endpoint was never asked');

      // A status is safe to repeat: after the timeout it goes to the next endpoint.
      const other = new Client({ endpoints: [silent.url, fencelockUrl], timeouts: { requestMs: 300 }, retryBackoffMs: 0 });
      started = performance.now();
      assert.equal((await other.status(uniqueName('hung'))).held, false);
      assert.ok(performance.now() - started < 2000);
    } finally {
      await silent.close();
    }
  });
});

describe('the lease secret and 64-bit tokens', () => {
  it('never shows the lease string in toString, inspect, JSON or the own keys', async () => {
    const lease = await client.acquire(uniqueName('secret'), { ttlMs: 1000 });
    try {
      const secret = lease.leaseString();
      assert.match(secret, /^[0-9]+\./);
      const proof = secret.split('.')[1];
      for (const shown of [String(lease), `${lease}`, inspect(lease), inspect(lease, { showHidden: true, depth: 5 }),
        JSON.stringify(lease), JSON.stringify(Object.entries(lease)), Object.keys(lease).join()]) {
        assert.ok(!shown.includes(proof), `the secret shows in ${shown}`);
      }
      assert.equal(JSON.parse(JSON.stringify(lease)).token, lease.token.toString());
    } finally {
      await client.release(lease);
    }
  });

  it('keeps tokens above 2^53 exact', () => {
    const answer = parseWithTokens('{"name":"a","lease":"9007199254740993.00ff","token":9007199254740993,"ttl_ms":5}');
    assert.equal(answer.token, 9007199254740993n);
    assert.equal(answer.lease, '9007199254740993.00ff');
    assert.equal(parseWithTokens('{"held":false,"remaining_ms":null,"last_token" : 18446744073709551615}').last_token, 18446744073709551615n);
    assert.equal(parseWithTokens('{"error":{"code":"x","message":"a \\"token\\":5 in a message"}}').error.message, 'a "token":5 in a message');
    assert.throws(() => parseWithTokens('{"token":18446744073709551616}'), SyntaxError);
    assert.throws(() => parseWithTokens('{"token":1.5}'), SyntaxError);
  });
});

describe('leaseFromString', () => {
  const proof = '4f1c0e9a2b7d';

  it('reads the lease string of every kind, tokens up to 2^64 - 1, and sends nothing', () => {
    const lock = leaseFromString('lock', ['a'], `18446744073709551615.${proof}`, 1000);
    assert.deepEqual([lock.kind, lock.name, lock.token, lock.ttlMs], ['lock', 'a', 18446744073709551615n, 1000]);
    const set = leaseFromString('set', ['b', 'a'], `3,4.${proof}`, 1000);
    assert.deepEqual([set.kind, [...set.names], { ...set.tokens }], ['set', ['a', 'b'], { a: 3n, b: 4n }]);
    const permit = leaseFromString('permit', ['s'], `9.${proof}.3.0`, 1000);
    assert.deepEqual([permit.kind, permit.token, permit.permits, permit.slot], ['permit', 9n, 3, 0]);
    for (const [kind, mode] of [['read', 'r'], ['write', 'w']]) {
      const grant = leaseFromString(kind, ['d'], `7.${proof}.${mode}`, 1000);
      assert.deepEqual([grant.kind, grant.token, grant.leaseString()], [kind, 7n, `7.${proof}.${mode}`]);
      assert.equal(grant.valid(), false, 'not known to hold until extended');
      assert.equal(grant.lost, false);
      assert.throws(() => grant.check(), LeaseLostError);
    }
  });

  it('refuses a string not of its kind\'s shape, and bad names', () => {
    const refused = [
      ['lock', ['a'], `0.${proof}`], ['lock', ['a'], `01.${proof}`], ['lock', ['a'], `18446744073709551616.${proof}`],
      ['lock', ['a'], '7.not-hex'], ['lock', ['a'], `7.${proof}.r`], ['lock', ['a', 'b'], `7.${proof}`],
      ['lock', ['bad name'], `7.${proof}`], ['lock', 'a', `7.${proof}`], ['set', ['a', 'a'], `1,2.${proof}`],
      ['set', ['a', 'b'], `1.${proof}`], ['permit', ['s'], `9.${proof}.3.3`], ['permit', ['s'], `9.${proof}.65.0`],
      ['permit', ['s'], `9.${proof}.3.01`], ['read', ['d'], `9.${proof}.w`], ['write', ['d'], `9.${proof}.r`],
      ['read', ['d'], `9.${proof}`], ['rwlock', ['d'], `9.${proof}.r`], ['read', ['d'], 9],
    ];
    for (const [kind, names, string] of refused) {
      assert.throws(() => leaseFromString(kind, names, string, 1000), InvalidArgumentError, `${kind} ${names} ${string}`);
    }
    assert.throws(() => leaseFromString('lock', ['a'], `7.${proof}`, 0), InvalidArgumentError);
  });
});

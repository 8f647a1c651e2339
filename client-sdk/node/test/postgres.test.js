// fencelock/postgres against a live PostgreSQL 15 and fencelockd: Kleppmann's paused client, the
// lost read-modify-write that fenced reads prevent, placeholder rows, concurrent writers, tokens
// near 2^63, and tables that cannot be fenced.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import pg from 'pg';

import { Client, InvalidArgumentError } from 'fencelock';
import { FencedTable, SchemaError, TokenRule, fenceRead, guardedUpdate, raiseToken } from 'fencelock/postgres';

import { databaseUrl, fencelockUrl, sleep, uniqueName } from './support.js';

const client = new Client({ endpoints: [fencelockUrl] });
let db;

before(async () => {
  db = new pg.Pool({ connectionString: databaseUrl, max: 8, connectionTimeoutMillis: 5000, statement_timeout: 10000 });
  await db.query(`CREATE TABLE IF NOT EXISTS node_documents(
                    id text PRIMARY KEY, body text, current_token bigint NOT NULL DEFAULT 0)`);
  await db.query(`CREATE TABLE IF NOT EXISTS node_accounts(
                    id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, current_token bigint NOT NULL DEFAULT 0)`);
});

after(async () => {
  await db.end();
});

async function body(id) {
  return (await db.query('SELECT body FROM node_documents WHERE id = $1', [id])).rows[0]?.body;
}

describe('Kleppmann\'s paused client', () => {
  it('refuses the stale write of a client that paused past its ttl; the row holds the newer holder\'s data', async () => {
    const name = uniqueName('doc');
    const id = name;
    await db.query('INSERT INTO node_documents(id, body) VALUES ($1, $2)', [id, 'original']);

    const a = await client.acquire(name, { ttlMs: 200 });
    await sleep(400);  // A pauses (a GC pause, a stalled VM); its lease runs out
    assert.equal(a.valid(), false);

    const b = await client.acquire(name, { ttlMs: 5000, waitMs: 2000 });
    assert.ok(b.token > a.token);
    const written = await guardedUpdate(db, { table: 'node_documents', key: id, token: b.token, values: { body: 'from B' } });
    assert.equal(written.outcome, 'applied');

    // A wakes up and writes as if it still held the lock.
    const stale = await guardedUpdate(db, { table: 'node_documents', key: id, token: a.token, values: { body: 'from A' } });
    assert.equal(stale.outcome, 'stale');
    assert.equal(stale.applied, false);
    assert.equal(stale.currentToken, b.token);
    assert.equal(await body(id), 'from B');
    await client.release(b);
  });

  it('keeps a read-modify-write whole with fenced reads: the paused reader\'s write is refused', async () => {
    const name = uniqueName('acct');
    const id = name;
    await db.query('INSERT INTO node_accounts(id, balance) VALUES ($1, 100)', [id]);
    const accounts = await FencedTable.open(db, { table: 'node_accounts' });
    const balance = async () => Number((await db.query('SELECT balance FROM node_accounts WHERE id = $1', [id])).rows[0].balance);

    const a = await client.acquire(name, { ttlMs: 200 });
    assert.equal((await accounts.fenceRead(id, a.token)).outcome, 'applied');
    const readByA = await balance();  // 100; then A pauses past its ttl
    await sleep(400);

    const b = await client.acquire(name, { ttlMs: 5000, waitMs: 2000 });
    assert.equal((await accounts.fenceRead(id, b.token)).outcome, 'applied');
    const readByB = await balance();

    const late = await accounts.update(id, { balance: readByA + 10 }, a.token, { rule: TokenRule.newerOrSame });
    assert.equal(late.outcome, 'stale', 'A learns its lease is over, and nothing it did took effect');
    const mine = await accounts.update(id, { balance: readByB + 20 }, b.token, { rule: TokenRule.newerOrSame });
    assert.equal(mine.outcome, 'applied');
    assert.equal(await balance(), 120);
    await client.release(b);
  });
});

describe('fenced reads of missing rows', () => {
  it('puts a placeholder on a missing row, so an older holder cannot create it afterwards', async () => {
    const id = uniqueName('missing');
    const fenced = await raiseToken(db, { table: 'node_documents', key: id, token: 50n });
    assert.equal(fenced.outcome, 'applied');
    assert.deepEqual((await db.query('SELECT body, current_token FROM node_documents WHERE id = $1', [id])).rows,
      [{ body: null, current_token: '50' }]);
    const older = await fenceRead(db, { table: 'node_documents', key: id, token: 49n });
    assert.equal(older.outcome, 'stale');
    assert.equal(older.currentToken, 50n);
    assert.equal((await guardedUpdate(db, { table: 'node_documents', key: id, token: 49, values: { body: 'old' } })).outcome, 'stale');
    assert.equal((await guardedUpdate(db, { table: 'node_documents', key: id, token: 50, values: { body: 'new' }, rule: 'newerOrSame' })).outcome, 'applied');
    assert.equal(await body(id), 'new');
  });

  it('reports no_such_row without writing when the table cannot hold a placeholder', async () => {
    await db.query(`CREATE TABLE IF NOT EXISTS node_strict(id text PRIMARY KEY, body text NOT NULL,
                                                          current_token bigint NOT NULL DEFAULT 0)`);
    const strict = await FencedTable.open(db, { table: 'node_strict' });
    assert.equal(strict.canHoldPlaceholder, false);
    const id = uniqueName('strict');
    assert.deepEqual(await strict.fenceRead(id, 7n), { outcome: 'no_such_row', currentToken: 0n });
    assert.deepEqual(await strict.update(id, { body: 'x' }, 7n), { outcome: 'no_such_row', currentToken: 0n });
    assert.equal(await strict.currentToken(id), null);
  });
});

describe('concurrent writers', () => {
  it('loses no update among 12 clients doing fenced read-modify-writes under the lock', async () => {
    const name = uniqueName('counter');
    const id = name;
    await db.query('INSERT INTO node_accounts(id) VALUES ($1)', [id]);
    const accounts = await FencedTable.open(db, { table: 'node_accounts' });
    const clients = Array.from({ length: 12 }, () => new Client({ endpoints: [fencelockUrl] }));
    const results = await Promise.all(clients.map((each) => each.withLock(name, { ttlMs: 5000, waitMs: 20000 }, async (lease) => {
      assert.equal((await accounts.fenceRead(id, lease.token)).outcome, 'applied');
      const { rows } = await db.query('SELECT balance FROM node_accounts WHERE id = $1', [id]);
      lease.check();
      return accounts.update(id, { balance: Number(rows[0].balance) + 1 }, lease.token, { rule: TokenRule.newerOrSame });
    })));
    assert.ok(results.every((result) => result.outcome === 'applied'));
    assert.equal((await db.query('SELECT balance FROM node_accounts WHERE id = $1', [id])).rows[0].balance, '12');
  });
});

describe('tokens near 2^63', () => {
  it('stores tokens up to 2^63 - 1 exactly and refuses larger ones before touching the row', async () => {
    const id = uniqueName('big');
    await db.query('INSERT INTO node_documents(id, body) VALUES ($1, $2)', [id, 'start']);
    const top = (1n << 63n) - 1n;
    assert.equal((await guardedUpdate(db, { table: 'node_documents', key: id, token: top - 1n, values: { body: 'near' } })).outcome, 'applied');
    assert.equal((await guardedUpdate(db, { table: 'node_documents', key: id, token: top - 2n, values: { body: 'older' } })).outcome, 'stale');
    const last = await guardedUpdate(db, { table: 'node_documents', key: id, token: top, values: { body: 'top' } });
    assert.deepEqual([last.outcome, last.currentToken], ['applied', top]);
    await assert.rejects(guardedUpdate(db, { table: 'node_documents', key: id, token: top + 1n, values: { body: 'over' } }),
      (error) => error instanceof InvalidArgumentError && /2\^63 - 1/.test(error.message));
    await assert.rejects(fenceRead(db, { table: 'node_documents', key: id, token: 1n << 64n }), InvalidArgumentError);
    await assert.rejects(fenceRead(db, { table: 'node_documents', key: id, token: 0 }), InvalidArgumentError);
    await assert.rejects(fenceRead(db, { table: 'node_documents', key: id, token: 2 ** 60 }), InvalidArgumentError, 'an unsafe number is refused');
    assert.equal(await body(id), 'top');
  });
});

describe('tables that cannot be fenced', () => {
  it('says clearly that a table has no bigint token column', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS node_plain(id text PRIMARY KEY, body text)');
    await assert.rejects(guardedUpdate(db, { table: 'node_plain', key: 'a', token: 5n, values: { body: 'x' } }),
      (error) => error instanceof SchemaError && error.code === 'invalid_schema' &&
        /no bigint column "current_token"/.test(error.message) && /ALTER TABLE "node_plain" ADD COLUMN/.test(error.message));
    await db.query('CREATE TABLE IF NOT EXISTS node_int_token(id text PRIMARY KEY, current_token integer NOT NULL DEFAULT 0)');
    await assert.rejects(FencedTable.open(db, { table: 'node_int_token' }), /it is integer/);
  });

  it('refuses a missing table, a key that is not unique on its own, and unknown columns', async () => {
    await assert.rejects(FencedTable.open(db, { table: 'node_no_such_table' }), /no such table/);
    await db.query('CREATE TABLE IF NOT EXISTS node_pair(a text, b text, current_token bigint NOT NULL DEFAULT 0, PRIMARY KEY (a, b))');
    await assert.rejects(FencedTable.open(db, { table: 'node_pair', keyColumn: 'a' }), /not unique on its own/);
    await assert.rejects(guardedUpdate(db, { table: 'node_documents', key: 'a', token: 5n, values: { 'body" = 1; --': 'x' } }),
      InvalidArgumentError);
    await assert.rejects(guardedUpdate(db, { table: 'node_documents', key: 'a', token: 5n, values: { current_token: 9 } }),
      InvalidArgumentError);
  });

  it('takes names with quotes literally, never as SQL', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS "node ""odd"" table"("the key" text PRIMARY KEY, "a""b" text, current_token bigint NOT NULL DEFAULT 0)');
    const id = uniqueName('odd');
    const written = await fenceRead(db, { table: 'node "odd" table', keyColumn: 'the key', key: id, token: 3n });
    assert.equal(written.outcome, 'applied');
    const updated = await guardedUpdate(db, { table: 'node "odd" table', keyColumn: 'the key', key: id, token: 3n, values: { 'a"b': "it's" }, rule: 'newerOrSame' });
    assert.equal(updated.outcome, 'applied');
  });
});

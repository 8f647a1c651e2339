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

describe('transactions', () => {
  const table = 'node_accounts';
  const connect = async () => {
    const connection = new pg.Client({ connectionString: databaseUrl, statement_timeout: 10000 });
    await connection.connect();
    return connection;
  };
  // The row as a new connection sees it: what survived the closing of the one that wrote it.
  const committed = async (id) => {
    const reader = await connect();
    try {
      const { rows } = await reader.query(`SELECT balance::text AS balance, current_token::text AS token FROM ${table} WHERE id = $1`, [id]);
      return rows[0];
    } finally {
      await reader.end();
    }
  };
  // pg >= 8.21 reports the transaction status; an older pg, or any object with query() alone,
  // does not, and the helper probes instead. Both run over a real connection.
  const shapes = {
    'a pg.Client': (connection) => connection,
    'a Queryable without getTransactionStatus': (connection) => ({ query: (text, values) => connection.query(text, values) }),
  };

  it('a write reported applied is durable after the connection closes', async () => {
    const calls = {
      'FencedTable.update': async (db, id, token) =>
        (await (await FencedTable.open(db, { table })).update(id, { balance: 120 }, token, { rule: TokenRule.newerOrSame })).outcome === 'applied',
      'guardedUpdate': async (db, id, token) =>
        (await guardedUpdate(db, { table, key: id, token, values: { balance: 120 }, rule: 'newerOrSame' })).applied,
      'FencedTable.fenceRead': async (db, id, token) =>
        (await (await FencedTable.open(db, { table })).fenceRead(id, token + 1n)).outcome === 'applied',
      'fenceRead': async (db, id, token) => (await fenceRead(db, { table, key: id, token: token + 1n })).applied,
    };
    for (const [shape, wrap] of Object.entries(shapes)) {
      for (const [name, call] of Object.entries(calls)) {
        const id = uniqueName('durable');
        await db.query(`INSERT INTO ${table}(id, balance) VALUES ($1, 100)`, [id]);
        const connection = await connect();
        const conn = wrap(connection);
        let applied = false;
        try {
          // The README's read-modify-write inside a transaction the helper was not told about.
          await connection.query('BEGIN');
          assert.equal((await fenceRead(conn, { table, key: id, token: 7n, callerCommits: true })).applied, true);
          await connection.query(`SELECT balance FROM ${table} WHERE id = $1`, [id]);
          applied = await call(conn, id, 7n);
        } catch (error) {
          if (!(error instanceof InvalidArgumentError)) throw error;  // refused: nothing claimed
        } finally {
          await connection.end();  // closed without COMMIT
        }
        const row = await committed(id);
        if (applied) {
          assert.notDeepEqual(row, { balance: '100', token: '0' }, `${shape}, ${name}: reported applied, yet the row is unchanged once the connection closed`);
        } else {
          assert.deepEqual(row, { balance: '100', token: '0' });
        }
      }
    }
  });

  it('the helper refuses to run inside a transaction it does not own', async () => {
    for (const [shape, wrap] of Object.entries(shapes)) {
      const id = uniqueName('refuse');
      const mine = uniqueName('mine');
      await db.query(`INSERT INTO ${table}(id) VALUES ($1)`, [id]);
      const connection = await connect();
      const conn = wrap(connection);
      try {
        const accounts = await FencedTable.open(conn, { table });
        await connection.query('BEGIN');
        await connection.query(`INSERT INTO ${table}(id, balance) VALUES ($1, 5)`, [mine]);  // the caller's own work
        const calls = [
          () => accounts.update(id, { balance: 1 }, 5n),
          () => accounts.fenceRead(id, 5n),
          () => guardedUpdate(conn, { table, key: id, token: 5n, values: { balance: 1 } }),
          () => fenceRead(conn, { table, key: id, token: 5n }),
          () => raiseToken(conn, { table, key: id, token: 5n }),
        ];
        for (const call of calls) {
          await assert.rejects(call, (error) => error instanceof InvalidArgumentError && /callerCommits: true/.test(error.message) &&
            /transaction/.test(error.message), shape);
        }
        assert.equal(connection.getTransactionStatus(), 'T', 'the caller\'s transaction is left open');
        assert.equal(await accounts.currentToken(id), 0n, 'a plain read may run in it');
        await connection.query('COMMIT');
      } finally {
        await connection.end();
      }
      assert.deepEqual(await committed(mine), { balance: '5', token: '0' }, 'the caller\'s work survived');
      assert.deepEqual(await committed(id), { balance: '0', token: '0' }, 'nothing was written');
    }

    // A pooled client given back inside a transaction is not used for a guarded write.
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    try {
      const id = uniqueName('leaked');
      await pool.query(`INSERT INTO ${table}(id) VALUES ($1)`, [id]);
      const leaked = await pool.connect();
      await leaked.query('BEGIN');
      leaked.release();
      await assert.rejects(guardedUpdate(pool, { table, key: id, token: 5n, values: { balance: 1 } }), InvalidArgumentError);
      assert.equal((await guardedUpdate(pool, { table, key: id, token: 5n, values: { balance: 1 } })).applied, true,
        'the client left in a transaction was discarded');
      assert.deepEqual(await committed(id), { balance: '1', token: '5' });
      await assert.rejects(guardedUpdate(pool, { table, key: id, token: 6n, values: { balance: 1 }, callerCommits: true }), InvalidArgumentError);
    } finally {
      await pool.end();
    }
  });

  it('with callerCommits the write joins the caller\'s transaction and lands at its COMMIT', async () => {
    const id = uniqueName('joined');
    await db.query(`INSERT INTO ${table}(id, balance) VALUES ($1, 100)`, [id]);
    const connection = await connect();
    try {
      await connection.query('BEGIN');
      assert.equal((await guardedUpdate(connection, { table, key: id, token: 5n, values: { balance: 1 }, callerCommits: true })).applied, true);
      await connection.query('ROLLBACK');
      assert.deepEqual(await committed(id), { balance: '100', token: '0' }, 'it shares the rollback');

      await connection.query('BEGIN');
      assert.equal((await fenceRead(connection, { table, key: id, token: 6n, callerCommits: true })).applied, true);
      const { rows } = await connection.query(`SELECT balance FROM ${table} WHERE id = $1`, [id]);
      const written = await guardedUpdate(connection, {
        table, key: id, token: 6n, rule: 'newerOrSame', callerCommits: true, values: { balance: BigInt(rows[0].balance) + 20n },
      });
      assert.equal(written.applied, true);
      assert.deepEqual(await committed(id), { balance: '100', token: '0' }, 'not before the COMMIT');
      await connection.query('COMMIT');
      // Outside a transaction each call commits by itself, with or without callerCommits.
      assert.equal((await guardedUpdate(connection, { table, key: id, token: 7n, values: { balance: 7 } })).applied, true);
    } finally {
      await connection.end();
    }
    assert.deepEqual(await committed(id), { balance: '7', token: '7' });
  });
});

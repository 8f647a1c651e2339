// The README's guarded-write blocks run as written — their text is read from README.md, not
// retyped — against the live stack's fencelockd and PostgreSQL, in a schema of their own, and what
// they wrote is still there when a new connection looks after theirs closed. The one change: the
// Quick example's endpoints (addresses of the reader's network) point at the live stack.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, it } from 'node:test';

import pg from 'pg';

import { Client } from 'fencelock';

import { databaseUrl, fencelockUrl, uniqueName } from './support.js';

const here = dirname(fileURLToPath(import.meta.url));
const exampleEndpoints = "['http://10.0.0.7:8080', 'http://10.0.0.8:8080']";
const schema = uniqueName('readme').replace('-', '_');
const withSchema = { connectionString: databaseUrl, options: `-c search_path=${schema}` };

before(async () => {
  const setup = new pg.Client(databaseUrl);
  await setup.connect();
  try {
    await setup.query(`CREATE SCHEMA ${schema}`);
    await setup.query(`CREATE TABLE ${schema}.accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,
                         current_token bigint NOT NULL DEFAULT 0)`);
    await setup.query(`INSERT INTO ${schema}.accounts (id, balance) VALUES ('alice', 100)`);
  } finally {
    await setup.end();
  }
});

after(async () => {
  const cleanup = new pg.Client(databaseUrl);
  await cleanup.connect();
  await cleanup.query(`DROP SCHEMA ${schema} CASCADE`);
  await cleanup.end();
});

it('the README\'s guarded writes land and survive their connection, run as written', async () => {
  const readme = await readFile(join(here, '..', 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1])
    .filter((block) => /guardedUpdate|fenceRead/.test(block));
  assert.equal(blocks.length, 2, 'the Quick example and the one that continues it in a transaction');
  assert.ok(blocks[0].includes(exampleEndpoints));
  const program = [
    blocks[0].replace(exampleEndpoints, JSON.stringify([fencelockUrl])),
    ...blocks.slice(1),
    'await db.end();',
  ].join('\n');
  // Inside the package, so that `fencelock` and `pg` resolve as they do for a reader.
  const file = join(here, `.readme-${schema}.mjs`);
  await writeFile(file, program);
  try {
    const env = { ...process.env, DATABASE_URL: databaseUrl, PGOPTIONS: withSchema.options };
    delete env.FENCELOCK_API_KEY;
    await promisify(execFile)(process.execPath, [file], { env, timeout: 60000 });
  } finally {
    await rm(file, { force: true });
  }

  const reader = new pg.Client(withSchema);
  await reader.connect();
  const client = new Client({ endpoints: [fencelockUrl] });
  try {
    const { rows } = await reader.query("SELECT balance::text AS balance, current_token::text AS token FROM accounts WHERE id = 'alice'");
    // 100, +20 by the Quick example, +20 by its continuation in a transaction.
    assert.deepEqual(rows, [{ balance: '140', token: String(await client.currentToken('account-alice')) }]);
  } finally {
    await reader.end();
  }
});

// CI check of the example: starts server.js against the live stack (FENCELOCK_ENDPOINT, DATABASE_URL),
// fires concurrent deposits and checks that none was lost, then plays a paused handler whose
// stale write PostgreSQL must refuse. Every wait is bounded; the server is always stopped.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import pg from 'pg';
import { Client } from 'fencelock';
import { fenceRead, guardedUpdate } from 'fencelock/postgres';

const port = Number(process.env.EXAMPLE_PORT ?? 18050);
const base = `http://127.0.0.1:${port}`;
const deposits = 40;

const server = spawn(process.execPath, ['server.js'], {
  env: { ...process.env, PORT: String(port) },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });

async function call(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30000),
  });
  return { status: response.status, body: await response.json() };
}

// A deposit, retried (at most 5 times) while the backend answers "busy" or "retry".
async function deposit(id, amount) {
  for (let attempt = 0; attempt < 5; ++attempt) {
    const answer = await call('POST', `/accounts/${id}/deposit`, { amount });
    if (answer.status === 200) return answer.body;
    if (answer.status !== 409 && answer.status !== 503) throw new Error(`deposit: ${answer.status} ${JSON.stringify(answer.body)}`);
    await sleep(100);
  }
  throw new Error('deposit: still refused after 5 attempts');
}

try {
  let up = false;
  for (let i = 0; i < 100 && !up; ++i) {
    up = await call('GET', '/healthz').then((a) => a.status === 200, () => false);
    if (!up) await sleep(100);
  }
  assert.ok(up, 'the example server did not come up within 10 s');

  const suffix = randomBytes(4).toString('hex');
  const ids = [`alice-${suffix}`, `bob-${suffix}`];
  const expected = { [ids[0]]: 0, [ids[1]]: 0 };
  const jobs = [];
  for (let i = 1; i <= deposits; ++i) {
    const id = ids[i % 2];
    expected[id] += i;
    jobs.push(deposit(id, i));
  }
  const answers = await Promise.all(jobs);
  const grants = new Set(answers.map((a) => `${a.id}#${a.token}`));
  assert.equal(grants.size, deposits, 'every deposit ran under its own grant (tokens are per lock name)');
  for (const id of ids) {
    const { body } = await call('GET', `/accounts/${id}`);
    assert.equal(Number(body.balance), expected[id], `${id}: no deposit lost`);
    // Committed, not only visible to the server's own connections: this process's pool sees it.
    const { rows } = await db.query('SELECT balance FROM accounts WHERE id = $1', [id]);
    assert.equal(Number(rows[0].balance), expected[id], `${id}: every deposit answered 200 is committed`);
  }
  console.log(`check: ${deposits} concurrent deposits, balances ${ids.map((id) => expected[id]).join(' and ')} as expected`);

  // A handler that took the lock, fenced its read, then paused past its ttl.
  const carol = `carol-${suffix}`;
  const client = new Client({ endpoints: process.env.FENCELOCK_ENDPOINT.split(',') });
  const paused = await client.acquire(`account-${carol}`, { ttlMs: 200 });
  assert.equal((await fenceRead(db, { table: 'accounts', key: carol, token: paused.token })).outcome, 'applied');
  await sleep(400);
  assert.equal((await deposit(carol, 7)).balance, '7');
  const stale = await guardedUpdate(db, { table: 'accounts', key: carol, token: paused.token, values: { balance: 100 }, rule: 'newerOrSame' });
  assert.equal(stale.outcome, 'stale', 'the paused handler\'s write is refused');
  assert.equal((await call('GET', `/accounts/${carol}`)).body.balance, '7');
  console.log('check: the paused handler\'s stale write was refused; the balance is the newer deposit\'s');
} finally {
  const exited = new Promise((resolve) => server.once('exit', resolve));
  if (server.exitCode === null && server.signalCode === null) {
    server.kill('SIGTERM');
    const timer = setTimeout(() => server.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
  await db.end();
}

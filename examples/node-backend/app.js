// A web backend's deposit handler guarded by fencelock: the lock serialises deposits to one
// account, and the fencing token makes PostgreSQL refuse the write of a handler whose lease ran
// out while it was paused (so a deposit is never lost or applied on a stale balance).
//
//   POST /accounts/:id/deposit  {"amount": 25}  -> 200 {"id","balance","token"}
//   GET  /accounts/:id                          -> 200 {"id","balance"} | 404
//
// Per deposit: take lock "account-<id>" (withLock keeps it renewed and releases it), fence the
// read with the token (a missing account is created with balance 0 and that token), read the
// balance, write balance + amount guarded by the same token.
import { createServer } from 'node:http';

import { LeaseLostError, LockedError, NotHeldError, TransportError, UnavailableError } from 'fencelock';
import { FencedTable, TokenRule } from 'fencelock/postgres';

const idPattern = /^[A-Za-z0-9_-]{1,64}$/;
const maxBody = 1024;

export const accountsDdl = `CREATE TABLE IF NOT EXISTS accounts (
  id            text   PRIMARY KEY,
  balance       bigint NOT NULL DEFAULT 0,
  current_token bigint NOT NULL DEFAULT 0
)`;

// A deposit that cannot complete because this handler's lease is over: answered 503, retry.
class StaleLease extends Error {}

export async function createApp({ client, db }) {
  const accounts = await FencedTable.open(db, { table: 'accounts' });

  async function deposit(id, amount) {
    return client.withLock(`account-${id}`, { ttlMs: 5000, waitMs: 10000 }, async (lease) => {
      const fenced = await accounts.fenceRead(id, lease.token);
      if (fenced.outcome !== 'applied') throw new StaleLease('a newer lock holder read this account');
      const { rows } = await db.query('SELECT balance FROM accounts WHERE id = $1', [id]);
      const balance = BigInt(rows[0].balance) + BigInt(amount);
      lease.check();  // cheap early exit; the token below is what actually protects the row
      const written = await accounts.update(id, { balance: balance.toString() }, lease.token, { rule: TokenRule.newerOrSame });
      if (written.outcome !== 'applied') throw new StaleLease('a newer lock holder wrote this account');
      return { id, balance: balance.toString(), token: lease.token.toString() };
    });
  }

  async function handle(request, response) {
    const url = new URL(request.url, 'http://localhost');
    const match = /^\/accounts\/([^/]+)(\/deposit)?$/.exec(url.pathname);
    if (url.pathname === '/healthz' && request.method === 'GET') return send(response, 200, { status: 'ok' });
    if (!match || !idPattern.test(match[1])) return send(response, 404, { error: 'no such path' });
    const id = match[1];
    if (!match[2]) {
      if (request.method !== 'GET') return send(response, 405, { error: 'GET only' });
      const { rows } = await db.query('SELECT balance FROM accounts WHERE id = $1', [id]);
      return rows.length ? send(response, 200, { id, balance: rows[0].balance }) : send(response, 404, { error: 'no such account' });
    }
    if (request.method !== 'POST') return send(response, 405, { error: 'POST only' });
    let amount;
    try {
      amount = JSON.parse(await readBody(request)).amount;
    } catch {
      return send(response, 400, { error: 'want a JSON body {"amount": N}' });
    }
    if (!Number.isSafeInteger(amount) || amount < 1 || amount > 1e9) {
      return send(response, 400, { error: 'amount: an integer from 1 to 1000000000' });
    }
    try {
      return send(response, 200, await deposit(id, amount));
    } catch (error) {
      if (error instanceof LockedError) {
        return send(response, 409, { error: 'the account is busy, retry' }, { 'retry-after': '1' });
      }
      if (error instanceof StaleLease || error instanceof LeaseLostError || error instanceof NotHeldError ||
          error instanceof UnavailableError || error instanceof TransportError) {
        return send(response, 503, { error: `not deposited, retry: ${error.message}` }, { 'retry-after': '1' });
      }
      throw error;
    }
  }

  return createServer((request, response) => {
    handle(request, response).catch((error) => {
      console.error('deposit failed:', error);
      if (!response.headersSent) send(response, 500, { error: 'internal error' });
    });
  });
}

function send(response, status, body, headers = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function readBody(request) {
  return new Promise((resolve, reject) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => {
      body += chunk;
      if (body.length > maxBody) {
        reject(new Error('body too large'));
        request.destroy();
      }
    });
    request.on('end', () => resolve(body));
    request.on('error', reject);
  });
}

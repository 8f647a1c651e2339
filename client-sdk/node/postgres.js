// fencelock/postgres: writes to PostgreSQL that a paused, lost lease cannot make — the same
// contract as the C++ SDK's FencedTable (client-sdk/include/fencelock/fenced_table.h).
//
// A protected row remembers the newest fencing token that touched it (a bigint column,
// `current_token` by default). A guarded write checks and writes in one statement:
//
//   UPDATE "t" SET "col" = $3, …, "current_token" = $2 WHERE "id" = $1 AND "current_token" < $2
//
// so a holder whose lease ended while it was paused (a GC pause, a stalled VM) has its write
// refused once a newer holder touched the row. fenceRead() raises the row's token *before* a read,
// so a read-modify-write is protected too (the C++ header explains the interleaving), and raises it
// even when the row is missing, by inserting a placeholder row (key and token only) when every
// other column is nullable or has a default:
//
//   INSERT INTO "t" AS row ("id", "current_token") VALUES ($1, $2)
//   ON CONFLICT ("id") DO UPDATE SET "current_token" = EXCLUDED."current_token"
//   WHERE row."current_token" <= EXCLUDED."current_token"
//
// Identifiers are quoted with pg's escapeIdentifier and checked against the table's columns
// once; values and tokens are always parameters. Tokens are bigint in PostgreSQL: above 2^63 - 1
// is refused.
//
// Transactions: a write reported 'applied' is committed. `db` is a pg.Pool, a pg.Client or a
// pg.PoolClient (anything with pg's query(text, values)). By default each statement runs in no
// transaction but its own, so it has committed when its answer arrives (the token rule keeps that
// correct under concurrent writers at READ COMMITTED and SERIALIZABLE); a pool lends us one
// client per call. A call that finds a transaction open on the connection (the caller's BEGIN,
// or one a pooled client was released in) refuses with InvalidArgumentError and sends nothing
// more: joining it would report 'applied' for a write that only the caller's COMMIT, which may
// never come, makes real. With { callerCommits: true } the caller says "this transaction is
// mine and I will commit it": the statements run on `db` as the caller's own would, joining its
// transaction, and 'applied' means applied in that transaction. The open transaction is seen in
// pg's getTransactionStatus() (pg >= 8.21) or, where that is missing, by a SAVEPOINT probe,
// which PostgreSQL refuses outside a transaction block.
import pg from 'pg';

import { FencelockError, InvalidArgumentError } from './src/errors.js';

const { escapeIdentifier } = pg;
const maxStoredToken = (1n << 63n) - 1n;

// Which stored tokens a guarded statement may overwrite (fenced_table.h, TokenRule).
export const TokenRule = Object.freeze({
  strictlyNewer: 'strictlyNewer', // stored < token: each lease writes the row at most once
  newerOrSame: 'newerOrSame', // stored <= token: the holder that fenced its read may write after it
});

// The table is not usable for guarded writes: no such table, no bigint token column, a key that
// is not unique on its own, an unknown column. `code` is "invalid_schema".
export class SchemaError extends FencelockError {
  constructor(message) {
    super('invalid_schema', message);
  }
}

export class FencedTable {
  #db;
  #sql;
  #columns;
  #keyColumn;
  #tokenColumn;

  /**
   * Checks the table once: it must exist, `tokenColumn` must be bigint, `keyColumn` must be unique
   * on its own (PRIMARY KEY or a single-column unique index). Rejects with SchemaError.
   */
  static async open(db, { table, schema, keyColumn = 'id', tokenColumn = 'current_token' } = {}) {
    for (const [what, name] of [['table', table], ['keyColumn', keyColumn], ['tokenColumn', tokenColumn]]) {
      if (typeof name !== 'string' || name.length === 0 || name.length > 63 || name.includes('\0')) {
        throw new InvalidArgumentError('invalid_request', `${what}: 1 to 63 characters, no NUL`);
      }
    }
    if (keyColumn === tokenColumn) throw new InvalidArgumentError('invalid_request', 'keyColumn and tokenColumn must differ');
    const qualified = (schema === undefined ? '' : `${escapeIdentifier(schema)}.`) + escapeIdentifier(table);
    const { rows } = await db.query(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
              (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '') AS has_default,
              EXISTS (SELECT 1 FROM pg_index i
                       WHERE i.indrelid = a.attrelid AND i.indisunique AND i.indnatts = 1
                         AND i.indkey[0] = a.attnum AND i.indpred IS NULL AND i.indexprs IS NULL) AS unique_alone
         FROM pg_attribute a
        WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`,
      [qualified]);
    if (rows.length === 0) throw new SchemaError(`fenced table ${qualified}: no such table (or it has no columns)`);
    const columns = new Map(rows.map((row) => [row.name, row]));
    const token = columns.get(tokenColumn);
    if (!token || token.type !== 'bigint') {
      throw new SchemaError(`fenced table ${qualified} has no bigint column ${escapeIdentifier(tokenColumn)}` +
        (token ? ` (it is ${token.type})` : '') +
        `: add one with ALTER TABLE ${qualified} ADD COLUMN ${escapeIdentifier(tokenColumn)} bigint NOT NULL DEFAULT 0`);
    }
    const key = columns.get(keyColumn);
    if (!key) throw new SchemaError(`fenced table ${qualified} has no column ${escapeIdentifier(keyColumn)}`);
    if (!key.unique_alone) {
      throw new SchemaError(`fenced table ${qualified}: ${escapeIdentifier(keyColumn)} is not unique on its own (want a PRIMARY KEY or a single-column UNIQUE index)`);
    }
    const canHoldPlaceholder = rows.every((row) =>
      row.name === keyColumn || row.name === tokenColumn || !row.not_null || row.has_default);
    return new FencedTable(db, qualified, keyColumn, tokenColumn, columns, canHoldPlaceholder);
  }

  constructor(db, qualified, keyColumn, tokenColumn, columns, canHoldPlaceholder) {
    this.#db = db;
    this.#columns = columns;
    this.#keyColumn = keyColumn;
    this.#tokenColumn = tokenColumn;
    const t = qualified;
    const k = escapeIdentifier(keyColumn);
    const tok = escapeIdentifier(tokenColumn);
    this.canHoldPlaceholder = canHoldPlaceholder;
    this.#sql = {
      t, k, tok,
      select: `SELECT ${tok}::text AS token FROM ${t} WHERE ${k} = $1`,
      fence: (op) => canHoldPlaceholder
        ? `INSERT INTO ${t} AS fenced_row (${k}, ${tok}) VALUES ($1, $2) ON CONFLICT (${k}) DO UPDATE SET ${tok} = EXCLUDED.${tok} WHERE fenced_row.${tok} ${op} EXCLUDED.${tok} RETURNING ${tok}::text AS token`
        : `UPDATE ${t} SET ${tok} = $2 WHERE ${k} = $1 AND ${tok} ${op} $2 RETURNING ${tok}::text AS token`,
    };
  }

  /**
   * Sets `values` ({column: value}) on row `key` only if the row's token satisfies `rule` against
   * `token`, and sets the row's token to `token` in the same statement. Never inserts.
   * Resolves {outcome: 'applied' | 'stale' | 'no_such_row', currentToken: bigint}: the caller's
   * token when applied, the token that won when stale, 0n when there is no row. A stale outcome
   * means a newer holder got there first: stop, do not retry with this token. 'applied' means
   * committed, or with callerCommits: true applied in the caller's open transaction.
   * Rejects with InvalidArgumentError (a bad token or column, a transaction open on the connection
   * without callerCommits: true, or callerCommits: true with a pg.Pool) or pg's error.
   */
  async update(key, values, token, { rule = TokenRule.strictlyNewer, callerCommits = false } = {}) {
    const t = checkToken(token);
    const op = operator(rule);
    const entries = Object.entries(values ?? {});
    if (entries.length === 0) throw new InvalidArgumentError('invalid_request', 'values: at least one column');
    for (const [column] of entries) {
      if (!this.#columns.has(column)) throw new InvalidArgumentError('invalid_request', `values: no column ${escapeIdentifier(column)} in ${this.#sql.t}`);
      if (column === this.#keyColumn || column === this.#tokenColumn) {
        throw new InvalidArgumentError('invalid_request', `values: ${escapeIdentifier(column)} is the key or the token column`);
      }
    }
    const { t: table, k, tok } = this.#sql;
    const sets = entries.map(([column], i) => `${escapeIdentifier(column)} = $${i + 3}`).join(', ');
    const text = `UPDATE ${table} SET ${sets}, ${tok} = $2 WHERE ${k} = $1 AND ${tok} ${op} $2 RETURNING ${tok}::text AS token`;
    return this.#guarded(text, [String(key), t.toString(), ...entries.map(([, value]) => value)], t, op, callerCommits);
  }

  /**
   * Fenced read: raises row `key`'s token to `token` (if `rule` allows) so that your following
   * read counts as a touch by `token`; writes by older tokens are refused from then on. A missing
   * row gets a placeholder (key and token only) when the table can hold one; otherwise the
   * outcome is 'no_such_row' and nothing is fenced. Write after it with rule newerOrSame.
   * Transactions and errors as for update().
   */
  async fenceRead(key, token, { rule = TokenRule.newerOrSame, callerCommits = false } = {}) {
    const t = checkToken(token);
    const op = operator(rule);
    return this.#guarded(this.#sql.fence(op), [String(key), t.toString()], t, op, callerCommits);
  }

  /** The token stored in row `key` (a bigint), or null without a row. Fences nothing. */
  async currentToken(key) {
    const { rows } = await this.#db.query(this.#sql.select, [String(key)]);
    return rows.length === 0 ? null : BigInt(rows[0].token);
  }

  // Runs a guarded statement; when it touched nothing, reads the row's token to tell 'stale' from
  // 'no_such_row'. A token only grows, so a row found with a token the rule would have let through
  // was created in between: run again (a few times at most).
  async #guarded(text, params, token, op, callerCommits) {
    return this.#onConnection(callerCommits, async (db) => {
      for (let attempt = 0; attempt < 3; ++attempt) {
        const written = await db.query(text, params);
        if (written.rows.length > 0) return { outcome: 'applied', currentToken: BigInt(written.rows[0].token) };
        const { rows } = await db.query(this.#sql.select, [params[0]]);
        if (rows.length === 0) return { outcome: 'no_such_row', currentToken: 0n };
        const current = BigInt(rows[0].token);
        if (op === '<' ? current >= token : current > token) return { outcome: 'stale', currentToken: current };
      }
      throw new FencelockError('internal', 'fenced write: the row kept changing under it');
    });
  }

  // Runs `work(connection)` where a write it reports applied is committed (see the file comment):
  // on the caller's connection when no transaction is open on it or the caller commits, on a
  // client of the pool's own otherwise.
  async #onConnection(callerCommits, work) {
    const db = this.#db;
    if (typeof callerCommits !== 'boolean') throw new InvalidArgumentError('invalid_request', 'callerCommits: true or false');
    if (!isPool(db)) {
      if (!callerCommits) await refuseOpenTransaction(db);
      return work(db);
    }
    if (callerCommits) {
      throw new InvalidArgumentError('invalid_request',
        'callerCommits: a pg.Pool holds no transaction of yours; pass the client (pool.connect()) that ran BEGIN');
    }
    const connection = await db.connect();
    let failure;
    try {
      await refuseOpenTransaction(connection);
      return await work(connection);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      connection.release(failure);  // a client that failed, or was left in a transaction, is discarded
    }
  }
}

function isPool(db) {
  return typeof db.connect === 'function' && 'totalCount' in db && typeof db.release !== 'function';
}

// Rejects unless `db` is outside any transaction block.
async function refuseOpenTransaction(db) {
  let status = typeof db.getTransactionStatus === 'function' ? db.getTransactionStatus() : null;
  if (status !== 'I' && status !== 'T' && status !== 'E') status = await probeTransactionStatus(db);
  if (status === 'E') {
    throw new InvalidArgumentError('invalid_request', "the connection's transaction has failed: ROLLBACK before writing");
  }
  if (status === 'T') {
    throw new InvalidArgumentError('invalid_request',
      'a transaction is open on this connection and this call would not commit it, so a write reported applied ' +
      'could still be lost: COMMIT or ROLLBACK before the guarded write, or pass { callerCommits: true } and ' +
      'COMMIT it yourself');
  }
}

// SAVEPOINT outside a transaction block fails with 25P01 and changes nothing; inside one it works
// (and is released at once); in a failed one it fails with 25P02.
async function probeTransactionStatus(db) {
  try {
    await db.query('SAVEPOINT fencelock_probe');
  } catch (error) {
    if (error?.code === '25P01') return 'I';
    if (error?.code === '25P02') return 'E';
    throw error;
  }
  await db.query('RELEASE SAVEPOINT fencelock_probe');
  return 'T';
}

const tables = new WeakMap();

// The FencedTable for (db, table options), checked once per db and kept.
async function tableFor(db, options) {
  const key = JSON.stringify([options.schema, options.table, options.keyColumn ?? 'id', options.tokenColumn ?? 'current_token']);
  let perDb = tables.get(db);
  if (!perDb) tables.set(db, (perDb = new Map()));
  let opened = perDb.get(key);
  if (!opened) {
    opened = FencedTable.open(db, options);
    perDb.set(key, opened);
    opened.catch(() => perDb.delete(key));
  }
  return opened;
}

/**
 * One guarded UPDATE: guardedUpdate(db, {table, keyColumn, tokenColumn, key, token, values, rule, callerCommits}).
 * Resolves {outcome, currentToken} as FencedTable.update; `applied` is outcome === 'applied'.
 */
export async function guardedUpdate(db, { key, token, values, rule, callerCommits, ...table }) {
  const result = await (await tableFor(db, table)).update(key, values, token, { rule, callerCommits });
  return { ...result, applied: result.outcome === 'applied' };
}

/** fenceRead(db, {table, keyColumn, tokenColumn, key, token, rule, callerCommits}): see FencedTable.fenceRead. */
export async function fenceRead(db, { key, token, rule, callerCommits, ...table }) {
  const result = await (await tableFor(db, table)).fenceRead(key, token, { rule, callerCommits });
  return { ...result, applied: result.outcome === 'applied' };
}

// Another name for fenceRead: it raises the row's token, creating a placeholder row if needed.
export const raiseToken = fenceRead;

function checkToken(token) {
  let value;
  if (typeof token === 'bigint') value = token;
  else if (typeof token === 'number' && Number.isSafeInteger(token)) value = BigInt(token);
  else if (typeof token === 'string' && /^[0-9]{1,20}$/.test(token)) value = BigInt(token);
  else throw new InvalidArgumentError('invalid_request', 'token: a positive integer (bigint, safe number or decimal string)');
  if (value < 1n || value > maxStoredToken) {
    throw new InvalidArgumentError('invalid_request', `token: from 1 to 2^63 - 1 (PostgreSQL bigint), got ${value}`);
  }
  return value;
}

function operator(rule) {
  if (rule === TokenRule.strictlyNewer) return '<';
  if (rule === TokenRule.newerOrSame) return '<=';
  throw new InvalidArgumentError('invalid_request', `rule: TokenRule.strictlyNewer or TokenRule.newerOrSame, got ${rule}`);
}

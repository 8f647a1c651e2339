// Types of fencelock/postgres. `db` is anything with pg's query(text, values): a pg.Client,
// pg.PoolClient or pg.Pool. A write resolved 'applied' is committed; inside a transaction open on
// the connection a write is refused unless `callerCommits: true` says the caller will COMMIT it
// (postgres.js has the contract).
import { FencelockError } from './index.js';

export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
  /** pg >= 8.21: 'I' idle, 'T' in a transaction, 'E' in a failed one. */
  getTransactionStatus?(): string | null;
}

export interface WriteOptions {
  rule?: TokenRuleName;
  /**
   * Default false: the call refuses to run inside a transaction open on the connection.
   * true: "the transaction is mine and I will COMMIT it" — the call joins it, and 'applied'
   * means applied in that transaction. Not with a pg.Pool.
   */
  callerCommits?: boolean;
}

export type Token = bigint | number | string;

export declare const TokenRule: {
  readonly strictlyNewer: 'strictlyNewer';
  readonly newerOrSame: 'newerOrSame';
};
export type TokenRuleName = 'strictlyNewer' | 'newerOrSame';

export interface TableOptions {
  table: string;
  schema?: string;
  /** Default "id": unique on its own. */
  keyColumn?: string;
  /** Default "current_token": bigint. */
  tokenColumn?: string;
}

export interface GuardedResult {
  outcome: 'applied' | 'stale' | 'no_such_row';
  /** The caller's token when applied, the token that won when stale, 0n without a row. */
  currentToken: bigint;
}

export declare class SchemaError extends FencelockError {}

export declare class FencedTable {
  private constructor();
  static open(db: Queryable, options: TableOptions): Promise<FencedTable>;
  readonly canHoldPlaceholder: boolean;
  update(key: string | number, values: Record<string, unknown>, token: Token, options?: WriteOptions): Promise<GuardedResult>;
  fenceRead(key: string | number, token: Token, options?: WriteOptions): Promise<GuardedResult>;
  currentToken(key: string | number): Promise<bigint | null>;
}

export interface GuardedUpdateOptions extends TableOptions, WriteOptions {
  key: string | number;
  token: Token;
  values: Record<string, unknown>;
}
export interface FenceReadOptions extends TableOptions, WriteOptions {
  key: string | number;
  token: Token;
}

export declare function guardedUpdate(db: Queryable, options: GuardedUpdateOptions): Promise<GuardedResult & { applied: boolean }>;
export declare function fenceRead(db: Queryable, options: FenceReadOptions): Promise<GuardedResult & { applied: boolean }>;
export declare const raiseToken: typeof fenceRead;

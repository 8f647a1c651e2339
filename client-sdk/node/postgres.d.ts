// Types of fencelock/postgres. `db` is anything with pg's query(text, values): a pg.Client,
// pg.PoolClient or pg.Pool.
import { FencelockError } from './index.js';

export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
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
  update(key: string | number, values: Record<string, unknown>, token: Token, options?: { rule?: TokenRuleName }): Promise<GuardedResult>;
  fenceRead(key: string | number, token: Token, options?: { rule?: TokenRuleName }): Promise<GuardedResult>;
  currentToken(key: string | number): Promise<bigint | null>;
}

export interface GuardedUpdateOptions extends TableOptions {
  key: string | number;
  token: Token;
  values: Record<string, unknown>;
  rule?: TokenRuleName;
}
export interface FenceReadOptions extends TableOptions {
  key: string | number;
  token: Token;
  rule?: TokenRuleName;
}

export declare function guardedUpdate(db: Queryable, options: GuardedUpdateOptions): Promise<GuardedResult & { applied: boolean }>;
export declare function fenceRead(db: Queryable, options: FenceReadOptions): Promise<GuardedResult & { applied: boolean }>;
export declare const raiseToken: typeof fenceRead;

package fenced

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// querier is what a guarded statement runs on: a *sql.Tx (ours or the caller's).
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Update sets the assignments on row key only if the row's token satisfies rule against token,
// and sets the row's token to token in the same statement, in a transaction of its own that it
// commits before returning Applied. Never inserts. Returns Applied, Stale (with the token that
// won) or NoSuchRow; errors as the package comment says (nothing is written then).
func (t *Table) Update(ctx context.Context, key any, token int64, rule TokenRule, set ...Assignment) (Result, error) {
	return t.committed(ctx, "guarded update", func(q querier) (Result, error) {
		return t.update(ctx, q, key, token, rule, set)
	})
}

// FenceRead raises row key's token to token (if rule allows) so that the caller's following read
// counts as a touch by token: writes by older tokens are refused from then on. A key with no row
// gets a placeholder row (key and token only) when the table can hold one (CanHoldPlaceholder),
// and NoSuchRow, with nothing fenced, when it cannot. Then read the row yourself; the write that
// follows must use NewerOrSame. Commits before returning, as Update; to read and write in the same
// transaction use InTx. The usual rule is NewerOrSame.
func (t *Table) FenceRead(ctx context.Context, key any, token int64, rule TokenRule) (Result, error) {
	return t.committed(ctx, "fenced read", func(q querier) (Result, error) {
		return t.fenceRead(ctx, q, key, token, rule)
	})
}

// RaiseToken makes row key's token at least token (GREATEST), inserting a placeholder row when the
// key has none and the table can hold one. It returns the row's token afterwards — above token
// means a newer holder has touched the row — and false when there is no row and no placeholder
// could be made. Commits before returning.
func (t *Table) RaiseToken(ctx context.Context, key any, token int64) (int64, bool, error) {
	r, err := t.committed(ctx, "raising a token", func(q querier) (Result, error) {
		return t.raiseToken(ctx, q, key, token)
	})
	return r.CurrentToken, r.Outcome == Applied, err
}

// CurrentToken is the token stored in row key, and false if there is no such row. Fences nothing.
func (t *Table) CurrentToken(ctx context.Context, key any) (int64, bool, error) {
	stored, found, err := t.stored(ctx, t.db, key)
	if err != nil {
		return 0, false, translate(fmt.Sprintf("reading a token from %q", t.name), err)
	}
	return stored, found, nil
}

// Tx makes the same guarded statements inside a transaction of the caller's (Table.InTx):
// Applied means applied in that transaction — it lands at the caller's Commit, or not at all. An
// error leaves the transaction aborted in PostgreSQL: roll it back.
type Tx struct {
	t  *Table
	tx *sql.Tx
}

// InTx returns the Table's statements bound to tx, a transaction the caller commits.
func (t *Table) InTx(tx *sql.Tx) *Tx { return &Tx{t: t, tx: tx} }

// Update is Table.Update inside the caller's transaction.
func (x *Tx) Update(ctx context.Context, key any, token int64, rule TokenRule, set ...Assignment) (Result, error) {
	r, err := x.t.update(ctx, x.tx, key, token, rule, set)
	return r, x.t.translated("guarded update", err)
}

// FenceRead is Table.FenceRead inside the caller's transaction.
func (x *Tx) FenceRead(ctx context.Context, key any, token int64, rule TokenRule) (Result, error) {
	r, err := x.t.fenceRead(ctx, x.tx, key, token, rule)
	return r, x.t.translated("fenced read", err)
}

// RaiseToken is Table.RaiseToken inside the caller's transaction.
func (x *Tx) RaiseToken(ctx context.Context, key any, token int64) (int64, bool, error) {
	r, err := x.t.raiseToken(ctx, x.tx, key, token)
	return r.CurrentToken, r.Outcome == Applied, x.t.translated("raising a token", err)
}

func (t *Table) translated(doing string, err error) error {
	if err == nil {
		return nil
	}
	return translate(fmt.Sprintf("%s of %q", doing, t.name), err)
}

// committed runs body in a transaction of its own and returns its result only once COMMIT
// succeeded: a failed commit is an error, never Applied.
func (t *Table) committed(ctx context.Context, doing string, body func(q querier) (Result, error)) (Result, error) {
	doing = fmt.Sprintf("%s of %q", doing, t.name)
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return Result{}, translate(doing, err)
	}
	result, err := body(tx)
	if err != nil {
		_ = tx.Rollback()
		return Result{}, translate(doing, err)
	}
	if err := tx.Commit(); err != nil {
		return Result{}, translate(doing+" (commit)", err)
	}
	return result, nil
}

func (t *Table) update(ctx context.Context, q querier, key any, token int64, rule TokenRule, set []Assignment) (Result, error) {
	if err := checkToken(token); err != nil {
		return Result{}, err
	}
	var params []any
	assignments, err := t.render(set, &params)
	if err != nil {
		return Result{}, err
	}
	tokenParam := "$" + strconv.Itoa(len(params)+1)
	keyParam := "$" + strconv.Itoa(len(params)+2)
	params = append(params, token, key)
	statement := fmt.Sprintf("UPDATE %s SET %s, %s = %s WHERE %s = %s AND %s %s %s RETURNING %s",
		quote(t.name), assignments, quote(t.token), tokenParam, quote(t.key), keyParam,
		quote(t.token), rule.operator(), tokenParam, quote(t.token))
	return t.outcome(ctx, q, q.QueryRowContext(ctx, statement, params...), key, token, rule)
}

func (t *Table) fenceRead(ctx context.Context, q querier, key any, token int64, rule TokenRule) (Result, error) {
	if err := checkToken(token); err != nil {
		return Result{}, err
	}
	var statement string
	if t.canHoldPlaceholder {
		statement = fmt.Sprintf("INSERT INTO %[1]s AS existing (%[2]s, %[3]s) VALUES ($1, $2)"+
			" ON CONFLICT (%[2]s) DO UPDATE SET %[3]s = EXCLUDED.%[3]s"+
			" WHERE existing.%[3]s %[4]s EXCLUDED.%[3]s RETURNING %[3]s",
			quote(t.name), quote(t.key), quote(t.token), rule.operator())
	} else {
		statement = fmt.Sprintf("UPDATE %[1]s SET %[3]s = $2 WHERE %[2]s = $1 AND %[3]s %[4]s $2 RETURNING %[3]s",
			quote(t.name), quote(t.key), quote(t.token), rule.operator())
	}
	return t.outcome(ctx, q, q.QueryRowContext(ctx, statement, key, token), key, token, rule)
}

func (t *Table) raiseToken(ctx context.Context, q querier, key any, token int64) (Result, error) {
	if err := checkToken(token); err != nil {
		return Result{}, err
	}
	var statement string
	if t.canHoldPlaceholder {
		statement = fmt.Sprintf("INSERT INTO %[1]s AS existing (%[2]s, %[3]s) VALUES ($1, $2)"+
			" ON CONFLICT (%[2]s) DO UPDATE SET %[3]s = GREATEST(existing.%[3]s, EXCLUDED.%[3]s) RETURNING %[3]s",
			quote(t.name), quote(t.key), quote(t.token))
	} else {
		statement = fmt.Sprintf("UPDATE %[1]s SET %[3]s = GREATEST(%[3]s, $2) WHERE %[2]s = $1 RETURNING %[3]s",
			quote(t.name), quote(t.key), quote(t.token))
	}
	var current int64
	err := q.QueryRowContext(ctx, statement, key, token).Scan(&current)
	if errors.Is(err, sql.ErrNoRows) {
		return Result{Outcome: NoSuchRow}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Outcome: Applied, CurrentToken: current}, nil
}

// outcome reads a guarded statement's RETURNING row: Applied; else Stale or NoSuchRow by what the
// row holds now.
func (t *Table) outcome(ctx context.Context, q querier, row *sql.Row, key any, token int64, rule TokenRule) (Result, error) {
	var current int64
	err := row.Scan(&current)
	if err == nil {
		return Result{Outcome: Applied, CurrentToken: current}, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Result{}, err
	}
	stored, found, err := t.stored(ctx, q, key)
	if err != nil {
		return Result{}, err
	}
	if !found || rule.allows(stored, token) {
		// No row, or one that appeared (or was re-tokened) after the statement looked: what it saw
		// was "no row", and nothing was written.
		return Result{Outcome: NoSuchRow}, nil
	}
	return Result{Outcome: Stale, CurrentToken: stored}, nil
}

func (t *Table) stored(ctx context.Context, q querier, key any) (int64, bool, error) {
	var stored int64
	err := q.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1", quote(t.token), quote(t.name), quote(t.key)), key).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return stored, err == nil, err
}

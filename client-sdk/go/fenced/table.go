package fenced

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"fencelock.dev/fencelock"
)

// TokenRule says which stored tokens a guarded statement may overwrite. Tokens are unique per
// grant, so NewerOrSame is as safe as StrictlyNewer and only adds "the same lease may touch the
// row again" (needed after a fenced read).
type TokenRule int

const (
	// StrictlyNewer: the row's token must be below the caller's (current_token < $token).
	StrictlyNewer TokenRule = iota
	// NewerOrSame: the row's token must be at most the caller's (current_token <= $token).
	NewerOrSame
)

func (r TokenRule) operator() string {
	if r == NewerOrSame {
		return "<="
	}
	return "<"
}

func (r TokenRule) allows(stored, token int64) bool {
	if r == NewerOrSame {
		return stored <= token
	}
	return stored < token
}

// Outcome is what a guarded statement did.
type Outcome int

const (
	// Applied: the row now carries the caller's token (and its values).
	Applied Outcome = iota + 1
	// Stale: refused — the row carries a token the rule does not let go: a newer holder got there
	// first. Stop; do not retry with this token.
	Stale
	// NoSuchRow: no row has this key; nothing was written.
	NoSuchRow
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Stale:
		return "stale"
	case NoSuchRow:
		return "no_such_row"
	default:
		return "unknown"
	}
}

// Result is a guarded statement's outcome and the row's token after it: the caller's when Applied,
// the one that won when Stale, 0 when NoSuchRow.
type Result struct {
	Outcome      Outcome
	CurrentToken int64
}

// Applied reports whether the write landed (committed, or in your transaction with InTx).
func (r Result) Applied() bool { return r.Outcome == Applied }

// Options name a Table's columns; the zero value means the defaults.
type Options struct {
	// KeyColumn: unique on its own. Default "id".
	KeyColumn string
	// TokenColumn: bigint NOT NULL. Default "current_token".
	TokenColumn string
}

// Table makes guarded writes to one PostgreSQL table through a *sql.DB it borrows (never closes).
type Table struct {
	db                 *sql.DB
	name, key, token   string // checked identifiers
	canHoldPlaceholder bool
}

// Open checks the table's schema and returns its Table. Errors: ErrInvalidArgument naming what is
// wrong — a bad name, no such table or column, a token column that is not bigint NOT NULL, a key
// column without a unique index of its own, the same column twice; ErrUnavailable or ErrInternal
// when the database could not be asked.
func Open(ctx context.Context, db *sql.DB, table string, options Options) (*Table, error) {
	t := &Table{db: db, name: table, key: options.KeyColumn, token: options.TokenColumn}
	if t.key == "" {
		t.key = "id"
	}
	if t.token == "" {
		t.token = "current_token"
	}
	for _, check := range []struct{ name, what string }{{t.name, "table"}, {t.key, "key column"}, {t.token, "token column"}} {
		if err := checkIdentifier(check.name, check.what); err != nil {
			return nil, err
		}
	}
	if t.key == t.token {
		return nil, invalid("the key and token columns are both %q", t.key)
	}
	if err := t.checkSchema(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// CanHoldPlaceholder reports whether every column but the key and the token is nullable or has a
// default, and the key's unique index is not deferrable (INSERT … ON CONFLICT cannot use one), so
// that FenceRead of a missing key can insert a placeholder row.
func (t *Table) CanHoldPlaceholder() bool { return t.canHoldPlaceholder }

func (t *Table) checkSchema(ctx context.Context) error {
	doing := fmt.Sprintf("checking table %q", t.name)
	var oid int64
	var relkind string
	err := t.db.QueryRowContext(ctx,
		"SELECT c.oid::int8, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)",
		quote(t.name)).Scan(&oid, &relkind)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && relkind != "r" && relkind != "p") {
		return invalid("no table named %q (names are case-sensitive)", t.name)
	}
	if err != nil {
		return translate(doing, err)
	}
	rows, err := t.db.QueryContext(ctx,
		"SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef,"+
			" a.attidentity <> '' OR a.attgenerated <> '', a.attnum::int8"+
			"  FROM pg_attribute a WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped", oid)
	if err != nil {
		return translate(doing, err)
	}
	type column struct {
		typ                         string
		notNull, hasDefault, genned bool
		number                      int64
	}
	columns := map[string]column{}
	for rows.Next() {
		var name string
		var c column
		if err := rows.Scan(&name, &c.typ, &c.notNull, &c.hasDefault, &c.genned, &c.number); err != nil {
			rows.Close()
			return translate(doing, err)
		}
		columns[name] = c
	}
	if err := rows.Close(); err != nil {
		return translate(doing, err)
	}
	if err := rows.Err(); err != nil {
		return translate(doing, err)
	}
	token, ok := columns[t.token]
	if !ok {
		return invalid("table %q has no token column %q: add `%s bigint NOT NULL DEFAULT 0`", t.name, t.token, t.token)
	}
	if token.typ != "bigint" {
		return invalid("the token column %s.%s is %s, not bigint", t.name, t.token, token.typ)
	}
	if !token.notNull {
		return invalid("the token column %s.%s must be NOT NULL (a NULL token never compares, and the row could never be written)", t.name, t.token)
	}
	key, ok := columns[t.key]
	if !ok {
		return invalid("table %q has no column %q", t.name, t.key)
	}
	var immediate bool
	err = t.db.QueryRowContext(ctx,
		"SELECT i.indimmediate FROM pg_index i WHERE i.indrelid = $1::int8::oid AND i.indisunique AND i.indisvalid"+
			" AND i.indnkeyatts = 1 AND i.indkey[0] = $2 AND i.indpred IS NULL AND i.indexprs IS NULL"+
			" ORDER BY i.indimmediate DESC LIMIT 1",
		oid, key.number).Scan(&immediate)
	if errors.Is(err, sql.ErrNoRows) {
		return invalid("the key column %s.%s is not unique on its own (make it the PRIMARY KEY or give it a single-column UNIQUE constraint)", t.name, t.key)
	}
	if err != nil {
		return translate(doing, err)
	}
	t.canHoldPlaceholder = immediate
	for name, c := range columns {
		if name != t.key && name != t.token && c.notNull && !c.hasDefault && !c.genned {
			t.canHoldPlaceholder = false
		}
	}
	return nil
}

func checkToken(token int64) error {
	if token < 1 {
		return invalid("token %d is out of range: tokens are 1 .. 2^63-1 (bigint)", token)
	}
	return nil
}

// translate turns a database error into a *fencelock.Error by its SQLSTATE, when the driver
// reports one (lib/pq and pgx do, through a SQLState() method).
func translate(doing string, err error) error {
	var fe *fencelock.Error
	if errors.As(err, &fe) {
		return err
	}
	var coded interface{ SQLState() string }
	state := ""
	if errors.As(err, &coded) {
		state = coded.SQLState()
	}
	code := fencelock.CodeInternal
	switch {
	case state == "40001" || state == "40P01" || state == "55P03":
		code = fencelock.CodeUnavailable // serialization failure, deadlock, lock not available
	case len(state) == 5 && (state[:2] == "08" || state[:2] == "57"):
		code = fencelock.CodeUnavailable // connection exception, operator intervention
	case len(state) == 5 && (state[:2] == "22" || state[:2] == "23" || state[:2] == "42"):
		code = fencelock.CodeInvalidRequest // data exception, constraint violation, syntax or access
	case errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone):
		code = fencelock.CodeUnavailable
	}
	message := doing + ": " + err.Error()
	if code == fencelock.CodeUnavailable {
		message += " (retry)"
	}
	return &fencelock.Error{Code: code, Message: message, Cause: err}
}

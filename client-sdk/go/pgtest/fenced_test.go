package pgtest

// fencelock.dev/fencelock/fenced against the live stack's PostgreSQL 15 through lib/pq.

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"fencelock.dev/fencelock"
	"fencelock.dev/fencelock/fenced"
)

const accounts = "id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, current_token bigint NOT NULL DEFAULT 0"

func open(t *testing.T, db *sql.DB, name string) *fenced.Table {
	t.Helper()
	table, err := fenced.Open(context.Background(), db, name, fenced.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func row(t *testing.T, db *sql.DB, name, id string) (balance, token int64) {
	t.Helper()
	if err := db.QueryRow("SELECT balance, current_token FROM "+name+" WHERE id = $1", id).Scan(&balance, &token); err != nil {
		t.Fatal(err)
	}
	return balance, token
}

func TestANewerTokenWritesAndAnOlderOneIsRefused(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts, "(id, balance) VALUES ('alice', 100)")
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	r, err := accountsTable.Update(ctx, "alice", 5, fenced.StrictlyNewer, fenced.Expr("balance", "balance + {}", 20))
	if err != nil || !r.Applied() || r.CurrentToken != 5 {
		t.Fatalf("newer: %+v, %v", r, err)
	}
	r, err = accountsTable.Update(ctx, "alice", 5, fenced.StrictlyNewer, fenced.Value("balance", 0))
	if err != nil || r.Outcome != fenced.Stale || r.CurrentToken != 5 {
		t.Errorf("the same token, strictly newer: %+v, %v", r, err)
	}
	r, err = accountsTable.Update(ctx, "alice", 4, fenced.NewerOrSame, fenced.Value("balance", 0))
	if err != nil || r.Outcome != fenced.Stale || r.CurrentToken != 5 {
		t.Errorf("older: %+v, %v", r, err)
	}
	r, err = accountsTable.Update(ctx, "alice", 5, fenced.NewerOrSame, fenced.Expr("balance", "balance + {}", 1))
	if err != nil || !r.Applied() {
		t.Errorf("the same token, newer or same: %+v, %v", r, err)
	}
	r, err = accountsTable.Update(ctx, "bob", 9, fenced.StrictlyNewer, fenced.Value("balance", 1))
	if err != nil || r.Outcome != fenced.NoSuchRow {
		t.Errorf("no row: %+v, %v", r, err)
	}
	if balance, token := row(t, db, name, "alice"); balance != 121 || token != 5 {
		t.Errorf("row: %d at %d", balance, token)
	}
	if token, found, err := accountsTable.CurrentToken(ctx, "alice"); err != nil || !found || token != 5 {
		t.Errorf("current token %d, %v, %v", token, found, err)
	}
}

func TestAFencedReadOfAMissingRowLeavesAPlaceholderThatFences(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts)
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	if !accountsTable.CanHoldPlaceholder() {
		t.Fatal("a table of defaults cannot hold a placeholder?")
	}
	r, err := accountsTable.FenceRead(ctx, "carol", 7, fenced.NewerOrSame)
	if err != nil || !r.Applied() {
		t.Fatalf("fence read: %+v, %v", r, err)
	}
	if r, err := accountsTable.Update(ctx, "carol", 6, fenced.NewerOrSame, fenced.Value("balance", 50)); err != nil || r.Outcome != fenced.Stale || r.CurrentToken != 7 {
		t.Errorf("older after the fenced read: %+v, %v", r, err)
	}
	if r, err := accountsTable.Update(ctx, "carol", 7, fenced.NewerOrSame, fenced.Value("balance", 50)); err != nil || !r.Applied() {
		t.Errorf("the reader's own write: %+v, %v", r, err)
	}
	if current, ok, err := accountsTable.RaiseToken(ctx, "carol", 3); err != nil || !ok || current != 7 {
		t.Errorf("raise below: %d, %v, %v", current, ok, err)
	}
	if current, ok, err := accountsTable.RaiseToken(ctx, "carol", 11); err != nil || !ok || current != 11 {
		t.Errorf("raise above: %d, %v, %v", current, ok, err)
	}
}

func TestATableThatCannotHoldAPlaceholderReportsNoSuchRow(t *testing.T) {
	db := database(t)
	name := table(t, db, "id text PRIMARY KEY, body text NOT NULL, current_token bigint NOT NULL DEFAULT 0")
	ctx := ctxFor(t, 20*time.Second)
	strict := open(t, db, name)
	if strict.CanHoldPlaceholder() {
		t.Fatal("a NOT NULL column without a default holds no placeholder")
	}
	if r, err := strict.FenceRead(ctx, "x", 3, fenced.NewerOrSame); err != nil || r.Outcome != fenced.NoSuchRow {
		t.Errorf("fence read: %+v, %v", r, err)
	}
	if _, ok, err := strict.RaiseToken(ctx, "x", 3); err != nil || ok {
		t.Errorf("raise: %v, %v", ok, err)
	}
	// ON CONFLICT cannot use a deferrable unique key: no placeholder there either, and no error.
	name = table(t, db, "id text UNIQUE DEFERRABLE, current_token bigint NOT NULL DEFAULT 0", "(id) VALUES ('a')")
	deferrable := open(t, db, name)
	if deferrable.CanHoldPlaceholder() {
		t.Fatal("a deferrable unique key holds no placeholder")
	}
	if r, err := deferrable.FenceRead(ctx, "x", 3, fenced.NewerOrSame); err != nil || r.Outcome != fenced.NoSuchRow {
		t.Errorf("fence read of a missing key: %+v, %v", r, err)
	}
	if r, err := deferrable.FenceRead(ctx, "a", 3, fenced.NewerOrSame); err != nil || !r.Applied() {
		t.Errorf("fence read: %+v, %v", r, err)
	}
}

func TestTokensNearTwoToTheSixtyThree(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts, "(id) VALUES ('big')")
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	for _, token := range []int64{1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64} {
		if r, err := accountsTable.Update(ctx, "big", token, fenced.StrictlyNewer, fenced.Value("balance", 1)); err != nil || !r.Applied() || r.CurrentToken != token {
			t.Errorf("%d: %+v, %v", token, r, err)
		}
	}
	if r, err := accountsTable.Update(ctx, "big", math.MaxInt64-1, fenced.StrictlyNewer, fenced.Value("balance", 2)); err != nil || r.Outcome != fenced.Stale || r.CurrentToken != math.MaxInt64 {
		t.Errorf("below the top: %+v, %v", r, err)
	}
	for _, token := range []int64{0, -1} {
		if _, err := accountsTable.Update(ctx, "big", token, fenced.StrictlyNewer, fenced.Value("balance", 2)); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("token %d: %v", token, err)
		}
	}
}

func TestSchemaProblemsAreClearErrors(t *testing.T) {
	db := database(t)
	ctx := ctxFor(t, 20*time.Second)
	cases := []struct{ columns, want string }{
		{"id text PRIMARY KEY, balance bigint", "no token column"},
		{"id text PRIMARY KEY, current_token integer NOT NULL DEFAULT 0", "not bigint"},
		{"id text PRIMARY KEY, current_token bigint", "NOT NULL"},
		{"id text, current_token bigint NOT NULL DEFAULT 0", "not unique"},
		{"key text PRIMARY KEY, current_token bigint NOT NULL DEFAULT 0", "no column \"id\""},
	}
	for _, c := range cases {
		name := table(t, db, c.columns)
		_, err := fenced.Open(ctx, db, name, fenced.Options{})
		if !errors.Is(err, fencelock.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q, got %v", c.columns, c.want, err)
		}
	}
	for _, bad := range []string{"no_such_table_here", "Bad-Name", "x; DROP TABLE y"} {
		if _, err := fenced.Open(ctx, db, bad, fenced.Options{}); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestBadValuesAndExpressionsAreRefusedAndChangeNothing(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts, "(id, balance) VALUES ('alice', 100)")
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	for _, set := range [][]fenced.Assignment{
		nil,
		{fenced.Value("current_token", 1)},
		{fenced.Value("id", "x")},
		{fenced.Value("bad column", 1)},
		{fenced.Expr("balance", "0; DROP TABLE x")},
		{fenced.Expr("balance", "balance + {}")},
		{fenced.Expr("balance", "'1'")},
		{fenced.Value("balance", "not a number")},
		{fenced.Value("no_such_column", 1)},
	} {
		if _, err := accountsTable.Update(ctx, "alice", 9, fenced.StrictlyNewer, set...); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("%+v: %v", set, err)
		}
	}
	if balance, token := row(t, db, name, "alice"); balance != 100 || token != 0 {
		t.Errorf("row changed: %d at %d", balance, token)
	}
}

func TestAppliedMeansCommitted(t *testing.T) {
	db := database(t)
	// A deferred constraint is checked at COMMIT: the UPDATE succeeds and the COMMIT fails.
	name := table(t, db, "id text PRIMARY KEY, slot int NOT NULL, current_token bigint NOT NULL DEFAULT 0,"+
		" UNIQUE (slot) DEFERRABLE INITIALLY DEFERRED", "(id, slot) VALUES ('a', 1), ('b', 2)")
	ctx := ctxFor(t, 20*time.Second)
	slots := open(t, db, name)
	r, err := slots.Update(ctx, "b", 3, fenced.StrictlyNewer, fenced.Value("slot", 1))
	if err == nil || r.Applied() {
		t.Fatalf("a write whose commit failed was reported: %+v, %v", r, err)
	}
	var slot int
	var token int64
	if err := db.QueryRow("SELECT slot, current_token FROM "+name+" WHERE id = 'b'").Scan(&slot, &token); err != nil || slot != 2 || token != 0 {
		t.Errorf("row b: slot %d token %d, %v", slot, token, err)
	}
	// Applied is there for a connection opened afterwards.
	r, err = slots.Update(ctx, "b", 3, fenced.StrictlyNewer, fenced.Value("slot", 7))
	if err != nil || !r.Applied() {
		t.Fatal(r, err)
	}
	other := database(t)
	if err := other.QueryRow("SELECT slot FROM " + name + " WHERE id = 'b'").Scan(&slot); err != nil || slot != 7 {
		t.Errorf("another connection sees slot %d, %v", slot, err)
	}
}

func TestInTxTheWriteLandsWithTheCallersCommitOrNotAtAll(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts, "(id, balance) VALUES ('alice', 100)")
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := accountsTable.InTx(tx)
		r, err := in.FenceRead(ctx, "alice", 10, fenced.NewerOrSame)
		if err != nil || !r.Applied() {
			t.Fatal(r, err)
		}
		var balance int64
		if err := tx.QueryRowContext(ctx, "SELECT balance FROM "+name+" WHERE id = 'alice'").Scan(&balance); err != nil {
			t.Fatal(err)
		}
		if r, err := in.Update(ctx, "alice", 10, fenced.NewerOrSame, fenced.Value("balance", balance+20)); err != nil || !r.Applied() {
			t.Fatal(r, err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		balance, token := row(t, db, name, "alice")
		if commit && (balance != 120 || token != 10) || !commit && (balance != 100 || token != 0) {
			t.Errorf("commit %v: %d at %d", commit, balance, token)
		}
	}
}

func TestSerializableConflictsAreUnavailable(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts, "(id) VALUES ('alice')")
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	first, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	second, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Rollback()
	var n int
	_ = second.QueryRowContext(ctx, "SELECT count(*) FROM "+name).Scan(&n) // takes its snapshot now
	if r, err := accountsTable.InTx(first).Update(ctx, "alice", 1, fenced.StrictlyNewer, fenced.Value("balance", 1)); err != nil || !r.Applied() {
		t.Fatal(r, err)
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = accountsTable.InTx(second).Update(ctx, "alice", 2, fenced.StrictlyNewer, fenced.Value("balance", 2))
	if !errors.Is(err, fencelock.ErrUnavailable) {
		t.Errorf("want unavailable (40001), got %v", err)
	}
}

func TestConcurrentWritersWithInterleavedTokensNeverApplyAnOlderOne(t *testing.T) {
	db := database(t)
	name := table(t, db, accounts, "(id) VALUES ('hot')")
	ctx := ctxFor(t, 60*time.Second)
	accountsTable := open(t, db, name)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for writer := 0; writer < 8; writer++ {
		wg.Add(1)
		go func(writer int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				token := int64(i*8 + writer + 1)
				_, err := accountsTable.Update(ctx, "hot", token, fenced.StrictlyNewer, fenced.Value("balance", token))
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		}(writer)
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatal(failures[0])
	}
	if balance, token := row(t, db, name, "hot"); token != 160 || balance != 160 {
		t.Errorf("final row: balance %d at token %d", balance, token)
	}
}

func TestAPausedHoldersStaleWriteIsRefused(t *testing.T) {
	db := database(t)
	client := liveClient(t)
	name := table(t, db, accounts, "(id) VALUES ('alice')")
	ctx := ctxFor(t, 20*time.Second)
	accountsTable := open(t, db, name)
	lock := uniqueName("account-alice")
	// The first holder's lease runs out while it is "paused"; a second holder gets the lock.
	paused := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, lock, 200*time.Millisecond, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
	})
	<-paused.Done()
	time.Sleep(250 * time.Millisecond)
	next := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, lock, 5*time.Second, fencelock.AcquireOptions{})
	})
	defer next.Release(ctx)
	if r, err := accountsTable.Update(ctx, "alice", next.Token(), fenced.StrictlyNewer, fenced.Value("balance", 20)); err != nil || !r.Applied() {
		t.Fatal(r, err)
	}
	r, err := accountsTable.Update(ctx, "alice", paused.Token(), fenced.StrictlyNewer, fenced.Value("balance", 999))
	if err != nil || r.Outcome != fenced.Stale || r.CurrentToken != next.Token() {
		t.Errorf("the paused holder's write: %+v, %v", r, err)
	}
	if balance, _ := row(t, db, name, "alice"); balance != 20 {
		t.Errorf("balance %d", balance)
	}
}

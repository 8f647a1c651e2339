package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"fencelock.dev/fencelock"
)

func uniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// database opens the live stack's PostgreSQL, closed at the test's end.
func database(t *testing.T) *sql.DB {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("no PostgreSQL (run client-sdk/go/test.sh)")
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// table creates a table of a unique name from columns, dropped at the test's end, and returns its
// name.
func table(t *testing.T, db *sql.DB, columns string, rows ...string) string {
	t.Helper()
	name := uniqueName("t")
	mustExec(t, db, "CREATE TABLE "+name+" ("+columns+")")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + name) })
	for _, row := range rows {
		mustExec(t, db, "INSERT INTO "+name+" "+row)
	}
	return name
}

func mustExec(t *testing.T, db *sql.DB, statement string, args ...any) {
	t.Helper()
	if _, err := db.Exec(statement, args...); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func liveClient(t *testing.T) *fencelock.Client {
	t.Helper()
	if os.Getenv("FENCELOCK_ENDPOINT") == "" {
		t.Skip("no live stack (run client-sdk/go/test.sh)")
	}
	client, err := fencelock.New(fencelock.OptionsFromEnvironment())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// patiently retries an acquire answered 503 (10 times, 0.1 s apart): see the client's tests.
func patiently(t *testing.T, grant func() (*fencelock.Lease, error)) *fencelock.Lease {
	t.Helper()
	for i := 0; ; i++ {
		lease, err := grant()
		if err == nil {
			return lease
		}
		if !errors.Is(err, fencelock.ErrUnavailable) || i == 10 {
			t.Fatalf("acquire: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

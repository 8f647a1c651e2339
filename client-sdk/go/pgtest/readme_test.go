package pgtest

// The README's example runs as written — its text is read from README.md, not retyped — with
// `go run`, against the live stack's fencelockd and PostgreSQL, in a schema of its own; what it
// wrote is then still there for a new connection, with the token of the lock it took.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

func TestTheREADMEsExampleRunsAsWritten(t *testing.T) {
	db := database(t)
	client := liveClient(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 || !strings.HasPrefix(blocks[0][1], "package main\n") {
		t.Fatal("the README's first go block is not a program")
	}
	library, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	module := "module readme\n\ngo 1.19\n\nrequire (\n\tfencelock.dev/fencelock v0.0.0\n\tgithub.com/lib/pq v1.10.7\n)\n\n" +
		"replace fencelock.dev/fencelock => " + library + "\n\nreplace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(blocks[0][1]), 0o644); err != nil {
		t.Fatal(err)
	}

	schema := uniqueName("readme")
	mustExec(t, db, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { _, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE") })
	url := os.Getenv("DATABASE_URL")
	separator := "?"
	if strings.Contains(url, "?") {
		separator = "&"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, "go", "run", ".")
	run.Dir = dir
	run.Env = append(os.Environ(), "DATABASE_URL="+url+separator+"search_path="+schema)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	token, err := client.CurrentToken(ctx, "account-alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "deposited 20 with token") {
		t.Errorf("output: %s", out)
	}
	var balance, stored int64
	if err := db.QueryRow("SELECT balance, current_token FROM "+schema+".accounts WHERE id = 'alice'").Scan(&balance, &stored); err != nil {
		t.Fatal(err)
	}
	if balance != 20 || stored != token {
		t.Errorf("row alice: balance %d at token %d; the lock's token is %d", balance, stored, token)
	}
	if status, err := client.Status(ctx, "account-alice"); err != nil || status.Held {
		t.Errorf("the example left its lock held: %+v, %v", status, err)
	}
}

// The README's other go blocks are function bodies returning an error: each must compile with the
// names it takes as given.
const fragmentPrelude = `package main

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"fencelock.dev/fencelock"
	"fencelock.dev/fencelock/fenced"
)

type batch struct{}

var (
	client   *fencelock.Client
	db       *sql.DB
	accounts *fenced.Table
	lease    *fencelock.Lease
	batches  []batch
	store    interface {
		Write(ctx context.Context, b batch, token int64) error
	}
	_ = errors.New
	_ = time.Second
	_ = fenced.Value
)

func transfer(ctx context.Context, alice, bob int64) error     { return nil }
func runReport(ctx context.Context, slot int, token int64) error { return nil }

func main() {}
`

func TestTheREADMEsFragmentsCompile(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	library, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	program := fragmentPrelude
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	for i, block := range blocks[1:] {
		program += "\nfunc fragment" + strconv.Itoa(i) + "(ctx context.Context) error {\n" + block[1] + "}\n"
	}
	if len(blocks) < 4 {
		t.Fatalf("only %d go blocks", len(blocks))
	}
	dir := t.TempDir()
	module := "module fragments\n\ngo 1.19\n\nrequire fencelock.dev/fencelock v0.0.0\n\nreplace fencelock.dev/fencelock => " + library + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(module), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", os.DevNull, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s\n%s", err, out, program)
	}
}

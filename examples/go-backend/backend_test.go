package main

// The backend against the live stack (client-sdk/go/test.sh): concurrent deposits lose nothing,
// and a paused holder's write with its stale token is refused by PostgreSQL.

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"fencelock.dev/fencelock"
	"fencelock.dev/fencelock/fenced"
)

type live struct {
	locks  *fencelock.Client
	db     *sql.DB
	server *httptest.Server
}

func start(t *testing.T) live {
	t.Helper()
	if os.Getenv("FENCELOCK_ENDPOINT") == "" || os.Getenv("DATABASE_URL") == "" {
		t.Skip("no live stack (run client-sdk/go/test.sh)")
	}
	locks, err := fencelock.New(fencelock.OptionsFromEnvironment())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, schema); err != nil {
		t.Fatal(err)
	}
	bank, err := NewBank(ctx, locks, db)
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(bank)
	t.Cleanup(func() { server.Close(); db.Close(); locks.Close() })
	return live{locks, db, server}
}

func uniqueAccount() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return "acct-" + hex.EncodeToString(b)
}

func (l live) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var data []byte
	if body != nil {
		data, _ = json.Marshal(body)
	}
	request, _ := http.NewRequest(method, l.server.URL+path, bytes.NewReader(data))
	request.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 20 * time.Second}
	response, err := client.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	answer := map[string]any{}
	decoder := json.NewDecoder(response.Body)
	decoder.UseNumber()
	_ = decoder.Decode(&answer)
	return response.StatusCode, answer
}

// deposit posts a deposit, trying again (bounded) when told to, as a caller would.
func (l live) deposit(t *testing.T, account string, amount int) (int, map[string]any) {
	t.Helper()
	for i := 0; ; i++ {
		status, answer := l.call(t, "POST", "/accounts/"+account+"/deposit", map[string]int{"amount": amount})
		if (status != 409 && status != 503) || i == 10 {
			return status, answer
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestConcurrentDepositsLoseNoUpdate(t *testing.T) {
	l := start(t)
	account := uniqueAccount()
	var mu sync.Mutex
	statuses := map[int]int{}
	tokens := map[string]bool{}
	sum := 0
	var wg sync.WaitGroup
	for worker := 0; worker < 8; worker++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				amount := (worker*5+i)%7 + 1
				status, answer := l.deposit(t, account, amount)
				mu.Lock()
				statuses[status]++
				if status == 200 {
					sum += amount
					tokens[answer["token"].(json.Number).String()] = true
				}
				mu.Unlock()
			}
		}(worker)
	}
	wg.Wait()
	if statuses[200] != 40 || len(tokens) != 40 {
		t.Fatalf("statuses %v, %d distinct tokens", statuses, len(tokens))
	}
	status, answer := l.call(t, "GET", "/accounts/"+account, nil)
	if status != 200 || answer["balance"].(json.Number).String() != jsonNumber(sum) {
		t.Errorf("balance %v, want %d", answer, sum)
	}
	// Every deposit answered 200 was committed: a connection of our own, opened now, sees it.
	other, _ := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	defer other.Close()
	var balance int
	if err := other.QueryRow("SELECT balance FROM accounts WHERE id = $1", account).Scan(&balance); err != nil || balance != sum {
		t.Errorf("the database holds %d (%v), want %d", balance, err, sum)
	}
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestAStaleTokensWriteIsRefused(t *testing.T) {
	l := start(t)
	account := uniqueAccount()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A holder that then pauses: its lease runs out, unrenewed.
	var stale *fencelock.Lease
	for i := 0; stale == nil; i++ {
		var err error
		stale, err = l.locks.Acquire(ctx, "account-"+account, 200*time.Millisecond, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
		if err != nil && (!errors.Is(err, fencelock.ErrUnavailable) || i == 10) {
			t.Fatal(err)
		}
	}
	<-stale.Done()
	time.Sleep(250 * time.Millisecond)
	status, answer := l.deposit(t, account, 10)
	if status != 200 {
		t.Fatalf("deposit: %d %v", status, answer)
	}
	newer, _ := answer["token"].(json.Number).Int64()
	if newer <= stale.Token() {
		t.Fatalf("tokens %d then %d", stale.Token(), newer)
	}
	// The paused holder wakes up and writes with its old token: PostgreSQL refuses it.
	accounts, err := fenced.Open(ctx, l.db, "accounts", fenced.Options{})
	if err != nil {
		t.Fatal(err)
	}
	written, err := accounts.Update(ctx, account, stale.Token(), fenced.StrictlyNewer, fenced.Value("balance", 1_000_000))
	if err != nil || written.Outcome != fenced.Stale || written.CurrentToken != newer {
		t.Fatalf("the stale write: %+v, %v", written, err)
	}
	if _, answer := l.call(t, "GET", "/accounts/"+account, nil); answer["balance"].(json.Number).String() != "10" {
		t.Errorf("balance %v", answer)
	}
}

func TestBadRequestsAreRefused(t *testing.T) {
	l := start(t)
	for _, body := range []any{map[string]any{"amount": 0}, map[string]any{"amount": "5"}, []int{1}, map[string]any{"amount": 1.5}} {
		if status, _ := l.call(t, "POST", "/accounts/a/deposit", body); status != 400 {
			t.Errorf("%v: %d", body, status)
		}
	}
	if status, _ := l.call(t, "POST", "/accounts/a%20b/deposit", map[string]int{"amount": 1}); status != 404 {
		t.Errorf("a bad account id: %d", status)
	}
	if status, _ := l.call(t, "GET", "/nothing", nil); status != 404 {
		t.Errorf("/nothing: %d", status)
	}
	if status, _ := l.call(t, "DELETE", "/accounts/a", nil); status != 405 {
		t.Errorf("DELETE: %d", status)
	}
}

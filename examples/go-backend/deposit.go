package main

// The part to copy: an http.Handler whose deposit takes lock "account-<id>", fences its read of the
// row with the lease's token, writes the new balance guarded by the same token and commits, all in
// one transaction, then releases. If the handler pauses past its lease and another request takes
// the lock, the late write is refused by PostgreSQL (the row carries a newer token) and the caller
// gets 409 — never a lost update.
//
//	POST /accounts/{id}/deposit  {"amount": 25}  ->  200 {"account": "<id>", "balance": 125, "token": 17}
//	GET  /accounts/{id}                          ->  200 {"account": "<id>", "balance": 125}

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"fencelock.dev/fencelock"
	"fencelock.dev/fencelock/fenced"
)

const (
	maxBody   = 4096
	maxAmount = 1_000_000_000_000
	// lockTTL is longer than a deposit takes; the lease is renewed meanwhile if the database is slow.
	lockTTL  = 10 * time.Second
	lockWait = 5 * time.Second
)

var accountPath = regexp.MustCompile(`^/accounts/([A-Za-z0-9_-]{1,64})(/deposit)?$`)

// errStale: a newer lease touched the account first; this deposit changed nothing.
var errStale = errors.New("a newer lease already touched this account; nothing changed")

// Bank serves the accounts. Safe for concurrent use.
type Bank struct {
	locks    *fencelock.Client
	db       *sql.DB
	accounts *fenced.Table
}

// NewBank checks the accounts table (schema.sql) and returns the handler.
func NewBank(ctx context.Context, locks *fencelock.Client, db *sql.DB) (*Bank, error) {
	accounts, err := fenced.Open(ctx, db, "accounts", fenced.Options{})
	if err != nil {
		return nil, err
	}
	return &Bank{locks: locks, db: db, accounts: accounts}, nil
}

type depositAnswer struct {
	Account string `json:"account"`
	Balance int64  `json:"balance"`
	Token   int64  `json:"token,omitempty"`
}

// Deposit adds amount to account under the account's lock, fenced by the lease's token.
func (b *Bank) Deposit(ctx context.Context, account string, amount int64) (depositAnswer, error) {
	var answer depositAnswer
	committed := false
	err := b.locks.WithLock(ctx, "account-"+account, lockTTL, fencelock.AcquireOptions{Wait: lockWait},
		func(ctx context.Context, lease *fencelock.Lease) error {
			// ctx is cancelled if the lease is lost: the transaction is then rolled back.
			tx, err := b.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			accounts := b.accounts.InTx(tx)
			// Fence the read: from now on an older holder's write to this row is refused. A new
			// account gets its row here (balance 0).
			read, err := accounts.FenceRead(ctx, account, lease.Token(), fenced.NewerOrSame)
			if err != nil {
				return err
			}
			if !read.Applied() {
				return errStale
			}
			var balance int64
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", account).Scan(&balance); err != nil {
				return err
			}
			written, err := accounts.Update(ctx, account, lease.Token(), fenced.NewerOrSame, fenced.Value("balance", balance+amount))
			if err != nil {
				return err
			}
			if !written.Applied() {
				return errStale
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			committed = true
			answer = depositAnswer{Account: account, Balance: balance + amount, Token: lease.Token()}
			return nil
		})
	if committed {
		// Landed, even if the lease was lost right after the commit: the guarded write is the truth.
		return answer, nil
	}
	return answer, err
}

// Balance reads account's balance (0 for an account never written).
func (b *Bank) Balance(ctx context.Context, account string) (depositAnswer, error) {
	answer := depositAnswer{Account: account}
	err := b.db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", account).Scan(&answer.Balance)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return answer, err
}

func (b *Bank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	match := accountPath.FindStringSubmatch(r.URL.Path)
	switch {
	case match == nil:
		send(w, http.StatusNotFound, map[string]string{"error": "no such path"})
	case match[2] == "" && r.Method == http.MethodGet:
		answer, err := b.Balance(r.Context(), match[1])
		b.reply(w, answer, err)
	case match[2] != "" && r.Method == http.MethodPost:
		var body struct {
			Amount *int64 `json:"amount"`
		}
		decoder := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
		if err := decoder.Decode(&body); err != nil || body.Amount == nil || *body.Amount < 1 || *body.Amount > maxAmount {
			send(w, http.StatusBadRequest, map[string]string{"error": "send {\"amount\": N}, N an integer 1 .. " + strconv.Itoa(maxAmount)})
			return
		}
		answer, err := b.Deposit(r.Context(), match[1], *body.Amount)
		b.reply(w, answer, err)
	default:
		send(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET /accounts/{id} or POST /accounts/{id}/deposit"})
	}
}

// reply turns fencelock's and fenced's errors into answers a caller can act on.
func (b *Bank) reply(w http.ResponseWriter, answer depositAnswer, err error) {
	var failure *fencelock.Error
	errors.As(err, &failure)
	switch {
	case err == nil:
		send(w, http.StatusOK, answer)
	case errors.Is(err, fencelock.ErrLocked): // busy longer than our wait
		retry := 1
		if failure.RetryAfter > time.Second {
			retry = int(failure.RetryAfter.Round(time.Second) / time.Second)
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		send(w, http.StatusConflict, map[string]string{"error": "the account is busy; retry"})
	case errors.Is(err, errStale), errors.Is(err, fencelock.ErrLeaseLost), errors.Is(err, context.Canceled):
		send(w, http.StatusConflict, map[string]string{"error": "the lease was lost; nothing changed"})
	case errors.Is(err, fencelock.ErrUnavailable), errors.Is(err, fencelock.ErrTransport):
		w.Header().Set("Retry-After", "1")
		send(w, http.StatusServiceUnavailable, map[string]string{"error": "the lock service or the database is unavailable; retry"})
	default:
		log.Printf("go-backend: %v", err)
		send(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
	}
}

func send(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

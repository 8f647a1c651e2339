package fencelock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Kind says what a Lease holds.
type Kind int

const (
	// KindLock: one lock (Client.Acquire).
	KindLock Kind = iota
	// KindSet: several locks at once, all or none (Client.AcquireSet).
	KindSet
	// KindPermit: one permit of a counting semaphore (Client.AcquirePermit).
	KindPermit
	// KindRead: a read grant of a read/write lock, shared with other reads (Client.AcquireRead).
	KindRead
	// KindWrite: a write grant of a read/write lock, held alone (Client.AcquireWrite).
	KindWrite
)

func (k Kind) String() string {
	switch k {
	case KindSet:
		return "set"
	case KindPermit:
		return "permit"
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	default:
		return "lock"
	}
}

// Lease is one grant: a lock, a lock set, a semaphore permit or a read/write lock's read or write
// grant, its fencing token(s) and a conservative deadline. Send the token with every write to the protected resource.
//
// The deadline is the client's own send time of the granting (or last extending) request plus
// the waited_ms and validity_ms the service answered: never later than the truth, however long a
// waiting acquire waited (docs/api.md, "Acquire"). Deadline carries Go's monotonic clock reading.
//
// A lease ends once: lost (an extend was refused, or it could not be renewed before its
// deadline) or released. Done is closed then and Err says which. Unless renewal was turned off,
// a goroutine extends the lease until it ends (see RenewOptions), so call Release when the work
// is done.
//
// The lease string (LeaseString) proves ownership: it is a secret, never shown by String or
// in an error. All methods are safe for concurrent use.
type Lease struct {
	client  *Client
	kind    Kind
	names   []string // sorted; one name for all but a set
	tokens  []int64  // tokens[i] fences names[i]
	permits int
	slot    int
	secret  string

	mu       sync.Mutex
	ttl      time.Duration
	deadline time.Time
	renewals int
	err      error // set once, when done is closed
	done     chan struct{}

	stop      chan struct{} // closed to stop the keeper
	stopOnce  sync.Once
	keeperEnd chan struct{} // closed when the keeper goroutine returned
}

func newLease(client *Client, kind Kind, names []string, tokens []int64, secret string, ttl time.Duration, deadline time.Time) *Lease {
	return &Lease{client: client, kind: kind, names: names, tokens: tokens, secret: secret,
		ttl: ttl, deadline: deadline, done: make(chan struct{}), stop: make(chan struct{}),
		keeperEnd: make(chan struct{})}
}

// Kind is KindLock, KindSet, KindPermit, KindRead or KindWrite.
func (l *Lease) Kind() Kind { return l.kind }

// Name is the lock's, semaphore's or read/write lock's name; for a set, its names joined by "," (for messages).
func (l *Lease) Name() string { return strings.Join(l.names, ",") }

// Names are the names the lease holds, sorted (one for all but a set).
func (l *Lease) Names() []string { return append([]string(nil), l.names...) }

// Token is the fencing token of a lock, a permit or a read/write lock's grant: positive, below
// 2^63, greater for every later grant of the same name (a write grant's is above every earlier
// grant's, reads included). 0 for a set: use TokenOf.
func (l *Lease) Token() int64 {
	if l.kind == KindSet {
		return 0
	}
	return l.tokens[0]
}

// TokenOf is the token that fences writes to the resource of name (a set's names each have their
// own); false when the lease does not hold name.
func (l *Lease) TokenOf(name string) (int64, bool) {
	for i, n := range l.names {
		if n == name {
			return l.tokens[i], true
		}
	}
	return 0, false
}

// Tokens maps each name to its token.
func (l *Lease) Tokens() map[string]int64 {
	tokens := make(map[string]int64, len(l.names))
	for i, n := range l.names {
		tokens[n] = l.tokens[i]
	}
	return tokens
}

// Permits is a permit's semaphore permit count; 0 for any other kind.
func (l *Lease) Permits() int { return l.permits }

// Slot is the slot a permit holds, 0 .. Permits-1: a resource guarded by a semaphore fences per
// (name, slot). 0 for any other kind.
func (l *Lease) Slot() int { return l.slot }

// LeaseString is the secret that proves ownership to extend and release. Do not log it.
func (l *Lease) LeaseString() string { return l.secret }

// TTL is the ttl of the grant or of the last extend.
func (l *Lease) TTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl
}

// Deadline is when the lease must no longer be relied on unless extended.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Remaining is the time until Deadline, 0 once it passed.
func (l *Lease) Remaining() time.Duration {
	if left := time.Until(l.Deadline()); left > 0 {
		return left
	}
	return 0
}

// Valid is true before the deadline while the lease has not ended. A valid lease may still have
// been taken over if this process was paused: that is what the token is for.
func (l *Lease) Valid() bool {
	select {
	case <-l.done:
		return false
	default:
		return time.Now().Before(l.Deadline())
	}
}

// Done is closed when the lease ends: lost, or released. Like a context's Done.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease lasts. After Done is closed it is ErrReleased after Release, or an
// *Error with CodeLeaseLost whose Cause says why (a refused extend — errors.Is(err, ErrNotHeld)
// — or the last failed renewal; nil when a renewal bound was reached or renewal was off).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Renewals is how many times the keeper extended the lease.
func (l *Lease) Renewals() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewals
}

// String shows the lease without its secret.
func (l *Lease) String() string {
	state := fmt.Sprintf("%v left", l.Remaining().Round(time.Millisecond))
	if err := l.Err(); err != nil {
		state = "ended"
	}
	switch l.kind {
	case KindSet:
		return fmt.Sprintf("Lease(set %v, tokens %v, %s)", l.names, l.tokens, state)
	case KindPermit:
		return fmt.Sprintf("Lease(permit %s %d/%d, token %d, %s)", l.names[0], l.slot, l.permits, l.tokens[0], state)
	default:
		return fmt.Sprintf("Lease(%v %s, token %d, %s)", l.kind, l.names[0], l.tokens[0], state)
	}
}

// Extend makes the lease's remaining ttl at least ttl (0: the lease's TTL) on the lock nodes and
// moves Deadline. It never shortens the lease on the nodes. Errors: ErrNotHeld (the lease is gone:
// it is then marked lost), ErrUnavailable, ErrTransport, ErrDenied, ErrInvalidArgument; and
// ErrLeaseLost or ErrReleased when the lease had already ended.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.Err(); err != nil {
		return err
	}
	if ttl == 0 {
		ttl = l.TTL()
	}
	deadline, err := l.client.extend(ctx, l, ttl)
	if err != nil {
		if isCode(err, CodeNotHeld) {
			l.end(&Error{Code: CodeLeaseLost, Message: "the lease was refused", Cause: err})
		}
		return err
	}
	if !l.renew(ttl, deadline) {
		return l.Err()
	}
	return nil
}

// Release stops renewing and releases the lease: true iff it still held the lock (a set: every
// name; a permit: its slot; a read/write lock's grant: that grant). Idempotent; after it, Done is closed and Err is ErrReleased unless the
// lease had been lost before. A failed release (ErrUnavailable, ErrTransport) leaves the lock to
// its ttl; retrying is safe.
func (l *Lease) Release(ctx context.Context) (bool, error) {
	l.stopKeeper()
	l.end(ErrReleased)
	return l.client.release(ctx, l)
}

// renew moves the deadline after a successful extend; false (and no change) once ended.
func (l *Lease) renew(ttl time.Duration, deadline time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	l.ttl = ttl
	l.deadline = deadline
	return true
}

// end ends the lease with err, once; false when it had ended already.
func (l *Lease) end(err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	l.err = err
	close(l.done)
	return true
}

func (l *Lease) stopKeeper() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.keeperEnd
}

func isCode(err error, code Code) bool {
	e, ok := err.(*Error)
	return ok && e.Code == code
}

package fencelock

// Read/write locks (POST /v1/rwlocks/{name}, docs/api.md): any number of read grants at a time,
// or one write grant. A grant is a Lease like any other — extended, released and kept by the same
// code, which picks the /v1/rwlocks path by the lease's kind — so this file only asks for grants
// and reads the status.

import (
	"context"
	"time"
)

// RWLockStatus is what GET /v1/rwlocks/{name} says: the grants held on a majority of the lock
// nodes. Never a lease.
type RWLockStatus struct {
	// Mode: "read" or "write" while held; "" when free.
	Mode string
	// Holders: the grants held, by token (one for a write).
	Holders []RWLockHolder
	// WriterWaiting: a writer waits for the lock (as some node records it); new reads are refused
	// meanwhile.
	WriterWaiting bool
}

// RWLockHolder is one grant of a read/write lock as its status tells it.
type RWLockHolder struct {
	// Token: the grant's fencing token.
	Token int64
	// Owner: what the holder sent as its owner; "" when none was sent.
	Owner string
	// Remaining: until fewer than a majority of lock nodes hold the grant.
	Remaining time.Duration
}

// AcquireRead takes a read grant of read/write lock name for ttl — shared with other reads —
// waiting up to opts.Wait while a write grant is held or a writer waits, and returns its Lease
// (Kind KindRead), renewed in the background unless opts.Renew says otherwise: call Release when
// done. Its token is from the counter of name (shared with the lock name, which a read/write lock
// does not exclude). Readers hold at once, so a resource written under read grants fences per
// reader. Retried only when its request certainly was not sent; opts.RequestID is refused.
//
// Errors as Acquire (ErrLocked: a write grant is held or a writer waits, and the wait ran out;
// Error.RetryAfter when known).
func (c *Client) AcquireRead(ctx context.Context, name string, ttl time.Duration, opts AcquireOptions) (*Lease, error) {
	return c.acquireRW(ctx, KindRead, name, ttl, opts)
}

// AcquireWrite takes the write grant of read/write lock name for ttl — held alone — waiting up to
// opts.Wait while anything is held, and returns its Lease (Kind KindWrite) as AcquireRead does.
// While it waits, new reads are refused, so a stream of readers cannot starve it; readers already
// holding keep their grants until they release or expire. Its token is above every earlier
// grant's of name, reads included, so a store that fences on it refuses a stale reader's write
// once the writer wrote.
//
// Errors as AcquireRead (ErrLocked: held, and the wait ran out).
func (c *Client) AcquireWrite(ctx context.Context, name string, ttl time.Duration, opts AcquireOptions) (*Lease, error) {
	return c.acquireRW(ctx, KindWrite, name, ttl, opts)
}

func (c *Client) acquireRW(ctx context.Context, kind Kind, name string, ttl time.Duration, opts AcquireOptions) (*Lease, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := onlyForALock(opts); err != nil {
		return nil, err
	}
	request, err := grantBody(ttl, opts)
	if err != nil {
		return nil, err
	}
	request.Mode = kind.String()
	lease, err := c.grant(ctx, kind, []string{name}, "/v1/rwlocks/"+name, request, ttl)
	if err != nil {
		return nil, err
	}
	return c.hold(ctx, lease, opts.Renew)
}

// RWLockStatus says how read/write lock name is held: its mode, its grants (token, owner, time
// left) and whether a writer waits. It needs the right "read"; retried like Status.
//
// Errors: ErrInvalidArgument, ErrDenied, ErrUnavailable (the nodes that did not answer could hold
// it), ErrRateLimited, ErrTransport, ErrInternal; the context's error when ctx ended first.
func (c *Client) RWLockStatus(ctx context.Context, name string) (RWLockStatus, error) {
	if err := checkName(name); err != nil {
		return RWLockStatus{}, err
	}
	var answer rwlockAnswer
	if err := c.read(ctx, "GET", "/v1/rwlocks/"+name, &answer); err != nil {
		return RWLockStatus{}, err
	}
	return answer.status()
}

// rwlockAnswer is a read/write lock's status as GET /v1/rwlocks/{name}, and each entry of the
// read/write lock listing, words it.
type rwlockAnswer struct {
	Mode    *string `json:"mode"`
	Holders []struct {
		Token       *int64  `json:"token"`
		Owner       *string `json:"owner"`
		RemainingMs *int64  `json:"remaining_ms"`
	} `json:"holders"`
	WriterWaiting *bool `json:"writer_waiting"`
}

func (answer rwlockAnswer) status() (RWLockStatus, error) {
	if answer.Holders == nil || answer.WriterWaiting == nil ||
		(answer.Mode != nil && *answer.Mode != "read" && *answer.Mode != "write") {
		return RWLockStatus{}, internal("the service's answer is not a read/write lock's status")
	}
	status := RWLockStatus{Holders: make([]RWLockHolder, 0, len(answer.Holders)), WriterWaiting: *answer.WriterWaiting}
	if answer.Mode != nil {
		status.Mode = *answer.Mode
	}
	for _, holder := range answer.Holders {
		if holder.Token == nil || *holder.Token < 1 || holder.RemainingMs == nil || *holder.RemainingMs < 0 {
			return RWLockStatus{}, internal("a holder lacks a valid token or remaining_ms")
		}
		entry := RWLockHolder{Token: *holder.Token, Remaining: time.Duration(*holder.RemainingMs) * time.Millisecond}
		if holder.Owner != nil {
			entry.Owner = *holder.Owner
		}
		status.Holders = append(status.Holders, entry)
	}
	return status, nil
}

// WithReadLock is WithLock for a read grant (AcquireRead).
func (c *Client) WithReadLock(ctx context.Context, name string, ttl time.Duration, opts AcquireOptions, work func(ctx context.Context, lease *Lease) error) error {
	lease, err := c.AcquireRead(ctx, name, ttl, opts)
	if err != nil {
		return err
	}
	return c.run(ctx, lease, work)
}

// WithWriteLock is WithLock for a write grant (AcquireWrite).
func (c *Client) WithWriteLock(ctx context.Context, name string, ttl time.Duration, opts AcquireOptions, work func(ctx context.Context, lease *Lease) error) error {
	lease, err := c.AcquireWrite(ctx, name, ttl, opts)
	if err != nil {
		return err
	}
	return c.run(ctx, lease, work)
}

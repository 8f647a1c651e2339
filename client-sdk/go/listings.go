package fencelock

// The listings — GET /v1/locks, /v1/semaphores and /v1/rwlocks ?prefix=P&limit=N&cursor=C
// (docs/api.md). The three page alike: a page is a bounded scan of the lock nodes, so it may hold
// fewer entries than the limit (even none) and still have a Next, the cursor of the following
// page ("" once the listing is complete); each is safe to repeat, so it is retried like a status.
// They differ only in their route, the field that holds their entries and how one entry is read:
// a listing is a call of listPage with those three, not a copy of the paging. Semaphore and
// read/write lock entries are read by the same code as the status routes they repeat.

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// ListOptions choose one page of a listing; the zero value asks for the first page of every name.
type ListOptions struct {
	// Prefix: only names that start with it. Default "": every name.
	Prefix string
	// Limit: names per page, 1 to 1000 (a page may hold fewer, even none, or run over by a few).
	// Default 0 means 100.
	Limit int
	// Cursor: the previous page's Next. Default "": the first page.
	Cursor string
}

// HeldLock is one lock of a listing: held on a majority of the lock nodes.
type HeldLock struct {
	Name string
	// Token: the holder's fencing token; 0 when the listing cannot tell it.
	Token int64
	// Owner: what the holder sent as its owner; "" when none was sent.
	Owner string
	// Remaining: until fewer than a majority hold it.
	Remaining time.Duration
}

// LockListing is one page of a listing. Next is the cursor of the following page; "" once the
// listing is complete.
type LockListing struct {
	Locks []HeldLock
	Next  string
}

// ListedSemaphore is one semaphore of a listing: a permit held on a majority of the lock nodes,
// and the counts SemaphoreStatus would have given when the page was made.
type ListedSemaphore struct {
	Name string
	// Permits: the live semaphore's permit count.
	Permits int
	// Held: permits held on a majority of lock nodes.
	Held int
}

// SemaphoreListing is one page of the semaphore listing; Next as LockListing's.
type SemaphoreListing struct {
	Semaphores []ListedSemaphore
	Next       string
}

// ListedRWLock is one read/write lock of a listing: a grant held on a majority of the lock nodes,
// and what RWLockStatus would have said when the page was made.
type ListedRWLock struct {
	Name string
	// Mode: "read" or "write".
	Mode string
	// Holders: the grants held, by token (one for a write).
	Holders []RWLockHolder
	// WriterWaiting: a writer waits for the lock; new reads are refused meanwhile.
	WriterWaiting bool
}

// RWLockListing is one page of the read/write lock listing; Next as LockListing's.
type RWLockListing struct {
	RWLocks []ListedRWLock
	Next    string
}

// ListLocks answers one page of the locks held whose names start with opts.Prefix (GET
// /v1/locks): pass its Next as opts.Cursor until it is "". A page may hold fewer than opts.Limit
// names, even none, and still have a Next; a name held throughout is listed (twice if a lock node
// failed meanwhile). It needs the right "read"; names the key may not read are left out.
//
// Errors: ErrInvalidArgument, ErrDenied, ErrUnavailable (start the listing again),
// ErrRateLimited, ErrTransport, ErrInternal; the context's error when ctx ended first.
func (c *Client) ListLocks(ctx context.Context, opts ListOptions) (LockListing, error) {
	locks, next, err := listPage(ctx, c, "/v1/locks", "locks", opts, lockEntry.held)
	return LockListing{Locks: locks, Next: next}, err
}

// ListSemaphores answers one page of the semaphores with a permit held whose names start with
// opts.Prefix (GET /v1/semaphores), each as SemaphoreStatus tells it; pages, Next, the right
// "read" and retries as ListLocks. A semaphore on which a permit stays held throughout is listed
// (more than once if a lock node failed or was late meanwhile, or its permits are held on
// different sets of nodes).
//
// Errors as ListLocks.
func (c *Client) ListSemaphores(ctx context.Context, opts ListOptions) (SemaphoreListing, error) {
	semaphores, next, err := listPage(ctx, c, "/v1/semaphores", "semaphores", opts, semaphoreEntry.listed)
	return SemaphoreListing{Semaphores: semaphores, Next: next}, err
}

// ListRWLocks answers one page of the read/write locks with a grant held whose names start with
// opts.Prefix (GET /v1/rwlocks), each as RWLockStatus tells it; otherwise as ListSemaphores.
//
// Errors as ListLocks.
func (c *Client) ListRWLocks(ctx context.Context, opts ListOptions) (RWLockListing, error) {
	rwlocks, next, err := listPage(ctx, c, "/v1/rwlocks", "rwlocks", opts, rwlockEntry.listed)
	return RWLockListing{RWLocks: rwlocks, Next: next}, err
}

// listPage asks for one page of the listing at route and reads its answer, {field: [...],
// "next": cursor or null}: each entry as W, turned into an E by entry. On error, no entries.
func listPage[W, E any](ctx context.Context, c *Client, route, field string, opts ListOptions,
	entry func(W) (E, error)) ([]E, string, error) {
	path, err := pagePath(route, opts)
	if err != nil {
		return nil, "", err
	}
	var answer map[string]json.RawMessage
	if err := c.read(ctx, "GET", path, &answer); err != nil {
		return nil, "", err
	}
	var wire []W
	var next *string
	if json.Unmarshal(answer[field], &wire) != nil || wire == nil {
		return nil, "", internal("the service's listing lacks its %s array", field)
	}
	if raw, ok := answer["next"]; ok && json.Unmarshal(raw, &next) != nil {
		return nil, "", internal("the service's listing holds a next that is not a string")
	}
	entries := make([]E, 0, len(wire))
	for _, one := range wire {
		read, err := entry(one)
		if err != nil {
			return nil, "", err
		}
		entries = append(entries, read)
	}
	if next == nil {
		return entries, "", nil
	}
	return entries, *next, nil
}

// pagePath is the path of one page of route, opts checked before anything is sent.
func pagePath(route string, opts ListOptions) (string, error) {
	limit := opts.Limit
	if limit == 0 {
		limit = 100
	}
	if limit < 1 || limit > 1000 {
		return "", invalid("limit must be 1 .. 1000, not %d", limit)
	}
	path := route + "?limit=" + strconv.Itoa(limit)
	if opts.Prefix != "" {
		path += "&prefix=" + url.QueryEscape(opts.Prefix)
	}
	if opts.Cursor != "" {
		path += "&cursor=" + url.QueryEscape(opts.Cursor)
	}
	return path, nil
}

type lockEntry struct {
	Name        *string `json:"name"`
	Token       *int64  `json:"token"`
	Owner       *string `json:"owner"`
	RemainingMs *int64  `json:"remaining_ms"`
}

func (lock lockEntry) held() (HeldLock, error) {
	if lock.Name == nil || lock.RemainingMs == nil || *lock.RemainingMs < 0 ||
		(lock.Token != nil && *lock.Token < 1) {
		return HeldLock{}, internal("a listed lock lacks its name or a valid remaining_ms or token")
	}
	held := HeldLock{Name: *lock.Name, Remaining: time.Duration(*lock.RemainingMs) * time.Millisecond}
	if lock.Token != nil {
		held.Token = *lock.Token
	}
	if lock.Owner != nil {
		held.Owner = *lock.Owner
	}
	return held, nil
}

type semaphoreEntry struct {
	Name *string `json:"name"`
	semaphoreAnswer
}

func (semaphore semaphoreEntry) listed() (ListedSemaphore, error) {
	if semaphore.Name == nil {
		return ListedSemaphore{}, internal("a listed semaphore lacks its name")
	}
	status, err := semaphore.status()
	return ListedSemaphore{Name: *semaphore.Name, Permits: status.Permits, Held: status.Held}, err
}

type rwlockEntry struct {
	Name *string `json:"name"`
	rwlockAnswer
}

func (rwlock rwlockEntry) listed() (ListedRWLock, error) {
	if rwlock.Name == nil {
		return ListedRWLock{}, internal("a listed read/write lock lacks its name")
	}
	status, err := rwlock.status()
	return ListedRWLock{Name: *rwlock.Name, Mode: status.Mode, Holders: status.Holders,
		WriterWaiting: status.WriterWaiting}, err
}

package fencelock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Client talks to one or more fencelockd instances in front of the same lock nodes (docs/api.md).
//
// One Client per process, shared by all goroutines: it is safe for concurrent use and keeps a
// few keep-alive connections per endpoint. Every call takes a context: cancelling it ends the
// call with the context's error: at once, except that an acquire already sent first reads on for
// up to Options.ConnectTimeout after closing its sending half, so that a grant already on its way
// is received and released rather than left held until its ttl. Each attempt is also bounded by
// Options.RequestTimeout (an acquire or a watch adds its wait).
//
// Retries: calls that are safe to repeat (extend, release, status, watch, listing, tokens) are
// retried on transport errors and 503s, up to Options.MaxRetries times, on the next endpoint.
// Acquire names its request (AcquireOptions.RequestID), so it is also retried after a transport
// error once its request may have been sent — the service answers the grant it already made — but
// not on a 503. AcquireSet, AcquirePermit, AcquireRead, AcquireWrite and Revoke are retried only
// when their request certainly was not sent (connection refused, name not resolved): a sent one
// may have been granted, so it is never sent twice (and a second revoke would revoke the first
// one's grant).
type Client struct {
	s         settled
	http      *http.Client
	preferred atomic.Int32 // the endpoint that answered last
}

// New makes a Client. It fails with ErrInvalidArgument for a malformed endpoint, an unusable CA
// file or an option out of bounds. It does not connect.
func New(options Options) (*Client, error) {
	s, err := settle(options)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: s.connectTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSClientConfig:       s.tlsConfig,
		TLSHandshakeTimeout:   s.connectTimeout,
		MaxIdleConns:          s.maxIdleConnections * len(s.endpoints),
		MaxIdleConnsPerHost:   s.maxIdleConnections,
		IdleConnTimeout:       50 * time.Second, // below fencelockd's --idle-timeout (1 min)
		ExpectContinueTimeout: 0,
	}
	return &Client{s: s, http: &http.Client{Transport: transport}}, nil
}

// Format prints the Client's endpoints, never its API key, for every verb.
func (c *Client) Format(f fmt.State, verb rune) {
	bases := make([]string, len(c.s.endpoints))
	for i, e := range c.s.endpoints {
		bases[i] = e.base
	}
	fmt.Fprintf(f, "fencelock.Client%v", bases)
}

// Close closes the idle connections. The Client stays usable (it reconnects).
func (c *Client) Close() { c.http.CloseIdleConnections() }

// AcquireOptions are an acquire's optional parts; the zero value asks once, without an owner,
// and renews the lease in the background.
type AcquireOptions struct {
	// Wait: how long to keep trying while another lease holds the lock (every name of a set, every
	// permit). Default 0: one attempt. fencelockd's --max-wait bounds it (default 60 s).
	Wait time.Duration
	// Owner: who asks, at most 200 bytes; written to fencelockd's request log and shown by Status
	// as the holder's owner.
	Owner string
	// RequestID names the acquire (Acquire only: the other grants refuse it): 1 to 64
	// printable ASCII characters without spaces. Default: a fresh random one per call, with which
	// the call asks again when an answer is lost. Give your own only to ask again yourself, with
	// the same id, after a call failed; never reuse one for another acquire (docs/api.md, "Asking
	// again").
	RequestID string
	// Renew: how the lease is kept (see RenewOptions); by default it is renewed until released.
	Renew RenewOptions
}

// LockStatus is what GET /v1/locks/{name} says (Status), or a watch of it (Watch). Never the lease.
type LockStatus struct {
	// Held: one lease holds the lock on a majority of the lock nodes.
	Held bool
	// Remaining: until fewer than a majority hold it; 0 when not held.
	Remaining time.Duration
	// Token: the holder's fencing token; 0 when not held.
	Token int64
	// Owner: what the holder sent as its owner when it acquired; "" when not held or none was sent.
	Owner string
	// LastToken: the name's current token — at or above every token handed out for it. 0 in a
	// watch's answer.
	LastToken int64
	// Changed (a watch's answer only): the lock is no longer held with the token watched; false:
	// the wait ran out with it unchanged.
	Changed bool
}

// SemaphoreStatus is what GET /v1/semaphores/{name} says. Never a lease.
type SemaphoreStatus struct {
	// Permits: the live semaphore's permit count; 0 when no permit is live.
	Permits int
	// Held: permits held on a majority of lock nodes.
	Held int
}

type grantRequest struct {
	Mode      string   `json:"mode,omitempty"`
	Names     []string `json:"names,omitempty"`
	Permits   int      `json:"permits,omitempty"`
	TTLMs     int64    `json:"ttl_ms"`
	WaitMs    int64    `json:"wait_ms,omitempty"`
	Owner     string   `json:"owner,omitempty"`
	RequestID string   `json:"request_id,omitempty"`
}

type grantAnswer struct {
	Mode       *string          `json:"mode"`
	Lease      *string          `json:"lease"`
	Token      *int64           `json:"token"`
	Tokens     map[string]int64 `json:"tokens"`
	Permits    *int             `json:"permits"`
	Slot       *int             `json:"slot"`
	ValidityMs *int64           `json:"validity_ms"`
	WaitedMs   int64            `json:"waited_ms"`
}

// Acquire takes lock name for ttl, waiting up to opts.Wait while another lease holds it, and
// returns its Lease, renewed in the background unless opts.Renew says otherwise: call Release when
// done. Every call names its request (opts.RequestID; a fresh random one when empty), so when an
// answer is lost (a timeout, a reset) the call asks again — up to Options.MaxRetries — and the
// service answers the grant it already made instead of refusing it as held.
//
// Errors: ErrLocked (held, and the wait ran out; Error.RetryAfter when known), ErrUnavailable,
// ErrInvalidArgument (a bad name, ttl, owner or request id: refused before sending), ErrDenied,
// ErrRateLimited, ErrTransport, ErrInternal; the context's error when ctx ended first.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts AcquireOptions) (*Lease, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	request, err := grantBody(ttl, opts)
	if err != nil {
		return nil, err
	}
	if request.RequestID == "" {
		request.RequestID = newRequestID()
	}
	lease, err := c.grant(ctx, KindLock, []string{name}, "/v1/locks/"+name, request, ttl)
	if err != nil {
		return nil, err
	}
	return c.hold(ctx, lease, opts.Renew)
}

// RevokeOptions are a revoke's optional parts; the zero value takes the lock without an owner and
// renews the lease in the background.
type RevokeOptions struct {
	// Owner: who revokes, at most 200 bytes; shown by Status as the holder's owner.
	Owner string
	// Renew: how the lease is kept (see RenewOptions); by default it is renewed until released.
	Renew RenewOptions
}

// Revoke takes lock name for ttl whoever holds it (free or held; it never waits), with a new token
// above the revoked lease's: that lease's extend fails with ErrNotHeld and its release reports
// false. It returns a Lease as Acquire does, renewed in the background unless opts.Renew says
// otherwise. It needs an API key with the right "admin". It is never retried once its request may
// have been sent: a second revoke would revoke the first one's grant.
//
// Errors: ErrUnavailable (the old lease may still have ended on some nodes: call again),
// ErrInvalidArgument, ErrDenied, ErrRateLimited, ErrTransport, ErrInternal; the context's error
// when ctx ended first.
func (c *Client) Revoke(ctx context.Context, name string, ttl time.Duration, opts RevokeOptions) (*Lease, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	request, err := grantBody(ttl, AcquireOptions{Owner: opts.Owner, Renew: opts.Renew})
	if err != nil {
		return nil, err
	}
	lease, err := c.grant(ctx, KindLock, []string{name}, "/v1/locks/"+name+"/revoke", request, ttl)
	if err != nil {
		return nil, err
	}
	return c.hold(ctx, lease, opts.Renew)
}

// AcquireSet takes every name of names (1 to 16 distinct names, any order) under one lease, all of
// them or none, for ttl, waiting up to opts.Wait while any is held. Each name has its own token
// (Lease.TokenOf): fence a write to the resource of name n with n's token. Errors as Acquire
// (ErrLocked: at least one name is held; the set took none).
func (c *Client) AcquireSet(ctx context.Context, names []string, ttl time.Duration, opts AcquireOptions) (*Lease, error) {
	sorted, err := checkSetNames(names)
	if err != nil {
		return nil, err
	}
	if err := onlyForALock(opts); err != nil {
		return nil, err
	}
	request, err := grantBody(ttl, opts)
	if err != nil {
		return nil, err
	}
	request.Names = sorted
	lease, err := c.grant(ctx, KindSet, sorted, "/v1/locks", request, ttl)
	if err != nil {
		return nil, err
	}
	return c.hold(ctx, lease, opts.Renew)
}

// AcquirePermit takes one of the permits (1 to 64) permits of semaphore name for ttl, waiting up
// to opts.Wait while all are held. At most permits permits are live at once; Lease.Slot says which
// one this is, and its token grows with every grant of the semaphore: fence per (name, slot).
// Errors as Acquire, and ErrPermitsMismatch (Error.Permits) when the semaphore is live with
// another permit count.
func (c *Client) AcquirePermit(ctx context.Context, name string, permits int, ttl time.Duration, opts AcquireOptions) (*Lease, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkPermits(permits); err != nil {
		return nil, err
	}
	if err := onlyForALock(opts); err != nil {
		return nil, err
	}
	request, err := grantBody(ttl, opts)
	if err != nil {
		return nil, err
	}
	request.Permits = permits
	lease, err := c.grant(ctx, KindPermit, []string{name}, "/v1/semaphores/"+name, request, ttl)
	if err != nil {
		return nil, err
	}
	return c.hold(ctx, lease, opts.Renew)
}

func grantBody(ttl time.Duration, opts AcquireOptions) (grantRequest, error) {
	var request grantRequest
	var err error
	if request.TTLMs, err = milliseconds("ttl", ttl, 1); err != nil {
		return request, err
	}
	if request.WaitMs, err = milliseconds("wait", opts.Wait, 0); err != nil {
		return request, err
	}
	if len(opts.Owner) > 200 {
		return request, invalid("owner: at most 200 bytes")
	}
	request.Owner = opts.Owner
	if opts.RequestID != "" {
		if err := checkRequestID(opts.RequestID); err != nil {
			return request, err
		}
		request.RequestID = opts.RequestID
	}
	return request, opts.Renew.check()
}

func onlyForALock(opts AcquireOptions) error {
	if opts.RequestID != "" {
		return invalid("request id: only a single lock's acquire takes one")
	}
	return nil
}

// newRequestID is a request id for one acquire call: 128 random bits in hex, or "" if the random
// source fails (the acquire then goes without one, and is not sent again once it may have been).
func newRequestID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return ""
	}
	return hex.EncodeToString(b)
}

// grant sends an acquire of names (sorted) and reads its answer into a Lease whose keeper is not
// started. An answer it cannot use is an error, and a lease string it carries is released; once ctx
// has ended, the error is ctx's. A request that names itself (request_id) is repeatable.
func (c *Client) grant(ctx context.Context, kind Kind, names []string, path string, request grantRequest, ttl time.Duration) (*Lease, error) {
	var answer grantAnswer
	r, sentAt, err := c.call(ctx, callSpec{method: "POST", path: path, body: request,
		extra: time.Duration(request.WaitMs) * time.Millisecond, repeatable: request.RequestID != ""})
	if err == nil {
		err = decode(r, &answer) // on a type error it still fills the other fields, the lease too
	}
	tokens := make([]int64, len(names))
	if err == nil {
		err = checkGrant(kind, names, tokens, answer)
	}
	if err != nil {
		if r.status == 200 && answer.Lease != nil && *answer.Lease != "" {
			c.releaseQuietly(newLease(c, kind, names, tokens, *answer.Lease, ttl, sentAt))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	lease := newLease(c, kind, names, tokens, *answer.Lease, ttl, deadlineOf(sentAt, answer, ttl))
	if kind == KindPermit {
		lease.permits, lease.slot = *answer.Permits, *answer.Slot
	}
	return lease, nil
}

// checkGrant checks a grant answer and copies its tokens into tokens (one per name).
func checkGrant(kind Kind, names []string, tokens []int64, answer grantAnswer) error {
	if answer.Lease == nil || *answer.Lease == "" || answer.ValidityMs == nil ||
		*answer.ValidityMs < 0 || answer.WaitedMs < 0 {
		return internal("the service's answer lacks the lease or a valid validity_ms")
	}
	if kind == KindSet {
		for i, name := range names {
			token, ok := answer.Tokens[name]
			if !ok || token < 1 || len(answer.Tokens) != len(names) {
				return internal("the service's answer lacks a token per name")
			}
			tokens[i] = token
		}
		return nil
	}
	if answer.Token == nil || *answer.Token < 1 {
		return internal("the service's answer lacks the token")
	}
	tokens[0] = *answer.Token
	if kind == KindPermit && (answer.Slot == nil || answer.Permits == nil || *answer.Permits < 1 ||
		*answer.Slot < 0 || *answer.Slot >= *answer.Permits) {
		return internal("the service's answer lacks the permits or slot")
	}
	// A reader that believed it wrote alone, or a writer that believed it shared, would be wrong
	// about what its token fences.
	if (kind == KindRead || kind == KindWrite) && (answer.Mode == nil || *answer.Mode != kind.String()) {
		return internal("the service's answer does not grant the mode asked for")
	}
	return nil
}

// hold starts the lease's keeper, unless the caller gave up while the grant was on its way: then
// the grant is released and the context's error returned.
func (c *Client) hold(ctx context.Context, lease *Lease, renew RenewOptions) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		c.releaseQuietly(lease)
		return nil, err
	}
	go lease.keep(renew)
	return lease, nil
}

// releaseQuietly releases a lease nobody will hold, ignoring errors: the ttl frees it otherwise.
func (c *Client) releaseQuietly(lease *Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.requestTimeout)
	defer cancel()
	close(lease.keeperEnd) // no keeper was started
	lease.stopOnce.Do(func() { close(lease.stop) })
	lease.end(ErrReleased)
	_, _ = c.release(ctx, lease)
}

// deadlineOf is conservative: validity counts from the start of the winning attempt, which is no
// earlier than the send time plus the time the service says it waited. Neither is believed beyond
// what can be true: no wait longer than the round trip, no validity longer than the ttl asked for.
func deadlineOf(sentAt time.Time, answer grantAnswer, ttl time.Duration) time.Time {
	waited := time.Duration(answer.WaitedMs) * time.Millisecond
	if elapsed := time.Since(sentAt); waited > elapsed {
		waited = elapsed
	}
	return sentAt.Add(waited + validityOf(*answer.ValidityMs, ttl))
}

// validityOf is validity_ms, at most ttl (docs/api.md: it is counted from the ttl asked for).
func validityOf(ms int64, ttl time.Duration) time.Duration {
	if ms > ttl.Milliseconds() {
		return ttl
	}
	return time.Duration(ms) * time.Millisecond
}

type leaseRequest struct {
	Names []string `json:"names,omitempty"`
	Lease string   `json:"lease"`
	TTLMs int64    `json:"ttl_ms,omitempty"`
}

// leasePath is the path that names the lease for release; extend appends "/extend" (a set:
// "/v1/locks:extend").
func leasePath(l *Lease) string {
	switch l.kind {
	case KindSet:
		return "/v1/locks"
	case KindPermit:
		return "/v1/semaphores/" + l.names[0]
	case KindRead, KindWrite:
		return "/v1/rwlocks/" + l.names[0]
	default:
		return "/v1/locks/" + l.names[0]
	}
}

// extend extends l on the nodes and returns its new deadline; it does not change l.
func (c *Client) extend(ctx context.Context, l *Lease, ttl time.Duration) (time.Time, error) {
	ms, err := milliseconds("ttl", ttl, 1)
	if err != nil {
		return time.Time{}, err
	}
	request := leaseRequest{Lease: l.secret, TTLMs: ms}
	path := leasePath(l) + "/extend"
	if l.kind == KindSet {
		request.Names, path = l.names, "/v1/locks:extend"
	}
	r, sentAt, err := c.call(ctx, callSpec{method: "POST", path: path, body: request, safe: true})
	if err != nil {
		return time.Time{}, err
	}
	var answer struct {
		ValidityMs *int64 `json:"validity_ms"`
	}
	if err := decode(r, &answer); err != nil {
		return time.Time{}, err
	}
	if answer.ValidityMs == nil || *answer.ValidityMs < 0 {
		return time.Time{}, internal("the service's answer lacks a valid validity_ms")
	}
	return sentAt.Add(validityOf(*answer.ValidityMs, time.Duration(ms)*time.Millisecond)), nil
}

func (c *Client) release(ctx context.Context, l *Lease) (bool, error) {
	request := leaseRequest{Lease: l.secret}
	if l.kind == KindSet {
		request.Names = l.names
	}
	r, _, err := c.call(ctx, callSpec{method: "DELETE", path: leasePath(l), body: request, safe: true})
	if err != nil {
		return false, err
	}
	var answer struct {
		Released *bool `json:"released"`
	}
	if err := decode(r, &answer); err != nil {
		return false, err
	}
	if answer.Released == nil {
		return false, internal("the service's answer lacks 'released'")
	}
	return *answer.Released, nil
}

// Status says whether lock name is held, for how long, by which token and owner, and the name's
// current token. Never the lease.
func (c *Client) Status(ctx context.Context, name string) (LockStatus, error) {
	if err := checkName(name); err != nil {
		return LockStatus{}, err
	}
	var answer statusAnswer
	if err := c.read(ctx, "GET", "/v1/locks/"+name, &answer); err != nil {
		return LockStatus{}, err
	}
	if answer.LastToken == nil || *answer.LastToken < 0 {
		return LockStatus{}, internal("the service's answer lacks a valid last_token")
	}
	status, err := answer.status()
	status.LastToken = *answer.LastToken
	return status, err
}

// maxWatchWait bounds a watch's wait (the C++ SDK's bound); fencelockd's --max-wait may be shorter.
const maxWatchWait = time.Hour

// Watch waits until lock name is no longer held with afterToken — released, expired, revoked or
// taken again — and answers its status with Changed set, or after wait (0 to 1 h, and at most
// fencelockd's --max-wait) with the status unchanged and Changed false. A lock not held with
// afterToken (a free one too) answers at once; to follow a lock, watch again with the Token
// answered. The answer's LastToken is 0. Each attempt may take wait beyond
// Options.RequestTimeout; it is retried like Status. It needs the right "read" and counts against
// the key's max_waiters.
//
// Errors: ErrInvalidArgument, ErrDenied, ErrUnavailable, ErrRateLimited, ErrTransport,
// ErrInternal; the context's error when ctx ended first.
func (c *Client) Watch(ctx context.Context, name string, afterToken int64, wait time.Duration) (LockStatus, error) {
	if err := checkName(name); err != nil {
		return LockStatus{}, err
	}
	if afterToken < 0 {
		return LockStatus{}, invalid("afterToken must be a fencing token (0 or more), not %d", afterToken)
	}
	if wait > maxWatchWait {
		return LockStatus{}, invalid("wait out of range: %v (at most %v)", wait, maxWatchWait)
	}
	waitMs, err := milliseconds("wait", wait, 0)
	if err != nil {
		return LockStatus{}, err
	}
	path := "/v1/locks/" + name + "?after_token=" + strconv.FormatInt(afterToken, 10) +
		"&wait_ms=" + strconv.FormatInt(waitMs, 10)
	r, _, err := c.call(ctx, callSpec{method: "GET", path: path, safe: true,
		extra: time.Duration(waitMs) * time.Millisecond})
	if err != nil {
		return LockStatus{}, err
	}
	var answer statusAnswer
	if err := decode(r, &answer); err != nil {
		return LockStatus{}, err
	}
	if answer.Changed == nil {
		return LockStatus{}, internal("the service's answer lacks 'changed'")
	}
	status, err := answer.status()
	status.Changed = *answer.Changed
	return status, err
}

// statusAnswer is a lock's status as GET /v1/locks/{name} answers it, or a watch's (then Changed,
// and no LastToken).
type statusAnswer struct {
	Held        bool    `json:"held"`
	RemainingMs *int64  `json:"remaining_ms"`
	Token       *int64  `json:"token"`
	Owner       *string `json:"owner"`
	LastToken   *int64  `json:"last_token"`
	Changed     *bool   `json:"changed"`
}

func (a statusAnswer) status() (LockStatus, error) {
	if a.RemainingMs != nil && *a.RemainingMs < 0 {
		return LockStatus{}, internal("the service's answer holds an impossible remaining_ms")
	}
	if a.Token != nil && *a.Token < 1 {
		return LockStatus{}, internal("the service's answer holds an impossible token")
	}
	status := LockStatus{Held: a.Held}
	if a.RemainingMs != nil {
		status.Remaining = time.Duration(*a.RemainingMs) * time.Millisecond
	}
	if a.Token != nil {
		status.Token = *a.Token
	}
	if a.Owner != nil {
		status.Owner = *a.Owner
	}
	return status, nil
}

// SemaphoreStatus gives semaphore name's live permit count and how many permits are held.
func (c *Client) SemaphoreStatus(ctx context.Context, name string) (SemaphoreStatus, error) {
	if err := checkName(name); err != nil {
		return SemaphoreStatus{}, err
	}
	var answer semaphoreAnswer
	if err := c.read(ctx, "GET", "/v1/semaphores/"+name, &answer); err != nil {
		return SemaphoreStatus{}, err
	}
	return answer.status()
}

// semaphoreAnswer is a semaphore's status as GET /v1/semaphores/{name}, and each entry of the
// semaphore listing, words it.
type semaphoreAnswer struct {
	Permits *int `json:"permits"`
	Held    *int `json:"held"`
}

func (answer semaphoreAnswer) status() (SemaphoreStatus, error) {
	if answer.Permits == nil || answer.Held == nil || *answer.Permits < 0 || *answer.Held < 0 {
		return SemaphoreStatus{}, internal("the service's answer lacks a valid permits or held")
	}
	return SemaphoreStatus{Permits: *answer.Permits, Held: *answer.Held}, nil
}

// CurrentToken is the latest token drawn for name (0 if none ever was); later draws are greater.
func (c *Client) CurrentToken(ctx context.Context, name string) (int64, error) {
	return c.token(ctx, "GET", name)
}

// NextToken draws the next token of name without a lock. Hazard (docs/api.md): the drawn token
// is newer than the current holder's and can fence that holder out of its resource.
func (c *Client) NextToken(ctx context.Context, name string) (int64, error) {
	return c.token(ctx, "POST", name)
}

func (c *Client) token(ctx context.Context, method, name string) (int64, error) {
	if err := checkName(name); err != nil {
		return 0, err
	}
	var answer struct {
		Token *int64 `json:"token"`
	}
	if err := c.read(ctx, method, "/v1/tokens/"+name, &answer); err != nil {
		return 0, err
	}
	least := int64(0) // a name never drawn has token 0; a draw is positive
	if method == "POST" {
		least = 1
	}
	if answer.Token == nil || *answer.Token < least {
		return 0, internal("the service's answer lacks a valid token")
	}
	return *answer.Token, nil
}

func (c *Client) read(ctx context.Context, method, path string, answer any) error {
	r, _, err := c.call(ctx, callSpec{method: method, path: path, safe: true})
	if err != nil {
		return err
	}
	return decode(r, answer)
}

// WithLock acquires name (as Acquire), runs work with a context that is cancelled when the lease
// ends, and releases the lease when work returns. It returns work's error; if work returned nil but
// the lease was lost meanwhile, the lease's error (ErrLeaseLost) — work may have done some or all
// of its writes by then: fenced writes that were applied stay applied. A failed release is
// ignored: the ttl frees the lock.
func (c *Client) WithLock(ctx context.Context, name string, ttl time.Duration, opts AcquireOptions, work func(ctx context.Context, lease *Lease) error) error {
	lease, err := c.Acquire(ctx, name, ttl, opts)
	if err != nil {
		return err
	}
	return c.run(ctx, lease, work)
}

// WithLockSet is WithLock for a lock set (AcquireSet).
func (c *Client) WithLockSet(ctx context.Context, names []string, ttl time.Duration, opts AcquireOptions, work func(ctx context.Context, lease *Lease) error) error {
	lease, err := c.AcquireSet(ctx, names, ttl, opts)
	if err != nil {
		return err
	}
	return c.run(ctx, lease, work)
}

// WithPermit is WithLock for a semaphore permit (AcquirePermit).
func (c *Client) WithPermit(ctx context.Context, name string, permits int, ttl time.Duration, opts AcquireOptions, work func(ctx context.Context, lease *Lease) error) error {
	lease, err := c.AcquirePermit(ctx, name, permits, ttl, opts)
	if err != nil {
		return err
	}
	return c.run(ctx, lease, work)
}

func (c *Client) run(ctx context.Context, lease *Lease, work func(ctx context.Context, lease *Lease) error) error {
	workCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lease.Done():
			cancel()
		case <-workCtx.Done():
		}
	}()
	err := work(workCtx, lease)
	lost := lease.Err()
	releaseCtx, cancelRelease := context.WithTimeout(context.Background(), c.s.requestTimeout)
	defer cancelRelease()
	_, _ = lease.Release(releaseCtx)
	if err == nil && lost != nil {
		return lost
	}
	return err
}

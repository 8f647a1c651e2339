package fencelock

// The keeper: one goroutine per lease that extends it in the background (Redisson's watchdog,
// etcd's Session keep-alive) and ends it as lost when it cannot.
//
// It extends whenever RenewWhenLeft of the ttl is left. A refused extend (not_held) ends the lease
// at once. A transient failure (unavailable, transport) is retried every ttl/20 (at least 5 ms)
// until the lost point: LostMargin before the deadline. Each extend runs in a goroutine of its own
// under a context that expires at the lost point, and the keeper waits for it or for the lost
// point, whichever comes first — so the lost signal is never late, whatever the network does, and
// an extend answered after the lease was declared lost is ignored.
//
// The signal narrows the window in which a paused process can act on a lost lease; it cannot close
// it (the pause can come right after the check). That is why every write still carries the token.

import (
	"context"
	"time"
)

// RenewOptions say how a lease is kept. The zero value renews at a third of the ttl left, with no
// bound.
type RenewOptions struct {
	// Off turns renewal off: the lease then ends as lost LostMargin before its deadline, unless
	// released or extended by hand first (Lease.Extend moves the deadline). Default false.
	Off bool
	// RenewWhenLeft: extend when this fraction of the ttl is left. Default 1/3; 0.05 .. 0.95.
	RenewWhenLeft float64
	// MaxRenewals: extend at most this many times, then let the lease run out. Default 0: no bound.
	MaxRenewals int
	// MaxHold: stop extending once the lease was held this long. Default 0: no bound.
	MaxHold time.Duration
	// LostMargin: how long before the deadline the lease is declared lost if renewal has not
	// moved it. Default a tenth of the ttl, at least 20 ms and at most half the ttl.
	LostMargin time.Duration
}

func (o RenewOptions) check() error {
	if o.RenewWhenLeft != 0 && (o.RenewWhenLeft < 0.05 || o.RenewWhenLeft > 0.95) {
		return invalid("RenewWhenLeft must be 0.05 .. 0.95, not %v", o.RenewWhenLeft)
	}
	if o.MaxRenewals < 0 || o.MaxHold < 0 || o.LostMargin < 0 {
		return invalid("MaxRenewals, MaxHold and LostMargin must not be negative")
	}
	return nil
}

func (o RenewOptions) margin(ttl time.Duration) time.Duration {
	if o.LostMargin > 0 {
		return o.LostMargin
	}
	margin := ttl / 10
	if margin < 20*time.Millisecond {
		margin = 20 * time.Millisecond
	}
	if margin > ttl/2 {
		margin = ttl / 2
	}
	return margin
}

type extendResult struct {
	deadline time.Time
	err      error
}

// keep runs until the lease ends or stopKeeper is called; it closes keeperEnd when it returns.
func (l *Lease) keep(options RenewOptions) {
	defer close(l.keeperEnd)
	whenLeft := options.RenewWhenLeft
	if whenLeft == 0 {
		whenLeft = 1.0 / 3.0
	}
	started := time.Now()
	var lastFailure error
	var retryAt time.Time
	for {
		l.mu.Lock()
		ttl, deadline, renewals := l.ttl, l.deadline, l.renewals
		l.mu.Unlock()
		lostAt := deadline.Add(-options.margin(ttl))
		bounded := options.Off ||
			(options.MaxRenewals > 0 && renewals >= options.MaxRenewals) ||
			(options.MaxHold > 0 && time.Since(started) >= options.MaxHold)
		wake := deadline.Add(-time.Duration(float64(ttl) * whenLeft))
		if !retryAt.IsZero() {
			wake = retryAt
		}
		if bounded || !wake.Before(lostAt) {
			wake = lostAt
		}
		if !l.sleepUntil(wake) {
			return
		}
		if l.Deadline() != deadline {
			continue // extended by hand meanwhile (Lease.Extend)
		}
		if !time.Now().Before(lostAt) {
			message := "the lease could not be renewed in time"
			if bounded && lastFailure == nil {
				message = "renewal is off or its bound was reached; the lease is about to expire"
			}
			l.end(&Error{Code: CodeLeaseLost, Message: message, Cause: lastFailure})
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), lostAt)
		answer := make(chan extendResult, 1)
		go func() {
			deadline, err := l.client.extend(ctx, l, ttl)
			answer <- extendResult{deadline, err}
		}()
		var result extendResult
		lostTimer := time.NewTimer(time.Until(lostAt))
		select {
		case <-l.stop:
			lostTimer.Stop()
			cancel()
			return
		case <-lostTimer.C:
			cancel()
			l.end(&Error{Code: CodeLeaseLost, Message: "the lease could not be renewed in time", Cause: lastFailure})
			return
		case result = <-answer:
			lostTimer.Stop()
			cancel()
		}
		switch {
		case result.err == nil:
			if !l.renew(ttl, result.deadline) {
				return
			}
			l.mu.Lock()
			l.renewals++
			l.mu.Unlock()
			lastFailure, retryAt = nil, time.Time{}
		case isCode(result.err, CodeNotHeld):
			l.end(&Error{Code: CodeLeaseLost, Message: "the lease was refused", Cause: result.err})
			return
		default:
			lastFailure = result.err
			pause := ttl / 20
			if pause < 5*time.Millisecond {
				pause = 5 * time.Millisecond
			}
			retryAt = time.Now().Add(pause)
		}
	}
}

// sleepUntil waits until t; false when the keeper was stopped or the lease ended meanwhile.
func (l *Lease) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-l.stop:
		return false
	case <-l.done:
		return false
	case <-timer.C:
		return true
	}
}

package fencelock_test

// The keeper against the live stack: renewal past many ttls (of locks and of read/write locks'
// grants), and Done closed before the deadline when the lease is taken away (its lock keys
// deleted), when fencelockd stops answering (paused), and when a renewal bound is reached.

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"fencelock.dev/fencelock"
)

func TestTheKeeperRenewsPastSeveralTTLs(t *testing.T) {
	client := liveClient(t, fencelock.Options{RequestTimeout: 500 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-keep")
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 600*time.Millisecond, fencelock.AcquireOptions{})
	})
	first := lease.Deadline()
	time.Sleep(2 * time.Second) // more than three ttls
	if err := lease.Err(); err != nil {
		t.Fatalf("lost: %v", err)
	}
	if !lease.Deadline().After(first.Add(time.Second)) || lease.Renewals() < 3 {
		t.Errorf("renewals %d, deadline moved by %v", lease.Renewals(), lease.Deadline().Sub(first))
	}
	if status, err := client.Status(ctx, name); err != nil || !status.Held {
		t.Errorf("status %+v, %v", status, err)
	}
	release(t, lease)
	if status, _ := client.Status(ctx, name); status.Held {
		t.Error("held after release")
	}
}

func TestTheKeeperRenewsReadAndWriteGrants(t *testing.T) {
	client := liveClient(t, fencelock.Options{RequestTimeout: 500 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	reader := patiently(t, func() (*fencelock.Lease, error) {
		return client.AcquireRead(ctx, uniqueName("go-keep-read"), 500*time.Millisecond, fencelock.AcquireOptions{})
	})
	writer := patiently(t, func() (*fencelock.Lease, error) {
		return client.AcquireWrite(ctx, uniqueName("go-keep-write"), 500*time.Millisecond, fencelock.AcquireOptions{})
	})
	time.Sleep(1200 * time.Millisecond) // more than two ttls
	for _, lease := range []*fencelock.Lease{reader, writer} {
		if err := lease.Err(); err != nil || lease.Renewals() < 2 {
			t.Errorf("%v: renewals %d, %v", lease, lease.Renewals(), err)
		}
		status, err := client.RWLockStatus(ctx, lease.Name())
		if err != nil || len(status.Holders) != 1 || status.Holders[0].Token != lease.Token() {
			t.Errorf("%v: status %+v, %v", lease, status, err)
		}
		release(t, lease)
	}
}

func TestReleasedAndCancelledLeasesLeaveNoGoroutineBehind(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-goroutines")
	holder := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 10*time.Second, fencelock.AcquireOptions{})
	})
	client.Close()
	before := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		lease := patiently(t, func() (*fencelock.Lease, error) {
			return client.Acquire(ctx, uniqueName("go-goroutines"), 300*time.Millisecond, fencelock.AcquireOptions{})
		})
		time.Sleep(150 * time.Millisecond) // a renewal or so
		release(t, lease)
		// A keeper that outlived its release would wait some 20 s to renew this one.
		release(t, patiently(t, func() (*fencelock.Lease, error) {
			return client.Acquire(ctx, uniqueName("go-goroutines"), 30*time.Second, fencelock.AcquireOptions{})
		}))
		waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := client.Acquire(waitCtx, name, time.Second, fencelock.AcquireOptions{Wait: 5 * time.Second})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a cancelled waiting acquire: %v", err)
		}
		_ = client.WithLock(ctx, uniqueName("go-goroutines"), time.Second, fencelock.AcquireOptions{},
			func(context.Context, *fencelock.Lease) error { return nil })
	}
	client.Close()
	if !waitUntil(3*time.Second, func() bool { client.Close(); return runtime.NumGoroutine() <= before }) {
		stacks := make([]byte, 1<<20)
		t.Errorf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), stacks[:runtime.Stack(stacks, true)])
	}
	release(t, holder)
}

// lostBeforeDeadline waits (at most 3 s) for Done and checks it closed before the deadline.
func lostBeforeDeadline(t *testing.T, lease *fencelock.Lease) error {
	t.Helper()
	select {
	case <-lease.Done():
		if now := time.Now(); !now.Before(lease.Deadline()) {
			t.Errorf("Done closed %v after the deadline", now.Sub(lease.Deadline()))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Done never closed")
	}
	err := lease.Err()
	if !errors.Is(err, fencelock.ErrLeaseLost) || lease.Valid() {
		t.Errorf("Err %v, valid %v", err, lease.Valid())
	}
	return err
}

func TestDeletedLockKeysCloseDoneBeforeTheDeadline(t *testing.T) {
	client := liveClient(t, fencelock.Options{RequestTimeout: 500 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-taken")
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, time.Second, fencelock.AcquireOptions{})
	})
	defer release(t, lease)
	deleteLockKeys(t, name)
	if err := lostBeforeDeadline(t, lease); !errors.Is(err, fencelock.ErrNotHeld) {
		t.Errorf("the cause is not the refused extend: %v", err)
	}
}

func TestAPausedServiceClosesDoneBeforeTheDeadline(t *testing.T) {
	client := liveClient(t, fencelock.Options{RequestTimeout: 500 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-paused")
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, time.Second, fencelock.AcquireOptions{})
	})
	resume := pauseFencelockd(t)
	lostBeforeDeadline(t, lease)
	resume()
	release(t, lease)
}

func TestARenewalBoundClosesDoneBeforeTheDeadline(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-bound")
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 300*time.Millisecond, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{MaxRenewals: 2}})
	})
	defer release(t, lease)
	lostBeforeDeadline(t, lease)
	if lease.Renewals() != 2 {
		t.Errorf("renewals %d", lease.Renewals())
	}
}

package fencelock_test

// The client against the live stack's fencelockd: acquire, extend, status, release and tokens;
// busy locks, waiting, lock sets, semaphores, read/write locks; and a fencelockd of the tests' own with TLS and API
// keys.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"fencelock.dev/fencelock"
)

var noRenew = fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}}

func TestAcquireExtendStatusReleaseAndTokens(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-basic")
	before := time.Now()
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 5*time.Second, fencelock.AcquireOptions{Owner: "go-test"})
	})
	if lease.Token() < 1 || lease.Name() != name || lease.Kind() != fencelock.KindLock || !lease.Valid() {
		t.Fatalf("lease %v", lease)
	}
	if d := lease.Deadline(); d.After(before.Add(5*time.Second)) || d.Before(before.Add(4*time.Second)) {
		t.Errorf("deadline %v after the send, want a little under 5 s", d.Sub(before))
	}
	status, err := client.Status(ctx, name)
	if err != nil || !status.Held || status.Remaining <= 0 || status.LastToken < lease.Token() {
		t.Fatalf("status %+v, %v", status, err)
	}
	old := lease.Deadline()
	if err := lease.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !lease.Deadline().After(old) || lease.TTL() != 10*time.Second {
		t.Errorf("extend did not move the deadline")
	}
	current, err := client.CurrentToken(ctx, name)
	if err != nil || current != lease.Token() {
		t.Errorf("current token %d, %v; lease token %d", current, err, lease.Token())
	}
	released, err := lease.Release(ctx)
	if err != nil || !released {
		t.Fatalf("release: %v, %v", released, err)
	}
	if !errors.Is(lease.Err(), fencelock.ErrReleased) {
		t.Errorf("Err after release: %v", lease.Err())
	}
	if again, err := lease.Release(ctx); err != nil || again {
		t.Errorf("a second release: %v, %v", again, err)
	}
	if status, err := client.Status(ctx, name); err != nil || status.Held {
		t.Errorf("status after release: %+v, %v", status, err)
	}
	next, err := client.NextToken(ctx, name)
	if err != nil || next <= lease.Token() {
		t.Errorf("next token %d, %v", next, err)
	}
	second := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, time.Second, noRenew) })
	defer release(t, second)
	if second.Token() <= next {
		t.Errorf("a later grant's token %d is not above the drawn %d", second.Token(), next)
	}
}

func TestAHeldLockIsLockedWithRetryAfter(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-busy")
	holder := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 5*time.Second, fencelock.AcquireOptions{})
	})
	defer release(t, holder)
	_, err := client.Acquire(ctx, name, time.Second, fencelock.AcquireOptions{Wait: 100 * time.Millisecond})
	var e *fencelock.Error
	if !errors.As(err, &e) || !errors.Is(err, fencelock.ErrLocked) || e.Code != fencelock.CodeLocked || e.HTTPStatus != 409 {
		t.Fatalf("want locked, got %v", err)
	}
	if e.RetryAfter <= 0 || e.RetryAfter > 6*time.Second {
		t.Errorf("retry after %v", e.RetryAfter)
	}
	if e.RequestID == "" {
		t.Error("no request id")
	}
}

func TestAWaitingAcquireGetsTheLockWhenItIsReleased(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-wait")
	holder := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 10*time.Second, fencelock.AcquireOptions{})
	})
	go func() {
		time.Sleep(300 * time.Millisecond)
		release(t, holder)
	}()
	started := time.Now()
	waiter := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 5*time.Second, fencelock.AcquireOptions{Wait: 5 * time.Second})
	})
	defer release(t, waiter)
	if waited := time.Since(started); waited > 3*time.Second {
		t.Errorf("waited %v for a lock released after 0.3 s", waited)
	}
	if waiter.Token() <= holder.Token() {
		t.Errorf("tokens %d then %d", holder.Token(), waiter.Token())
	}
}

func TestACancelledWaitingAcquireLeavesNothingHeld(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	name := uniqueName("go-cancel")
	ctx := ctxFor(t, 20*time.Second)
	holder := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 10*time.Second, fencelock.AcquireOptions{})
	})
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := client.Acquire(waitCtx, name, 10*time.Second, fencelock.AcquireOptions{Wait: 10 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	release(t, holder)
	// Had the cancelled waiter been granted the lock, it would be held now.
	time.Sleep(200 * time.Millisecond)
	if status, err := client.Status(ctx, name); err != nil || status.Held {
		t.Errorf("status %+v, %v", status, err)
	}
}

func TestExtendingAReleasedLeaseIsNotHeld(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-gone")
	lease := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, 5*time.Second, noRenew) })
	deleteLockKeys(t, name)
	if err := lease.Extend(ctx, 0); !errors.Is(err, fencelock.ErrNotHeld) {
		t.Fatalf("want not_held, got %v", err)
	}
	if !errors.Is(lease.Err(), fencelock.ErrLeaseLost) {
		t.Errorf("Err %v", lease.Err())
	}
	if released, err := lease.Release(ctx); err != nil || released {
		t.Errorf("release %v, %v", released, err)
	}
}

func TestStatusShowsTheHoldersTokenAndOwner(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-holder")
	if status, err := client.Status(ctx, name); err != nil || status.Held || status.Token != 0 || status.Owner != "" {
		t.Fatalf("status of a free lock: %+v, %v", status, err)
	}
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 5*time.Second, fencelock.AcquireOptions{Owner: "billing-7"})
	})
	status, err := client.Status(ctx, name)
	if err != nil || !status.Held || status.Token != lease.Token() || status.Owner != "billing-7" {
		t.Fatalf("status %+v, %v; lease token %d", status, err, lease.Token())
	}
	release(t, lease)
	anonymous := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, 5*time.Second, noRenew) })
	defer release(t, anonymous)
	if status, err := client.Status(ctx, name); err != nil || status.Token != anonymous.Token() || status.Owner != "" {
		t.Errorf("status of a holder without an owner: %+v, %v", status, err)
	}
}

func TestAWatchIsWokenByAReleaseFromAnotherClient(t *testing.T) {
	holder := liveClient(t, fencelock.Options{})
	watcher := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	name := uniqueName("go-watch")
	lease := patiently(t, func() (*fencelock.Lease, error) { return holder.Acquire(ctx, name, 30*time.Second, noRenew) })
	released := make(chan error, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		_, err := lease.Release(ctx)
		released <- err
	}()
	started := time.Now()
	watched, err := watcher.Watch(ctx, name, lease.Token(), 20*time.Second)
	if err != nil || !watched.Changed || watched.Held || watched.Token != 0 || watched.Remaining != 0 {
		t.Fatalf("watch: %+v, %v", watched, err)
	}
	if waited := time.Since(started); waited > 5*time.Second {
		t.Errorf("waited %v for a lock released after 0.5 s", waited)
	}
	if err := <-released; err != nil {
		t.Errorf("release: %v", err)
	}
}

func TestAWatchWhoseWaitRunsOutAnswersTheLockUnchanged(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	// The wait outlasts the request timeout: each attempt's bound is extended by it.
	quick := liveClient(t, fencelock.Options{RequestTimeout: 500 * time.Millisecond})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-watch-unchanged")
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 30*time.Second, fencelock.AcquireOptions{Owner: "go-watch", Renew: fencelock.RenewOptions{Off: true}})
	})
	defer release(t, lease)
	started := time.Now()
	watched, err := quick.Watch(ctx, name, lease.Token(), 1500*time.Millisecond)
	if err != nil || watched.Changed || !watched.Held || watched.Token != lease.Token() || watched.Owner != "go-watch" ||
		watched.LastToken != 0 || watched.Remaining <= 0 {
		t.Fatalf("watch: %+v, %v", watched, err)
	}
	if waited := time.Since(started); waited < 1400*time.Millisecond {
		t.Errorf("answered after %v of a 1.5 s wait", waited)
	}
}

func TestAWatchOfAnotherTokenOrAFreeLockAnswersAtOnce(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-watch-other")
	started := time.Now()
	if free, err := client.Watch(ctx, name, 1, 20*time.Second); err != nil || !free.Changed || free.Held || free.Token != 0 {
		t.Fatalf("watch of a free lock: %+v, %v", free, err)
	}
	lease := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, 30*time.Second, noRenew) })
	defer release(t, lease)
	other, err := client.Watch(ctx, name, lease.Token()+1, 20*time.Second)
	if err != nil || !other.Changed || !other.Held || other.Token != lease.Token() {
		t.Fatalf("watch of another token: %+v, %v", other, err)
	}
	if waited := time.Since(started); waited > 5*time.Second {
		t.Errorf("answered after %v", waited)
	}
}

func TestTheSameRequestIDAnswersTheSameGrantWhileItIsHeld(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-repeat")
	first := fencelock.AcquireOptions{RequestID: uniqueName("go-request"), Renew: fencelock.RenewOptions{Off: true}}
	lease := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, 5*time.Second, first) })
	again := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, 5*time.Second, first) })
	if again.LeaseString() != lease.LeaseString() || again.Token() != lease.Token() {
		t.Fatalf("the repeat answered token %d, the first %d", again.Token(), lease.Token())
	}
	other := fencelock.AcquireOptions{RequestID: uniqueName("go-request"), Renew: fencelock.RenewOptions{Off: true}}
	if _, err := client.Acquire(ctx, name, 5*time.Second, other); !errors.Is(err, fencelock.ErrLocked) {
		t.Fatalf("another request id: want locked, got %v", err)
	}
	release(t, again)
	fresh := patiently(t, func() (*fencelock.Lease, error) { return client.Acquire(ctx, name, 5*time.Second, first) })
	defer release(t, fresh)
	if fresh.Token() <= lease.Token() {
		t.Errorf("released: the same id is a new acquire, but its token %d is not above %d", fresh.Token(), lease.Token())
	}
}

func TestListLocksPagesThroughTheHeldLocksOfAPrefix(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	prefix := uniqueName("go-list") + "."
	held := map[string]fencelock.HeldLock{}
	for i := 0; i < 5; i++ {
		owner := ""
		if i%2 == 0 {
			owner = fmt.Sprintf("go-owner-%d", i)
		}
		name := fmt.Sprintf("%s%d", prefix, i)
		lease := patiently(t, func() (*fencelock.Lease, error) {
			return client.Acquire(ctx, name, 30*time.Second, fencelock.AcquireOptions{Owner: owner, Renew: fencelock.RenewOptions{Off: true}})
		})
		defer release(t, lease)
		held[name] = fencelock.HeldLock{Name: name, Token: lease.Token(), Owner: owner}
	}
	other := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, strings.TrimSuffix(prefix, ".")+"-other", 30*time.Second, noRenew)
	})
	defer release(t, other)
	listed := map[string]fencelock.HeldLock{}
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		page, err := client.ListLocks(ctx, fencelock.ListOptions{Prefix: prefix, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, lock := range page.Locks {
			if lock.Remaining <= 0 || lock.Remaining > 30*time.Second {
				t.Errorf("%s: %v remaining of a 30 s lease", lock.Name, lock.Remaining)
			}
			lock.Remaining = 0
			listed[lock.Name] = lock
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if cursor != "" {
		t.Fatal("the listing did not end within 100 pages")
	}
	if !reflect.DeepEqual(listed, held) {
		t.Errorf("listed %+v, held %+v", listed, held)
	}
}

func TestRevokeTakesAHeldLockWithANewerToken(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-revoke")
	stuck := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, name, 30*time.Second, fencelock.AcquireOptions{Owner: "stuck-job", Renew: fencelock.RenewOptions{Off: true}})
	})
	revoker := patiently(t, func() (*fencelock.Lease, error) {
		return client.Revoke(ctx, name, 5*time.Second, fencelock.RevokeOptions{Owner: "ops-oncall"})
	})
	if revoker.Token() <= stuck.Token() || revoker.Name() != name || revoker.Kind() != fencelock.KindLock ||
		!revoker.Valid() || revoker.TTL() != 5*time.Second || revoker.Remaining() > 5*time.Second {
		t.Fatalf("revoker %v after %v", revoker, stuck)
	}
	if err := stuck.Extend(ctx, 0); !errors.Is(err, fencelock.ErrNotHeld) {
		t.Errorf("the revoked lease's extend: want not_held, got %v", err)
	}
	if released, err := stuck.Release(ctx); err != nil || released {
		t.Errorf("the revoked lease's release: %v, %v", released, err)
	}
	status, err := client.Status(ctx, name)
	if err != nil || !status.Held || status.Token != revoker.Token() || status.Owner != "ops-oncall" {
		t.Errorf("status after the revoke: %+v, %v", status, err)
	}
	// The revoker's lease is renewed and released like any other.
	if err := revoker.Extend(ctx, 10*time.Second); err != nil || revoker.TTL() != 10*time.Second {
		t.Errorf("extend of the revoker's lease: %v", err)
	}
	if released, err := revoker.Release(ctx); err != nil || !released {
		t.Errorf("release of the revoker's lease: %v, %v", released, err)
	}
}

func TestRevokeOfAFreeLockTakesIt(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-revoke-free")
	before, err := client.CurrentToken(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	lease := patiently(t, func() (*fencelock.Lease, error) {
		return client.Revoke(ctx, name, 5*time.Second, fencelock.RevokeOptions{Renew: fencelock.RenewOptions{Off: true}})
	})
	defer release(t, lease)
	if lease.Token() <= before {
		t.Errorf("token %d, the name's before %d", lease.Token(), before)
	}
	if status, err := client.Status(ctx, name); err != nil || !status.Held || status.Token != lease.Token() || status.Owner != "" {
		t.Errorf("status %+v, %v", status, err)
	}
	if _, err := client.Acquire(ctx, name, time.Second, noRenew); !errors.Is(err, fencelock.ErrLocked) {
		t.Errorf("an acquire of the revoker's lock: want locked, got %v", err)
	}
}

func TestALockSetIsAllOrNothingWithATokenPerName(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	a, b, c := uniqueName("go-set-a"), uniqueName("go-set-b"), uniqueName("go-set-c")
	single := patiently(t, func() (*fencelock.Lease, error) {
		return client.Acquire(ctx, c, 5*time.Second, fencelock.AcquireOptions{})
	})
	if _, err := client.AcquireSet(ctx, []string{b, c, a}, 5*time.Second, fencelock.AcquireOptions{}); !errors.Is(err, fencelock.ErrLocked) {
		t.Fatalf("want locked, got %v", err)
	}
	for _, name := range []string{a, b} {
		if status, _ := client.Status(ctx, name); status.Held {
			t.Errorf("%s is held after a refused set", name)
		}
	}
	release(t, single)
	set := patiently(t, func() (*fencelock.Lease, error) {
		return client.AcquireSet(ctx, []string{b, a}, 5*time.Second, fencelock.AcquireOptions{})
	})
	if set.Kind() != fencelock.KindSet || set.Token() != 0 || fmt.Sprint(set.Names()) != fmt.Sprint([]string{a, b}) {
		t.Fatalf("set %v", set)
	}
	for _, name := range []string{a, b} {
		token, ok := set.TokenOf(name)
		current, err := client.CurrentToken(ctx, name)
		if !ok || err != nil || token != current {
			t.Errorf("%s: token %d, current %d (%v)", name, token, current, err)
		}
	}
	if err := set.Extend(ctx, 8*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Acquire(ctx, a, time.Second, noRenew); !errors.Is(err, fencelock.ErrLocked) {
		t.Errorf("a name of a held set: %v", err)
	}
	if released, err := set.Release(ctx); err != nil || !released {
		t.Fatalf("release %v, %v", released, err)
	}
}

func TestAtMostNPermitsThenAMismatchedCountIsRefused(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-sem")
	var permits []*fencelock.Lease
	slots := map[int]bool{}
	for i := 0; i < 3; i++ {
		permit := patiently(t, func() (*fencelock.Lease, error) {
			return client.AcquirePermit(ctx, name, 3, 5*time.Second, fencelock.AcquireOptions{})
		})
		permits = append(permits, permit)
		slots[permit.Slot()] = true
		if permit.Kind() != fencelock.KindPermit || permit.Permits() != 3 || permit.Token() < 1 {
			t.Errorf("permit %v", permit)
		}
	}
	if len(slots) != 3 {
		t.Errorf("slots %v", slots)
	}
	_, err := client.AcquirePermit(ctx, name, 3, time.Second, fencelock.AcquireOptions{})
	if !errors.Is(err, fencelock.ErrLocked) {
		t.Errorf("a fourth permit: %v", err)
	}
	_, err = client.AcquirePermit(ctx, name, 5, time.Second, fencelock.AcquireOptions{})
	var e *fencelock.Error
	if !errors.As(err, &e) || !errors.Is(err, fencelock.ErrPermitsMismatch) || e.Permits != 3 {
		t.Errorf("another count: %v", err)
	}
	status, err := client.SemaphoreStatus(ctx, name)
	if err != nil || status.Permits != 3 || status.Held != 3 {
		t.Errorf("status %+v, %v", status, err)
	}
	if err := permits[0].Extend(ctx, 0); err != nil {
		t.Error(err)
	}
	for _, permit := range permits {
		release(t, permit)
	}
	if status, err := client.SemaphoreStatus(ctx, name); err != nil || status.Held != 0 {
		t.Errorf("status after release %+v, %v", status, err)
	}
}

// leaseStringMode is the mode a read/write lock's lease string is bound to ("r" or "w"), or "" unless
// it is `<token>.<proof>.r` or `.w` with the lease's own token.
func leaseStringMode(lease *fencelock.Lease) string {
	parts := regexp.MustCompile(`^([0-9]+)\.[0-9a-f]+\.([rw])$`).FindStringSubmatch(lease.LeaseString())
	if parts == nil || parts[1] != strconv.FormatInt(lease.Token(), 10) {
		return ""
	}
	return parts[2]
}

func TestReadersShareARWLockAndAWriterComesAfterThemWithAHigherToken(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-rw")
	readers := make([]*fencelock.Lease, 2)
	for i := range readers {
		owner := fmt.Sprintf("go-reader-%d", i)
		readers[i] = patiently(t, func() (*fencelock.Lease, error) {
			return client.AcquireRead(ctx, name, 5*time.Second, fencelock.AcquireOptions{Owner: owner, Renew: fencelock.RenewOptions{Off: true}})
		})
		if lease := readers[i]; lease.Kind() != fencelock.KindRead || lease.Name() != name || lease.Token() < 1 ||
			!lease.Valid() || leaseStringMode(lease) != "r" {
			t.Fatalf("reader %d: %v", i, lease)
		}
	}
	if readers[0].Token() == readers[1].Token() {
		t.Fatalf("two readers with token %d", readers[0].Token())
	}
	status, err := client.RWLockStatus(ctx, name)
	owners := map[int64]string{}
	for _, holder := range status.Holders {
		if holder.Remaining <= 0 || holder.Remaining > 5*time.Second {
			t.Errorf("holder %+v", holder)
		}
		owners[holder.Token] = holder.Owner
	}
	want := map[int64]string{readers[0].Token(): "go-reader-0", readers[1].Token(): "go-reader-1"}
	if err != nil || status.Mode != "read" || status.WriterWaiting || !reflect.DeepEqual(owners, want) {
		t.Fatalf("status %+v, %v", status, err)
	}
	if _, err := client.AcquireWrite(ctx, name, time.Second, noRenew); !errors.Is(err, fencelock.ErrLocked) {
		t.Fatalf("a write while reads hold: want locked, got %v", err)
	}
	old := readers[0].Deadline()
	if err := readers[0].Extend(ctx, 8*time.Second); err != nil || !readers[0].Deadline().After(old) {
		t.Fatalf("extend a read: %v", err)
	}
	for _, reader := range readers {
		if released, err := reader.Release(ctx); err != nil || !released {
			t.Fatalf("release a read: %v, %v", released, err)
		}
	}
	writer := patiently(t, func() (*fencelock.Lease, error) {
		return client.AcquireWrite(ctx, name, 5*time.Second, fencelock.AcquireOptions{Owner: "go-writer", Renew: fencelock.RenewOptions{Off: true}})
	})
	if writer.Kind() != fencelock.KindWrite || leaseStringMode(writer) != "w" ||
		writer.Token() <= readers[0].Token() || writer.Token() <= readers[1].Token() {
		t.Fatalf("writer %v after readers %d and %d", writer, readers[0].Token(), readers[1].Token())
	}
	status, err = client.RWLockStatus(ctx, name)
	if err != nil || status.Mode != "write" || len(status.Holders) != 1 || status.Holders[0].Token != writer.Token() ||
		status.Holders[0].Owner != "go-writer" {
		t.Fatalf("status %+v, %v", status, err)
	}
	if _, err := client.AcquireRead(ctx, name, time.Second, noRenew); !errors.Is(err, fencelock.ErrLocked) {
		t.Errorf("a read while a write holds: want locked, got %v", err)
	}
	if err := writer.Extend(ctx, 0); err != nil {
		t.Errorf("extend a write: %v", err)
	}
	if released, err := writer.Release(ctx); err != nil || !released {
		t.Fatalf("release a write: %v, %v", released, err)
	}
	if status, err := client.RWLockStatus(ctx, name); err != nil || status.Mode != "" || len(status.Holders) != 0 {
		t.Errorf("status when free: %+v, %v", status, err)
	}
}

func TestAWaitingWriterKeepsNewReadersOutUntilItIsServed(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-rw-wait")
	reader := patiently(t, func() (*fencelock.Lease, error) { return client.AcquireRead(ctx, name, 10*time.Second, noRenew) })
	granted := make(chan *fencelock.Lease, 1)
	failed := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			lease, err := client.AcquireWrite(ctx, name, 5*time.Second, fencelock.AcquireOptions{Wait: 5 * time.Second, Renew: fencelock.RenewOptions{Off: true}})
			if err == nil {
				granted <- lease
				return
			}
			if !errors.Is(err, fencelock.ErrUnavailable) || i == 10 {
				failed <- err
				return
			}
		}
	}()
	if !waitUntil(3*time.Second, func() bool {
		status, err := client.RWLockStatus(ctx, name)
		return err == nil && status.WriterWaiting && status.Mode == "read"
	}) {
		t.Fatal("the status never showed the writer waiting")
	}
	if _, err := client.AcquireRead(ctx, name, time.Second, noRenew); !errors.Is(err, fencelock.ErrLocked) {
		t.Fatalf("a new read while a writer waits: want locked, got %v", err)
	}
	release(t, reader)
	var writer *fencelock.Lease
	select {
	case writer = <-granted:
	case err := <-failed:
		t.Fatalf("the waiting writer: %v", err)
	}
	if writer.Token() <= reader.Token() {
		t.Errorf("the writer's token %d is not above the reader's %d", writer.Token(), reader.Token())
	}
	release(t, writer)
	release(t, patiently(t, func() (*fencelock.Lease, error) { return client.AcquireRead(ctx, name, time.Second, noRenew) }))
}

func TestWithLockHoldsTheLockAndReleasesIt(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 20*time.Second)
	name := uniqueName("go-with")
	err := client.WithLock(ctx, name, 600*time.Millisecond, fencelock.AcquireOptions{}, func(ctx context.Context, lease *fencelock.Lease) error {
		time.Sleep(1500 * time.Millisecond) // renewed meanwhile
		if ctx.Err() != nil || lease.Err() != nil {
			return fmt.Errorf("lost: %v", lease.Err())
		}
		status, err := client.Status(ctx, name)
		if err != nil || !status.Held {
			return fmt.Errorf("status %+v, %v", status, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := client.Status(ctx, name); status.Held {
		t.Error("held after WithLock returned")
	}
	lost := client.WithLock(ctx, name, time.Second, fencelock.AcquireOptions{}, func(ctx context.Context, lease *fencelock.Lease) error {
		deleteLockKeys(t, name)
		<-ctx.Done() // cancelled when the lease is lost
		return nil
	})
	if !errors.Is(lost, fencelock.ErrLeaseLost) {
		t.Errorf("want lease lost, got %v", lost)
	}
}

func TestTLSWithACAFileAndAPIKeys(t *testing.T) {
	liveEndpoint(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	out, err := exec.Command("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
		"-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=fencelock-test",
		"-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost").CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v: %s", err, out)
	}
	secret, reader := "go-"+hex.EncodeToString([]byte("a-locking-secret-of-ours")), "go-reader-secret-0123456789"
	digest := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	keys, _ := json.Marshal(map[string]any{"keys": []map[string]any{
		{"id": "locker", "secret_sha256": digest(secret), "names": []string{"*"}, "rights": []string{"lock", "read"}},
		{"id": "reader", "secret_sha256": digest(reader), "names": []string{"allowed.*"}, "rights": []string{"read"}},
	}})
	auth := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(auth, keys, 0o600); err != nil {
		t.Fatal(err)
	}
	port := sparePort(t, 3)
	fencelockdWithoutLockNodes(t, port, "--tls-cert", cert, "--tls-key", key, "--auth-file", auth)
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	ctx := ctxFor(t, 20*time.Second)

	// The environment as the CLI reads it: endpoint, key and CA file.
	t.Setenv("FENCELOCK_ENDPOINT", url)
	t.Setenv("FENCELOCK_API_KEY", secret)
	t.Setenv("FENCELOCK_CACERT", cert)
	options := fencelock.OptionsFromEnvironment()
	options.MaxRetries = -1
	trusted, err := fencelock.New(options)
	if err != nil {
		t.Fatal(err)
	}
	// TLS and the key passed; the lock nodes (closed ports) do not answer.
	if _, err := trusted.Acquire(ctx, "x", time.Second, noRenew); !errors.Is(err, fencelock.ErrUnavailable) {
		t.Errorf("trusted, with a key: want unavailable, got %v", err)
	}
	noKey, _ := fencelock.New(fencelock.Options{Endpoints: []string{url}, CAFile: cert, MaxRetries: -1})
	_, err = noKey.Status(ctx, "x")
	var e *fencelock.Error
	if !errors.As(err, &e) || e.Code != fencelock.CodeUnauthenticated || !errors.Is(err, fencelock.ErrDenied) {
		t.Errorf("no key: %v", err)
	}
	readOnly, _ := fencelock.New(fencelock.Options{Endpoints: []string{url}, CAFile: cert, APIKey: reader, MaxRetries: -1})
	_, err = readOnly.Acquire(ctx, "allowed.x", time.Second, noRenew)
	if !errors.As(err, &e) || e.Code != fencelock.CodeForbidden {
		t.Errorf("a key without the right: %v", err)
	}
	_, err = trusted.Revoke(ctx, "x", time.Second, fencelock.RevokeOptions{Renew: fencelock.RenewOptions{Off: true}})
	if !errors.As(err, &e) || e.Code != fencelock.CodeForbidden || !errors.Is(err, fencelock.ErrDenied) {
		t.Errorf("a revoke with a key without the right admin: %v", err)
	}
	untrusting, _ := fencelock.New(fencelock.Options{Endpoints: []string{url}, APIKey: secret, MaxRetries: -1})
	_, err = untrusting.Status(ctx, "x")
	if !errors.As(err, &e) || e.Code != fencelock.CodeTLS || !errors.Is(err, fencelock.ErrTransport) {
		t.Errorf("an untrusted certificate: %v", err)
	}
	plain, _ := fencelock.New(fencelock.Options{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", port)}, MaxRetries: -1})
	_, err = plain.Acquire(ctx, "x", time.Second, noRenew)
	if !errors.As(err, &e) || e.Code != fencelock.CodePlainHTTPOnTLSPort || !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Errorf("plain HTTP to the TLS port: %v", err)
	}
}

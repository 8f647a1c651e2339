package fencelock_test

// The semaphore and read/write lock listings (GET /v1/semaphores, GET /v1/rwlocks): how a page is
// asked for and read (against a recording server), and the pages of the live stack's fencelockd.

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fencelock.dev/fencelock"
)

const semaphorePage = `{"semaphores":[{"name":"pool-1","permits":3,"held":2},` +
	`{"name":"pool-2","permits":1,"held":1}],"next":"2-1536-0"}`

const rwlockPage = `{"rwlocks":[{"name":"doc-1","mode":"read","holders":[` +
	`{"token":9223372036854775807,"owner":"report-7","remaining_ms":2500},{"token":18,"owner":null,"remaining_ms":0}],` +
	`"writer_waiting":true},{"name":"doc-2","mode":"write","holders":[{"token":4,"owner":null,"remaining_ms":1000}],` +
	`"writer_waiting":false}],"next":null}`

var listedSemaphores = []fencelock.ListedSemaphore{{Name: "pool-1", Permits: 3, Held: 2}, {Name: "pool-2", Permits: 1, Held: 1}}

var listedRWLocks = []fencelock.ListedRWLock{
	{Name: "doc-1", Mode: "read", WriterWaiting: true, Holders: []fencelock.RWLockHolder{
		{Token: 1<<63 - 1, Owner: "report-7", Remaining: 2500 * time.Millisecond}, {Token: 18}}},
	{Name: "doc-2", Mode: "write", Holders: []fencelock.RWLockHolder{{Token: 4, Remaining: time.Second}}},
}

func TestASemaphoreOrRWLockPageIsAskedForWithEncodedValuesAndRead(t *testing.T) {
	ctx := context.Background()
	url, recorded := recordingServer(t, 0, func(w http.ResponseWriter, r *http.Request) {
		body := rwlockPage
		if strings.HasPrefix(r.URL.Path, "/v1/semaphores") {
			body = semaphorePage
		}
		answering(200, body)(w, r)
	})
	client := fakeClient(t, url, fencelock.Options{})
	semaphores, err := client.ListSemaphores(ctx, fencelock.ListOptions{Prefix: "pool-", Limit: 2, Cursor: "1-0+x"})
	if want := (fencelock.SemaphoreListing{Semaphores: listedSemaphores, Next: "2-1536-0"}); err != nil || !reflect.DeepEqual(semaphores, want) {
		t.Errorf("semaphores: got %+v, %v", semaphores, err)
	}
	rwlocks, err := client.ListRWLocks(ctx, fencelock.ListOptions{})
	if want := (fencelock.RWLockListing{RWLocks: listedRWLocks}); err != nil || !reflect.DeepEqual(rwlocks, want) {
		t.Errorf("rwlocks: got %+v, %v", rwlocks, err)
	}
	if targets, _ := recorded(); !reflect.DeepEqual(targets, []string{"/v1/semaphores?limit=2&prefix=pool-&cursor=1-0%2Bx", "/v1/rwlocks?limit=100"}) {
		t.Errorf("asked for %q", targets)
	}
	for _, limit := range []int{-1, 1001} {
		if _, err := client.ListSemaphores(ctx, fencelock.ListOptions{Limit: limit}); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("semaphores, limit %d: want invalid argument, got %v", limit, err)
		}
		if _, err := client.ListRWLocks(ctx, fencelock.ListOptions{Limit: limit}); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("rwlocks, limit %d: want invalid argument, got %v", limit, err)
		}
	}
}

func TestASemaphoreOrRWLockListingAnswered503IsAskedAgain(t *testing.T) {
	var asked atomic.Int32
	url, recorded := recordingServer(t, 0, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case asked.Add(1)%2 == 1:
			answering(503, `{"error":{"code":"unavailable","message":"too few lock nodes"}}`)(w, r)
		case strings.HasPrefix(r.URL.Path, "/v1/semaphores"):
			answering(200, semaphorePage)(w, r)
		default:
			answering(200, rwlockPage)(w, r)
		}
	})
	client := fakeClient(t, url, fencelock.Options{RetryBackoff: time.Millisecond})
	if page, err := client.ListSemaphores(context.Background(), fencelock.ListOptions{}); err != nil || !reflect.DeepEqual(page.Semaphores, listedSemaphores) {
		t.Errorf("semaphores: got %+v, %v", page, err)
	}
	if page, err := client.ListRWLocks(context.Background(), fencelock.ListOptions{}); err != nil || !reflect.DeepEqual(page.RWLocks, listedRWLocks) {
		t.Errorf("rwlocks: got %+v, %v", page, err)
	}
	if targets, _ := recorded(); len(targets) != 4 {
		t.Errorf("asked for %q", targets)
	}
}

func TestAMalformedSemaphoreOrRWLockPageIsAnInternalError(t *testing.T) {
	for _, body := range []string{`{"next":null}`, `{"semaphores":[{"permits":1,"held":1}],"next":null}`,
		`{"semaphores":[{"name":"a","permits":1}],"next":null}`, `{"semaphores":[],"next":7}`} {
		url, _ := recordingServer(t, 0, answering(200, body))
		if _, err := fakeClient(t, url, fencelock.Options{}).ListSemaphores(context.Background(), fencelock.ListOptions{}); !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", body, err)
		}
	}
	for _, body := range []string{`{"rwlocks":null,"next":null}`, `{"rwlocks":[{"mode":null,"holders":[],"writer_waiting":false}],"next":null}`,
		`{"rwlocks":[{"name":"a","mode":"both","holders":[],"writer_waiting":false}],"next":null}`,
		`{"rwlocks":[{"name":"a","mode":"read","holders":[{"token":0,"remaining_ms":1}],"writer_waiting":false}],"next":null}`} {
		url, _ := recordingServer(t, 0, answering(200, body))
		if _, err := fakeClient(t, url, fencelock.Options{}).ListRWLocks(context.Background(), fencelock.ListOptions{}); !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", body, err)
		}
	}
}

func TestListSemaphoresPagesThroughTheHeldSemaphoresOfAPrefix(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	prefix := uniqueName("go-sem-list") + "."
	held := holdSemaphores(t, ctx, client, prefix)
	listed := map[string]fencelock.ListedSemaphore{}
	everyPage(t, func(cursor string) (string, error) {
		page, err := client.ListSemaphores(ctx, fencelock.ListOptions{Prefix: prefix, Limit: 1, Cursor: cursor})
		for _, semaphore := range page.Semaphores {
			listed[semaphore.Name] = semaphore
		}
		return page.Next, err
	})
	if !reflect.DeepEqual(listed, held) {
		t.Errorf("listed %+v, held %+v", listed, held)
	}
}

func TestListRWLocksPagesThroughTheHeldRWLocksOfAPrefix(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	prefix := uniqueName("go-rw-list") + "."
	held := holdRWLocks(t, ctx, client, prefix)
	listed := map[string]fencelock.ListedRWLock{}
	everyPage(t, func(cursor string) (string, error) {
		page, err := client.ListRWLocks(ctx, fencelock.ListOptions{Prefix: prefix, Limit: 1, Cursor: cursor})
		for _, rwlock := range page.RWLocks {
			for i, holder := range rwlock.Holders {
				if holder.Remaining <= 0 || holder.Remaining > 30*time.Second {
					t.Errorf("%s: %v remaining of a 30 s grant", rwlock.Name, holder.Remaining)
				}
				rwlock.Holders[i].Remaining = 0
			}
			sort.Slice(rwlock.Holders, func(i, j int) bool { return rwlock.Holders[i].Token < rwlock.Holders[j].Token })
			listed[rwlock.Name] = rwlock
		}
		return page.Next, err
	})
	if !reflect.DeepEqual(listed, held) {
		t.Errorf("listed %+v, held %+v", listed, held)
	}
}

func TestAPrefixWithNothingHeldListsNoSemaphoreOrRWLock(t *testing.T) {
	client := liveClient(t, fencelock.Options{})
	ctx := ctxFor(t, 30*time.Second)
	prefix := uniqueName("go-empty-list") + "."
	holdSemaphores(t, ctx, client, prefix)
	holdRWLocks(t, ctx, client, prefix)
	empty := fencelock.ListOptions{Prefix: prefix + "none."}
	count := 0
	everyPage(t, func(cursor string) (string, error) {
		empty.Cursor = cursor
		page, err := client.ListSemaphores(ctx, empty)
		count += len(page.Semaphores)
		return page.Next, err
	})
	everyPage(t, func(cursor string) (string, error) {
		empty.Cursor = cursor
		page, err := client.ListRWLocks(ctx, empty)
		count += len(page.RWLocks)
		return page.Next, err
	})
	if count != 0 {
		t.Errorf("%d entries listed under a prefix with nothing held", count)
	}
}

// holdSemaphores takes two permits of a 3-permit semaphore and one of a 1-permit one under
// prefix, and one outside it, released when the test ends: what the listing of prefix shows.
func holdSemaphores(t *testing.T, ctx context.Context, client *fencelock.Client, prefix string) map[string]fencelock.ListedSemaphore {
	t.Helper()
	take := func(name string, permits int) {
		lease := patiently(t, func() (*fencelock.Lease, error) {
			return client.AcquirePermit(ctx, name, permits, 30*time.Second, noRenew)
		})
		t.Cleanup(func() { release(t, lease) })
	}
	take(prefix+"a", 3)
	take(prefix+"a", 3)
	take(prefix+"b", 1)
	take(strings.TrimSuffix(prefix, ".")+"-other", 2)
	return map[string]fencelock.ListedSemaphore{
		prefix + "a": {Name: prefix + "a", Permits: 3, Held: 2},
		prefix + "b": {Name: prefix + "b", Permits: 1, Held: 1},
	}
}

// holdRWLocks takes two read grants of one read/write lock and the write grant of another under
// prefix, and a read grant outside it, released when the test ends: what the listing of prefix
// shows, holders by token and without their time left.
func holdRWLocks(t *testing.T, ctx context.Context, client *fencelock.Client, prefix string) map[string]fencelock.ListedRWLock {
	t.Helper()
	take := func(kind fencelock.Kind, name, owner string) fencelock.RWLockHolder {
		lease := patiently(t, func() (*fencelock.Lease, error) {
			opts := fencelock.AcquireOptions{Owner: owner, Renew: fencelock.RenewOptions{Off: true}}
			if kind == fencelock.KindWrite {
				return client.AcquireWrite(ctx, name, 30*time.Second, opts)
			}
			return client.AcquireRead(ctx, name, 30*time.Second, opts)
		})
		t.Cleanup(func() { release(t, lease) })
		return fencelock.RWLockHolder{Token: lease.Token(), Owner: owner}
	}
	first := take(fencelock.KindRead, prefix+"r", "go-reader")
	second := take(fencelock.KindRead, prefix+"r", "")
	writer := take(fencelock.KindWrite, prefix+"w", "go-writer")
	take(fencelock.KindRead, strings.TrimSuffix(prefix, ".")+"-other", "")
	return map[string]fencelock.ListedRWLock{
		prefix + "r": {Name: prefix + "r", Mode: "read", Holders: []fencelock.RWLockHolder{first, second}},
		prefix + "w": {Name: prefix + "w", Mode: "write", Holders: []fencelock.RWLockHolder{writer}},
	}
}

// everyPage asks for page after page (page(cursor) answers the next cursor) until the listing
// ends, failing the test after an error or 100 pages.
func everyPage(t *testing.T, page func(cursor string) (string, error)) {
	t.Helper()
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		next, err := page(cursor)
		if err != nil {
			t.Fatal(err)
		}
		if cursor = next; cursor == "" {
			return
		}
	}
	t.Fatal("the listing did not end within 100 pages")
}

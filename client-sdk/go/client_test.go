package fencelock_test

// The client against fake servers (net/http/httptest) and no server at all: what it refuses before
// sending, how it reads answers and errors, and its retry and cancellation rules.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fencelock.dev/fencelock"
)

func fakeClient(t *testing.T, url string, options fencelock.Options) *fencelock.Client {
	t.Helper()
	options.Endpoints = append([]string{url}, options.Endpoints...)
	client, err := fencelock.New(options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func answering(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestBadCallsAreRefusedBeforeAnythingIsSent(t *testing.T) {
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer server.Close()
	client := fakeClient(t, server.URL, fencelock.Options{})
	ctx := context.Background()
	bad := []error{}
	for _, name := range []string{"", ".", "..", "a b", "a/b", strings.Repeat("x", 201), "é"} {
		_, err := client.Acquire(ctx, name, time.Second, fencelock.AcquireOptions{})
		bad = append(bad, err)
	}
	_, err := client.Acquire(ctx, "ok", 0, fencelock.AcquireOptions{})
	bad = append(bad, err)
	_, err = client.Acquire(ctx, "ok", time.Second, fencelock.AcquireOptions{Wait: -time.Second})
	bad = append(bad, err)
	_, err = client.Acquire(ctx, "ok", time.Second, fencelock.AcquireOptions{Owner: strings.Repeat("o", 201)})
	bad = append(bad, err)
	_, err = client.Acquire(ctx, "ok", time.Second, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{RenewWhenLeft: 0.99}})
	bad = append(bad, err)
	_, err = client.AcquireSet(ctx, []string{"a", "a"}, time.Second, fencelock.AcquireOptions{})
	bad = append(bad, err)
	_, err = client.AcquireSet(ctx, nil, time.Second, fencelock.AcquireOptions{})
	bad = append(bad, err)
	_, err = client.AcquireSet(ctx, make([]string, 17), time.Second, fencelock.AcquireOptions{})
	bad = append(bad, err)
	for _, permits := range []int{0, 65} {
		_, err = client.AcquirePermit(ctx, "pool", permits, time.Second, fencelock.AcquireOptions{})
		bad = append(bad, err)
	}
	_, err = client.AcquireRead(ctx, "a/b", time.Second, fencelock.AcquireOptions{})
	bad = append(bad, err)
	_, err = client.AcquireWrite(ctx, "ok", 0, fencelock.AcquireOptions{})
	bad = append(bad, err)
	_, err = client.RWLockStatus(ctx, "..")
	bad = append(bad, err)
	for i, err := range bad {
		var e *fencelock.Error
		if !errors.As(err, &e) || e.Code != fencelock.CodeInvalidRequest || !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("call %d: want invalid_request, got %v", i, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

func TestBadOptionsAreRefused(t *testing.T) {
	for _, options := range []fencelock.Options{
		{Endpoints: []string{"ftp://x"}},
		{Endpoints: []string{"http://"}},
		{Endpoints: []string{"http://h:1/path"}},
		{Endpoints: make([]string, 17)},
		{APIKey: "has space"},
		{Endpoints: []string{"http://127.0.0.1:1"}, CAFile: "/nonexistent"},
		{Endpoints: []string{"https://127.0.0.1:1"}, CAFile: "/nonexistent"},
		{RequestTimeout: time.Hour},
		{MaxRetries: 11},
	} {
		if _, err := fencelock.New(options); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("%+v: want invalid argument, got %v", options, err)
		}
	}
}

func TestWithoutOptionsTheClientReadsTheCLIsVariables(t *testing.T) {
	t.Setenv("FENCELOCK_ENDPOINT", "http://10.0.0.7:8080, http://10.0.0.8:8080")
	t.Setenv("FENCELOCK_API_KEY", "secret-key")
	t.Setenv("FENCELOCK_CACERT", "/etc/fencelock/ca.pem")
	options := fencelock.OptionsFromEnvironment()
	if fmt.Sprint(options.Endpoints) != "[http://10.0.0.7:8080 http://10.0.0.8:8080]" ||
		options.APIKey != "secret-key" || options.CAFile != "/etc/fencelock/ca.pem" {
		t.Errorf("got %+v", options)
	}
}

func TestEachWireCodeIsItsKind(t *testing.T) {
	cases := []struct {
		status int
		code   string
		kind   error
	}{
		{409, "locked", fencelock.ErrLocked},
		{409, "not_held", fencelock.ErrNotHeld},
		{409, "permits_mismatch", fencelock.ErrPermitsMismatch},
		{503, "unavailable", fencelock.ErrUnavailable},
		{401, "unauthenticated", fencelock.ErrDenied},
		{403, "forbidden", fencelock.ErrDenied},
		{403, "cross_site_request", fencelock.ErrDenied},
		{429, "rate_limited", fencelock.ErrRateLimited},
		{429, "quota_exceeded", fencelock.ErrRateLimited},
		{400, "invalid_request", fencelock.ErrInvalidArgument},
		{400, "plain_http_on_tls_port", fencelock.ErrInvalidArgument},
		{413, "payload_too_large", fencelock.ErrInvalidArgument},
		{415, "unsupported_media_type", fencelock.ErrInvalidArgument},
		{421, "host_not_allowed", fencelock.ErrInvalidArgument},
		{404, "not_found", fencelock.ErrInvalidArgument},
		{405, "method_not_allowed", fencelock.ErrInvalidArgument},
		{500, "internal", fencelock.ErrInternal},
		{429, "a_code_from_the_future", fencelock.ErrRateLimited},
		{502, "", fencelock.ErrInternal},
	}
	for _, c := range cases {
		body := fmt.Sprintf(`{"error":{"code":%q,"message":"said","retry_after_ms":1500,"permits":5}}`, c.code)
		server := httptest.NewServer(answering(c.status, body, "X-Request-Id", "req-1"))
		client := fakeClient(t, server.URL, fencelock.Options{MaxRetries: -1})
		_, err := client.Acquire(context.Background(), "x", time.Second, fencelock.AcquireOptions{})
		server.Close()
		var e *fencelock.Error
		if !errors.As(err, &e) || !errors.Is(err, c.kind) {
			t.Errorf("%d %s: got %v", c.status, c.code, err)
			continue
		}
		if c.code != "" && (string(e.Code) != c.code || e.HTTPStatus != c.status || e.RequestID != "req-1" ||
			e.RetryAfter != 1500*time.Millisecond || e.Message != "said") {
			t.Errorf("%d %s: got %+v", c.status, c.code, e)
		}
		if c.code == "permits_mismatch" && e.Permits != 5 {
			t.Errorf("permits: got %d", e.Permits)
		}
	}
}

func TestRetryAfterFallsBackToTheHeader(t *testing.T) {
	server := httptest.NewServer(answering(429, `{"error":{"code":"rate_limited","message":"slow down"}}`, "Retry-After", "2"))
	defer server.Close()
	_, err := fakeClient(t, server.URL, fencelock.Options{MaxRetries: -1}).Status(context.Background(), "x")
	var e *fencelock.Error
	if !errors.As(err, &e) || e.RetryAfter != 2*time.Second {
		t.Fatalf("got %v", err)
	}
}

func TestTokensKeepEverySixtyFourBitDigit(t *testing.T) {
	// Above 2^53 a float64 would round them; the client never reads numbers as float64.
	for _, token := range []int64{1<<53 + 1, 1<<62 + 3, 1<<63 - 1} {
		body := fmt.Sprintf(`{"name":"x","lease":"%d.abc","token":%d,"ttl_ms":1000,"validity_ms":900,"waited_ms":0}`, token, token)
		var released atomic.Int32
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "DELETE" {
				released.Add(1)
				answering(200, `{"name":"x","released":true}`)(w, r)
				return
			}
			answering(200, body)(w, r)
		}))
		client := fakeClient(t, server.URL, fencelock.Options{})
		lease, err := client.Acquire(context.Background(), "x", time.Second, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Token() != token {
			t.Errorf("token %d read as %d", token, lease.Token())
		}
		release(t, lease)
		server.Close()
	}
	for _, body := range []string{`{"token":9223372036854775808}`, `{"token":1.5}`, `{"token":"17"}`, `{"token":1e3}`, `{"token":-7}`} {
		server := httptest.NewServer(answering(200, body))
		_, err := fakeClient(t, server.URL, fencelock.Options{}).CurrentToken(context.Background(), "x")
		server.Close()
		if !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", body, err)
		}
	}
}

func TestAGrantTheClientCannotUseIsReleasedAndItsClaimsAreBounded(t *testing.T) {
	grant := func(fields string) (*fencelock.Lease, error, int32) {
		var released atomic.Int32
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "DELETE" {
				released.Add(1)
				answering(200, `{"name":"x","released":true}`)(w, r)
				return
			}
			answering(200, `{"name":"x","lease":"5.ab","ttl_ms":1000,`+fields+`}`)(w, r)
		}))
		defer server.Close()
		client := fakeClient(t, server.URL, fencelock.Options{})
		lease, err := client.Acquire(context.Background(), "x", time.Second, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
		if lease != nil {
			release(t, lease)
		}
		return lease, err, released.Load()
	}
	for _, fields := range []string{`"validity_ms":900`, `"token":0,"validity_ms":900`, `"token":5,"validity_ms":-900`,
		`"token":5,"validity_ms":900,"waited_ms":-5000`, `"token":5,"validity_ms":900.5`} {
		if _, err, released := grant(fields); !errors.Is(err, fencelock.ErrInternal) || released != 1 {
			t.Errorf("%s: want internal and the lease released, got %v, %d releases", fields, err, released)
		}
	}
	// validity_ms never exceeds the ttl asked for, and no wait is longer than the round trip.
	for _, fields := range []string{`"token":5,"validity_ms":999999999`, `"token":5,"validity_ms":900,"waited_ms":9999999`} {
		lease, err, _ := grant(fields)
		if err != nil || lease.Remaining() > time.Second {
			t.Errorf("%s: %v, %v left of a 1 s lease", fields, err, lease)
		}
	}
}

func TestNeitherTheOptionsNorTheClientPrintTheAPIKey(t *testing.T) {
	options := fencelock.Options{APIKey: "the-api-key", Endpoints: []string{"http://127.0.0.1:1"}}
	client, err := fencelock.New(options)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, value := range []any{options, &options, client} {
			if text := fmt.Sprintf(format, value); strings.Contains(text, "the-api-key") {
				t.Errorf("%s shows the key: %s", format, text)
			}
		}
	}
	_, err = fencelock.New(fencelock.Options{Endpoints: []string{"http://user:a-password@host:1"}})
	if err == nil || strings.Contains(err.Error(), "a-password") {
		t.Errorf("a password in an endpoint shows: %v", err)
	}
}

func TestTheLeaseStringAndTheAPIKeyStayOutOfMessages(t *testing.T) {
	secret := "17.4f1c0e9a2b7d4c6e8f0a1b2c3d4e5f6071c2d9e04b3a8f15"
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer the-api-key" {
			answering(401, `{"error":{"code":"unauthenticated","message":"no key"}}`)(w, r)
			return
		}
		if r.Method == "POST" && !strings.HasSuffix(r.URL.Path, "/extend") {
			answering(200, `{"name":"x","lease":"`+secret+`","token":17,"ttl_ms":1000,"validity_ms":900,"waited_ms":0}`)(w, r)
			return
		}
		answering(409, `{"error":{"code":"not_held","message":"gone"}}`)(w, r)
	}))
	defer server.Close()
	client := fakeClient(t, server.URL, fencelock.Options{APIKey: "the-api-key"})
	lease, err := client.Acquire(context.Background(), "x", time.Second, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	err = lease.Extend(context.Background(), 0)
	for _, text := range []string{lease.String(), fmt.Sprint(lease), fmt.Sprintf("%+v", err), lease.Err().Error()} {
		if strings.Contains(text, secret[3:]) || strings.Contains(text, "the-api-key") {
			t.Errorf("a secret shows in %q", text)
		}
	}
	if !errors.Is(err, fencelock.ErrNotHeld) || !errors.Is(lease.Err(), fencelock.ErrLeaseLost) || !errors.Is(lease.Err(), fencelock.ErrNotHeld) {
		t.Errorf("extend: %v; lease: %v", err, lease.Err())
	}
	select {
	case <-lease.Done():
	default:
		t.Error("a refused extend leaves the lease open")
	}
}

// closingServer reads one request per connection and closes it without answering: the request was
// delivered, its outcome unknown.
func closingServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			if n, _ := conn.Read(make([]byte, 65536)); n > 0 {
				requests.Add(1)
			}
			conn.Close()
		}
	}()
	t.Cleanup(func() { listener.Close() })
	return "http://" + listener.Addr().String(), &requests
}

// recordingServer records the path with its query and the JSON body of each request; it closes
// the connection without answering the first lose requests (delivered, their answer lost) and
// answers the others with answer.
func recordingServer(t *testing.T, lose int, answer http.HandlerFunc) (string, func() ([]string, []map[string]any)) {
	t.Helper()
	var mu sync.Mutex
	var targets []string
	var bodies []map[string]any
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(data, &body)
		mu.Lock()
		targets = append(targets, r.URL.RequestURI())
		bodies = append(bodies, body)
		lost := len(bodies) <= lose
		mu.Unlock()
		if lost {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		answer(w, r)
	}))
	t.Cleanup(server.Close)
	return server.URL, func() ([]string, []map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), targets...), append([]map[string]any(nil), bodies...)
	}
}

const repeatedGrant = `{"name":"x","lease":"5.repeated","token":5,"ttl_ms":10000,"validity_ms":9000,"waited_ms":0,"repeated":true}`

func TestAnAcquireWhoseAnswerWasLostAsksAgainWithTheSameRequestID(t *testing.T) {
	for _, given := range []string{"", "job-7:attempt/1"} {
		url, recorded := recordingServer(t, 1, answering(200, repeatedGrant))
		client := fakeClient(t, url, fencelock.Options{RetryBackoff: time.Millisecond})
		lease, err := client.Acquire(context.Background(), "x", 10*time.Second,
			fencelock.AcquireOptions{RequestID: given, Renew: fencelock.RenewOptions{Off: true}})
		if err != nil || lease.Token() != 5 || lease.LeaseString() != "5.repeated" {
			t.Fatalf("%q: got %v, %v", given, lease, err)
		}
		_, bodies := recorded()
		if len(bodies) != 2 || bodies[0]["request_id"] != bodies[1]["request_id"] {
			t.Fatalf("%q: sent %v", given, bodies)
		}
		id, _ := bodies[0]["request_id"].(string)
		if given == "" && !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || given != "" && id != given {
			t.Errorf("%q: the request id sent is %q", given, id)
		}
	}
}

func TestEachAcquireCallNamesARequestOfItsOwn(t *testing.T) {
	url, recorded := recordingServer(t, 0, answering(200, repeatedGrant))
	client := fakeClient(t, url, fencelock.Options{})
	for i := 0; i < 2; i++ {
		if _, err := client.Acquire(context.Background(), "x", 10*time.Second, noRenew); err != nil {
			t.Fatal(err)
		}
	}
	if _, bodies := recorded(); len(bodies) != 2 || bodies[0]["request_id"] == bodies[1]["request_id"] {
		t.Errorf("sent %v", bodies)
	}
}

func TestOtherGrantsAreNotAskedAgainOnceMaybeDeliveredNorAnAcquireAfterA503(t *testing.T) {
	grants := map[string]func(c *fencelock.Client) error{
		"set": func(c *fencelock.Client) error {
			_, err := c.AcquireSet(context.Background(), []string{"a", "b"}, time.Second, fencelock.AcquireOptions{})
			return err
		},
		"permit": func(c *fencelock.Client) error {
			_, err := c.AcquirePermit(context.Background(), "s", 3, time.Second, fencelock.AcquireOptions{})
			return err
		},
		"read": func(c *fencelock.Client) error {
			_, err := c.AcquireRead(context.Background(), "r", time.Second, fencelock.AcquireOptions{})
			return err
		},
		"write": func(c *fencelock.Client) error {
			_, err := c.AcquireWrite(context.Background(), "r", time.Second, fencelock.AcquireOptions{})
			return err
		},
	}
	for what, grant := range grants {
		url, recorded := recordingServer(t, 100, answering(200, repeatedGrant))
		if err := grant(fakeClient(t, url, fencelock.Options{RetryBackoff: time.Millisecond})); !errors.Is(err, fencelock.ErrTransport) {
			t.Fatalf("%s: want transport, got %v", what, err)
		}
		if _, bodies := recorded(); len(bodies) != 1 || bodies[0]["request_id"] != nil {
			t.Errorf("%s: sent %v", what, bodies)
		}
	}
	url, recorded := recordingServer(t, 0, answering(503, `{"error":{"code":"unavailable","message":"too few lock nodes"}}`))
	client := fakeClient(t, url, fencelock.Options{RetryBackoff: time.Millisecond})
	if _, err := client.Acquire(context.Background(), "x", time.Second, noRenew); !errors.Is(err, fencelock.ErrUnavailable) {
		t.Fatalf("want unavailable, got %v", err)
	}
	if _, bodies := recorded(); len(bodies) != 1 {
		t.Errorf("an acquire answered 503 was sent %d times", len(bodies))
	}
	url, requests := closingServer(t)
	client = fakeClient(t, url, fencelock.Options{RetryBackoff: time.Millisecond})
	if _, err := client.Status(context.Background(), "x"); !errors.Is(err, fencelock.ErrTransport) {
		t.Fatalf("want transport, got %v", err)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("a status was sent %d times, want 1 + 2 retries", n)
	}
}

func TestABadRequestIDOrOneGivenToAnotherGrantIsRefusedBeforeSending(t *testing.T) {
	client := fakeClient(t, fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)), fencelock.Options{})
	ctx := context.Background()
	for _, bad := range []string{"has space", strings.Repeat("x", 65), "é", "tab\t"} {
		if _, err := client.Acquire(ctx, "x", time.Second, fencelock.AcquireOptions{RequestID: bad}); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("%q: want invalid argument, got %v", bad, err)
		}
	}
	withID := fencelock.AcquireOptions{RequestID: "r"}
	if _, err := client.AcquireSet(ctx, []string{"a"}, time.Second, withID); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Errorf("a set: want invalid argument, got %v", err)
	}
	if _, err := client.AcquirePermit(ctx, "s", 2, time.Second, withID); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Errorf("a permit: want invalid argument, got %v", err)
	}
	if _, err := client.AcquireRead(ctx, "r", time.Second, withID); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Errorf("a read: want invalid argument, got %v", err)
	}
	if _, err := client.AcquireWrite(ctx, "r", time.Second, withID); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Errorf("a write: want invalid argument, got %v", err)
	}
}

func TestAListingPageIsAskedForWithEncodedValuesAndRead(t *testing.T) {
	url, recorded := recordingServer(t, 0, answering(200, `{"locks":[`+
		`{"name":"inv-1","token":9223372036854775807,"owner":"billing-7","remaining_ms":2500},`+
		`{"name":"inv-2","token":null,"owner":null,"remaining_ms":0}],"next":"2-1536-0"}`))
	client := fakeClient(t, url, fencelock.Options{})
	page, err := client.ListLocks(context.Background(), fencelock.ListOptions{Prefix: "inv-", Limit: 2, Cursor: "1-0+x"})
	want := fencelock.LockListing{Locks: []fencelock.HeldLock{
		{Name: "inv-1", Token: 1<<63 - 1, Owner: "billing-7", Remaining: 2500 * time.Millisecond},
		{Name: "inv-2"}}, Next: "2-1536-0"}
	if err != nil || !reflect.DeepEqual(page, want) {
		t.Fatalf("got %+v, %v", page, err)
	}
	if _, err := client.ListLocks(context.Background(), fencelock.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if targets, _ := recorded(); !reflect.DeepEqual(targets, []string{"/v1/locks?limit=2&prefix=inv-&cursor=1-0%2Bx", "/v1/locks?limit=100"}) {
		t.Errorf("asked for %q", targets)
	}
	for _, limit := range []int{-1, 1001} {
		if _, err := client.ListLocks(context.Background(), fencelock.ListOptions{Limit: limit}); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("limit %d: want invalid argument, got %v", limit, err)
		}
	}
	for _, body := range []string{`{"next":null}`, `{"locks":[{"name":"a"}],"next":null}`, `{"locks":[{"name":"a","remaining_ms":1,"token":0}],"next":null}`} {
		url, _ := recordingServer(t, 0, answering(200, body))
		if _, err := fakeClient(t, url, fencelock.Options{}).ListLocks(context.Background(), fencelock.ListOptions{}); !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", body, err)
		}
	}
}

func TestAWatchIsAskedForWithItsTokenAndWaitAndRead(t *testing.T) {
	url, recorded := recordingServer(t, 0, answering(200,
		`{"name":"inv-1","changed":false,"held":true,"remaining_ms":2500,"token":9223372036854775807,"owner":"billing-7"}`))
	client := fakeClient(t, url, fencelock.Options{})
	ctx := context.Background()
	watched, err := client.Watch(ctx, "inv-1", 1<<63-1, 1500*time.Millisecond)
	want := fencelock.LockStatus{Held: true, Remaining: 2500 * time.Millisecond, Token: 1<<63 - 1, Owner: "billing-7"}
	if err != nil || watched != want {
		t.Fatalf("got %+v, %v", watched, err)
	}
	if _, err := client.Watch(ctx, "inv-1", 0, 0); err != nil {
		t.Fatal(err)
	}
	targets, _ := recorded()
	if !reflect.DeepEqual(targets, []string{"/v1/locks/inv-1?after_token=9223372036854775807&wait_ms=1500", "/v1/locks/inv-1?after_token=0&wait_ms=0"}) {
		t.Errorf("asked for %q", targets)
	}
	bad := []struct {
		name  string
		token int64
		wait  time.Duration
	}{{"a/b", 1, time.Second}, {"", 1, time.Second}, {"ok", -1, time.Second}, {"ok", 1, -time.Second}, {"ok", 1, time.Hour + time.Second}}
	for _, call := range bad {
		if _, err := client.Watch(ctx, call.name, call.token, call.wait); !errors.Is(err, fencelock.ErrInvalidArgument) {
			t.Errorf("%+v: want invalid argument, got %v", call, err)
		}
	}
	if targets, _ := recorded(); len(targets) != 2 {
		t.Errorf("a bad watch was sent: %q", targets)
	}
	for _, body := range []string{`{"held":true,"token":9}`, `{"changed":true,"token":0}`, `{"changed":"yes"}`} {
		url, _ := recordingServer(t, 0, answering(200, body))
		if _, err := fakeClient(t, url, fencelock.Options{}).Watch(ctx, "x", 9, 0); !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", body, err)
		}
	}
}

func TestARevokeIsSentOnceWithoutAWaitAndNotRetriedOnceMaybeDelivered(t *testing.T) {
	var path, body string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			data, _ := io.ReadAll(r.Body)
			path, body = r.URL.Path, string(data)
		}
		answering(200, `{"name":"x","lease":"9.ab","token":9,"ttl_ms":1000,"validity_ms":900,"waited_ms":0,"released":true}`)(w, r)
	}))
	defer server.Close()
	lease, err := fakeClient(t, server.URL, fencelock.Options{}).Revoke(context.Background(), "x", time.Second,
		fencelock.RevokeOptions{Owner: "ops", Renew: fencelock.RenewOptions{Off: true}})
	if err != nil || lease.Token() != 9 || lease.Kind() != fencelock.KindLock {
		t.Fatalf("got %v, %v", lease, err)
	}
	release(t, lease)
	if path != "/v1/locks/x/revoke" || body != `{"ttl_ms":1000,"owner":"ops"}` {
		t.Errorf("sent %s %s", path, body)
	}

	url, requests := closingServer(t)
	client := fakeClient(t, url, fencelock.Options{RetryBackoff: time.Millisecond})
	if _, err := client.Revoke(context.Background(), "x", time.Second, fencelock.RevokeOptions{}); !errors.Is(err, fencelock.ErrTransport) {
		t.Fatalf("want transport, got %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the revoke was sent %d times", n)
	}
}

// rwServer answers a read/write lock's grant (in grantMode), extend, release and status as
// fencelockd would, and records each request's method, path and JSON body.
func rwServer(t *testing.T, grantMode, status string) (*fencelock.Client, func() ([]string, []map[string]any)) {
	t.Helper()
	var mu sync.Mutex
	var requests []string
	var bodies []map[string]any
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(data, &body)
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.RequestURI())
		bodies = append(bodies, body)
		mu.Unlock()
		switch {
		case r.Method == "GET":
			answering(200, status)(w, r)
		case r.Method == "DELETE":
			answering(200, `{"released":true}`)(w, r)
		default:
			lease := "7.0a1b.r"
			if grantMode == "write" {
				lease = "7.0a1b.w"
			}
			answering(200, `{"name":"x","mode":"`+grantMode+`","lease":"`+lease+`","token":7,"ttl_ms":10000,"validity_ms":9000,"waited_ms":0}`)(w, r)
		}
	}))
	t.Cleanup(server.Close)
	return fakeClient(t, server.URL, fencelock.Options{}), func() ([]string, []map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), requests...), append([]map[string]any(nil), bodies...)
	}
}

func TestAReadWriteGrantAsksForItsModeAndItsLeaseStringGoesBackToItsOwnPath(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"read", "write"} {
		client, recorded := rwServer(t, mode, "{}")
		acquire := map[string]func(context.Context, string, time.Duration, fencelock.AcquireOptions) (*fencelock.Lease, error){
			"read": client.AcquireRead, "write": client.AcquireWrite}[mode]
		lease, err := acquire(ctx, "x", 10*time.Second, fencelock.AcquireOptions{Wait: time.Second, Owner: "o", Renew: fencelock.RenewOptions{Off: true}})
		if err != nil || lease.Token() != 7 || lease.Kind().String() != mode {
			t.Fatalf("%s: %v, %v", mode, lease, err)
		}
		if err := lease.Extend(ctx, 20*time.Second); err != nil {
			t.Fatalf("%s: extend: %v", mode, err)
		}
		if released, err := lease.Release(ctx); err != nil || !released {
			t.Fatalf("%s: release: %v, %v", mode, released, err)
		}
		requests, bodies := recorded()
		want := []string{"POST /v1/rwlocks/x", "POST /v1/rwlocks/x/extend", "DELETE /v1/rwlocks/x"}
		if !reflect.DeepEqual(requests, want) {
			t.Fatalf("%s: sent %v", mode, requests)
		}
		asked := map[string]any{"mode": mode, "ttl_ms": 10000.0, "wait_ms": 1000.0, "owner": "o"}
		if !reflect.DeepEqual(bodies[0], asked) {
			t.Errorf("%s: asked %v", mode, bodies[0])
		}
		if bodies[1]["lease"] != lease.LeaseString() || bodies[1]["ttl_ms"] != 20000.0 || bodies[2]["lease"] != lease.LeaseString() {
			t.Errorf("%s: the lease string went back as %v and %v", mode, bodies[1], bodies[2])
		}
	}
}

func TestAReadWriteGrantOfAnotherModeIsReleasedAndRefused(t *testing.T) {
	client, recorded := rwServer(t, "write", "{}")
	if _, err := client.AcquireRead(context.Background(), "x", time.Second, noRenew); !errors.Is(err, fencelock.ErrInternal) {
		t.Fatalf("a write granted for a read: want internal, got %v", err)
	}
	if requests, bodies := recorded(); len(requests) != 2 || requests[1] != "DELETE /v1/rwlocks/x" || bodies[1]["lease"] != "7.0a1b.w" {
		t.Errorf("sent %v %v", requests, bodies)
	}
}

func TestAReadWriteLockStatusReadsItsModeHoldersAndWaitingWriter(t *testing.T) {
	status := func(answer string) (fencelock.RWLockStatus, error) {
		client, _ := rwServer(t, "read", answer)
		return client.RWLockStatus(context.Background(), "x")
	}
	held := `{"name":"x","mode":"read","holders":[{"token":9223372036854775807,"owner":"a","remaining_ms":900},` +
		`{"token":8,"owner":null,"remaining_ms":0}],"writer_waiting":true}`
	want := fencelock.RWLockStatus{Mode: "read", WriterWaiting: true, Holders: []fencelock.RWLockHolder{
		{Token: 1<<63 - 1, Owner: "a", Remaining: 900 * time.Millisecond}, {Token: 8}}}
	if s, err := status(held); err != nil || !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v, %v", s, err)
	}
	free := fencelock.RWLockStatus{Holders: []fencelock.RWLockHolder{}}
	if s, err := status(`{"name":"x","mode":null,"holders":[],"writer_waiting":false}`); err != nil || !reflect.DeepEqual(s, free) {
		t.Errorf("free: got %+v, %v", s, err)
	}
	for _, bad := range []string{`{"mode":null,"writer_waiting":false}`, `{"mode":null,"holders":[]}`,
		`{"mode":"exclusive","holders":[],"writer_waiting":false}`,
		`{"mode":"read","holders":[{"token":0,"remaining_ms":1}],"writer_waiting":false}`,
		`{"mode":"read","holders":[{"token":3}],"writer_waiting":false}`} {
		if _, err := status(bad); !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", bad, err)
		}
	}
}

func TestAStatusReadsTheHoldersTokenAndOwner(t *testing.T) {
	status := func(fields string) (fencelock.LockStatus, error) {
		server := httptest.NewServer(answering(200, `{"name":"x","held":true,"remaining_ms":900,"last_token":9,`+fields+`}`))
		defer server.Close()
		return fakeClient(t, server.URL, fencelock.Options{}).Status(context.Background(), "x")
	}
	if s, err := status(`"token":9223372036854775807,"owner":"billing-7"`); err != nil || s.Token != 1<<63-1 || s.Owner != "billing-7" {
		t.Errorf("got %+v, %v", s, err)
	}
	if s, err := status(`"token":null,"owner":null`); err != nil || s.Token != 0 || s.Owner != "" {
		t.Errorf("got %+v, %v", s, err)
	}
	for _, fields := range []string{`"token":0`, `"token":-1`, `"token":"9"`, `"token":9223372036854775808`, `"owner":7`} {
		if _, err := status(fields); !errors.Is(err, fencelock.ErrInternal) {
			t.Errorf("%s: want internal, got %v", fields, err)
		}
	}
}

func TestTheNextEndpointAnswersWhenTheFirstIsAClosedPort(t *testing.T) {
	server := httptest.NewServer(answering(200, `{"name":"x","lease":"5.ab","token":5,"ttl_ms":1000,"validity_ms":900,"waited_ms":0}`))
	defer server.Close()
	client, err := fencelock.New(fencelock.Options{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)), server.URL}})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := client.Acquire(context.Background(), "x", time.Second, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
	if err != nil || lease.Token() != 5 {
		t.Fatalf("got %v, %v", lease, err)
	}
}

func TestACancelledAcquireReleasesAGrantWhoseAnswerHadArrived(t *testing.T) {
	var mu sync.Mutex
	var releasedLease string
	headSent := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == "DELETE" {
			mu.Lock()
			releasedLease = string(body)
			mu.Unlock()
			answering(200, `{"name":"x","released":true}`)(w, r)
			return
		}
		// The head first; the body after the caller has given up.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(headSent)
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, `{"name":"x","lease":"9.abcdef","token":9,"ttl_ms":1000,"validity_ms":900,"waited_ms":0}`)
	}))
	defer server.Close()
	client := fakeClient(t, server.URL, fencelock.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-headSent
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	lease, err := client.Acquire(ctx, "x", time.Second, fencelock.AcquireOptions{Wait: time.Second})
	if !errors.Is(err, context.Canceled) || lease != nil {
		t.Fatalf("want context.Canceled, got %v, %v", lease, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(releasedLease, `"9.abcdef"`) {
		t.Errorf("the grant was not released: %q", releasedLease)
	}
}

func TestAGrantWrittenAsTheCallerGaveUpIsReceivedAndReleased(t *testing.T) {
	// fencelockd may write a grant just before it sees the waiting client go: the client must
	// still read it (it only closes its sending half) and release it, or the lock stays held for
	// the whole ttl. Both ways to give up: a cancel and a deadline.
	for _, how := range []string{"cancel", "deadline"} {
		t.Run(how, func(t *testing.T) {
			var released atomic.Int32
			waiting := make(chan struct{})
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				if r.Method == "DELETE" {
					released.Add(1)
					answering(200, `{"name":"x","released":true}`)(w, r)
					return
				}
				close(waiting)
				<-r.Context().Done() // the client gave up: the grant was already on its way
				time.Sleep(50 * time.Millisecond)
				answering(200, `{"name":"x","lease":"9.abcdef","token":9,"ttl_ms":30000,"validity_ms":29000,"waited_ms":100}`)(w, r)
			}))
			defer server.Close()
			client := fakeClient(t, server.URL, fencelock.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if how == "deadline" {
				ctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
			} else {
				go func() {
					<-waiting
					cancel()
				}()
			}
			started := time.Now()
			lease, err := client.Acquire(ctx, "x", 30*time.Second, fencelock.AcquireOptions{Wait: 10 * time.Second})
			if lease != nil || !errors.Is(err, ctx.Err()) || err == nil {
				t.Fatalf("want the context's error, got %v, %v", lease, err)
			}
			if elapsed := time.Since(started); elapsed > 2*time.Second {
				t.Errorf("gave up after %v", elapsed)
			}
			if released.Load() != 1 {
				t.Error("the grant on its way was dropped, not released")
			}
		})
	}
}

func TestACancelledReadEndsAtOnceEvenWhileItsAnswerTrickles(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for i := 0; i < 50; i++ {
			if _, err := io.WriteString(w, " "); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}))
	defer server.Close()
	client := fakeClient(t, server.URL, fencelock.Options{RequestTimeout: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	started := time.Now()
	_, err := client.Status(ctx, "x")
	if !errors.Is(err, context.Canceled) || time.Since(started) > 2*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(started))
	}
}

func TestACancelledWaitEndsAtOnce(t *testing.T) {
	gone := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done(): // fencelockd notices the closed connection the same way
			close(gone)
		case <-time.After(5 * time.Second):
		}
	}))
	defer server.Close()
	client := fakeClient(t, server.URL, fencelock.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := client.Acquire(ctx, "x", time.Second, fencelock.AcquireOptions{Wait: 10 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 2*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(started))
	}
	select {
	case <-gone:
	case <-time.After(2 * time.Second):
		t.Error("the server never saw the connection close")
	}
}

func TestWithoutRenewalDoneClosesBeforeTheDeadline(t *testing.T) {
	server := httptest.NewServer(answering(200, `{"name":"x","lease":"5.ab","token":5,"ttl_ms":300,"validity_ms":300,"waited_ms":0}`))
	defer server.Close()
	client := fakeClient(t, server.URL, fencelock.Options{})
	lease, err := client.Acquire(context.Background(), "x", 300*time.Millisecond, fencelock.AcquireOptions{Renew: fencelock.RenewOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Done():
		if !time.Now().Before(lease.Deadline()) {
			t.Error("Done closed after the deadline")
		}
		var e *fencelock.Error
		if !errors.As(lease.Err(), &e) || e.Code != fencelock.CodeLeaseLost || e.Cause != nil {
			t.Errorf("Err: %v", lease.Err())
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Done never closed")
	}
	if lease.Valid() {
		t.Error("a lost lease is valid")
	}
}

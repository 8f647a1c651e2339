package fencelock_test

// What the live tests share: the stack's addresses (from test.sh's environment), unique names, and
// the real processes a test may start or pause — every wait bounded.
//
// Environment (test.sh sets it from scripts/live-stack.sh):
//   FENCELOCK_ENDPOINT          the live stack's fencelockd
//   FENCELOCK_STACK_DIR         its directory (fencelockd.pid, for pausing it)
//   FENCELOCK_REDIS_PORTS       its redis-servers, "P1,P2,P3"
//   FENCELOCKD                  the fencelockd binary, for servers of the tests' own
//   FENCELOCK_SPARE_PORT_BASE   ports the tests may use for their own servers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"fencelock.dev/fencelock"
)

func liveEndpoint(t *testing.T) string {
	t.Helper()
	endpoint := os.Getenv("FENCELOCK_ENDPOINT")
	if endpoint == "" || testing.Short() {
		t.Skip("no live stack (run client-sdk/go/test.sh)")
	}
	return endpoint
}

func liveClient(t *testing.T, options fencelock.Options) *fencelock.Client {
	t.Helper()
	options.Endpoints = []string{liveEndpoint(t)}
	client, err := fencelock.New(options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func uniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// patiently retries grant on ErrUnavailable (10 times, 0.1 s apart): on this loaded 2-core
// machine fencelockd now and then misses its node timeout on every node at once and answers 503
// for a moment. The client rightly does not retry an acquire on 503; tests that are not about
// unavailability use this.
func patiently(t *testing.T, grant func() (*fencelock.Lease, error)) *fencelock.Lease {
	t.Helper()
	for i := 0; ; i++ {
		lease, err := grant()
		if err == nil {
			return lease
		}
		if !errors.Is(err, fencelock.ErrUnavailable) || i == 10 {
			t.Fatalf("acquire: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func release(t *testing.T, lease *fencelock.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := lease.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
}

// deleteLockKeys deletes lock name's key on every lock node, as if its lease had expired.
func deleteLockKeys(t *testing.T, name string) {
	t.Helper()
	for _, port := range strings.Split(os.Getenv("FENCELOCK_REDIS_PORTS"), ",") {
		out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "DEL", "fencelock:lock:"+name).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli DEL: %v: %s", err, out)
		}
	}
}

// pauseFencelockd SIGSTOPs the stack's fencelockd; the returned function SIGCONTs it and waits
// (at most 10 s) until it is ready again.
func pauseFencelockd(t *testing.T) func() {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(os.Getenv("FENCELOCK_STACK_DIR"), "fencelockd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(text)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if resumed {
			return
		}
		resumed = true
		_ = syscall.Kill(pid, syscall.SIGCONT)
		waitUntil(10*time.Second, func() bool {
			answer, err := http.Get(os.Getenv("FENCELOCK_ENDPOINT") + "/readyz")
			if err != nil {
				return false
			}
			answer.Body.Close()
			return answer.StatusCode == 200
		})
	}
	t.Cleanup(resume)
	return resume
}

func waitUntil(timeout time.Duration, condition func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if condition() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return condition()
}

func sparePort(t *testing.T, offset int) int {
	t.Helper()
	base, err := strconv.Atoi(os.Getenv("FENCELOCK_SPARE_PORT_BASE"))
	if err != nil {
		t.Skip("no FENCELOCK_SPARE_PORT_BASE (run client-sdk/go/test.sh)")
	}
	return base + offset
}

// closedPort is a loopback port with nothing listening (bound and released at once).
func closedPort(t *testing.T) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	listener.Close()
	return port
}

// fencelockdWithoutLockNodes starts a fencelockd of the test's own on port, its lock nodes closed
// ports (so it answers 503 once a request passes TLS and the API key), with extra flags. Stopped at
// the test's end (SIGTERM, then SIGKILL after 5 s).
func fencelockdWithoutLockNodes(t *testing.T, port int, extra ...string) {
	t.Helper()
	binary := os.Getenv("FENCELOCKD")
	if binary == "" {
		t.Skip("no FENCELOCKD (run client-sdk/go/test.sh)")
	}
	dir := t.TempDir()
	redis := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", closedPort(t), closedPort(t), closedPort(t))
	args := append([]string{"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--redis", redis,
		"--tokens", "sqlite:" + filepath.Join(dir, "tokens.db")}, extra...)
	log, err := os.Create(filepath.Join(dir, "fencelockd.log"))
	if err != nil {
		t.Fatal(err)
	}
	process := exec.Command(binary, args...)
	process.Stdout, process.Stderr = log, log
	if err := process.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = process.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = process.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = process.Process.Kill()
			<-exited
		}
		log.Close()
	})
	if !waitUntil(10*time.Second, func() bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}) {
		tail, _ := os.ReadFile(filepath.Join(dir, "fencelockd.log"))
		t.Fatalf("fencelockd on %d did not start; its log:\n%s", port, tail)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

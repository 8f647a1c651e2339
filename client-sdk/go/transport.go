package fencelock

// One call to fencelockd: an attempt per endpoint, in order, with the retry rules of the Client's
// contract. Each attempt runs under a context of its own (the attempt's timeout) that follows the
// caller's context; an acquire's, only until the answer's head has arrived. A caller that gives up on a sent
// acquire does not close the connection outright: it closes its sending half, so fencelockd stops
// waiting (docs/api.md, "A waiting acquire ends with its client"), and reads on for up to the
// connect timeout, because a grant fencelockd wrote before it saw the close is on its way and only
// this client can release it (Client.Acquire does). Closing at once would drop such a grant in the
// socket and leave the lock held until its ttl. An answer that has arrived is read whole.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	userAgent = "fencelock-go"
	// maxAnswer bounds an answer's body; fencelockd's are a few hundred bytes.
	maxAnswer = 1 << 20
)

type reply struct {
	status int
	header http.Header
	body   []byte
}

type callSpec struct {
	method string
	path   string
	body   any // marshalled as JSON; nil: no body
	// safe: the call may be repeated (extend, release, reads, token draws): it is retried on
	// transport errors and 503s. repeatable: it names its request (a lock's acquire with a
	// request_id), so it is retried on transport errors, even once sent, but not on 503s.
	// Otherwise (other grants) only when the request was certainly not sent.
	safe       bool
	repeatable bool
	// extra is added to the request timeout (an acquire's or a watch's wait).
	extra time.Duration
}

// call sends spec, retrying as the Client's contract says. It returns the answer whose status is
// not a retried 503 and the send time of its attempt, or the error of the last attempt (a TLS
// failure before a later transport failure), or the caller's context error.
func (c *Client) call(ctx context.Context, spec callSpec) (reply, time.Time, error) {
	var data []byte
	if spec.body != nil {
		var err error
		if data, err = json.Marshal(spec.body); err != nil {
			return reply{}, time.Time{}, internal("cannot encode the request: %v", err)
		}
	}
	preferred := int(c.preferred.Load())
	backoff := c.s.retryBackoff
	var last, tlsFailure error
	for attempt := 0; attempt <= c.s.maxRetries; attempt++ {
		index := (preferred + attempt) % len(c.s.endpoints)
		r, sentAt, maybeSent, err := c.attempt(ctx, c.s.endpoints[index], spec, data)
		if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
			return reply{}, time.Time{}, ctxErr
		}
		if err == nil {
			c.preferred.Store(int32(index))
			if !(r.status == http.StatusServiceUnavailable && spec.safe) {
				return r, sentAt, nil
			}
			last = errorFromReply(r)
		} else {
			last = err
			if maybeSent && !spec.safe && !spec.repeatable {
				return reply{}, time.Time{}, err
			}
			if isCode(err, CodeTLS) {
				if tlsFailure == nil {
					tlsFailure = err
				}
				if len(c.s.endpoints) == 1 {
					break
				}
			}
		}
		if attempt == c.s.maxRetries {
			break
		}
		pause := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			pause.Stop()
			return reply{}, time.Time{}, ctx.Err()
		case <-pause.C:
		}
		backoff *= 2
	}
	if tlsFailure != nil && (last == nil || isCode(last, CodeTransport)) {
		return reply{}, time.Time{}, tlsFailure
	}
	return reply{}, time.Time{}, last
}

// attempt sends one request to one endpoint. maybeSent reports whether any of it may have
// reached the server.
func (c *Client) attempt(ctx context.Context, e endpoint, spec callSpec, data []byte) (r reply, sentAt time.Time, maybeSent bool, err error) {
	timeout := c.s.requestTimeout + spec.extra
	// A sent acquire outlives the caller's deadline by the half-close's grace (see the top).
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < timeout && spec.safe {
		timeout = time.Until(deadline)
	}
	if timeout <= 0 || ctx.Err() != nil {
		if ctx.Err() != nil {
			return reply{}, time.Time{}, false, ctx.Err()
		}
		return reply{}, time.Time{}, false, context.DeadlineExceeded
	}
	attemptCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	// Follows the caller's context until the answer's head has arrived.
	var mu sync.Mutex
	answered := false
	var conn net.Conn       // the attempt's connection, once it has one
	var halfClosed net.Conn // conn, once its sending half was closed
	var grace *time.Timer   // cancels the attempt once the half-close's grace is over
	watchEnd := make(chan struct{})
	defer func() {
		close(watchEnd)
		mu.Lock()
		defer mu.Unlock()
		if grace != nil {
			grace.Stop()
		}
		if halfClosed != nil {
			halfClosed.Close() // never reused: it cannot send
		}
	}()
	var wrote atomic.Bool
	go func() {
		select {
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			if answered && !spec.safe {
				return // a grant is read whole, to be released
			}
			if !spec.safe && wrote.Load() && conn != nil {
				if half, ok := conn.(interface{ CloseWrite() error }); ok && half.CloseWrite() == nil {
					halfClosed = conn
					grace = time.AfterFunc(c.s.connectTimeout, cancel)
					return
				}
			}
			cancel()
		case <-watchEnd:
		}
	}()

	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			mu.Lock()
			defer mu.Unlock()
			conn = info.Conn
			if t, ok := conn.(*tls.Conn); ok {
				conn = t.NetConn() // half-closes the TCP connection under TLS
			}
		},
		WroteHeaders: func() { wrote.Store(true) },
	}
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	request, err := http.NewRequestWithContext(httptrace.WithClientTrace(attemptCtx, trace), spec.method, e.base+spec.path, body)
	if err != nil {
		return reply{}, time.Time{}, false, invalid("cannot make the request: %v", err)
	}
	request.Header.Set("User-Agent", userAgent)
	if data != nil {
		request.Header.Set("Content-Type", "application/json")
	}
	if c.s.authorization != nil {
		request.Header.Set("Authorization", *c.s.authorization)
	}
	sentAt = time.Now()
	response, err := c.http.Do(request)
	mu.Lock()
	answered = true
	if grace != nil {
		grace.Stop() // the answer is here: read it whole
	}
	mu.Unlock()
	if err != nil {
		return reply{}, sentAt, wrote.Load(), transportError(e, err, wrote.Load())
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(response.Body, maxAnswer))
	if err != nil {
		return reply{}, sentAt, true, transportError(e, err, true)
	}
	return reply{status: response.StatusCode, header: response.Header, body: answer}, sentAt, true, nil
}

func transportError(e endpoint, err error, maybeSent bool) *Error {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalidCertificate x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	text := err.Error()
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalidCertificate) || errors.As(err, &recordHeader) ||
		strings.Contains(text, "tls: ") || strings.Contains(text, "x509: ") {
		return &Error{Code: CodeTLS, Message: e.base + ": TLS failed: " + unwrapURL(err), Cause: err}
	}
	message := e.base + ": " + unwrapURL(err)
	if !maybeSent {
		message = e.base + ": cannot connect: " + unwrapURL(err)
	} else if !e.tls && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		message += " (closed without an answer: is it TLS-only? use https://)"
	}
	return &Error{Code: CodeTransport, Message: message, Cause: err}
}

// unwrapURL drops net/http's "Post \"URL\": " prefix: the message names the endpoint already.
func unwrapURL(err error) string {
	var u *url.Error
	if errors.As(err, &u) && u.Err != nil {
		return u.Err.Error()
	}
	return err.Error()
}

// errorFromReply is the *Error of an error answer: its code, message, retry_after_ms (else the
// Retry-After header), permits and X-Request-Id.
func errorFromReply(r reply) *Error {
	var envelope struct {
		Error *struct {
			Code         string `json:"code"`
			Message      string `json:"message"`
			RetryAfterMs *int64 `json:"retry_after_ms"`
			Permits      *int   `json:"permits"`
		} `json:"error"`
	}
	e := &Error{HTTPStatus: r.status, Message: "HTTP " + strconv.Itoa(r.status), RequestID: r.header.Get("X-Request-Id")}
	if json.Unmarshal(r.body, &envelope) == nil && envelope.Error != nil {
		e.Code = Code(envelope.Error.Code)
		if envelope.Error.Message != "" {
			e.Message = envelope.Error.Message
		}
		if ms := envelope.Error.RetryAfterMs; ms != nil && *ms >= 0 {
			e.RetryAfter = time.Duration(*ms) * time.Millisecond
		}
		if envelope.Error.Permits != nil {
			e.Permits = *envelope.Error.Permits
		}
	}
	if e.Code == "" {
		e.Code = codeOfStatus(r.status)
	}
	if e.RetryAfter == 0 {
		if seconds, err := strconv.Atoi(r.header.Get("Retry-After")); err == nil && seconds >= 0 {
			e.RetryAfter = time.Duration(seconds) * time.Second
		}
	}
	return e
}

// decode reads a 200 answer into answer (a pointer to a struct whose integers are int64: JSON
// numbers are never read as float64); any other status is its *Error.
func decode(r reply, answer any) error {
	if r.status != http.StatusOK {
		return errorFromReply(r)
	}
	if err := json.Unmarshal(r.body, answer); err != nil {
		return &Error{Code: CodeInternal, HTTPStatus: r.status, RequestID: r.header.Get("X-Request-Id"),
			Message: "the service's answer cannot be read: " + err.Error()}
	}
	return nil
}

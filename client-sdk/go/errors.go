package fencelock

import (
	"errors"
	"fmt"
	"time"
)

// Code is an error's stable code. Answers from fencelockd carry the API's own codes
// (docs/api.md, "Errors"); the client adds the codes of failures that have no answer.
type Code string

// The API's stable codes (docs/api.md, "Errors").
const (
	CodeInvalidRequest       Code = "invalid_request"
	CodePlainHTTPOnTLSPort   Code = "plain_http_on_tls_port"
	CodeUnauthenticated      Code = "unauthenticated"
	CodeForbidden            Code = "forbidden"
	CodeRateLimited          Code = "rate_limited"
	CodeQuotaExceeded        Code = "quota_exceeded"
	CodeNotFound             Code = "not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeLocked               Code = "locked"
	CodeNotHeld              Code = "not_held"
	CodePermitsMismatch      Code = "permits_mismatch"
	CodeCrossSiteRequest     Code = "cross_site_request"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeHostNotAllowed       Code = "host_not_allowed"
	CodeInternal             Code = "internal"
	CodeUnavailable          Code = "unavailable"
)

// The client's own codes, for failures without an answer from fencelockd.
const (
	// CodeTransport: no usable answer — the connection was refused, timed out or broke.
	CodeTransport Code = "transport"
	// CodeTLS: the TLS handshake failed (an untrusted certificate, a name mismatch). Retrying
	// cannot mend it.
	CodeTLS Code = "tls"
	// CodeLeaseLost: the lease ended before it was released — an extend was refused, or it could
	// not be renewed before its deadline (Lease.Err).
	CodeLeaseLost Code = "lease_lost"
)

// Error is every error the client returns, except the caller's own context errors
// (context.Canceled, context.DeadlineExceeded), which are returned as they are.
//
// Match a kind with errors.Is and the Err* values below — errors.Is(err, fencelock.ErrLocked) —
// or read the fields with errors.As. Messages are for people and never hold a lease string or an
// API key.
type Error struct {
	// Code is the answer's code, or a client code (CodeTransport, CodeTLS, CodeLeaseLost). A call
	// the client refuses before sending anything (a bad name, ttl or option) has
	// CodeInvalidRequest, as fencelockd would answer it.
	Code Code
	// Message says what went wrong, for people; not stable.
	Message string
	// HTTPStatus is the answer's status; 0 when there was no answer.
	HTTPStatus int
	// RetryAfter is how long until a retry may succeed when the service said (retry_after_ms,
	// else Retry-After); 0 when it did not.
	RetryAfter time.Duration
	// RequestID is the answer's X-Request-Id, which names the request in fencelockd's log.
	RequestID string
	// Permits is the live permit count of a semaphore asked for with another one
	// (CodePermitsMismatch), when the service said; 0 otherwise.
	Permits int
	// Cause is the underlying error (a network error; for CodeLeaseLost the refused extend or
	// the last failed one), or nil.
	Cause error
}

func (e *Error) Error() string {
	text := "fencelock: " + string(e.Code) + ": " + e.Message
	if e.Cause != nil && e.Code == CodeLeaseLost {
		text += ": " + e.Cause.Error()
	}
	return text
}

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is one of the Err* kinds below and e belongs to it.
// A code this client does not know is classified by the answer's status.
func (e *Error) Is(target error) bool {
	k, ok := target.(*kind)
	if !ok {
		return false
	}
	code := e.Code
	if !knownCode(code) && e.HTTPStatus != 0 {
		code = codeOfStatus(e.HTTPStatus)
	}
	return k.matches(code)
}

// Kinds of error, for errors.Is. Each groups the codes a caller handles alike.
var (
	// ErrLocked: another lease holds the lock, a name of the set or every permit, and the wait
	// ran out. RetryAfter says when it frees, when known.
	ErrLocked error = &kind{"locked", []Code{CodeLocked}}
	// ErrNotHeld: an extend found the lease no longer holding the lock (expired, released or
	// taken over). Stop using it.
	ErrNotHeld error = &kind{"not held", []Code{CodeNotHeld}}
	// ErrUnavailable: too few lock nodes answered or the token source is down. Retry later.
	ErrUnavailable error = &kind{"unavailable", []Code{CodeUnavailable}}
	// ErrInvalidArgument: the call itself is wrong (refused by the client or the service).
	ErrInvalidArgument error = &kind{"invalid argument", []Code{CodeInvalidRequest,
		CodePlainHTTPOnTLSPort, CodeNotFound, CodeMethodNotAllowed, CodePayloadTooLarge,
		CodeUnsupportedMediaType, CodeHostNotAllowed}}
	// ErrDenied: 401/403 — no API key, an unknown one, or one without the right or the name.
	ErrDenied error = &kind{"denied", []Code{CodeUnauthenticated, CodeForbidden, CodeCrossSiteRequest}}
	// ErrRateLimited: 429 — the API key is over its rate or its caps; RetryAfter says when.
	ErrRateLimited error = &kind{"rate limited", []Code{CodeRateLimited, CodeQuotaExceeded}}
	// ErrPermitsMismatch: the semaphore is live with another permit count (Error.Permits).
	ErrPermitsMismatch error = &kind{"permits mismatch", []Code{CodePermitsMismatch}}
	// ErrTransport: no usable answer from any endpoint tried (TLS failures included).
	ErrTransport error = &kind{"transport", []Code{CodeTransport, CodeTLS}}
	// ErrTLS: the TLS handshake failed; fix the certificates.
	ErrTLS error = &kind{"tls", []Code{CodeTLS}}
	// ErrInternal: a bug in fencelockd, or an answer the client cannot read.
	ErrInternal error = &kind{"internal", []Code{CodeInternal}}
	// ErrLeaseLost: the lease ended before it was released (Lease.Err).
	ErrLeaseLost error = &kind{"lease lost", []Code{CodeLeaseLost}}
	// ErrReleased is Lease.Err after Release: the lease ended because its holder released it.
	ErrReleased = errors.New("fencelock: the lease was released")
)

type kind struct {
	name  string
	codes []Code
}

func (k *kind) Error() string { return "fencelock: " + k.name }

func (k *kind) matches(code Code) bool {
	for _, c := range k.codes {
		if c == code {
			return true
		}
	}
	return false
}

var allKinds = []*kind{ErrLocked.(*kind), ErrNotHeld.(*kind), ErrUnavailable.(*kind),
	ErrInvalidArgument.(*kind), ErrDenied.(*kind), ErrRateLimited.(*kind),
	ErrPermitsMismatch.(*kind), ErrTransport.(*kind), ErrInternal.(*kind), ErrLeaseLost.(*kind)}

func knownCode(code Code) bool {
	for _, k := range allKinds {
		if k.matches(code) {
			return true
		}
	}
	return false
}

// codeOfStatus classifies an error answer whose code this client does not know.
func codeOfStatus(status int) Code {
	switch {
	case status == 503:
		return CodeUnavailable
	case status == 429:
		return CodeRateLimited
	case status == 401:
		return CodeUnauthenticated
	case status == 403:
		return CodeForbidden
	case status >= 400 && status < 500:
		return CodeInvalidRequest
	default:
		return CodeInternal
	}
}

func invalid(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func internal(format string, args ...any) *Error {
	return &Error{Code: CodeInternal, Message: fmt.Sprintf(format, args...)}
}

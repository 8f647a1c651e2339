// Package fencelock is the Go client of fencelock, an HTTP/JSON distributed lock service (Redlock on
// N Redis masters plus a fencing token per grant; docs/api.md).
//
// A Client acquires locks (Acquire), lock sets — several names, all or none (AcquireSet) —
// semaphore permits (AcquirePermit) and read/write locks' grants (AcquireRead, AcquireWrite). Each
// grant is a *Lease with its fencing token(s) and a conservative deadline, renewed in the
// background until released; its Done channel is closed and Err set when it is lost, like etcd's
// concurrency.Session. Send the token with every write to the protected resource and have the
// resource refuse older tokens: package fenced does that for PostgreSQL over database/sql.
//
// Configuration: Options, or OptionsFromEnvironment for the CLI's FENCELOCK_ENDPOINT,
// FENCELOCK_API_KEY and FENCELOCK_CACERT. Errors: *Error, whose Code is the API's stable code or
// the client's own (transport, tls, lease_lost); match kinds with errors.Is and ErrLocked,
// ErrNotHeld, ErrUnavailable, …. Tokens are int64 (positive, below 2^63), decoded without loss.
//
// The package uses the standard library only. Everything in it is safe for concurrent use.
package fencelock

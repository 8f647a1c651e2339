// Package pgtest holds the live PostgreSQL tests of fencelock.dev/fencelock/fenced and of
// client-sdk/go/README.md's example (client-sdk/go/test.sh runs them). It has no code of its own.
package pgtest

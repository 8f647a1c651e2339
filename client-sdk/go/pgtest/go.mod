// The PostgreSQL tests of fencelock.dev/fencelock/fenced and of the README's example: a module of
// their own, so that the client library's module needs nothing beyond the standard library. lib/pq
// comes from Debian (golang-github-lib-pq-dev); nothing is downloaded.
module fencelock.dev/fencelock/pgtest

go 1.19

require (
	fencelock.dev/fencelock v0.0.0
	github.com/lib/pq v1.10.7
)

replace fencelock.dev/fencelock => ../

replace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq

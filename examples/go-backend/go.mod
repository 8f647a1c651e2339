// A web backend that guards a PostgreSQL write with a fencelock lease. lib/pq comes from Debian
// (golang-github-lib-pq-dev) and the client from this checkout: nothing is downloaded.
module fencelock.dev/examples/go-backend

go 1.19

require (
	fencelock.dev/fencelock v0.0.0
	github.com/lib/pq v1.10.7
)

replace fencelock.dev/fencelock => ../../client-sdk/go

replace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq

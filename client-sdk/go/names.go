package fencelock

import (
	"sort"
	"time"
)

// The service's bounds (docs/api.md).
const (
	// MaxSetNames is the most names one lock set may hold.
	MaxSetNames = 16
	// MaxPermits is the largest permit count of a semaphore.
	MaxPermits = 64
	// maxMilliseconds keeps ttl_ms and wait_ms far inside a JSON integer; the service's own
	// bounds (--max-ttl, --max-wait) are much lower and refuse the rest.
	maxMilliseconds = 1 << 31
)

// checkName refuses a name the service would refuse (docs/api.md, "Names").
func checkName(name string) error {
	if len(name) < 1 || len(name) > 200 || name == "." || name == ".." {
		return invalid("name %q: 1 to 200 characters from [A-Za-z0-9._:-], other than \".\" and \"..\"", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return invalid("name %q: 1 to 200 characters from [A-Za-z0-9._:-], other than \".\" and \"..\"", name)
		}
	}
	return nil
}

// checkSetNames returns the names sorted, as the service orders a set.
func checkSetNames(names []string) ([]string, error) {
	if len(names) < 1 || len(names) > MaxSetNames {
		return nil, invalid("a lock set has 1 to %d names, not %d", MaxSetNames, len(names))
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	for i, name := range sorted {
		if err := checkName(name); err != nil {
			return nil, err
		}
		if i > 0 && sorted[i-1] == name {
			return nil, invalid("a lock set's names must be distinct: %q is there twice", name)
		}
	}
	return sorted, nil
}

// checkRequestID refuses a request id the service would refuse: 1 to 64 printable ASCII
// characters without spaces.
func checkRequestID(id string) error {
	if len(id) < 1 || len(id) > 64 {
		return invalid("request id: 1 to 64 printable ASCII characters without spaces")
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return invalid("request id: 1 to 64 printable ASCII characters without spaces")
		}
	}
	return nil
}

func checkPermits(permits int) error {
	if permits < 1 || permits > MaxPermits {
		return invalid("permits must be 1 .. %d, not %d", MaxPermits, permits)
	}
	return nil
}

// milliseconds rounds d to whole milliseconds and checks it is at least minimum.
func milliseconds(what string, d time.Duration, minimum int64) (int64, error) {
	ms := (d + time.Millisecond/2).Milliseconds()
	if d < 0 || ms < minimum || ms > maxMilliseconds {
		return 0, invalid("%s out of range: %v", what, d)
	}
	return ms, nil
}

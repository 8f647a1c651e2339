package fencelock

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Options configure a Client. The zero value of each field means its default.
type Options struct {
	// Endpoints are fencelockd base URLs ("http://HOST:PORT", "https://HOST:PORT") in front of
	// the same lock nodes, tried in order: after a failure, the next one. 1 to 16.
	// Default: http://127.0.0.1:8080.
	Endpoints []string
	// APIKey is sent as "Authorization: Bearer <APIKey>" (a fencelockd with --auth-file); at most
	// 256 printable ASCII characters without spaces. Never logged, put in an error or printed.
	// Default: none.
	APIKey string
	// CAFile is a PEM file of the CAs that sign the servers' certificates (https:// endpoints).
	// Default: the system's trust store. Set together with an http:// endpoint it is refused:
	// the API key and the leases would travel unencrypted although certificates were asked for.
	CAFile string
	// TLSConfig, when set, is used for https:// endpoints as given (CAFile is then ignored):
	// load your CA and client certificate into it. Default: nil.
	TLSConfig *tls.Config
	// ConnectTimeout bounds connecting, TLS handshake included. Default 1 s; at most 60 s.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each attempt of a request; an acquire or a watch adds its wait.
	// Default 5 s; at most 10 min.
	RequestTimeout time.Duration
	// MaxRetries is how many more attempts a retry-safe call gets (extend, release, status,
	// watch, listing, tokens; an acquire whose answer was lost), each on the next endpoint.
	// Default 0 means 2; a negative value means none; at most 10.
	MaxRetries int
	// RetryBackoff is the pause before the first retry, doubled for each further one.
	// Default 50 ms; at most 10 s.
	RetryBackoff time.Duration
	// MaxIdleConnections is how many idle keep-alive connections are kept per endpoint.
	// Default 8.
	MaxIdleConnections int
}

// Format prints the options with the API key redacted, for every verb (%v, %+v, %#v, %s).
func (o Options) Format(f fmt.State, verb rune) {
	if o.APIKey != "" {
		o.APIKey = "[redacted]"
	}
	type plain Options // the same fields, without this method
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprint(f, strings.Replace(fmt.Sprintf("%#v", plain(o)), "plain{", "Options{", 1))
	case f.Flag('+'):
		fmt.Fprintf(f, "%+v", plain(o))
	default:
		fmt.Fprintf(f, "%v", plain(o))
	}
}

// OptionsFromEnvironment returns the options the CLI reads (docs/cli.md):
// FENCELOCK_ENDPOINT (a comma-separated list of endpoints, tried in order),
// FENCELOCK_API_KEY and FENCELOCK_CACERT (a CA file). Unset variables leave their fields empty,
// and so at their defaults.
func OptionsFromEnvironment() Options {
	var options Options
	if endpoints := os.Getenv("FENCELOCK_ENDPOINT"); endpoints != "" {
		for _, endpoint := range strings.Split(endpoints, ",") {
			if endpoint = strings.TrimSpace(endpoint); endpoint != "" {
				options.Endpoints = append(options.Endpoints, endpoint)
			}
		}
	}
	options.APIKey = os.Getenv("FENCELOCK_API_KEY")
	options.CAFile = os.Getenv("FENCELOCK_CACERT")
	return options
}

// endpoint is one parsed base URL.
type endpoint struct {
	base string // scheme://host:port, without a trailing slash
	tls  bool
}

// settled is Options with every default filled in and every bound checked.
type settled struct {
	endpoints          []endpoint
	authorization      *string // "Bearer <key>" or nil; a pointer, so fmt shows an address, never the key
	tlsConfig          *tls.Config
	connectTimeout     time.Duration
	requestTimeout     time.Duration
	maxRetries         int
	retryBackoff       time.Duration
	maxIdleConnections int
}

func settle(o Options) (settled, error) {
	var s settled
	urls := o.Endpoints
	if len(urls) == 0 {
		urls = []string{"http://127.0.0.1:8080"}
	}
	if len(urls) > 16 {
		return s, invalid("endpoints: 1 to 16 fencelockd URLs, not %d", len(urls))
	}
	anyPlain := false
	for _, raw := range urls {
		e, err := parseEndpoint(raw)
		if err != nil {
			return s, err
		}
		anyPlain = anyPlain || !e.tls
		s.endpoints = append(s.endpoints, e)
	}
	if o.APIKey != "" {
		if len(o.APIKey) > 256 || strings.IndexFunc(o.APIKey, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
			return s, invalid("the API key must be at most 256 printable ASCII characters without spaces")
		}
		authorization := "Bearer " + o.APIKey
		s.authorization = &authorization
	}
	if o.CAFile != "" && anyPlain {
		return s, invalid("a CA file was given but an endpoint is http://: use https:// for every endpoint")
	}
	s.tlsConfig = o.TLSConfig
	if s.tlsConfig == nil && o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return s, invalid("cannot read the CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return s, invalid("the CA file %s holds no PEM certificate", o.CAFile)
		}
		s.tlsConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var err error
	if s.connectTimeout, err = bounded("ConnectTimeout", o.ConnectTimeout, time.Second, time.Millisecond, time.Minute); err != nil {
		return s, err
	}
	if s.requestTimeout, err = bounded("RequestTimeout", o.RequestTimeout, 5*time.Second, time.Millisecond, 10*time.Minute); err != nil {
		return s, err
	}
	if s.retryBackoff, err = bounded("RetryBackoff", o.RetryBackoff, 50*time.Millisecond, 0, 10*time.Second); err != nil {
		return s, err
	}
	switch {
	case o.MaxRetries == 0:
		s.maxRetries = 2
	case o.MaxRetries < 0:
		s.maxRetries = 0
	case o.MaxRetries > 10:
		return s, invalid("MaxRetries must be at most 10")
	default:
		s.maxRetries = o.MaxRetries
	}
	s.maxIdleConnections = o.MaxIdleConnections
	if s.maxIdleConnections <= 0 {
		s.maxIdleConnections = 8
	}
	return s, nil
}

func bounded(what string, value, fallback, lo, hi time.Duration) (time.Duration, error) {
	if value == 0 {
		return fallback, nil
	}
	if value < lo || value > hi {
		return 0, invalid("%s must be %v .. %v, not %v", what, lo, hi, value)
	}
	return value, nil
}

func parseEndpoint(raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var parseError *url.Error
		if errors.As(err, &parseError) {
			err = parseError.Err // without the URL, which may hold a password
		}
		return endpoint{}, invalid("endpoint %q is not a URL: %v", redactedURL(raw), err)
	}
	if u.User != nil {
		return endpoint{}, invalid("endpoint %q: no user or password in the URL; use APIKey", u.Redacted())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, invalid("endpoint %q must start with http:// or https://", raw)
	}
	if u.Hostname() == "" {
		return endpoint{}, invalid("endpoint %q has no host", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return endpoint{}, invalid("endpoint %q: only scheme://host:port is allowed", raw)
	}
	return endpoint{base: fmt.Sprintf("%s://%s", u.Scheme, u.Host), tls: u.Scheme == "https"}, nil
}

// redactedURL is raw without what may be a password: everything from "://" to the last "@".
func redactedURL(raw string) string {
	scheme := strings.Index(raw, "://")
	at := strings.LastIndex(raw, "@")
	if scheme < 0 || at < scheme {
		return raw
	}
	return raw[:scheme+3] + "[redacted]" + raw[at:]
}

package knowledge

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// GuardOptions configure NewGuardedClient.
type GuardOptions struct {
	// AllowLoopback lets the client reach loopback addresses (tests only).
	AllowLoopback bool
	// Resolve maps a host name to "IP:PORT", as curl --resolve: the host is reached there, over
	// plain HTTP, whatever the address (tests only). A malformed entry makes every request to
	// that host fail.
	Resolve map[string]string
	// Timeout bounds a whole request, redirects and body included; 0 is 30 s.
	Timeout time.Duration
}

// DefaultGuardTimeout is a guarded client's request timeout when GuardOptions gives none.
const DefaultGuardTimeout = 30 * time.Second

// ErrDestination is wrapped by a guarded client's error for a connection it refused: an
// address that is not public unicast, or a redirect to a scheme other than http and https.
var ErrDestination = errDestination

// NewGuardedClient returns an HTTP client for URLs taken from a community config (Discourse
// forums, Mailman archives): the documentation fetcher's address guard, checked at connect
// time on every address a host resolves to and again on the address dialled, so only public
// unicast addresses are reached; redirects are followed, at most MaxRedirects, each reaching
// its host through the same guard. It never uses the environment's proxy. Bound what you read
// from its responses.
func NewGuardedClient(opts GuardOptions) *http.Client {
	g, _ := newGuard(opts.AllowLoopback, nil) // fails only on resolve entries, and none are given
	bad := map[string]error{}
	for host, to := range opts.Resolve {
		one, err := newGuard(opts.AllowLoopback, map[string]string{host: to})
		if err != nil {
			bad[host] = err
			continue
		}
		for h, a := range one.resolve {
			g.resolve[h] = a
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultGuardTimeout
	}
	t := &http.Transport{
		Proxy:                  nil, // the guard must see the real peer
		DialContext:            g.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 256 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: &guardedTransport{guard: g, bad: bad, base: t},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return fmt.Errorf("more than %d redirects", MaxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s: %w", req.URL.Scheme, errDestination)
			}
			return nil
		},
	}
}

// guardedTransport sends a request for a host of the resolve hook over plain HTTP (its test
// server has no certificate for the name) and refuses hosts whose hook entry was malformed.
type guardedTransport struct {
	guard *guard
	bad   map[string]error
	base  *http.Transport
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Hostname()
	for h, err := range t.bad {
		if strings.EqualFold(h, host) {
			closeBody(req)
			return nil, err
		}
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		closeBody(req)
		return nil, fmt.Errorf("scheme %q: %w", req.URL.Scheme, errDestination)
	}
	if _, ok := t.guard.resolved(host); ok && req.URL.Scheme == "https" {
		r := req.Clone(req.Context())
		r.URL.Scheme = "http"
		if r.Host == "" {
			r.Host = req.URL.Host
		}
		return t.base.RoundTrip(r)
	}
	return t.base.RoundTrip(req)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

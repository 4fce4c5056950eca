package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The HTTP side of the papers and docstrings sources: the API hosts (OpenAlex, Semantic
// Scholar, PubMed, the GitHub API and raw files) are trusted endpoints reached with a plain
// client, but nothing they send is: every body is read bounded, a 429 or 503 is waited out
// (bounded), a redirect off the host is not followed (a key would go along), and errors say
// which host answered what.

// The retry bounds (maxRetryWait, maxAttempts), the User-Agent, the error types and the clock
// are the ones github_http.go gives every source; what is added here is one GET that keeps an
// API key out of every error and log line (OpenAlex and PubMed take theirs in the query),
// checks a declared length before reading, and treats GitHub's rate limit at zero as a wait.

const (
	// apiTimeout bounds one request, body included, unless a call says otherwise (§6.2).
	apiTimeout = 30 * time.Second
	// defaultRetryWait is waited on a 429 or 503 without a usable Retry-After.
	defaultRetryWait = 10 * time.Second
	// maxRateLimitWait is the longest the GitHub API's rate-limit reset is waited for (§6.3).
	maxRateLimitWait = 15 * time.Minute
)

// apiClient sends the papers' and docstrings' GET requests.
type apiClient struct {
	client *http.Client
	log    *slog.Logger
	clk    clock
}

func newAPIClient(c *http.Client, clk clock, log *slog.Logger) *apiClient {
	if c == nil {
		c = &http.Client{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// A copy, so the caller's client keeps its own policy for its other uses.
	cc := *c
	cc.CheckRedirect = sameHostRedirects(c.CheckRedirect)
	return &apiClient{client: &cc, log: log, clk: clk}
}

// maxRedirects is how many redirects one request follows (net/http's own default).
const maxRedirects = 10

// sameHostRedirects is a CheckRedirect that follows redirects on the first request's host
// only (http to https allowed, not back), then asks next (if any). net/http copies a
// request's headers onto a redirect to any host (only Authorization and cookies are dropped),
// so x-api-key would go along, and a Location may carry the api_key query to wherever it
// points.
func sameHostRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if !sameAPIHost(from, req.URL) {
			return fmt.Errorf("redirected to another host (%s), not followed: a key would go along", req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
}

// sameAPIHost reports whether to is on from's host and port (the scheme's default when not
// given), or is the https version of an http URL on its default port.
func sameAPIHost(from, to *url.URL) bool {
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "http") {
			return "80"
		}
		return "443"
	}
	switch {
	case strings.EqualFold(from.Scheme, to.Scheme):
		return port(from) == port(to)
	case strings.EqualFold(from.Scheme, "http") && strings.EqualFold(to.Scheme, "https"):
		return from.Port() == "" && to.Port() == ""
	}
	return false
}

// apiCall is one GET.
type apiCall struct {
	url    string
	header http.Header
	// max is the largest body accepted, in bytes.
	max int64
	// timeout bounds each attempt; 0 means apiTimeout.
	timeout time.Duration
	// ok lists statuses besides 200 returned to the caller with their body; any other is an
	// *HTTPStatusError.
	ok []int
	// waiting, when set, is told when a wait for a rate limit starts and until when.
	waiting func(until time.Time)
	// noRetry sends the request once (the live search, which has 15 s in all).
	noRetry bool
}

// apiResponse is a status the caller accepts, with its body.
type apiResponse struct {
	status int
	header http.Header
	body   []byte
}

// get sends c, waiting out a 429 or 503 (Retry-After, else 10 s; ≤ 5 minutes, ≤ 3 attempts)
// and a GitHub rate limit at zero (until its reset and a second, ≤ 15 minutes; further off it
// is a *RateLimitError).
func (a *apiClient) get(ctx context.Context, c apiCall) (*apiResponse, error) {
	for attempt := 1; ; attempt++ {
		resp, wait, err := a.once(ctx, c)
		if err == nil {
			return resp, nil
		}
		if wait < 0 || c.noRetry || attempt >= maxAttempts {
			return nil, err
		}
		a.log.Warn("sync: the API asked to wait", "url", redactURL(c.url), "wait", wait.String(), "attempt", attempt)
		if c.waiting != nil {
			c.waiting(a.clk.now().Add(wait))
		}
		if err := a.clk.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// once sends c one time. A wait ≥ 0 with the error means the request may be sent again after it.
func (a *apiClient) once(ctx context.Context, c apiCall) (*apiResponse, time.Duration, error) {
	where := redactURL(c.url)
	timeout := c.timeout
	if timeout <= 0 {
		timeout = apiTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, -1, fmt.Errorf("GET %s: %v", where, err)
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", UserAgent)
	resp, err := a.client.Do(req)
	if err != nil {
		// The transport's error names the URL with its query, which may hold a key.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, -1, fmt.Errorf("GET %s: %w", where, err)
	}
	defer resp.Body.Close()
	if wait, limited := a.limited(resp); limited {
		body, _ := readCapped(resp.Body, 64<<10, where)
		if wait < 0 {
			if until := a.resetTime(resp); !until.IsZero() {
				return nil, -1, &RateLimitError{Until: until}
			}
		}
		return nil, wait, &HTTPStatusError{URL: where, Status: resp.StatusCode, Msg: errMessage(body)}
	}
	accepted := resp.StatusCode == http.StatusOK
	for _, s := range c.ok {
		accepted = accepted || resp.StatusCode == s
	}
	if !accepted {
		body, _ := readCapped(resp.Body, 64<<10, where)
		return nil, -1, &HTTPStatusError{URL: where, Status: resp.StatusCode, Msg: errMessage(body)}
	}
	if resp.ContentLength > c.max {
		return nil, -1, &TooLargeError{URL: where, Limit: c.max}
	}
	body, err := readCapped(resp.Body, c.max, where)
	if err != nil {
		if _, ok := errors.AsType[*TooLargeError](err); ok {
			return nil, -1, err
		}
		return nil, -1, fmt.Errorf("GET %s: reading the answer: %w", where, err)
	}
	return &apiResponse{status: resp.StatusCode, header: resp.Header, body: body}, 0, nil
}

// limited reports whether resp asks the client to wait, and for how long (negative: longer
// than a sync waits).
func (a *apiClient) limited(resp *http.Response) (time.Duration, bool) {
	now := a.clk.now()
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if d, ok := retryAfter(resp.Header, now); ok {
			if d > maxRetryWait {
				return -1, true
			}
			return d, true
		}
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("X-RateLimit-Remaining") == "0" {
			return a.untilReset(resp), true
		}
		return defaultRetryWait, true
	case http.StatusForbidden:
		// The GitHub API's rate limit: a 403 with no requests left, or a secondary limit's
		// Retry-After (§6.3).
		if d, ok := retryAfter(resp.Header, now); ok {
			if d > maxRateLimitWait {
				return -1, true
			}
			return d, true
		}
		if resp.Header.Get("X-RateLimit-Remaining") == "0" {
			return a.untilReset(resp), true
		}
	}
	return 0, false
}

// untilReset is the wait until X-RateLimit-Reset plus a second, or -1 when that is more than
// 15 minutes away or not given.
func (a *apiClient) untilReset(resp *http.Response) time.Duration {
	reset := a.resetTime(resp)
	if reset.IsZero() {
		return -1
	}
	d := reset.Add(time.Second).Sub(a.clk.now())
	if d > maxRateLimitWait {
		return -1
	}
	return max(d, 0)
}

// resetTime is when a rate limit ends: X-RateLimit-Reset, else Retry-After; zero if neither.
func (a *apiClient) resetTime(resp *http.Response) time.Time {
	if n, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil && n > 0 {
		return time.Unix(n, 0)
	}
	if d, ok := retryAfter(resp.Header, a.clk.now()); ok {
		return a.clk.now().Add(d)
	}
	return time.Time{}
}

// redactURL drops the query (where api_key goes) from a URL for errors and logs.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

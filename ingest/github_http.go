package ingest

// The HTTP side shared by the GitHub, Discourse and Mailman sources: one GET with the
// project's User-Agent, a body read under a cap (a page past it is an error, never a silent
// cut), and the waits a server asks for (Retry-After, a rate limit's reset) taken through the
// source's clock, so tests wait on a test clock.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// UserAgent names the project in every request a sync makes.
const UserAgent = "osc-assistant-sync/1 (+https://github.com/osc-assistant/assistant; knowledge sync)"

// Retry bounds of every source (knowledge.md §6.2 "We differ"): a 429 or 503 with
// Retry-After is waited for when the wait is at most maxRetryWait, and a request is made at
// most maxAttempts times.
const (
	maxRetryWait = 5 * time.Minute
	maxAttempts  = 3
	// requestTimeout bounds one request of a source given no client of its own (§6.2).
	requestTimeout = 30 * time.Second
)

// HTTPStatusError is an answer a source cannot use: its URL, status and, when the server
// said why, its message (GitHub's and Discourse's JSON "message"/"errors", cut short).
type HTTPStatusError struct {
	URL    string
	Status int
	Msg    string
}

func (e *HTTPStatusError) Error() string {
	s := fmt.Sprintf("GET %s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// TooLargeError is an answer whose body went past the source's cap while it was read.
type TooLargeError struct {
	URL   string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("GET %s: answer larger than %d bytes, not read further", e.URL, e.Limit)
}

// RateLimitError is a source stopped by a rate limit whose reset is too far away to wait for.
type RateLimitError struct{ Until time.Time }

func (e *RateLimitError) Error() string {
	return "rate limited until " + e.Until.UTC().Format(time.RFC3339)
}

// clock is a source's time: real by default, a test clock in tests.
type clock struct {
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func newClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) clock {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepContext
	}
	return clock{now: now, sleep: sleep}
}

// sleepContext waits d or until ctx ends.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// defaultClient is the client of a trusted API host when the constructor is given none.
func defaultClient() *http.Client { return &http.Client{Timeout: requestTimeout} }

// cappedBody reads at most limit bytes of r and fails past them.
type cappedBody struct {
	r     io.Reader
	left  int64
	url   string
	limit int64
}

func newCappedBody(r io.Reader, limit int64, url string) *cappedBody {
	return &cappedBody{r: io.LimitReader(r, limit+1), left: limit, url: url, limit: limit}
}

func (c *cappedBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, &TooLargeError{URL: c.url, Limit: c.limit}
	}
	return n, err
}

// readCapped reads a whole body under limit.
func readCapped(r io.Reader, limit int64, url string) ([]byte, error) {
	return io.ReadAll(newCappedBody(r, limit, url))
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date) as a wait from now; ok is
// false when there is none or it cannot be read.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// errMessage pulls a short reason out of an error answer's body: the "message" of a JSON
// object (GitHub) or its "errors" (Discourse), else nothing.
func errMessage(body []byte) string {
	var m struct {
		Message string            `json:"message"`
		Errors  []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return ""
	}
	msg := m.Message
	if msg == "" {
		// Discourse's errors are strings; GitHub's are objects, its message says enough.
		var errs []string
		for _, raw := range m.Errors {
			var s string
			if json.Unmarshal(raw, &s) == nil && s != "" {
				errs = append(errs, s)
			}
		}
		msg = strings.Join(errs, "; ")
	}
	return cutRunes(strings.TrimSpace(msg), 200)
}

// drain reads a little of a body before closing it, so the connection can be kept.
func drain(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// newGet builds a GET of url with the User-Agent and the given headers.
func newGet(ctx context.Context, url string, headers map[string]string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", UserAgent)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// getRetrying makes a GET and waits out a 429 or 503 with Retry-After (at most maxRetryWait,
// defaultWait when the header is absent and defaultWait > 0), at most maxAttempts times. The
// caller owns a returned response's body. onWait is told of each wait (it may be nil).
func getRetrying(ctx context.Context, client *http.Client, clk clock, url string, headers map[string]string, defaultWait time.Duration, onWait func(until time.Time)) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		req, err := newGet(ctx, url, headers)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return resp, nil
		}
		wait, ok := retryAfter(resp.Header, clk.now())
		if !ok && defaultWait > 0 && resp.StatusCode == http.StatusTooManyRequests {
			wait, ok = defaultWait, true
		}
		if !ok || wait > maxRetryWait || attempt >= maxAttempts {
			body, _ := readCapped(resp.Body, 64<<10, url)
			resp.Body.Close()
			e := &HTTPStatusError{URL: url, Status: resp.StatusCode, Msg: errMessage(body)}
			if ok && wait > maxRetryWait {
				e.Msg = strings.TrimPrefix(e.Msg+"; ", "; ") + "Retry-After " + wait.String() + " is past the 5 minutes a sync waits"
			}
			return nil, e
		}
		drain(resp)
		if onWait != nil {
			onWait(clk.now().Add(wait))
		}
		if err := clk.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// cutRunes returns s cut to at most n code points (the spec's caps count code points).
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

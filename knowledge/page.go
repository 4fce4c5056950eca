package knowledge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// fetch_current_page's limits (spec §4.3).
const (
	// PageTimeout bounds one page fetch, waiting for a slot, redirects and body included.
	PageTimeout = 10 * time.Second
	// MaxPageChars is where the page's text is cut, with PageTruncatedSuffix.
	MaxPageChars        = 30000
	PageTruncatedSuffix = "\n\n... [content truncated]"
	// maxPageFetches bounds the page fetches of all requests together, so that their
	// bodies (4 MiB each at most) are bounded too.
	maxPageFetches = 8
)

// PageError is a page fetch_current_page could not fetch; its text is the spec's error text
// (§4.3), e.g. "Error: URL returned non-HTML content: application/pdf".
type PageError struct{ Msg string }

func (e *PageError) Error() string { return e.Msg }

// Page is a fetched page: its URL as asked for and its text (Markdown, lines trimmed, blank
// lines dropped, cut at MaxPageChars).
type Page struct {
	URL, Content string
}

// Text is fetch_current_page's success text: "# Content from {url}\n\n{content}".
func (p Page) Text() string { return "# Content from " + p.URL + "\n\n" + p.Content }

type pageFetcher struct {
	guard  *guard
	client *http.Client
	slots  chan struct{}
}

func newPageFetcher(g *guard) *pageFetcher {
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    PageTimeout,
		MaxResponseHeaderBytes: 256 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	return &pageFetcher{guard: g, slots: make(chan struct{}, maxPageFetches), client: &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (p *pageFetcher) close() { p.client.CloseIdleConnections() }

// checkPageURL is fetch_current_page's check of a URL before it is requested: the scheme,
// the host, and every address the host resolves to. It returns the parsed URL or the error
// text.
func (p *pageFetcher) checkPageURL(ctx context.Context, raw string) (*url.URL, string) {
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return nil, fmt.Sprintf("Error: Invalid URL '%s'. URL must start with http:// or https://", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "Error: Invalid hostname"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "Error: Only HTTP/HTTPS protocols are allowed"
	}
	host := u.Hostname()
	if host == "" {
		return nil, "Error: Invalid hostname"
	}
	if _, ok := p.guard.resolved(host); ok {
		return u, ""
	}
	_, bad, class, err := p.guard.check(ctx, host)
	if err != nil {
		return nil, fmt.Sprintf("Error: DNS resolution failed for %s: %s", host, err.Error())
	}
	if class != "" {
		return nil, fmt.Sprintf("Error: Access to %s is not allowed: %s", class, bad)
	}
	return u, ""
}

// FetchPage fetches the page a reader is on, for fetch_current_page (spec §4.3): the address
// guard on the URL and on every redirect (at most 3), 10 s, text/html only, at most 4 MiB,
// converted to Markdown with lines trimmed and blank lines dropped, cut at 30,000
// characters. Failures are *PageError with the spec's texts.
func (l *Library) FetchPage(ctx context.Context, rawURL string) (Page, error) {
	p := l.pages
	ctx, cancel := context.WithTimeout(ctx, PageTimeout)
	defer cancel()
	timedOut := func() error { return &PageError{"Error: Request timed out fetching " + rawURL} }
	u, msg := p.checkPageURL(ctx, rawURL)
	if msg != "" {
		if ctx.Err() != nil {
			return Page{}, timedOut()
		}
		return Page{}, &PageError{msg}
	}
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	case <-ctx.Done():
		return Page{}, timedOut()
	}
	fail := func(err error) error {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return timedOut()
		}
		return &PageError{fmt.Sprintf("Error fetching %s: %s", rawURL, failureDetail(ctx, err))}
	}
	for hop := 0; ; hop++ {
		target := *u
		if _, ok := p.guard.resolved(u.Hostname()); ok {
			target.Scheme = "http"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
		if err != nil {
			return Page{}, fail(err)
		}
		req.Host = u.Host
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("Accept", "text/html")
		resp, err := p.client.Do(req)
		if err != nil {
			return Page{}, fail(err)
		}
		if isRedirect(resp.StatusCode) {
			loc := resp.Header.Get("Location")
			resp.Body.Close()
			if hop >= MaxRedirects {
				return Page{}, &PageError{fmt.Sprintf("Error: Too many redirects (exceeded %d)", MaxRedirects)}
			}
			next, err := u.Parse(loc) // a Location starting with / is resolved against the page's origin
			if err != nil || loc == "" {
				return Page{}, &PageError{"Error: Redirect to unsafe URL blocked: Invalid hostname"}
			}
			checked, msg := p.checkPageURL(ctx, next.String())
			if msg != "" {
				return Page{}, &PageError{"Error: Redirect to unsafe URL blocked: " + strings.TrimPrefix(msg, "Error: ")}
			}
			u = checked
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return Page{}, &PageError{fmt.Sprintf("Error fetching %s: HTTP %d", rawURL, resp.StatusCode)}
		}
		ct := resp.Header.Get("Content-Type")
		if !strings.Contains(strings.ToLower(ct), "text/html") {
			return Page{}, &PageError{"Error: URL returned non-HTML content: " + ct}
		}
		body, err := readBounded(resp.Body, resp.ContentLength)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return Page{}, &PageError{fmt.Sprintf("Error fetching %s: %s", rawURL, errTooLarge.Msg)}
			}
			return Page{}, fail(err)
		}
		content := trimLines(Clean(Convert(body, ct, "html", u.String()).Markdown))
		if utf8.RuneCountInString(content) > MaxPageChars {
			content = string([]rune(content)[:MaxPageChars]) + PageTruncatedSuffix
		}
		return Page{URL: rawURL, Content: content}, nil
	}
}

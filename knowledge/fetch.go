package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Fetch limits (spec §3.2 "Caps everywhere", "Off the request path").
const (
	// MaxDocumentBytes is the most bytes of one document's body (or source_path file).
	MaxDocumentBytes = 4 << 20
	// DocumentTimeout bounds one document fetch, redirects and body included.
	DocumentTimeout = 30 * time.Second
	// MaxRedirects is the most redirects one fetch follows, each checked again.
	MaxRedirects = 3
	// maxFetches and maxPerHost bound the background fetches of the whole process.
	maxFetches = 4
	maxPerHost = 2
	userAgent  = "osc-assistant-knowledge/1 (+https://github.com/osc-assistant/assistant; documentation fetcher)"
)

// FetchError is a document that could not be fetched or read; its text is the spec's
// (§3.3 step 5): "HTTP {status}: {reason}", "Request failed: {detail}", or
// "Document too large (over 4 MiB)".
type FetchError struct{ Msg string }

func (e *FetchError) Error() string { return e.Msg }

var errTooLarge = &FetchError{"Document too large (over 4 MiB)"}

// fetched is one answer: 200 with a body, or 304 (NotModified) for a conditional request.
type fetched struct {
	NotModified  bool
	Body         []byte
	ContentType  string
	ETag         string
	LastModified string
	FinalURL     string
}

// fetcher fetches documents through the guard, at most maxFetches at a time and maxPerHost to
// one host.
type fetcher struct {
	guard  *guard
	client *http.Client
	slots  chan struct{}
	// timeout bounds one fetch once it holds its slots (DocumentTimeout; tests shorten it).
	timeout time.Duration

	mu    sync.Mutex
	hosts map[string]chan struct{}
}

func newFetcher(g *guard) *fetcher {
	t := &http.Transport{
		Proxy:                  nil, // never the host's proxy settings: the guard must see the real peer
		DialContext:            g.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  DocumentTimeout,
		MaxResponseHeaderBytes: 256 << 10,
		MaxIdleConnsPerHost:    maxPerHost,
		IdleConnTimeout:        30 * time.Second,
	}
	return &fetcher{
		guard: g,
		client: &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // followed by hand, so each hop is checked
		}},
		slots:   make(chan struct{}, maxFetches),
		timeout: DocumentTimeout,
		hosts:   map[string]chan struct{}{},
	}
}

func (f *fetcher) close() { f.client.CloseIdleConnections() }

// acquire takes a process slot and one of host's, waiting as long as ctx allows.
func (f *fetcher) acquire(ctx context.Context, host string) (func(), error) {
	f.mu.Lock()
	h := f.hosts[host]
	if h == nil {
		h = make(chan struct{}, maxPerHost)
		f.hosts[host] = h
	}
	f.mu.Unlock()
	select {
	case h <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case f.slots <- struct{}{}:
	case <-ctx.Done():
		<-h
		return nil, ctx.Err()
	}
	return func() { <-f.slots; <-h }, nil
}

// target is the URL to request for u: a host given in the resolve hook is asked over plain
// HTTP (its test server has no certificate for the name).
func (f *fetcher) target(u *url.URL) *url.URL {
	t := *u
	if _, ok := f.guard.resolved(u.Hostname()); ok {
		t.Scheme = "http"
	}
	return &t
}

// fetch gets rawURL with a conditional request when etag or lastModified is set, following at
// most MaxRedirects redirects, each checked, and reading at most MaxDocumentBytes. It waits
// for its slots as long as ctx allows; the timeout starts once it holds them, so a document
// queued behind slow ones still gets its whole DocumentTimeout.
func (f *fetcher) fetch(ctx context.Context, rawURL, etag, lastModified string) (*fetched, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, &FetchError{"Request failed: destination not allowed"}
	}
	release, err := f.acquire(ctx, strings.ToLower(u.Hostname()))
	if err != nil {
		return nil, &FetchError{"Request failed: " + failureDetail(ctx, err)}
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.target(u).String(), nil)
		if err != nil {
			return nil, &FetchError{"Request failed: " + err.Error()}
		}
		req.Host = u.Host
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("Accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5")
		if hop == 0 {
			if etag != "" {
				req.Header.Set("If-None-Match", etag)
			}
			if lastModified != "" {
				req.Header.Set("If-Modified-Since", lastModified)
			}
		}
		resp, err := f.client.Do(req)
		if err != nil {
			return nil, &FetchError{"Request failed: " + failureDetail(ctx, err)}
		}
		if isRedirect(resp.StatusCode) {
			loc := resp.Header.Get("Location")
			resp.Body.Close()
			if hop >= MaxRedirects {
				return nil, &FetchError{fmt.Sprintf("Request failed: more than %d redirects", MaxRedirects)}
			}
			next, err := u.Parse(loc)
			if err != nil || loc == "" || (next.Scheme != "http" && next.Scheme != "https") || next.Hostname() == "" {
				return nil, &FetchError{"Request failed: destination not allowed"}
			}
			u = next
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotModified && hop == 0 && (etag != "" || lastModified != "") {
			return &fetched{NotModified: true, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), FinalURL: u.String()}, nil
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return nil, &FetchError{fmt.Sprintf("HTTP %d: %s", resp.StatusCode, reason(resp))}
		}
		body, err := readBounded(resp.Body, resp.ContentLength)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, errTooLarge
			}
			return nil, &FetchError{"Request failed: " + failureDetail(ctx, err)}
		}
		return &fetched{Body: body, ContentType: resp.Header.Get("Content-Type"), ETag: resp.Header.Get("ETag"),
			LastModified: resp.Header.Get("Last-Modified"), FinalURL: u.String()}, nil
	}
}

// reason is the status line's reason phrase, else the standard one.
func reason(resp *http.Response) string {
	if _, r, ok := strings.Cut(resp.Status, " "); ok && r != "" {
		return r
	}
	return http.StatusText(resp.StatusCode)
}

// readBounded reads a body of at most MaxDocumentBytes, refusing a larger declared length at
// once and never holding more than MaxDocumentBytes+1 bytes.
func readBounded(r io.Reader, declared int64) ([]byte, error) {
	if declared > MaxDocumentBytes {
		return nil, errTooLarge
	}
	size := 64 << 10
	if declared > 0 {
		size = int(declared) + 1
	}
	buf := make([]byte, 0, size)
	lr := io.LimitReader(r, MaxDocumentBytes+1)
	for {
		if len(buf) == cap(buf) { // grow, but never past the cap plus the one byte that proves it
			grown := make([]byte, len(buf), min(2*cap(buf), MaxDocumentBytes+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxDocumentBytes {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// failureDetail words a transport error: the guard's refusal, a timeout, or the cause.
func failureDetail(ctx context.Context, err error) string {
	if errors.Is(err, errDestination) {
		return errDestination.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func isRedirect(code int) bool {
	switch code {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// readSourcePath reads name inside the community folder through os.Root, so no name (.., an
// absolute path, a symbolic link) can reach outside it, bounded like a fetched body.
func readSourcePath(folder, name string) ([]byte, error) {
	if folder == "" {
		return nil, &FetchError{"Request failed: source_path needs the community folder"}
	}
	root, err := os.OpenRoot(folder)
	if err != nil {
		return nil, &FetchError{"Request failed: " + err.Error()}
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, &FetchError{"Request failed: " + pathError(err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &FetchError{"Request failed: " + pathError(err)}
	}
	if !st.Mode().IsRegular() {
		return nil, &FetchError{fmt.Sprintf("Request failed: source_path %q is not a regular file", name)}
	}
	body, err := readBounded(f, st.Size())
	if errors.Is(err, errTooLarge) {
		return nil, errTooLarge
	}
	if err != nil {
		return nil, &FetchError{"Request failed: " + pathError(err)}
	}
	return body, nil
}

// pathError drops the folder from an os error, so the text names only the configured name.
func pathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("source_path %q: %v", pe.Path, pe.Err)
	}
	return err.Error()
}

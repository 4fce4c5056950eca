package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// page is what the test site serves at one URL.
type page struct {
	body, contentType, etag string
}

// site is a real HTTP server on loopback playing the documentation sites; config URLs reach
// it through the Resolve hook.
type site struct {
	srv         *httptest.Server
	mu          sync.Mutex
	pages       map[string]page // by host + path
	handlers    map[string]http.HandlerFunc
	requests    atomic.Int64
	notModified atomic.Int64
	// foreign counts requests for a host the site does not play: what only a broken
	// guard lets through.
	foreign atomic.Int64
	hosts   []string
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{pages: map[string]page{}, handlers: map[string]http.HandlerFunc{},
		hosts: []string{"docs.example.org", "www.example.org"}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	for _, d := range testDocs {
		body, err := os.ReadFile(filepath.Join("testdata", "docs", d.file))
		if err != nil {
			t.Fatal(err)
		}
		s.set(d.url, page{string(body), d.contentType, fmt.Sprintf(`"%s-1"`, d.file)})
	}
	return s
}

func (s *site) key(rawURL string) string {
	u, _ := url.Parse(rawURL)
	return u.Host + u.Path
}

func (s *site) set(rawURL string, p page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[s.key(rawURL)] = p
}

func (s *site) handle(rawURL string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[s.key(rawURL)] = h
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if h, _, _ := strings.Cut(r.Host, ":"); !slices.Contains(s.hosts, h) {
		s.foreign.Add(1)
		http.Error(w, "no such site", http.StatusForbidden)
		return
	}
	k := r.Host + r.URL.Path
	s.mu.Lock()
	p, ok := s.pages[k]
	h := s.handlers[k]
	s.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if p.etag != "" {
		w.Header().Set("ETag", p.etag)
		if r.Header.Get("If-None-Match") == p.etag {
			s.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", p.contentType)
	w.Write([]byte(p.body))
}

// resolve is the Resolve hook sending every test host to the site.
func (s *site) resolve() map[string]string {
	m := map[string]string{}
	for _, h := range s.hosts {
		m[h] = s.srv.Listener.Addr().String()
	}
	return m
}

func eafDocs() []Doc {
	var docs []Doc
	for i, d := range testDocs {
		docs = append(docs, Doc{Title: d.title, URL: d.url, Type: d.typ, Category: "general", Preload: i == 0})
	}
	return docs
}

func newLibrary(t *testing.T, dir string, resolve map[string]string) *Library {
	t.Helper()
	l, err := New(Options{DataDir: dir, Resolve: resolve, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func ready(t *testing.T, l *Library, id string) *Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := l.Ready(ctx, id); err != nil {
		t.Fatal(err)
	}
	return l.Snapshot(id)
}

// TestFetchCacheIndex: documents are fetched, cached on disk, converted and indexed, and a
// second Library with the site down serves them from the cache at once.
func TestFetchCacheIndex(t *testing.T) {
	s := newSite(t)
	dir := t.TempDir()
	l := newLibrary(t, dir, s.resolve())
	if err := l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}}); err != nil {
		t.Fatal(err)
	}
	snap := ready(t, l, "eaf")
	for _, d := range snap.Docs {
		if !d.HasContent || d.LastError != "" || d.Sections == 0 || d.FetchedAt.IsZero() {
			t.Errorf("%s: content %v, error %q, sections %d, fetched %v", d.URL, d.HasContent, d.LastError, d.Sections, d.FetchedAt)
		}
		p := l.cachePath("eaf", d.URL)
		md, err := os.ReadFile(p + ".md")
		if err != nil || string(md) != d.Content {
			t.Errorf("%s: cached copy differs or is missing: %v", d.URL, err)
		}
		if _, err := os.Stat(p + ".json"); err != nil {
			t.Errorf("%s: %v", d.URL, err)
		}
	}
	if !strings.Contains(snap.Docs[0].Content, "## 1. Annotation strings") {
		t.Errorf("sphinx page not converted: %.200q", snap.Docs[0].Content)
	}
	secs, err := l.Search(t.Context(), "eaf", "temporal scope onset offset", 3)
	if err != nil || len(secs) == 0 || secs[0].URL() != "https://docs.example.org/spec/index.html#temporal-scope" {
		t.Fatalf("search: %v %+v", err, secs)
	}
	if _, err := os.Stat(filepath.Join(dir, "knowledge", "eaf.db-wal")); err == nil {
		t.Error("the published file has a -wal beside it")
	}
	gen := snap.Generation
	l.Close()

	s.srv.Close() // the site is down
	l2 := newLibrary(t, dir, s.resolve())
	if err := l2.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}}); err != nil {
		t.Fatal(err)
	}
	now := l2.Snapshot("eaf") // before any fetch ended: from the cache
	for i, d := range now.Docs {
		if !d.HasContent || d.Content != snap.Docs[i].Content {
			t.Errorf("%s not served from the cache at once", d.URL)
		}
	}
	after := ready(t, l2, "eaf")
	since := after.Docs[0].FailingSince
	if since.IsZero() || !since.Equal(after.Docs[0].LastErrorAt) {
		t.Errorf("failing since %v, last error at %v", since, after.Docs[0].LastErrorAt)
	}
	if err := l2.Refresh(t.Context(), "eaf"); err != nil {
		t.Fatal(err)
	}
	if d := l2.Snapshot("eaf").Docs[0]; !d.FailingSince.Equal(since) || !d.LastErrorAt.After(since) {
		t.Errorf("a second failure moved the start of the failures (%v to %v) or not the last one (%v)", since, d.FailingSince, d.LastErrorAt)
	}
	if after := l2.Snapshot("eaf"); after.FetchFailures != 2*uint64(len(testDocs)) {
		t.Errorf("%d failures counted with the site down, want %d", after.FetchFailures, 2*len(testDocs))
	}
	for _, d := range after.Docs {
		if !d.HasContent || !strings.HasPrefix(d.LastError, "Request failed: ") {
			t.Errorf("%s with the site down: content %v, error %q", d.URL, d.HasContent, d.LastError)
		}
	}
	if after.Generation == 0 || gen == 0 {
		t.Error("generation 0")
	}
	if secs, err := l2.Search(t.Context(), "eaf", "library schemas namespace prefix", 3); err != nil || len(secs) == 0 {
		t.Errorf("search with the site down: %v %v", err, secs)
	}
}

// TestConditionalRequests: a second round asks with If-None-Match, gets 304s, keeps the
// copies and the generation; a changed page changes the generation.
func TestConditionalRequests(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}})
	first := ready(t, l, "eaf")
	if n := s.notModified.Load(); n != 0 {
		t.Fatalf("%d 304s in the first round", n)
	}
	if err := l.Refresh(t.Context(), "eaf"); err != nil {
		t.Fatal(err)
	}
	if n := s.notModified.Load(); n != int64(len(testDocs)) {
		t.Errorf("%d 304s in the second round, want %d", n, len(testDocs))
	}
	second := l.Snapshot("eaf")
	if n := uint64(len(testDocs)); second.Fetches != 2*n || second.FetchFailures != 0 {
		t.Errorf("%d fetches, %d failures; want %d, 0", second.Fetches, second.FetchFailures, 2*n)
	}
	if second.Generation != first.Generation {
		t.Errorf("generation moved from %d to %d on 304s", first.Generation, second.Generation)
	}
	for i := range second.Docs {
		if second.Docs[i].Content != first.Docs[i].Content || !second.Docs[i].FetchedAt.After(first.Docs[i].FetchedAt) {
			t.Errorf("%s: copy not kept or fetch time not renewed", second.Docs[i].URL)
		}
	}
	s.set(testDocs[3].url, page{"# Python tools user guide\n\n## Zebra crossing\n\nStripes.\n", "text/plain", `"guide-2"`})
	if err := l.Refresh(t.Context(), "eaf"); err != nil {
		t.Fatal(err)
	}
	third := l.Snapshot("eaf")
	if third.Generation == second.Generation {
		t.Error("generation did not move when a page changed")
	}
	secs, err := l.Search(t.Context(), "eaf", "zebra", 5)
	if err != nil || len(secs) != 1 || secs[0].Anchor != "zebra-crossing" {
		t.Errorf("the changed page was not indexed again: %v %+v", err, secs)
	}
	if secs, _ := l.Search(t.Context(), "eaf", "remodeling operations factor_column", 5); len(secs) != 0 && secs[0].DocURL == testDocs[3].url {
		t.Errorf("old sections of the changed page still found: %+v", secs[0])
	}
}

// TestRefusals: redirects to private, link-local and loopback addresses, a 20 MB page, a
// source_path outside the community folder.
func TestRefusals(t *testing.T) {
	s := newSite(t)
	port := s.srv.Listener.Addr().(*net.TCPAddr).Port
	redirect := func(to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
	}
	s.handle("https://docs.example.org/to-private", redirect("http://10.0.0.1/admin"))
	s.handle("https://docs.example.org/to-metadata", redirect("http://169.254.169.254/latest/meta-data/"))
	s.handle("https://docs.example.org/to-localhost", redirect(fmt.Sprintf("http://localhost:%d/secret", port)))
	s.handle("https://docs.example.org/to-mapped", redirect(fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/secret", port)))
	s.handle("https://docs.example.org/loop", redirect("https://docs.example.org/loop"))
	var written atomic.Int64
	s.handle("https://docs.example.org/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := []byte(strings.Repeat("<p>lorem ipsum</p>\n", 1724)) // 32 KiB
		for written.Load() < 20<<20 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	s.handle("https://docs.example.org/secret", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the guard let a request reach %s", r.URL)
	})

	folder := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.md")
	os.WriteFile(outside, []byte("# Secret\n\nsecret text\n"), 0o644)
	os.WriteFile(filepath.Join(folder, "guide.md"), []byte("# Guide\n\n## Inside\n\nfine\n"), 0o644)
	os.Symlink(outside, filepath.Join(folder, "link.md"))

	docs := []Doc{
		{Title: "private", URL: "https://docs.example.org/to-private"},
		{Title: "metadata", URL: "https://docs.example.org/to-metadata"},
		{Title: "localhost", URL: "https://docs.example.org/to-localhost"},
		{Title: "mapped", URL: "https://docs.example.org/to-mapped"},
		{Title: "loop", URL: "https://docs.example.org/loop"},
		{Title: "huge", URL: "https://docs.example.org/huge"},
		{Title: "direct", URL: "http://127.0.0.1/x"},
		{Title: "dotdot", URL: "https://x.org/a", SourcePath: "../" + filepath.Base(filepath.Dir(outside)) + "/outside.md"},
		{Title: "absolute", URL: "https://x.org/b", SourcePath: outside},
		{Title: "symlink", URL: "https://x.org/c", SourcePath: "link.md"},
		{Title: "inside", URL: "https://x.org/d", SourcePath: "guide.md"},
	}
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "r", Name: "R", Folder: folder, Docs: docs}})
	snap := ready(t, l, "r")
	want := map[string]string{
		"private":   "Request failed: destination not allowed",
		"metadata":  "Request failed: destination not allowed",
		"localhost": "Request failed: destination not allowed",
		"mapped":    "Request failed: destination not allowed",
		"loop":      "Request failed: more than 3 redirects",
		"huge":      "Document too large (over 4 MiB)",
		"direct":    "Request failed: destination not allowed",
	}
	for _, d := range snap.Docs {
		if w, ok := want[d.Title]; ok {
			if d.LastError != w || d.HasContent {
				t.Errorf("%s: error %q (content %v), want %q", d.Title, d.LastError, d.HasContent, w)
			}
			continue
		}
		switch d.Title {
		case "inside":
			if !d.HasContent || d.Sections != 1 {
				t.Errorf("inside: %+v", d)
			}
		default:
			if d.HasContent || !strings.HasPrefix(d.LastError, "Request failed: source_path") {
				t.Errorf("%s: content %v, error %q", d.Title, d.HasContent, d.LastError)
			}
		}
	}
	if n := s.foreign.Load(); n != 0 {
		t.Errorf("%d requests reached an address the guard should have refused", n)
	}
	if n := written.Load(); n >= 20<<20 {
		t.Errorf("the server wrote the whole 20 MB page (%d bytes): the body was not cut off", n)
	}
}

// TestRetrieve: by url and by source_url, an unlisted URL refused, content capped.
func TestRetrieve(t *testing.T) {
	s := newSite(t)
	big := "# Big\n\n" + strings.Repeat("é", 60000) + "\n"
	s.set("https://docs.example.org/raw/big.md", page{big, "text/plain", ""})
	docs := append(eafDocs(), Doc{Title: "Big", URL: "https://docs.example.org/big", SourceURL: "https://docs.example.org/raw/big.md", Type: "markdown"})
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: docs}})
	ready(t, l, "eaf")

	r, err := l.Retrieve(t.Context(), "eaf", "https://www.example.org/governance")
	text := RetrieveText("EAF", "https://www.example.org/governance", r, err)
	if !strings.HasPrefix(text, "# Governance and contributing\n\nSource: https://www.example.org/governance\n\n# Governance and contributing\n") {
		t.Errorf("retrieve text %.120q", text)
	}
	for _, u := range []string{"https://docs.example.org/big", "https://docs.example.org/raw/big.md"} {
		r, err := l.Retrieve(t.Context(), "eaf", u)
		if err != nil || r.URL != "https://docs.example.org/big" || !strings.HasSuffix(r.Content, TruncatedSuffix) ||
			len([]rune(r.Content)) != MaxContentChars+len(TruncatedSuffix) {
			t.Errorf("retrieve %s: %v, url %q, %d characters", u, err, r.URL, len([]rune(r.Content)))
		}
	}
	_, err = l.Retrieve(t.Context(), "eaf", "https://evil.example.com/")
	if got := RetrieveText("EAF", "https://evil.example.com/", Retrieved{}, err); got != "Document not found in EAF registry: https://evil.example.com/" {
		t.Errorf("unlisted: %q", got)
	}
	if _, err := l.Retrieve(t.Context(), "eaf", "https://docs.example.org/spec/index.html#x"); !errors.Is(err, ErrNotListed) {
		t.Errorf("a URL that is not exactly an entry's was found: %v", err)
	}
}

// TestRetrieveFailure: a document whose fetch failed and that has no copy gives the spec's
// error text.
func TestRetrieveFailure(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "x", Name: "X", Docs: []Doc{{Title: "Gone", URL: "https://docs.example.org/gone"}}}})
	ready(t, l, "x")
	r, err := l.Retrieve(t.Context(), "x", "https://docs.example.org/gone")
	if got := RetrieveText("X", "https://docs.example.org/gone", r, err); got != "Error retrieving https://docs.example.org/gone: HTTP 404: Not Found" {
		t.Errorf("got %q", got)
	}
}

// TestReadersPickUpPublish: a search sees a file published after the reader opened the
// previous one, without reopening the Library.
func TestReadersPickUpPublish(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}})
	ready(t, l, "eaf")
	if secs, _ := l.Search(t.Context(), "eaf", "xylophone", 5); len(secs) != 0 {
		t.Fatal("found before it was written")
	}
	err := l.Store().Write(t.Context(), "eaf", func(ctx context.Context, tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, `INSERT INTO doc_sections (doc_url, doc_title, anchor, heading_path, title, text, position, content_sha256, synced_at)
			VALUES ('https://docs.example.org/spec/index.html', 'EAF specification', 'x', 'EAF specification > X', 'X', 'a xylophone', 99, 'sha', 'now')`)
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if secs, err := l.Search(t.Context(), "eaf", "xylophone", 5); err != nil || len(secs) != 1 {
		t.Errorf("the new file was not picked up: %v %v", err, secs)
	}
}

// TestSearchDuringPublish runs searches while the file is published again and again (run
// with -race): every search succeeds and sees a complete file.
func TestSearchDuringPublish(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}})
	ready(t, l, "eaf")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var searches atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				secs, err := l.Search(context.Background(), "eaf", "definitions Def", 5)
				if err != nil || len(secs) == 0 {
					t.Errorf("search during publish: %v, %d results", err, len(secs))
					return
				}
				searches.Add(1)
			}
		})
	}
	for i := range 5 {
		err := l.Store().Write(t.Context(), "eaf", func(ctx context.Context, tx *sql.Tx) (bool, error) {
			_, err := tx.ExecContext(ctx, `INSERT INTO doc_sections (doc_url, doc_title, anchor, heading_path, title, text, position, content_sha256, synced_at)
				VALUES ('u', 't', '', 'p', 't', 'filler text', ?, 'sha', 'now')`, 1000+i)
			return true, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if searches.Load() == 0 {
		t.Error("no search ran")
	}
}

func TestFetchPage(t *testing.T) {
	s := newSite(t)
	port := s.srv.Listener.Addr().(*net.TCPAddr).Port
	s.set("https://www.example.org/report.pdf", page{"%PDF-1.7", "application/pdf", ""})
	long := "<!DOCTYPE html><html><body><main>" + strings.Repeat("<p>"+strings.Repeat("x", 99)+"</p>\n", 400) + "</main></body></html>"
	s.set("https://www.example.org/long.html", page{long, "text/html", ""})
	s.handle("https://www.example.org/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/faq.html", http.StatusMovedPermanently)
	})
	s.handle("https://www.example.org/to-private", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.168.1.1/", http.StatusFound)
	})
	s.handle("https://www.example.org/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	l := newLibrary(t, t.TempDir(), s.resolve())
	tests := []struct{ url, want string }{
		{"https://www.example.org/report.pdf", "Error: URL returned non-HTML content: application/pdf"},
		{"ftp://x.org/", "Error: Invalid URL 'ftp://x.org/'. URL must start with http:// or https://"},
		{"http:///path", "Error: Invalid hostname"},
		{"http://10.1.2.3/", "Error: Access to private IP ranges is not allowed: 10.1.2.3"},
		{fmt.Sprintf("http://127.0.0.1:%d/", port), "Error: Access to loopback addresses is not allowed: 127.0.0.1"},
		{"http://169.254.169.254/latest", "Error: Access to link-local addresses is not allowed: 169.254.169.254"},
		{"http://[::ffff:10.0.0.1]/", "Error: Access to private IP ranges is not allowed: 10.0.0.1"},
		{"http://240.0.0.1/", "Error: Access to reserved IP ranges is not allowed: 240.0.0.1"},
		{"https://www.example.org/to-private", "Error: Redirect to unsafe URL blocked: Access to private IP ranges is not allowed: 192.168.1.1"},
		{"https://www.example.org/loop", "Error: Too many redirects (exceeded 3)"},
		{"https://www.example.org/missing", "Error fetching https://www.example.org/missing: HTTP 404"},
	}
	for _, tc := range tests {
		_, err := l.FetchPage(t.Context(), tc.url)
		if err == nil || err.Error() != tc.want {
			t.Errorf("FetchPage(%s) = %v, want %q", tc.url, err, tc.want)
		}
	}
	p, err := l.FetchPage(t.Context(), "https://www.example.org/hop")
	if err != nil || !strings.HasPrefix(p.Text(), "# Content from https://www.example.org/hop\n\n# Frequently asked questions\nShort answers") {
		t.Errorf("FetchPage through a redirect: %v %.100q", err, p.Text())
	}
	if strings.Contains(p.Content, "\n\n") || strings.Contains(p.Content, "EAF home") {
		t.Errorf("blank lines or navigation kept: %.300q", p.Content)
	}
	p, err = l.FetchPage(t.Context(), "https://www.example.org/long.html")
	if err != nil || !strings.HasSuffix(p.Content, PageTruncatedSuffix) || len([]rune(p.Content)) != MaxPageChars+len(PageTruncatedSuffix) {
		t.Errorf("long page: %v, %d characters", err, len([]rune(p.Content)))
	}
}

// TestGenerationPerCommunity: a change in one community's documents moves its generation
// only.
func TestGenerationPerCommunity(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	other := []Doc{{Title: "Governance", URL: testDocs[4].url, Type: "markdown"}}
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}, {ID: "other", Name: "Other", Docs: other}})
	ready(t, l, "eaf")
	before := ready(t, l, "other").Generation
	s.set(testDocs[3].url, page{"# Changed\n\ntext\n", "text/plain", `"guide-2"`})
	if err := l.Refresh(t.Context(), "eaf"); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(t.Context(), "other"); err != nil {
		t.Fatal(err)
	}
	if after := l.Snapshot("other").Generation; after != before {
		t.Errorf("the other community's generation moved from %d to %d", before, after)
	}
}

// TestRemovedDocuments: the rows of a document no longer configured are deleted; a
// community no longer given is no longer served.
func TestRemovedDocuments(t *testing.T) {
	s := newSite(t)
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: eafDocs()}})
	ready(t, l, "eaf")
	if secs, _ := l.Search(t.Context(), "eaf", "steering committee elections", 3); len(secs) == 0 || secs[0].DocURL != testDocs[4].url {
		t.Fatalf("governance not found before: %+v", secs)
	}
	docs := eafDocs()
	docs = append(docs[:4], docs[5:]...) // without governance
	l.Apply([]Community{{ID: "eaf", Name: "EAF", Docs: docs}})
	ready(t, l, "eaf")
	secs, err := l.Search(t.Context(), "eaf", "steering committee elections", 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		if s.DocURL == testDocs[4].url {
			t.Errorf("a removed document is still found: %+v", s)
		}
	}
	if len(l.Snapshot("eaf").Docs) != 5 {
		t.Errorf("%d documents after the reload", len(l.Snapshot("eaf").Docs))
	}
	l.Apply(nil)
	if l.Snapshot("eaf") != nil {
		t.Error("a community no longer given is still served")
	}
	if err := l.Apply([]Community{{ID: "../x"}}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("an invalid id: %v", err)
	}
}

// TestRetrieveOnDemand: an on-demand document the background round has not fetched yet (the
// round is held on a preload) is fetched when it is asked for.
func TestRetrieveOnDemand(t *testing.T) {
	s := newSite(t)
	release := make(chan struct{})
	s.handle("https://docs.example.org/slow-preload", func(w http.ResponseWriter, r *http.Request) {
		<-release
		io.WriteString(w, "# Slow\n\ntext\n")
	})
	var asked atomic.Int64
	s.handle("https://docs.example.org/on-demand", func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		io.WriteString(w, "# On demand\n\nfetched when asked\n")
	})
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "od", Name: "OD", Docs: []Doc{
		{Title: "Slow", URL: "https://docs.example.org/slow-preload", Preload: true, Type: "markdown"},
		{Title: "On demand", URL: "https://docs.example.org/on-demand", Type: "markdown"},
	}}})
	defer close(release)
	if d, _ := l.Snapshot("od").Doc("https://docs.example.org/on-demand"); d.HasContent || d.LastError != "" {
		t.Fatalf("fetched before it was asked for: %+v", d)
	}
	r, err := l.Retrieve(t.Context(), "od", "https://docs.example.org/on-demand")
	if err != nil || !strings.Contains(r.Content, "fetched when asked") || asked.Load() != 1 {
		t.Errorf("on-demand retrieve: %v %q, %d requests", err, r.Content, asked.Load())
	}
}

// TestReloadDoesNotWaitForRequests: a reload stops a community whose worker waits for a
// document that a request is fetching, without waiting for that fetch.
func TestReloadDoesNotWaitForRequests(t *testing.T) {
	s := newSite(t)
	releaseP, releaseD := make(chan struct{}), make(chan struct{})
	entered := make(chan struct{}, 1)
	s.handle("https://docs.example.org/p", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-releaseP:
		case <-r.Context().Done():
		}
		io.WriteString(w, "# P\n\np\n")
	})
	s.handle("https://docs.example.org/d", func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-releaseD
		io.WriteString(w, "# D\n\nd\n")
	})
	docs := []Doc{{Title: "P", URL: "https://docs.example.org/p", Preload: true, Type: "markdown"},
		{Title: "D", URL: "https://docs.example.org/d", Type: "markdown"}}
	l := newLibrary(t, t.TempDir(), s.resolve())
	l.Apply([]Community{{ID: "w", Name: "W", Docs: docs}})
	retrieved := make(chan error, 1)
	go func() {
		_, err := l.Retrieve(context.Background(), "w", "https://docs.example.org/d")
		retrieved <- err
	}()
	<-entered       // the request holds D and waits in the handler
	close(releaseP) // the worker goes on to D and waits for it
	for !waitingForLock() {
		time.Sleep(time.Millisecond) // polling the goroutines' stacks: nothing to receive from
	}
	l.Apply([]Community{{ID: "w", Name: "W renamed", Docs: docs}}) // would hang on the old worker
	if got := l.Snapshot("w"); got == nil || got.Name != "W renamed" {
		t.Errorf("after the reload: %+v", got)
	}
	close(releaseD)
	if err := <-retrieved; err != nil {
		t.Errorf("the request's retrieve: %v", err)
	}
}

// waitingForLock reports whether some goroutine waits in a document's fetch lock.
func waitingForLock() bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "(*community).lock(") && (strings.Contains(g, "[select") || strings.Contains(g, "[chan send")) {
			return true
		}
	}
	return false
}

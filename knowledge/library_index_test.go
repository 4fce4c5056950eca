package knowledge

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// held is a remote document whose server holds every request until the test ends.
func held(t *testing.T, s *site, u, body string) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.handle(u, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, body)
	})
}

// searchable polls until query finds a section of the community (the index is written in
// the background, with nothing to wait on), failing the test if it never does.
func searchable(t *testing.T, l *Library, id, query, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if secs, err := l.Search(t.Context(), id, query, 5); err == nil && len(secs) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not searchable while the remote document is held", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIndexBeforeSlowFetches: a source_path guide, and the cached copy of a remote
// document, are searchable while another remote document's server holds its request: copies
// are indexed as they are read, not once the slowest fetch of the round has ended.
func TestIndexBeforeSlowFetches(t *testing.T) {
	s := newSite(t)
	held(t, s, "https://docs.example.org/slow.md", "# Slow\n\nslow words\n")
	folder := t.TempDir()
	os.WriteFile(filepath.Join(folder, "guide.md"), []byte("# Guide\n\n## Local\n\nlocal zebra words\n"), 0o644)
	dir := t.TempDir()
	l := newLibrary(t, dir, s.resolve())
	docs := []Doc{
		{Title: "Slow", URL: "https://docs.example.org/slow.md", Type: "markdown", Preload: true},
		{Title: "Guide", URL: "https://x.org/guide", SourcePath: "guide.md"},
		{Title: "Governance", URL: testDocs[4].url, Type: "markdown"},
	}
	if err := l.Apply([]Community{{ID: "c", Name: "C", Folder: folder, Docs: docs}}); err != nil {
		t.Fatal(err)
	}
	searchable(t, l, "c", "zebra", "the source_path guide")
	// The on-demand governance page waits behind the held preload; fetch it through
	// retrieve, so that its copy is cached for the second library.
	if _, err := l.Retrieve(t.Context(), "c", testDocs[4].url); err != nil {
		t.Fatal(err)
	}
	searchable(t, l, "c", "steering committee", "a copy fetched on demand")
	l.Close()

	// Start again without the database, and without the guide (whose read would start an
	// index of its own): the cached copy is indexed from the cache.
	for _, suffix := range []string{".db", ".work.db", ".work.db-wal", ".work.db-shm"} {
		os.Remove(filepath.Join(dir, "knowledge", "c"+suffix))
	}
	l2 := newLibrary(t, dir, s.resolve())
	if err := l2.Apply([]Community{{ID: "c", Name: "C", Docs: []Doc{docs[0], docs[2]}}}); err != nil {
		t.Fatal(err)
	}
	searchable(t, l2, "c", "steering committee", "the cached copy")
	if d, _ := l2.Snapshot("c").Doc("https://docs.example.org/slow.md"); d.HasContent || d.LastError != "" {
		t.Errorf("the held document ended: %+v", d)
	}
}

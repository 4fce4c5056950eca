package knowledge

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// inGoroutine reports whether some goroutine's stack holds every one of frames.
func inGoroutine(frames ...string) bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}

// waitFor polls the goroutines' stacks until one holds every one of frames: what is waited
// for blocks on a lock, which has nothing to receive from.
func waitFor(t *testing.T, what string, frames ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !inGoroutine(frames...) {
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReloadKeepsServing: while a reload changes a community whose old worker cannot stop
// yet (it waits in an index for the store's writer lock), the community is served
// throughout, with its new config: Snapshot is never nil for it and Retrieve finds its
// documents.
func TestReloadKeepsServing(t *testing.T) {
	folder := t.TempDir()
	guide := filepath.Join(folder, "guide.md")
	os.WriteFile(guide, []byte("# Guide\n\n## Start\n\nfirst words\n"), 0o644)
	docs := []Doc{{Title: "Guide", URL: "https://x.org/guide", SourcePath: "guide.md"}}
	l := newLibrary(t, t.TempDir(), nil)
	if err := l.Apply([]Community{{ID: "w", Name: "W", Folder: folder, Docs: docs}}); err != nil {
		t.Fatal(err)
	}
	ready(t, l, "w")

	var nils, reads atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if l.Snapshot("w") == nil {
				nils.Add(1)
			}
			reads.Add(1)
		}
	})

	// Hold the store's writer lock, then make the worker index a changed guide: it waits
	// for the lock, and cannot be stopped until it has it.
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- l.Store().Write(context.Background(), "w", func(context.Context, *sql.Tx) (bool, error) {
			close(holding)
			<-release
			return false, nil
		})
	}()
	<-holding
	os.WriteFile(guide, []byte("# Guide\n\n## Start\n\nsecond words\n"), 0o644)
	refreshed := make(chan error, 1)
	go func() { refreshed <- l.Refresh(context.Background(), "w") }()
	waitFor(t, "indexing while the writer lock is held", "(*Library).index(", "(*Store).withWriter(")

	applied := make(chan error, 1)
	go func() {
		applied <- l.Apply([]Community{{ID: "w", Name: "W renamed", Folder: folder, Docs: docs}})
	}()
	waitFor(t, "stopping the old worker", "(*community).stop(", "(*Library).Apply(")
	// The reload waits for the old worker; the community is served meanwhile.
	if snap := l.Snapshot("w"); snap == nil || snap.Name != "W renamed" {
		t.Errorf("during the reload: snapshot %+v, want the new config's", snap)
	}
	if r, err := l.Retrieve(t.Context(), "w", "https://x.org/guide"); err != nil || !strings.Contains(r.Content, "second words") {
		t.Errorf("retrieve during the reload: %v %q", err, r.Content)
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	<-refreshed // answered when the old worker stopped
	ready(t, l, "w")
	close(stop)
	readers.Wait()
	if n := nils.Load(); n != 0 {
		t.Errorf("%d of %d snapshots read during the reload were nil", n, reads.Load())
	}
	if secs, err := l.Search(t.Context(), "w", "second", 5); err != nil || len(secs) != 1 {
		t.Errorf("the new worker did not index the changed guide: %v %+v", err, secs)
	}
}

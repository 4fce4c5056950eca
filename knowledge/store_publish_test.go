package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestCheckPublishedRefuses: a publish's temporary file that went missing is not made again
// as an empty database, and a file without doc_sections (an empty one) is never published.
func TestCheckPublishedRefuses(t *testing.T) {
	dir := t.TempDir()
	noSections := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", dsn(noSections, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE github_items (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	tests := []struct{ name, path string }{
		{"missing", filepath.Join(dir, "gone.db.tmp-1")},
		{"no doc_sections", noSections},
		{"empty", empty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkPublished(t.Context(), tc.path); err == nil {
				t.Error("checked as publishable")
			}
		})
	}
	if _, err := os.Stat(tests[0].path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing file was created: %v", err)
	}
}

// TestPublishKeepsOthersTemps: a writer removes the temporary files of crashed publishes
// (old ones), not one another process may be writing now.
func TestPublishKeepsOthersTemps(t *testing.T) {
	dir := t.TempDir()
	a, _ := OpenStore(dir, nil)
	b, _ := OpenStore(dir, nil)
	defer a.Close()
	defer b.Close()
	write := func(st *Store, pos int) error {
		return st.Write(t.Context(), "w", func(ctx context.Context, tx *sql.Tx) (bool, error) {
			return true, insertSections(ctx, tx, []Section{{DocURL: "u", DocTitle: "D", HeadingPath: "D", Title: "D", Text: "text", Position: pos}}, "x", "now")
		})
	}
	if err := write(a, 0); err != nil {
		t.Fatal(err)
	}
	fresh := a.Path("w") + ".tmp-fresh" // another process's publish under way
	stale := a.Path("w") + ".tmp-stale" // a crash's
	os.WriteFile(fresh, []byte("being written"), 0o644)
	os.WriteFile(stale, []byte("half a publish"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	if err := write(b, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the other process's temporary file was removed: %v", err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the crashed publish's temporary file is still there")
	}
}

// writerEnv names the data directory a re-executed test binary writes to (see
// TestPublishAcrossProcesses); writerNameEnv its rows' doc_url.
const (
	writerEnv     = "KNOWLEDGE_TEST_WRITER_DIR"
	writerNameEnv = "KNOWLEDGE_TEST_WRITER_NAME"
	writerRounds  = 10
)

// TestPublishAcrossProcesses: two processes (this test binary again) write and publish one
// community's database in one data directory at once while this one reads it: every
// published file the reader opens holds doc_sections and at least the rows of the one before
// (publishes never interleave), and at the end it holds every row of both, with no
// temporary file left.
func TestPublishAcrossProcesses(t *testing.T) {
	if dir := os.Getenv(writerEnv); dir != "" {
		writeRounds(t, dir, os.Getenv(writerNameEnv))
		return
	}
	if testing.Short() {
		t.Skip("starts two processes")
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPublishAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), writerEnv+"="+dir, writerNameEnv+"="+name)
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("writer %s: %v\n%s", name, err, out)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	st, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func() (int, error) {
		n := 0
		err := st.read(t.Context(), "shared", func(ctx context.Context, db *sql.DB) error {
			if ok, err := hasTable(ctx, db, "doc_sections"); err != nil || !ok {
				return fmt.Errorf("a published file without doc_sections (%v)", err)
			}
			return db.QueryRowContext(ctx, `SELECT count(*) FROM doc_sections`).Scan(&n)
		})
		return n, err
	}
	last, reads := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		n, err := count()
		if errors.Is(err, ErrNotInitialized) {
			continue // before the first publish
		}
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		if n < last {
			t.Fatalf("read %d: %d rows after %d: an older copy was published over a newer one", reads, n, last)
		}
		last = n
		reads++
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, err := count(); err != nil || n != 2*writerRounds {
		t.Errorf("at the end: %d rows (%v), want %d", n, err, 2*writerRounds)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "knowledge", "shared.db.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	t.Logf("%d reads while the writers ran", reads)
}

// writeRounds is a writer process of TestPublishAcrossProcesses: writerRounds writes, each
// published.
func writeRounds(t *testing.T, dir, name string) {
	st, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range writerRounds {
		err := st.Write(t.Context(), "shared", func(ctx context.Context, tx *sql.Tx) (bool, error) {
			sec := Section{DocURL: name, DocTitle: "D", HeadingPath: "D", Title: "D", Text: "text " + strconv.Itoa(i), Position: i}
			return true, insertSections(ctx, tx, []Section{sec}, "x", "now")
		})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
}

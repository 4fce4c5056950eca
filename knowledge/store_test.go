package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReferenceFile: a database with only the reference's tables (and an older
// citation_counts) opens for reading as "not initialised" for docs, and the first write keeps
// its rows, adds ours and the newer columns, and renames the odd citation_counts.
func TestReferenceFile(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ref, err := sql.Open("sqlite", dsn(st.Path("ref"), ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE github_items (id INTEGER PRIMARY KEY AUTOINCREMENT, repo TEXT NOT NULL, item_type TEXT NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL, first_message TEXT, status TEXT NOT NULL, url TEXT NOT NULL, created_at TEXT NOT NULL, synced_at TEXT NOT NULL, UNIQUE(repo, item_type, number))`,
		`INSERT INTO github_items (repo, item_type, number, title, status, url, created_at, synced_at) VALUES ('o/r', 'issue', 1, 'old', 'open', 'u', 'c', 's')`,
		`CREATE TABLE docstrings (id INTEGER PRIMARY KEY AUTOINCREMENT, repo TEXT NOT NULL, file_path TEXT NOT NULL, language TEXT NOT NULL, symbol_name TEXT NOT NULL, symbol_type TEXT NOT NULL, docstring TEXT NOT NULL, line_number INTEGER, synced_at TEXT NOT NULL, UNIQUE(repo, file_path, symbol_name))`,
		`CREATE TABLE citation_counts (id INTEGER PRIMARY KEY, doi TEXT, count INTEGER)`,
	} {
		if _, err := ref.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	ref.Close()
	err = st.read(t.Context(), "ref", func(ctx context.Context, db *sql.DB) error {
		_, err := searchSections(ctx, db, "anything", 5)
		return err
	})
	if !errors.Is(err, ErrNotInitialized) {
		t.Errorf("search of a reference file: %v, want ErrNotInitialized", err)
	}
	if err := st.Write(t.Context(), "ref", func(context.Context, *sql.Tx) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	err = st.read(t.Context(), "ref", func(ctx context.Context, db *sql.DB) error {
		var title string
		if err := db.QueryRowContext(ctx, `SELECT title FROM github_items`).Scan(&title); err != nil || title != "old" {
			t.Errorf("reference row: %q %v", title, err)
		}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM github_items_fts WHERE github_items_fts MATCH 'old'`).Scan(new(int)); err != nil {
			t.Errorf("fts of a reference table: %v", err)
		}
		for _, q := range []string{`SELECT branch FROM docstrings`, `SELECT cites_doi FROM papers`} {
			if err := db.QueryRowContext(ctx, q+` LIMIT 0`).Err(); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
		for _, table := range []string{"citation_counts_reference", "citation_counts", "doc_sections_fts", "sync_metadata"} {
			if ok, err := hasTable(ctx, db, table); !ok || err != nil {
				t.Errorf("table %s missing (%v)", table, err)
			}
		}
		var mode string
		db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
		if mode != "delete" {
			t.Errorf("published journal mode %q", mode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "knowledge", "ref.db.tmp-*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
	if _, ok := st.Info("ref"); !ok {
		t.Error("no info for a published file")
	}
	if _, ok := st.Info("../etc"); ok {
		t.Error("info for an invalid id")
	}
	if err := st.Write(t.Context(), "../x", nil); !errors.Is(err, ErrInvalidID) {
		t.Errorf("write with a bad id: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err == nil {
		t.Error("a file was written outside the store")
	}
}

// TestPhraseFirst: a section holding the whole phrase of the query ranks above one that bm25
// alone would put first (its heading holds every term, weighted 5).
func TestPhraseFirst(t *testing.T) {
	st, err := OpenStore(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secs := []Section{
		{DocURL: "u", DocTitle: "D", Anchor: "b", HeadingPath: "D > Sidecar validation", Title: "Sidecar validation", Text: "validate sidecar files; each sidecar validates", Position: 0},
		{DocURL: "u", DocTitle: "D", Anchor: "a", HeadingPath: "D > Other", Title: "Other", Text: "Long text about many things. You can validate a sidecar with the tool. " + strings.Repeat("filler words here. ", 40), Position: 1},
	}
	err = st.Write(t.Context(), "p", func(ctx context.Context, tx *sql.Tx) (bool, error) {
		return true, insertSections(ctx, tx, secs, "x", "now")
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &Library{store: st, log: slog.New(slog.DiscardHandler)}
	got, err := l.Search(t.Context(), "p", "validate a sidecar", 5)
	if err != nil || len(got) != 2 || got[0].Anchor != "a" {
		t.Errorf("got %v %+v, want the phrase's section first", err, got)
	}
	got, _ = l.Search(t.Context(), "p", "sidecar validation", 5)
	if len(got) != 2 || got[0].Anchor != "b" {
		t.Errorf("without the phrase in the text, the heading match should rank first: %+v", got)
	}
}

// TestWorkCopyRecovers: a working copy that is not a database (a crash, a bad disk) is made
// again from the published file, and a publish's leftover temporary file is removed.
func TestWorkCopyRecovers(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	insert := func(pos int) error {
		return st.Write(t.Context(), "w", func(ctx context.Context, tx *sql.Tx) (bool, error) {
			return true, insertSections(ctx, tx, []Section{{DocURL: "u", DocTitle: "D", HeadingPath: "D", Title: "D", Text: "kept text", Position: pos}}, "x", "now")
		})
	}
	if err := insert(0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(st.workPath("w"), []byte("this is not a database, not even close to one........."), 0o644)
	os.Remove(st.workPath("w") + "-wal")
	leftover := st.Path("w") + ".tmp-abc"
	os.WriteFile(leftover, []byte("half a publish"), 0o644)
	old := time.Now().Add(-time.Hour) // a crash's, not a publish under way
	os.Chtimes(leftover, old, old)
	if err := insert(1); err != nil {
		t.Fatalf("write over a broken working copy: %v", err)
	}
	l := &Library{store: st, log: slog.New(slog.DiscardHandler)}
	if secs, err := l.Search(t.Context(), "w", "kept", 5); err != nil || len(secs) != 2 {
		t.Errorf("after the recovery: %v, %d rows, want both", err, len(secs))
	}
	if _, err := os.Stat(leftover); err == nil {
		t.Error("the leftover temporary file is still there")
	}
}

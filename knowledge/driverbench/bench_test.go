package driverbench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	ncruces "github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	_ "modernc.org/sqlite"
)

func init() { ncruces.AutoExtension(fts5.Register) }

// drivers names each driver's database/sql name.
var drivers = []struct{ name, driver string }{
	{"modernc", "sqlite"},
	{"ncruces", "sqlite3"},
}

const schema = `
CREATE TABLE doc_sections (
  id INTEGER PRIMARY KEY AUTOINCREMENT, doc_url TEXT NOT NULL, doc_title TEXT NOT NULL,
  anchor TEXT NOT NULL, heading_path TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
  position INTEGER NOT NULL, content_sha256 TEXT NOT NULL, synced_at TEXT NOT NULL,
  UNIQUE(doc_url, position));
CREATE VIRTUAL TABLE doc_sections_fts USING fts5(heading_path, text, content='doc_sections',
  content_rowid='id', tokenize='porter unicode61');
CREATE TRIGGER doc_sections_ai AFTER INSERT ON doc_sections BEGIN
  INSERT INTO doc_sections_fts(rowid, heading_path, text) VALUES (new.id, new.heading_path, new.text); END;
CREATE TRIGGER doc_sections_ad AFTER DELETE ON doc_sections BEGIN
  INSERT INTO doc_sections_fts(doc_sections_fts, rowid, heading_path, text) VALUES ('delete', old.id, old.heading_path, old.text); END;
`

// words is a fixed vocabulary; sections are drawn from it with a Zipf-like skew so that some
// terms are common and some rare, as in real documentation.
var words = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	var ws []string
	for i := 0; i < 3000; i++ {
		n := 3 + r.IntN(8)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		ws = append(ws, string(b))
	}
	return ws
}()

func section(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		k := int(float64(len(words)) * r.Float64() * r.Float64())
		sb.WriteString(words[k])
		sb.WriteByte(' ')
	}
	return sb.String()
}

func index(b *testing.B, drv, path string, n int) {
	db, err := sql.Open(drv, "file:"+path+"?_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		b.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO doc_sections (doc_url, doc_title, anchor, heading_path, title, text, position, content_sha256, synced_at) VALUES (?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < n; i++ {
		doc := fmt.Sprintf("https://docs.example.org/doc%d", i/50)
		title := section(r, 4)
		if _, err := st.Exec(doc, "Doc", fmt.Sprintf("s%d", i), "Doc > "+title, title, section(r, 150), i%50, "x", "2026-01-01T00:00:00.000000+00:00"); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	out := path + ".pub"
	if _, err := db.Exec(`VACUUM INTO ?`, out); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIndex inserts 10,000 sections (about 1,000 characters each) through the FTS
// triggers in one transaction and publishes the file with VACUUM INTO.
func BenchmarkIndex(b *testing.B) {
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				index(b, d.driver, filepath.Join(b.TempDir(), fmt.Sprintf("k%d.db", i)), 10000)
			}
		})
	}
}

// BenchmarkOpenReadOnly opens a published 10,000-section file read-only and runs one query,
// as a reader does after a publish.
func BenchmarkOpenReadOnly(b *testing.B) {
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "k.db")
			index(b, d.driver, path, 10000)
			for b.Loop() {
				db, err := sql.Open(d.driver, "file:"+path+".pub?mode=ro")
				if err != nil {
					b.Fatal(err)
				}
				var n int
				if err := db.QueryRow(`SELECT count(*) FROM doc_sections`).Scan(&n); err != nil || n != 10000 {
					b.Fatal(n, err)
				}
				db.Close()
			}
		})
	}
}

// BenchmarkSearch runs the store's query shape (an OR of quoted prefix terms, bm25 with
// heading_path weighted 5 and text 1, 5 rows) over 10,000 sections. The baseline is the same
// query reduced to a rowid lookup, the least a search can cost through the driver.
func BenchmarkSearch(b *testing.B) {
	for _, d := range drivers {
		path := filepath.Join(b.TempDir(), "k.db")
		index(b, d.driver, path, 10000)
		db, err := sql.Open(d.driver, "file:"+path+".pub?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		r := rand.New(rand.NewPCG(5, 6))
		b.Run(d.name+"/baseline_rowid", func(b *testing.B) {
			for b.Loop() {
				var t string
				if err := db.QueryRowContext(context.Background(), `SELECT title FROM doc_sections WHERE id = ?`, 1+r.IntN(10000)).Scan(&t); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/bm25", func(b *testing.B) {
			for b.Loop() {
				q := fmt.Sprintf(`"%s"* OR "%s"* OR "%s"*`, words[r.IntN(300)], words[r.IntN(3000)], words[r.IntN(3000)])
				rows, err := db.Query(`SELECT s.heading_path, s.text FROM doc_sections_fts f JOIN doc_sections s ON s.id = f.rowid
					WHERE doc_sections_fts MATCH ? ORDER BY bm25(doc_sections_fts, 5.0, 1.0) LIMIT 5`, q)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
					var h, t string
					if err := rows.Scan(&h, &t); err != nil {
						b.Fatal(err)
					}
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				rows.Close()
			}
		})
	}
}

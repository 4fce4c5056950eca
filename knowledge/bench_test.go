package knowledge

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// benchWords is a vocabulary for generated documentation: a few hundred common words and a
// long tail, drawn with a skew so some words are frequent, as in real documents.
var benchWords = func() []string {
	base := strings.Fields(`the a of to and in is for with that on as are by this be it from or can an at
		dataset event events tag tags schema version file files column columns value values unit units
		validate validation validator error errors annotation annotations sidecar definition definitions
		python command line install library group groups onset offset duration string strings search
		query remodel operation release policy license cite paper format json table row rows name names`)
	r := rand.New(rand.NewPCG(7, 8))
	for len(base) < 5000 {
		b := make([]byte, 4+r.IntN(7))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		base = append(base, string(b))
	}
	return base
}()

func benchText(r *rand.Rand, words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		w := benchWords[int(float64(len(benchWords))*r.Float64()*r.Float64()*r.Float64())]
		b.WriteString(w)
		if i%17 == 16 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// benchPage is a Sphinx-like page with sections sections of about 900 characters each.
func benchPage(r *rand.Rand, sections int) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><title>t</title><script>var x = 1;</script></head><body><nav><a href="/">home</a></nav><article class="bd-article" role="main">`)
	b.WriteString("<h1>Generated page</h1>")
	for i := 0; i < sections; i++ {
		fmt.Fprintf(&b, `<section id="s%d"><h2>%s<a class="headerlink" href="#s%d">#</a></h2><p>%s</p><p>%s <code>value/%d</code></p><pre>code line %d</pre></section>`,
			i, benchText(r, 4), i, benchText(r, 80), benchText(r, 60), i, i)
	}
	b.WriteString("</article><footer>f</footer></body></html>")
	return b.String()
}

// BenchmarkFetchIndex is the time to fetch, convert, clean, section, index and publish a
// community's documentation from a local server: 16 pages of about 100 KB (b.SetBytes is
// their total, so MB/s is per MB of documentation). The baseline fetches the same pages
// through the same guarded client and does nothing else.
func BenchmarkFetchIndex(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	pages := map[string]string{}
	var docs []Doc
	total := 0
	for i := range 16 {
		p := benchPage(r, 80)
		path := fmt.Sprintf("/docs/page%d.html", i)
		pages[path] = p
		total += len(p)
		docs = append(docs, Doc{Title: fmt.Sprintf("Page %d", i), URL: "https://docs.example.org" + path, Type: "sphinx"})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, pages[r.URL.Path])
	}))
	defer srv.Close()
	resolve := map[string]string{"docs.example.org": srv.Listener.Addr().String()}

	b.Run("baseline_fetch_only", func(b *testing.B) {
		g, _ := newGuard(false, resolve)
		f := newFetcher(g)
		defer f.close()
		b.SetBytes(int64(total))
		for b.Loop() {
			for _, d := range docs {
				if _, err := f.fetch(context.Background(), d.URL, "", ""); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("fetch_convert_index_publish", func(b *testing.B) {
		b.SetBytes(int64(total))
		for b.Loop() {
			l, err := New(Options{DataDir: b.TempDir(), Resolve: resolve})
			if err != nil {
				b.Fatal(err)
			}
			l.Apply([]Community{{ID: "bench", Name: "Bench", Docs: docs}})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := l.Ready(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
			cancel()
			if s := l.Snapshot("bench"); s.Docs[0].Sections == 0 {
				b.Fatal("nothing indexed")
			}
			l.Close()
		}
	})
}

// BenchmarkSearch is search latency over 10,000 sections (about 1,000 characters each, in
// 200 documents). The baseline is a primary-key lookup through the same reader, the least a
// query costs there.
func BenchmarkSearch(b *testing.B) {
	st, err := OpenStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(2, 2))
	err = st.Write(context.Background(), "bench", func(ctx context.Context, tx *sql.Tx) (bool, error) {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO doc_sections (doc_url, doc_title, anchor, heading_path, title, text, position, content_sha256, synced_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'x', 'now')`)
		if err != nil {
			return false, err
		}
		for i := range 10000 {
			title := benchText(r, 4)
			if _, err := stmt.ExecContext(ctx, fmt.Sprintf("https://docs.example.org/d%d", i/50), "Doc", fmt.Sprintf("s%d", i),
				"Doc > "+title, title, benchText(r, 150), i%50); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	queries := []string{"How do I validate a sidecar?", "What is the default unit of duration?", "install the python library",
		"onset offset definitions", "Where do I report an error in the schema?", "search query for events with tags"}
	b.Run("baseline_pk_lookup", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			err := st.read(context.Background(), "bench", func(ctx context.Context, db *sql.DB) error {
				var t string
				return db.QueryRowContext(ctx, `SELECT title FROM doc_sections WHERE id = ?`, 1+i%10000).Scan(&t)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	l := &Library{store: st, log: discardLogger()}
	b.Run("search_limit5", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			secs, err := l.Search(context.Background(), "bench", queries[i%len(queries)], 5)
			if err != nil || len(secs) == 0 {
				b.Fatal(err, len(secs))
			}
		}
	})
}

// BenchmarkPrompt is building a community's two prompt sections from three preloaded
// 50,000-character documents and ten on demand; the baseline joins the same contents.
func BenchmarkPrompt(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	snap := &Snapshot{}
	for i := range 13 {
		d := DocState{Doc: Doc{Title: fmt.Sprintf("Doc %d", i), URL: fmt.Sprintf("https://x.org/%d", i), Preload: i < 3, Description: "a document"}}
		if i < 3 {
			d.Content, d.HasContent = benchText(r, 7000)[:50000], true
		}
		snap.Docs = append(snap.Docs, d)
	}
	b.Run("baseline_join", func(b *testing.B) {
		for b.Loop() {
			_ = strings.Join([]string{snap.Docs[0].Content, snap.Docs[1].Content, snap.Docs[2].Content}, "\n\n---\n\n")
		}
	})
	b.Run("prompt", func(b *testing.B) {
		for b.Loop() {
			if p := snap.Prompt(0); p.Preloaded == "" {
				b.Fatal("empty")
			}
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

package knowledge

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchItems are n GitHub items of a few repos: titles of about 8 words and first messages of
// about 120, from benchWords (a skewed vocabulary, as in real text).
func benchItems(n int) []GitHubItem {
	r := rand.New(rand.NewPCG(5, 5))
	items := make([]GitHubItem, n)
	start := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range items {
		typ, status := "issue", "open"
		if i%3 == 0 {
			typ = "pr"
		}
		if i%4 != 0 {
			status = "closed"
		}
		repo := fmt.Sprintf("org/repo%d", i%10)
		items[i] = GitHubItem{Repo: repo, Type: typ, Number: i/10 + 1, Title: benchText(r, 8), Body: benchText(r, 120), Status: status,
			URL: fmt.Sprintf("https://github.com/%s/issues/%d", repo, i/10+1), CreatedAt: start.Add(time.Duration(i) * 47 * time.Minute).Format(time.RFC3339)}
	}
	return items
}

// benchDocstrings are the generated package's symbols repeated in repos until there are n.
func benchDocstrings(n int) []Docstring {
	pkg := pyDocstrings()
	out := make([]Docstring, 0, n)
	for i := 0; len(out) < n; i++ {
		d := pkg[i%len(pkg)]
		d.Repo = fmt.Sprintf("example/neurosig%d", i/len(pkg))
		out = append(out, d)
	}
	return out
}

// benchUpdate writes rows through Update in transactions of batch rows.
func benchUpdate[T any](b *testing.B, st *Store, id string, rows []T, batch int, write func(tx *Tx, rows []T) error) {
	for i := 0; i < len(rows); i += batch {
		chunk := rows[i:min(i+batch, len(rows))]
		if err := st.Update(context.Background(), id, func(_ context.Context, tx *Tx) error { return write(tx, chunk) }); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Publish(context.Background(), id); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkToolSearch100k is the latency of the tools' searches over 100,000 GitHub items
// and 100,000 docstrings; the baselines are primary-key lookups through the same reader, the
// least a query costs there.
func BenchmarkToolSearch100k(b *testing.B) {
	st, err := OpenStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const n = 100000
	items := benchItems(n)
	benchUpdate(b, st, "bench", items, 1000, func(tx *Tx, rows []GitHubItem) error { _, err := tx.UpsertGitHubItems(rows); return err })
	benchUpdate(b, st, "bench", benchDocstrings(n), 1000, func(tx *Tx, rows []Docstring) error { _, err := tx.UpsertDocstrings(rows); return err })
	ctx := context.Background()
	pk := func(table, col string) func(b *testing.B) {
		return func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				err := st.read(ctx, "bench", func(ctx context.Context, db *sql.DB) error {
					var t string
					return db.QueryRowContext(ctx, `SELECT `+col+` FROM `+table+` WHERE id = ?`, 1+i%n).Scan(&t)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// Two kinds of query: the words of an item's title (mostly rarer words, as a user
	// describing an issue), and only the vocabulary's most common words, each in about a
	// quarter of the items (three of them match 70% of the rows: the worst case, as bm25
	// scores every row that matches).
	var titleQueries []string
	for i := range 6 {
		titleQueries = append(titleQueries, items[(i*7919)%n].Title)
	}
	issueQueries := []string{"validation error in the sidecar", "schema version release", "How do I install the python library?",
		"onset duration column", "search query for tags", "annotation definitions fail"}
	codeQueries := []string{"How do I get rid of 60 Hz power line noise?", "cut continuous data into trials around the triggers",
		"pick_types", "cluster-based permutation test between two conditions", "read sleep recordings stored as EDF", "plot"}
	both := DiscussionOptions{IncludeIssues: true, IncludePRs: true}
	b.Run("baseline_pk_github_items", pk("github_items", "title"))
	b.Run("search_discussions_title_words", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if items, err := st.SearchDiscussions(ctx, "bench", titleQueries[i%len(titleQueries)], both); err != nil || len(items) == 0 {
				b.Fatal(err, len(items))
			}
		}
	})
	b.Run("search_discussions_common_words", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if items, err := st.SearchDiscussions(ctx, "bench", issueQueries[i%len(issueQueries)], both); err != nil || len(items) == 0 {
				b.Fatal(err, len(items))
			}
		}
	})
	b.Run("search_discussions_number", func(b *testing.B) {
		for b.Loop() {
			if items, err := st.SearchDiscussions(ctx, "bench", "#500", both); err != nil || len(items) == 0 {
				b.Fatal(err, len(items))
			}
		}
	})
	b.Run("list_recent_repo_open", func(b *testing.B) {
		for b.Loop() {
			if items, err := st.ListRecent(ctx, "bench", RecentOptions{Repo: "org/repo4", Status: "open"}); err != nil || len(items) == 0 {
				b.Fatal(err, len(items))
			}
		}
	})
	b.Run("baseline_pk_docstrings", pk("docstrings", "symbol_name"))
	b.Run("search_code_docs", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if ds, err := st.SearchCodeDocs(ctx, "bench", codeQueries[i%len(codeQueries)], 5); err != nil || len(ds) == 0 {
				b.Fatal(err, len(ds))
			}
		}
	})
	b.Run("full_docstring", func(b *testing.B) {
		for b.Loop() {
			if ds, err := st.FullDocstring(ctx, "bench", "notch_filter"); err != nil || len(ds) == 0 {
				b.Fatal(err, len(ds))
			}
		}
	})
}

// BenchmarkUpsertGitHubItems is the writer's throughput: pages of 100 items, one Update each,
// into a working copy of 10,000 items (the FTS triggers keep the index); the baseline inserts
// the same rows with one prepared INSERT per row into a table without FTS or unique key, in
// the same kind of transaction. items/s is per item written.
func BenchmarkUpsertGitHubItems(b *testing.B) {
	items := benchItems(10000)
	b.Run("baseline_plain_insert", func(b *testing.B) {
		st, _ := OpenStore(b.TempDir(), nil)
		defer st.Close()
		if err := st.Write(context.Background(), "w", func(ctx context.Context, tx *sql.Tx) (bool, error) {
			_, err := tx.ExecContext(ctx, `CREATE TABLE plain (repo, item_type, number, title, first_message, status, url, created_at, synced_at)`)
			return true, err
		}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for i := 0; i < len(items); i += 100 {
				err := st.withWriter(context.Background(), "w", func(db *sql.DB) error {
					tx, err := db.Begin()
					if err != nil {
						return err
					}
					stmt, _ := tx.Prepare(`INSERT INTO plain VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
					for _, it := range items[i : i+100] {
						if _, err := stmt.Exec(it.Repo, it.Type, it.Number, it.Title, it.Body, it.Status, it.URL, it.CreatedAt, "now"); err != nil {
							tx.Rollback()
							return err
						}
					}
					stmt.Close()
					return tx.Commit()
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "items/s")
	})
	b.Run("update_upsert", func(b *testing.B) {
		st, _ := OpenStore(b.TempDir(), nil)
		defer st.Close()
		for b.Loop() {
			for i := 0; i < len(items); i += 100 {
				if err := st.Update(context.Background(), "w", func(_ context.Context, tx *Tx) error {
					_, err := tx.UpsertGitHubItems(items[i : i+100])
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "items/s")
	})
}

package knowledge

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// referenceCodeDocs is the reference's search_{id}_code_docs, for comparison: the whole query
// as one FTS5 phrase (quotes doubled), 3 × limit rows by bm25(docstrings_fts, 10.0, 1.0), the
// ones whose symbol equals the query (ignoring case) moved first, cut at limit.
func referenceCodeDocs(ctx context.Context, st *Store, id, query string, limit int) ([]Docstring, error) {
	var out []Docstring
	err := st.read(ctx, id, func(ctx context.Context, db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT `+docCols+` FROM docstrings_fts JOIN docstrings t ON t.id = docstrings_fts.rowid
			WHERE docstrings_fts MATCH ? ORDER BY bm25(docstrings_fts, 10.0, 1.0) LIMIT ?`, `"`+strings.ReplaceAll(query, `"`, `""`)+`"`, 3*limit)
		if err != nil {
			return err
		}
		hits, err := scanAll(rows, scanDoc)
		if err != nil {
			return err
		}
		var exact, rest []Docstring
		for _, d := range hits {
			if strings.EqualFold(d.Symbol, strings.TrimSpace(query)) {
				exact = append(exact, d)
			} else {
				rest = append(rest, d)
			}
		}
		out = append(exact, rest...)
		if len(out) > limit {
			out = out[:limit]
		}
		return nil
	})
	return out, err
}

// codeDocsStore publishes the generated package as community "pkg".
func codeDocsStore(t testing.TB) (*Store, int) {
	st := testStore(t)
	ds := pyDocstrings()
	update(t, st, "pkg", func(tx *Tx) error { _, err := tx.UpsertDocstrings(ds); return err })
	if err := st.Publish(context.Background(), "pkg"); err != nil {
		t.Fatal(err)
	}
	return st, len(ds)
}

// codeDocsRecall is recall@5 of search over codeDocsQuestions, with the questions missed.
func codeDocsRecall(t testing.TB, search func(q string) ([]Docstring, error)) (float64, []string) {
	hits := 0
	var missed []string
	for _, qa := range codeDocsQuestions {
		ds, err := search(qa.q)
		if err != nil {
			missed = append(missed, fmt.Sprintf("%q: %v", qa.q, err))
			continue
		}
		found := false
		var got []string
		for _, d := range ds {
			got = append(got, d.Symbol)
			if d.Symbol == qa.symbol && strings.HasSuffix(d.FilePath, "/_"+snake(qa.symbol)+".py") {
				found = true
			}
		}
		if found {
			hits++
		} else {
			missed = append(missed, fmt.Sprintf("%q → %s, got %v", qa.q, qa.symbol, got))
		}
	}
	return float64(hits) / float64(len(codeDocsQuestions)), missed
}

// TestCodeDocsRecall: on a generated package of over 2,000 symbols, recall@5 of
// search_{id}_code_docs for 50 natural-language questions is at least 0.8 and at least twice
// that of the reference's exact-phrase matching on the same database.
func TestCodeDocsRecall(t *testing.T) {
	st, n := codeDocsStore(t)
	if n < 2000 || len(codeDocsQuestions) < 40 {
		t.Fatalf("%d symbols and %d questions, want at least 2,000 and 40", n, len(codeDocsQuestions))
	}
	ours, missed := codeDocsRecall(t, func(q string) ([]Docstring, error) { return st.SearchCodeDocs(t.Context(), "pkg", q, 5) })
	ref, _ := codeDocsRecall(t, func(q string) ([]Docstring, error) { return referenceCodeDocs(t.Context(), st, "pkg", q, 5) })
	t.Logf("%d symbols, %d questions: recall@5 %.2f (exact phrase: %.2f)", n, len(codeDocsQuestions), ours, ref)
	for _, m := range missed {
		t.Logf("missed %s", m)
	}
	if ours < 0.8 || ours < 2*ref {
		t.Errorf("recall@5 %.2f, want ≥ 0.8 and ≥ 2 × the exact phrase's %.2f", ours, ref)
	}
}

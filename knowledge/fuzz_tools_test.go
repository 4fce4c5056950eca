package knowledge

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzNumberQuery: the number lookup's parser takes any input; a number it finds is one the
// query spells in ASCII digits, non-negative and within int32, and "only" implies a number.
func FuzzNumberQuery(f *testing.F) {
	for _, s := range []string{"#500", "PR 2022", "issue #12", "pull7", "BUG # 3 crash", "feature", "2147483648", "#", "\u0130ssue 5",
		"pr\t#\t9", "issue 12abc", "٣", "", "   ", "pr 0000000000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		n, only, ok := NumberQuery(q)
		if only && !ok {
			t.Fatalf("%q: only without a number", q)
		}
		if !ok {
			if n != 0 {
				t.Fatalf("%q: no number but n = %d", q, n)
			}
			return
		}
		if n < 0 || int64(n) > 1<<31-1 {
			t.Fatalf("%q: number %d out of range", q, n)
		}
		digits := strings.TrimLeft(strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, q), "0")
		if s := strconv.Itoa(n); n != 0 && !strings.Contains(digits, s) {
			t.Fatalf("%q: number %d is not among its digits %q", q, n, digits)
		}
	})
}

// FuzzToolSearches runs every tool's search with any query and category against a real
// published SQLite file: none may fail (no FTS syntax error, no other error).
func FuzzToolSearches(f *testing.F) {
	for _, s := range []string{"", "How do I validate?", `"`, `a" OR "b`, "NEAR(a b)", "col:x", "*", "a AND NOT b", "#500 crash",
		"PR 2022", "^start", "x -y +z", "(((", "'; DROP TABLE github_items; --", "ＦＵＬＬ", "naïve café", "日本語", "\x00\xff", "pop_loadset",
		"title:schema", "{x y}", "a*b*", strings.Repeat("term ", 40)} {
		f.Add(s, "")
		f.Add(s, s)
	}
	st := fixture(f)
	f.Fuzz(func(t *testing.T, q, category string) {
		ctx := t.Context()
		check := func(tool string, err error) {
			if err != nil {
				m, p, _ := MatchQuery(q)
				t.Fatalf("%s %q (category %q; match %q, phrase %q): %v", tool, q, category, m, p, err)
			}
		}
		_, err := st.SearchDiscussions(ctx, "hed", q, DiscussionOptions{IncludeIssues: true, IncludePRs: true})
		check("discussions", err)
		_, err = st.ListRecent(ctx, "hed", RecentOptions{Type: category, Repo: q, Status: category})
		check("recent", err)
		_, err = st.SearchPapers(ctx, "hed", q, 20)
		check("papers", err)
		_, err = st.SearchCodeDocs(ctx, "hed", q, 20)
		check("code docs", err)
		_, err = st.FullDocstring(ctx, "hed", q)
		check("full docstring", err)
		_, err = st.SearchFAQ(ctx, "hed", FilteredQuery{Query: q, Category: category})
		check("faq", err)
		_, err = st.SearchForum(ctx, "hed", FilteredQuery{Query: q, Category: category})
		check("forum", err)
		_, err = st.FAQFeed(ctx, "hed", FAQFeedQuery{Q: q, Category: category, MinQuality: 0.5, Limit: 3, Offset: 1})
		check("faq feed", err)
	})
}

package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/tests/golden"
)

// gh is a GitHub item of the fixture.
func gh(repo, typ string, n int, title, body, status, created string) GitHubItem {
	return GitHubItem{Repo: repo, Type: typ, Number: n, Title: title, Body: body, Status: status,
		URL: fmt.Sprintf("https://github.com/%s/%s/%d", repo, map[string]string{"issue": "issues", "pr": "pull"}[typ], n), CreatedAt: created}
}

// fixture publishes a small community "hed" with rows in every table the tools read.
func fixture(t testing.TB) *Store {
	t.Helper()
	st := testStore(t)
	update(t, st, "hed", func(tx *Tx) error {
		if _, err := tx.UpsertGitHubItems([]GitHubItem{
			gh("hed-standard/hed-python", "issue", 500, "Sidecar validation fails on nested columns", "Validating a sidecar with nested columns raises KeyError.", "open", "2024-05-01T12:00:00Z"),
			gh("hed-standard/hed-specification", "pr", 500, "Clarify definitions", "", "closed", "2023-01-02T00:00:00Z"),
			gh("hed-standard/hed-python", "pr", 2022, "Add schema loader cache", "Caches loaded schemas.\n\n"+strings.Repeat("More detail. ", 30), "open", "2024-06-01T08:00:00Z"),
			gh("hed-standard/hed-python", "issue", 12, "Validate schema, validate schema", "schema validate schema validate", "closed", "2022-03-03T00:00:00Z"),
			gh("hed-standard/hed-python", "issue", 13, "Startup errors", "When I validate the schema file I get errors. "+strings.Repeat("Other words here. ", 20), "open", "2022-04-04T00:00:00Z"),
			gh("hed-standard/hed-javascript", "issue", 7, "Validator crash", "The validator crashes on #500.", "open", ""),
		}); err != nil {
			return err
		}
		if _, err := tx.UpsertPapers([]Paper{
			{Source: "openalex", ExternalID: "W1", Title: "HED: A tag system for annotating events", Abstract: "Hierarchical Event Descriptors annotate events.", URL: "https://doi.org/10.1/hed", CreatedAt: "2021-03-04"},
			{Source: "semanticscholar", ExternalID: "abc", Title: "HED - a tag system for annotating events!", Abstract: "The same paper from another source.", URL: "https://s2/abc", CreatedAt: "2021"},
			{Source: "pubmed", ExternalID: "123", Title: "Event annotation with HED tags in EEG", URL: "https://pubmed.ncbi.nlm.nih.gov/123/"},
			{Source: "openalex", ExternalID: "W2", Title: "Untitled tags", URL: "https://openalex.org/W2"},
		}); err != nil {
			return err
		}
		if _, err := tx.UpsertDocstrings([]Docstring{
			{Repo: "sccn/eeglab", FilePath: "functions/popfunc/pop_loadset.m", Language: "matlab", Symbol: "pop_loadset", SymbolType: "function", Docstring: "pop_loadset() - load an EEG dataset.\n\nUsage: EEG = pop_loadset(filename);", Line: 3, Branch: "develop"},
			{Repo: "sccn/eeglab", FilePath: "functions/adminfunc/loadset_helper.m", Language: "matlab", Symbol: "loadset_helper", SymbolType: "function", Docstring: "Helper of pop_loadset pop_loadset pop_loadset: pop loadset loadset loadset.", Line: 1},
			{Repo: "hed-standard/hed-python", FilePath: "hed/schema/loader.py", Language: "python", Symbol: "load_schema", SymbolType: "function", Docstring: strings.Repeat("Load a HED schema from a file or URL. ", 60), Line: 41},
			{Repo: "hed-standard/hed-python", FilePath: "hed/schema/loader.py", Language: "python", Symbol: "SchemaLoader", SymbolType: "class", Docstring: "Loads schemas."},
			{Repo: "hed-standard/hed-python", FilePath: "hed/other/loader.py", Language: "python", Symbol: "load_schema", SymbolType: "function", Docstring: ""},
			{Repo: "hed-standard/hed-python", FilePath: "hed/b/load.py", Language: "python", Symbol: "LOAD_SCHEMA", SymbolType: "function", Docstring: "Upper-case twin."},
		}); err != nil {
			return err
		}
		if _, err := tx.UpsertFAQ([]FAQEntry{
			{List: "eeglablist", ThreadID: "1", ThreadURL: "https://lists/2024/thread.html#1", Question: "How do I load a dataset?", Answer: "Use pop_loadset to load a dataset.", Tags: []string{"data-import", "loading"}, Category: "how-to", MessageCount: 3, ParticipantCount: 2, Quality: 0.75},
			{List: "eeglablist", ThreadID: "2", ThreadURL: "https://lists/2024/thread.html#2", Question: "Dataset fails to load", Answer: strings.Repeat("Check the file path and the dataset version. ", 20), Category: "troubleshooting", MessageCount: 5, Quality: 0.95},
			{List: "eeglablist", ThreadID: "3", ThreadURL: "https://lists/2024/thread.html#3", Question: "Plotting channels", Answer: "Use pop_eegplot.", Category: "how-to", MessageCount: 2, Quality: 0.9},
		}); err != nil {
			return err
		}
		_, err := tx.UpsertTopics([]Topic{
			{ForumURL: "https://neurostars.org", TopicID: 10, Title: "Loading a BIDS dataset", FirstPost: "How do I load a BIDS dataset into EEGLAB?", AcceptedAnswer: "Use the bids-matlab-tools plugin.", Category: "Software Support", Replies: 4, Likes: 2, Views: 120, URL: "https://neurostars.org/t/loading/10", CreatedAt: "2024-01-01"},
			{ForumURL: "https://neurostars.org", TopicID: 11, Title: "Dataset sharing", FirstPost: "", Category: "General", Replies: 0, URL: "https://neurostars.org/t/sharing/11", CreatedAt: "2024-02-01"},
		})
		return err
	})
	if err := st.Publish(context.Background(), "hed"); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestNumberQuery(t *testing.T) {
	tests := []struct {
		in       string
		n        int
		only, ok bool
	}{
		{"2022", 2022, true, true},
		{" #500 ", 500, true, true},
		{"PR 2022", 2022, true, true},
		{"pr2022", 2022, true, true},
		{"issue #12", 12, true, true},
		{"Issue  #  12", 12, true, true},
		{"pull 7", 7, true, true},
		{"BUG #3 crash on load", 3, false, true},
		{"feature 44", 44, true, true},
		{"issue 12abc", 12, false, true},
		{"pretty 5", 0, false, false},
		{"issues 5", 0, false, false},
		{"#", 0, false, false},
		{"##5", 0, false, false},
		{"12 monkeys", 0, false, false},
		{"", 0, false, false},
		{"99999999999999999999", 0, false, false},
		{"pr 99999999999", 0, false, false},
		{"\u0130ssue 5", 0, false, false}, // İ lower-cases to i and a dot: not "issue"
		{"٣", 0, false, false},            // not ASCII digits
	}
	for _, tc := range tests {
		n, only, ok := NumberQuery(tc.in)
		if n != tc.n || only != tc.only || ok != tc.ok {
			t.Errorf("NumberQuery(%q) = %d, %v, %v; want %d, %v, %v", tc.in, n, only, ok, tc.n, tc.only, tc.ok)
		}
	}
}

func numbers(items []GitHubItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprintf("%s#%d", it.Type, it.Number))
	}
	return out
}

func TestSearchDiscussions(t *testing.T) {
	st := fixture(t)
	both := DiscussionOptions{IncludeIssues: true, IncludePRs: true}
	tests := []struct {
		query string
		opts  DiscussionOptions
		want  []string
	}{
		// The number first (any repo), and only it for a bare number.
		{"#500", both, []string{"issue#500", "pr#500"}},
		{"PR 500", DiscussionOptions{IncludePRs: true}, []string{"pr#500"}},
		// A number with words: the numbered items, then the text search, no item twice
		// (issue 7 mentions #500 and crash).
		{"issue 500 crash", both, []string{"issue#500", "pr#500", "issue#7"}},
		// The phrase of all terms (stop words included) first, though #12 repeats both
		// terms in the title, weighted 3.
		// ("validate"* does not match #500's "validating"; "schema"* matches #2022's "schemas".)
		{"validate the schema", both, []string{"issue#13", "issue#12", "pr#2022"}},
		// The same with a type filter (ranked through the base table).
		{"validate the schema", DiscussionOptions{IncludeIssues: true}, []string{"issue#13", "issue#12"}},
		// Terms are OR'd; prefixes for 4+ characters (validat… matches validation, validator,
		// validating, validate), then bm25.
		{"validat", both, []string{"issue#12", "issue#7", "issue#500", "issue#13"}},
		{"schema", DiscussionOptions{IncludePRs: true}, []string{"pr#2022"}},
		{"schema", DiscussionOptions{}, nil},
		{"schema", DiscussionOptions{IncludeIssues: true, IncludePRs: true, Limit: 1}, []string{"issue#12"}},
		// Only stop words: they are the terms then.
		{"the of", both, []string{"issue#7", "issue#13"}},
		{"", both, nil},
		{`"AND" NOT* col:x ( NEAR(a b) ^`, both, nil},
	}
	for _, tc := range tests {
		got, err := st.SearchDiscussions(t.Context(), "hed", tc.query, tc.opts)
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if g := numbers(got); !reflect.DeepEqual(g, tc.want) {
			t.Errorf("%q %+v: %v, want %v", tc.query, tc.opts, g, tc.want)
		}
	}
}

func TestListRecent(t *testing.T) {
	st := fixture(t)
	tests := []struct {
		opts RecentOptions
		want []string
	}{
		{RecentOptions{}, []string{"pr#2022", "issue#500", "pr#500", "issue#13", "issue#12", "issue#7"}},
		{RecentOptions{Type: "issue", Status: "open"}, []string{"issue#500", "issue#13", "issue#7"}},
		{RecentOptions{Type: "all", Repo: "hed-standard/hed-specification"}, []string{"pr#500"}},
		{RecentOptions{Limit: 2}, []string{"pr#2022", "issue#500"}},
		{RecentOptions{Limit: -4}, []string{"pr#2022"}},
		{RecentOptions{Type: "discussion"}, nil},
	}
	for _, tc := range tests {
		got, err := st.ListRecent(t.Context(), "hed", tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if g := numbers(got); !reflect.DeepEqual(g, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.opts, g, tc.want)
		}
	}
}

// TestLimitClamps: a limit past the tool's most returns the most (20, list_recent 50).
func TestLimitClamps(t *testing.T) {
	st := testStore(t)
	var items []GitHubItem
	for i := 1; i <= 60; i++ {
		items = append(items, gh("o/r", "issue", i, "widget report", "", "open", fmt.Sprintf("2024-01-01T00:00:%02dZ", i)))
	}
	update(t, st, "c", func(tx *Tx) error { _, err := tx.UpsertGitHubItems(items); return err })
	if err := st.Publish(t.Context(), "c"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit, want int
	}{{0, 5}, {1000, 20}, {-1, 1}, {7, 7}} {
		got, err := st.SearchDiscussions(t.Context(), "c", "widget", DiscussionOptions{IncludeIssues: true, Limit: tc.limit})
		if err != nil || len(got) != tc.want {
			t.Errorf("search limit %d: %d rows (%v), want %d", tc.limit, len(got), err, tc.want)
		}
	}
	for _, tc := range []struct {
		limit, want int
	}{{0, 10}, {1000, 50}, {-1, 1}} {
		got, err := st.ListRecent(t.Context(), "c", RecentOptions{Limit: tc.limit})
		if err != nil || len(got) != tc.want {
			t.Errorf("recent limit %d: %d rows (%v), want %d", tc.limit, len(got), err, tc.want)
		}
	}
	if got, _ := st.ListRecent(t.Context(), "c", RecentOptions{Limit: 1}); len(got) != 1 || got[0].Number != 60 {
		t.Errorf("newest first: %v", numbers(got))
	}
}

func TestSearchPapersDedupe(t *testing.T) {
	st := fixture(t)
	got, err := st.SearchPapers(t.Context(), "hed", "HED tag system events", 5)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.ExternalID)
	}
	// abc's title is W1's in other punctuation (Jaccard 1): dropped. W2 matches "tag" only as
	// "tags"'s prefix? No: "tag" is shorter than 4, so it is an exact term; "tags" does not match.
	if want := []string{"W1", "123"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("papers %v, want %v", ids, want)
	}
	// Up to 3 × limit are read before the duplicates go: with limit 2, W1 and its duplicate
	// rank first and the third still comes.
	got, _ = st.SearchPapers(t.Context(), "hed", "HED tag system annotating events", 2)
	if len(got) != 2 || got[0].ExternalID != "W1" || got[1].ExternalID != "123" {
		t.Errorf("limit 2: %+v", got)
	}
	if j := Jaccard(TitleWords("HED: A tag system"), TitleWords("hed — a TAG system!")); j != 1 {
		t.Errorf("Jaccard of one title in two spellings = %v", j)
	}
	if j := Jaccard(TitleWords("a b"), TitleWords("a b")); j != 0 {
		t.Errorf("Jaccard of empty word sets = %v, want 0", j)
	}
	// 3 of 4 words shared, union 5: 0.6 < 0.7 keeps both.
	if j := Jaccard(TitleWords("one two three four"), TitleWords("one two three five")); j != 0.6 {
		t.Errorf("Jaccard = %v, want 0.6", j)
	}
}

func TestSearchCodeDocs(t *testing.T) {
	st := fixture(t)
	got, err := st.SearchCodeDocs(t.Context(), "hed", "  POP_LOADSET ", 5)
	if err != nil {
		t.Fatal(err)
	}
	// loadset_helper repeats the terms, but the exact symbol comes first.
	if len(got) != 2 || got[0].Symbol != "pop_loadset" || got[1].Symbol != "loadset_helper" {
		t.Fatalf("got %+v", got)
	}
	if l := got[0].Link(); l != "https://github.com/sccn/eeglab/blob/develop/functions/popfunc/pop_loadset.m#L3" {
		t.Errorf("link %s", l)
	}
	if l := (Docstring{Repo: "o/r", FilePath: "a b/(x).py"}).Link(); l != "https://github.com/o/r/blob/main/a%20b/%28x%29.py" {
		t.Errorf("link of an odd path %s", l)
	}
	// Several exact symbols (any case) by repo and file, then the text matches.
	got, _ = st.SearchCodeDocs(t.Context(), "hed", "load_schema", 5)
	var files []string
	for _, d := range got {
		files = append(files, d.Symbol+"@"+d.FilePath)
	}
	// (loadset_helper matches "load"* as a prefix of "loadset".)
	want := []string{"LOAD_SCHEMA@hed/b/load.py", "load_schema@hed/other/loader.py", "load_schema@hed/schema/loader.py",
		"SchemaLoader@hed/schema/loader.py", "loadset_helper@functions/adminfunc/loadset_helper.m"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("got %v, want %v", files, want)
	}
	text := CodeDocsText("HED", "hed", "load_schema", got, nil)
	if !strings.HasSuffix(text, "\nOne or more snippets were truncated. If the user is asking about specific outputs, parameters, or examples, call get_hed_full_docstring with the symbol_name to retrieve the stored docstring in full.") {
		t.Errorf("no truncation note:\n%s", text)
	}
	if text := CodeDocsText("HED", "hed", "x", got[:1], nil); strings.Contains(text, "truncated") {
		t.Errorf("a truncation note without a cut snippet:\n%s", text)
	}
	ps := CodeDocsPassages(got)
	if len(ps) != 5 || ps[2].Source != "https://github.com/hed-standard/hed-python/blob/main/hed/schema/loader.py#L41" ||
		ps[2].Title != "load_schema (function) - hed/schema/loader.py" || !strings.HasSuffix(ps[2].Text, "...") || len([]rune(ps[2].Text)) != CodeSnippetChars+3-1 {
		t.Errorf("passage %+v (%d characters)", ps[2], len([]rune(ps[2].Text)))
	}
}

func TestFullDocstring(t *testing.T) {
	st := fixture(t)
	got, err := st.FullDocstring(t.Context(), "hed", "Load_Schema")
	if err != nil {
		t.Fatal(err)
	}
	// The empty docstring of hed/other/loader.py is skipped; the rest by repo and file.
	if len(got) != 2 || got[0].FilePath != "hed/b/load.py" || got[1].FilePath != "hed/schema/loader.py" || len(got[1].Docstring) != 38*60 {
		t.Fatalf("got %+v", got)
	}
	ps := FullDocstringPassages(got)
	if ps[1].Text != got[1].Docstring {
		t.Error("the full docstring's passage is not the whole docstring")
	}
	if got, err := st.FullDocstring(t.Context(), "hed", "load"); err != nil || len(got) != 0 {
		t.Errorf("a prefix of a symbol: %v %v", got, err)
	}
	// More than 5 of a name: 5.
	update(t, st, "hed", func(tx *Tx) error {
		var ds []Docstring
		for i := range 7 {
			ds = append(ds, Docstring{Repo: "o/r", FilePath: fmt.Sprintf("f%d.py", i), Language: "python", Symbol: "dup", SymbolType: "function", Docstring: "d"})
		}
		_, err := tx.UpsertDocstrings(ds)
		return err
	})
	st.Publish(t.Context(), "hed")
	if got, _ := st.FullDocstring(t.Context(), "hed", "dup"); len(got) != 5 || got[4].FilePath != "f4.py" {
		t.Errorf("%d matches, want the first 5", len(got))
	}
}

func TestSearchFAQAndForum(t *testing.T) {
	st := fixture(t)
	es, err := st.SearchFAQ(t.Context(), "hed", FilteredQuery{Query: "load a dataset"})
	if err != nil {
		t.Fatal(err)
	}
	// Relevance first: the phrase's entry (0.75) before the better-rated one that only shares
	// words (0.95); quality breaks ties only (§4.2.5).
	if len(es) != 2 || es[0].ThreadID != "1" || es[1].ThreadID != "2" {
		t.Errorf("faq %+v", es)
	}
	es, _ = st.SearchFAQ(t.Context(), "hed", FilteredQuery{Query: "load dataset", Category: "HOW-TO"})
	if len(es) != 1 || es[0].ThreadID != "1" || !reflect.DeepEqual(es[0].Tags, []string{"data-import", "loading"}) {
		t.Errorf("faq by category %+v", es)
	}
	ps := FAQPassages(es)
	if len(ps) != 1 || ps[0] != (Passage{Source: "https://lists/2024/thread.html#1", Title: "How do I load a dataset?", Text: "Use pop_loadset to load a dataset."}) {
		t.Errorf("faq passages %+v", ps)
	}
	ts, err := st.SearchForum(t.Context(), "hed", FilteredQuery{Query: "dataset"})
	if err != nil || len(ts) != 2 || ts[0].TopicID != 11 { // the shorter title first (bm25)
		t.Errorf("forum %+v %v", ts, err)
	}
	ts, _ = st.SearchForum(t.Context(), "hed", FilteredQuery{Query: "dataset", Category: "general"})
	if len(ts) != 1 || ts[0].TopicID != 11 {
		t.Errorf("forum by category %+v", ts)
	}
}

// TestToolTexts: every tool's text for the fixture, byte for byte (the golden file was
// checked line by line against knowledge.md §4.3), and the no-results texts.
func TestToolTexts(t *testing.T) {
	st := fixture(t)
	ctx := t.Context()
	var b strings.Builder
	section := func(title, text string) { fmt.Fprintf(&b, "===== %s\n%s\n", title, text) }
	both := DiscussionOptions{IncludeIssues: true, IncludePRs: true}
	items, err := st.SearchDiscussions(ctx, "hed", "issue 500 crash", both)
	section("discussions", DiscussionsText("HED", "issue 500 crash", items, err))
	ro := RecentOptions{Limit: 3}
	items, err = st.ListRecent(ctx, "hed", ro)
	section("recent", RecentText("HED", ro, items, err))
	ro = RecentOptions{Repo: "hed-standard/hed-javascript"}
	items, err = st.ListRecent(ctx, "hed", ro)
	section("recent, unknown date", RecentText("HED", ro, items, err))
	ps, err := st.SearchPapers(ctx, "hed", "HED tag", 5)
	section("papers", PapersText("HED", "HED tag", ps, err))
	ds, err := st.SearchCodeDocs(ctx, "hed", "pop_loadset", 5)
	section("code docs", CodeDocsText("HED", "hed", "pop_loadset", ds, err))
	ds, err = st.FullDocstring(ctx, "hed", "POP_LOADSET")
	section("full docstring", FullDocstringText("HED", "hed", "POP_LOADSET", ds, err))
	fq := FilteredQuery{Query: "dataset"}
	es, err := st.SearchFAQ(ctx, "hed", fq)
	section("faq", FAQText("HED", "hed", fq, es, err))
	ts, err := st.SearchForum(ctx, "hed", fq)
	section("forum", ForumText("HED", "hed", fq, ts, err))
	section("descriptions", strings.Join([]string{
		DiscussionsDescription("HED", []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6"}),
		DiscussionsDescription("HED", nil),
		RecentDescription("HED", []string{"a/1", "a/2"}),
		PapersDescription("HED"), CodeDocsDescription("HED", "hed"), FullDocstringDescription("HED", "hed"),
		FAQDescription("HED", []string{"eeglablist", "hed-users"}), ForumDescription("HED"),
	}, "\n-----\n"))
	golden.Check(t, filepath.Join("testdata", "golden", "tools.txt"), []byte(b.String()))

	none := []struct{ got, want string }{
		{DiscussionsText("HED", "zzz", nil, nil), "No related discussions found for 'zzz'."},
		{RecentText("HED", RecentOptions{Type: "pr", Repo: "o/r", Status: "open"}, nil, nil), "No GitHub items found (type=pr, repo=o/r, status=open)."},
		{RecentText("HED", RecentOptions{Type: "all"}, nil, nil), "No GitHub items found (no filters)."},
		{PapersText("HED", "zzz", nil, nil), "No related papers found for 'zzz'."},
		{CodeDocsText("HED", "hed", "zzz", nil, nil), "No code documentation found for 'zzz'."},
		{FullDocstringText("HED", "hed", "zzz", nil, nil), "No docstring found for symbol 'zzz' in HED. Try search_hed_code_docs first to find the correct symbol name."},
		{FAQText("HED", "hed", FilteredQuery{Query: "zzz"}, nil, nil), "No FAQ entries found for 'zzz'."},
		{FAQText("HED", "hed", FilteredQuery{Query: "zzz", Category: "how-to"}, nil, nil), "No FAQ entries found for 'zzz' (category: how-to)."},
		{ForumText("HED", "hed", FilteredQuery{Query: "zzz", Category: "General"}, nil, nil), "No forum topics found for 'zzz' (category: General)."},
	}
	for _, tc := range none {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

// allTools runs each tool's search and text on community id.
func allTools(st *Store, id string) map[string]string {
	ctx := context.Background()
	out := map[string]string{}
	items, err := st.SearchDiscussions(ctx, id, "x", DiscussionOptions{IncludeIssues: true, IncludePRs: true})
	out["discussions"] = DiscussionsText("HED", "x", items, err)
	items, err = st.ListRecent(ctx, id, RecentOptions{})
	out["recent"] = RecentText("HED", RecentOptions{}, items, err)
	ps, err := st.SearchPapers(ctx, id, "x", 5)
	out["papers"] = PapersText("HED", "x", ps, err)
	ds, err := st.SearchCodeDocs(ctx, id, "x", 5)
	out["code_docs"] = CodeDocsText("HED", id, "x", ds, err)
	ds, err = st.FullDocstring(ctx, id, "x")
	out["full_docstring"] = FullDocstringText("HED", id, "x", ds, err)
	es, err := st.SearchFAQ(ctx, id, FilteredQuery{Query: "x"})
	out["faq"] = FAQText("HED", id, FilteredQuery{Query: "x"}, es, err)
	ts, err := st.SearchForum(ctx, id, FilteredQuery{Query: "x"})
	out["forum"] = ForumText("HED", id, FilteredQuery{Query: "x"}, ts, err)
	return out
}

// TestDatabaseStates: no published file, a file without the tools' tables (a reference file
// of another community), and a file that is not a database each give §4.1's texts.
func TestDatabaseStates(t *testing.T) {
	st := testStore(t)
	notInit := map[string]string{
		"discussions":    "Knowledge database for HED not initialized. Run 'assistant sync init' and 'assistant sync github' to populate it.",
		"recent":         "Knowledge database for HED not initialized. Run 'assistant sync init' and 'assistant sync github' to populate it.",
		"papers":         "Knowledge database for HED not initialized. Run 'assistant sync init' and 'assistant sync papers' to populate it.",
		"code_docs":      "Knowledge database for HED not initialized. Run 'assistant sync init' and 'assistant sync docstrings' to populate it.",
		"full_docstring": "Knowledge database for HED not initialized. Run 'assistant sync init' and 'assistant sync docstrings' to populate it.",
		"faq":            "FAQ database for HED not initialized. Run 'assistant sync mailman' and 'assistant sync faq' to populate it.",
		"forum":          "Knowledge database for HED not initialized. Run 'assistant sync discourse' to populate it.",
	}
	if got := allTools(st, "none"); !reflect.DeepEqual(got, notInit) {
		t.Errorf("no file:\n%v\nwant\n%v", got, notInit)
	}
	// A file with only doc_sections: every table of the tools missing.
	if err := st.Write(t.Context(), "docs", func(ctx context.Context, tx *sql.Tx) (bool, error) {
		for _, table := range []string{"github_items", "papers", "docstrings", "faq_entries", "discourse_topics"} {
			if _, err := tx.ExecContext(ctx, `DROP TABLE `+table); err != nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	missing := map[string]string{}
	for k, v := range notInit {
		missing[k] = v
	}
	missing["code_docs"] = "Knowledge database for HED not initialized. Run 'assistant sync docstrings --community docs' to populate it."
	missing["full_docstring"] = missing["code_docs"]
	missing["faq"] = "FAQ database for HED not initialized. Run 'assistant sync mailman --community docs' and 'assistant sync faq --community docs' to populate it."
	missing["forum"] = "Discourse database for HED not initialized. Run 'assistant sync discourse --community docs' to populate it."
	if got := allTools(st, "docs"); !reflect.DeepEqual(got, missing) {
		t.Errorf("missing tables:\n%v\nwant\n%v", got, missing)
	}
	_, err := st.SearchPapers(t.Context(), "docs", "x", 5)
	var mt *MissingTableError
	if !errors.As(err, &mt) || mt.Table != "papers" || !errors.Is(err, ErrNotInitialized) {
		t.Errorf("missing table error %v", err)
	}
	// Not a database at all.
	os.WriteFile(st.Path("bad"), []byte(strings.Repeat("not a database ", 100)), 0o644)
	for tool, text := range allTools(st, "bad") {
		if text != "Error: the HED knowledge database could not be read." {
			t.Errorf("%s on a bad file: %q", tool, text)
		}
	}
	if _, err := st.SearchForum(t.Context(), "bad", FilteredQuery{Query: "x"}); !errors.Is(err, ErrUnreadable) {
		t.Errorf("bad file error %v", err)
	}
	if _, err := st.SearchForum(t.Context(), "../bad", FilteredQuery{Query: "x"}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("bad id error %v", err)
	}
}

// TestReaderSeesNewFile: a search after a publish reads the new file without a restart.
func TestReaderSeesNewFile(t *testing.T) {
	st := fixture(t)
	if got, _ := st.SearchForum(t.Context(), "hed", FilteredQuery{Query: "zebrafish"}); len(got) != 0 {
		t.Fatal("found before it was written")
	}
	update(t, st, "hed", func(tx *Tx) error {
		_, err := tx.UpsertTopics([]Topic{{ForumURL: "https://neurostars.org", TopicID: 99, Title: "Zebrafish imaging", URL: "u", CreatedAt: time.Now().Format(time.RFC3339)}})
		return err
	})
	if got, _ := st.SearchForum(t.Context(), "hed", FilteredQuery{Query: "zebrafish"}); len(got) != 0 {
		t.Fatal("found before the publish")
	}
	if err := st.Publish(t.Context(), "hed"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SearchForum(t.Context(), "hed", FilteredQuery{Query: "zebrafish"}); len(got) != 1 || err != nil {
		t.Errorf("after the publish: %v %v", got, err)
	}
}

// TestReferenceColumns: a reference file older than docstrings.branch and papers.cites_doi
// serves both tools (branch read as main).
func TestReferenceColumns(t *testing.T) {
	st := testStore(t)
	db, err := sql.Open("sqlite", dsn(st.Path("old"), ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`CREATE TABLE docstrings (id INTEGER PRIMARY KEY AUTOINCREMENT, repo TEXT NOT NULL, file_path TEXT NOT NULL, language TEXT NOT NULL, symbol_name TEXT NOT NULL, symbol_type TEXT NOT NULL, docstring TEXT NOT NULL, line_number INTEGER, synced_at TEXT NOT NULL, UNIQUE(repo, file_path, symbol_name))`,
		`CREATE VIRTUAL TABLE docstrings_fts USING fts5(symbol_name, docstring, content='docstrings', content_rowid='id')`,
		`INSERT INTO docstrings (repo, file_path, language, symbol_name, symbol_type, docstring, line_number, synced_at) VALUES ('o/r', 'f.m', 'matlab', 'eegplot', 'function', 'Scroll through channel data.', NULL, 's')`,
		`INSERT INTO docstrings_fts(docstrings_fts) VALUES ('rebuild')`,
		`CREATE TABLE papers (id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, external_id TEXT NOT NULL, title TEXT NOT NULL, first_message TEXT, status TEXT NOT NULL DEFAULT 'published', url TEXT NOT NULL, created_at TEXT, synced_at TEXT NOT NULL, UNIQUE(source, external_id))`,
		`CREATE VIRTUAL TABLE papers_fts USING fts5(title, first_message, content='papers', content_rowid='id')`,
		`INSERT INTO papers (source, external_id, title, url, synced_at) VALUES ('openalex', 'W9', 'Channel data review', 'u', 's')`,
		`INSERT INTO papers_fts(papers_fts) VALUES ('rebuild')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	ds, err := st.SearchCodeDocs(t.Context(), "old", "channel data", 5)
	if err != nil || len(ds) != 1 || ds[0].Link() != "https://github.com/o/r/blob/main/f.m" {
		t.Errorf("code docs on an old file: %+v %v", ds, err)
	}
	ps, err := st.SearchPapers(t.Context(), "old", "channel", 5)
	if err != nil || len(ps) != 1 || ps[0].ExternalID != "W9" {
		t.Errorf("papers on an old file: %+v %v", ps, err)
	}
}

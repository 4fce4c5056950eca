package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// pClock is a clock whose Sleep records the wait and moves the time on at once.
type pClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func newPClock() *pClock {
	return &pClock{t: time.Date(2025, 6, 2, 2, 0, 0, 0, time.UTC)}
}

func (c *pClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *pClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func (c *pClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

func paperStore(t testing.TB) *knowledge.Store {
	t.Helper()
	st, err := knowledge.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// published publishes community id and returns its rows for q, each as strings (NULL as
// "<nil>"), read from the published file as any reader would.
func published(t testing.TB, st *knowledge.Store, id, q string, args ...any) [][]string {
	t.Helper()
	if err := st.Publish(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: st.Path(id), RawQuery: "mode=ro"}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			row[i] = fmt.Sprint(v)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// paperServers are the three fake APIs with a canonical paper, a version of it, the works
// citing them, and keyword hits (one paper on all three).
type paperServers struct {
	oa *ingesttest.OpenAlex
	s2 *ingesttest.SemanticScholar
	pm *ingesttest.PubMed
}

func newPaperServers(t *testing.T) paperServers {
	oa := ingesttest.NewOpenAlex(t)
	oa.Add(
		ingesttest.Work{ID: "W100", Title: "HED: a system for annotating events", DOI: "10.1016/j.neuroimage.2021.118766", PublicationDate: "2021-12-01"},
		ingesttest.Work{ID: "W101", Title: "HED: a system for annotating events (preprint)", DOI: "10.1101/2021.05.06.442841", PublicationDate: "2021-05-06"},
		// Citing works: of the published version, of the preprint, of both, one dated before
		// the earliest version (an OpenAlex date error the counts drop) and one untitled.
		ingesttest.Work{ID: "W200", Title: "Event annotation at scale", DOI: "10.5555/a1", PublicationDate: "2023-04-02", Cites: []string{"W100"}},
		ingesttest.Work{ID: "W201", Title: "Tagging <i>EEG</i> events with HED", PublicationDate: "2022-01-15", Cites: []string{"W101"}},
		ingesttest.Work{ID: "W202", Title: "A BIDS dataset with rich events", DOI: "10.5555/a3", PublicationDate: "2022-07-30", Cites: []string{"W100", "W101"}},
		ingesttest.Work{ID: "W203", Title: "Misdated work", PublicationDate: "2019-03-01", Cites: []string{"W100"}},
		ingesttest.Work{ID: "W204", Title: "", PublicationDate: "2024-01-01", Cites: []string{"W100"}},
		// A keyword hit, also on Semantic Scholar and PubMed.
		ingesttest.Work{ID: "W300", Title: "Hierarchical event descriptors for neuroimaging", DOI: "10.3389/fninf.2016.00042",
			Abstract: "Events are the core of time series neuroimaging analysis events", PublicationDate: "2016-10-28"},
	)
	s2 := ingesttest.NewSemanticScholar(t)
	s2.SetKey("s2-key")
	s2.Add(
		ingesttest.S2Paper{PaperID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6", Title: "Hierarchical Event Descriptors for Neuroimaging",
			Abstract: "Same paper as W300.", Year: 2016, DOI: "10.3389/FNINF.2016.00042"},
		ingesttest.S2Paper{PaperID: "aa11bb22cc33dd44ee55ff66aa77bb88cc99dd00", Title: "Hierarchical event annotation tools",
			Abstract: "Tools for event annotation.", Year: 2020, PDF: "https://arxiv.org/pdf/2001.00001"},
		ingesttest.S2Paper{PaperID: "bb11bb22cc33dd44ee55ff66aa77bb88cc99dd00", Title: "Event hierarchical structure", Year: 0},
	)
	pm := ingesttest.NewPubMed(t)
	pm.Add(
		ingesttest.PubMedArticle{PMID: "27799907", Title: "Hierarchical event descriptors for neuroimaging.", Year: 2016,
			Abstract: []string{"Same again."}, DOI: "10.3389/fninf.2016.00042"},
		ingesttest.PubMedArticle{PMID: "38000001", Title: "<i>Hierarchical</i> event coding in EEG", Year: 2024,
			Abstract: []string{"Background part with event codes.", "Methods part."}},
		ingesttest.PubMedArticle{PMID: "12000001", Title: "An old hierarchical event study", MedlineDate: "1998 Dec-1999 Jan"},
	)
	return paperServers{oa, s2, pm}
}

func (s paperServers) papers(st *knowledge.Store, clk *pClock, keys bool) *Papers {
	o := PapersOptions{Store: st, OpenAlexURL: s.oa.URL, SemanticScholarURL: s.s2.URL, PubMedURL: s.pm.URL,
		OpenAlexEmail: "team@example.org", OpenAlexKey: "oa-key", Now: clk.Now, Sleep: clk.Sleep}
	if keys {
		o.SemanticScholarKey, o.PubMedKey = "s2-key", "pm-key"
	}
	p := NewPapers(o)
	p.SemanticScholarPause, p.PubMedPause = 0, 0
	return p
}

func hedCommunity() *config.Community {
	return &config.Community{ID: "hed", Name: "HED", Citations: &config.Citations{
		Queries: []string{"hierarchical event"},
		DOIs:    []string{"10.1016/j.neuroimage.2021.118766"},
		Aliases: map[string][]string{"10.1016/j.neuroimage.2021.118766": {"10.1101/2021.05.06.442841", "10.9999/missing"}},
	}}
}

func TestPapersSync(t *testing.T) {
	srv := newPaperServers(t)
	st := paperStore(t)
	clk := newPClock()
	var progress []Progress
	res, err := srv.papers(st, clk, true).Sync(context.Background(), hedCommunity(), RunOptions{}, func(p Progress) { progress = append(progress, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 0 {
		t.Fatalf("failed: %v", res.Failed)
	}

	got := published(t, st, "hed", `SELECT source, external_id, title, COALESCE(first_message, ''), url, COALESCE(created_at, ''), COALESCE(cites_doi, '')
		FROM papers ORDER BY source, external_id`)
	const hed = "10.1016/j.neuroimage.2021.118766"
	want := [][]string{
		{"openalex", "W200", "Event annotation at scale", "", "https://doi.org/10.5555/a1", "2023-04-02", hed},
		{"openalex", "W201", "Tagging EEG events with HED", "", "https://openalex.org/W201", "2022-01-15", hed},
		{"openalex", "W202", "A BIDS dataset with rich events", "", "https://doi.org/10.5555/a3", "2022-07-30", hed},
		{"openalex", "W203", "Misdated work", "", "https://openalex.org/W203", "2019-03-01", hed},
		{"openalex", "W300", "Hierarchical event descriptors for neuroimaging", "Events are the core of time series neuroimaging analysis events",
			"https://doi.org/10.3389/fninf.2016.00042", "2016-10-28", ""},
		// PubMed: the first AbstractText only; the title's markup dropped; a MedlineDate's year.
		{"pubmed", "12000001", "An old hierarchical event study", "", "https://pubmed.ncbi.nlm.nih.gov/12000001/", "1998", ""},
		{"pubmed", "38000001", "Hierarchical event coding in EEG", "Background part with event codes.", "https://pubmed.ncbi.nlm.nih.gov/38000001/", "2024", ""},
		// Semantic Scholar: the open-access PDF, else the paper's page; W300's twin (same DOI)
		// and PubMed's (same DOI) are not stored again.
		{"semanticscholar", "aa11bb22cc33dd44ee55ff66aa77bb88cc99dd00", "Hierarchical event annotation tools", "Tools for event annotation.",
			"https://arxiv.org/pdf/2001.00001", "2020", ""},
		{"semanticscholar", "bb11bb22cc33dd44ee55ff66aa77bb88cc99dd00", "Event hierarchical structure", "",
			"https://www.semanticscholar.org/paper/bb11bb22cc33dd44ee55ff66aa77bb88cc99dd00", "", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("papers (-want +got):\n%s", d)
	}

	// Counts: W203 (2019) predates the earliest version (2021) and is dropped; W202 cites both
	// versions and is counted once (OpenAlex's OR group).
	if d := cmp.Diff([][]string{{hed, "2022", "2"}, {hed, "2023", "1"}, {hed, "2024", "1"}},
		published(t, st, "hed", `SELECT doi, year, count FROM citation_counts ORDER BY year`)); d != "" {
		t.Errorf("citation_counts (-want +got):\n%s", d)
	}
	meta := published(t, st, "hed", `SELECT source_type, source_name, items_synced, last_sync_at FROM sync_metadata ORDER BY source_type, source_name`)
	wantMeta := [][]string{
		{"citations", "citing_" + hed, "4", "2025-06-02T02:00:00.000000+00:00"},
		{"papers", "openalex:hierarchical event", "1", "2025-06-02T02:00:00.000000+00:00"},
		{"papers", "pubmed:hierarchical event", "2", "2025-06-02T02:00:00.000000+00:00"},
		{"papers", "semanticscholar:hierarchical event", "2", "2025-06-02T02:00:00.000000+00:00"},
	}
	if d := cmp.Diff(wantMeta, meta); d != "" {
		t.Errorf("sync_metadata (-want +got):\n%s", d)
	}
	if res.Items != 9 {
		t.Errorf("Result.Items = %d, want 9", res.Items)
	}

	// The wire: mailto and api_key on every OpenAlex request, the lookups, the OR group, the
	// cursor; the Semantic Scholar key as a header; the PubMed key as a parameter.
	var paths []string
	for _, r := range srv.oa.Requests() {
		if r.Query.Get("mailto") != "team@example.org" || r.Query.Get("api_key") != "oa-key" {
			t.Errorf("%s?%s: no mailto or api_key", r.Path, r.Query.Encode())
		}
		paths = append(paths, r.Path+" "+r.Query.Get("filter")+" "+r.Query.Get("group_by")+r.Query.Get("cursor")+r.Query.Get("search"))
	}
	wantPaths := []string{
		"/works/doi:10.1016/j.neuroimage.2021.118766  ",
		"/works/doi:10.1101/2021.05.06.442841  ",
		"/works/doi:10.9999/missing  ",
		"/works cites:W100|W101 publication_year",
		"/works cites:W100|W101 *",
		"/works  hierarchical event",
	}
	if d := cmp.Diff(wantPaths, paths); d != "" {
		t.Errorf("OpenAlex requests (-want +got):\n%s", d)
	}
	for _, r := range srv.s2.Requests() {
		if r.APIKey != "s2-key" || r.Query.Get("limit") != "100" {
			t.Errorf("Semantic Scholar request %v: key %q", r.Query, r.APIKey)
		}
	}
	for _, r := range srv.pm.Requests() {
		if r.Query.Get("api_key") != "pm-key" {
			t.Errorf("PubMed %s without its api_key", r.Path)
		}
	}
	if n := len(srv.pm.Requests()); n != 2 {
		t.Errorf("PubMed requests = %d, want 2 (esearch, efetch)", n)
	}
	var last Progress
	for _, p := range progress {
		if p.Done && p.Source == "citing_"+hed {
			last = p
		}
	}
	if last.Items != 4 {
		t.Errorf("citing progress = %+v, want 4 items", last)
	}
}

func TestPapersWithoutKeysAsksOnlyOpenAlex(t *testing.T) {
	srv := newPaperServers(t)
	st := paperStore(t)
	res, err := srv.papers(st, newPClock(), false).Sync(context.Background(), hedCommunity(), RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 {
		t.Fatal(err, res.Failed)
	}
	if n, m := len(srv.s2.Requests()), len(srv.pm.Requests()); n != 0 || m != 0 {
		t.Errorf("Semantic Scholar and PubMed asked %d and %d times without keys", n, m)
	}
	got := published(t, st, "hed", `SELECT DISTINCT source FROM papers`)
	if d := cmp.Diff([][]string{{"openalex"}}, got); d != "" {
		t.Error(d)
	}
}

func TestPapersSecondSyncReplacesCounts(t *testing.T) {
	srv := newPaperServers(t)
	st := paperStore(t)
	c := hedCommunity()
	p := srv.papers(st, newPClock(), false)
	if _, err := p.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	// The 2023 citer is now dated 2025 and a keyword search also finds W200: its counts move,
	// the 2023 row goes, and the keyword hit does not erase its cites_doi.
	srv.oa.Add(ingesttest.Work{ID: "W200", Title: "Event annotation at scale, hierarchical event", DOI: "10.5555/a1", PublicationDate: "2025-01-02", Cites: []string{"W100"}})
	if _, err := p.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	got := published(t, st, "hed", `SELECT year, count FROM citation_counts ORDER BY year`)
	if d := cmp.Diff([][]string{{"2022", "2"}, {"2024", "1"}, {"2025", "1"}}, got); d != "" {
		t.Errorf("citation_counts (-want +got):\n%s", d)
	}
	got = published(t, st, "hed", `SELECT title, cites_doi FROM papers WHERE external_id = 'W200'`)
	if d := cmp.Diff([][]string{{"Event annotation at scale, hierarchical event", "10.1016/j.neuroimage.2021.118766"}}, got); d != "" {
		t.Errorf("W200 (-want +got):\n%s", d)
	}
}

func TestPapersEmptyHistogramKeepsCounts(t *testing.T) {
	srv := newPaperServers(t)
	st := paperStore(t)
	c := hedCommunity()
	c.Citations.Queries = nil
	p := srv.papers(st, newPClock(), false)
	if _, err := p.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	srv.oa.ResetRequests()
	// A transient gap: OpenAlex answers the lookups, then an empty histogram.
	srv.oa.Queue(
		ingesttest.CannedReply{Status: 200, Body: `{"id":"https://openalex.org/W100","publication_year":2021}`},
		ingesttest.CannedReply{Status: 200, Body: `{"id":"https://openalex.org/W101","publication_year":2021}`},
		ingesttest.CannedReply{Status: 404, Body: `{"error":"NotFoundError"}`},
		ingesttest.CannedReply{Status: 200, Body: `{"meta":{"count":0,"groups_count":0},"results":[],"group_by":[]}`},
	)
	res, err := p.Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil || len(res.Failed) != 0 {
		t.Fatal(err, res.Failed)
	}
	if n := len(srv.oa.Requests()); n != 4 {
		t.Errorf("%d requests, want 4 (no listing after an empty histogram)", n)
	}
	got := published(t, st, "hed", `SELECT count(*), sum(count) FROM citation_counts`)
	if d := cmp.Diff([][]string{{"3", "4"}}, got); d != "" {
		t.Errorf("counts after the gap (-want +got):\n%s", d)
	}
}

func TestPapersCitingCapAndCursor(t *testing.T) {
	oa := ingesttest.NewOpenAlex(t)
	oa.Add(ingesttest.Work{ID: "W1", Title: "Canonical", DOI: "10.1000/canon", PublicationDate: "2010-01-01"})
	for i := range 230 {
		oa.Add(ingesttest.Work{ID: fmt.Sprintf("W%d", 10000+i), Title: fmt.Sprintf("Citing work %d", i),
			PublicationDate: fmt.Sprintf("%d-01-01", 2011+i%14), Cites: []string{"W1"}})
	}
	c := &config.Community{ID: "x", Citations: &config.Citations{DOIs: []string{"10.1000/canon"}}}
	for _, tc := range []struct {
		name        string
		cap, pages  int
		wantPerPage []string
		wantPapers  string
	}{
		// The spec's bounds are 2,000 works and 60 pages; lowered here so the test stays small.
		{"work cap", 210, 60, []string{"200", "10"}, "210"},
		{"page cap", 2000, 1, []string{"200"}, "200"},
		{"end of the listing", 2000, 60, []string{"200", "200"}, "230"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oa.ResetRequests()
			st := paperStore(t)
			p := NewPapers(PapersOptions{Store: st, OpenAlexURL: oa.URL})
			p.citingCap, p.citingPages = tc.cap, tc.pages
			res, err := p.Sync(context.Background(), c, RunOptions{}, nil)
			if err != nil || len(res.Failed) != 0 {
				t.Fatal(err, res.Failed)
			}
			var perPage []string
			for i, r := range oa.Requests() {
				if r.Query.Has("cursor") {
					perPage = append(perPage, r.Query.Get("per-page"))
					if want := map[bool]string{true: "*", false: ""}[i == 2]; want != "" && r.Query.Get("cursor") != want {
						t.Errorf("first page's cursor %q", r.Query.Get("cursor"))
					}
				}
			}
			if !reflect.DeepEqual(perPage, tc.wantPerPage) {
				t.Errorf("pages asked %v, want %v", perPage, tc.wantPerPage)
			}
			got := published(t, st, "x", `SELECT count(*) FROM papers WHERE cites_doi = '10.1000/canon'`)
			if got[0][0] != tc.wantPapers {
				t.Errorf("%s citing papers stored, want %s", got[0][0], tc.wantPapers)
			}
			got = published(t, st, "x", `SELECT items_synced FROM sync_metadata WHERE source_name = 'citing_10.1000/canon'`)
			if got[0][0] != "230" {
				t.Errorf("citations counted %s, want 230 (the histogram's sum)", got[0][0])
			}
		})
	}
}

func TestPapersFailureIsolatedAndRetried(t *testing.T) {
	srv := newPaperServers(t)
	st := paperStore(t)
	clk := newPClock()
	c := hedCommunity()
	c.Citations.DOIs, c.Citations.Aliases = nil, nil
	c.Citations.Queries = []string{"hierarchical event", "annotation"}
	// The first query: a 429 with Retry-After, then a 500 with the key in no error; the second
	// query runs anyway.
	srv.oa.Queue(
		ingesttest.CannedReply{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: `{"error":"rate limited"}`},
		ingesttest.CannedReply{Status: 500, Body: `{"error":"Internal Server Error","message":"boom"}`},
	)
	res, err := srv.papers(st, clk, false).Sync(context.Background(), c, RunOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Source != "openalex:hierarchical event" {
		t.Fatalf("failed = %v, want the first query only", res.Failed)
	}
	msg := res.Failed[0].Err.Error()
	if strings.Contains(msg, "oa-key") || !strings.Contains(msg, "HTTP 500") {
		t.Errorf("error %q: want HTTP 500 and no key", msg)
	}
	if d := cmp.Diff([]time.Duration{7 * time.Second}, clk.Waits()); d != "" {
		t.Errorf("waits (-want +got):\n%s", d)
	}
	got := published(t, st, "hed", `SELECT source_name FROM sync_metadata`)
	if d := cmp.Diff([][]string{{"openalex:annotation"}}, got); d != "" {
		t.Errorf("only the clean query has its row (-want +got):\n%s", d)
	}
}

func TestRebuildAbstract(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index map[string][]int
		max   int
		want  string
	}{
		{"positions", map[string][]int{"Events": {0}, "are": {1}, "the": {2, 5}, "core": {3}, "of": {4}, "analysis": {6}}, 100,
			"Events are the core of the analysis"},
		{"gaps and order", map[string][]int{"b": {10}, "a": {3}, "c": {99}}, 100, "a b c"},
		{"cap keeps whole words", map[string][]int{"alpha": {0}, "beta": {1}, "gamma": {2}}, 12, "alpha beta"},
		{"empty", nil, 100, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RebuildAbstract(tc.index, tc.max); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPapersConcurrentCommunities(t *testing.T) {
	srv := newPaperServers(t)
	st := paperStore(t)
	p := srv.papers(st, newPClock(), true)
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := hedCommunity()
			c.ID = id
			if res, err := p.Sync(context.Background(), c, RunOptions{}, nil); err != nil || len(res.Failed) != 0 || res.Items != 9 {
				t.Errorf("%s: %v %+v", id, err, res)
			}
		}()
	}
	wg.Wait()
}

// An abstract_inverted_index of many small positions (a 16 MiB page holds millions) is rebuilt
// within the cap's memory: only the positions the cap can hold are kept while building.
func TestRebuildAbstractMemoryBoundedByTheCap(t *testing.T) {
	// "z" at 0, then a million positions dealt round to a, b, c, d, each list in descending
	// order.
	index := map[string][]int{"z": {0}}
	for k, w := range []string{"a", "b", "c", "d"} {
		ps := make([]int, 250_000)
		for j := range ps {
			ps[j] = 1 + k + 4*(len(ps)-1-j)
		}
		index[w] = ps
	}
	want := []string{"z"}
	for p := 1; p < 1000; p++ { // 1,999 characters: the 2,000 cap holds no more
		want = append(want, string("abcd"[(p-1)%4]))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := RebuildAbstract(index, maxAbstractChars)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
		t.Errorf("rebuilding allocated %d bytes for a %d-character abstract, want under 256 KiB", n, maxAbstractChars)
	}
	if got != strings.Join(want, " ") {
		t.Errorf("got %d characters %.30q…, want %.30q…", len(got), got, strings.Join(want, " "))
	}
}

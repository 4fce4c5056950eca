package ingest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/ingest/ingesttest"
)

func TestLiveSearch(t *testing.T) {
	oa := ingesttest.NewOpenAlex(t)
	oa.Add(
		ingesttest.Work{ID: "W1", Title: "Old event study", DOI: "10.1/old", PublicationDate: "2015-02-01", Abstract: "events of old"},
		ingesttest.Work{ID: "W2", Title: "Newest event study", PublicationDate: "2025-05-30",
			Abstract: "A long abstract about events "},
		ingesttest.Work{ID: "W3", Title: "Middle event study", DOI: "10.1/mid", PublicationDate: "2020-07-07"},
	)
	st := paperStore(t)
	p := NewPapers(PapersOptions{Store: st, OpenAlexURL: oa.URL, OpenAlexEmail: "a@example.org"})
	got, err := p.LiveSearch(context.Background(), "event study", 50)
	if err != nil {
		t.Fatal(err)
	}
	want := []LivePaper{
		{Source: "openalex", ExternalID: "W2", Title: "Newest event study", Abstract: "A long abstract about events", URL: "https://openalex.org/W2", Year: 2025},
		{Source: "openalex", ExternalID: "W3", Title: "Middle event study", URL: "https://doi.org/10.1/mid", Year: 2020, DOI: "10.1/mid"},
		{Source: "openalex", ExternalID: "W1", Title: "Old event study", Abstract: "events of old", URL: "https://doi.org/10.1/old", Year: 2015, DOI: "10.1/old"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("live results (-want +got):\n%s", d)
	}
	reqs := oa.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	q := reqs[0].Query
	// The limit is clamped to 20 (§4.1); newest first; the spec's select; the polite pool.
	for k, v := range map[string]string{"per-page": "20", "sort": "publication_date:desc", "search": "event study",
		"select": "id,title,abstract_inverted_index,publication_year,doi", "mailto": "a@example.org"} {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	wantText := "Most recent papers (live search):\n\n" +
		"- Newest event study (2025) [openalex]\n  [View Paper](https://openalex.org/W2)\n  Abstract: A long abstract about events\n\n" +
		"- Middle event study (2020) [openalex]\n  [View Paper](https://doi.org/10.1/mid)\n\n" +
		"- Old event study (2015) [openalex]\n  [View Paper](https://doi.org/10.1/old)\n  Abstract: events of old\n"
	if d := cmp.Diff(wantText, LiveText("event study", got, nil)); d != "" {
		t.Errorf("text (-want +got):\n%s", d)
	}

	// The search never touched the database; SaveLive stores the rows with their year.
	if _, ok := st.Info("hed"); ok {
		t.Fatal("the live search wrote a database")
	}
	if err := p.SaveLive(context.Background(), "hed", got); err != nil {
		t.Fatal(err)
	}
	rows := published(t, st, "hed", `SELECT external_id, created_at, url FROM papers ORDER BY external_id`)
	if d := cmp.Diff([][]string{{"W1", "2015", "https://doi.org/10.1/old"}, {"W2", "2025", "https://openalex.org/W2"}, {"W3", "2020", "https://doi.org/10.1/mid"}}, rows); d != "" {
		t.Errorf("saved (-want +got):\n%s", d)
	}
}

func TestLiveSearchFailures(t *testing.T) {
	const none = "No recent papers found online for 'x y'. Try rephrasing, or use the local paper search."
	oa := ingesttest.NewOpenAlex(t)
	p := NewPapers(PapersOptions{Store: paperStore(t), OpenAlexURL: oa.URL})

	// A 429 is not waited out: the live search has 15 seconds in all.
	oa.Queue(ingesttest.CannedReply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{}`})
	res, err := p.LiveSearch(context.Background(), "x y", 5)
	if err == nil || LiveText("x y", res, err) != none {
		t.Errorf("429: %v, %v", res, err)
	}
	if n := len(oa.Requests()); n != 1 {
		t.Errorf("%d requests after a 429, want 1", n)
	}
	// Nothing found.
	res, err = p.LiveSearch(context.Background(), "x y", 5)
	if err != nil || LiveText("x y", res, err) != none {
		t.Errorf("no hits: %v, %v", res, err)
	}
	// An empty query asks nothing.
	if res, err := p.LiveSearch(context.Background(), "   ", 5); res != nil || err != nil || len(oa.Requests()) != 2 {
		t.Errorf("empty query: %v, %v, %d requests", res, err, len(oa.Requests()))
	}

	// A server that never answers: the caller's deadline (the tool's own is 15 s) ends it.
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(hang) })
	p = NewPapers(PapersOptions{Store: paperStore(t), OpenAlexURL: slow.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err = p.LiveSearch(ctx, "x y", 5)
	if err == nil || LiveText("x y", res, err) != none {
		t.Errorf("hanging server: %v, %v", res, err)
	}
}

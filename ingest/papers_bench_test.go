package ingest

import (
	"context"
	"fmt"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// The papers sync's throughput against the local fake OpenAlex, with its baseline in the
// same command:
//
//	go test -run '^$' -bench 'Papers' -benchtime 3x ./ingest/
//
// BenchmarkPapersSync lists the 2,000 works citing a DOI (ten pages of 200, the counts, the
// lookups) and stores them; BenchmarkPapersStore writes the same rows through the same Tx
// calls, one transaction per page, with nothing fetched.

func BenchmarkPapersSync(b *testing.B) {
	oa := ingesttest.NewOpenAlex(b)
	oa.Add(ingesttest.Work{ID: "W1", Title: "Canonical", DOI: "10.1000/canon", PublicationDate: "2010-01-01"})
	for i := range maxCitingPapers {
		oa.Add(ingesttest.Work{ID: fmt.Sprintf("W%d", 10000+i), Title: fmt.Sprintf("Citing work number %d on event annotation", i),
			DOI: fmt.Sprintf("10.5555/c%d", i), PublicationDate: fmt.Sprintf("%d-%02d-01", 2011+i%14, 1+i%12), Cites: []string{"W1"}})
	}
	c := &config.Community{ID: "bench", Citations: &config.Citations{DOIs: []string{"10.1000/canon"}}}
	items := 0
	for b.Loop() {
		p := NewPapers(PapersOptions{Store: paperStore(b), OpenAlexURL: oa.URL})
		res, err := p.Sync(context.Background(), c, RunOptions{}, nil)
		if err != nil || len(res.Failed) != 0 {
			b.Fatal(err, res.Failed)
		}
		items += res.Items
	}
	b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "papers/s")
}

func BenchmarkPapersStore(b *testing.B) {
	var recs []knowledge.Paper
	for i := range maxCitingPapers {
		recs = append(recs, knowledge.Paper{Source: "openalex", ExternalID: fmt.Sprintf("W%d", 10000+i),
			Title: fmt.Sprintf("Citing work number %d on event annotation", i), URL: fmt.Sprintf("https://doi.org/10.5555/c%d", i),
			CreatedAt: fmt.Sprintf("%d-%02d-01", 2011+i%14, 1+i%12), CitesDOI: "10.1000/canon"})
	}
	items := 0
	for b.Loop() {
		st := paperStore(b)
		for k := 0; k < len(recs); k += openAlexPerPage {
			n, err := updateCounted(context.Background(), st, "bench", func(tx *knowledge.Tx) (int, error) {
				return tx.UpsertPapers(recs[k:min(k+openAlexPerPage, len(recs))])
			})
			if err != nil {
				b.Fatal(err)
			}
			items += n
		}
	}
	b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "papers/s")
}

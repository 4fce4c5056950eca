package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// BenchmarkGitHubSync is the GitHub sync's throughput against the local fake API (a first,
// full listing of 2,000 items: 20 pages, JSON decoded, bodies cleaned, one transaction a
// page) beside the baseline of the same rows written straight into the store, page by page.
//
//	go test ./ingest -run '^$' -bench GitHubSync -benchtime 5x
func BenchmarkGitHubSync(b *testing.B) {
	const n = 2000
	api := ingesttest.NewGitHub(b)
	api.SetRateLimit(1<<30, 1<<30, time.Now().Add(time.Hour))
	items := make([]knowledge.GitHubItem, 0, n)
	for i := 1; i <= n; i++ {
		body := fmt.Sprintf("Running the validator on sidecar %d gives an error at line %d.\n\n```\nhed.validate(%d)\n```\n<!-- template -->", i, i*7, i)
		api.Add(ghRepoName, ingesttest.Issue{Number: i, Title: fmt.Sprintf("Sidecar %d fails validation", i), Body: body, PR: i%3 == 0})
		items = append(items, knowledge.GitHubItem{Repo: ghRepoName, Type: "issue", Number: i, Title: "t", Body: body, Status: "open", URL: "u", CreatedAt: "c"})
	}
	b.Run("api", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			store, err := knowledge.OpenStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			src, _ := NewGitHub(GitHubOptions{Store: store, BaseURL: api.URL})
			b.StartTimer()
			res, err := src.Sync(context.Background(), ghCommunity(), RunOptions{}, nil)
			if err != nil || res.Items != n {
				b.Fatalf("%v, %+v", err, res)
			}
			b.StopTimer()
			store.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
	})
	b.Run("baseline-store-only", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			store, err := knowledge.OpenStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for p := 0; p < n; p += githubPerPage {
				err := store.Update(context.Background(), "hed", func(ctx context.Context, tx *knowledge.Tx) error {
					_, err := tx.UpsertGitHubItems(items[p:min(p+githubPerPage, n)])
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			store.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
	})
}

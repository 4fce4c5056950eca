package ingest

import (
	"context"
	"fmt"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// BenchmarkDiscourseSync is the Discourse sync's throughput against the local fake forum (a
// first run over 300 topics: 10 listing pages, one request per topic, cooked HTML to
// Markdown; no polite pause) beside the baseline of the same rows written straight into the
// store, a listing page (30 topics) per transaction.
//
//	go test ./ingest -run '^$' -bench DiscourseSync -benchtime 5x
func BenchmarkDiscourseSync(b *testing.B) {
	const n = 300
	forum := ingesttest.NewDiscourse(b)
	forum.AddCategory(ingesttest.DiscourseCategory{ID: 5, Name: "Support", Slug: "support"})
	var rows []knowledge.Topic
	for i := 1; i <= n; i++ {
		cooked := fmt.Sprintf("<p>I load dataset %d with <code>pop_loadset</code> and get:</p><pre><code>Error %d</code></pre><p>What is wrong?</p>", i, i)
		forum.AddTopic(ingesttest.DiscourseTopic{ID: i, Title: fmt.Sprintf("Loading dataset %d fails", i), CategoryID: 5,
			Posts: []ingesttest.DiscoursePost{{Cooked: cooked}, {Cooked: "<p>Check the path.</p>", Likes: 2}}})
		rows = append(rows, knowledge.Topic{ForumURL: forum.URL, TopicID: i, Title: "t", FirstPost: cooked, AcceptedAnswer: "a", URL: "u", CreatedAt: "c"})
	}
	c := &config.Community{ID: "eeglab", Discourse: []config.Discourse{{URL: forum.URL}}}
	client := knowledge.NewGuardedClient(knowledge.GuardOptions{AllowLoopback: true})
	b.Run("api", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			store, err := knowledge.OpenStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			src, _ := NewDiscourse(DiscourseOptions{Store: store, Client: client})
			src.Pause = 0
			b.StartTimer()
			res, err := src.Sync(context.Background(), c, RunOptions{}, nil)
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
			for p := 0; p < n; p += 30 {
				err := store.Update(context.Background(), "eeglab", func(ctx context.Context, tx *knowledge.Tx) error {
					_, err := tx.UpsertTopics(rows[p:min(p+30, n)])
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

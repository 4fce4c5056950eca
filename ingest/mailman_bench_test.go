package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// BenchmarkMailmanSync is the Mailman sync's throughput against the local fake archive (a
// first run over 1,000 messages in two yearly volumes: index, thread pages and one page per
// message, each parsed and cached; no polite delay), a rebuild from the disk cache (a new
// database, nothing fetched but the index and the current volume), and the baseline of the
// same rows written straight into the store, 100 a transaction.
//
//	go test ./ingest -run '^$' -bench MailmanSync -benchtime 5x
func BenchmarkMailmanSync(b *testing.B) {
	const n = 1000
	arch := ingesttest.NewMailman(b, "eeglablist")
	var rows []knowledge.Message
	start := time.Now().AddDate(-1, 0, 0)
	for i := range n {
		body := fmt.Sprintf("Dear list,\nwhen I run ICA on subject %d the components look noisy.\nSee https://example.org/run/%d\nThanks", i, i)
		id := arch.Post(ingesttest.MailmanMessage{Subject: fmt.Sprintf("ICA on subject %d", i/4), Body: body, Date: start.Add(time.Duration(i) * 8 * time.Hour)})
		rows = append(rows, knowledge.Message{List: "eeglablist", MessageID: id, ThreadID: id, Subject: "s", Date: "d", Body: body, URL: "u", Year: 2025})
	}
	c := &config.Community{ID: "eeglab", Mailman: []config.Mailman{{ListName: "eeglablist", BaseURL: arch.URL}}}
	client := knowledge.NewGuardedClient(knowledge.GuardOptions{AllowLoopback: true})
	run := func(b *testing.B, cache func() string) {
		if warm := cache(); warm == cache() {
			// A shared cache is filled before the timing starts.
			store, err := knowledge.OpenStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			src, _ := NewMailman(MailmanOptions{Store: store, Client: client, CacheDir: warm})
			src.Delay = 0
			if _, err := src.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
				b.Fatal(err)
			}
			store.Close()
		}
		for b.Loop() {
			b.StopTimer()
			store, err := knowledge.OpenStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			src, _ := NewMailman(MailmanOptions{Store: store, Client: client, CacheDir: cache()})
			src.Delay = 0
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
	}
	b.Run("api", func(b *testing.B) { run(b, func() string { return filepath.Join(b.TempDir(), "cache") }) })
	shared := filepath.Join(b.TempDir(), "cache")
	b.Run("from-cache", func(b *testing.B) { run(b, func() string { return shared }) })
	b.Run("baseline-store-only", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			store, err := knowledge.OpenStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for p := 0; p < n; p += mailmanBatch {
				err := store.Update(context.Background(), "eeglab", func(ctx context.Context, tx *knowledge.Tx) error {
					_, err := tx.UpsertMessages(rows[p:min(p+mailmanBatch, n)])
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

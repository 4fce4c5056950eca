package main

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkChatTurn measures the server's own overhead per chat turn over loopback HTTP, with
// the scripted model (so no model time is included), beside GET /health on the same server as
// the baseline. It reports the time to the first event and per event.
func BenchmarkChatTurn(b *testing.B) {
	ts := startServer(b, "--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0")
	client := ts.Client()
	b.Run("baseline=GET-health", func(b *testing.B) {
		for b.Loop() {
			resp, err := client.Get(ts.URL + "/health")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("chat", func(b *testing.B) {
		var first, total time.Duration
		events := 0
		for b.Loop() {
			start := time.Now()
			resp, err := client.Post(ts.URL+"/bids/chat", "application/json", strings.NewReader(`{"message":"hello"}`))
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(resp.Body)
			n := 0
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					if n == 0 {
						first += time.Since(start)
					}
					n++
				}
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n < 3 {
				b.Fatalf("status %d, %d events", resp.StatusCode, n)
			}
			total += time.Since(start)
			events += n
		}
		b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "ns-to-first-event")
		b.ReportMetric(float64(total.Nanoseconds())/float64(events), "ns/event")
	})
}

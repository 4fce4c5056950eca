package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// BenchmarkChatNewSessions measures chats that each start a new session, sent all at once: 1,100
// at a time (past the in-memory store's cap of 1,000 sessions per community, so sessions are
// evicted while others are mid-turn) beside 100 at a time, on a server whose store is already
// at its cap. It reports the time per chat.
func BenchmarkChatNewSessions(b *testing.B) {
	for _, n := range []int{100, 1100} {
		name := fmt.Sprintf("concurrent=%d", n)
		if n == 100 {
			name = "baseline=" + name
		}
		b.Run(name, func(b *testing.B) {
			ts := startServer(b, "--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
			chat := func() error {
				resp, err := client.Post(ts.URL+"/bids/chat", "application/json", strings.NewReader(`{"message":"hello"}`))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"event": "done"`) && !strings.Contains(string(body), `"event":"done"`) {
					return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
				}
				return nil
			}
			batch := func() error {
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for range n {
					wg.Go(func() {
						if err := chat(); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				return <-errs
			}
			for range 1000 / n { // fill the store to its cap first
				if err := batch(); err != nil {
					b.Fatal(err)
				}
			}
			chats := 0
			for b.Loop() {
				if err := batch(); err != nil {
					b.Fatal(err)
				}
				chats += n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(chats), "ns/chat")
		})
	}
}

// BenchmarkValidate1000 runs assistant validate over 1,000 copies of the shipped NEMAR
// community (each with its overlay, wheel and two preludes): without the Python engine (the
// baseline), with it, and with it where every copy's preludes differ (a comment with the copy's
// number), so that no compile check can be answered from memory.
func BenchmarkValidate1000(b *testing.B) {
	engine := engineDir(b)
	for _, tc := range []struct {
		name     string
		engine   bool
		distinct bool
	}{{"baseline=no-engine", false, false}, {"engine", true, false}, {"engine-distinct-preludes", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := nemarCopies(b, 1000, tc.distinct)
			env := map[string]string{}
			if tc.engine {
				env["ASSISTANT_ENGINE_DIR"] = engine
			}
			for b.Loop() {
				var stderr strings.Builder
				if code := runValidate(b.Context(), []string{dir}, func(k string) string { return env[k] }, io.Discard, &stderr); code != 0 {
					b.Fatalf("validate: exit %d\n%s", code, stderr.String())
				}
			}
		})
	}
}

// nemarCopies writes n copies of communities/nemar, ids nemar0000…, under a temporary
// directory; with distinct, each copy's preludes start with a comment naming it.
func nemarCopies(b *testing.B, n int, distinct bool) string {
	b.Helper()
	root := b.TempDir()
	src := "../../communities/nemar"
	cfg, err := os.ReadFile(filepath.Join(src, "config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("nemar%04d", i)
		dst := filepath.Join(root, id)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			b.Fatal(err)
		}
		c := strings.Replace(string(cfg), "\nid: nemar\n", "\nid: "+id+"\n", 1)
		if distinct {
			for _, dep := range []string{"production", "develop"} {
				c = strings.Replace(c, "      "+dep+": |\n        import osa\n", "      "+dep+": |\n        # "+id+"\n        import osa\n", 1)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, "config.yaml"), []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/store/storetest"
)

// TestTwoReplicasShareRedis: a reply started on one server is resumed on another, and two
// concurrent resumes of one call are accepted exactly once.
func TestTwoReplicasShareRedis(t *testing.T) {
	url := storetest.RedisURL(t)
	prefix := fmt.Sprintf("test-%d:", time.Now().UnixNano())
	a := startServer(t, "--redis-url", url, "--redis-prefix", prefix)
	b := startServer(t, "--redis-url", url, "--redis-prefix", prefix)

	_, evs := a.chat(t, "nemar", map[string]any{"message": "```python\nprint('hi')\n```", "client_tools": declared})
	last := evs[len(evs)-1]
	if last["event"] != "tool_request" {
		t.Fatalf("events %q", compactKinds(evs))
	}
	sid, callID := last["session_id"].(string), last["call_id"].(string)
	_, evs = b.resume(t, "nemar", map[string]any{"session_id": sid, "result": map[string]any{"call_id": callID, "stdout": "hi\n"}})
	if got := compactKinds(evs); got != "session content+ done" || !strings.Contains(evs[len(evs)-1]["content"].(string), "hi") {
		t.Fatalf("resume on the other replica: %q", got)
	}

	// Park another call, then resume it from both replicas at once.
	_, evs = b.chat(t, "nemar", map[string]any{"message": "```python\nprint(2)\n```", "session_id": sid, "client_tools": declared})
	callID = evs[len(evs)-1]["call_id"].(string)
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			srv := a
			if i%2 == 1 {
				srv = b
			}
			body := jsonBody(map[string]any{"session_id": sid, "result": map[string]any{"call_id": callID, "stdout": "2\n"}})
			req, _ := http.NewRequest("POST", srv.URL+"/nemar/chat/resume", body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			codes[i] = resp.StatusCode
		}(i)
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
		default:
			t.Errorf("unexpected status %d", c)
		}
	}
	if ok != 1 {
		t.Fatalf("statuses %v: want exactly one 200", codes)
	}
	// The session goes on: the offline model answers a plain question (from the community's
	// documentation), with no call left parked.
	_, evs = a.chat(t, "nemar", map[string]any{"message": "done?", "session_id": sid})
	if got := compactKinds(evs); !strings.HasPrefix(got, "session ") || !strings.HasSuffix(got, " done") || strings.Contains(got, "tool_request") {
		t.Fatalf("after the race: %q", got)
	}
}

// TestChatRacingResumeKeepsHistory races a /chat on one replica against a /chat/resume of the
// session's parked call on another, 100 times: whichever wins, every tool_use in the stored
// history is followed at once by exactly one result for it, which the model APIs require.
func TestChatRacingResumeKeepsHistory(t *testing.T) {
	url := storetest.RedisURL(t)
	prefix := fmt.Sprintf("test-race-%d:", time.Now().UnixNano())
	off := "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"
	a := startServer(t, "--redis-url", url, "--redis-prefix", prefix, "--rate-limits", off)
	b := startServer(t, "--redis-url", url, "--redis-prefix", prefix, "--rate-limits", off)
	st, err := store.NewRedis(context.Background(), store.RedisOptions{URL: url, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	post := func(srv *testServer, path string, body map[string]any) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+path, jsonBody(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var mu sync.Mutex
	outcomes := map[string]int{}
	// Ten sessions at a time, ten trials each: the load widens the window between the two
	// requests' store writes, as two busy replicas do.
	var workers sync.WaitGroup
	for w := range 10 {
		workers.Go(func() {
			for trial := range 10 {
				_, evs := a.chat(t, "nemar", map[string]any{"message": "```python\nprint(1)\n```", "client_tools": declared})
				last := evs[len(evs)-1]
				if last["event"] != "tool_request" {
					t.Errorf("worker %d trial %d: events %q", w, trial, compactKinds(evs))
					return
				}
				sid, callID := last["session_id"].(string), last["call_id"].(string)
				var wg sync.WaitGroup
				var resumeCode, chatCode int
				start := make(chan struct{})
				wg.Go(func() {
					<-start
					resumeCode, _ = post(b, "/nemar/chat/resume", map[string]any{"session_id": sid, "result": map[string]any{"call_id": callID, "stdout": "1\n"}})
				})
				wg.Go(func() {
					<-start
					chatCode, _ = post(a, "/nemar/chat", map[string]any{"message": "never mind", "session_id": sid, "stream": true})
				})
				close(start)
				wg.Wait()
				mu.Lock()
				outcomes[fmt.Sprintf("resume %d, chat %d", resumeCode, chatCode)]++
				mu.Unlock()
				raw, err := st.History(context.Background(), "nemar", sid)
				if err != nil {
					t.Error(err)
					return
				}
				if problem := checkToolPairs(raw); problem != "" {
					t.Errorf("worker %d trial %d: %s\nhistory: %s", w, trial, problem, raw)
					return
				}
			}
		})
	}
	workers.Wait()
	t.Logf("outcomes: %v", outcomes)
}

// checkToolPairs returns what is wrong with a history's tool calls, or "".
func checkToolPairs(raw []json.RawMessage) string {
	type block struct { // the stored form: tool_use and tool_result both carry tool_use_id
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
	}
	type message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	msgs := make([]message, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &msgs[i]); err != nil {
			return fmt.Sprintf("message %d: %v", i, err)
		}
	}
	for i, m := range msgs {
		var uses []string
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b.ToolUseID)
			}
		}
		var results []string
		if i > 0 {
			for _, b := range msgs[i-1].Content {
				if b.Type == "tool_use" {
					results = append(results, b.ToolUseID)
				}
			}
		}
		var got []string
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				got = append(got, b.ToolUseID)
			}
		}
		if !slices.Equal(got, results) {
			return fmt.Sprintf("message %d (%s) answers tool calls %v, the message before it made %v", i, m.Role, got, results)
		}
		if len(uses) > 0 && (i+1 == len(msgs) || msgs[i+1].Role != "user") {
			return fmt.Sprintf("message %d's tool calls %v have no result after them", i, uses)
		}
	}
	return ""
}

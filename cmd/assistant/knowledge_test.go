package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/knowledge"
)

// TestHealthCommunities: GET /health/communities (admin key) reports every community as
// knowledge.md §7.4 gives it, with each document's state (the shipped guides read from their
// folders and indexed, hed's remote documents failing here, where there is no network) and
// the knowledge store's file; /metrics counts the same.
func TestHealthCommunities(t *testing.T) {
	ts := startServer(t, "--admin-key", "sesame")
	if r := ts.do(t, "GET", "/health/communities", nil); r.StatusCode != 401 {
		t.Errorf("without the key: %d", r.StatusCode)
	}
	type doc struct {
		URL        string  `json:"url"`
		HasContent bool    `json:"has_content"`
		Sections   int     `json:"sections"`
		Bytes      int     `json:"bytes"`
		FetchedAt  *string `json:"fetched_at"`
		LastError  *string `json:"last_error"`
	}
	type entry struct {
		Status       string   `json:"status"`
		APIKey       string   `json:"api_key"`
		CORSOrigins  int      `json:"cors_origins"`
		Documents    int      `json:"documents"`
		SyncAgeHours *float64 `json:"sync_age_hours"`
		Warnings     []string `json:"warnings"`
		Docs         *struct {
			Preloaded          int `json:"preloaded"`
			PreloadChars       int `json:"preload_chars"`
			PreloadBudgetChars int `json:"preload_budget_chars"`
			PreloadFailed      []struct {
				URL, Error string
			} `json:"preload_failed"`
			Documents []doc `json:"documents"`
			Store     *struct {
				Bytes int64 `json:"bytes"`
			} `json:"store"`
		} `json:"docs"`
	}
	var got map[string]entry
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := ts.do(t, "GET", "/health/communities", nil, "X-API-Key", "sesame")
		got = nil
		if err := json.Unmarshal(readAll(t, r), &got); err != nil || r.StatusCode != 200 {
			t.Fatalf("%d %v", r.StatusCode, err)
		}
		// The guides are read and indexed in the background, and hed's remote documents fail.
		ready := true
		for _, id := range []string{"bids", "hed", "nemar"} {
			e := got[id]
			ready = ready && e.Docs != nil && e.Docs.Store != nil && len(e.Docs.Documents) > 0 && e.Docs.Documents[0].Sections > 0
		}
		if (ready && len(got["hed"].Docs.PreloadFailed) > 0) || time.Now().After(deadline) {
			break
		}
	}
	if len(got) != 3 {
		t.Fatalf("communities %v", got)
	}
	for id, e := range got {
		if e.Status != "degraded" || e.APIKey != "using_platform" || e.Documents == 0 || e.SyncAgeHours != nil || e.Docs == nil ||
			!strings.HasPrefix(e.Warnings[0], "No community-specific API key configured; using shared platform key.") {
			t.Errorf("%s: %+v", id, e)
			continue
		}
		guide := e.Docs.Documents[0]
		if !strings.HasSuffix(guide.URL, "/communities/"+id+"/docs/guide.md") || !guide.HasContent || guide.Sections < 5 || guide.Bytes == 0 || guide.FetchedAt == nil || guide.LastError != nil {
			t.Errorf("%s's guide: %+v", id, guide)
		}
		if e.Docs.Preloaded < 1 || e.Docs.PreloadChars == 0 || e.Docs.PreloadBudgetChars != 150000 || e.Docs.Store == nil || e.Docs.Store.Bytes == 0 {
			t.Errorf("%s's docs: %+v", id, e.Docs)
		}
	}
	hed := got["hed"]
	if len(hed.Docs.PreloadFailed) != 1 || !strings.Contains(hed.Docs.PreloadFailed[0].URL, "hed-specification") || !strings.HasPrefix(hed.Docs.PreloadFailed[0].Error, "Request failed") ||
		!strings.Contains(strings.Join(hed.Warnings, "\n"), "Preloaded document unavailable: HED specification (") {
		t.Errorf("hed: %+v", hed)
	}
	metrics := string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
	for _, want := range []string{`assistant_knowledge_documents{community="bids"} 1`, `assistant_knowledge_fetch_failures_total{community="hed"}`, `assistant_knowledge_sections{community="nemar"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestKnowledgeDocsAdapter: the chat's view of the knowledge store warns of a preload the
// budget moves once per documentation generation (a refresh that changes nothing is not a new
// one), and a retrieved document's passage is cut(content, 50000) of the whole document.
func TestKnowledgeDocsAdapter(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "demo")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	long := "# Long\n\n" + strings.Repeat("word ", 14000) // 70,000 characters
	for name, body := range map[string]string{"a.md": "# A\n\nShort guide.", "long.md": long} {
		if err := os.WriteFile(filepath.Join(folder, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	lib, err := knowledge.New(knowledge.Options{DataDir: filepath.Join(dir, "data"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	if err := lib.Apply([]knowledge.Community{{ID: "demo", Name: "Demo", Folder: folder, Docs: []knowledge.Doc{
		{Title: "Long", URL: "https://example.org/long", SourcePath: "long.md", Preload: true},
		{Title: "A", URL: "https://example.org/a", SourcePath: "a.md", Preload: true},
	}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := lib.Ready(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	k := newKnowledgeDocs(lib, 100, log) // a budget the first preload takes whole
	for range 3 {
		if _, ok := k.Docs("demo"); !ok {
			t.Fatal("no docs")
		}
		if err := lib.Refresh(ctx, "demo"); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "preload budget exceeded"); n != 1 {
		t.Errorf("the moved preload was logged %d times, want once:\n%s", n, logs.String())
	}
	res := k.Retrieve(ctx, "demo", "https://example.org/long")
	if len(res.Passages) != 1 || utf8.RuneCountInString(res.Passages[0].Text) != 50003 || !strings.HasSuffix(res.Passages[0].Text, "...") {
		t.Errorf("the long document's passage: %d passages, %d characters", len(res.Passages), utf8.RuneCountInString(res.Passages[0].Text))
	}
}

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/chat/chattest"
)

// docsCommunity is a community whose documentation lives at docs.example.org, which the test
// points at a local server with --knowledge-resolve. Its prompt template shows the two doc
// sections and the page section, so the test can read them byte for byte.
const docsCommunity = `id: docsdemo
name: DocsDemo
description: Answers from its documentation.
default_model: anthropic/claude-haiku-4-5
enable_page_context: true
cors_origins: [https://docs.example.org]
system_prompt: "You are {name}.\n<<{preloaded_docs_section}>>\n<<{available_docs_section}>>\n{page_context_section}"
documentation:
  - title: Guide
    url: https://docs.example.org/guide/
    source_url: https://docs.example.org/guide.md
    preload: true
    type: markdown
  - title: Reference
    url: https://docs.example.org/reference.html
    description: The full reference.
  - title: Moved
    url: https://docs.example.org/moved.html
  - title: Huge
    url: https://docs.example.org/huge.html
`

// guideMarkdown is the preloaded document, already as the store cleans it.
const guideMarkdown = "# Guide\n\nInstall the tools with the installer.\n\n## Usage\n\nRun `tool --help` to list the options."

const referenceHTML = `<!DOCTYPE html><html><head><title>Reference</title></head><body>
<nav>Home | Other</nav>
<main><h1 id="reference">Reference</h1><p>Every option of the tool.</p>
<h2 id="colours">Colours</h2><p>The tool paints widgets in twelve colours, chosen with <code>--colour</code>.</p></main>
<footer>Footer text</footer></body></html>`

// docsSite plays docs.example.org: the guide, the reference, a redirect to a private address,
// a 20 MB page and a PDF; it counts the bytes it managed to send of the large page.
type docsSite struct {
	*httptest.Server
	hugeSent atomic.Int64
}

func newDocsSite(t *testing.T) *docsSite {
	s := &docsSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("/guide.md", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"g1"`)
		if r.Header.Get("If-None-Match") == `"g1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprint(w, guideMarkdown)
	})
	mux.HandleFunc("/reference.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, referenceHTML)
	})
	mux.HandleFunc("/moved.html", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://10.0.0.1/internal", http.StatusFound)
	})
	mux.HandleFunc("/huge.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := bytes.Repeat([]byte("<p>x</p>"), 8192)
		for range 20 << 20 / len(chunk) {
			n, err := w.Write(chunk)
			s.hugeSent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/manual.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, "%PDF-1.7 not a page")
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// systemPrompt is a model request's system prompt as text.
func systemPrompt(req chattest.Request) string {
	switch v := req.Body["system"].(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, blk := range v {
			if m, ok := blk.(map[string]any); ok {
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// TestDocumentationEndToEnd (issue 23's "Done when") through the real binary: documents are
// fetched through --knowledge-resolve from a local server playing the documentation site,
// converted and indexed in the background; the system prompt the fake Anthropic API receives
// holds the spec's two sections byte for byte; retrieve_ refuses an unlisted URL; search_
// finds a section and links it; fetch_current_page refuses a page that is not HTML; /ask
// answers; a redirect to a private address and a 20 MB page are refused (and the large page is
// not read past its cap); a second start with the site down serves the documents from the
// cache.
func TestDocumentationEndToEnd(t *testing.T) {
	site := newDocsSite(t)
	root := t.TempDir()
	dir := filepath.Join(root, "communities", "docsdemo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(docsCommunity), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	var results []string // the tool results the model read, in order
	fake := chattest.NewAnthropic(func(n int, req chattest.Request) chattest.Reply {
		if msgs := req.Messages(); len(msgs) > 0 {
			b, _ := json.Marshal(msgs[len(msgs)-1])
			results = append(results, string(b))
		}
		switch {
		case req.Contains("retrieve please") && !req.Contains("tool_result"):
			return chattest.Reply{ToolUses: []chattest.ToolUse{{ID: "toolu_r", Name: "retrieve_docsdemo_docs", Input: `{"url":"https://evil.example/secrets"}`}}}
		case req.Contains("search please") && !req.Contains("tool_result"):
			return chattest.Reply{ToolUses: []chattest.ToolUse{{ID: "toolu_s", Name: "search_docsdemo_docs", Input: `{"query":"which colours does it paint"}`}}}
		case req.Contains("page please") && !req.Contains("tool_result"):
			return chattest.Reply{ToolUses: []chattest.ToolUse{{ID: "toolu_p", Name: "fetch_current_page", Input: `{}`}}}
		}
		return chattest.Reply{Text: []string{"Answered."}}
	})
	t.Cleanup(fake.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(site.URL, "http://"))
	env := []string{"ANTHROPIC_API_KEY=sk-ant-test", "ANTHROPIC_BASE_URL=" + fake.URL, "ASSISTANT_DATA_DIR=" + data}
	args := []string{"--communities", filepath.Dir(dir), "--knowledge-allow-loopback", "--knowledge-resolve", "docs.example.org=" + host + ":" + port,
		"--admin-key", "sesame", "--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"}
	p := serve(t, env, args...)

	// Wait for the first round of fetches: the guide and the reference indexed, the redirect
	// and the large page failed.
	docs := waitDocs(t, p, func(d map[string]docHealth) bool {
		return d["https://docs.example.org/guide/"].Sections > 0 && d["https://docs.example.org/reference.html"].Sections > 0 &&
			d["https://docs.example.org/moved.html"].LastError != nil && d["https://docs.example.org/huge.html"].LastError != nil
	})
	if e := *docs["https://docs.example.org/moved.html"].LastError; e != "Request failed: destination not allowed" {
		t.Errorf("the redirect to a private address: %q", e)
	}
	if e := *docs["https://docs.example.org/huge.html"].LastError; e != "Document too large (over 4 MiB)" {
		t.Errorf("the 20 MB page: %q", e)
	}
	if sent := site.hugeSent.Load(); sent > 12<<20 {
		t.Errorf("the server sent %d bytes of the 20 MB page: it was read past the cap", sent)
	}

	ask := func(path string, body map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, p.url+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://docs.example.org")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, out)
		}
		return string(out)
	}
	ask("/docsdemo/chat", map[string]any{"message": "retrieve please", "session_id": "kn-1"})
	ask("/docsdemo/chat", map[string]any{"message": "search please", "session_id": "kn-2"})
	ask("/docsdemo/chat", map[string]any{"message": "page please", "session_id": "kn-3",
		"page_context": map[string]any{"url": "https://docs.example.org/manual.pdf", "title": "Manual"}})
	answer := ask("/docsdemo/ask", map[string]any{"question": "What is it?"})

	reqs := fake.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d model requests, want 7", len(reqs))
	}
	wantPreloaded := "## Preloaded Documents\n\nThe following documents are already available:\n\n---\n\n### Guide\nSource: https://docs.example.org/guide/\n\n" + guideMarkdown + "\n"
	wantAvailable := "## Available Documents\n\nUse retrieve_docs to fetch these when needed:\n\n" +
		"- **Reference**: `https://docs.example.org/reference.html`\n  The full reference.\n" +
		"- **Moved**: `https://docs.example.org/moved.html`\n" +
		"- **Huge**: `https://docs.example.org/huge.html`"
	wantSystem := "You are DocsDemo.\n<<" + wantPreloaded + ">>\n<<" + wantAvailable + ">>\n"
	if got := systemPrompt(reqs[0]); !strings.HasPrefix(got, wantSystem) {
		t.Errorf("system prompt:\n%q\nwant it to start with:\n%q", got, wantSystem)
	}
	if systemPrompt(reqs[2]) != systemPrompt(reqs[0]) {
		t.Error("two requests without page context got different system prompts")
	}
	checks := []struct {
		i    int
		want string
	}{
		{1, "Document not found in DocsDemo registry: https://evil.example/secrets"},
		{3, `"title":"Reference \u003e Colours"`},
		{3, "https://docs.example.org/reference.html#colours"},
		{5, "Error: URL returned non-HTML content: application/pdf"},
	}
	for _, c := range checks {
		if !strings.Contains(results[c.i], c.want) {
			t.Errorf("model request %d lacks %q:\n%s", c.i, c.want, results[c.i])
		}
	}
	if !strings.Contains(answer, `"answer":"Answered."`) || !strings.Contains(answer, `"citations":[]`) {
		t.Errorf("/ask: %s", answer)
	}

	// A second start with the site down: the documents come from the cache at once.
	p.stop(t)
	site.Close()
	q := serve(t, env, args...)
	waitDocs(t, q, func(d map[string]docHealth) bool {
		return d["https://docs.example.org/guide/"].HasContent && d["https://docs.example.org/reference.html"].HasContent
	})
	ask2 := func() string {
		b, _ := json.Marshal(map[string]any{"question": "again?"})
		req, _ := http.NewRequest(http.MethodPost, q.url+"/docsdemo/ask", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://docs.example.org")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Status
	}
	if st := ask2(); !strings.HasPrefix(st, "200") {
		t.Fatalf("/ask after the restart: %s", st)
	}
	reqs = fake.Requests()
	if got := systemPrompt(reqs[len(reqs)-1]); !strings.HasPrefix(got, wantSystem) {
		t.Errorf("after a restart with the site down, the system prompt:\n%q", got)
	}
}

// docHealth is one document's state in GET /health/communities.
type docHealth struct {
	URL        string  `json:"url"`
	HasContent bool    `json:"has_content"`
	Sections   int     `json:"sections"`
	LastError  *string `json:"last_error"`
}

// waitDocs polls GET /health/communities until ready holds for docsdemo's documents.
func waitDocs(t *testing.T, p *process, ready func(map[string]docHealth) bool) map[string]docHealth {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, p.url+"/health/communities", nil)
		req.Header.Set("X-API-Key", "sesame")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]struct {
			Docs *struct {
				Documents []docHealth `json:"documents"`
			} `json:"docs"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]docHealth{}
		if d := body["docsdemo"].Docs; d != nil {
			for _, doc := range d.Documents {
				got[doc.URL] = doc
			}
		}
		if ready(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the documents did not reach the state the test waits for: %+v\nserver:\n%s", got, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

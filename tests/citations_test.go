package tests

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/chat/chattest"
)

// The community of the citation tests: one guide in its folder, which the server indexes.
const (
	citeGuideURL = "https://docs.example.org/cite/guide.html"
	citeOrigin   = "https://site.example"
	citeAdminKey = "admin-key-for-citations"
	citeGuide    = "# Cite guide\n\nThe guide of the citation test.\n\n## How are sources shown?\n\nEvery answer lists its sources under the reply.\nEach marker links to its page.\n"
)

func citeCommunity(t *testing.T, model string) string {
	t.Helper()
	dir := t.TempDir()
	c := filepath.Join(dir, "cite")
	if err := os.MkdirAll(filepath.Join(c, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := "id: cite\nname: Cite\ndescription: The community of the citation tests.\ndefault_model: " + model + "\ncors_origins: [" + citeOrigin + "]\n" +
		"documentation:\n  - title: Cite guide\n    url: " + citeGuideURL + "\n    source_path: docs/guide.md\n"
	for name, body := range map[string]string{"config.yaml": config, "docs/guide.md": citeGuide} {
		if err := os.WriteFile(filepath.Join(c, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sse posts a chat and reads its events.
func sse(t *testing.T, url string, body map[string]any) []map[string]any {
	t.Helper()
	resp := postJSON(t, url, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("chat: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			evs = append(evs, ev)
		}
	}
	return evs
}

func postJSON(t *testing.T, url string, body map[string]any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", citeOrigin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// waitIndexed waits until the community's documents have sections in the published store.
func waitIndexed(t *testing.T, p *process) {
	t.Helper()
	waitFor(t, "the guide to be indexed", func() bool {
		req, _ := http.NewRequest(http.MethodGet, p.url+"/health/communities", nil)
		req.Header.Set("X-API-Key", citeAdminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h map[string]struct {
			Docs *struct {
				Store     any `json:"store"`
				Documents []struct {
					Sections int `json:"sections"`
				} `json:"documents"`
			} `json:"docs"`
		}
		if json.NewDecoder(resp.Body).Decode(&h) != nil || h["cite"].Docs == nil || h["cite"].Docs.Store == nil {
			return false
		}
		for _, d := range h["cite"].Docs.Documents {
			if d.Sections == 0 {
				return false
			}
		}
		return true
	})
}

// TestCitationsThroughTheBinary: against the real binary, a model over each provider path
// searches the community's documentation and cites what it found; the reader gets the spec's
// events (knowledge.md §5.3–5.4): a citation event, the marker as a content chunk,
// done.content normalised and done.citations, and a stream: false chat the same citations.
// The native path's fake streams citations_delta for the search_result block it was sent; the
// tagged path's fake writes the [src:N] tag of the passage it was shown; its prompt carries
// the tagged instruction, the native one none.
func TestCitationsThroughTheBinary(t *testing.T) {
	search := chattest.ToolUse{ID: "toolu_search", Name: "search_cite_docs", Input: `{"query":"how are sources shown"}`}
	type sent struct{ source, title string }
	paths := []struct {
		name   string
		model  string
		start  func(script func(int, chattest.Request) chattest.Reply) (url string, reqs func() []chattest.Request, stop func())
		env    func(url string) []string
		answer func(req chattest.Request, s *sent) chattest.Reply
		// tagged: the requests' system prompts carry the tagged instruction.
		tagged bool
	}{
		{"native", "anthropic/claude-test", func(s func(int, chattest.Request) chattest.Reply) (string, func() []chattest.Request, func()) {
			a := chattest.NewAnthropic(s)
			return a.URL, a.Requests, a.Close
		}, func(url string) []string { return []string{"ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=" + url} },
			func(req chattest.Request, s *sent) chattest.Reply {
				// Cite the first search_result block the request holds, as the API would.
				for _, m := range req.Messages() {
					content, _ := m.(map[string]any)["content"].([]any)
					for _, c := range content {
						for _, b := range asList(c.(map[string]any)["content"]) {
							if b["type"] == "search_result" {
								s.source, s.title = b["source"].(string), b["title"].(string)
								return chattest.Reply{Blocks: []chattest.TextBlock{
									{Text: []string{"Sources are listed ", "under the reply"}, Cites: []chattest.Cite{{Source: s.source, Title: s.title, CitedText: "Every answer lists its sources under the reply."}}},
									{Text: []string{". More."}},
								}}
							}
						}
					}
				}
				return chattest.Reply{Text: []string{"no search_result block was sent"}}
			}, false},
		{"tagged", "openrouter/test-model", func(s func(int, chattest.Request) chattest.Reply) (string, func() []chattest.Request, func()) {
			o := chattest.NewOpenAI(s)
			return o.URL, o.Requests, o.Close
		}, func(url string) []string {
			return []string{"OPENROUTER_API_KEY=k", "OPENROUTER_BASE_URL=" + url + "/v1"}
		},
			func(req chattest.Request, s *sent) chattest.Reply {
				for _, m := range req.Messages() {
					text, _ := m.(map[string]any)["content"].(string)
					if _, rest, ok := strings.Cut(text, "[src:1] "); ok {
						title, rest, _ := strings.Cut(rest, "\nSource: ")
						source, _, _ := strings.Cut(rest, "\n")
						s.source, s.title = source, title
						return chattest.Reply{Text: []string{"Sources are listed under the reply", "[src", ":1]. More."}}
					}
				}
				return chattest.Reply{Text: []string{"no tagged passage was sent"}}
			}, true},
	}
	for _, pth := range paths {
		t.Run(pth.name, func(t *testing.T) {
			var s sent
			url, reqs, stop := pth.start(func(n int, req chattest.Request) chattest.Reply {
				if n%2 == 0 {
					return chattest.Reply{ToolUses: []chattest.ToolUse{search}}
				}
				return pth.answer(req, &s)
			})
			defer stop()
			p := serve(t, pth.env(url), "--communities", citeCommunity(t, pth.model), "--admin-key", citeAdminKey,
				"--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0")
			waitIndexed(t, p)

			evs := sse(t, p.url+"/cite/chat", map[string]any{"message": "How are sources shown?"})
			if !strings.HasPrefix(s.source, citeGuideURL+"#") || !strings.HasPrefix(s.title, "Cite guide") {
				t.Fatalf("the model was sent the passage %+v", s)
			}
			var cites []map[string]any
			var chunks []string
			var done map[string]any
			for _, ev := range evs {
				switch ev["event"] {
				case "citation":
					cites = append(cites, ev)
				case "content":
					chunks = append(chunks, ev["content"].(string))
				case "done":
					done = ev
				}
			}
			if len(cites) != 1 || cites[0]["marker"] != float64(1) || cites[0]["source"] != s.source || cites[0]["title"] != s.title || cites[0]["cited_text"] != "Every answer lists its sources under the reply." {
				t.Errorf("citation events %v", cites)
			}
			if strings.Join(chunks, "") != "Sources are listed under the reply[1]. More." {
				t.Errorf("content chunks %q", chunks)
			}
			if !slices.Contains(chunks, "[1]") {
				t.Errorf("the marker is not its own chunk: %q", chunks)
			}
			want := "Sources are listed under the reply.[1] More."
			if done == nil || done["content"] != want {
				t.Fatalf("done %v, want content %q", done, want)
			}
			list, _ := done["citations"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["source"] != s.source || list[0].(map[string]any)["marker"] != float64(1) {
				t.Errorf("done.citations %v", done["citations"])
			}

			resp := postJSON(t, p.url+"/cite/chat", map[string]any{"message": "And again?", "stream": false})
			var answer struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				Citations []map[string]any `json:"citations"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("stream false: %d %v", resp.StatusCode, err)
			}
			resp.Body.Close()
			if answer.Message.Content != want || len(answer.Citations) != 1 || answer.Citations[0]["source"] != s.source {
				t.Errorf("stream false answered %+v", answer)
			}

			for _, r := range reqs() {
				if got := strings.Contains(systemOf(r), "## Citing Sources"); got != pth.tagged {
					t.Errorf("a request's prompt has the tagged instruction: %v, want %v", got, pth.tagged)
				}
			}
		})
	}
}

func asList(v any) []map[string]any {
	items, _ := v.([]any)
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// systemOf is a request's system prompt, as either API carries it.
func systemOf(r chattest.Request) string {
	if sys, ok := r.Body["system"]; ok {
		b, _ := json.Marshal(sys)
		return string(b)
	}
	for _, m := range r.Messages() {
		if mm, _ := m.(map[string]any); mm["role"] == "system" {
			b, _ := json.Marshal(mm["content"])
			return string(b)
		}
	}
	return ""
}

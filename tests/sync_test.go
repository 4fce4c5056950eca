package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/chat/chattest"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
)

// syncedCommunity names every synced source: a repository (issues and docstrings), papers by
// keyword and by DOI, a Discourse forum, a Mailman list with FAQ generation, and both public
// feeds. The forum and the list are at host names the test resolves to local servers.
const syncedCommunity = `id: synced
name: Synced
description: A community with every synced source.
default_model: anthropic/claude-haiku-4-5
cors_origins: [https://synced.example.org]
github:
  repos: [acme/widgets]
citations:
  queries: [widget painting]
  dois: [10.1234/widgets.2020]
docstrings:
  repos:
    - repo: acme/widgets
      branch: main
      languages: [python]
discourse:
  - url: https://forum.example.org
mailman:
  - list_name: widgets-users
    base_url: https://lists.example.org/pipermail/widgets-users/
faq_generation:
  evaluation_agent:
    model: openai/gpt-4o-mini
  summary_agent:
    model: openai/gpt-4o-mini
  quality_threshold: 0.5
public_feeds:
  faq: true
  citations: true
sync:
  github:
    cron: "0 3 * * *"
  papers:
    cron: "30 4 * * 1"
  docstrings:
    cron: "0 5 * * 0"
  discourse:
    cron: "0 4 * * *"
  mailman:
    cron: "0 2 * * *"
  faq:
    cron: "0 6 * * 1"
`

const widgetsModule = `"""Widgets: painting and sizing of widgets."""


def paint_widget(widget, colour="red"):
    """Paint a widget in one colour.

    The colour is a name such as red or blue; the widget's old paint is removed first.
    """


class WidgetSizer:
    """Measures widgets and scales them to fit a frame."""

    def scale_to_fit(self, widget, frame):
        """Scale a widget so that it fits inside the frame, keeping its proportions."""
`

// syncFakes are the local servers playing every outside API of syncedCommunity.
type syncFakes struct {
	gh      *ingesttest.GitHub
	trees   *ingesttest.GitHubTrees
	alex    *ingesttest.OpenAlex
	forum   *ingesttest.Discourse
	lists   *ingesttest.Mailman
	model   *chattest.OpenAI
	env     []string
	args    []string // --knowledge-resolve and the loopback switch
	commDir string
}

func newSyncFakes(t *testing.T) *syncFakes {
	f := &syncFakes{gh: ingesttest.NewGitHub(t), trees: ingesttest.NewGitHubTrees(t), alex: ingesttest.NewOpenAlex(t),
		forum: ingesttest.NewDiscourse(t), lists: ingesttest.NewMailman(t, "widgets-users")}
	// One API URL serves the issues and, behind them, the git trees.
	treesURL, _ := url.Parse(f.trees.APIURL)
	f.gh.Fallback = httputil.NewSingleHostReverseProxy(treesURL)
	now := time.Now().UTC()
	f.gh.Add("acme/widgets",
		ingesttest.Issue{Number: 12, Title: "Widgets fade in sunlight", Body: "The red paint fades after a week outside.", State: "open"},
		ingesttest.Issue{Number: 13, Title: "Add a blue paint", Body: "Blue paint for widgets.", State: "open", PR: true})
	f.trees.SetFile("acme/widgets", "main", "widgets/paint.py", widgetsModule)
	f.alex.Add(ingesttest.Work{ID: "W100", Title: "Widgets: a framework for painting", DOI: "10.1234/widgets.2020", PublicationDate: "2020-03-01",
		Abstract: "We present widgets."},
		ingesttest.Work{ID: "W200", Title: "Painting widgets in the lab", DOI: "10.1234/lab.2023", PublicationDate: "2023-05-02",
			Abstract: "A study of widget painting.", Cites: []string{"W100"}},
		ingesttest.Work{ID: "W300", Title: "Sizing widgets for frames", DOI: "10.1234/frames.2024", PublicationDate: "2024-01-09",
			Abstract: "How widgets fit frames.", Cites: []string{"W100"}})
	f.forum.AddCategory(ingesttest.DiscourseCategory{ID: 5, Name: "Help", Slug: "help"})
	f.forum.AddTopic(ingesttest.DiscourseTopic{ID: 77, Title: "Widget paint peels off", Slug: "widget-paint-peels-off", CategoryID: 5,
		Posts: []ingesttest.DiscoursePost{{Username: "ann", Cooked: "<p>My widget's paint peels off.</p>"},
			{Username: "bob", Cooked: "<p>Sand it before painting.</p>", Likes: 3}}, Accepted: 2})
	first := f.lists.Post(ingesttest.MailmanMessage{Subject: "How do I repaint a widget?", Author: "Ann", Email: "ann@example.org",
		Body: "How do I repaint a widget without scratching it?", Date: now.Add(-48 * time.Hour)})
	f.lists.Post(ingesttest.MailmanMessage{Subject: "Re: How do I repaint a widget?", Author: "Bob", Email: "bob@example.org",
		Body: "Sand it lightly, then paint two thin coats.", Date: now.Add(-47 * time.Hour), ReplyTo: first})
	// The FAQ models: a score, then a summary.
	f.model = chattest.NewOpenAI(func(n int, req chattest.Request) chattest.Reply {
		if req.Contains("Rate the value") {
			return chattest.Reply{Text: []string{"0.9"}}
		}
		return chattest.Reply{Text: []string{`{"question": "How do I repaint a widget?", "answer": "Sand it lightly, then paint two thin coats. Write to ann@example.org for help.", "tags": ["paint"], "category": "how-to"}`}}
	})
	t.Cleanup(f.model.Close)
	resolve := func(host, raw string) string {
		u, _ := url.Parse(raw)
		h, p, _ := net.SplitHostPort(u.Host)
		return host + "=" + h + ":" + p
	}
	f.env = []string{"ASSISTANT_GITHUB_API_URL=" + f.gh.URL, "ASSISTANT_GITHUB_RAW_URL=" + f.trees.RawURL, "ASSISTANT_OPENALEX_URL=" + f.alex.URL,
		"OPENROUTER_API_KEY=sk-or-test", "OPENROUTER_BASE_URL=" + f.model.URL + "/v1"}
	f.args = []string{"--knowledge-allow-loopback", "--knowledge-resolve", resolve("forum.example.org", f.forum.URL),
		"--knowledge-resolve", resolve("lists.example.org", f.lists.URL)}
	root := t.TempDir()
	f.commDir = filepath.Join(root, "communities")
	if err := os.MkdirAll(filepath.Join(f.commDir, "synced"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.commDir, "synced", "config.yaml"), []byte(syncedCommunity), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// sync runs `assistant sync` and returns its exit code and output.
func (f *syncFakes) sync(t *testing.T, data, eng string, args ...string) (int, string) {
	t.Helper()
	all := append([]string{"sync", "--communities", f.commDir, "--data-dir", data, "--engine-dir", eng}, f.args...)
	cmd := exec.Command(binary, append(all, args...)...)
	cmd.Env = append(os.Environ(), f.env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// TestSyncEndToEnd (issue 24's "Done when") through the real binary and local servers playing
// the GitHub REST API and raw files, OpenAlex, a Discourse forum, a Mailman archive and the FAQ
// models: `assistant sync all` fills every table; a second GitHub sync after an issue is
// closed and renamed upstream updates it and asks only for what changed; a rate limit at zero
// with a far reset stops the repo and says so; then the server answers /sync/status,
// /sync/health, /health/communities, /{c}/faq and /{c}/citations, and every search tool
// answers through a chat turn with the fake Anthropic API, citable ones as search results.
func TestSyncEndToEnd(t *testing.T) {
	eng := engineDir(t)
	f := newSyncFakes(t)
	data := t.TempDir()

	code, out := f.sync(t, data, eng, "all")
	if code != 0 {
		t.Fatalf("sync all: exit %d\n%s", code, out)
	}
	for _, want := range []string{"github synced", "papers synced", "docstrings synced", "discourse synced", "mailman synced", "faq synced"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync all printed no %q line:\n%s", want, out)
		}
	}

	// Upstream, the issue is closed and renamed: the next sync asks only for what changed.
	f.gh.Change("acme/widgets", 12, func(is *ingesttest.Issue) { is.State, is.Title = "closed", "Widgets fade in sunlight (fixed)" })
	f.gh.ResetRequests()
	if code, out := f.sync(t, data, eng, "github"); code != 0 {
		t.Fatalf("second github sync: exit %d\n%s", code, out)
	}
	if reqs := f.gh.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].Query, "since=") {
		t.Errorf("the second sync made %d requests (%+v), want one listing since the last", len(reqs), reqs)
	}

	// A rate limit used up with its reset an hour away: the repo fails, and says until when.
	f.gh.SetRateLimit(60, 0, time.Now().Add(time.Hour))
	if code, out := f.sync(t, data, eng, "github"); code != 1 || !strings.Contains(out, "rate limited until") {
		t.Errorf("a used-up rate limit: exit %d\n%s", code, out)
	}
	f.gh.SetRateLimit(5000, 5000, time.Now().Add(time.Hour))

	var toolResults []string
	anth := chattest.NewAnthropic(func(n int, req chattest.Request) chattest.Reply {
		msgs := req.Messages()
		last, _ := json.Marshal(msgs[len(msgs)-1])
		if strings.Contains(string(last), "tool_result") {
			toolResults = append(toolResults, string(last))
			return chattest.Reply{Text: []string{"Answered."}}
		}
		var call struct{ Tool, Args string }
		for _, c := range syncToolCalls {
			if req.Contains("call " + c.tool) {
				call.Tool, call.Args = c.tool, c.args
			}
		}
		return chattest.Reply{ToolUses: []chattest.ToolUse{{ID: "toolu_" + call.Tool, Name: call.Tool, Input: call.Args}}}
	})
	t.Cleanup(anth.Close)
	// Syncing on: the schedules are set (none fires during the test; every source is seeded).
	env := append([]string{"ANTHROPIC_API_KEY=sk-ant-test", "ANTHROPIC_BASE_URL=" + anth.URL, "ASSISTANT_DATA_DIR=" + data, "ASSISTANT_SYNC_ENABLED=true"}, f.env...)
	p := serve(t, env, append([]string{"--communities", f.commDir, "--admin-key", "sesame", "--engine-dir", eng,
		"--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"}, f.args...)...)

	var status struct {
		GitHub struct {
			TotalItems int `json:"total_items"`
			Issues     int `json:"issues"`
			PRs        int `json:"prs"`
			OpenItems  int `json:"open_items"`
		} `json:"github"`
		Knowledge map[string]int `json:"knowledge"`
	}
	body := getJSON(t, p.url+"/sync/status?community_id=synced", &status)
	if status.GitHub.TotalItems != 2 || status.GitHub.OpenItems != 1 {
		t.Errorf("/sync/status github: %s", body)
	}
	for _, table := range []string{"github_items", "papers", "docstrings", "discourse_topics", "faq_entries", "mailing_list_messages"} {
		if status.Knowledge[table] == 0 {
			t.Errorf("/sync/status: %s has no rows: %s", table, body)
		}
	}
	if code, b := get(t, p.url+"/sync/health?community_id=synced"); code != 200 || !strings.Contains(b, `"status":"healthy"`) {
		t.Errorf("/sync/health: %d %s", code, b)
	}
	if code, b := get(t, p.url+"/synced/faq"); code != 200 || !strings.Contains(b, "How do I repaint a widget?") ||
		!strings.Contains(b, "[email redacted]") || strings.Contains(b, "ann@example.org") {
		t.Errorf("/synced/faq: %d %s", code, b)
	}
	if code, b := get(t, p.url+"/synced/citations"); code != 200 || !strings.Contains(b, `"total":2`) || !strings.Contains(b, `"2023":1`) {
		t.Errorf("/synced/citations: %d %s", code, b)
	}
	req, _ := http.NewRequest(http.MethodGet, p.url+"/health/communities", nil)
	req.Header.Set("X-API-Key", "sesame")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]struct {
		SyncAgeHours *float64                  `json:"sync_age_hours"`
		Syncs        map[string]map[string]any `json:"syncs"`
	}
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if h := health["synced"]; err != nil || h.SyncAgeHours == nil || *h.SyncAgeHours > 1 || h.Syncs["github"]["last_sync"] == nil || h.Syncs["faq"]["next_run"] == nil {
		t.Errorf("/health/communities' syncs: %v %+v", err, health["synced"])
	}

	for i, c := range syncToolCalls {
		msg, _ := json.Marshal(map[string]any{"message": "call " + c.tool, "session_id": fmt.Sprintf("sync-%d", i)})
		r, _ := http.NewRequest(http.MethodPost, p.url+"/synced/chat", bytes.NewReader(msg))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Origin", "https://synced.example.org")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		stream, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(stream), `"event":"tool_end"`) || !strings.Contains(string(stream), `"event":"done"`) {
			t.Errorf("%s: the turn did not run the tool:\n%s", c.tool, stream)
			continue
		}
		got := toolResults[len(toolResults)-1]
		if !strings.Contains(got, c.want) || strings.Contains(got, `"search_result"`) != c.citable {
			t.Errorf("%s: the model read (want %q, citable %v):\n%s", c.tool, c.want, c.citable, got)
		}
	}
}

// syncToolCalls are the calls TestSyncEndToEnd's model makes, one per search tool, with a
// piece of what each must return and whether it is citable (search_result blocks).
var syncToolCalls = []struct {
	tool, args, want string
	citable          bool
}{
	{"search_synced_discussions", `{"query":"fade sunlight"}`, "Widgets fade in sunlight (fixed)", false},
	{"list_synced_recent", `{"item_type":"pr"}`, "Add a blue paint", false},
	{"search_synced_papers", `{"query":"painting widgets"}`, "Painting widgets in the lab", false},
	{"search_synced_code_docs", `{"query":"how do I scale a widget to fit a frame"}`, "scale_to_fit", true},
	{"get_synced_full_docstring", `{"symbol_name":"paint_widget"}`, "old paint is removed first", true},
	{"search_synced_faq", `{"query":"repaint widget"}`, "two thin coats", true},
	{"search_synced_forum", `{"query":"paint peels"}`, "Widget paint peels off", false},
}

// getJSON GETs url and decodes its JSON body into v; it returns the body.
func getJSON(t *testing.T, url string, v any) string {
	t.Helper()
	code, body := get(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	return body
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/routers"
)

// knowledgeSettings are serve's knowledge flags.
type knowledgeSettings struct {
	dataDir       string
	allowLoopback bool
	resolve       multiFlag
	preloadBudget int
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// defaultDataDir is the user data directory + /assistant: $XDG_DATA_HOME, else
// ~/.local/share (Go has no os.UserDataDir), else a directory under the system's temporary one.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "assistant")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "assistant")
	}
	return filepath.Join(os.TempDir(), "assistant-data")
}

// parseResolve reads --knowledge-resolve HOST=IP:PORT entries (repeatable, or comma-separated
// in ASSISTANT_KNOWLEDGE_RESOLVE) into the map knowledge.Options takes.
func parseResolve(entries []string) (map[string]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, e := range entries {
		for item := range strings.SplitSeq(e, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			host, addr, ok := strings.Cut(item, "=")
			if !ok || host == "" || addr == "" || strings.ContainsAny(host, "/:") || !strings.Contains(addr, ":") {
				return nil, fmt.Errorf("knowledge resolve entry %q: want HOST=IP:PORT", limitText(item, 100))
			}
			out[strings.ToLower(host)] = addr
		}
	}
	return out, nil
}

func limitText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// knowledgeCommunities is what the knowledge Library needs of the loaded communities: their
// documentation, in its own plain form.
func knowledgeCommunities(set *config.Set) []knowledge.Community {
	var out []knowledge.Community
	for _, c := range set.Communities {
		kc := knowledge.Community{ID: c.ID, Name: c.Name, Folder: c.Dir}
		for _, d := range c.Documentation {
			kc.Docs = append(kc.Docs, knowledge.Doc{Title: d.Title, URL: d.URL, SourceURL: deref(d.SourceURL), Preload: d.Preload,
				Category: d.Category, Type: d.Type, Description: deref(d.Description), SourcePath: deref(d.SourcePath)})
		}
		out = append(out, kc)
	}
	return out
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// knowledgeDocs is the chat's view of the knowledge Library (chat.Knowledge): the prompt's
// doc sections, built once per documentation generation, and the documentation tools.
type knowledgeDocs struct {
	lib    *knowledge.Library
	budget int
	log    *slog.Logger

	mu    sync.Mutex
	cache map[string]*docsEntry // by community id
	ids   []string              // the communities applied last

	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	src sourceTools // the synced sources' tools (sourcetools.go)
}

type docsEntry struct {
	snap *knowledge.Snapshot
	docs chat.KnowledgeDocs
	// warned is the generation whose moved preloads were logged.
	warned uint64
}

func newKnowledgeDocs(lib *knowledge.Library, budget int, log *slog.Logger) *knowledgeDocs {
	if budget <= 0 {
		budget = int(limits.PreloadBudgetChars)
	}
	return &knowledgeDocs{lib: lib, budget: budget, log: log, cache: map[string]*docsEntry{},
		src: sourceTools{comms: map[string]*config.Community{}, states: map[string]sourceState{}},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assistant_knowledge_tool_calls_total",
			Help: "Documentation tool calls by community, tool and outcome (ok, error)."}, []string{"community", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "assistant_knowledge_tool_duration_seconds",
			Help: "How long documentation tool calls took, by tool.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}, []string{"tool"}),
	}
}

// apply gives the Library the set's communities.
func (k *knowledgeDocs) apply(set *config.Set) {
	comms := knowledgeCommunities(set)
	if err := k.lib.Apply(comms); err != nil {
		k.log.Warn("knowledge: some communities were not taken", slog.Any("error", err))
	}
	ids := make([]string, len(comms))
	for i, c := range comms {
		ids[i] = c.ID
	}
	k.mu.Lock()
	k.ids = ids
	k.mu.Unlock()
	byID := make(map[string]*config.Community, len(set.Communities))
	for _, c := range set.Communities {
		byID[c.ID] = c
	}
	k.src.mu.Lock()
	k.src.comms = byID
	k.src.mu.Unlock()
}

// observe counts one documentation tool call.
func (k *knowledgeDocs) observe(id, tool string, start time.Time, failed bool) {
	outcome := "ok"
	if failed {
		outcome = "error"
	}
	k.calls.WithLabelValues(id, tool, outcome).Inc()
	k.duration.WithLabelValues(tool).Observe(time.Since(start).Seconds())
}

var (
	docsFetchesDesc  = prometheus.NewDesc("assistant_knowledge_fetches_total", "Documentation fetches (and source_path reads) by community since it was loaded; a 304 is a fetch.", []string{"community"}, nil)
	docsFailuresDesc = prometheus.NewDesc("assistant_knowledge_fetch_failures_total", "Documentation fetches that failed, by community.", []string{"community"}, nil)
	docsIndexedDesc  = prometheus.NewDesc("assistant_knowledge_documents", "Documents with content, by community.", []string{"community"}, nil)
	docsSectionsDesc = prometheus.NewDesc("assistant_knowledge_sections", "Documentation sections indexed for search, by community.", []string{"community"}, nil)
)

// Describe implements prometheus.Collector.
func (k *knowledgeDocs) Describe(ch chan<- *prometheus.Desc) {
	ch <- docsFetchesDesc
	ch <- docsFailuresDesc
	ch <- docsIndexedDesc
	ch <- docsSectionsDesc
	k.calls.Describe(ch)
	k.duration.Describe(ch)
}

// Collect implements prometheus.Collector: the stores' counts as of now.
func (k *knowledgeDocs) Collect(ch chan<- prometheus.Metric) {
	k.mu.Lock()
	ids := k.ids
	k.mu.Unlock()
	for _, id := range ids {
		s := k.lib.Snapshot(id)
		if s == nil {
			continue
		}
		docs, sections := 0, 0
		for _, d := range s.Docs {
			if d.HasContent {
				docs++
			}
			sections += d.Sections
		}
		ch <- prometheus.MustNewConstMetric(docsFetchesDesc, prometheus.CounterValue, float64(s.Fetches), id)
		ch <- prometheus.MustNewConstMetric(docsFailuresDesc, prometheus.CounterValue, float64(s.FetchFailures), id)
		ch <- prometheus.MustNewConstMetric(docsIndexedDesc, prometheus.GaugeValue, float64(docs), id)
		ch <- prometheus.MustNewConstMetric(docsSectionsDesc, prometheus.GaugeValue, float64(sections), id)
	}
	k.calls.Collect(ch)
	k.duration.Collect(ch)
}

// Docs implements chat.Knowledge. The sections are made again only when the Library's
// snapshot of the community changes.
func (k *knowledgeDocs) Docs(id string) (chat.KnowledgeDocs, bool) {
	s := k.lib.Snapshot(id)
	if s == nil || len(s.Docs) == 0 {
		return chat.KnowledgeDocs{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.cache[id]
	if old != nil && old.snap == s {
		return old.docs, true
	}
	p := s.Prompt(k.budget)
	if old == nil || old.warned != s.Generation { // a new snapshot comes with every fetch; a new generation only with new content
		for _, d := range p.Moved {
			k.log.Warn("knowledge: preload budget exceeded; the document is offered on demand", slog.String("community", id),
				slog.String("title", d.Title), slog.String("url", d.URL), slog.Int("budget_chars", k.budget))
		}
	}
	docs := chat.KnowledgeDocs{Preloaded: p.Preloaded, Available: p.Available,
		RetrieveDescription: knowledge.RetrieveDescription(s.Name, p.OnDemand), Generation: s.Generation}
	k.cache[id] = &docsEntry{snap: s, docs: docs, warned: s.Generation}
	return docs, true
}

func (k *knowledgeDocs) name(id string) string {
	if s := k.lib.Snapshot(id); s != nil {
		return s.Name
	}
	return id
}

// Retrieve implements chat.Knowledge: retrieve_{id}_docs, one passage (the document).
func (k *knowledgeDocs) Retrieve(ctx context.Context, id, u string) chat.KnowledgeResult {
	start := time.Now()
	r, err := k.lib.Retrieve(ctx, id, u)
	k.observe(id, "retrieve_docs", start, err != nil)
	res := chat.KnowledgeResult{Text: knowledge.RetrieveText(k.name(id), u, r, err), IsError: err != nil}
	if err != nil {
		return res
	}
	// The passage is cut(content, 50000) (knowledge.md §5.2); an empty document is the
	// spec's plain text instead.
	full := r.Content
	if s := k.lib.Snapshot(id); s != nil {
		if d, ok := s.Doc(r.URL); ok && d.HasContent {
			full = d.Content
		}
	}
	if strings.TrimSpace(full) == "" {
		res.Text = "# " + r.Title + "\n\nSource: " + r.URL + "\n\n(no text content)"
		return res
	}
	res.Passages = []chat.Passage{{Source: r.URL, Title: r.Title, Text: knowledge.Cut(full, int(limits.MaxDocumentChars))}}
	return res
}

// citedSectionChars caps a section's text as a citable passage (knowledge.md §5.2).
const citedSectionChars = 2000

// Search implements chat.Knowledge: search_{id}_docs, one passage per section.
func (k *knowledgeDocs) Search(ctx context.Context, id, query string, limit int) chat.KnowledgeResult {
	start := time.Now()
	secs, err := k.lib.Search(ctx, id, query, limit)
	k.observe(id, "search_docs", start, err != nil)
	res := chat.KnowledgeResult{Text: knowledge.SearchText(k.name(id), id, query, secs, err), IsError: err != nil}
	if err == nil {
		for _, s := range secs {
			res.Passages = append(res.Passages, chat.Passage{Source: s.URL(), Title: s.HeadingPath, Text: knowledge.Cut(s.Text, citedSectionChars)})
		}
	}
	return res
}

// FetchPage implements chat.Knowledge: fetch_current_page, one passage (the page).
func (k *knowledgeDocs) FetchPage(ctx context.Context, id, u string) chat.KnowledgeResult {
	start := time.Now()
	p, err := k.lib.FetchPage(ctx, u)
	k.observe(id, "fetch_current_page", start, err != nil)
	if err != nil {
		var pe *knowledge.PageError
		msg := "Error fetching " + u + ": " + err.Error()
		if errors.As(err, &pe) {
			msg = pe.Msg
		}
		return chat.KnowledgeResult{Text: msg, IsError: true}
	}
	text := p.Text()
	return chat.KnowledgeResult{Text: text, Passages: []chat.Passage{{Source: p.URL, Title: p.URL, Text: knowledge.Cut(text, int(limits.MaxDocumentChars))}}}
}

// DocsReport implements routers.DocsHealth: a community's documents as the store holds them.
func (k *knowledgeDocs) DocsReport(id string) (routers.DocsReport, bool) {
	s := k.lib.Snapshot(id)
	if s == nil {
		return routers.DocsReport{}, false
	}
	p := s.Prompt(k.budget)
	r := routers.DocsReport{PreloadChars: p.PreloadChars, PreloadBudgetChars: k.budget, LastRefresh: routers.ISOTime(s.LastRefresh),
		PreloadFailed: []routers.DocProblem{}, FetchFailed: []routers.DocProblem{}, Moved: []routers.DocProblem{}, Documents: []routers.DocStatus{}}
	unavailable := map[string]bool{}
	for _, d := range p.Unavailable {
		unavailable[d.URL] = true
		r.PreloadFailed = append(r.PreloadFailed, routers.DocProblem{URL: d.URL, Title: d.Title, Error: orText(d.LastError, "not fetched yet"), Since: routers.ISOTime(d.FailingSince)})
	}
	for _, d := range p.Moved {
		r.Moved = append(r.Moved, routers.DocProblem{URL: d.URL, Title: d.Title})
	}
	for _, d := range s.Docs {
		if d.Preload && d.HasContent {
			r.Preloaded++
		}
		if d.LastError != "" && !unavailable[d.URL] {
			r.FetchFailed = append(r.FetchFailed, routers.DocProblem{URL: d.URL, Title: d.Title, Error: d.LastError, Since: routers.ISOTime(d.FailingSince)})
		}
		st := routers.DocStatus{URL: d.URL, Title: d.Title, Preload: d.Preload, HasContent: d.HasContent,
			FetchedAt: routers.ISOTime(d.FetchedAt), Bytes: d.Bytes, Sections: d.Sections}
		if d.LastError != "" {
			st.LastError = &d.LastError
		}
		r.Documents = append(r.Documents, st)
	}
	if fi, ok := k.lib.StoreInfo(id); ok {
		r.Store = &routers.StoreStatus{Bytes: fi.Bytes, PublishedAt: routers.ISOTime(fi.PublishedAt),
			AgeHours: float64(int(time.Since(fi.PublishedAt).Hours()*10)) / 10}
	}
	return r, true
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

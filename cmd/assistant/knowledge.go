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

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/limits"
)

// knowledgeSettings are serve's knowledge flags.
type knowledgeSettings struct {
	dataDir       string
	refresh       string // a duration; parsed with the rest
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

// withKnowledge gives the Library every set a reload loads, as withMCP does the MCP servers.
func withKnowledge(load func(context.Context) (*config.Set, error), lib *knowledge.Library, log *slog.Logger) func(context.Context) (*config.Set, error) {
	return func(ctx context.Context) (*config.Set, error) {
		set, err := load(ctx)
		var list config.ErrorList
		if set != nil && (err == nil || errors.As(err, &list) && len(list.Fatal()) == 0) {
			if aerr := lib.Apply(knowledgeCommunities(set)); aerr != nil {
				log.Warn("knowledge: some communities were not taken", slog.Any("error", aerr))
			}
		}
		return set, err
	}
}

// knowledgeDocs is the chat's view of the knowledge Library (chat.Knowledge): the prompt's
// doc sections, built once per documentation generation, and the documentation tools.
type knowledgeDocs struct {
	lib    *knowledge.Library
	budget int

	mu    sync.Mutex
	cache map[string]*docsEntry // by community id
}

type docsEntry struct {
	snap *knowledge.Snapshot
	docs chat.KnowledgeDocs
}

func newKnowledgeDocs(lib *knowledge.Library, budget int) *knowledgeDocs {
	if budget <= 0 {
		budget = int(limits.PreloadBudgetChars)
	}
	return &knowledgeDocs{lib: lib, budget: budget, cache: map[string]*docsEntry{}}
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
	if e := k.cache[id]; e != nil && e.snap == s {
		return e.docs, true
	}
	p := s.Prompt(k.budget)
	docs := chat.KnowledgeDocs{Preloaded: p.Preloaded, Available: p.Available,
		RetrieveDescription: knowledge.RetrieveDescription(s.Name, p.OnDemand), Generation: s.Generation}
	k.cache[id] = &docsEntry{snap: s, docs: docs}
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
	r, err := k.lib.Retrieve(ctx, id, u)
	res := chat.KnowledgeResult{Text: knowledge.RetrieveText(k.name(id), u, r, err), IsError: err != nil}
	if err == nil {
		res.Passages = []chat.Passage{{Source: r.URL, Title: r.Title, Text: r.Content}}
	}
	return res
}

// citedSectionChars caps a section's text as a citable passage (knowledge.md §5.2).
const citedSectionChars = 2000

// Search implements chat.Knowledge: search_{id}_docs, one passage per section.
func (k *knowledgeDocs) Search(ctx context.Context, id, query string, limit int) chat.KnowledgeResult {
	secs, err := k.lib.Search(ctx, id, query, limit)
	res := chat.KnowledgeResult{Text: knowledge.SearchText(k.name(id), id, query, secs, err), IsError: err != nil}
	if err == nil {
		for _, s := range secs {
			res.Passages = append(res.Passages, chat.Passage{Source: s.URL(), Title: s.HeadingPath, Text: knowledge.Cut(s.Text, citedSectionChars)})
		}
	}
	return res
}

// FetchPage implements chat.Knowledge: fetch_current_page, one passage (the page).
func (k *knowledgeDocs) FetchPage(ctx context.Context, u string) chat.KnowledgeResult {
	p, err := k.lib.FetchPage(ctx, u)
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

package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest"
	"github.com/osc-assistant/assistant/knowledge"
)

// The synced sources' tools (knowledge.md §4.3), bound when the config names the source and
// the community's database holds its rows, in §4.1's order.

// liveSearch is search_{id}_papers_live's search (the papers source's live OpenAlex search);
// nil binds no live tool.
type liveSearch func(ctx context.Context, community, query string, limit int) (text string, err error)

// sourceState is what gates a community's source tools: its row counts, read once per
// published database.
type sourceState struct {
	published time.Time
	counts    knowledge.KnowledgeCounts
}

// sourceTools holds what Tools needs beside the Library: the communities' configs, the live
// search, and the cached row counts.
type sourceTools struct {
	mu     sync.Mutex
	comms  map[string]*config.Community
	states map[string]sourceState
	live   liveSearch
}

// counts are the community's row counts, read again only when its database was published anew.
func (k *knowledgeDocs) counts(id string) knowledge.KnowledgeCounts {
	st := k.lib.Store()
	info, ok := st.Info(id)
	if !ok {
		return knowledge.KnowledgeCounts{}
	}
	k.src.mu.Lock()
	cached, hit := k.src.states[id]
	k.src.mu.Unlock()
	if hit && cached.published.Equal(info.PublishedAt) {
		return cached.counts
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := st.SyncStatus(ctx, id)
	if err != nil {
		k.log.Warn("knowledge: reading a community's source counts failed", slog.String("community", id), slog.Any("error", err))
		return knowledge.KnowledgeCounts{}
	}
	k.src.mu.Lock()
	k.src.states[id] = sourceState{published: info.PublishedAt, counts: s.Knowledge}
	k.src.mu.Unlock()
	return s.Knowledge
}

var (
	queryParam = chat.ToolParam{Name: "query", Type: "string", Required: true, Description: "Keywords or a question."}
	limitParam = func(def int) chat.ToolParam {
		return chat.ToolParam{Name: "limit", Type: "integer", Default: def, Description: "How many results to return."}
	}
	categoryParam = chat.ToolParam{Name: "category", Type: "string", Nullable: true, Description: "Only this category, or null for all."}
)

// Tools implements chat.Knowledge: the community's synced-source tools bound now.
func (k *knowledgeDocs) Tools(id string) []chat.SourceTool {
	k.src.mu.Lock()
	c := k.src.comms[id]
	live := k.src.live
	k.src.mu.Unlock()
	if c == nil {
		return nil
	}
	st := k.lib.Store()
	n := k.counts(id)
	name := c.Name
	var out []chat.SourceTool
	add := func(t chat.SourceTool) { out = append(out, t) }
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) int { i, _ := v.(int); return i }
	flag := func(v any) bool { b, _ := v.(bool); return b }
	result := func(text string, err error, passages []knowledge.Passage) chat.KnowledgeResult {
		res := chat.KnowledgeResult{Text: text, IsError: err != nil}
		for _, p := range passages {
			res.Passages = append(res.Passages, chat.Passage{Source: p.Source, Title: p.Title, Text: p.Text})
		}
		return res
	}
	if gh := c.GitHub; gh != nil && len(gh.Repos) > 0 && n.GitHubItems > 0 {
		add(chat.SourceTool{Name: "search_" + id + "_discussions", Description: knowledge.DiscussionsDescription(name, gh.Repos),
			Params: []chat.ToolParam{queryParam, {Name: "include_issues", Type: "boolean", Default: true}, {Name: "include_prs", Type: "boolean", Default: true}, limitParam(5)},
			Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
				start := time.Now()
				items, err := st.SearchDiscussions(ctx, id, str(a["query"]), knowledge.DiscussionOptions{IncludeIssues: flag(a["include_issues"]), IncludePRs: flag(a["include_prs"]), Limit: num(a["limit"])})
				k.observe(id, "search_discussions", start, err != nil)
				return result(knowledge.DiscussionsText(name, str(a["query"]), items, err), err, nil)
			}})
		add(chat.SourceTool{Name: "list_" + id + "_recent", Description: knowledge.RecentDescription(name, gh.Repos),
			Params: []chat.ToolParam{{Name: "item_type", Type: "string", Enum: []string{"all", "issue", "pr"}, Default: "all"},
				{Name: "repo", Type: "string", Nullable: true}, {Name: "status", Type: "string", Enum: []string{"open", "closed"}, Nullable: true}, limitParam(knowledge.DefaultRecentLimit)},
			Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
				start := time.Now()
				opts := knowledge.RecentOptions{Type: str(a["item_type"]), Repo: str(a["repo"]), Status: str(a["status"]), Limit: num(a["limit"])}
				items, err := st.ListRecent(ctx, id, opts)
				k.observe(id, "list_recent", start, err != nil)
				return result(knowledge.RecentText(name, opts, items, err), err, nil)
			}})
	}
	if ct := c.Citations; ct != nil && (len(ct.Queries) > 0 || len(ct.DOIs) > 0) {
		if n.Papers > 0 {
			add(chat.SourceTool{Name: "search_" + id + "_papers", Description: knowledge.PapersDescription(name),
				Params: []chat.ToolParam{queryParam, limitParam(5)},
				Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
					start := time.Now()
					papers, err := st.SearchPapers(ctx, id, str(a["query"]), num(a["limit"]))
					k.observe(id, "search_papers", start, err != nil)
					return result(knowledge.PapersText(name, str(a["query"]), papers, err), err, nil)
				}})
		}
		if ct.LiveSearch && live != nil {
			add(chat.SourceTool{Name: "search_" + id + "_papers_live", Description: ingest.LiveDescription(name, id),
				Params: []chat.ToolParam{queryParam, limitParam(5)},
				Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
					start := time.Now()
					text, err := live(ctx, id, str(a["query"]), num(a["limit"]))
					k.observe(id, "search_papers_live", start, err != nil)
					return chat.KnowledgeResult{Text: text}
				}})
		}
	}
	if ds := c.Docstrings; ds != nil && len(ds.Repos) > 0 && n.Docstrings > 0 {
		add(chat.SourceTool{Name: "search_" + id + "_code_docs", Description: knowledge.CodeDocsDescription(name, id),
			Params: []chat.ToolParam{queryParam, limitParam(5)},
			Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
				start := time.Now()
				found, err := st.SearchCodeDocs(ctx, id, str(a["query"]), num(a["limit"]))
				k.observe(id, "search_code_docs", start, err != nil)
				return result(knowledge.CodeDocsText(name, id, str(a["query"]), found, err), err, knowledge.CodeDocsPassages(found))
			}})
		add(chat.SourceTool{Name: "get_" + id + "_full_docstring", Description: knowledge.FullDocstringDescription(name, id),
			Params: []chat.ToolParam{{Name: "symbol_name", Type: "string", Required: true, Description: "The exact symbol name."}},
			Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
				start := time.Now()
				found, err := st.FullDocstring(ctx, id, str(a["symbol_name"]))
				k.observe(id, "get_full_docstring", start, err != nil)
				return result(knowledge.FullDocstringText(name, id, str(a["symbol_name"]), found, err), err, knowledge.FullDocstringPassages(found))
			}})
	}
	if c.FAQGeneration != nil && len(c.Mailman) > 0 && n.FAQEntries > 0 {
		lists := make([]string, len(c.Mailman))
		for i, m := range c.Mailman {
			lists[i] = m.ListName
		}
		add(chat.SourceTool{Name: "search_" + id + "_faq", Description: knowledge.FAQDescription(name, lists),
			Params: []chat.ToolParam{queryParam, categoryParam, limitParam(5)},
			Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
				start := time.Now()
				q := knowledge.FilteredQuery{Query: str(a["query"]), Category: str(a["category"]), Limit: num(a["limit"])}
				found, err := st.SearchFAQ(ctx, id, q)
				k.observe(id, "search_faq", start, err != nil)
				return result(knowledge.FAQText(name, id, q, found, err), err, knowledge.FAQPassages(found))
			}})
	}
	if len(c.Discourse) > 0 && n.DiscourseTopics > 0 {
		add(chat.SourceTool{Name: "search_" + id + "_forum", Description: knowledge.ForumDescription(name),
			Params: []chat.ToolParam{queryParam, categoryParam, limitParam(5)},
			Run: func(ctx context.Context, a map[string]any) chat.KnowledgeResult {
				start := time.Now()
				q := knowledge.FilteredQuery{Query: str(a["query"]), Category: str(a["category"]), Limit: num(a["limit"])}
				found, err := st.SearchForum(ctx, id, q)
				k.observe(id, "search_forum", start, err != nil)
				return result(knowledge.ForumText(name, id, q, found, err), err, nil)
			}})
	}
	return out
}

package chat

import (
	"log/slog"
	"slices"
	"strings"
)

// Citations (knowledge.md §5): a citable tool's passages reach the model in the form its
// provider takes, and what the model cites comes back as the same reader-facing markers,
// citation events and done.citations whatever the provider.
//
// # The seam for citable tools
//
// A citable tool (retrieve_{id}_docs, search_{id}_docs, fetch_current_page, …; §5.1) has its
// passages ([]Passage: Source, Title, Text, one per document, section or page, §5.2's table)
// and the plain text it would give otherwise. Its run method builds its tool result with
//
//	content := r.citableContent(note, passages, plain)
//	b.results = append(b.results, Block{Type: BlockToolResult, ToolUseID: call.ID, IsError: isErr, Content: content})
//	r.sink.Send(ToolEndEvent{Name: call.Name, Output: toolEndOutput(content), CallID: call.ID})
//
// and nothing else: on the native and tagged paths content is note (when not "") as a text
// block, then one search_result block per passage with text (the tagged path renders them as
// [src:N] text at the model boundary, openai.go); on the plain path, or when no passage has
// text, it is plain as one text block. The prompt's citation section is
// CitationSection(CitationPathOf(route.Provider)).

// CitationPath is how a provider takes citable tool results and gives citations back.
type CitationPath int

const (
	// CitePlain: the provider passes tool results through as text. Citable tools give plain
	// text and the prompt carries the fallback instruction (§5.5).
	CitePlain CitationPath = iota
	// CiteNative: search_result blocks go to the model as they are and its citations come
	// back in the stream (§5.3): Anthropic, and the scripted model, which emits the same
	// events.
	CiteNative
	// CiteTagged: search_result blocks become [src:N]-tagged text at the model boundary and
	// the model's tags become citations (§5.4): the OpenAI-compatible APIs.
	CiteTagged
)

// String names the path, for logs.
func (p CitationPath) String() string {
	switch p {
	case CiteNative:
		return "native"
	case CiteTagged:
		return "tagged"
	}
	return "plain"
}

// citer is a Provider that says which citation path it takes.
type citer interface{ CitationPath() CitationPath }

// CitationPathOf is p's citation path: what its CitationPath method says, CitePlain for a
// provider without one.
func CitationPathOf(p Provider) CitationPath {
	if c, ok := p.(citer); ok {
		return c.CitationPath()
	}
	return CitePlain
}

// The citation sections of the system prompt (knowledge.md §5.4, §5.5), byte for byte.
const (
	taggedInstruction = "## Citing Sources\n\nThis section replaces any earlier instruction to link to your sources. " +
		"Retrieved documents, discussions, FAQ entries, forum posts and papers arrive tagged like `[src:3] Title`. " +
		"After each sentence that states a fact drawn from one, write its tag immediately after the sentence's final punctuation, " +
		"for example: `HED tags are assembled from a schema.[src:3]`. Write `[src:1][src:2]` when a claim rests on several sources. " +
		"Use only tags that appear in the tool results and never invent one. Do not write a markdown link or a URL for these sources, " +
		"and never write a bare `[3]`: the reader's screen turns each tag into a numbered, clickable citation. " +
		"A fact that did not come from a tool result gets no tag. If the tool results do not answer the question, say so and cite nothing."
	fallbackInstruction = "## Source Links Required (No Native Citations)\n\nThis session is not running on a provider that supports automatic inline citations. " +
		"Whenever you state a fact drawn from a retrieved document, GitHub discussion, FAQ entry, forum post, or paper, " +
		"end that sentence with a markdown link to its exact source immediately, " +
		"e.g. \"...as described in the tutorial ([source](https://example.com/tutorial)).\" " +
		"Do this after every such claim, not just once at the end of your response."
)

// CitationSection is the citation section of the system prompt for path: none on the native
// path, the tagged instruction on the tagged path, the fallback instruction on the plain path.
// Exactly one goes in a request's prompt (§5.5, {additional_instructions} of §3.4).
func CitationSection(path CitationPath) string {
	switch path {
	case CiteNative:
		return ""
	case CiteTagged:
		return taggedInstruction
	}
	return fallbackInstruction
}

// CitableContent is the content of a citable tool's result for path (knowledge.md §5.2): on
// the native and tagged paths, note (when not "") as a text block and then one search_result
// block per passage, those with empty text skipped (logged); plain as one text block on the
// plain path or when no passage has text.
func CitableContent(path CitationPath, note string, passages []Passage, plain string, log *slog.Logger) []Block {
	if path != CitePlain {
		var out []Block
		if note != "" {
			out = append(out, Block{Type: BlockText, Text: note})
		}
		skipped := 0
		for _, p := range passages {
			if strings.TrimSpace(p.Text) == "" {
				skipped++
				continue
			}
			out = append(out, Block{Type: BlockSearchResult, Source: p.Source, Title: p.Title, Content: []Block{{Type: BlockText, Text: p.Text}}})
		}
		if skipped > 0 && log != nil {
			log.Info("citable passages without text skipped", slog.Int("skipped", skipped), slog.Int("passages", len(passages)))
		}
		if skipped < len(passages) {
			return out
		}
	}
	return []Block{{Type: BlockText, Text: plain}}
}

// citableContent is CitableContent for the turn's provider.
func (r *turn) citableContent(note string, passages []Passage, plain string) []Block {
	return CitableContent(CitationPathOf(r.route.Provider), note, passages, plain, r.e.log())
}

// toolEndOutput is a tool result's content as tool_end shows it (api.md §5): text blocks as
// they are and any other block as "[<type> block, not shown in this event]", joined by blank
// lines.
func toolEndOutput(content []Block) string {
	parts := make([]string, 0, len(content))
	for _, b := range content {
		if b.Type == BlockText {
			parts = append(parts, b.Text)
			continue
		}
		parts = append(parts, "["+string(b.Type)+" block, not shown in this event]")
	}
	return strings.Join(parts, "\n\n")
}

// plainMessages is msgs for a provider on the plain path: the search_result blocks a history
// kept from another provider become the plain text of their passages.
func plainMessages(msgs []Message) []Message {
	var out []Message
	for i, m := range msgs {
		changed := false
		content := make([]Block, len(m.Content))
		for j, b := range m.Content {
			content[j] = b
			if b.Type != BlockToolResult {
				continue
			}
			for k, c := range b.Content {
				if c.Type != BlockSearchResult {
					continue
				}
				changed = true
				inner := slices.Clone(content[j].Content)
				inner[k] = Block{Type: BlockText, Text: c.Title + "\nSource: " + c.Source + "\n\n" + passageText(c)}
				content[j].Content = inner
			}
		}
		if changed {
			if out == nil {
				out = slices.Clone(msgs[:i])
			}
			out = append(out, Message{Role: m.Role, Content: content})
		} else if out != nil {
			out = append(out, m)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

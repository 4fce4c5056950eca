package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Scripted is the built-in offline model: deterministic, free, and needing no account, so a
// fresh checkout gives a working chat. It is a model of the protocol, not of language:
//
//   - when the newest user message holds a fenced ```python block and execute_code is bound,
//     it calls execute_code with exactly that code; the block may stand on one line (the OSA
//     widget's input is a single line, so a pasted block arrives with its newlines turned into
//     spaces), and then the code is what stands between the fences;
//   - when the newest user message holds no such code and a search_{id}_docs tool is bound,
//     it calls that tool with the message as the query;
//   - when the newest message is that tool's result, it answers by quoting the best passages
//     (the first three results, a sentence or two of each), each cited as Anthropic's stream
//     cites a search_result block, so the reader gets markers, citation events and
//     done.citations offline;
//   - when the newest message is another tool's result, it answers with text quoting the
//     result's status and stdout;
//   - otherwise it says what it is and how to configure a real model.
//
// Its text arrives in several TextDelta events, as a real model's would.
type Scripted struct{}

// ScriptedIntro is the offline model's answer to an ordinary message.
const ScriptedIntro = "I am the offline demo model of this assistant, so I cannot answer questions. " +
	"I can run Python for you: send a message with a fenced ```python block and I will ask your browser to run it. " +
	"To talk to a real model, set ANTHROPIC_API_KEY (or OPENAI_API_KEY or OPENROUTER_API_KEY) where the server runs, " +
	"or send your own key in the X-Anthropic-API-Key or X-OpenRouter-Key header."

// pythonBlockRE matches a fenced python block, on several lines or on one.
var pythonBlockRE = regexp.MustCompile("(?s)```python([ \\t]*\\r?\\n|[ \\t]+)(.*?)```")

// ImagesAllowed is false: the scripted model reads only text.
func (Scripted) ImagesAllowed() bool { return false }

// CitationPath reports CiteNative: the scripted model reads search_result blocks and cites
// them as Anthropic's stream does.
func (Scripted) CitationPath() CitationPath { return CiteNative }

// Stream answers req deterministically.
func (Scripted) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var last Message
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	if res, ok := lastToolResult(last); ok {
		if isDocsSearch(toolNameOf(req.Messages, res.ToolUseID)) {
			return quotePassages(emit, res)
		}
		return streamText(emit, quoteResult(res))
	}
	text := textOf(last)
	if m := pythonBlockRE.FindStringSubmatch(text); m != nil && hasTool(req.Tools, "execute_code") {
		code := m[2]
		if !strings.Contains(m[1], "\n") { // one line: the fences' spaces are not code
			code = strings.TrimSpace(code)
		}
		input, _ := json.Marshal(map[string]string{"code": code, "description": "Run the Python code from your message."})
		sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s", len(req.Messages), code))
		where := "in your browser"
		if tool(req.Tools, "execute_code").RunsOnServer {
			where = "on the server"
		}
		if err := emit(Event{Kind: TextDelta, Text: "I will run your code " + where + "."}); err != nil {
			return err
		}
		if err := emit(Event{Kind: ToolCall, Call: &Call{ID: "toolu_scripted_" + hex.EncodeToString(sum[:12]), Name: "execute_code", Input: input}}); err != nil {
			return err
		}
		return emit(Event{Kind: Done, StopReason: "tool_use", Usage: Usage{}})
	}
	if search := docsSearchTool(req.Tools); search != "" && strings.TrimSpace(text) != "" {
		query := clip(strings.TrimSpace(text), maxQueryChars)
		input, _ := json.Marshal(map[string]string{"query": query})
		sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s", len(req.Messages), query))
		if err := emit(Event{Kind: ToolCall, Call: &Call{ID: "toolu_scripted_" + hex.EncodeToString(sum[:12]), Name: search, Input: input}}); err != nil {
			return err
		}
		return emit(Event{Kind: Done, StopReason: "tool_use", Usage: Usage{}})
	}
	return streamText(emit, ScriptedIntro)
}

// docsSearchRE matches the name of a community's documentation search, search_{id}_docs.
var docsSearchRE = regexp.MustCompile(`^search_[A-Za-z0-9_-]+_docs$`)

func isDocsSearch(name string) bool { return docsSearchRE.MatchString(name) }

// docsSearchTool is the bound search_{id}_docs tool, or "". The shortest name of that form
// is the one: search_{id}_code_docs has the same form.
func docsSearchTool(tools []Tool) string {
	best := ""
	for _, t := range tools {
		if isDocsSearch(t.Name) && (best == "" || len(t.Name) < len(best)) {
			best = t.Name
		}
	}
	return best
}

// toolNameOf is the name of the tool call id in msgs, or "".
func toolNameOf(msgs []Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, b := range msgs[i].Content {
			if b.Type == BlockToolUse && b.ToolUseID == id {
				return b.Name
			}
		}
	}
	return ""
}

// Texts of the scripted model's documentation answers.
const (
	scriptedQuoteIntro = "I am the offline demo model, so I quote the documentation rather than answer in my own words. The passages that match your question best:"
	scriptedNoPassage  = "I searched the documentation, but it gave me no passage to quote for that. Ask about something it covers, or send a fenced ```python block and I will run it."
	// scriptedQuotes is how many results are quoted, scriptedSentences how many sentences
	// of each, at most scriptedQuoteChars characters.
	scriptedQuotes     = 3
	scriptedSentences  = 2
	scriptedQuoteChars = 400
)

// quotePassages answers a documentation search's result with a sentence or two of each of
// its first passages, one text block each, cited natively: the citation first, then the
// text, then the block's end, as Anthropic streams a block that cites a search_result.
func quotePassages(emit func(Event) error, res Block) error {
	var passages []Block
	for _, b := range res.Content {
		if b.Type == BlockSearchResult && len(passages) < scriptedQuotes {
			if q := quoteOf(passageText(b)); q != "" {
				passages = append(passages, Block{Source: b.Source, Title: b.Title, Text: q})
			}
		}
	}
	if len(passages) == 0 {
		return streamText(emit, scriptedNoPassage)
	}
	if err := streamBlock(emit, 0, scriptedQuoteIntro, nil); err != nil {
		return err
	}
	for i, p := range passages {
		title := strings.TrimSpace(oneLine(p.Title))
		shown := title
		if shown == "" {
			shown = "Untitled"
		}
		text := "\n\n" + shown + ": " + p.Text
		if err := streamBlock(emit, i+1, text, &Cited{Source: p.Source, Title: title, CitedText: p.Text}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: Done, StopReason: "end_turn", Usage: Usage{}})
}

// quoteOf is the first sentences of a passage's prose, clipped: headings, fenced code and
// table rows are left out, and a paragraph's lines are joined, as Markdown shows them.
func quoteOf(text string) string {
	var picked []string
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if strings.HasPrefix(strings.TrimSpace(para), "```") {
			continue
		}
		var lines []string
		for _, line := range strings.Split(para, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "|") {
				lines = append(lines, l)
			}
		}
		for _, s := range sentences(strings.Join(lines, " ")) {
			if !strings.ContainsFunc(s, unicode.IsLetter) {
				continue
			}
			if picked = append(picked, s); len(picked) == scriptedSentences {
				return cutChars(strings.Join(picked, " "), scriptedQuoteChars)
			}
		}
	}
	return cutChars(strings.Join(picked, " "), scriptedQuoteChars)
}

// streamBlock sends one text block in a few pieces, its citation (if any) first, then its end.
func streamBlock(emit func(Event) error, index int, text string, c *Cited) error {
	if c != nil {
		if err := emit(Event{Kind: CitationDelta, Index: index, Cite: c}); err != nil {
			return err
		}
	}
	words := strings.SplitAfter(text, " ")
	per := max(1, (len(words)+2)/3)
	for i := 0; i < len(words); i += per {
		if err := emit(Event{Kind: TextDelta, Index: index, Text: strings.Join(words[i:min(i+per, len(words))], "")}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: BlockEnd, Index: index})
}

func hasTool(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func tool(tools []Tool, name string) Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return Tool{}
}

// textOf is the text the reader wrote in m: a files note is data, never a request.
func textOf(m Message) string {
	var b strings.Builder
	for _, blk := range m.Content {
		if blk.Type == BlockText && blk.Files == "" {
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

func lastToolResult(m Message) (Block, bool) {
	for _, blk := range m.Content {
		if blk.Type == BlockToolResult {
			return blk, true
		}
	}
	return Block{}, false
}

var (
	statusLineRE = regexp.MustCompile(`(?m)^status: (\S+)$`)
	stdoutRE     = regexp.MustCompile(`(?s)<stdout>\n(.*?)\n</stdout>`)
)

// quoteResult reads the fenced result text the model would see and quotes its status and
// stdout.
func quoteResult(res Block) string {
	var text string
	for _, b := range res.Content {
		if b.Type == BlockText {
			text += b.Text
		}
	}
	status := "unknown"
	if m := statusLineRE.FindStringSubmatch(text); m != nil {
		status = m[1]
	}
	out := "The code finished with status " + status + "."
	if m := stdoutRE.FindStringSubmatch(text); m != nil {
		out += " It printed:\n\n```\n" + strings.TrimRight(m[1], "\n") + "\n```"
	} else {
		out += " It printed nothing."
	}
	return out
}

// streamText sends text in several pieces, split at spaces, then Done.
func streamText(emit func(Event) error, text string) error {
	const pieces = 4
	words := strings.SplitAfter(text, " ")
	per := max(1, (len(words)+pieces-1)/pieces)
	for i := 0; i < len(words); i += per {
		if err := emit(Event{Kind: TextDelta, Text: strings.Join(words[i:min(i+per, len(words))], "")}); err != nil {
			return err
		}
	}
	return emit(Event{Kind: Done, StopReason: "end_turn", Usage: Usage{}})
}

package chat

import (
	"log/slog"
	"strconv"
	"strings"
)

// The marker state machine (knowledge.md §5.3). A provider's stream says which text block
// cites which passage (CitationDelta events, on every path: the tagged path's adapter turns
// [src:N] tags into them). The turn gives each distinct non-empty source a marker, 1, 2, … in
// first-cited order across the whole reply (its model calls and its browser-tool
// continuations); when a text block that cites is complete, a citation event goes out for
// each source cited for the first time, then one content chunk with the block's markers.

// replyCites is what one reply has cited so far: one Citation per marker, in marker order.
type replyCites struct {
	list Citations
}

// marker is the marker of c's source, and whether it is new (c is its first citation).
func (rc *replyCites) marker(c Cited) (int, bool) {
	for _, have := range rc.list {
		if have.Source == c.Source {
			return have.Marker, false
		}
	}
	m := len(rc.list) + 1
	rc.list = append(rc.list, Citation{Marker: m, Source: c.Source, Title: c.Title, CitedText: c.CitedText})
	return m, true
}

// replyCitations is the citation list of the reply history ends in: what the assistant text
// blocks after its newest reader's message cite. A resumed reply goes on numbering from it.
func replyCitations(history []Message) replyCites {
	start := 0
	for i := len(history) - 1; i >= 0; i-- {
		if isHumanTurn(history[i]) {
			start = i + 1
			break
		}
	}
	var rc replyCites
	for _, m := range history[start:] {
		if m.Role != RoleAssistant {
			continue
		}
		for _, b := range m.Content {
			for _, c := range b.Citations {
				if c.Marker == len(rc.list)+1 {
					rc.list = append(rc.list, Citation(c))
				}
			}
		}
	}
	return rc
}

// textPiece is a run of a model call's text, or (group non-nil) a marker group: the sources
// a complete block cites, each once, with its marker.
type textPiece struct {
	text  string
	group []Cited
}

// callText is one model call's text as it streams: its pieces, the open text block and the
// citations waiting for it to be complete.
type callText struct {
	pieces []textPiece
	// open is the text block being written (-1: none), text whether any of its text came.
	open    int
	text    bool
	pending []Cited
	// held are the citations of complete blocks that had no text: the next block with text
	// carries them (a citation is shown after the text it cites, never before).
	held []Cited
	log  *slog.Logger
}

func newCallText(log *slog.Logger) *callText {
	return &callText{open: -1, log: log}
}

// handle takes one provider event and returns the reader's events it makes, in order. A
// TextDelta is a content event at once; a block's citations wait for the block to be
// complete (BlockEnd, an event of another block, a ToolCall or Done).
func (ct *callText) handle(ev Event, rc *replyCites) []StreamEvent {
	var out []StreamEvent
	switch ev.Kind {
	case TextDelta:
		if ev.Index != ct.open {
			out = ct.close(rc)
			ct.open = ev.Index
		}
		if ev.Text == "" {
			return out
		}
		ct.text = true
		ct.pieces = append(ct.pieces, textPiece{text: ev.Text})
		return append(out, ContentEvent{Content: ev.Text})
	case CitationDelta:
		if ev.Index != ct.open {
			out = ct.close(rc)
			ct.open = ev.Index
		}
		if ev.Cite != nil {
			ct.pending = append(ct.pending, *ev.Cite)
		}
		return out
	case BlockEnd:
		if ev.Index == ct.open {
			return ct.close(rc)
		}
	case ToolCall:
		return ct.close(rc)
	case Notice:
		ct.log.Info("model stream: " + ev.Text)
	case Done:
		out = ct.close(rc)
		if len(ct.held) > 0 {
			if ct.hasText() {
				out = append(out, ct.group(ct.held, rc)...)
			} else {
				ct.log.Info("citations of a reply without text dropped", slog.Int("citations", len(ct.held)))
			}
			ct.held = nil
		}
		return out
	}
	return nil
}

// close completes the open block: its citations become a marker group after its text (or are
// held for the next block with text).
func (ct *callText) close(rc *replyCites) []StreamEvent {
	cites, hadText := ct.pending, ct.text
	ct.open, ct.text, ct.pending = -1, false, nil
	if !hadText {
		ct.held = append(ct.held, cites...)
		return nil
	}
	if len(ct.held) > 0 {
		cites = append(ct.held, cites...)
		ct.held = nil
	}
	if len(cites) == 0 {
		return nil
	}
	return ct.group(cites, rc)
}

// group ends the text so far with a marker group for cites: a citation event for each source
// cited for the first time in the reply, then the group's markers as one content chunk.
func (ct *callText) group(cites []Cited, rc *replyCites) []StreamEvent {
	var out []StreamEvent
	var group []Cited
	var markers strings.Builder
	for _, c := range cites {
		if c.Source == "" {
			ct.log.Info("a citation without a source gets no marker", slog.String("title", c.Title))
			continue
		}
		m, isNew := rc.marker(c)
		if isNew {
			out = append(out, CitationEvent{Marker: m, Source: c.Source, Title: c.Title, CitedText: c.CitedText})
		}
		if groupHas(group, m) {
			continue
		}
		c.Marker = m
		group = append(group, c)
		markers.WriteString(markerText(m))
	}
	if len(group) == 0 {
		return out
	}
	ct.pieces = append(ct.pieces, textPiece{group: group})
	return append(out, ContentEvent{Content: markers.String()})
}

func groupHas(group []Cited, marker int) bool {
	for _, c := range group {
		if c.Marker == marker {
			return true
		}
	}
	return false
}

func markerText(m int) string { return "[" + strconv.Itoa(m) + "]" }

func (ct *callText) hasText() bool {
	for _, p := range ct.pieces {
		if p.group == nil && p.text != "" {
			return true
		}
	}
	return false
}

// String is the call's text with its markers, normalised (what done.content holds of it).
func (ct *callText) String() string {
	var b strings.Builder
	for _, s := range ct.segments() {
		b.WriteString(s.Text)
	}
	return b.String()
}

// blocks are the call's text as the history keeps it: one text block per segment, each
// ending with its markers and carrying their citations, so the markers are kept and the
// tagged path can show an earlier reply's citations as tags.
func (ct *callText) blocks() []Block {
	var out []Block
	for _, s := range ct.segments() {
		if s.Text != "" {
			out = append(out, s)
		}
	}
	return out
}

// segments normalises the call's text: each marker group goes right after the sentence-final
// punctuation of the sentence its block ended in (§5.3), and the text is cut after each group.
func (ct *callText) segments() []Block {
	var raw strings.Builder
	type at struct {
		pos   int
		group []Cited
	}
	var groups []at
	for _, p := range ct.pieces {
		if p.group != nil {
			groups = append(groups, at{raw.Len(), p.group})
			continue
		}
		raw.WriteString(p.text)
	}
	text := raw.String()
	if len(groups) == 0 {
		return []Block{{Type: BlockText, Text: text}}
	}
	// Each group's place, never before an earlier group's; groups meeting at one place merge.
	var merged []at
	last := 0
	for _, g := range groups {
		q := max(markerPlace(text, g.pos), last)
		last = q
		if n := len(merged); n > 0 && merged[n-1].pos == q {
			for _, c := range g.group {
				if !groupHas(merged[n-1].group, c.Marker) {
					merged[n-1].group = append(merged[n-1].group, c)
				}
			}
			continue
		}
		merged = append(merged, at{q, append([]Cited(nil), g.group...)})
	}
	var out []Block
	prev := 0
	for _, g := range merged {
		var b strings.Builder
		b.WriteString(text[prev:g.pos])
		for _, c := range g.group {
			b.WriteString(markerText(c.Marker))
		}
		out = append(out, Block{Type: BlockText, Text: b.String(), Citations: g.group})
		prev = g.pos
	}
	if prev < len(text) {
		out = append(out, Block{Type: BlockText, Text: text[prev:]})
	}
	return out
}

// markerPlace is where a marker group written at byte p of text goes (knowledge.md §5.3): a
// block that ended a sentence keeps it there, before any spaces after the punctuation; one
// that ended a line keeps it at that line's end; one that ended mid-sentence has it moved
// forward to the next '.', '!' or '?' followed by whitespace or the end, or to the line end,
// whichever comes first, or to the end of the text (before its trailing spaces).
func markerPlace(text string, p int) int {
	q := p
	for q > 0 && isHSpace(text[q-1]) {
		q--
	}
	switch {
	case q > 0 && isSentenceEnd(text, q-1):
		return q
	case q > 0 && text[q-1] == '\n':
		for q > 0 && (isHSpace(text[q-1]) || text[q-1] == '\n' || text[q-1] == '\r') {
			q--
		}
		return q
	}
	for i := p; i < len(text); i++ {
		switch {
		case text[i] == '\n':
			return trimHSpaceLeft(text, i, q)
		case isSentenceEnd(text, i):
			return i + 1
		}
	}
	return trimHSpaceLeft(text, len(text), q)
}

// trimHSpaceLeft moves i back over horizontal spaces, no further than floor.
func trimHSpaceLeft(text string, i, floor int) int {
	for i > floor && (isHSpace(text[i-1]) || text[i-1] == '\r') {
		i--
	}
	return i
}

// isSentenceEnd reports whether text[i] is a '.', '!' or '?' followed by whitespace or the end.
func isSentenceEnd(text string, i int) bool {
	switch text[i] {
	case '.', '!', '?':
		return i+1 == len(text) || isSpaceByte(text[i+1])
	}
	return false
}

func isHSpace(c byte) bool { return c == ' ' || c == '\t' }
func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// blocksText is the text of text blocks, joined as they were written.
func blocksText(blocks []Block) string {
	var b strings.Builder
	for _, blk := range blocks {
		if blk.Type == BlockText {
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

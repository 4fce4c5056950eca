package chat

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tagged path (knowledge.md §5.4): a provider without search_result blocks gets each one
// as text opened by a [src:N] tag, and the model's [src:N] tags become the citations the
// native path gets from its stream, so the reader sees the same markers and events.

// taggedSource is one distinct source of a conversation's search_result blocks: its number,
// and every passage of it the conversation holds.
type taggedSource struct {
	n        int
	source   string
	title    string
	passages []string
}

// taggedSources numbers the sources of one request.
type taggedSources struct {
	list     []*taggedSource
	bySource map[string]*taggedSource
}

// numberSources numbers the distinct sources of the search_result blocks in msgs' tool
// results by first appearance (a source met again keeps its number and adds its passage), so
// the numbers are the same for every model call of a reply.
func numberSources(msgs []Message) *taggedSources {
	ts := &taggedSources{bySource: map[string]*taggedSource{}}
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type != BlockToolResult {
				continue
			}
			for _, c := range b.Content {
				if c.Type != BlockSearchResult {
					continue
				}
				s := ts.bySource[c.Source]
				if s == nil {
					s = &taggedSource{n: len(ts.list) + 1, source: c.Source, title: c.Title}
					ts.list = append(ts.list, s)
					ts.bySource[c.Source] = s
				}
				s.passages = append(s.passages, passageText(c))
			}
		}
	}
	return ts
}

// byNumber is source n, or nil.
func (ts *taggedSources) byNumber(n int) *taggedSource {
	if n < 1 || n > len(ts.list) {
		return nil
	}
	return ts.list[n-1]
}

// passageText is a search_result block's text.
func passageText(b Block) string {
	var parts []string
	for _, c := range b.Content {
		if c.Type == BlockText {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// taggedBlock is search_result block b as the tagged path shows it, numbered n (§5.4).
func taggedBlock(b Block, n int) string {
	tag := "[src:" + strconv.Itoa(n) + "]"
	heading := strings.TrimRight(oneLine(tag+" "+defang(b.Title)), " ")
	return heading + "\nSource: " + strings.TrimRight(oneLine(defang(b.Source)), " ") + "\n" + defang(passageText(b)) +
		"\n\n(End of " + tag + ". Cite a claim drawn from it by writing " + tag + " after the sentence.)"
}

// oneLine collapses every run of whitespace in s to one space.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// The look-alikes of a tag in a passage (§5.4): a bracketed one, and any other opening of one.
// The second also takes spaces before the colon, as the tag reader does, so no defanged text
// holds anything the reader would take for a tag.
var (
	lookAlikeRE = regexp.MustCompile(`(?i)[\[［]([\t\p{Zs}]*src[\t\p{Zs}]*[:：][^\[\]［］\n]{0,40})[\]］]`)
	openingRE   = regexp.MustCompile(`(?i)[\[［]([\t\p{Zs}]*src[\t\p{Zs}]*[:：])`)
)

// defang turns the tag look-alikes of a passage's text into parentheses, so a document cannot
// make the model cite the wrong source.
func defang(s string) string {
	if !strings.ContainsAny(s, "[［") {
		return s
	}
	s = lookAlikeRE.ReplaceAllString(s, "($1)")
	return openingRE.ReplaceAllString(s, "($1")
}

// taggedAssistant is an earlier reply's text block as the tagged path shows it: its markers
// (the group it ends with) become the [src:N] tags of their sources.
func taggedAssistant(b Block, ts *taggedSources) string {
	if len(b.Citations) == 0 {
		return b.Text
	}
	var group, tags strings.Builder
	for _, c := range b.Citations {
		if c.Marker > 0 {
			group.WriteString(markerText(c.Marker))
		}
		if s := ts.bySource[c.Source]; s != nil && c.Source != "" {
			tags.WriteString("[src:" + strconv.Itoa(s.n) + "]")
		}
	}
	return strings.TrimSuffix(b.Text, group.String()) + tags.String()
}

// The bounds of a tag as the tag reader takes it: the whitespace before it (removed with it)
// and the bracketed part.
const (
	maxTagSpace = 64
	maxTagChars = 48
)

// tagMatch is what matchTag found at the start of a text.
type tagMatch int

const (
	tagNone    tagMatch = iota // no tag starts here
	tagPartial                 // the text ends inside what could still be one
	tagFull                    // a whole tag
)

// matchTag reads a tag at the start of s (§5.4): at most 64 characters of horizontal
// whitespace, then "[", spaces, "src", spaces, ":", spaces, a number, further numbers after
// "," or ";" (each optionally "src:"-prefixed), spaces, "]", in any case, the bracketed part
// at most 48 characters. It returns the tag's length in bytes and its numbers (-1 for one too
// large to be a source's).
func matchTag(s string) (n int, nums []int, m tagMatch) {
	t := tagReader{s: s}
	for spaces := 0; ; spaces++ {
		r, ok := t.peek()
		if !ok {
			return 0, nil, tagPartial
		}
		if r == '[' {
			break
		}
		if !isTagSpace(r) || spaces == maxTagSpace {
			return 0, nil, tagNone
		}
		t.next()
	}
	t.next()
	t.start = t.runes
	nums, m = t.body()
	if m == tagFull {
		return t.i, nums, tagFull
	}
	return 0, nil, m
}

// tagReader reads a tag a rune at a time; running out of text inside one is partial.
type tagReader struct {
	s     string
	i     int
	runes int // read so far
	start int // runes before the bracketed part began
}

func (t *tagReader) peek() (rune, bool) {
	if t.i >= len(t.s) {
		return 0, false
	}
	r, _ := utf8.DecodeRuneInString(t.s[t.i:])
	return r, true
}

func (t *tagReader) next() {
	_, size := utf8.DecodeRuneInString(t.s[t.i:])
	t.i += size
	t.runes++
}

// tooLong reports that the bracketed part already has more characters than a tag may.
func (t *tagReader) tooLong() bool { return t.runes-t.start+1 > maxTagChars }

// spaces skips horizontal whitespace; it reports false when the text ended.
func (t *tagReader) spaces() bool {
	for {
		r, ok := t.peek()
		if !ok {
			return false
		}
		if !isTagSpace(r) {
			return true
		}
		t.next()
	}
}

// body reads what follows the "[".
func (t *tagReader) body() ([]int, tagMatch) {
	if m := t.srcColon(); m != tagFull {
		return nil, m
	}
	var nums []int
	for {
		n, m := t.number()
		if m != tagFull {
			return nil, m
		}
		nums = append(nums, n)
		if !t.spaces() {
			return nil, t.partial()
		}
		r, _ := t.peek()
		switch r {
		case ']':
			t.next()
			if t.tooLong() {
				return nil, tagNone
			}
			return nums, tagFull
		case ',', ';':
			t.next()
			if !t.spaces() {
				return nil, t.partial()
			}
			if r, _ := t.peek(); r == 's' || r == 'S' {
				if m := t.srcColon(); m != tagFull {
					return nil, m
				}
			}
		default:
			return nil, tagNone
		}
	}
}

// partial is tagPartial while the bracketed part may still grow, tagNone once it is too long.
func (t *tagReader) partial() tagMatch {
	if t.tooLong() {
		return tagNone
	}
	return tagPartial
}

// srcColon reads spaces, "src", spaces, ":", spaces.
func (t *tagReader) srcColon() tagMatch {
	if !t.spaces() {
		return t.partial()
	}
	for _, want := range "src" {
		r, ok := t.peek()
		if !ok {
			return t.partial()
		}
		if unicode.ToLower(r) != want {
			return tagNone
		}
		t.next()
	}
	if !t.spaces() {
		return t.partial()
	}
	if r, _ := t.peek(); r != ':' {
		return tagNone
	}
	t.next()
	if !t.spaces() {
		return t.partial()
	}
	if t.tooLong() {
		return tagNone
	}
	return tagFull
}

// number reads one or more ASCII digits.
func (t *tagReader) number() (int, tagMatch) {
	start := t.i
	for {
		r, ok := t.peek()
		if !ok {
			return 0, t.partial()
		}
		if r < '0' || r > '9' {
			break
		}
		t.next()
	}
	if t.i == start {
		return 0, tagNone
	}
	if t.tooLong() {
		return 0, tagNone
	}
	n, err := strconv.Atoi(t.s[start:t.i])
	if err != nil {
		n = -1
	}
	return n, tagFull
}

// isTagSpace: the horizontal whitespace around a tag.
func isTagSpace(r rune) bool { return r == '\t' || unicode.Is(unicode.Zs, r) }

// tagStream turns a tagged model's text into the events the native path gives: text as
// TextDelta, and each group of tags (tags with only horizontal whitespace between) that names
// a source as the CitationDelta events and the BlockEnd of the segment it closes. Text that
// could still become a tag is held back until it is known not to be one.
type tagStream struct {
	srcs *taggedSources
	emit func(Event) error
	// pend is text not yet let out: it could still be (the start of) a tag.
	pend string
	// group is the numbers of the tags read since the last text.
	group []int
	// seg is the text of the segment the next group closes; index is its block index.
	seg   strings.Builder
	index int
}

func newTagStream(srcs *taggedSources, emit func(Event) error) *tagStream {
	return &tagStream{srcs: srcs, emit: emit}
}

// notice sends a note for the turn's log.
func (ts *tagStream) notice(format string, args ...any) error {
	return ts.emit(Event{Kind: Notice, Text: fmt.Sprintf(format, args...)})
}

// write takes the next piece of the model's text.
func (ts *tagStream) write(s string) error { return ts.scan(ts.pend+s, false) }

// flush lets out what is held at the end of the text and closes the last group.
func (ts *tagStream) flush() error {
	if err := ts.scan(ts.pend, true); err != nil {
		return err
	}
	return ts.closeGroup()
}

// scan reads buf: tags are cut and gathered, text is let out, and a tail that could still
// become a tag is kept for the next write (unless final).
func (ts *tagStream) scan(buf string, final bool) error {
	ts.pend = ""
	textStart := 0
	for i := 0; i < len(buf); {
		c := buf[i]
		if c == '[' || c == '\t' || c >= utf8.RuneSelf || c == ' ' {
			n, nums, m := matchTag(buf[i:])
			switch {
			case m == tagFull:
				if err := ts.text(buf[textStart:i]); err != nil {
					return err
				}
				ts.group = append(ts.group, nums...)
				i += n
				textStart = i
				continue
			case m == tagPartial && !final:
				ts.pend = buf[i:]
				return ts.text(buf[textStart:i])
			}
		}
		_, size := utf8.DecodeRuneInString(buf[i:])
		i += size
	}
	return ts.text(buf[textStart:])
}

// text lets out text, closing the group before it.
func (ts *tagStream) text(s string) error {
	if s == "" {
		return nil
	}
	if err := ts.closeGroup(); err != nil {
		return err
	}
	ts.seg.WriteString(s)
	return ts.emit(Event{Kind: TextDelta, Index: ts.index, Text: s})
}

// closeGroup ends the open group of tags: its numbers that name a source, each once, become
// citations of the segment, which ends. A group naming none closes nothing; one with no text
// since the last segment is dropped.
func (ts *tagStream) closeGroup() error {
	nums := ts.group
	ts.group = nil
	if len(nums) == 0 {
		return nil
	}
	var cites []*taggedSource
	for _, n := range nums {
		s := ts.srcs.byNumber(n)
		if s == nil {
			if err := ts.notice("citation tag [src:%d] names no source (the request has %d); dropped", n, len(ts.srcs.list)); err != nil {
				return err
			}
			continue
		}
		if !containsSource(cites, s) {
			cites = append(cites, s)
		}
	}
	if len(cites) == 0 {
		return nil
	}
	segment := ts.seg.String()
	if strings.TrimSpace(segment) == "" {
		return ts.notice("citation tags with no text before them dropped (%d sources)", len(cites))
	}
	for _, s := range cites {
		c := &Cited{Source: s.source, Title: s.title, CitedText: bestSentence(s.passages, segment)}
		if err := ts.emit(Event{Kind: CitationDelta, Index: ts.index, Cite: c}); err != nil {
			return err
		}
	}
	if err := ts.emit(Event{Kind: BlockEnd, Index: ts.index}); err != nil {
		return err
	}
	ts.seg.Reset()
	ts.index++
	return nil
}

func containsSource(list []*taggedSource, s *taggedSource) bool {
	for _, have := range list {
		if have == s {
			return true
		}
	}
	return false
}

// maxCitedChars bounds a tagged citation's cited_text.
const maxCitedChars = 300

// bestSentence is the cited_text of a tagged citation (§5.4): of the source's passages split
// into sentences, the one sharing most words of 4+ letters or digits with the segment that
// cites it (the first of equals), else the first sentence, cut at 300 characters.
func bestSentence(passages []string, segment string) string {
	want := map[string]bool{}
	for _, w := range longWords(segment) {
		want[w] = true
	}
	best, bestScore := "", -1
	for _, p := range passages {
		for _, s := range sentences(p) {
			score := 0
			seen := map[string]bool{}
			for _, w := range longWords(s) {
				if want[w] && !seen[w] {
					seen[w] = true
					score++
				}
			}
			if score > bestScore {
				best, bestScore = s, score
			}
		}
	}
	return cutChars(best, maxCitedChars)
}

// sentences splits text after '.', '!' or '?' followed by whitespace, and at newlines; each
// trimmed, empty ones left out.
func sentences(text string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '\n':
			add(text[start:i])
			start = i + 1
		case (text[i] == '.' || text[i] == '!' || text[i] == '?') && i+1 < len(text) && isSpaceByte(text[i+1]):
			add(text[start : i+1])
			start = i + 1
		}
	}
	add(text[start:])
	return out
}

// longWords are the runs of letters and digits of 4 or more characters in s, lower-cased.
func longWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if utf8.RuneCountInString(w) >= 4 {
			out = append(out, strings.ToLower(w))
		}
	}
	return out
}

// cutChars is s when it has at most n characters, else its first n and "...".
func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}

package knowledge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Heading is a heading the HTML converter wrote, with the anchor it keeps for it: the
// heading's id, else the id of its enclosing section (spec §3.2 "Anchor").
type Heading struct {
	Level int `json:"level"`
	// Text is the heading's plain text, to match it with the heading the sectioner reads.
	Text   string `json:"text"`
	Anchor string `json:"anchor"`
}

// Converted is a document converted to Markdown, before cleaning.
type Converted struct {
	Markdown string
	// HTML is true when the document was HTML; Headings is then every heading written, in
	// order, with its anchor.
	HTML     bool
	Headings []Heading
}

// IsHTML decides whether a fetched body is HTML (spec §3.3 step 1): the body, after leading
// whitespace, starts with <!DOCTYPE, <!doctype, <html or <HTML. We differ: for the types html
// (the default), sphinx and mkdocs, any letter case and a text/html Content-Type also count;
// markdown and json are never HTML.
func IsHTML(body []byte, contentType, docType string) bool {
	switch docType {
	case "markdown", "json":
		return false
	}
	t := bytes.TrimLeft(body, " \t\r\n\f\v")
	for _, p := range []string{"<!DOCTYPE", "<!doctype", "<html", "<HTML"} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	switch docType {
	case "", "html", "sphinx", "mkdocs":
	default:
		return false
	}
	for _, p := range []string{"<!doctype", "<html"} {
		if len(t) >= len(p) && strings.EqualFold(string(t[:len(p)]), p) {
			return true
		}
	}
	return strings.Contains(strings.ToLower(contentType), "text/html")
}

// Convert turns a fetched body into Markdown by its type (spec §3.3): HTML's main content to
// Markdown, JSON pretty-printed in a ```json fence, anything else as it is. Links and images
// are resolved against base when it is an absolute URL. Invalid UTF-8 is replaced.
func Convert(body []byte, contentType, docType, base string) Converted {
	return ConvertContext(context.Background(), body, contentType, docType, base)
}

// ConvertContext is Convert that stops writing HTML's Markdown, between blocks, once ctx
// ends; the caller then drops the partial result.
func ConvertContext(ctx context.Context, body []byte, contentType, docType, base string) Converted {
	if !utf8.Valid(body) {
		body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	if docType == "json" {
		var buf bytes.Buffer
		text := strings.TrimSpace(string(body))
		// Indentation grows with depth on every line: a deep document (a few KB of "[[[[")
		// would grow a hundredfold, so past a modest depth it is kept as it came.
		if jsonDepth(text) <= maxJSONIndentDepth && json.Indent(&buf, []byte(text), "", "  ") == nil {
			text = buf.String()
		}
		return Converted{Markdown: "```json\n" + text + "\n```\n"}
	}
	if !IsHTML(body, contentType, docType) {
		return Converted{Markdown: string(body)}
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil { // html.Parse only fails on a reader error
		return Converted{Markdown: string(body)}
	}
	c := &converter{limit: maxConvertedBytes, done: ctx.Done()}
	if u, err := url.Parse(base); err == nil && u.IsAbs() {
		c.base = u
	}
	c.block(mainContent(doc), 0)
	return Converted{Markdown: c.out.String(), HTML: true, Headings: c.headings}
}

// maxJSONIndentDepth is the deepest JSON document that is pretty-printed.
const maxJSONIndentDepth = 32

// jsonDepth is the deepest nesting of arrays and objects in s, outside strings.
func jsonDepth(s string) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// mainSelectors are tried in order; the first match in document order wins (spec §3.3 step 2).
var mainSelectors = []struct {
	tag         atom.Atom
	class, role string
}{
	{atom.Article, "bd-article", ""},
	{atom.Div, "", "main"},
	{atom.Article, "", "main"},
	{atom.Main, "", ""},
	{atom.Div, "document", ""},
	{atom.Div, "md-content", ""},
}

func mainContent(doc *html.Node) *html.Node {
	for _, sel := range mainSelectors {
		if n := find(doc, func(n *html.Node) bool {
			return n.DataAtom == sel.tag && (sel.class == "" || hasClass(n, sel.class)) &&
				(sel.role == "" || attr(n, "role") == sel.role)
		}); n != nil {
			return n
		}
	}
	if n := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Body }); n != nil {
		return n
	}
	return doc
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && match(c) {
			return c
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for c := range strings.FieldsSeq(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// skipped reports whether an element is left out with its contents: the spec's nav, footer,
// aside, script, style and Sphinx permalinks, and besides them what is never text (template,
// noscript, svg, forms' buttons) and MkDocs' and Sphinx's "¶" / "#" permalinks of any class.
func skipped(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Nav, atom.Footer, atom.Aside, atom.Script, atom.Style, atom.Template, atom.Noscript,
		atom.Svg, atom.Button, atom.Head:
		return true
	case atom.A:
		if hasClass(n, "headerlink") {
			return true
		}
		if strings.HasPrefix(attr(n, "href"), "#") {
			t, ok := shortText(n, len("¶"))
			return ok && (t == "#" || t == "¶" || t == "§")
		}
	}
	return false
}

// converter writes Markdown from an HTML tree, block by block.
type converter struct {
	out      strings.Builder
	base     *url.URL
	headings []Heading
	// nest is how many quotes and lists enclose this converter's output; past maxNest their
	// content is written flat, since each level copies and prefixes every line again.
	nest int
	// limit is the most bytes out takes: maxConvertedBytes for the page's converter, what
	// its parent may still write for a quote's or a list item's. Nothing is built past it.
	limit int
	// done is the conversion's ctx.Done(), checked between blocks.
	done <-chan struct{}
}

// Bounds on one conversion's output: a page can nest quotes and lists to make every line
// longer and copied once per level, and emphasis or links to make each level copy the text
// inside it. Each converter (the page's and one per open level) writes at most what its
// parent may still write, checked inside blocks too, so a conversion holds at most
// (maxNest+1) times maxConvertedBytes; a table cell is at most maxCellChars, a nested
// table in it written flat as the cell's text.
const (
	maxNest           = 6
	maxConvertedBytes = MaxDocumentBytes
	maxCellChars      = 2000
	// maxEmphasis is how many emphases and links inside one another get their markers;
	// deeper ones are written as their text.
	maxEmphasis = 3
)

// maxDepth bounds the converter's recursion; html.Parse refuses a page nested deeper than
// 512 elements, so no content of a parsed page is deeper than this.
const maxDepth = 2048

func (c *converter) sub() *converter {
	return &converter{base: c.base, nest: c.nest + 1, limit: c.room(), done: c.done}
}

// room is how many more bytes the converter may write.
func (c *converter) room() int { return max(0, c.limit-c.out.Len()) }

// stopped reports whether nothing more is written: the output is full or the context ended.
func (c *converter) stopped() bool {
	if c.out.Len() >= c.limit {
		return true
	}
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// blank ends the current block: the output ends in exactly one blank line (or is empty).
func (c *converter) blank() {
	s := c.out.String()
	if s == "" || strings.HasSuffix(s, "\n\n") {
		return
	}
	if strings.HasSuffix(s, "\n") {
		c.out.WriteString("\n")
		return
	}
	c.out.WriteString("\n\n")
}

// writeBlock writes a block's lines, each prefixed (for list items and quotes).
func (c *converter) writeBlock(text, first, rest string) {
	text = strings.Trim(text, "\n")
	if strings.TrimSpace(text) == "" || c.out.Len() >= maxConvertedBytes {
		return
	}
	c.blank()
	for i, line := range strings.Split(text, "\n") {
		if c.out.Len() >= c.limit { // a block longer than what may still be written
			break
		}
		p := rest
		if i == 0 {
			p = first
		}
		if strings.TrimSpace(line) == "" {
			c.out.WriteString(strings.TrimRight(p, " ") + "\n")
			continue
		}
		c.out.WriteString(p + line + "\n")
	}
}

func isBlock(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	switch n.DataAtom {
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.H1, atom.H2,
		atom.H3, atom.H4, atom.H5, atom.H6, atom.Pre, atom.Ul, atom.Ol, atom.Li, atom.Table,
		atom.Blockquote, atom.Hr, atom.Dl, atom.Dt, atom.Dd, atom.Figure, atom.Figcaption,
		atom.Details, atom.Summary, atom.Body, atom.Html, atom.Form, atom.Fieldset, atom.Address,
		atom.Tbody, atom.Thead, atom.Tfoot, atom.Tr, atom.Center:
		return true
	}
	return false
}

// block writes the children of n as blocks; runs of inline children become paragraphs.
func (c *converter) block(n *html.Node, depth int) {
	if depth > maxDepth {
		return
	}
	var inline []*html.Node
	flush := func() {
		if len(inline) == 0 {
			return
		}
		c.writeBlock(c.inlineText(inline), "", "")
		inline = inline[:0]
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if c.stopped() {
			return
		}
		if ch.Type == html.ElementNode && skipped(ch) {
			continue
		}
		if !isBlock(ch) {
			inline = append(inline, ch)
			continue
		}
		flush()
		c.element(ch, depth+1)
	}
	flush()
}

func (c *converter) element(n *html.Node, depth int) {
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		level := int(n.Data[1] - '0')
		text := oneLine(c.inlineRaw(children(n), c.room()))
		if text == "" {
			return
		}
		c.headings = append(c.headings, Heading{Level: level, Text: oneLine(plainText(n)), Anchor: anchorOf(n)})
		c.writeBlock(strings.Repeat("#", level)+" "+text, "", "")
	case atom.Pre:
		c.writeBlock(fence(textOf(n, c.room()), codeLanguage(n)), "", "")
	case atom.Ul, atom.Ol:
		c.list(n, depth)
	case atom.Blockquote:
		// Headings inside a quote (or a list item) are not sections: their anchors are not
		// kept, as the sectioner reads only top-level headings.
		if c.nest >= maxNest {
			c.block(n, depth)
			return
		}
		sub := c.sub()
		sub.block(n, depth)
		c.writeBlock(sub.out.String(), "> ", "> ")
	case atom.Hr:
		c.writeBlock("---", "", "")
	case atom.Table:
		c.table(n)
	case atom.Dt:
		if t := oneLine(c.inlineRaw(children(n), c.room())); t != "" {
			c.writeBlock("**"+t+"**", "", "")
		}
	default:
		c.block(n, depth)
	}
}

func (c *converter) list(n *html.Node, depth int) {
	ordered := n.DataAtom == atom.Ol
	i := 1
	if s, err := strconv.Atoi(attr(n, "start")); err == nil && s >= 0 && s < 1e9 {
		i = s
	}
	var items []string
	size := 0 // of items
	for li := n.FirstChild; li != nil; li = li.NextSibling {
		if c.stopped() || size >= c.room() {
			break
		}
		if li.Type != html.ElementNode {
			continue
		}
		if skipped(li) {
			continue
		}
		if c.nest >= maxNest {
			c.element(li, depth+1)
			continue
		}
		sub := c.sub()
		sub.limit -= size
		if li.DataAtom == atom.Li {
			sub.block(li, depth+1)
		} else {
			sub.element(li, depth+1)
		}
		text := strings.TrimSpace(sub.out.String())
		if text == "" {
			continue
		}
		marker := "- "
		if ordered {
			marker = strconv.Itoa(i) + ". "
			i++
		}
		var b strings.Builder
		for j, line := range strings.Split(text, "\n") {
			switch {
			case j == 0:
				b.WriteString(marker + line + "\n")
			case line == "":
				b.WriteString("\n")
			default:
				b.WriteString(strings.Repeat(" ", len(marker)) + line + "\n")
			}
		}
		items = append(items, b.String())
		size += b.Len()
	}
	// Tight list: items one after another unless an item has blank lines of its own.
	c.writeBlock(strings.Join(items, ""), "", "")
}

// table writes the table's own rows (those of a table inside a cell are that cell's text).
func (c *converter) table(n *html.Node) {
	var rows [][]string
	size := 0 // of the cells
	for tr := range ownRows(n) {
		if c.stopped() || size >= c.room() {
			break
		}
		var row []string
		for td := tr.FirstChild; td != nil; td = td.NextSibling {
			if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
				cell := c.cell(td)
				row = append(row, cell)
				size += len(cell) + len(" | ")
			}
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	var b strings.Builder
	for i, r := range rows {
		if b.Len() >= c.room() { // short rows padded to the widest may outgrow the cells
			break
		}
		for len(r) < width {
			r = append(r, "")
		}
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
		}
	}
	c.writeBlock(b.String(), "", "")
}

// ownRows yields the rows of table n: its tr children and those of its thead, tbody and
// tfoot, not the rows of tables inside its cells.
func ownRows(n *html.Node) func(yield func(*html.Node) bool) {
	return func(yield func(*html.Node) bool) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.Type != html.ElementNode {
				continue
			}
			switch ch.DataAtom {
			case atom.Tr:
				if !yield(ch) {
					return
				}
			case atom.Thead, atom.Tbody, atom.Tfoot:
				for tr := ch.FirstChild; tr != nil; tr = tr.NextSibling {
					if tr.Type == html.ElementNode && tr.DataAtom == atom.Tr && !yield(tr) {
						return
					}
				}
			}
		}
	}
}

// cell is a table cell's text on one line, at most maxCellChars characters, its pipes
// escaped.
func (c *converter) cell(td *html.Node) string {
	cell := oneLine(c.inlineRaw(children(td), 4*maxCellChars)) // a character is at most 4 bytes
	if utf8.RuneCountInString(cell) > maxCellChars {
		cell = string([]rune(cell)[:maxCellChars]) + "…"
	}
	return strings.ReplaceAll(cell, "|", `\|`)
}

func children(n *html.Node) []*html.Node {
	var cs []*html.Node
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		cs = append(cs, ch)
	}
	return cs
}

// inlineText renders inline nodes as one paragraph's Markdown: whitespace collapsed, <br> a
// line break, emphasis, code spans, links and images, and each line's start escaped where it
// would read as a heading, list, quote or fence.
func (c *converter) inlineText(nodes []*html.Node) string {
	var lines []string
	for line := range strings.SplitSeq(c.inlineRaw(nodes, c.room()), "\n") {
		lines = append(lines, escapeLineStart(strings.Join(strings.Fields(line), " ")))
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// inlineRaw renders inline nodes without escaping line starts (for headings and cells, whose
// line starts with their own marker), in at most limit bytes.
func (c *converter) inlineRaw(nodes []*html.Node, limit int) string {
	sp := &span{limit: limit}
	for _, n := range nodes {
		c.inline(sp, n, 0)
	}
	return sp.b.String()
}

// span is inline Markdown being written, at most limit bytes: once full, the rest of its
// nodes are not visited.
type span struct {
	b     strings.Builder
	limit int
	// emph is how many emphases and links enclose what is written now.
	emph int
}

func (sp *span) full() bool { return sp.b.Len() >= sp.limit }

// write appends t, cut (at a character's start) where the span is full.
func (sp *span) write(t string) {
	if room := sp.limit - sp.b.Len(); len(t) > room {
		for room > 0 && !utf8.RuneStart(t[room]) {
			room--
		}
		t = t[:max(room, 0)]
	}
	sp.b.WriteString(t)
}

func (c *converter) inline(sp *span, n *html.Node, depth int) {
	if depth > maxDepth || sp.full() {
		return
	}
	switch n.Type {
	case html.TextNode:
		sp.write(escapeText(strings.ReplaceAll(n.Data, "\n", " ")))
		return
	case html.ElementNode:
	default:
		return
	}
	if skipped(n) {
		return
	}
	kids := func(sp *span) {
		for ch := n.FirstChild; ch != nil && !sp.full(); ch = ch.NextSibling {
			c.inline(sp, ch, depth+1)
		}
	}
	// inner is the children's Markdown, trimmed, for markers around it. Past maxEmphasis
	// levels the children are written in place instead (ok false): each level copies the
	// text inside it, so nesting must not multiply the work.
	inner := func() (string, bool) {
		if sp.emph >= maxEmphasis {
			kids(sp)
			return "", false
		}
		isp := &span{limit: sp.limit - sp.b.Len(), emph: sp.emph + 1}
		kids(isp)
		return strings.TrimSpace(isp.b.String()), true
	}
	switch n.DataAtom {
	case atom.Br:
		sp.write("\n")
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		sp.write(codeSpan(strings.Join(strings.Fields(textOf(n, sp.limit-sp.b.Len())), " ")))
	case atom.Strong, atom.B:
		if t, ok := inner(); ok && t != "" {
			sp.write("**" + t + "**")
		}
	case atom.Em, atom.I:
		if t, ok := inner(); ok && t != "" {
			sp.write("*" + t + "*")
		}
	case atom.A:
		t, ok := inner()
		href := c.resolve(attr(n, "href"))
		switch {
		case !ok || t == "":
		case href == "" || strings.HasPrefix(href, "javascript:"):
			sp.write(t)
		default:
			sp.write("[" + t + "](" + href + ")")
		}
	case atom.Img:
		if src := c.resolve(attr(n, "src")); src != "" {
			sp.write("![" + escapeText(oneLine(attr(n, "alt"))) + "](" + src + ")")
		}
	default:
		// A block inside inline content (a <div> in a <td>), or a cell of a table in a cell:
		// keep its words apart.
		if isBlock(n) || n.DataAtom == atom.Td || n.DataAtom == atom.Th {
			sp.write(" ")
			kids(sp)
			sp.write(" ")
			return
		}
		kids(sp)
	}
}

// resolve makes href absolute against the page, leaving fragments and unparseable values
// alone; spaces and parentheses are escaped so the link's end is unambiguous.
func (c *converter) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return href
	}
	if c.base != nil {
		if u, err := url.Parse(href); err == nil {
			href = c.base.ResolveReference(u).String()
		}
	}
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "\n", "").Replace(href)
}

// escapeText keeps text from being read as HTML: <, > and & become character references,
// which cleaning decodes again after it strips tags (spec §3.3 step 4 (1)), so a page that
// shows "<div>" keeps it.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// escapeLineStart escapes what would make a line of text a heading, a list item, a quote, a
// fence or a thematic break.
func escapeLineStart(line string) string {
	t := strings.TrimLeft(line, " ")
	switch {
	case t == "":
		return line
	case strings.HasPrefix(t, "#"), strings.HasPrefix(t, ">"), strings.HasPrefix(t, "~~~"),
		strings.HasPrefix(t, "- "), strings.HasPrefix(t, "+ "), strings.HasPrefix(t, "* "),
		strings.HasPrefix(t, "="), t == "-" || strings.HasPrefix(t, "--"), t == "*", t == "+":
		return `\` + t
	}
	// "1. " or "1) " starts an ordered list.
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i < len(t) && (t[i] == '.' || t[i] == ')') && (i+1 == len(t) || t[i+1] == ' ') {
		return t[:i] + `\` + t[i:]
	}
	return t
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// textOf is the text of n and its descendants, as it is (for <pre> and code), up to about
// limit bytes.
func textOf(n *html.Node, limit int) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if b.Len() >= limit {
			break
		}
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
		if d.Type == html.ElementNode && d.DataAtom == atom.Br {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// shortText is n's text without whitespace when it has at most limit bytes of it (ok),
// found without reading past that: a permalink's text is one character.
func shortText(n *html.Node, limit int) (string, bool) {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type != html.TextNode {
			continue
		}
		for _, r := range d.Data {
			if unicode.IsSpace(r) {
				continue
			}
			if b.Len()+utf8.RuneLen(r) > limit {
				return "", false
			}
			b.WriteRune(r)
		}
	}
	return b.String(), true
}

// plainText is the text of n without the elements the converter leaves out.
func plainText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node, int)
	walk = func(n *html.Node, depth int) {
		for ch := n.FirstChild; ch != nil && depth < maxDepth; ch = ch.NextSibling {
			switch {
			case ch.Type == html.TextNode:
				b.WriteString(ch.Data)
			case ch.Type == html.ElementNode && !skipped(ch):
				walk(ch, depth+1)
			}
		}
	}
	walk(n, 0)
	return b.String()
}

// codeSpan writes s as a code span with a backtick run longer than any inside it.
func codeSpan(s string) string {
	if s == "" {
		return ""
	}
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return ticks + s + ticks
}

// fence writes code as a fenced block with a fence longer than any backtick run inside it.
func fence(code, lang string) string {
	code = strings.Trim(strings.ReplaceAll(code, "\r\n", "\n"), "\n")
	f := strings.Repeat("`", max(3, longestRun(code, '`')+1))
	return f + lang + "\n" + code + "\n" + f
}

func longestRun(s string, ch byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == ch {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// codeLanguage finds a language name in the classes of a <pre>, its <code> or the Sphinx
// "highlight-<lang>" wrapper around it.
func codeLanguage(pre *html.Node) string {
	nodes := []*html.Node{pre}
	if code := find(pre, func(n *html.Node) bool { return n.DataAtom == atom.Code }); code != nil {
		nodes = append(nodes, code)
	}
	for p := pre.Parent; p != nil && len(nodes) < 5; p = p.Parent {
		nodes = append(nodes, p)
	}
	for _, n := range nodes {
		for cl := range strings.FieldsSeq(attr(n, "class")) {
			for _, prefix := range []string{"language-", "lang-", "highlight-"} {
				if l, ok := strings.CutPrefix(cl, prefix); ok && l != "" && l != "default" && safeLang(l) {
					return l
				}
			}
		}
	}
	return ""
}

func safeLang(l string) bool {
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '+') {
			return false
		}
	}
	return len(l) <= 32
}

// anchorOf is a heading's id, else that of an <a id> or <a name> inside it, else the id of
// the nearest enclosing <section> (or Sphinx's older <div class="section">).
func anchorOf(h *html.Node) string {
	if id := attr(h, "id"); id != "" {
		return id
	}
	for d := range h.Descendants() {
		if d.Type == html.ElementNode && d.DataAtom == atom.A {
			if id := attr(d, "id"); id != "" {
				return id
			}
			if name := attr(d, "name"); name != "" {
				return name
			}
		}
	}
	for p := h.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && (p.DataAtom == atom.Section || (p.DataAtom == atom.Div && hasClass(p, "section"))) {
			return attr(p, "id")
		}
	}
	return ""
}

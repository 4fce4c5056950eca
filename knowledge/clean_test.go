package knowledge

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"tags stripped, text and references kept", "a <b>bold</b> &amp; <i>it</i> &lt;x&gt;\n", "a bold & it <x>\n"},
		{"not a tag stays", "if a < b and c > d\n", "if a < b and c > d\n"},
		{"unfinished tag at the end stays", "x <y\n", "x <y\n"},
		{"image", "see ![the logo](logo.png) here\n", "see [Image: the logo] here\n"},
		{"link", "read [the spec](https://x.org/spec) now\n", "read the spec (https://x.org/spec) now\n"},
		{"link equal to its url", "[https://x.org]( https://x.org )\n", "https://x.org\n"},
		{"code span kept", "use `sub-<label>_bold.nii` and `[a](b)`\n", "use `sub-<label>_bold.nii` and `[a](b)`\n"},
		{"double backtick span kept", "``a ` <b>``\n", "``a ` <b>``\n"},
		{"fenced code kept", "text\n```\n<b>x</b>\n# comment\n[a](b)\n```\nafter\n", "text\n\n```\n<b>x</b>\n# comment\n[a](b)\n```\n\nafter\n"},
		{"tilde fence", "~~~python\n# not a heading\n~~~\n", "~~~python\n# not a heading\n~~~\n"},
		{"heading spaced", "para\n# Title\nnext\n", "para\n\n# Title\n\nnext\n"},
		{"tabs and trailing space", "a\tb   \n\n\n\n\nc\n", "a    b\n\nc\n"},
		{"unclosed fence runs to the end", "```\n# x\n<b>\n", "```\n# x\n<b>\n"},
		{"crlf", "a\r\nb\r\n", "a\nb\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Clean(tc.in); got != tc.want {
				t.Errorf("Clean(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestIsHTML(t *testing.T) {
	tests := []struct {
		body, ct, typ string
		want          bool
	}{
		{"  <!DOCTYPE html><p>", "", "html", true},
		{"<HTML>", "text/plain", "markdown", false},
		{"<!DocType html>", "", "sphinx", true},
		{"<!DocType html>", "", "json", false},
		{"<p>fragment</p>", "text/html; charset=utf-8", "mkdocs", true},
		{"<p>fragment</p>", "text/plain", "html", false},
		{"# Markdown", "text/html", "markdown", false},
		{"<html>", "", "markdown", false},
	}
	for _, tc := range tests {
		if got := IsHTML([]byte(tc.body), tc.ct, tc.typ); got != tc.want {
			t.Errorf("IsHTML(%q, %q, %q) = %v, want %v", tc.body, tc.ct, tc.typ, got, tc.want)
		}
	}
}

func TestConvertPieces(t *testing.T) {
	tests := []struct{ name, html, want string }{
		{"main content chosen", `<html><body><p>outside</p><main><p>inside</p></main></body></html>`, "inside\n"},
		{"bd-article before main", `<html><body><main><p>m</p><article class="bd-article"><p>a</p></article></main></body></html>`, "a\n"},
		{"removed elements", `<html><body><nav>n</nav><p>k</p><footer>f</footer><aside>a</aside><script>s</script><style>x</style></body></html>`, "k\n"},
		{"headerlink removed", `<html><body><h2 id="x">T<a class="headerlink" href="#x">¶</a></h2></body></html>`, "## T\n"},
		{"paragraph that looks like a heading", `<html><body><p># not a heading</p><p>1. not a list</p></body></html>`, "\\# not a heading\n\n1\\. not a list\n"},
		{"nested list", `<html><body><ul><li>a<ul><li>b</li></ul></li><li>c</li></ul></body></html>`, "- a\n\n  - b\n- c\n"},
		{"code fence longer than content", "<html><body><pre>a ``` b</pre></body></html>", "````\na ``` b\n````\n"},
		{"literal angle brackets survive", `<html><body><p>use &lt;div&gt; here</p></body></html>`, "use <div> here\n"},
		{"relative link resolved", `<html><body><p><a href="b.html">B</a></p></body></html>`, "B (https://x.org/docs/b.html)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Clean(Convert([]byte(tc.html), "", "html", "https://x.org/docs/a.html").Markdown)
			if got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDeepJSONNotIndented: a deeply nested JSON document is kept as it came rather than
// indented, which would make it a hundred times larger.
func TestDeepJSONNotIndented(t *testing.T) {
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	got := Convert([]byte(deep), "application/json", "json", "").Markdown
	if len(got) > 2*len(deep) {
		t.Errorf("%d bytes of JSON became %d", len(deep), len(got))
	}
	if got := Convert([]byte(`{"a":[1,{"b":"[not {nested"}]}`), "", "json", "").Markdown; got != "```json\n{\n  \"a\": [\n    1,\n    {\n      \"b\": \"[not {nested\"\n    }\n  ]\n}\n```\n" {
		t.Errorf("shallow JSON: %q", got)
	}
}

// TestNestingBounded: quotes and lists nested deep, around many short paragraphs, do not
// multiply the output (each level prefixed every line and copied it again).
func TestNestingBounded(t *testing.T) {
	for _, tag := range []string{"blockquote", "ul><li"} {
		page := "<html><body>" + strings.Repeat("<"+tag+">", 150) + strings.Repeat("<p>x</p>", 20000) + "</body></html>"
		out := Convert([]byte(page), "", "html", "").Markdown
		if len(out) > 4*len(page) || !strings.Contains(out, "x") {
			t.Errorf("%s: %d bytes of HTML became %d of Markdown", tag, len(page), len(out))
		}
	}
}

func TestAnchors(t *testing.T) {
	page := `<!DOCTYPE html><html><body><main>
<section id="sec-a"><h2>A</h2><p>a text</p></section>
<h2 id="own">B</h2><p>b text</p>
<h2><a name="named"></a>C</h2><p>c text</p>
<h2>D</h2><p>d text</p>
</main></body></html>`
	conv := Convert([]byte(page), "", "html", "https://x.org/p")
	secs := Sectionize("https://x.org/p", "Page", Clean(conv.Markdown), conv.HTML, conv.Headings)
	var got []string
	for _, s := range secs {
		got = append(got, s.Title+"="+s.Anchor)
	}
	want := "A=sec-a B=own C=named D="
	if strings.Join(got, " ") != want {
		t.Errorf("anchors %q, want %q", strings.Join(got, " "), want)
	}
}

func TestSlugs(t *testing.T) {
	md := "# Doc\n\nlead\n\n## Hello, World!\n\nx\n\n## Hello World\n\ny\n\n## hello world\n\nz\n\n## Ünïcode_and-dash 2\n\nw\n"
	secs := Sectionize("u", "Doc", md, false, nil)
	var got []string
	for _, s := range secs {
		got = append(got, s.Anchor)
	}
	want := "doc hello-world hello-world-1 hello-world-2 ünïcode_and-dash-2"
	if strings.Join(got, " ") != want {
		t.Errorf("slugs %q, want %q", strings.Join(got, " "), want)
	}
	if secs[0].HeadingPath != "Doc" || secs[1].HeadingPath != "Doc > Hello, World!" {
		t.Errorf("heading paths %q, %q", secs[0].HeadingPath, secs[1].HeadingPath)
	}
}

// TestNestedHeadings: headings inside quotes and list items stay in their section's text
// (a quoted "# x" once made the sectioner cut a slice backwards and panic).
func TestNestedHeadings(t *testing.T) {
	for _, md := range []string{"> # Quoted\n# Next\n\ntext\n", "- # Listed\n# Next\n\ntext\n", "> Quote\n> ===\n# Next\n\ntext\n"} {
		secs := Sectionize("u", "D", md, false, nil)
		if len(secs) != 2 || secs[1].HeadingPath != "D > Next" || secs[1].Text != "text" || !strings.Contains(secs[0].Text, "Quote") && !strings.Contains(secs[0].Text, "Listed") && !strings.Contains(secs[0].Text, "Quoted") {
			t.Errorf("%q: %+v", md, secs)
		}
	}
}

func TestSectionRules(t *testing.T) {
	long := strings.Repeat("word ", 700) // 3,500 characters
	md := "lead text\n\n# Title\n\n# Other\n\n## Empty\n\n### Deep\n\ndeep text\n\n#### Four\n\nstays inside\n\n## Long\n\n" +
		long + "\n\n" + long + "\n\n" + strings.Repeat("x", 9000) + "\n"
	secs := Sectionize("u", "Title", md, false, nil)
	var got []string
	for _, s := range secs {
		got = append(got, s.HeadingPath)
		if n := utf8.RuneCountInString(s.Text); n > MaxSectionChars {
			t.Errorf("section %d has %d characters", s.Position, n)
		}
	}
	want := []string{
		"Title",                        // lead
		"Title > Other > Empty > Deep", // Title (heading only) and Empty skipped; H1 = title not repeated
		"Title > Other > Long",         // first paragraph
		"Title > Other > Long",         // second paragraph: both would exceed 4,000
		"Title > Other > Long",         // 9,000 x cut hard: 4,000
		"Title > Other > Long",         // 4,000
		"Title > Other > Long",         // 1,000
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("paths\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(secs[1].Text, "#### Four") || !strings.Contains(secs[1].Text, "stays inside") {
		t.Errorf("level-4 heading not kept in its section: %q", secs[1].Text)
	}
	if secs[0].Text != "lead text" || secs[0].Title != "Title" {
		t.Errorf("lead = %+v", secs[0])
	}
}

func TestMatchQuery(t *testing.T) {
	tests := []struct{ in, match, phrase string }{
		{"How do I validate a sidecar?", `"validate"* OR "sidecar"*`, `"how do i validate a sidecar"`},
		{"pop_loadset", `"pop" OR "loadset"*`, `"pop loadset"`},
		{"what is it", `"what"* OR "is" OR "it"`, `"what is it"`}, // only stop words: all kept
		{`x" OR col:y NEAR(*)`, `"x" OR "col" OR "y" OR "near"*`, `"x or col y near"`},
		{"ＦＵＬＬ width", `"full"* OR "width"*`, `"full width"`},
		{"a a b b", `"b"`, `"a a b b"`},
	}
	for _, tc := range tests {
		m, p, ok := MatchQuery(tc.in)
		if !ok || m != tc.match || p != tc.phrase {
			t.Errorf("MatchQuery(%q) = %q, %q, %v; want %q, %q", tc.in, m, p, ok, tc.match, tc.phrase)
		}
	}
	if _, _, ok := MatchQuery(" ?! -- "); ok {
		t.Error("a query without terms made a search")
	}
	many := strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma ", 3)
	m, _, _ := MatchQuery(many)
	if n := strings.Count(m, " OR ") + 1; n != maxTerms {
		t.Errorf("%d terms, want %d", n, maxTerms)
	}
}

func TestLongQueryBounded(t *testing.T) {
	q := strings.Repeat("word ", 100000) + "needle"
	if terms := Terms(q); len(terms) > maxQueryBytes/2 || slices.Contains(terms, "needle") {
		t.Errorf("%d terms from a 500 KB query; the end was read: %v", len(terms), slices.Contains(terms, "needle"))
	}
}

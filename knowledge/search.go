package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Search limits (spec §4.1, §4.2).
const (
	DefaultLimit = 5
	MaxLimit     = 20
	maxTerms     = 16
	maxPhrase    = 64 // tokens in the all-terms phrase
	// maxQueryBytes is how much of a query is read: far more than 16 terms need, and a
	// bound on the work a long input can cause.
	maxQueryBytes = 4096
	// SnippetChars is how much of a section's text a search result shows (cut(text, 1500)).
	SnippetChars = 1500
)

// ErrUnreadable wraps a database error other than a missing file or table (spec §4.1: logged,
// and the tool says the database could not be read).
var ErrUnreadable = errors.New("knowledge database could not be read")

// stopWords are dropped from a query unless nothing would remain (spec §4.2 step 2).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq("a an and are as at be by can do does for from how i in is it of on or the to what when where which who why with") {
		m[w] = true
	}
	return m
}()

// Terms returns a query's words as the FTS tokenizer splits them: NFKC-normalised, maximal
// runs of letters and digits, lower-cased (spec §4.2 step 1).
func Terms(query string) []string {
	if len(query) > maxQueryBytes {
		query = strings.ToValidUTF8(query[:maxQueryBytes], "")
	}
	query = norm.NFKC.String(query)
	var terms []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			terms = append(terms, strings.ToLower(b.String()))
			b.Reset()
		}
	}
	for _, r := range query {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.N, r) {
			b.WriteRune(r)
			continue
		}
		flush()
	}
	flush()
	return terms
}

// MatchQuery builds the FTS5 queries for a user's text (spec §4.2): match is the OR of the
// first 16 distinct terms without stop words (unless only stop words are given), each
// quoted, with a 4+ character term a prefix term ("term"*); phrase is every term, stop words
// included, in order, as one quoted phrase, for ranking rows that hold it first. Terms are
// letters and digits only, so no input can make an FTS syntax error. ok is false when the
// text has no terms (then no search runs).
func MatchQuery(query string) (match, phrase string, ok bool) {
	all := Terms(query)
	if len(all) == 0 {
		return "", "", false
	}
	var parts []string
	for _, t := range matchTerms(all) {
		if utf8.RuneCountInString(t) >= 4 {
			parts = append(parts, `"`+t+`"*`)
		} else {
			parts = append(parts, `"`+t+`"`)
		}
	}
	if len(all) > maxPhrase {
		all = all[:maxPhrase]
	}
	return strings.Join(parts, " OR "), `"` + strings.Join(all, " ") + `"`, true
}

// matchTerms are the terms a search matches: the first maxTerms distinct ones of all
// without stop words, or of all when only stop words are given.
func matchTerms(all []string) []string {
	kept := make([]string, 0, len(all))
	for _, t := range all {
		if !stopWords[t] {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		kept = all
	}
	seen := map[string]bool{}
	var terms []string
	for _, t := range kept {
		if seen[t] {
			continue
		}
		seen[t] = true
		terms = append(terms, t)
		if len(terms) == maxTerms {
			break
		}
	}
	return terms
}

// ClampLimit is limit held to 1–20 (spec §4.1).
func ClampLimit(limit int) int { return min(max(limit, 1), MaxLimit) }

// searchSQL ranks the matching rows in the FTS table alone and joins only the first limit
// to their sections: joining every match before the sort cost half the search time.
const searchSQL = `WITH ranked AS (
	SELECT rowid AS id,
		rowid IN (SELECT rowid FROM doc_sections_fts WHERE doc_sections_fts MATCH ?2) AS phrase,
		bm25(doc_sections_fts, 5.0, 1.0) AS score
	FROM doc_sections_fts WHERE doc_sections_fts MATCH ?1
	ORDER BY phrase DESC, score, id
	LIMIT ?3)
SELECT s.doc_url, s.doc_title, s.anchor, s.heading_path, s.title, s.text, s.position
FROM ranked JOIN doc_sections s ON s.id = ranked.id
ORDER BY ranked.phrase DESC, ranked.score, ranked.id`

// searchSections runs the §4.2 search over doc_sections of an open database.
func searchSections(ctx context.Context, db *sql.DB, query string, limit int) ([]Section, error) {
	match, phrase, ok := MatchQuery(query)
	if !ok {
		return nil, nil
	}
	if has, err := hasTable(ctx, db, "doc_sections_fts"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	} else if !has {
		return nil, ErrNotInitialized
	}
	rows, err := db.QueryContext(ctx, searchSQL, match, phrase, ClampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	defer rows.Close()
	var secs []Section
	for rows.Next() {
		var s Section
		if err := rows.Scan(&s.DocURL, &s.DocTitle, &s.Anchor, &s.HeadingPath, &s.Title, &s.Text, &s.Position); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		secs = append(secs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return secs, nil
}

// Cut is the spec's cut(t, n): t when it has at most n characters, else its first n
// characters plus "...".
func Cut(t string, n int) string {
	if utf8.RuneCountInString(t) <= n {
		return t
	}
	return string([]rune(t)[:n]) + "..."
}

// Snip is the spec's snip(t, n): the first n characters of t, trimmed, plus "..." when t was
// longer; "" for no text.
func Snip(t string, n int) string {
	if utf8.RuneCountInString(t) <= n {
		return strings.TrimSpace(t)
	}
	return strings.TrimSpace(string([]rune(t)[:n])) + "..."
}

// Snippet is the part of a section's text a search result shows: cut(text, n) when the first
// match of the query's terms lies in it; else (the issue asks for "a snippet around the
// match") n characters starting at the beginning of the line a little before that match,
// with "..." before and, when text goes on, after.
func Snippet(text, query string, n int) string {
	runes := []rune(text)
	if len(runes) <= n {
		return text
	}
	pos := firstMatch(runes, snippetTerms(query))
	if pos < 0 || pos+80 <= n {
		return Cut(text, n)
	}
	start := max(0, pos-200)
	for start > 0 && start > pos-600 && runes[start-1] != '\n' {
		start--
	}
	end := min(len(runes), start+n)
	out := "..." + string(runes[start:end])
	if end < len(runes) {
		out += "..."
	}
	return out
}

// snippetTerms are the terms a snippet looks for: the search's own (matchTerms), so a long
// query costs at most maxTerms comparisons per word of text, not one per word it repeats.
// Stop words are never looked for, even when the search matched only them.
func snippetTerms(query string) []string {
	var ts []string
	for _, t := range matchTerms(Terms(query)) {
		if !stopWords[t] {
			ts = append(ts, t)
		}
	}
	return ts
}

// firstMatch is the rune offset of the earliest word of text that starts with one of the
// terms (ignoring case), or -1.
func firstMatch(text []rune, terms []string) int {
	ts := make([][]rune, len(terms))
	for i, t := range terms {
		ts[i] = []rune(t)
	}
	for i := 0; i < len(text); i++ {
		if i > 0 && (unicode.IsLetter(text[i-1]) || unicode.IsDigit(text[i-1])) {
			continue
		}
		for _, tr := range ts {
			if i+len(tr) <= len(text) && equalFoldRunes(text[i:i+len(tr)], tr) {
				return i
			}
		}
	}
	return -1
}

// equalFoldRunes is strings.EqualFold for rune slices of one length, without a copy: each
// pair equal under simple case folding.
func equalFoldRunes(a, b []rune) bool {
	for i := range a {
		if !equalFoldRune(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalFoldRune(a, b rune) bool {
	if a == b {
		return true
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

// SearchText is search_{id}_docs's result text (spec §4.3) for the sections Search returned
// for query, or for its error.
func SearchText(name, id, query string, secs []Section, err error) string {
	switch {
	case errors.Is(err, ErrNotInitialized):
		return fmt.Sprintf("The %s documentation index is not built yet. Use retrieve_%s_docs with a URL from its list.", name, id)
	case err != nil:
		return fmt.Sprintf("Error: the %s knowledge database could not be read.", name)
	case len(secs) == 0:
		return fmt.Sprintf("No documentation sections found for '%s'.", query)
	}
	lines := []string{fmt.Sprintf("Documentation sections in %s for '%s':\n", name, query)}
	for i, s := range secs {
		lines = append(lines, fmt.Sprintf("### %d. %s", i+1, s.HeadingPath), "Source: "+s.URL(),
			"Document: "+s.DocURL, "", Snippet(s.Text, query, SnippetChars), "")
	}
	return strings.Join(lines, "\n")
}

// SearchDescription is search_{id}_docs's description (spec §4.3).
func SearchDescription(name, id string) string {
	return fmt.Sprintf("Search %s documentation by keywords and get the best-matching sections, each with a link to its place in the document. Use this to find which document and section answers a question; use retrieve_%s_docs with a Document URL to read a whole document.", name, id)
}

// RetrieveDescription is retrieve_{id}_docs's description (spec §4.3), listing the on-demand
// documents given (in config order) by category.
func RetrieveDescription(name string, onDemand []Doc) string {
	var cats []string
	byCat := map[string][]Doc{}
	for _, d := range onDemand {
		c := d.Category
		if c == "" {
			c = "general"
		}
		if _, ok := byCat[c]; !ok {
			cats = append(cats, c)
		}
		byCat[c] = append(byCat[c], d)
	}
	var lines []string
	for _, c := range cats {
		lines = append(lines, "### "+titleCase(strings.NewReplacer("-", " ", "_", " ").Replace(c))+":")
		for _, d := range byCat[c] {
			lines = append(lines, fmt.Sprintf("- %s: %s", d.Title, d.URL))
			if d.Description != "" {
				lines = append(lines, "  "+d.Description)
			}
		}
		lines = append(lines, "")
	}
	return fmt.Sprintf("Retrieve %s documentation by URL. Use this to fetch detailed documentation when answering questions.\n\nAvailable documents:\n%s", name, strings.Join(lines, "\n"))
}

// titleCase is Python's str.title: a letter after a non-letter upper-cased, others lower-cased.
func titleCase(s string) string {
	var b strings.Builder
	prev := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prev {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
			prev = true
			continue
		}
		prev = false
		b.WriteRune(r)
	}
	return b.String()
}

// PageDescription is fetch_current_page's description (spec §4.3).
const PageDescription = "Fetch content from the page where the user is currently asking their question.\n\nUse this tool when the user's question seems related to the content of the page they are viewing. This will retrieve the page content and provide context for answering questions about \"this page\" or \"this documentation\"."

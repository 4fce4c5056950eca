package knowledge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The texts of the synced sources' tools (knowledge.md §4.1, §4.3), byte for byte: each *Text
// function renders what its search returned, or its error, as the tool's result; each
// *Description is the tool's description. name is the community's name, id its id.

// Passage is one citable item of a tool's result (knowledge.md §5.2): the URL a citation
// links to, its title and its text. The chat turns it into a search_result block.
type Passage struct {
	Source, Title, Text string
}

// unreadableText is the §4.1 text of a database error other than a missing file or table.
func unreadableText(name string) string {
	return fmt.Sprintf("Error: the %s knowledge database could not be read.", name)
}

// stateText is the §4.1 text for err, or "" when err is nil: notInit for no file, missing for
// a missing table, the unreadable text otherwise.
func stateText(name string, err error, notInit, missing string) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMissingTable):
		return missing
	case errors.Is(err, ErrNotInitialized):
		return notInit
	}
	return unreadableText(name)
}

func githubNotInit(name, cmd string) string {
	return fmt.Sprintf("Knowledge database for %s not initialized. Run 'assistant sync init' and 'assistant sync %s' to populate it.", name, cmd)
}

func itemLabel(it GitHubItem) string {
	typ, state := "[Issue]", "(closed)"
	if it.Type == "pr" {
		typ = "[PR]"
	}
	if it.Status == "open" {
		state = "(open)"
	}
	return "- " + typ + " " + it.Title + " " + state
}

// DiscussionsText is search_{id}_discussions' result text.
func DiscussionsText(name, query string, items []GitHubItem, err error) string {
	if t := stateText(name, err, githubNotInit(name, "github"), githubNotInit(name, "github")); t != "" {
		return t
	}
	if len(items) == 0 {
		return fmt.Sprintf("No related discussions found for '%s'.", query)
	}
	lines := []string{fmt.Sprintf("Related %s discussions:\n", name)}
	for _, it := range items {
		lines = append(lines, itemLabel(it), "  [View on GitHub]("+it.URL+")")
		if p := Snip(it.Body, 200); p != "" {
			lines = append(lines, "  Preview: "+p)
		}
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// RecentText is list_{id}_recent's result text for the options it was asked with.
func RecentText(name string, opts RecentOptions, items []GitHubItem, err error) string {
	if t := stateText(name, err, githubNotInit(name, "github"), githubNotInit(name, "github")); t != "" {
		return t
	}
	if len(items) == 0 {
		var filters []string
		if opts.Type != "" && opts.Type != "all" {
			filters = append(filters, "type="+opts.Type)
		}
		if opts.Repo != "" {
			filters = append(filters, "repo="+opts.Repo)
		}
		if opts.Status != "" {
			filters = append(filters, "status="+opts.Status)
		}
		f := "no filters"
		if len(filters) > 0 {
			f = strings.Join(filters, ", ")
		}
		return fmt.Sprintf("No GitHub items found (%s).", f)
	}
	lines := []string{fmt.Sprintf("Recent %s GitHub activity:\n", name)}
	for _, it := range items {
		date := "unknown date"
		if it.CreatedAt != "" {
			date = string([]rune(it.CreatedAt)[:min(10, len([]rune(it.CreatedAt)))])
		}
		lines = append(lines, itemLabel(it)+" - "+date, "  [View on GitHub]("+it.URL+")")
		if p := Snip(it.Body, 200); p != "" {
			lines = append(lines, "  Summary: "+p)
		}
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// PapersText is search_{id}_papers' result text.
func PapersText(name, query string, papers []Paper, err error) string {
	if t := stateText(name, err, githubNotInit(name, "papers"), githubNotInit(name, "papers")); t != "" {
		return t
	}
	if len(papers) == 0 {
		return fmt.Sprintf("No related papers found for '%s'.", query)
	}
	lines := []string{"Related papers:\n"}
	for _, p := range papers {
		lines = append(lines, "- "+p.Title+" ["+p.Source+"]", "  [View Paper]("+p.URL+")")
		if a := Snip(p.Abstract, 200); a != "" {
			lines = append(lines, "  Abstract: "+a)
		}
		if p.CreatedAt != "" {
			lines = append(lines, "  Published: "+p.CreatedAt)
		}
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// CodeSnippetChars is how much of a docstring search_{id}_code_docs shows.
const CodeSnippetChars = 1500

// Link is the symbol's source on GitHub (spec §4.3): blob/{branch, main if empty}/{file}, with
// #L{line} when the line is known. Each path segment is escaped (a no-op for ordinary names),
// so a file name cannot end the Markdown link it goes into.
func (d Docstring) Link() string {
	branch := d.Branch
	if branch == "" {
		branch = "main"
	}
	link := "https://github.com/" + d.Repo + "/blob/" + escapePath(branch) + "/" + escapePath(d.FilePath)
	if d.Line > 0 {
		link += "#L" + strconv.Itoa(d.Line)
	}
	return link
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// Heading is "{symbol_name} ({symbol_type}) - {file_path}", the item line and citation title.
func (d Docstring) Heading() string {
	return d.Symbol + " (" + d.SymbolType + ") - " + d.FilePath
}

func docsNotInit(name, id string, err error) string {
	return stateText(name, err, githubNotInit(name, "docstrings"),
		fmt.Sprintf("Knowledge database for %s not initialized. Run 'assistant sync docstrings --community %s' to populate it.", name, id))
}

// CodeDocsText is search_{id}_code_docs' result text.
func CodeDocsText(name, id, query string, ds []Docstring, err error) string {
	if t := docsNotInit(name, id, err); t != "" {
		return t
	}
	if len(ds) == 0 {
		return fmt.Sprintf("No code documentation found for '%s'.", query)
	}
	lines := []string{fmt.Sprintf("Code documentation in %s:\n", name)}
	cut := false
	for _, d := range ds {
		snip := Snip(d.Docstring, CodeSnippetChars)
		cut = cut || len([]rune(d.Docstring)) > CodeSnippetChars
		lines = append(lines, "- "+d.Heading(), "  [View source on GitHub]("+d.Link()+")", "  Documentation: "+snip, "")
	}
	if cut {
		lines = append(lines, fmt.Sprintf("One or more snippets were truncated. If the user is asking about specific outputs, parameters, or examples, call get_%s_full_docstring with the symbol_name to retrieve the stored docstring in full.", id))
	}
	return strings.Join(lines, "\n")
}

// CodeDocsPassages are search_{id}_code_docs' citable items (§5.2).
func CodeDocsPassages(ds []Docstring) []Passage {
	out := make([]Passage, 0, len(ds))
	for _, d := range ds {
		out = append(out, Passage{Source: d.Link(), Title: d.Heading(), Text: Snip(d.Docstring, CodeSnippetChars)})
	}
	return out
}

// FullDocstringText is get_{id}_full_docstring's result text for the symbol asked for.
func FullDocstringText(name, id, symbol string, ds []Docstring, err error) string {
	if t := docsNotInit(name, id, err); t != "" {
		return t
	}
	if len(ds) == 0 {
		return fmt.Sprintf("No docstring found for symbol '%s' in %s. Try search_%s_code_docs first to find the correct symbol name.", symbol, name, id)
	}
	lines := []string{fmt.Sprintf("Full docstring(s) for '%s' in %s:\n", symbol, name)}
	for _, d := range ds {
		lines = append(lines, "## "+d.Heading(), "[View source on GitHub]("+d.Link()+")\n", d.Docstring, "")
	}
	return strings.Join(lines, "\n")
}

// FullDocstringPassages are get_{id}_full_docstring's citable items (§5.2).
func FullDocstringPassages(ds []Docstring) []Passage {
	out := make([]Passage, 0, len(ds))
	for _, d := range ds {
		out = append(out, Passage{Source: d.Link(), Title: d.Heading(), Text: d.Docstring})
	}
	return out
}

// parseTags reads a stored JSON array of tags; anything else is none.
func parseTags(s string) []string {
	var tags []string
	if s == "" || json.Unmarshal([]byte(s), &tags) != nil {
		return nil
	}
	return tags
}

func categorySuffix(category string) string {
	if category == "" {
		return ""
	}
	return " (category: " + category + ")"
}

// FAQText is search_{id}_faq's result text.
func FAQText(name, id string, q FilteredQuery, es []FAQEntry, err error) string {
	if t := stateText(name, err,
		fmt.Sprintf("FAQ database for %s not initialized. Run 'assistant sync mailman' and 'assistant sync faq' to populate it.", name),
		fmt.Sprintf("FAQ database for %s not initialized. Run 'assistant sync mailman --community %s' and 'assistant sync faq --community %s' to populate it.", name, id, id),
	); t != "" {
		return t
	}
	if len(es) == 0 {
		return fmt.Sprintf("No FAQ entries found for '%s'%s.", q.Query, categorySuffix(q.Category))
	}
	lines := []string{fmt.Sprintf("Found %d FAQ entries:\n", len(es))}
	for i, e := range es {
		category := e.Category
		if category == "" {
			category = "None" // the reference prints Python's None
		}
		lines = append(lines, fmt.Sprintf("**%d. %s**", i+1, e.Question),
			fmt.Sprintf("Category: %s | Quality: %s/1.0 | Messages: %d", category, strconv.FormatFloat(e.Quality, 'f', 1, 64), e.MessageCount))
		if len(e.Tags) > 0 {
			lines = append(lines, "Tags: "+strings.Join(e.Tags, ", "))
		}
		lines = append(lines, "\n"+Cut(e.Answer, 500)+"\n", "[View full thread]("+e.ThreadURL+")\n")
	}
	return strings.Join(lines, "\n")
}

// FAQPassages are search_{id}_faq's citable items (§5.2).
func FAQPassages(es []FAQEntry) []Passage {
	out := make([]Passage, 0, len(es))
	for _, e := range es {
		out = append(out, Passage{Source: e.ThreadURL, Title: e.Question, Text: Cut(e.Answer, 2000)})
	}
	return out
}

// ForumText is search_{id}_forum's result text.
func ForumText(name, id string, q FilteredQuery, ts []Topic, err error) string {
	if t := stateText(name, err,
		fmt.Sprintf("Knowledge database for %s not initialized. Run 'assistant sync discourse' to populate it.", name),
		fmt.Sprintf("Discourse database for %s not initialized. Run 'assistant sync discourse --community %s' to populate it.", name, id),
	); t != "" {
		return t
	}
	if len(ts) == 0 {
		return fmt.Sprintf("No forum topics found for '%s'%s.", q.Query, categorySuffix(q.Category))
	}
	lines := []string{fmt.Sprintf("Found %d forum topics:\n", len(ts))}
	for i, t := range ts {
		head := fmt.Sprintf("**%d. %s**", i+1, t.Title)
		if t.Category != "" {
			head += " [" + t.Category + "]"
		}
		lines = append(lines, head, fmt.Sprintf("  Replies: %d | Likes: %d | Views: %d", t.Replies, t.Likes, t.Views))
		if p := Snip(t.FirstPost, 300); p != "" {
			lines = append(lines, "  "+p)
		}
		if a := Snip(t.AcceptedAnswer, 200); a != "" {
			lines = append(lines, "  Accepted answer: "+a)
		}
		lines = append(lines, "  [View topic]("+t.URL+")\n")
	}
	return strings.Join(lines, "\n")
}

// maxListedRepos is how many repositories a description lists.
const maxListedRepos = 5

// DiscussionsDescription is search_{id}_discussions' description, listing the first 5 repos.
func DiscussionsDescription(name string, repos []string) string {
	d := fmt.Sprintf(`Search %s GitHub discussions (issues and PRs) for related topics. **IMPORTANT: This is for DISCOVERY, not answering.** Use this tool to find related discussions that the user might find helpful. Always present results as: "There's a related discussion, see: [link]" Do NOT use discussion content to formulate answers.`, name)
	if len(repos) > 0 {
		var lines []string
		for _, r := range repos[:min(len(repos), maxListedRepos)] {
			lines = append(lines, "  - "+r)
		}
		d += "\n\nAvailable repositories:\n" + strings.Join(lines, "\n")
	}
	return d
}

// RecentDescription is list_{id}_recent's description, listing the first 5 repos.
func RecentDescription(name string, repos []string) string {
	d := fmt.Sprintf(`List recent %s GitHub issues and PRs ordered by date. **IMPORTANT: This is for DISCOVERY, not answering.** Use when users ask about recent activity, latest PRs, or newest issues. Unlike search which finds by keywords, this lists items by creation date. Do NOT use listed item content to formulate answers.`, name)
	if len(repos) > 0 {
		var lines []string
		for _, r := range repos[:min(len(repos), maxListedRepos)] {
			lines = append(lines, `  - "`+r+`"`)
		}
		d += "\n\nFilter by repository:\n" + strings.Join(lines, "\n") + "\n  Or None for all repos"
	}
	return d
}

// PapersDescription is search_{id}_papers' description.
func PapersDescription(name string) string {
	return fmt.Sprintf(`Search for academic papers related to %s. **IMPORTANT: This is for DISCOVERY, not answering.** Use this tool to find papers that cite or discuss %s. Always present results as references for further reading. Do NOT use paper content to formulate answers.`, name, name)
}

// CodeDocsDescription is search_{id}_code_docs' description.
func CodeDocsDescription(name, id string) string {
	return fmt.Sprintf("Search %s code documentation (docstrings from functions, classes, scripts). Searches both MATLAB and Python code. Use this to find how specific functions work, what parameters they accept, and see usage examples. Results include direct links to source code on GitHub. If the returned snippet is truncated (marked with `...`) and you need full details about outputs, parameters, or examples, follow up with get_%s_full_docstring.", name, id)
}

// FullDocstringDescription is get_{id}_full_docstring's description.
func FullDocstringDescription(name, id string) string {
	return fmt.Sprintf("Fetch the stored docstring in full (up to ~10K chars) for a specific symbol in %s. Use this as a follow-up to search_%s_code_docs when the snippet appears truncated (marked with `...`) and the user is asking about specific outputs, parameters, or examples. Takes an exact symbol_name (case-insensitive). Returns up to 5 matches when the same symbol appears in multiple files/repos.", name, id)
}

// FAQDescription is search_{id}_faq's description, naming the mailing lists.
func FAQDescription(name string, lists []string) string {
	return fmt.Sprintf("Search %s mailing list FAQ entries for answered questions. **Use this for:** Finding solutions to common problems, learning from past discussions. Returns: question, answer summary, category, quality score, link to original thread. Sources: %s mailing list archives.", name, strings.Join(lists, ", "))
}

// ForumDescription is search_{id}_forum's description.
func ForumDescription(name string) string {
	return fmt.Sprintf(`Search %s Discourse forum topics for community discussions and Q&A. **IMPORTANT: This is for DISCOVERY, not answering.** Use this to find forum discussions where users have asked similar questions. Present results as: "There's a related discussion on the forum, see: [link]" Do NOT use forum content to formulate authoritative answers.`, name)
}

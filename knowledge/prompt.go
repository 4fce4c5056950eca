package knowledge

import (
	"strings"
	"unicode/utf8"
)

// DefaultPreloadBudget is the most characters of preloaded documents in one prompt
// (ASSISTANT_PRELOAD_BUDGET_CHARS; spec §3.2): three full documents.
const DefaultPreloadBudget = 150000

// Prompt is what a community's documentation puts into its system prompt (spec §3.4), with
// the preload budget applied (§3.2).
type Prompt struct {
	// Preloaded is {preloaded_docs_section} and Available is {available_docs_section},
	// byte for byte.
	Preloaded, Available string
	// OnDemand are the documents offered on demand, in config order: those not preloaded,
	// preloads without a good copy, and preloads the budget moved; retrieve_{id}_docs's
	// description lists them (RetrieveDescription).
	OnDemand []Doc
	// PreloadChars is the characters of preloaded content in the prompt.
	PreloadChars int
	// Moved are the preloads the budget moved to on demand (/health warns of each), and
	// Unavailable the preloads that have no good copy (with their errors).
	Moved       []Doc
	Unavailable []DocState
}

// Prompt builds the prompt sections from the snapshot: each preloaded document with content,
// in config order, cut at MaxContentChars; past budget characters of preloads (0 means
// DefaultPreloadBudget) the document crossing it is cut to what is left and later ones are
// offered on demand instead. A preload that has no good copy is offered on demand, never
// dropped.
func (s *Snapshot) Prompt(budget int) Prompt {
	if budget <= 0 {
		budget = DefaultPreloadBudget
	}
	var p Prompt
	var parts []string
	for _, d := range s.Docs {
		switch {
		case !d.Preload:
			p.OnDemand = append(p.OnDemand, d.Doc)
		case !d.HasContent:
			p.OnDemand = append(p.OnDemand, d.Doc)
			p.Unavailable = append(p.Unavailable, d)
		case p.PreloadChars >= budget:
			p.OnDemand = append(p.OnDemand, d.Doc)
			p.Moved = append(p.Moved, d.Doc)
		default:
			content := d.Content
			n := min(utf8.RuneCountInString(content), MaxContentChars, budget-p.PreloadChars)
			if n < utf8.RuneCountInString(content) {
				content = string([]rune(content)[:n]) + TruncatedSuffix
			}
			p.PreloadChars += n
			parts = append(parts, "### "+d.Title+"\nSource: "+d.URL+"\n\n"+content)
		}
	}
	if len(parts) > 0 {
		p.Preloaded = "## Preloaded Documents\n\nThe following documents are already available:\n\n---\n\n" + strings.Join(parts, "\n\n---\n\n")
	}
	if len(p.OnDemand) > 0 {
		lines := []string{"## Available Documents", "", "Use retrieve_docs to fetch these when needed:", ""}
		for _, d := range p.OnDemand {
			lines = append(lines, "- **"+d.Title+"**: `"+d.URL+"`")
			if d.Description != "" {
				lines = append(lines, "  "+d.Description)
			}
		}
		p.Available = strings.Join(lines, "\n")
	}
	return p
}

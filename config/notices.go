package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/osc-assistant/assistant/limits"
)

// unusedSections names the reference's sections a community sets that this backend accepts
// and validates, so a reference config loads unchanged, but does not use: the knowledge
// sections are all used (the knowledge store and the syncs), except the BIDS-only BEP sync.
func unusedSections(file string, c *Community) []Notice {
	var names []string
	add := func(set bool, name string) {
		if set {
			names = append(names, name)
		}
	}
	add(c.Sync != nil && c.Sync.BEPs != nil, "sync.beps")
	add(c.Notebook != nil, "notebook")
	add(c.Extensions != nil && len(c.Extensions.PythonPlugins) > 0, "extensions.python_plugins")
	if len(names) == 0 {
		return nil
	}
	return []Notice{{File: file, Msg: "accepted, not used by this backend yet: " + strings.Join(names, ", ")}}
}

// preloadBudget warns when a community's preloaded documents may take more than the prompt's
// budget for them (limits.PreloadBudgetChars), which moves the rest on demand: what can be seen
// without the network. A preload counts its source_path file's size (bytes, at least its
// characters), or, fetched, the most a document may bring (limits.MaxDocumentChars).
func preloadBudget(file string, c *Community) []Notice {
	budget, max := int64(limits.PreloadBudgetChars), int64(limits.MaxDocumentChars)
	var total int64
	var moved []string
	for _, d := range c.Documentation {
		if !d.Preload {
			continue
		}
		size := max
		if d.SourcePath != nil && c.Dir != "" {
			if info, err := os.Stat(filepath.Join(c.Dir, filepath.FromSlash(*d.SourcePath))); err == nil {
				size = min(info.Size(), max)
			}
		}
		if total >= budget {
			moved = append(moved, fmt.Sprintf("%s (%s)", d.Title, d.URL))
		}
		total += size
	}
	if len(moved) == 0 {
		return nil
	}
	return []Notice{{File: file, Msg: fmt.Sprintf("the preloaded documents may take more than the %d characters a prompt gives them (each fetched one up to %d); these would then be offered on demand instead: %s",
		budget, max, strings.Join(moved, ", "))}}
}

// docsPlaceholders warns when a community lists documentation but its own system_prompt has
// neither documentation placeholder: its preloaded documents would never reach the model
// (they stay searchable through the documentation tools). The default prompt has both.
func docsPlaceholders(file string, c *Community) []Notice {
	if len(c.Documentation) == 0 || c.SystemPrompt == nil || strings.TrimSpace(*c.SystemPrompt) == "" {
		return nil
	}
	p := *c.SystemPrompt
	if strings.Contains(p, "{preloaded_docs_section}") || strings.Contains(p, "{available_docs_section}") {
		return nil
	}
	return []Notice{{File: file, Msg: "documentation is listed, but system_prompt has neither {preloaded_docs_section} nor {available_docs_section}: preloaded documents never reach the model (the documentation tools still search them)"}}
}

package config

import "strings"

// unusedSections names the reference's knowledge-sync sections a community sets: this backend
// accepts and validates them, so a reference config loads unchanged, but does not use them yet
// (documentation is used: the knowledge store; the synced sources are not).
func unusedSections(file string, c *Community) []Notice {
	var names []string
	add := func(set bool, name string) {
		if set {
			names = append(names, name)
		}
	}
	add(c.GitHub != nil, "github")
	add(c.Citations != nil, "citations")
	add(len(c.Discourse) > 0, "discourse")
	add(len(c.Mailman) > 0, "mailman")
	add(c.Docstrings != nil, "docstrings")
	add(c.FAQGeneration != nil, "faq_generation")
	add(c.PublicFeeds != nil, "public_feeds")
	add(c.Sync != nil, "sync")
	add(c.Notebook != nil, "notebook")
	add(c.Extensions != nil && len(c.Extensions.PythonPlugins) > 0, "extensions.python_plugins")
	if len(names) == 0 {
		return nil
	}
	return []Notice{{File: file, Msg: "accepted, not used by this backend yet: " + strings.Join(names, ", ")}}
}

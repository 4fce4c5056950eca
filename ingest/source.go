package ingest

import (
	"context"
	"time"

	"github.com/osc-assistant/assistant/config"
)

// The sync types (knowledge.md §6.1), in the order start-up seeding runs them.
const (
	TypeGitHub     = "github"
	TypePapers     = "papers"
	TypeDocstrings = "docstrings"
	TypeMailman    = "mailman"
	TypeDiscourse  = "discourse"
	TypeFAQ        = "faq"
)

// A Source syncs one type of a community's knowledge (GitHub items, papers, …) into its
// database: every source of that type the config names (each repo, query, DOI, forum, list) in
// turn. A failing source fails the run but does not stop the others; what was stored is kept.
// Sources never publish: the runner does, once per run.
type Source interface {
	// Type is the sync type, one of the Type constants.
	Type() string
	// Has reports whether c's config names anything for this type (the scheduler's data check).
	Has(c *config.Community) bool
	// Sync runs one sync of c. progress is called with a line's worth of state as the run goes
	// (items, pages, rate-limit state); it may be nil.
	Sync(ctx context.Context, c *config.Community, opts RunOptions, progress func(Progress)) (Result, error)
}

// RunOptions are a run's settings.
type RunOptions struct {
	// Full asks for a full sync (GitHub: list everything and delete what is gone; Discourse:
	// likewise); otherwise a source syncs what changed since its last clean sync.
	Full bool
}

// Progress is one progress report of a running sync: for `assistant sync`'s line per source and
// for the jobs the routes show.
type Progress struct {
	// Source names what is being synced: a repo, a query, a DOI, a forum, a list.
	Source string
	Items  int
	Pages  int
	// RateLimit describes the source's rate-limit state ("4,998 of 5,000 left, resets 12:00
	// UTC"), or "".
	RateLimit string
	// Waiting is set while the run waits (for a rate limit's reset, a Retry-After, a polite
	// delay) until then.
	Waiting time.Time
	// Done marks the source's last report; Err its failure, if it failed.
	Done bool
	Err  error
}

// Result is what a run of one type did for one community.
type Result struct {
	Items   int // rows written (inserted or updated)
	Deleted int // rows a full listing no longer had
	// Failed names the sources that failed, with their errors, in the order they ran.
	Failed []SourceError
}

// SourceError is one source's failure within a run.
type SourceError struct {
	Source string
	Err    error
}

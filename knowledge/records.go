package knowledge

import "time"

// The records of the synced sources (knowledge.md §2.2): what a sync writes into a community's
// database and what the search tools read back. Times and dates are kept as the sources give
// them (GitHub's "2024-05-01T12:00:00Z", a paper's publication date or year), as the
// reference's tables hold them; caps (§2.2) are applied by the writer, as a plain cut.

// GitHubItem is one row of github_items: an issue or a pull request of a repository.
type GitHubItem struct {
	Repo string // "owner/name"
	// Type is "issue" or "pr".
	Type   string
	Number int
	Title  string
	// Body is the first message (capped at 5,000 characters).
	Body string
	// Status is "open" or "closed" (a merged pull request is closed).
	Status    string
	URL       string
	CreatedAt string
}

// GitHubKey names a stored item, for deleting the ones a full listing no longer has.
type GitHubKey struct {
	Type   string
	Number int
}

// Paper is one row of papers.
type Paper struct {
	// Source is "openalex", "semanticscholar" or "pubmed".
	Source     string
	ExternalID string // OpenAlex "W…", a Semantic Scholar paperId, a PMID
	Title      string
	Abstract   string // first_message (capped at 2,000 characters)
	URL        string
	CreatedAt  string // a date or a year
	// CitesDOI is the configured primary DOI the paper cites ("" for a keyword hit); the first
	// link wins (knowledge.md §2.2 upserts).
	CitesDOI string
}

// Docstring is one row of docstrings: a symbol's documentation in a source file.
type Docstring struct {
	Repo     string
	FilePath string
	// Language is "python" or "matlab".
	Language string
	Symbol   string
	// SymbolType is "function", "method", "class", "module" or "script".
	SymbolType string
	Docstring  string // capped at 10,000 characters
	Line       int    // 0 when unknown
	Branch     string // "main" when empty
}

// Message is one row of mailing_list_messages.
type Message struct {
	List, MessageID, ThreadID, Subject, Author, AuthorEmail string
	Date                                                    string
	Body                                                    string // capped at 10,000 characters
	InReplyTo, URL                                          string
	Year                                                    int
}

// FAQEntry is one row of faq_entries.
type FAQEntry struct {
	List, ThreadID, ThreadURL string
	Question, Answer          string // the answer capped at 5,000 characters
	Tags                      []string
	Category                  string
	MessageCount              int
	ParticipantCount          int
	FirstMessageDate          string
	Quality                   float64
	SummarizedAt              time.Time
	Model                     string
}

// SummaryStatus is one row of summarization_status: where a mailing-list thread stands in FAQ
// generation. Status is "pending", "summarized", "failed" or "skipped".
type SummaryStatus struct {
	List, ThreadID, Status, FailureReason string
	Tokens                                int
	Cost                                  float64
	AttemptedAt                           time.Time
}

// Topic is one row of discourse_topics.
type Topic struct {
	ForumURL                         string
	TopicID                          int
	Title, FirstPost, AcceptedAnswer string // each capped at 5,000 characters
	Category                         string
	Tags                             []string
	Replies, Likes, Views            int
	URL, CreatedAt, LastPostedAt     string
}

// SyncMeta is one row of sync_metadata: when a source last synced cleanly and how many items.
type SyncMeta struct {
	SourceType, SourceName string
	LastSyncAt             time.Time
	Items                  int
}

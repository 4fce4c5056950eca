package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The queries behind the sync and feed routes (knowledge.md §7.1, §7.2, §7.5, §7.6): typed
// results the routers render as JSON. Each reads the published file; no file, or a file
// without a table, counts as empty, and any other database failure is an error wrapping
// ErrUnreadable (the routes' 503).

// FormatTime is t as the reference writes timestamps: ISO 8601 UTC with microseconds and
// +00:00 (2025-06-02T02:00:03.123456+00:00).
func FormatTime(t time.Time) string { return timestamp(t) }

// AgeHours is the hours from t to now rounded to 1 decimal (§7.1's ages), or nil when t is
// zero (never synced).
func AgeHours(now, t time.Time) *float64 {
	if t.IsZero() {
		return nil
	}
	h := math.Round(now.Sub(t).Hours()*10) / 10
	return &h
}

// RepoStatus is one repository of /sync/status's github.repos.
type RepoStatus struct {
	Items int
	// LastSync is the (github, repo) sync_metadata time; zero when none.
	LastSync time.Time
}

// SourceStatus is one paper source of /sync/status's papers.sources.
type SourceStatus struct {
	Items int
	// LastSync is the newest (papers, "{source}:…") sync_metadata time; zero when none.
	LastSync time.Time
}

// PaperSources are the sources /sync/status always lists.
var PaperSources = []string{"openalex", "semanticscholar", "pubmed"}

// KnowledgeCounts are the row counts of /sync/status's knowledge object.
type KnowledgeCounts struct {
	GitHubItems, Papers, Docstrings, DiscourseTopics, FAQEntries, MailingListMessages int
}

// SyncStatus is what /sync/status reads from a community's database (§7.1); the scheduler's
// parts come from the runner.
type SyncStatus struct {
	// GitHub: rows of github_items, of item_type issue and pr, of status open.
	GitHubTotal, Issues, PRs, OpenItems int
	// Repos are the repositories present in github_items (not the config's).
	Repos       map[string]RepoStatus
	PapersTotal int
	// Sources has each of PaperSources.
	Sources   map[string]SourceStatus
	Knowledge KnowledgeCounts
	// LastSync is the newest last_sync_at of each source_type with a sync_metadata row
	// (github, papers, citations, docstrings, mailman, faq, discourse, docs, beps, github_full).
	LastSync map[string]time.Time
}

// Health is §7.1's health object and §7.2's ages: hours since the newest github and papers
// sync_metadata rows (nil if never); github healthy when never synced or under 48 h, papers
// under 336 h; Healthy is GitHubHealthy.
type Health struct {
	Healthy, GitHubHealthy, PapersHealthy bool
	GitHubAgeHours, PapersAgeHours        *float64
}

// Health thresholds of §7.1.
const (
	githubHealthyHours = 48
	papersHealthyHours = 336
)

// Health computes the health object at now.
func (st SyncStatus) Health(now time.Time) Health {
	h := Health{GitHubAgeHours: AgeHours(now, st.LastSync["github"]), PapersAgeHours: AgeHours(now, st.LastSync["papers"])}
	h.GitHubHealthy = h.GitHubAgeHours == nil || *h.GitHubAgeHours < githubHealthyHours
	h.PapersHealthy = h.PapersAgeHours == nil || *h.PapersAgeHours < papersHealthyHours
	h.Healthy = h.GitHubHealthy
	return h
}

// feedRead runs fn on the published file with the names of its tables; no file is fn not
// run and no error. Errors other than the context's wrap ErrUnreadable and are logged.
func (s *Store) feedRead(ctx context.Context, id, what string, fn func(ctx context.Context, db *sql.DB, tables map[string]bool) error) error {
	err := s.read(ctx, id, func(ctx context.Context, db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type IN ('table', 'view')`)
		if err != nil {
			return err
		}
		names, err := scanAll(rows, func(r *sql.Rows) (string, error) { var n string; err := r.Scan(&n); return n, err })
		if err != nil {
			return err
		}
		tables := map[string]bool{}
		for _, n := range names {
			tables[n] = true
		}
		return fn(ctx, db, tables)
	})
	switch {
	case err == nil, errors.Is(err, ErrInvalidID):
		return err
	case errors.Is(err, ErrNotInitialized):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if !errors.Is(err, ErrUnreadable) {
		err = fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	s.log.Error("knowledge: "+what, "community", id, "error", err)
	return err
}

// count is the row count of a query; 0 when its table is missing.
func count(ctx context.Context, db *sql.DB, tables map[string]bool, table, q string, args ...any) (int, error) {
	if !tables[table] {
		return 0, nil
	}
	var n int
	err := db.QueryRowContext(ctx, q, args...).Scan(&n)
	return n, err
}

type metaRow struct {
	typ, name string
	at        time.Time
}

// syncMetaRows reads every sync_metadata row (a few per source); unreadable times are zero.
func syncMetaRows(ctx context.Context, db *sql.DB, tables map[string]bool) ([]metaRow, error) {
	if !tables["sync_metadata"] {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT source_type, source_name, last_sync_at FROM sync_metadata`)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(r *sql.Rows) (metaRow, error) {
		var m metaRow
		var at string
		err := r.Scan(&m.typ, &m.name, &at)
		m.at, _ = ParseTime(at)
		return m, err
	})
}

func newestByType(meta []metaRow) map[string]time.Time {
	out := map[string]time.Time{}
	for _, m := range meta {
		if m.at.After(out[m.typ]) {
			out[m.typ] = m.at
		}
	}
	return out
}

// SyncStatus reads /sync/status's counts and times for community id (§7.1).
func (s *Store) SyncStatus(ctx context.Context, id string) (SyncStatus, error) {
	st := SyncStatus{Repos: map[string]RepoStatus{}, Sources: map[string]SourceStatus{}, LastSync: map[string]time.Time{}}
	for _, src := range PaperSources {
		st.Sources[src] = SourceStatus{}
	}
	err := s.feedRead(ctx, id, "reading the sync status", func(ctx context.Context, db *sql.DB, tables map[string]bool) error {
		var err error
		counts := []struct {
			dst        *int
			table, sql string
		}{
			{&st.GitHubTotal, "github_items", `SELECT count(*) FROM github_items`},
			{&st.Issues, "github_items", `SELECT count(*) FROM github_items WHERE item_type = 'issue'`},
			{&st.PRs, "github_items", `SELECT count(*) FROM github_items WHERE item_type = 'pr'`},
			{&st.OpenItems, "github_items", `SELECT count(*) FROM github_items WHERE status = 'open'`},
			{&st.PapersTotal, "papers", `SELECT count(*) FROM papers`},
			{&st.Knowledge.Docstrings, "docstrings", `SELECT count(*) FROM docstrings`},
			{&st.Knowledge.DiscourseTopics, "discourse_topics", `SELECT count(*) FROM discourse_topics`},
			{&st.Knowledge.FAQEntries, "faq_entries", `SELECT count(*) FROM faq_entries`},
			{&st.Knowledge.MailingListMessages, "mailing_list_messages", `SELECT count(*) FROM mailing_list_messages`},
		}
		for _, c := range counts {
			if *c.dst, err = count(ctx, db, tables, c.table, c.sql); err != nil {
				return err
			}
		}
		st.Knowledge.GitHubItems, st.Knowledge.Papers = st.GitHubTotal, st.PapersTotal
		meta, err := syncMetaRows(ctx, db, tables)
		if err != nil {
			return err
		}
		st.LastSync = newestByType(meta)
		repoSync := map[string]time.Time{}
		for _, m := range meta {
			switch m.typ {
			case "github":
				repoSync[m.name] = m.at
			case "papers":
				src, _, ok := strings.Cut(m.name, ":")
				if ss, known := st.Sources[src]; ok && known && m.at.After(ss.LastSync) {
					ss.LastSync = m.at
					st.Sources[src] = ss
				}
			}
		}
		type group struct {
			key string
			n   int
		}
		scanGroup := func(r *sql.Rows) (group, error) { var g group; err := r.Scan(&g.key, &g.n); return g, err }
		if tables["github_items"] {
			rows, err := db.QueryContext(ctx, `SELECT repo, count(*) FROM github_items GROUP BY repo`)
			if err != nil {
				return err
			}
			gs, err := scanAll(rows, scanGroup)
			if err != nil {
				return err
			}
			for _, g := range gs {
				st.Repos[g.key] = RepoStatus{Items: g.n, LastSync: repoSync[g.key]}
			}
		}
		if tables["papers"] {
			rows, err := db.QueryContext(ctx, `SELECT source, count(*) FROM papers GROUP BY source`)
			if err != nil {
				return err
			}
			gs, err := scanAll(rows, scanGroup)
			if err != nil {
				return err
			}
			for _, g := range gs {
				if ss, known := st.Sources[g.key]; known {
					ss.Items = g.n
					st.Sources[g.key] = ss
				}
			}
		}
		return nil
	})
	return st, err
}

// SyncHealthCounts is /sync/health's object before its status (§7.2).
type SyncHealthCounts struct {
	GitHubItems, PapersItems int
	Health
}

// SyncHealth reads /sync/health's counts and ages for community id at now (§7.2): healthy
// as §7.1's health.healthy.
func (s *Store) SyncHealth(ctx context.Context, id string, now time.Time) (SyncHealthCounts, error) {
	var out SyncHealthCounts
	var st SyncStatus
	err := s.feedRead(ctx, id, "reading the sync health", func(ctx context.Context, db *sql.DB, tables map[string]bool) error {
		var err error
		if out.GitHubItems, err = count(ctx, db, tables, "github_items", `SELECT count(*) FROM github_items`); err != nil {
			return err
		}
		if out.PapersItems, err = count(ctx, db, tables, "papers", `SELECT count(*) FROM papers`); err != nil {
			return err
		}
		meta, err := syncMetaRows(ctx, db, tables)
		st.LastSync = newestByType(meta)
		return err
	})
	out.Health = st.Health(now)
	return out, err
}

// --- GET /{c}/faq ---

// FAQ feed bounds (§7.5); the route answers 422 outside them, the query clamps.
const (
	MaxFeedQueryChars    = 200
	MaxFeedCategoryChars = 50
	DefaultFeedLimit     = 50
	MaxFeedLimit         = 200
)

// FAQFeedQuery is GET /{c}/faq's parameters.
type FAQFeedQuery struct {
	// Q searches (§4.2 matching); blank browses.
	Q string
	// Category filters when set (ignoring ASCII case).
	Category string
	// MinQuality filters when > 0 (quality_score ≥ it).
	MinQuality float64
	// Limit is 1–200 (0 is 50); Offset ≥ 0.
	Limit, Offset int
}

// FeedEntry is one entry of the FAQ feed, e-mail addresses redacted.
type FeedEntry struct {
	Question, Answer string
	Tags             []string // never nil
	Category         string
	QualityScore     float64
	MessageCount     int
	FirstMessageDate string // "" when unknown
	ThreadURL        string
}

// FAQFeed is the feed's page and the number of matches before limit and offset.
type FAQFeed struct {
	Total   int
	Entries []FeedEntry // never nil
}

// emailPattern is §7.5's e-mail address; each match becomes RedactedEmail.
var emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)

// RedactedEmail replaces each e-mail address in the feed.
const RedactedEmail = "[email redacted]"

// RedactEmails replaces every e-mail address in t.
func RedactEmails(t string) string { return emailPattern.ReplaceAllLiteralString(t, RedactedEmail) }

// FAQFeed reads GET /{c}/faq's page (§7.5): browsing by quality_score then
// first_message_date, both descending; with a query, quality_score then relevance (the
// phrase, then bm25 with the §4.2 weights). Offset applies in both; e-mail addresses in
// questions, answers and tags are redacted. No file or no table is an empty feed.
func (s *Store) FAQFeed(ctx context.Context, id string, q FAQFeedQuery) (FAQFeed, error) {
	limit := limitOr(q.Limit, DefaultFeedLimit, MaxFeedLimit)
	offset := max(q.Offset, 0)
	feed := FAQFeed{Entries: []FeedEntry{}}
	// filters is the WHERE clause of the filters with its parameters numbered from base+1.
	filters := func(base int) (string, []any) {
		var conds []string
		var args []any
		if q.Category != "" {
			args = append(args, q.Category)
			conds = append(conds, fmt.Sprintf("t.category = ?%d COLLATE NOCASE", base+len(args)))
		}
		if q.MinQuality > 0 {
			args = append(args, q.MinQuality)
			conds = append(conds, fmt.Sprintf("t.quality_score >= ?%d", base+len(args)))
		}
		if len(conds) == 0 {
			return "1", nil
		}
		return strings.Join(conds, " AND "), args
	}
	err := s.feedRead(ctx, id, "reading the FAQ feed", func(ctx context.Context, db *sql.DB, tables map[string]bool) error {
		if !tables["faq_entries"] {
			return nil
		}
		var rows *sql.Rows
		var err error
		if strings.TrimSpace(q.Q) == "" {
			where, args := filters(0)
			if err = db.QueryRowContext(ctx, `SELECT count(*) FROM faq_entries t WHERE `+where, args...).Scan(&feed.Total); err != nil {
				return err
			}
			where, args = filters(2)
			rows, err = db.QueryContext(ctx, `SELECT `+faqCols+` FROM faq_entries t WHERE `+where+`
				ORDER BY t.quality_score DESC, COALESCE(t.first_message_date, '') DESC, t.id
				LIMIT ?1 OFFSET ?2`, append([]any{limit, offset}, args...)...)
		} else {
			if !tables["faq_entries_fts"] {
				return nil
			}
			match, phrase, ok := MatchQuery(q.Q)
			if !ok {
				return nil
			}
			where, args := filters(1)
			if err = db.QueryRowContext(ctx, `SELECT count(*) FROM faq_entries_fts JOIN faq_entries t ON t.id = faq_entries_fts.rowid
				WHERE faq_entries_fts MATCH ?1 AND `+where, append([]any{match}, args...)...).Scan(&feed.Total); err != nil {
				return err
			}
			where, args = filters(3)
			page := rankedSQL("faq_entries_fts", "3.0, 1.0, 2.0", faqCols, "faq_entries", where, "t.quality_score DESC", "") +
				fmt.Sprintf(" OFFSET ?%d", 4+len(args))
			rows, err = db.QueryContext(ctx, page, append(append([]any{match, phrase, limit}, args...), offset)...)
		}
		if err != nil {
			return err
		}
		es, err := scanAll(rows, scanFAQ)
		if err != nil {
			return err
		}
		for _, e := range es {
			tags := make([]string, 0, len(e.Tags))
			for _, t := range e.Tags {
				tags = append(tags, RedactEmails(t))
			}
			feed.Entries = append(feed.Entries, FeedEntry{Question: RedactEmails(e.Question), Answer: RedactEmails(e.Answer), Tags: tags,
				Category: e.Category, QualityScore: e.Quality, MessageCount: e.MessageCount, FirstMessageDate: e.FirstMessageDate, ThreadURL: e.ThreadURL})
		}
		return nil
	})
	if err != nil {
		return FAQFeed{Entries: []FeedEntry{}}, err
	}
	return feed, nil
}

// --- GET /{c}/citations ---

// CitationsFeed is GET /{c}/citations' counts (§7.6); the route adds canonical_dois and labels
// from the config. Maps are never nil; years render as JSON keys in ascending order.
type CitationsFeed struct {
	Total   int
	PerYear map[int]int
	ByPaper map[string]map[int]int
}

// Years returns the keys of a year map in ascending order.
func Years(m map[int]int) []int {
	ys := make([]int, 0, len(m))
	for y := range m {
		ys = append(ys, y)
	}
	sort.Ints(ys)
	return ys
}

// CitationsFeed reads the citation counts (§7.6) of the DOIs given (the configured ones,
// compared ignoring case, each reported under its configured spelling), or of every DOI when
// dois is nil. No file or no table is zeros and empty maps.
func (s *Store) CitationsFeed(ctx context.Context, id string, dois []string) (CitationsFeed, error) {
	feed := CitationsFeed{PerYear: map[int]int{}, ByPaper: map[string]map[int]int{}}
	want := map[string]string{}
	for _, d := range dois {
		want[strings.ToLower(d)] = d
	}
	err := s.feedRead(ctx, id, "reading the citations feed", func(ctx context.Context, db *sql.DB, tables map[string]bool) error {
		if !tables["citation_counts"] {
			return nil
		}
		cols, err := hasColumn(ctx, db, "citation_counts", "year")
		if err != nil || !cols {
			return err // a reference table of another shape (renamed only on a working copy)
		}
		rows, err := db.QueryContext(ctx, `SELECT doi, year, count FROM citation_counts ORDER BY doi, year`)
		if err != nil {
			return err
		}
		type row struct {
			doi         string
			year, count int
		}
		rs, err := scanAll(rows, func(r *sql.Rows) (row, error) { var x row; err := r.Scan(&x.doi, &x.year, &x.count); return x, err })
		if err != nil {
			return err
		}
		for _, x := range rs {
			doi := x.doi
			if dois != nil {
				d, ok := want[strings.ToLower(x.doi)]
				if !ok {
					continue
				}
				doi = d
			}
			if feed.ByPaper[doi] == nil {
				feed.ByPaper[doi] = map[int]int{}
			}
			feed.ByPaper[doi][x.year] += x.count
			feed.PerYear[x.year] += x.count
			feed.Total += x.count
		}
		return nil
	})
	if err != nil {
		return CitationsFeed{PerYear: map[int]int{}, ByPaper: map[string]map[int]int{}}, err
	}
	return feed, nil
}

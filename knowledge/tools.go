package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The searches behind the knowledge tools of the synced sources (knowledge.md §4.2–4.3):
// search_{id}_discussions, list_{id}_recent, search_{id}_papers, search_{id}_code_docs,
// get_{id}_full_docstring, search_{id}_faq and search_{id}_forum. Each reads the community's
// published file (read-only, opened again when a new one is published, a few connections at
// most) and returns typed rows; the *Text functions in tooltext.go render the spec's text.

// Limits of the tools (spec §4.1; a limit of 0 is the tool's default).
const (
	DefaultRecentLimit = 10
	MaxRecentLimit     = 50
	// maxSymbolBytes bounds the symbol name a lookup takes (far longer than any symbol).
	maxSymbolBytes = 1024
)

// ErrMissingTable is wrapped by a read of a published file that lacks a table the tool needs
// (spec §4.1 "missing table"); such an error is also ErrNotInitialized.
var ErrMissingTable = errors.New("knowledge table missing")

// MissingTableError names the missing table. errors.Is matches it to ErrMissingTable and to
// ErrNotInitialized.
type MissingTableError struct{ Table string }

func (e *MissingTableError) Error() string { return "knowledge database has no table " + e.Table }

// Is makes a missing table both ErrMissingTable and ErrNotInitialized.
func (e *MissingTableError) Is(target error) bool {
	return target == ErrMissingTable || target == ErrNotInitialized
}

// limitOr is limit clamped to 1–most, with 0 the default def.
func limitOr(limit, def, most int) int {
	if limit == 0 {
		return def
	}
	return min(max(limit, 1), most)
}

// query runs fn on the community's published file once the tables it needs are there. Errors
// come back as ErrInvalidID, ErrNotInitialized (no file), a *MissingTableError, the context's
// error, or an error wrapping ErrUnreadable, which is logged.
func (s *Store) query(ctx context.Context, id, what string, tables []string, fn func(ctx context.Context, db *sql.DB) error) error {
	err := s.read(ctx, id, func(ctx context.Context, db *sql.DB) error {
		for _, t := range tables {
			has, err := hasTable(ctx, db, t)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUnreadable, err)
			}
			if !has {
				return &MissingTableError{t}
			}
		}
		return fn(ctx, db)
	})
	switch {
	case err == nil, errors.Is(err, ErrInvalidID), errors.Is(err, ErrNotInitialized):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if !errors.Is(err, ErrUnreadable) {
		err = fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	s.log.Error("knowledge: "+what, "community", id, "error", err)
	return err
}

// scanAll scans every row with scan, wrapping failures as unreadable.
func scanAll[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return out, nil
}

// rankedSQL is the §4.2 search over fts and its base table: rows holding the phrase (?2) of all
// terms first, then bm25 with the given column weights, among the rows the OR of the terms
// (?1) matches that pass where (on the base table, alias t; parameters from ?4); first is an
// ORDER BY term put before the others (the FAQ feed's quality, §7.5), tie one after bm25 (the
// FAQ tool's quality, §4.2.5: ties only), ?3 the limit.
func rankedSQL(fts, weights, cols, table, where, first, tie string) string {
	phrase := `(SELECT rowid FROM ` + fts + ` WHERE ` + fts + ` MATCH ?2)`
	if where == "" && first == "" && tie == "" {
		// Nothing to read from the base table before the cut: rank in the FTS table alone
		// and join only the first rows (joining every match first doubled the time at
		// 100,000 rows).
		return `WITH r AS (
	SELECT rowid AS rid, rowid IN ` + phrase + ` AS phrase, bm25(` + fts + `, ` + weights + `) AS score
	FROM ` + fts + ` WHERE ` + fts + ` MATCH ?1
	ORDER BY phrase DESC, score, rid LIMIT ?3)
SELECT ` + cols + ` FROM r JOIN ` + table + ` t ON t.id = r.rid
ORDER BY r.phrase DESC, r.score, r.rid`
	}
	if where == "" {
		where = "1"
	}
	if first != "" {
		first += ", "
	}
	if tie != "" {
		tie += ", "
	}
	return `SELECT ` + cols + `
FROM (SELECT rowid AS rid, bm25(` + fts + `, ` + weights + `) AS score FROM ` + fts + ` WHERE ` + fts + ` MATCH ?1) r
JOIN ` + table + ` t ON t.id = r.rid
WHERE ` + where + `
ORDER BY ` + first + `(t.id IN ` + phrase + `) DESC, r.score, ` + tie + `t.id
LIMIT ?3`
}

// ranked runs rankedSQL for query; no terms, no rows.
func ranked[T any](ctx context.Context, db *sql.DB, query, sqlText string, limit int, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	match, phrase, ok := MatchQuery(query)
	if !ok {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, sqlText, append([]any{match, phrase, limit}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return scanAll(rows, scan)
}

// --- search_{id}_discussions and list_{id}_recent ---

// NumberQuery is the number lookup of search_{id}_discussions (spec §4.2): the trimmed query
// without a leading "#" being ASCII digits ("2022", "#500"), or starting with pr, pull,
// issue, bug or feature (any case), optional spaces, an optional "#", optional spaces and
// digits ("PR 2022", "issue #12"). ok is false when there is no number (or it does not fit an
// int32, as no GitHub number does); only is true when the query is nothing but the pattern,
// so no text search runs.
func NumberQuery(query string) (n int, only, ok bool) {
	q := strings.TrimSpace(query)
	if d := strings.TrimPrefix(q, "#"); d != "" && isDigits(d) {
		if n, ok := atoi(d); ok {
			return n, true, true
		}
		return 0, false, false
	}
	for _, p := range []string{"pull", "pr", "issue", "bug", "feature"} {
		if !hasPrefixFold(q, p) {
			continue
		}
		rest := strings.TrimLeft(q[len(p):], " \t\r\n\f\v")
		rest = strings.TrimPrefix(rest, "#")
		rest = strings.TrimLeft(rest, " \t\r\n\f\v")
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if end == 0 {
			continue
		}
		n, ok := atoi(rest[:end])
		if !ok {
			return 0, false, false
		}
		return n, end == len(rest), true
	}
	return 0, false, false
}

// hasPrefixFold reports whether s starts with the lower-case ASCII word p in any ASCII case
// (byte for byte, so no other character's case folding can count as one of p's letters).
func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoi(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// DiscussionOptions are search_{id}_discussions' parameters besides the query.
type DiscussionOptions struct {
	// IncludeIssues and IncludePRs choose the item types (the tool's defaults are both true).
	IncludeIssues, IncludePRs bool
	// Limit is clamped to 1–20; 0 is 5.
	Limit int
}

const githubCols = `t.repo, t.item_type, t.number, t.title, COALESCE(t.first_message, ''), t.status, t.url, t.created_at, t.id`

func scanGitHub(rows *sql.Rows) (GitHubItem, error) {
	var it GitHubItem
	var id int64
	err := rows.Scan(&it.Repo, &it.Type, &it.Number, &it.Title, &it.Body, &it.Status, &it.URL, &it.CreatedAt, &id)
	return it, err
}

// SearchDiscussions is search_{id}_discussions (spec §4.2–4.3): the items numbered as the
// query asks (NumberQuery) first, then one ranked search over the included types (title
// weighted 3, first message 1), no item twice, at most Limit.
func (s *Store) SearchDiscussions(ctx context.Context, id, query string, opts DiscussionOptions) ([]GitHubItem, error) {
	limit := limitOr(opts.Limit, DefaultLimit, MaxLimit)
	var types []any
	if opts.IncludeIssues {
		types = append(types, "issue")
	}
	if opts.IncludePRs {
		types = append(types, "pr")
	}
	var items []GitHubItem
	err := s.query(ctx, id, "searching discussions", []string{"github_items", "github_items_fts"}, func(ctx context.Context, db *sql.DB) error {
		if len(types) == 0 {
			return nil
		}
		typeIn := "t.item_type IN (?4" + strings.Repeat(", ?5", len(types)-1) + ")"
		textWhere, textArgs := typeIn, types
		if len(types) == 2 {
			textWhere, textArgs = "", nil // every item: no filter to apply
		}
		seen := map[string]bool{}
		key := func(it GitHubItem) string { return it.Repo + "\x00" + it.Type + "\x00" + strconv.Itoa(it.Number) }
		n, only, ok := NumberQuery(query)
		if ok {
			rows, err := db.QueryContext(ctx, `SELECT `+githubCols+` FROM github_items t WHERE t.number = ?3 AND `+typeIn+`
				ORDER BY t.repo, t.item_type, t.id LIMIT ?1`, append([]any{limit, nil, n}, types...)...)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUnreadable, err)
			}
			if items, err = scanAll(rows, scanGitHub); err != nil {
				return err
			}
			for _, it := range items {
				seen[key(it)] = true
			}
			if only {
				return nil
			}
		}
		if len(items) >= limit {
			return nil
		}
		more, err := ranked(ctx, db, query, rankedSQL("github_items_fts", "3.0, 1.0", githubCols, "github_items", textWhere, "", ""),
			limit+len(items), textArgs, scanGitHub)
		for _, it := range more {
			if len(items) < limit && !seen[key(it)] {
				seen[key(it)] = true
				items = append(items, it)
			}
		}
		return err
	})
	return items, err
}

// RecentOptions are list_{id}_recent's parameters.
type RecentOptions struct {
	// Type is "all" (or ""), "issue" or "pr".
	Type string
	// Repo and Status ("open" or "closed") filter when set.
	Repo, Status string
	// Limit is clamped to 1–50; 0 is 10.
	Limit int
}

// ListRecent is list_{id}_recent (spec §4.3): items passing the filters, newest first by
// created_at. A type or status the tool does not know matches nothing (no query runs).
func (s *Store) ListRecent(ctx context.Context, id string, opts RecentOptions) ([]GitHubItem, error) {
	limit := limitOr(opts.Limit, DefaultRecentLimit, MaxRecentLimit)
	var where []string
	args := []any{limit}
	add := func(cond, v string) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	// Only the repo may pick an index (repo, created_at); the unary + keeps the others from
	// being used, so without a repo the newest items are read from the created_at index
	// until enough pass, instead of every open item being sorted.
	if opts.Type != "" && opts.Type != "all" {
		if opts.Type != "issue" && opts.Type != "pr" {
			return nil, s.query(ctx, id, "listing recent GitHub items", []string{"github_items"}, noRows)
		}
		add("+t.item_type = ?%d", opts.Type)
	}
	if opts.Repo != "" {
		add("t.repo = ?%d", opts.Repo)
	}
	if opts.Status != "" {
		if opts.Status != "open" && opts.Status != "closed" {
			return nil, s.query(ctx, id, "listing recent GitHub items", []string{"github_items"}, noRows)
		}
		add("+t.status = ?%d", opts.Status)
	}
	cond := "1"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	var items []GitHubItem
	err := s.query(ctx, id, "listing recent GitHub items", []string{"github_items"}, func(ctx context.Context, db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT `+githubCols+` FROM github_items t WHERE `+cond+`
			ORDER BY t.created_at DESC, t.id DESC LIMIT ?1`, args...)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		items, err = scanAll(rows, scanGitHub)
		return err
	})
	return items, err
}

// noRows is a read that finds nothing: the database's state is still reported.
func noRows(context.Context, *sql.DB) error { return nil }

// --- search_{id}_papers ---

// dedupeJaccard is the title similarity at which search_{id}_papers drops a paper (§4.3).
const dedupeJaccard = 0.7

const paperCols = `t.source, t.external_id, t.title, COALESCE(t.first_message, ''), t.url, COALESCE(t.created_at, ''), COALESCE(t.cites_doi, '')`

func scanPaper(rows *sql.Rows) (Paper, error) {
	var p Paper
	err := rows.Scan(&p.Source, &p.ExternalID, &p.Title, &p.Abstract, &p.URL, &p.CreatedAt, &p.CitesDOI)
	return p, err
}

// SearchPapers is search_{id}_papers (spec §4.3): up to 3 × limit papers by the §4.2 ranking
// (title weighted 3, abstract 1), then each whose title is a near duplicate of one kept
// (TitleWords' Jaccard similarity ≥ 0.7) dropped, at most limit (1–20; 0 is 5).
func (s *Store) SearchPapers(ctx context.Context, id, query string, limit int) ([]Paper, error) {
	limit = limitOr(limit, DefaultLimit, MaxLimit)
	var out []Paper
	err := s.query(ctx, id, "searching papers", []string{"papers", "papers_fts"}, func(ctx context.Context, db *sql.DB) error {
		cols := paperCols
		if has, err := hasColumn(ctx, db, "papers", "cites_doi"); err != nil {
			return err
		} else if !has {
			cols = strings.Replace(cols, "COALESCE(t.cites_doi, '')", "''", 1)
		}
		ps, err := ranked(ctx, db, query, rankedSQL("papers_fts", "3.0, 1.0", cols, "papers", "", "", ""), 3*limit, nil, scanPaper)
		if err != nil {
			return err
		}
		var kept []map[string]bool
		for _, p := range ps {
			words := TitleWords(p.Title)
			dup := false
			for _, k := range kept {
				if Jaccard(words, k) >= dedupeJaccard {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
			kept = append(kept, words)
			out = append(out, p)
			if len(out) == limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// TitleWords is a title's word set for de-duplication (spec §4.3): NFKC, lower-cased, every
// character other than a word character (letter, number, underscore) or white space removed,
// the words of 3 or more characters.
func TitleWords(title string) map[string]bool {
	title = strings.ToLower(norm.NFKC.String(title))
	var b strings.Builder
	for _, r := range title {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || unicode.IsSpace(r) {
			b.WriteRune(r)
		}
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(b.String()) {
		if len([]rune(w)) >= 3 {
			words[w] = true
		}
	}
	return words
}

// Jaccard is |a ∩ b| / |a ∪ b|; an empty set matches nothing (0).
func Jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// --- search_{id}_code_docs and get_{id}_full_docstring ---

const docCols = `t.repo, t.file_path, t.language, t.symbol_name, t.symbol_type, t.docstring, COALESCE(t.line_number, 0), COALESCE(NULLIF(t.branch, ''), 'main'), t.id`

func scanDoc(rows *sql.Rows) (Docstring, error) {
	var d Docstring
	var id int64
	err := rows.Scan(&d.Repo, &d.FilePath, &d.Language, &d.Symbol, &d.SymbolType, &d.Docstring, &d.Line, &d.Branch, &id)
	return d, err
}

// symbolArg is the query as a symbol name: trimmed and bounded.
func symbolArg(q string) string {
	q = strings.TrimSpace(q)
	if len(q) > maxSymbolBytes {
		q = strings.ToValidUTF8(q[:maxSymbolBytes], "")
	}
	return q
}

// hasColumn reports whether table has the column (a reference file may lack the newer ones).
func hasColumn(ctx context.Context, db *sql.DB, table, col string) (bool, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, col).Scan(&n); err != nil {
		return false, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return n > 0, nil
}

// docSelect is docCols for this file: one without docstrings.branch reads 'main'.
func docSelect(ctx context.Context, db *sql.DB) (string, error) {
	has, err := hasColumn(ctx, db, "docstrings", "branch")
	if err != nil || has {
		return docCols, err
	}
	return strings.Replace(docCols, "COALESCE(NULLIF(t.branch, ''), 'main')", "'main'", 1), nil
}

// SearchCodeDocs is search_{id}_code_docs (spec §4.3): the symbols named exactly as the
// trimmed query (ignoring ASCII case, looked up directly) first, by repo and file, then the
// §4.2 ranking with symbol_name weighted 10 and docstring 1; no symbol twice, at most limit
// (1–20; 0 is 5).
func (s *Store) SearchCodeDocs(ctx context.Context, id, query string, limit int) ([]Docstring, error) {
	limit = limitOr(limit, DefaultLimit, MaxLimit)
	var out []Docstring
	err := s.query(ctx, id, "searching code documentation", []string{"docstrings", "docstrings_fts"}, func(ctx context.Context, db *sql.DB) error {
		cols, err := docSelect(ctx, db)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		key := func(d Docstring) string { return d.Repo + "\x00" + d.FilePath + "\x00" + d.Symbol }
		if sym := symbolArg(query); sym != "" {
			rows, err := db.QueryContext(ctx, `SELECT `+cols+` FROM docstrings t WHERE t.symbol_name = ?1 COLLATE NOCASE
				ORDER BY t.repo, t.file_path, t.id LIMIT ?2`, sym, limit)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUnreadable, err)
			}
			if out, err = scanAll(rows, scanDoc); err != nil {
				return err
			}
			for _, d := range out {
				seen[key(d)] = true
			}
		}
		if len(out) >= limit {
			return nil
		}
		more, err := ranked(ctx, db, query, rankedSQL("docstrings_fts", "10.0, 1.0", cols, "docstrings", "", "", ""), limit+len(out), nil, scanDoc)
		for _, d := range more {
			if len(out) < limit && !seen[key(d)] {
				seen[key(d)] = true
				out = append(out, d)
			}
		}
		return err
	})
	return out, err
}

// maxFullDocstrings is how many matches get_{id}_full_docstring returns (§4.3).
const maxFullDocstrings = 5

// FullDocstring is get_{id}_full_docstring (spec §4.3): the symbols named symbol (ignoring
// ASCII case) with a non-empty docstring, by repo and file, at most 5.
func (s *Store) FullDocstring(ctx context.Context, id, symbol string) ([]Docstring, error) {
	sym := symbolArg(symbol)
	var out []Docstring
	err := s.query(ctx, id, "reading a full docstring", []string{"docstrings"}, func(ctx context.Context, db *sql.DB) error {
		if sym == "" {
			return nil
		}
		cols, err := docSelect(ctx, db)
		if err != nil {
			return err
		}
		rows, err := db.QueryContext(ctx, `SELECT `+cols+` FROM docstrings t WHERE t.symbol_name = ?1 COLLATE NOCASE AND t.docstring != ''
			ORDER BY t.repo, t.file_path, t.id LIMIT ?2`, sym, maxFullDocstrings)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		out, err = scanAll(rows, scanDoc)
		return err
	})
	return out, err
}

// --- search_{id}_faq and search_{id}_forum ---

// FilteredQuery is the query and filters of search_{id}_faq and search_{id}_forum.
type FilteredQuery struct {
	Query string
	// Category filters when set (FAQ category, forum category_name; ignoring ASCII case).
	Category string
	// Limit is clamped to 1–20; 0 is 5.
	Limit int
}

const faqCols = `t.list_name, t.thread_id, t.thread_url, t.question, t.answer, COALESCE(t.tags, ''), COALESCE(t.category, ''),
	COALESCE(t.message_count, 0), COALESCE(t.participant_count, 0), COALESCE(t.first_message_date, ''), COALESCE(t.quality_score, 0),
	COALESCE(t.summary_model, '')`

func scanFAQ(rows *sql.Rows) (FAQEntry, error) {
	var e FAQEntry
	var tags string
	err := rows.Scan(&e.List, &e.ThreadID, &e.ThreadURL, &e.Question, &e.Answer, &tags, &e.Category, &e.MessageCount,
		&e.ParticipantCount, &e.FirstMessageDate, &e.Quality, &e.Model)
	e.Tags = parseTags(tags)
	return e, err
}

// SearchFAQ is search_{id}_faq (spec §4.3): entries matching the query (§4.2; question
// weighted 3, answer 1, tags 2) and the category, the phrase first, then bm25, higher
// quality_score breaking ties (§4.2.5; the public feed orders by quality first, §7.5); at
// most limit.
func (s *Store) SearchFAQ(ctx context.Context, id string, q FilteredQuery) ([]FAQEntry, error) {
	limit := limitOr(q.Limit, DefaultLimit, MaxLimit)
	where, args := categoryFilter("t.category", q.Category)
	var out []FAQEntry
	err := s.query(ctx, id, "searching the FAQ", []string{"faq_entries", "faq_entries_fts"}, func(ctx context.Context, db *sql.DB) error {
		var err error
		out, err = ranked(ctx, db, q.Query, rankedSQL("faq_entries_fts", "3.0, 1.0, 2.0", faqCols, "faq_entries", where, "", "t.quality_score DESC"), limit, args, scanFAQ)
		return err
	})
	return out, err
}

func categoryFilter(col, category string) (string, []any) {
	if category == "" {
		return "", nil
	}
	return col + " = ?4 COLLATE NOCASE", []any{category}
}

const topicCols = `t.forum_url, t.topic_id, t.title, COALESCE(t.first_post, ''), COALESCE(t.accepted_answer, ''), COALESCE(t.category_name, ''),
	COALESCE(t.tags, ''), COALESCE(t.reply_count, 0), COALESCE(t.like_count, 0), COALESCE(t.views, 0), t.url, t.created_at, COALESCE(t.last_posted_at, '')`

func scanTopic(rows *sql.Rows) (Topic, error) {
	var tp Topic
	var tags string
	err := rows.Scan(&tp.ForumURL, &tp.TopicID, &tp.Title, &tp.FirstPost, &tp.AcceptedAnswer, &tp.Category, &tags,
		&tp.Replies, &tp.Likes, &tp.Views, &tp.URL, &tp.CreatedAt, &tp.LastPostedAt)
	tp.Tags = parseTags(tags)
	return tp, err
}

// SearchForum is search_{id}_forum (spec §4.3): topics matching the query (§4.2; title
// weighted 3, first post and accepted answer 1) and the category (category_name), at most
// limit.
func (s *Store) SearchForum(ctx context.Context, id string, q FilteredQuery) ([]Topic, error) {
	limit := limitOr(q.Limit, DefaultLimit, MaxLimit)
	where, args := categoryFilter("t.category_name", q.Category)
	var out []Topic
	err := s.query(ctx, id, "searching the forum", []string{"discourse_topics", "discourse_topics_fts"}, func(ctx context.Context, db *sql.DB) error {
		var err error
		out, err = ranked(ctx, db, q.Query, rankedSQL("discourse_topics_fts", "3.0, 1.0, 1.0", topicCols, "discourse_topics", where, "", ""), limit, args, scanTopic)
		return err
	})
	return out, err
}

package knowledge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// The caps of knowledge.md §2.2, in characters (code points), applied as a plain cut.
const (
	CapGitHubBody   = 5000
	CapAbstract     = 2000
	CapDocstring    = 10000
	CapMessageBody  = 10000
	CapFAQAnswer    = 5000
	CapTopicText    = 5000
	maxRecordFields = 1 << 20 // a bound on any other text a writer stores (1 Mi characters)
)

// ErrInvalidRecord is wrapped by the errors of Tx methods given a record that breaks the
// schema's rules (an item type other than issue or pr, an empty key, …).
var ErrInvalidRecord = errors.New("invalid knowledge record")

func invalid(table, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidRecord, table, fmt.Sprintf(format, args...))
}

// Update runs fn in one transaction on the community's working copy and does not publish
// (Publish does, once per run). It takes the same per-community writer lock as Write, so
// writers take turns; the schema is ensured first; the Tx methods apply the caps of §2.2.
// fn's error rolls the transaction back and is returned as it is. Keep fn short: one page or
// one repository, never across a network call, since every other writer of the community
// waits for it.
func (s *Store) Update(ctx context.Context, id string, fn func(ctx context.Context, tx *Tx) error) error {
	return s.withWriter(ctx, id, func(db *sql.DB) error {
		stx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("knowledge store: %w", err)
		}
		// Rolled back on a panic in fn too (a no-op after the commit): ctx may never end, and
		// an open transaction would lock the working copy for every later writer.
		defer stx.Rollback()
		tx := &Tx{ctx: ctx, tx: stx, now: timestamp(time.Now())}
		if err := fn(ctx, tx); err != nil {
			stx.Rollback()
			return err
		}
		if tx.changed {
			// Marked before the commit: a crash between the two publishes an unchanged copy
			// once, which is harmless; the other order could lose a publish.
			if err := os.WriteFile(s.unpublishedPath(id), nil, 0o644); err != nil {
				stx.Rollback()
				return fmt.Errorf("knowledge store: %w", err)
			}
		}
		if err := stx.Commit(); err != nil {
			return fmt.Errorf("knowledge store: %w", err)
		}
		return nil
	})
}

// Publish publishes the community's working copy now if an Update changed it since the last
// publish (spec §2.1 "Publish"); otherwise it does nothing. It takes the writer lock, so it
// waits for a running Update and sees everything committed before it.
func (s *Store) Publish(ctx context.Context, id string) error {
	if !ValidID(id) {
		return ErrInvalidID
	}
	if _, err := os.Stat(s.unpublishedPath(id)); err != nil {
		return nil // cheap check before the lock: nothing to publish
	}
	return s.withWriter(ctx, id, func(db *sql.DB) error {
		if _, err := os.Stat(s.unpublishedPath(id)); err != nil {
			return nil // published by another writer meanwhile
		}
		return s.publish(ctx, db, id)
	})
}

// Tx is one transaction of Update on a working copy. Its methods are the only writes the
// synced sources make; each applies the spec's upsert rule and caps (§2.2) and stamps
// synced_at with the transaction's start. A Tx is not safe for concurrent use and is valid
// only inside its Update's fn.
type Tx struct {
	ctx     context.Context
	tx      *sql.Tx
	now     string
	changed bool
}

// exec runs a statement and records whether it changed a row.
func (tx *Tx) exec(stmt *sql.Stmt, args ...any) (int, error) {
	res, err := stmt.ExecContext(tx.ctx, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if n > 0 {
		tx.changed = true
	}
	return int(n), nil
}

// each prepares query and runs it once per record, with args giving a record's arguments.
func each[T any](tx *Tx, table, query string, recs []T, args func(T) ([]any, error)) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	stmt, err := tx.tx.PrepareContext(tx.ctx, query)
	if err != nil {
		return 0, fmt.Errorf("knowledge store: %s: %w", table, err)
	}
	defer stmt.Close()
	total := 0
	for _, r := range recs {
		a, err := args(r)
		if err != nil {
			return total, err
		}
		n, err := tx.exec(stmt, a...)
		if err != nil {
			return total, fmt.Errorf("knowledge store: %s: %w", table, err)
		}
		total += n
	}
	return total, nil
}

// capText is t cut to its first n characters (a plain cut, spec §2.2); invalid UTF-8 becomes
// U+FFFD first so the stored text is valid.
func capText(t string, n int) string {
	t = strings.ToValidUTF8(t, "\uFFFD")
	if len(t) <= n { // bytes ≥ characters
		return t
	}
	i := 0
	for pos := range t {
		if i == n {
			return t[:pos]
		}
		i++
	}
	return t
}

// field is a text without a cap of its own in the spec, bounded anyway.
func field(t string) string { return capText(t, maxRecordFields) }

// nullable is "" as NULL, as the reference stores absent values.
func nullable(t string) any {
	if t == "" {
		return nil
	}
	return t
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

func tagsJSON(tags []string) string {
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(tags) // a []string always marshals
	return string(b)
}

// UpsertGitHubItems stores items: a new (repo, type, number) is inserted; a stored one gets
// title, first_message, status and synced_at updated (url and created_at keep their first
// values). The body is capped at 5,000 characters. It returns the rows written.
func (tx *Tx) UpsertGitHubItems(items []GitHubItem) (int, error) {
	const q = `INSERT INTO github_items (repo, item_type, number, title, first_message, status, url, created_at, synced_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(repo, item_type, number) DO UPDATE SET
			title = excluded.title, first_message = excluded.first_message, status = excluded.status,
			synced_at = excluded.synced_at`
	return each(tx, "github_items", q, items, func(it GitHubItem) ([]any, error) {
		if it.Repo == "" || it.Number <= 0 {
			return nil, invalid("github_items", "item %q #%d: repo and a positive number are required", it.Repo, it.Number)
		}
		if it.Type != "issue" && it.Type != "pr" {
			return nil, invalid("github_items", "%s #%d: item type %q, want issue or pr", it.Repo, it.Number, it.Type)
		}
		if it.Status != "open" && it.Status != "closed" {
			return nil, invalid("github_items", "%s #%d: status %q, want open or closed", it.Repo, it.Number, it.Status)
		}
		return []any{field(it.Repo), it.Type, it.Number, field(it.Title), nullable(capText(it.Body, CapGitHubBody)),
			it.Status, field(it.URL), field(it.CreatedAt), tx.now}, nil
	})
}

// keysExcept returns the ids of rows query lists (id and a key) whose key keep lacks.
func keysExcept[K comparable](tx *Tx, query string, args []any, scan func(*sql.Rows) (int64, K, error), keep map[K]bool) ([]int64, error) {
	rows, err := tx.tx.QueryContext(tx.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		id, k, err := scan(rows)
		if err != nil {
			return nil, err
		}
		if !keep[k] {
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}

// deleteIDs deletes the rows of table with those ids.
func (tx *Tx) deleteIDs(table string, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	stmt, err := tx.tx.PrepareContext(tx.ctx, `DELETE FROM `+table+` WHERE id = ?`)
	if err != nil {
		return 0, fmt.Errorf("knowledge store: %s: %w", table, err)
	}
	defer stmt.Close()
	total := 0
	for _, id := range ids {
		n, err := tx.exec(stmt, id)
		if err != nil {
			return total, fmt.Errorf("knowledge store: %s: %w", table, err)
		}
		total += n
	}
	return total, nil
}

func scanIDString(rows *sql.Rows) (int64, string, error) {
	var id int64
	var k sql.NullString
	err := rows.Scan(&id, &k)
	return id, k.String, err
}

func scanIDInt(rows *sql.Rows) (int64, int, error) {
	var id int64
	var k int
	err := rows.Scan(&id, &k)
	return id, k, err
}

func setOf[K comparable](ks []K) map[K]bool {
	m := make(map[K]bool, len(ks))
	for _, k := range ks {
		m[k] = true
	}
	return m
}

// DeleteGitHubItemsExcept deletes repo's items whose (type, number) keep does not hold: what a
// complete listing of the repo no longer has (full syncs only, §6.3). It returns the rows
// deleted.
func (tx *Tx) DeleteGitHubItemsExcept(repo string, keep []GitHubKey) (int, error) {
	ids, err := keysExcept(tx, `SELECT id, item_type, number FROM github_items WHERE repo = ?`, []any{repo},
		func(rows *sql.Rows) (int64, GitHubKey, error) {
			var id int64
			var k GitHubKey
			err := rows.Scan(&id, &k.Type, &k.Number)
			return id, k, err
		}, setOf(keep))
	if err != nil {
		return 0, fmt.Errorf("knowledge store: github_items: %w", err)
	}
	return tx.deleteIDs("github_items", ids)
}

// DeleteGitHubReposExcept deletes the items of every repository not in repos (repositories
// no longer configured). It returns the rows deleted.
func (tx *Tx) DeleteGitHubReposExcept(repos []string) (int, error) {
	ids, err := keysExcept(tx, `SELECT id, repo FROM github_items`, nil, scanIDString, setOf(repos))
	if err != nil {
		return 0, fmt.Errorf("knowledge store: github_items: %w", err)
	}
	return tx.deleteIDs("github_items", ids)
}

// UpsertPapers stores papers: a new (source, external_id) is inserted; a stored one gets
// title, first_message (the abstract, capped at 2,000) and synced_at updated, and keeps its
// cites_doi when it has one (the first link wins; a keyword hit never erases one). It returns
// the rows written.
func (tx *Tx) UpsertPapers(papers []Paper) (int, error) {
	const q = `INSERT INTO papers (source, external_id, title, first_message, status, url, created_at, synced_at, cites_doi)
		VALUES (?, ?, ?, ?, 'published', ?, ?, ?, ?)
		ON CONFLICT(source, external_id) DO UPDATE SET
			title = excluded.title, first_message = excluded.first_message, synced_at = excluded.synced_at,
			cites_doi = COALESCE(papers.cites_doi, excluded.cites_doi)`
	return each(tx, "papers", q, papers, func(p Paper) ([]any, error) {
		if p.Source == "" || p.ExternalID == "" {
			return nil, invalid("papers", "paper %q/%q: source and external id are required", p.Source, p.ExternalID)
		}
		return []any{field(p.Source), field(p.ExternalID), field(p.Title), nullable(capText(p.Abstract, CapAbstract)),
			field(p.URL), nullable(field(p.CreatedAt)), tx.now, nullable(field(p.CitesDOI))}, nil
	})
}

// ReplaceCitationCounts replaces doi's per-year counts of citing papers with perYear
// (citation_counts is replaced wholesale per DOI, §2.3). doi is the primary DOI as
// configured.
func (tx *Tx) ReplaceCitationCounts(doi string, perYear map[int]int) error {
	if doi == "" {
		return invalid("citation_counts", "empty DOI")
	}
	if _, err := tx.tx.ExecContext(tx.ctx, `DELETE FROM citation_counts WHERE doi = ?`, doi); err != nil {
		return fmt.Errorf("knowledge store: citation_counts: %w", err)
	}
	tx.changed = true
	years := make([]int, 0, len(perYear))
	for y := range perYear {
		years = append(years, y)
	}
	sort.Ints(years)
	_, err := each(tx, "citation_counts", `INSERT INTO citation_counts (doi, year, count, synced_at) VALUES (?, ?, ?, ?)`, years,
		func(y int) ([]any, error) { return []any{doi, y, perYear[y], tx.now}, nil })
	return err
}

// UpsertDocstrings stores symbols: a new (repo, file_path, symbol_name) is inserted; a stored
// one gets docstring (capped at 10,000), symbol_type, line_number, branch and synced_at
// updated. An empty branch is "main"; line 0 is stored as unknown. It returns the rows
// written.
func (tx *Tx) UpsertDocstrings(ds []Docstring) (int, error) {
	const q = `INSERT INTO docstrings (repo, file_path, language, symbol_name, symbol_type, docstring, line_number, branch, synced_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(repo, file_path, symbol_name) DO UPDATE SET
			docstring = excluded.docstring, symbol_type = excluded.symbol_type, line_number = excluded.line_number,
			branch = excluded.branch, synced_at = excluded.synced_at`
	return each(tx, "docstrings", q, ds, func(d Docstring) ([]any, error) {
		if d.Repo == "" || d.FilePath == "" || d.Symbol == "" {
			return nil, invalid("docstrings", "symbol %q in %s/%s: repo, file and symbol are required", d.Symbol, d.Repo, d.FilePath)
		}
		branch := d.Branch
		if branch == "" {
			branch = "main"
		}
		return []any{field(d.Repo), field(d.FilePath), field(d.Language), field(d.Symbol), field(d.SymbolType),
			capText(d.Docstring, CapDocstring), nullInt(d.Line), field(branch), tx.now}, nil
	})
}

// DeleteDocstringsExcept deletes repo's symbols whose file is not in files: files lists every
// file of the repo to keep (all its synced languages, including files that failed to download
// or parse this run). A tree listing that was truncated is not complete: do not call it then.
// It returns the rows deleted.
func (tx *Tx) DeleteDocstringsExcept(repo string, files []string) (int, error) {
	ids, err := keysExcept(tx, `SELECT id, file_path FROM docstrings WHERE repo = ?`, []any{repo}, scanIDString, setOf(files))
	if err != nil {
		return 0, fmt.Errorf("knowledge store: docstrings: %w", err)
	}
	return tx.deleteIDs("docstrings", ids)
}

// DeleteDocstringSymbolsExcept deletes the symbols of one file of repo that symbols does not
// hold: those that no longer parse out of the file (§6.7). It returns the rows deleted.
func (tx *Tx) DeleteDocstringSymbolsExcept(repo, file string, symbols []string) (int, error) {
	ids, err := keysExcept(tx, `SELECT id, symbol_name FROM docstrings WHERE repo = ? AND file_path = ?`, []any{repo, file}, scanIDString, setOf(symbols))
	if err != nil {
		return 0, fmt.Errorf("knowledge store: docstrings: %w", err)
	}
	return tx.deleteIDs("docstrings", ids)
}

// DeleteDocstringReposExcept deletes the symbols of every repository not in repos. It returns
// the rows deleted.
func (tx *Tx) DeleteDocstringReposExcept(repos []string) (int, error) {
	ids, err := keysExcept(tx, `SELECT id, repo FROM docstrings`, nil, scanIDString, setOf(repos))
	if err != nil {
		return 0, fmt.Errorf("knowledge store: docstrings: %w", err)
	}
	return tx.deleteIDs("docstrings", ids)
}

// UpsertTopics stores Discourse topics: a new (forum_url, topic_id) is inserted; a stored one
// gets everything but its key, url and created_at updated. Title, first post and accepted
// answer are capped at 5,000 each; tags are stored as a JSON array. It returns the rows
// written.
func (tx *Tx) UpsertTopics(ts []Topic) (int, error) {
	const q = `INSERT INTO discourse_topics (forum_url, topic_id, title, first_post, accepted_answer, category_name, tags,
			reply_count, like_count, views, url, created_at, last_posted_at, synced_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(forum_url, topic_id) DO UPDATE SET
			title = excluded.title, first_post = excluded.first_post, accepted_answer = excluded.accepted_answer,
			category_name = excluded.category_name, tags = excluded.tags, reply_count = excluded.reply_count,
			like_count = excluded.like_count, views = excluded.views, last_posted_at = excluded.last_posted_at,
			synced_at = excluded.synced_at`
	return each(tx, "discourse_topics", q, ts, func(t Topic) ([]any, error) {
		if t.ForumURL == "" || t.TopicID <= 0 {
			return nil, invalid("discourse_topics", "topic %q #%d: forum and a positive id are required", t.ForumURL, t.TopicID)
		}
		tags := make([]string, len(t.Tags))
		for i, tag := range t.Tags {
			tags[i] = field(tag)
		}
		return []any{field(t.ForumURL), t.TopicID, capText(t.Title, CapTopicText), nullable(capText(t.FirstPost, CapTopicText)),
			nullable(capText(t.AcceptedAnswer, CapTopicText)), nullable(field(t.Category)), tagsJSON(tags),
			t.Replies, t.Likes, t.Views, field(t.URL), field(t.CreatedAt), nullable(field(t.LastPostedAt)), tx.now}, nil
	})
}

// DeleteTopicsExcept deletes forum's topics whose id is not in ids (a full run's complete
// listing, §6.8). It returns the rows deleted.
func (tx *Tx) DeleteTopicsExcept(forum string, ids []int) (int, error) {
	del, err := keysExcept(tx, `SELECT id, topic_id FROM discourse_topics WHERE forum_url = ?`, []any{forum}, scanIDInt, setOf(ids))
	if err != nil {
		return 0, fmt.Errorf("knowledge store: discourse_topics: %w", err)
	}
	return tx.deleteIDs("discourse_topics", del)
}

// UpsertMessages stores mailing-list messages: a new (list_name, message_id) is inserted; a
// stored one gets everything but its key, url and year updated. The body is capped at
// 10,000. It returns the rows written.
func (tx *Tx) UpsertMessages(ms []Message) (int, error) {
	const q = `INSERT INTO mailing_list_messages (list_name, message_id, thread_id, subject, author, author_email, date, body,
			in_reply_to, url, year, synced_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(list_name, message_id) DO UPDATE SET
			thread_id = excluded.thread_id, subject = excluded.subject, author = excluded.author,
			author_email = excluded.author_email, date = excluded.date, body = excluded.body,
			in_reply_to = excluded.in_reply_to, synced_at = excluded.synced_at`
	return each(tx, "mailing_list_messages", q, ms, func(m Message) ([]any, error) {
		if m.List == "" || m.MessageID == "" {
			return nil, invalid("mailing_list_messages", "message %q/%q: list and message id are required", m.List, m.MessageID)
		}
		return []any{field(m.List), field(m.MessageID), nullable(field(m.ThreadID)), field(m.Subject), nullable(field(m.Author)),
			nullable(field(m.AuthorEmail)), field(m.Date), nullable(capText(m.Body, CapMessageBody)), nullable(field(m.InReplyTo)),
			field(m.URL), m.Year, tx.now}, nil
	})
}

// Thread is one mailing-list thread: its messages in archive order (by message number, which
// is the order they were posted; §6.10).
type Thread struct {
	List, ThreadID string
	Messages       []Message
}

// ThreadSize is a mailing-list thread's size, for choosing the threads FAQ generation takes
// up without reading their messages.
type ThreadSize struct {
	ThreadID string
	// Messages counts its messages; Participants its distinct authors (at least one).
	Messages, Participants int
	// FirstDate is its first message's date, as written.
	FirstDate string
}

// ThreadCandidates returns list's threads that FAQ generation has neither summarized nor
// skipped, with at least minMessages messages and minParticipants distinct authors, the most
// messages first and then in the order of their first messages, at most limit (0: no limit).
// It is one GROUP BY over the list's messages, reading no body. Authors are told apart by
// name, trimmed of spaces and with ASCII letters lower-cased, else by address.
func (tx *Tx) ThreadCandidates(list string, minMessages, minParticipants, limit int) ([]ThreadSize, error) {
	if limit <= 0 {
		limit = -1
	}
	// printf('%30s') right-aligns a message id, so the smallest is the first message by
	// number (pipermail's ids are numbers, of any length up to 30); the bare date is that
	// row's, as SQLite gives a bare column beside a lone min().
	rows, err := tx.tx.QueryContext(tx.ctx, `SELECT thread, n, max(people, 1), first_date FROM (
			SELECT COALESCE(NULLIF(thread_id, ''), message_id) AS thread, count(*) AS n,
				count(DISTINCT NULLIF(lower(COALESCE(NULLIF(trim(author), ''), trim(author_email), '')), '')) AS people,
				min(printf('%30s', message_id)) AS first, date AS first_date
			FROM mailing_list_messages WHERE list_name = ?1 GROUP BY thread)
		WHERE n >= ?2 AND max(people, 1) >= ?3 AND NOT EXISTS (SELECT 1 FROM summarization_status s
			WHERE s.list_name = ?1 AND s.thread_id = thread AND s.status IN ('summarized', 'skipped'))
		ORDER BY n DESC, first LIMIT ?4`, list, minMessages, minParticipants, limit)
	if err != nil {
		return nil, fmt.Errorf("knowledge store: mailing_list_messages: %w", err)
	}
	defer rows.Close()
	var out []ThreadSize
	for rows.Next() {
		var t ThreadSize
		if err := rows.Scan(&t.ThreadID, &t.Messages, &t.Participants, &t.FirstDate); err != nil {
			return nil, fmt.Errorf("knowledge store: mailing_list_messages: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge store: mailing_list_messages: %w", err)
	}
	return out, nil
}

// ThreadMessages returns one thread of list, its messages in archive order, as Threads
// groups them (a message without a thread id is the thread of its own id).
func (tx *Tx) ThreadMessages(list, threadID string) ([]Message, error) {
	rows, err := tx.tx.QueryContext(tx.ctx, threadMessagesSQL, list, threadID)
	if err != nil {
		return nil, fmt.Errorf("knowledge store: mailing_list_messages: %w", err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m := Message{List: list}
		if err := rows.Scan(&m.MessageID, &m.ThreadID, &m.Subject, &m.Author, &m.AuthorEmail, &m.Date, &m.Body, &m.InReplyTo, &m.URL, &m.Year); err != nil {
			return nil, fmt.Errorf("knowledge store: mailing_list_messages: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge store: mailing_list_messages: %w", err)
	}
	return out, nil
}

// threadMessagesSQL is ThreadMessages' query: the thread's replies by the thread_id index and
// its root by the (list_name, message_id) key. One WHERE with an OR of the two cannot use
// either index, and scanned the whole list for every thread (82 ms a thread at 100,000
// messages, with the writer lock held).
const threadMessagesSQL = `SELECT * FROM (
		SELECT message_id, COALESCE(thread_id, ''), subject, COALESCE(author, ''),
			COALESCE(author_email, ''), date, COALESCE(body, ''), COALESCE(in_reply_to, ''), url, year
		FROM mailing_list_messages WHERE thread_id = ?2 AND list_name = ?1
		UNION ALL
		SELECT message_id, COALESCE(thread_id, ''), subject, COALESCE(author, ''),
			COALESCE(author_email, ''), date, COALESCE(body, ''), COALESCE(in_reply_to, ''), url, year
		FROM mailing_list_messages WHERE list_name = ?1 AND message_id = ?2 AND COALESCE(thread_id, '') = '')
	ORDER BY length(message_id), message_id`

// UpsertFAQ stores FAQ entries: a new (list_name, thread_id) is inserted; a stored one gets
// everything but its key, thread_url and first_message_date updated. The answer is capped at
// 5,000; tags are stored as a JSON array; a zero SummarizedAt is the transaction's time. It
// returns the rows written.
func (tx *Tx) UpsertFAQ(es []FAQEntry) (int, error) {
	const q = `INSERT INTO faq_entries (list_name, thread_id, thread_url, question, answer, tags, category, message_count,
			participant_count, first_message_date, quality_score, summarized_at, summary_model)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(list_name, thread_id) DO UPDATE SET
			question = excluded.question, answer = excluded.answer, tags = excluded.tags, category = excluded.category,
			message_count = excluded.message_count, participant_count = excluded.participant_count,
			quality_score = excluded.quality_score, summarized_at = excluded.summarized_at,
			summary_model = excluded.summary_model`
	return each(tx, "faq_entries", q, es, func(e FAQEntry) ([]any, error) {
		if e.List == "" || e.ThreadID == "" {
			return nil, invalid("faq_entries", "entry %q/%q: list and thread id are required", e.List, e.ThreadID)
		}
		at := tx.now
		if !e.SummarizedAt.IsZero() {
			at = timestamp(e.SummarizedAt)
		}
		tags := make([]string, len(e.Tags))
		for i, t := range e.Tags {
			tags[i] = field(t)
		}
		return []any{field(e.List), field(e.ThreadID), field(e.ThreadURL), field(e.Question), capText(e.Answer, CapFAQAnswer),
			tagsJSON(tags), nullable(field(e.Category)), e.MessageCount, e.ParticipantCount, nullable(field(e.FirstMessageDate)),
			e.Quality, at, nullable(field(e.Model))}, nil
	})
}

// SummaryStatuses returns the FAQ generation state of list's threads, by thread id.
func (tx *Tx) SummaryStatuses(list string) (map[string]SummaryStatus, error) {
	rows, err := tx.tx.QueryContext(tx.ctx, `SELECT thread_id, status, COALESCE(failure_reason, ''), COALESCE(token_count, 0),
			COALESCE(cost_estimate, 0), COALESCE(attempted_at, '')
		FROM summarization_status WHERE list_name = ?`, list)
	if err != nil {
		return nil, fmt.Errorf("knowledge store: summarization_status: %w", err)
	}
	defer rows.Close()
	out := map[string]SummaryStatus{}
	for rows.Next() {
		s := SummaryStatus{List: list}
		var at string
		if err := rows.Scan(&s.ThreadID, &s.Status, &s.FailureReason, &s.Tokens, &s.Cost, &at); err != nil {
			return nil, fmt.Errorf("knowledge store: summarization_status: %w", err)
		}
		s.AttemptedAt, _ = ParseTime(at) // unknown stays zero
		out[s.ThreadID] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge store: summarization_status: %w", err)
	}
	return out, nil
}

// SetSummaryStatus stores each thread's FAQ generation state (an upsert on list and thread;
// every other column is replaced). Status must be pending, summarized, failed or skipped; a
// zero AttemptedAt is the transaction's time.
func (tx *Tx) SetSummaryStatus(ss []SummaryStatus) error {
	const q = `INSERT INTO summarization_status (list_name, thread_id, status, failure_reason, token_count, cost_estimate, attempted_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(list_name, thread_id) DO UPDATE SET
			status = excluded.status, failure_reason = excluded.failure_reason, token_count = excluded.token_count,
			cost_estimate = excluded.cost_estimate, attempted_at = excluded.attempted_at`
	_, err := each(tx, "summarization_status", q, ss, func(s SummaryStatus) ([]any, error) {
		if s.List == "" || s.ThreadID == "" {
			return nil, invalid("summarization_status", "status %q/%q: list and thread id are required", s.List, s.ThreadID)
		}
		switch s.Status {
		case "pending", "summarized", "failed", "skipped":
		default:
			return nil, invalid("summarization_status", "%s/%s: status %q", s.List, s.ThreadID, s.Status)
		}
		at := tx.now
		if !s.AttemptedAt.IsZero() {
			at = timestamp(s.AttemptedAt)
		}
		return []any{field(s.List), field(s.ThreadID), s.Status, nullable(field(s.FailureReason)), s.Tokens, s.Cost, at}, nil
	})
	return err
}

// SetSyncMeta records that a source synced cleanly (an upsert on type and name of
// last_sync_at and items_synced; §2.2 names the sources).
func (tx *Tx) SetSyncMeta(m SyncMeta) error {
	if m.SourceType == "" || m.SourceName == "" {
		return invalid("sync_metadata", "%q/%q: type and name are required", m.SourceType, m.SourceName)
	}
	at := m.LastSyncAt
	if at.IsZero() {
		return invalid("sync_metadata", "%s/%s: no sync time", m.SourceType, m.SourceName)
	}
	_, err := each(tx, "sync_metadata", `INSERT INTO sync_metadata (source_type, source_name, last_sync_at, items_synced)
		VALUES (?, ?, ?, ?)
		ON CONFLICT(source_type, source_name) DO UPDATE SET
			last_sync_at = excluded.last_sync_at, items_synced = excluded.items_synced`, []SyncMeta{m},
		func(m SyncMeta) ([]any, error) {
			return []any{field(m.SourceType), field(m.SourceName), timestamp(at), m.Items}, nil
		})
	return err
}

// SyncMeta returns a source's sync_metadata row; ok is false when it has none. A stored time
// that does not parse is zero.
func (tx *Tx) SyncMeta(sourceType, sourceName string) (SyncMeta, bool, error) {
	var at string
	m := SyncMeta{SourceType: sourceType, SourceName: sourceName}
	err := tx.tx.QueryRowContext(tx.ctx, `SELECT last_sync_at, COALESCE(items_synced, 0) FROM sync_metadata
		WHERE source_type = ? AND source_name = ?`, sourceType, sourceName).Scan(&at, &m.Items)
	if errors.Is(err, sql.ErrNoRows) {
		return SyncMeta{}, false, nil
	}
	if err != nil {
		return SyncMeta{}, false, fmt.Errorf("knowledge store: sync_metadata: %w", err)
	}
	m.LastSyncAt, _ = ParseTime(at)
	return m, true, nil
}

// populatedTables is the table whose rows make a sync type populated (§2.2 "Populated").
var populatedTables = map[string]string{
	"github":     "github_items",
	"papers":     "papers",
	"docstrings": "docstrings",
	"mailman":    "mailing_list_messages",
	"faq":        "faq_entries",
	"discourse":  "discourse_topics",
}

// Populated reports whether the sync type's table has a row (startup seeding runs the types
// that are not). syncType is github, papers, docstrings, mailman, faq or discourse.
func (tx *Tx) Populated(syncType string) (bool, error) {
	table, ok := populatedTables[syncType]
	if !ok {
		return false, fmt.Errorf("knowledge store: unknown sync type %q", syncType)
	}
	var n int
	if err := tx.tx.QueryRowContext(tx.ctx, `SELECT EXISTS (SELECT 1 FROM `+table+`)`).Scan(&n); err != nil {
		return false, fmt.Errorf("knowledge store: %s: %w", table, err)
	}
	return n == 1, nil
}

// ParseTime reads a stored timestamp: ours and the reference's ISO 8601 with an offset, with
// Z, or without a zone (taken as UTC), with or without fractional seconds, or a bare date.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("knowledge store: unreadable time %q", s)
}

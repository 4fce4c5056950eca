package knowledge

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ftsTable is one external-content FTS5 table and the base table it indexes.
type ftsTable struct {
	base, columns, tokenize string
}

// referenceTables is the reference's schema (spec §2.2), column for column, so a database the
// reference wrote opens and searches unchanged, plus ours (§2.3). Only the working copy is ever
// given it; readers never require any of it.
var referenceTables = []string{
	`CREATE TABLE IF NOT EXISTS github_items (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		repo TEXT NOT NULL, item_type TEXT NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,
		first_message TEXT, status TEXT NOT NULL, url TEXT NOT NULL, created_at TEXT NOT NULL,
		synced_at TEXT NOT NULL,
		UNIQUE(repo, item_type, number))`,
	`CREATE INDEX IF NOT EXISTS idx_github_items_number ON github_items(number)`,
	`CREATE INDEX IF NOT EXISTS idx_github_items_repo ON github_items(repo)`,
	`CREATE INDEX IF NOT EXISTS idx_github_items_status ON github_items(status)`,
	`CREATE INDEX IF NOT EXISTS idx_github_items_type ON github_items(item_type)`,

	`CREATE TABLE IF NOT EXISTS papers (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		source TEXT NOT NULL, external_id TEXT NOT NULL, title TEXT NOT NULL, first_message TEXT,
		status TEXT NOT NULL DEFAULT 'published', url TEXT NOT NULL, created_at TEXT,
		synced_at TEXT NOT NULL, cites_doi TEXT,
		UNIQUE(source, external_id))`,
	`CREATE INDEX IF NOT EXISTS idx_papers_source ON papers(source)`,

	`CREATE TABLE IF NOT EXISTS docstrings (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		repo TEXT NOT NULL, file_path TEXT NOT NULL, language TEXT NOT NULL, symbol_name TEXT NOT NULL,
		symbol_type TEXT NOT NULL, docstring TEXT NOT NULL, line_number INTEGER,
		branch TEXT NOT NULL DEFAULT 'main', synced_at TEXT NOT NULL,
		UNIQUE(repo, file_path, symbol_name))`,
	`CREATE INDEX IF NOT EXISTS idx_docstrings_repo ON docstrings(repo)`,
	`CREATE INDEX IF NOT EXISTS idx_docstrings_language ON docstrings(language)`,

	`CREATE TABLE IF NOT EXISTS mailing_list_messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		list_name TEXT NOT NULL, message_id TEXT NOT NULL, thread_id TEXT, subject TEXT NOT NULL,
		author TEXT, author_email TEXT, date TEXT NOT NULL, body TEXT, in_reply_to TEXT,
		url TEXT NOT NULL, year INTEGER NOT NULL, synced_at TEXT NOT NULL,
		UNIQUE(list_name, message_id))`,
	`CREATE INDEX IF NOT EXISTS idx_messages_list ON mailing_list_messages(list_name)`,
	`CREATE INDEX IF NOT EXISTS idx_messages_thread ON mailing_list_messages(thread_id)`,
	`CREATE INDEX IF NOT EXISTS idx_messages_year ON mailing_list_messages(year)`,
	`CREATE INDEX IF NOT EXISTS idx_messages_date ON mailing_list_messages(date)`,

	`CREATE TABLE IF NOT EXISTS faq_entries (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		list_name TEXT NOT NULL, thread_id TEXT NOT NULL, thread_url TEXT NOT NULL,
		question TEXT NOT NULL, answer TEXT NOT NULL, tags TEXT, category TEXT,
		message_count INTEGER DEFAULT 1, participant_count INTEGER DEFAULT 1,
		first_message_date TEXT, quality_score REAL, summarized_at TEXT NOT NULL, summary_model TEXT,
		UNIQUE(list_name, thread_id))`,
	`CREATE INDEX IF NOT EXISTS idx_faq_list ON faq_entries(list_name)`,
	`CREATE INDEX IF NOT EXISTS idx_faq_category ON faq_entries(category)`,
	`CREATE INDEX IF NOT EXISTS idx_faq_quality ON faq_entries(quality_score)`,

	`CREATE TABLE IF NOT EXISTS summarization_status (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		list_name TEXT NOT NULL, thread_id TEXT NOT NULL, status TEXT NOT NULL, failure_reason TEXT,
		token_count INTEGER, cost_estimate REAL, attempted_at TEXT,
		UNIQUE(list_name, thread_id))`,

	`CREATE TABLE IF NOT EXISTS bep_items (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		bep_number TEXT NOT NULL, title TEXT NOT NULL, status TEXT NOT NULL, pull_request_url TEXT,
		pull_request_number INTEGER, html_preview_url TEXT, google_doc_url TEXT, leads TEXT,
		content TEXT, synced_at TEXT NOT NULL,
		UNIQUE(bep_number))`,

	`CREATE TABLE IF NOT EXISTS discourse_topics (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		forum_url TEXT NOT NULL, topic_id INTEGER NOT NULL, title TEXT NOT NULL, first_post TEXT,
		accepted_answer TEXT, category_name TEXT, tags TEXT, reply_count INTEGER DEFAULT 0,
		like_count INTEGER DEFAULT 0, views INTEGER DEFAULT 0, url TEXT NOT NULL,
		created_at TEXT NOT NULL, last_posted_at TEXT, synced_at TEXT NOT NULL,
		UNIQUE(forum_url, topic_id))`,

	`CREATE TABLE IF NOT EXISTS sync_metadata (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		source_type TEXT NOT NULL, source_name TEXT NOT NULL, last_sync_at TEXT NOT NULL,
		items_synced INTEGER DEFAULT 0,
		UNIQUE(source_type, source_name))`,

	// Ours (§2.3).
	`CREATE TABLE IF NOT EXISTS doc_sections (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		doc_url TEXT NOT NULL, doc_title TEXT NOT NULL, anchor TEXT NOT NULL, heading_path TEXT NOT NULL,
		title TEXT NOT NULL, text TEXT NOT NULL, position INTEGER NOT NULL,
		content_sha256 TEXT NOT NULL, synced_at TEXT NOT NULL,
		UNIQUE(doc_url, position))`,
}

// citationCounts is our citation_counts (§2.3); a reference table of that name with other
// columns is renamed out of the way first.
const citationCounts = `CREATE TABLE IF NOT EXISTS citation_counts (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		doi TEXT NOT NULL, year INTEGER NOT NULL, count INTEGER NOT NULL, synced_at TEXT NOT NULL,
		UNIQUE(doi, year))`

var ftsTables = []ftsTable{
	{"github_items", "title, first_message", ""},
	{"papers", "title, first_message", ""},
	{"docstrings", "symbol_name, docstring", ""},
	{"mailing_list_messages", "subject, body, author", ""},
	{"faq_entries", "question, answer, tags", ""},
	{"bep_items", "title, content", ""},
	{"discourse_topics", "title, first_post, accepted_answer", ""},
	{"doc_sections", "heading_path, text", "porter unicode61"},
}

// statements returns the FTS table and its three triggers (spec §2.2 "FTS").
func (f ftsTable) statements() []string {
	cols := strings.Split(f.columns, ", ")
	newVals := "new." + strings.Join(cols, ", new.")
	oldVals := "old." + strings.Join(cols, ", old.")
	tok := ""
	if f.tokenize != "" {
		tok = fmt.Sprintf(", tokenize='%s'", f.tokenize)
	}
	fts := f.base + "_fts"
	return []string{
		fmt.Sprintf(`CREATE VIRTUAL TABLE IF NOT EXISTS %s USING fts5(%s, content='%s', content_rowid='id'%s)`, fts, f.columns, f.base, tok),
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %s_ai AFTER INSERT ON %s BEGIN
			INSERT INTO %s(rowid, %s) VALUES (new.id, %s); END`, f.base, f.base, fts, f.columns, newVals),
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %s_ad AFTER DELETE ON %s BEGIN
			INSERT INTO %s(%s, rowid, %s) VALUES ('delete', old.id, %s); END`, f.base, f.base, fts, fts, f.columns, oldVals),
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %s_au AFTER UPDATE ON %s BEGIN
			INSERT INTO %s(%s, rowid, %s) VALUES ('delete', old.id, %s);
			INSERT INTO %s(rowid, %s) VALUES (new.id, %s); END`, f.base, f.base, fts, fts, f.columns, oldVals, fts, f.columns, newVals),
	}
}

// ensureSchema creates what is missing on a working copy (spec §2.1 "Schema ensure"): tables,
// FTS tables, triggers and indexes, and the columns newer than some reference files. It never
// drops or alters a reference table, except that a citation_counts of another shape is renamed
// citation_counts_reference.
func ensureSchema(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range referenceTables {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	for _, add := range []struct{ table, column, def string }{
		{"docstrings", "branch", "TEXT NOT NULL DEFAULT 'main'"},
		{"papers", "cites_doi", "TEXT"},
	} {
		cols, err := columns(ctx, tx, add.table)
		if err != nil {
			return err
		}
		if !cols[add.column] {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, add.table, add.column, add.def)); err != nil {
				return fmt.Errorf("schema: adding %s.%s: %w", add.table, add.column, err)
			}
		}
	}
	// idx_papers_cites_doi (§2.1), and ours: search_{id}_code_docs and
	// get_{id}_full_docstring look a symbol up by name, ignoring case; list_{id}_recent reads
	// the newest items, of a repo or of all (without them it sorted every row: 0.2 s at
	// 100,000 items against 1 ms).
	for _, s := range []string{
		`CREATE INDEX IF NOT EXISTS idx_papers_cites_doi ON papers(cites_doi)`,
		`CREATE INDEX IF NOT EXISTS idx_docstrings_symbol_nocase ON docstrings(symbol_name COLLATE NOCASE)`,
		`CREATE INDEX IF NOT EXISTS idx_github_items_created ON github_items(created_at)`,
		`CREATE INDEX IF NOT EXISTS idx_github_items_repo_created ON github_items(repo, created_at)`,
	} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	cols, err := columns(ctx, tx, "citation_counts")
	if err != nil {
		return err
	}
	if len(cols) > 0 && !sameSet(cols, "id", "doi", "year", "count", "synced_at") {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE citation_counts RENAME TO citation_counts_reference`); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, citationCounts); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	for _, f := range ftsTables {
		for _, s := range f.statements() {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("schema: %w", err)
			}
		}
	}
	return tx.Commit()
}

// columns returns the column names of table (none when it does not exist).
func columns(ctx context.Context, tx *sql.Tx, table string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		cols[n] = true
	}
	return cols, rows.Err()
}

func sameSet(m map[string]bool, names ...string) bool {
	if len(m) != len(names) {
		return false
	}
	for _, n := range names {
		if !m[n] {
			return false
		}
	}
	return true
}

package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

func testStore(t testing.TB) *Store {
	t.Helper()
	st, err := OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// update runs fn in an Update and fails the test on its error.
func update(t testing.TB, st *Store, id string, fn func(tx *Tx) error) {
	t.Helper()
	if err := st.Update(context.Background(), id, func(_ context.Context, tx *Tx) error { return fn(tx) }); err != nil {
		t.Fatal(err)
	}
}

// workQuery runs a query on the working copy (what Update wrote, published or not).
func workQuery(t testing.TB, st *Store, id, q string, args ...any) [][]any {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(st.workPath(id), "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func one(t testing.TB, st *Store, id, q string, args ...any) []any {
	t.Helper()
	rows := workQuery(t, st, id, q, args...)
	if len(rows) != 1 {
		t.Fatalf("%s: %d rows, want 1", q, len(rows))
	}
	return rows[0]
}

func TestUpsertGitHubItems(t *testing.T) {
	st := testStore(t)
	long := strings.Repeat("é", CapGitHubBody+10) // two bytes each: the cap counts characters
	first := GitHubItem{Repo: "o/r", Type: "issue", Number: 7, Title: "Sidecar crash", Body: long, Status: "open",
		URL: "https://github.com/o/r/issues/7", CreatedAt: "2024-05-01T12:00:00Z"}
	update(t, st, "c", func(tx *Tx) error {
		n, err := tx.UpsertGitHubItems([]GitHubItem{first, {Repo: "o/r", Type: "pr", Number: 7, Title: "Fix", Status: "closed", URL: "u", CreatedAt: "c"}})
		if n != 2 {
			t.Errorf("inserted %d rows, want 2", n)
		}
		return err
	})
	body := one(t, st, "c", `SELECT first_message FROM github_items WHERE item_type = 'issue'`)[0].(string)
	if got := utf8.RuneCountInString(body); got != CapGitHubBody || !utf8.ValidString(body) {
		t.Errorf("body of %d characters (valid %v), want the cap %d", got, utf8.ValidString(body), CapGitHubBody)
	}
	changed := first
	changed.Title, changed.Body, changed.Status = "Validator hangs", "", "closed"
	changed.URL, changed.CreatedAt = "https://elsewhere", "2030-01-01T00:00:00Z"
	update(t, st, "c", func(tx *Tx) error { _, err := tx.UpsertGitHubItems([]GitHubItem{changed}); return err })
	got := one(t, st, "c", `SELECT title, first_message, status, url, created_at FROM github_items WHERE item_type = 'issue'`)
	want := []any{"Validator hangs", nil, "closed", first.URL, first.CreatedAt}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after the upsert: %v, want %v (url and created_at kept)", got, want)
	}
	// The FTS table follows the base table through the triggers.
	if n := one(t, st, "c", `SELECT count(*) FROM github_items_fts WHERE github_items_fts MATCH 'sidecar'`)[0]; n != int64(0) {
		t.Errorf("the old title still matches (%v rows)", n)
	}
	if n := one(t, st, "c", `SELECT count(*) FROM github_items_fts WHERE github_items_fts MATCH 'validator'`)[0]; n != int64(1) {
		t.Errorf("the new title matches %v rows, want 1", n)
	}
}

func TestInvalidRecordRollsBack(t *testing.T) {
	st := testStore(t)
	good := GitHubItem{Repo: "o/r", Type: "issue", Number: 1, Title: "t", Status: "open", URL: "u", CreatedAt: "c"}
	tests := []struct {
		name string
		fn   func(tx *Tx) error
	}{
		{"item type", func(tx *Tx) error {
			_, err := tx.UpsertGitHubItems([]GitHubItem{good, {Repo: "o/r", Type: "discussion", Number: 2, Title: "t", Status: "open", URL: "u", CreatedAt: "c"}})
			return err
		}},
		{"status", func(tx *Tx) error {
			_, err := tx.UpsertGitHubItems([]GitHubItem{good, {Repo: "o/r", Type: "pr", Number: 2, Title: "t", Status: "merged", URL: "u", CreatedAt: "c"}})
			return err
		}},
		{"paper key", func(tx *Tx) error {
			tx.UpsertGitHubItems([]GitHubItem{good})
			_, err := tx.UpsertPapers([]Paper{{Source: "openalex", Title: "no id"}})
			return err
		}},
		{"summary status", func(tx *Tx) error {
			tx.UpsertGitHubItems([]GitHubItem{good})
			return tx.SetSummaryStatus([]SummaryStatus{{List: "l", ThreadID: "1", Status: "done"}})
		}},
		{"sync time", func(tx *Tx) error {
			tx.UpsertGitHubItems([]GitHubItem{good})
			return tx.SetSyncMeta(SyncMeta{SourceType: "github", SourceName: "o/r"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := st.Update(t.Context(), "c", func(_ context.Context, tx *Tx) error { return tc.fn(tx) })
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("err = %v, want ErrInvalidRecord", err)
			}
			if n := one(t, st, "c", `SELECT count(*) FROM github_items`)[0]; n != int64(0) {
				t.Errorf("%v rows kept after the failed transaction", n)
			}
			if err := st.Publish(t.Context(), "c"); err != nil {
				t.Fatal(err)
			}
			if _, ok := st.Info("c"); ok {
				t.Error("a rolled-back Update was published")
			}
		})
	}
}

func TestDeleteExcept(t *testing.T) {
	st := testStore(t)
	item := func(repo, typ string, n int) GitHubItem {
		return GitHubItem{Repo: repo, Type: typ, Number: n, Title: "t", Status: "open", URL: "u", CreatedAt: "c"}
	}
	doc := func(repo, file, sym string) Docstring {
		return Docstring{Repo: repo, FilePath: file, Language: "python", Symbol: sym, SymbolType: "function", Docstring: "d"}
	}
	topic := func(forum string, id int) Topic {
		return Topic{ForumURL: forum, TopicID: id, Title: "t", URL: "u", CreatedAt: "c"}
	}
	update(t, st, "c", func(tx *Tx) error {
		tx.UpsertGitHubItems([]GitHubItem{item("o/a", "issue", 1), item("o/a", "pr", 1), item("o/a", "issue", 2), item("o/b", "issue", 1), item("o/gone", "pr", 9)})
		tx.UpsertDocstrings([]Docstring{doc("o/a", "x.py", "f"), doc("o/a", "x.py", "g"), doc("o/a", "y.py", "h"), doc("o/b", "x.py", "f"), doc("o/gone", "z.m", "z")})
		_, err := tx.UpsertTopics([]Topic{topic("https://f", 1), topic("https://f", 2), topic("https://other", 2)})
		return err
	})
	counts := map[string]int{}
	update(t, st, "c", func(tx *Tx) error {
		var err error
		steps := []struct {
			name string
			fn   func() (int, error)
		}{
			{"items", func() (int, error) { return tx.DeleteGitHubItemsExcept("o/a", []GitHubKey{{"issue", 1}, {"issue", 2}}) }},
			{"repos", func() (int, error) { return tx.DeleteGitHubReposExcept([]string{"o/a", "o/b"}) }},
			{"files", func() (int, error) { return tx.DeleteDocstringsExcept("o/a", []string{"x.py"}) }},
			{"symbols", func() (int, error) { return tx.DeleteDocstringSymbolsExcept("o/a", "x.py", []string{"g"}) }},
			{"docrepos", func() (int, error) { return tx.DeleteDocstringReposExcept([]string{"o/a", "o/b"}) }},
			{"topics", func() (int, error) { return tx.DeleteTopicsExcept("https://f", []int{2}) }},
		}
		for _, s := range steps {
			if counts[s.name], err = s.fn(); err != nil {
				return err
			}
		}
		return nil
	})
	wantCounts := map[string]int{"items": 1, "repos": 1, "files": 1, "symbols": 1, "docrepos": 1, "topics": 1}
	if !reflect.DeepEqual(counts, wantCounts) {
		t.Errorf("deleted %v, want %v", counts, wantCounts)
	}
	keys := func(q string) []string {
		var out []string
		for _, r := range workQuery(t, st, "c", q) {
			out = append(out, fmt.Sprint(r...))
		}
		return out
	}
	if got, want := keys(`SELECT repo, item_type, number FROM github_items ORDER BY repo, item_type, number`), []string{"o/aissue1", "o/aissue2", "o/bissue1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("items %v, want %v", got, want)
	}
	if got, want := keys(`SELECT repo, file_path, symbol_name FROM docstrings ORDER BY repo, file_path, symbol_name`), []string{"o/ax.pyg", "o/bx.pyf"}; !reflect.DeepEqual(got, want) {
		t.Errorf("docstrings %v, want %v", got, want)
	}
	if got, want := keys(`SELECT forum_url, topic_id FROM discourse_topics ORDER BY forum_url, topic_id`), []string{"https://f2", "https://other2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("topics %v, want %v", got, want)
	}
	// The deleted rows left the FTS tables too.
	if n := one(t, st, "c", `SELECT count(*) FROM docstrings_fts WHERE docstrings_fts MATCH 'h OR z'`)[0]; n != int64(0) {
		t.Errorf("deleted symbols still match (%v)", n)
	}
}

func TestUpsertPapersCitesDOI(t *testing.T) {
	st := testStore(t)
	p := Paper{Source: "openalex", ExternalID: "W1", Title: "Old", Abstract: strings.Repeat("a", CapAbstract+1), URL: "https://doi.org/10.1/x", CreatedAt: "2021-03-04", CitesDOI: "10.1/primary"}
	update(t, st, "c", func(tx *Tx) error {
		_, err := tx.UpsertPapers([]Paper{p, {Source: "openalex", ExternalID: "W2", Title: "Keyword hit", URL: "u"}})
		return err
	})
	// A keyword hit of W1 (no cites_doi) and a later link to another DOI keep the first link;
	// W2, a keyword hit first, takes the link it gets later.
	update(t, st, "c", func(tx *Tx) error {
		_, err := tx.UpsertPapers([]Paper{
			{Source: "openalex", ExternalID: "W1", Title: "New", URL: "other", CreatedAt: "1999"},
			{Source: "openalex", ExternalID: "W1", Title: "New", URL: "other", CitesDOI: "10.1/second"},
			{Source: "openalex", ExternalID: "W2", Title: "Keyword hit", URL: "u", CitesDOI: "10.1/second"},
		})
		return err
	})
	rows := workQuery(t, st, "c", `SELECT external_id, title, first_message, url, created_at, status, cites_doi FROM papers ORDER BY external_id`)
	want := [][]any{
		{"W1", "New", nil, "https://doi.org/10.1/x", "2021-03-04", "published", "10.1/primary"},
		{"W2", "Keyword hit", nil, "u", nil, "published", "10.1/second"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("papers\n%v, want\n%v", rows, want)
	}
	update(t, st, "c", func(tx *Tx) error { _, err := tx.UpsertPapers([]Paper{p}); return err })
	if a := one(t, st, "c", `SELECT first_message FROM papers WHERE external_id = 'W1'`)[0].(string); len(a) != CapAbstract {
		t.Errorf("abstract of %d, want the cap %d", len(a), CapAbstract)
	}
}

func TestReplaceCitationCounts(t *testing.T) {
	st := testStore(t)
	update(t, st, "c", func(tx *Tx) error {
		if err := tx.ReplaceCitationCounts("10.1/a", map[int]int{2020: 1, 2021: 2, 2022: 3}); err != nil {
			return err
		}
		return tx.ReplaceCitationCounts("10.1/b", map[int]int{2019: 4})
	})
	update(t, st, "c", func(tx *Tx) error { return tx.ReplaceCitationCounts("10.1/a", map[int]int{2021: 5}) })
	rows := workQuery(t, st, "c", `SELECT doi, year, count FROM citation_counts ORDER BY doi, year`)
	want := [][]any{{"10.1/a", int64(2021), int64(5)}, {"10.1/b", int64(2019), int64(4)}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("citation_counts %v, want %v (a DOI's rows replaced wholesale, the other's kept)", rows, want)
	}
}

func TestUpsertDocstrings(t *testing.T) {
	st := testStore(t)
	d := Docstring{Repo: "o/r", FilePath: "pkg/m.py", Language: "python", Symbol: "load", SymbolType: "function", Docstring: "Load a file.", Line: 12}
	update(t, st, "c", func(tx *Tx) error { _, err := tx.UpsertDocstrings([]Docstring{d}); return err })
	if got := one(t, st, "c", `SELECT branch, line_number FROM docstrings`); !reflect.DeepEqual(got, []any{"main", int64(12)}) {
		t.Errorf("branch, line = %v, want main, 12", got)
	}
	d.Docstring, d.SymbolType, d.Line, d.Branch, d.Language = strings.Repeat("x", CapDocstring+5), "method", 0, "dev", "matlab"
	update(t, st, "c", func(tx *Tx) error { _, err := tx.UpsertDocstrings([]Docstring{d}); return err })
	got := one(t, st, "c", `SELECT length(docstring), symbol_type, line_number, branch, language FROM docstrings`)
	if want := []any{int64(CapDocstring), "method", nil, "dev", "python"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the upsert %v, want %v (language is part of the first insert only)", got, want)
	}
}

func TestUpsertTopicsMessagesFAQ(t *testing.T) {
	st := testStore(t)
	tp := Topic{ForumURL: "https://f", TopicID: 3, Title: "Q", FirstPost: strings.Repeat("p", CapTopicText+1), Category: "Help",
		Tags: []string{"a"}, Replies: 1, URL: "https://f/t/q/3", CreatedAt: "2024-01-01", LastPostedAt: "2024-01-02"}
	msg := Message{List: "l", MessageID: "000002", ThreadID: "000001", Subject: "Re: x", Author: "A", Date: "d", Body: "b", URL: "https://m/2.html", Year: 2024}
	faq := FAQEntry{List: "l", ThreadID: "000001", ThreadURL: "https://m/thread.html#000001", Question: "q?", Answer: strings.Repeat("w", CapFAQAnswer+1),
		Tags: nil, Category: "how-to", MessageCount: 2, ParticipantCount: 2, FirstMessageDate: "first", Quality: 0.8, Model: "m1"}
	update(t, st, "c", func(tx *Tx) error {
		tx.UpsertTopics([]Topic{tp})
		tx.UpsertMessages([]Message{msg})
		_, err := tx.UpsertFAQ([]FAQEntry{faq})
		return err
	})
	if got := one(t, st, "c", `SELECT length(first_post), tags, length(title) FROM discourse_topics`); !reflect.DeepEqual(got, []any{int64(CapTopicText), `["a"]`, int64(1)}) {
		t.Errorf("topic %v", got)
	}
	if got := one(t, st, "c", `SELECT length(answer), tags FROM faq_entries`); !reflect.DeepEqual(got, []any{int64(CapFAQAnswer), `[]`}) {
		t.Errorf("faq %v", got)
	}
	tp.Title, tp.URL, tp.CreatedAt, tp.Replies, tp.Tags = "Q2", "https://changed", "2030", 5, []string{"b", "c"}
	msg.Subject, msg.URL, msg.Year, msg.Body = "Re: y", "https://changed", 1999, ""
	faq.Question, faq.ThreadURL, faq.FirstMessageDate, faq.Quality, faq.Tags = "q2?", "https://changed", "changed", 0.9, []string{"t"}
	update(t, st, "c", func(tx *Tx) error {
		tx.UpsertTopics([]Topic{tp})
		tx.UpsertMessages([]Message{msg})
		_, err := tx.UpsertFAQ([]FAQEntry{faq})
		return err
	})
	if got, want := one(t, st, "c", `SELECT title, url, created_at, reply_count, tags FROM discourse_topics`), []any{"Q2", "https://f/t/q/3", "2024-01-01", int64(5), `["b","c"]`}; !reflect.DeepEqual(got, want) {
		t.Errorf("topic %v, want %v", got, want)
	}
	if got, want := one(t, st, "c", `SELECT subject, url, year, body FROM mailing_list_messages`), []any{"Re: y", "https://m/2.html", int64(2024), nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("message %v, want %v", got, want)
	}
	if got, want := one(t, st, "c", `SELECT question, thread_url, first_message_date, quality_score, tags FROM faq_entries`), []any{"q2?", "https://m/thread.html#000001", "first", 0.9, `["t"]`}; !reflect.DeepEqual(got, want) {
		t.Errorf("faq %v, want %v", got, want)
	}
}

func TestThreadsAndStatuses(t *testing.T) {
	st := testStore(t)
	m := func(id, thread string) Message {
		return Message{List: "l", MessageID: id, ThreadID: thread, Subject: "s" + id, Date: "d", URL: "u" + id, Year: 2024}
	}
	var threads, after []string
	var statuses map[string]SummaryStatus
	at := time.Date(2025, 6, 2, 2, 0, 3, 123456000, time.UTC)
	// read lists list's candidate threads as FAQ generation reads them: their sizes, then each
	// one's messages, as "thread:message,message".
	read := func(tx *Tx) ([]string, error) {
		cands, err := tx.ThreadCandidates("l", 1, 1, 0)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, c := range cands {
			ms, err := tx.ThreadMessages("l", c.ThreadID)
			if err != nil {
				return nil, err
			}
			ids := []string{}
			for _, msg := range ms {
				ids = append(ids, msg.MessageID)
			}
			out = append(out, c.ThreadID+":"+strings.Join(ids, ","))
		}
		return out, nil
	}
	update(t, st, "c", func(tx *Tx) error {
		// Inserted out of order; 99999 sorts after 100000 as text but before it as a number
		// (pipermail numbers gain a digit as an archive grows).
		if _, err := tx.UpsertMessages([]Message{m("100000", "99999"), m("99999", "99999"), m("100001", ""), m("100002", "100000"),
			{List: "other", MessageID: "1", Subject: "s", Date: "d", URL: "u", Year: 2024}}); err != nil {
			return err
		}
		var err error
		if threads, err = read(tx); err != nil {
			return err
		}
		if err := tx.SetSummaryStatus([]SummaryStatus{{List: "l", ThreadID: "99999", Status: "skipped", FailureReason: "Quality score 0.20 below threshold", Tokens: 10, Cost: 0.5, AttemptedAt: at}}); err != nil {
			return err
		}
		if err := tx.SetSummaryStatus([]SummaryStatus{{List: "l", ThreadID: "100001", Status: "failed"}, {List: "l", ThreadID: "99999", Status: "skipped", FailureReason: "again", AttemptedAt: at}}); err != nil {
			return err
		}
		if after, err = read(tx); err != nil {
			return err
		}
		statuses, err = tx.SummaryStatuses("l")
		return err
	})
	// The most messages first, then by first message as a number; a message without a thread
	// id is a thread of its own.
	want := []string{"99999:99999,100000", "100001:100001", "100000:100002"}
	if !reflect.DeepEqual(threads, want) {
		t.Errorf("threads %v, want %v", threads, want)
	}
	// A skipped thread is no longer a candidate; a failed one is tried again.
	if want := []string{"100001:100001", "100000:100002"}; !reflect.DeepEqual(after, want) {
		t.Errorf("threads after the statuses %v, want %v", after, want)
	}
	if s := statuses["99999"]; s.Status != "skipped" || s.FailureReason != "again" || s.Tokens != 0 || !s.AttemptedAt.Equal(at) {
		t.Errorf("status %+v, want the second write's", s)
	}
	if s := statuses["100001"]; s.Status != "failed" || s.AttemptedAt.IsZero() || len(statuses) != 2 {
		t.Errorf("statuses %+v", statuses)
	}
}

func TestSyncMetaAndPopulated(t *testing.T) {
	st := testStore(t)
	at := time.Date(2025, 6, 2, 2, 0, 3, 123456000, time.FixedZone("x", 3600))
	update(t, st, "c", func(tx *Tx) error {
		if _, ok, err := tx.SyncMeta("github", "o/r"); ok || err != nil {
			t.Errorf("a missing row: ok %v, %v", ok, err)
		}
		for _, typ := range []string{"github", "papers", "docstrings", "mailman", "faq", "discourse"} {
			if ok, err := tx.Populated(typ); ok || err != nil {
				t.Errorf("Populated(%s) on an empty copy: %v, %v", typ, ok, err)
			}
		}
		if _, err := tx.Populated("beps"); err == nil {
			t.Error("Populated of an unknown type did not fail")
		}
		if err := tx.SetSyncMeta(SyncMeta{SourceType: "github", SourceName: "o/r", LastSyncAt: at, Items: 3}); err != nil {
			return err
		}
		if err := tx.SetSyncMeta(SyncMeta{SourceType: "github", SourceName: "o/r", LastSyncAt: at.Add(time.Hour), Items: 4}); err != nil {
			return err
		}
		tx.UpsertMessages([]Message{{List: "l", MessageID: "1", Subject: "s", Date: "d", URL: "u", Year: 1}})
		if ok, _ := tx.Populated("mailman"); !ok {
			t.Error("mailman not populated after a message")
		}
		m, ok, err := tx.SyncMeta("github", "o/r")
		if !ok || err != nil || m.Items != 4 || !m.LastSyncAt.Equal(at.Add(time.Hour)) {
			t.Errorf("SyncMeta = %+v %v %v", m, ok, err)
		}
		return nil
	})
	if got := one(t, st, "c", `SELECT last_sync_at FROM sync_metadata`)[0]; got != "2025-06-02T02:00:03.123456+00:00" {
		t.Errorf("stored time %v, want the reference's format in UTC", got)
	}
}

func TestParseTime(t *testing.T) {
	want := time.Date(2025, 6, 2, 2, 0, 3, 0, time.UTC)
	for _, s := range []string{"2025-06-02T02:00:03+00:00", "2025-06-02T02:00:03Z", "2025-06-02T02:00:03", "2025-06-02T04:00:03+02:00",
		"2025-06-02 02:00:03", "2025-06-02T02:00:03.000000+00:00"} {
		if got, err := ParseTime(s); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("ParseTime of a word did not fail")
	}
}

// TestUpdatePublish: Update writes the working copy only; Publish publishes it once, and
// again only after another change; an unpublished change survives a restart of the store.
func TestUpdatePublish(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	add := func(st *Store, n int) {
		update(t, st, "c", func(tx *Tx) error {
			_, err := tx.UpsertGitHubItems([]GitHubItem{{Repo: "o/r", Type: "issue", Number: n, Title: "t", Status: "open", URL: "u", CreatedAt: "c"}})
			return err
		})
	}
	published := func(st *Store) int {
		n := -1
		if err := st.read(ctx, "c", func(ctx context.Context, db *sql.DB) error {
			return db.QueryRowContext(ctx, `SELECT count(*) FROM github_items`).Scan(&n)
		}); err != nil && !errors.Is(err, ErrNotInitialized) {
			t.Fatal(err)
		}
		return n
	}
	add(st, 1)
	if n := published(st); n != -1 {
		t.Fatalf("Update published (%d rows)", n)
	}
	if err := st.Publish(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := published(st); n != 1 {
		t.Fatalf("published %d rows, want 1", n)
	}
	before, _ := os.Stat(st.Path("c"))
	if err := st.Publish(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	update(t, st, "c", func(tx *Tx) error { _, err := tx.DeleteGitHubReposExcept([]string{"o/r"}); return err }) // changes nothing
	if err := st.Publish(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(st.Path("c")); !os.SameFile(before, after) {
		t.Error("Publish without a change replaced the file")
	}
	add(st, 2)
	// A new store on the same directory (a restart) still publishes the change.
	st2, err := OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := st2.Publish(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := published(st2); n != 2 {
		t.Errorf("after the restart's publish %d rows, want 2", n)
	}
	if err := st.Publish(ctx, "../c"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Publish of a bad id: %v", err)
	}
	if err := st.Update(ctx, "a b", nil); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Update of a bad id: %v", err)
	}
}

// TestWriterLockAcrossStores: the writer lock holds across processes sharing the data
// directory (two Stores stand in for them): while one store's Update runs, another's cannot
// take the lock.
func TestWriterLockAcrossStores(t *testing.T) {
	dir := t.TempDir()
	a, _ := OpenStore(dir, nil)
	b, _ := OpenStore(dir, nil)
	defer a.Close()
	defer b.Close()
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- a.Update(context.Background(), "c", func(context.Context, *Tx) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := b.Update(cancelled, "c", func(context.Context, *Tx) error { ran = true; return nil })
	// The error is the lock's: the transaction was never begun.
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "writer lock") || ran {
		t.Errorf("the second store's Update: %v (ran %v), want it to wait for the lock until cancelled", err, ran)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Update(context.Background(), "c", func(context.Context, *Tx) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("after the first let go: %v, ran %v", err, ran)
	}
}

func TestGuardedClient(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/ok":
			fmt.Fprintf(w, "host=%s", r.Host)
		case "/to-loopback":
			http.Redirect(w, r, "http://127.0.0.1:1/x", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	get := func(c *http.Client, u string) (string, error) {
		resp, err := c.Get(u)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, err = fmt.Fprint(&b, resp.Status)
		buf := make([]byte, 100)
		n, _ := resp.Body.Read(buf)
		return string(buf[:n]), err
	}

	if _, err := get(NewGuardedClient(GuardOptions{}), srv.URL+"/ok"); !errors.Is(err, ErrDestination) {
		t.Errorf("a loopback server without AllowLoopback: %v, want ErrDestination", err)
	}
	resolved := NewGuardedClient(GuardOptions{Resolve: map[string]string{"Forum.Example.org": addr}})
	if body, err := get(resolved, "https://forum.example.org/ok"); err != nil || body != "host=forum.example.org" {
		t.Errorf("a resolved host over https: %q, %v, want the test server asked over http with its name", body, err)
	}
	if _, err := get(resolved, "https://forum.example.org/to-loopback"); !errors.Is(err, ErrDestination) {
		t.Errorf("a redirect to loopback: %v, want ErrDestination", err)
	}
	if _, err := get(resolved, "https://forum.example.org/to-file"); !errors.Is(err, ErrDestination) {
		t.Errorf("a redirect to file: %v, want ErrDestination", err)
	}
	hits.Store(0)
	_, err := get(resolved, "https://forum.example.org/loop")
	var uerr *url.Error
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), "more than 3 redirects") || hits.Load() != MaxRedirects+1 {
		t.Errorf("a redirect loop: %v after %d requests, want a stop after %d", err, hits.Load(), MaxRedirects+1)
	}
	loop := NewGuardedClient(GuardOptions{AllowLoopback: true})
	if body, err := get(loop, srv.URL+"/ok"); err != nil || body != "host="+addr {
		t.Errorf("with AllowLoopback: %q, %v", body, err)
	}
	bad := NewGuardedClient(GuardOptions{AllowLoopback: true, Resolve: map[string]string{"127.0.0.1": "nowhere"}})
	if _, err := get(bad, srv.URL+"/ok"); err == nil || !strings.Contains(err.Error(), "want IP:PORT") {
		t.Errorf("a malformed resolve entry: %v", err)
	}
	if c := NewGuardedClient(GuardOptions{}); c.Timeout != DefaultGuardTimeout {
		t.Errorf("default timeout %v", c.Timeout)
	}
}

// TestWorkCopyReplaced: the working copy stays open between Updates, but one whose file was
// replaced (another process made it again) is opened again, so writes reach the file on disk.
func TestWorkCopyReplaced(t *testing.T) {
	st := testStore(t)
	add := func(n int) {
		update(t, st, "c", func(tx *Tx) error {
			_, err := tx.UpsertGitHubItems([]GitHubItem{{Repo: "o/r", Type: "issue", Number: n, Title: "t", Status: "open", URL: "u", CreatedAt: "c"}})
			return err
		})
	}
	add(1)
	add(2)
	if n := one(t, st, "c", `SELECT count(*) FROM github_items`)[0]; n != int64(2) {
		t.Fatalf("%v rows", n)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(st.workPath("c") + suffix)
	}
	add(3)
	if got := workQuery(t, st, "c", `SELECT number FROM github_items`); !reflect.DeepEqual(got, [][]any{{int64(3)}}) {
		t.Errorf("the new working copy holds %v, want the write made after it was replaced", got)
	}
}

// TestThreadMessagesUsesIndexes: a thread's messages are read by the thread_id index and the
// (list_name, message_id) key, never by scanning the list (an OR of the two did, once per
// thread FAQ generation decides), and both halves still make the thread: a root without a
// thread id and the replies naming it.
func TestThreadMessagesUsesIndexes(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	ms := []Message{
		{List: "l", MessageID: "000010", Subject: "Root", Date: "d", URL: "u", Year: 2024},
		{List: "l", MessageID: "000011", ThreadID: "000010", Subject: "Re: Root", Date: "d", URL: "u", Year: 2024},
		{List: "l", MessageID: "000009", ThreadID: "000010", Subject: "Re: Root", Date: "d", URL: "u", Year: 2024},
		{List: "l", MessageID: "000012", ThreadID: "000099", Subject: "Other", Date: "d", URL: "u", Year: 2024},
		{List: "other", MessageID: "000013", ThreadID: "000010", Subject: "Elsewhere", Date: "d", URL: "u", Year: 2024},
	}
	err := st.Update(ctx, "hed", func(_ context.Context, tx *Tx) error {
		if _, err := tx.UpsertMessages(ms); err != nil {
			return err
		}
		got, err := tx.ThreadMessages("l", "000010")
		if err != nil {
			return err
		}
		var ids []string
		for _, m := range got {
			ids = append(ids, m.MessageID)
		}
		if strings.Join(ids, " ") != "000009 000010 000011" {
			t.Errorf("thread 000010: %q", ids)
		}
		rows, err := tx.tx.QueryContext(ctx, "EXPLAIN QUERY PLAN "+threadMessagesSQL, "l", "000010")
		if err != nil {
			return err
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			plan = append(plan, detail)
		}
		if p := strings.Join(plan, "; "); strings.Contains(p, "SCAN mailing_list_messages") || !strings.Contains(p, "idx_messages_thread") {
			t.Errorf("query plan: %s", p)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

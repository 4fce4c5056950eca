package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSyncStatus(t *testing.T) {
	st := fixture(t)
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	update(t, st, "hed", func(tx *Tx) error {
		for _, m := range []SyncMeta{
			{SourceType: "github", SourceName: "hed-standard/hed-python", LastSyncAt: base.Add(2 * time.Hour), Items: 4},
			{SourceType: "github", SourceName: "hed-standard/not-stored", LastSyncAt: base.Add(3 * time.Hour)},
			{SourceType: "github_full", SourceName: "hed-standard/hed-python", LastSyncAt: base},
			{SourceType: "papers", SourceName: "openalex:HED", LastSyncAt: base.Add(time.Hour)},
			{SourceType: "papers", SourceName: "openalex:EEG", LastSyncAt: base.Add(5 * time.Hour)},
			{SourceType: "papers", SourceName: "semanticscholar:HED", LastSyncAt: base.Add(4 * time.Hour)},
			{SourceType: "papers", SourceName: "opencite:HED", LastSyncAt: base.Add(6 * time.Hour)},
			{SourceType: "citations", SourceName: "citing_10.1/x", LastSyncAt: base.Add(7 * time.Hour)},
		} {
			if err := tx.SetSyncMeta(m); err != nil {
				return err
			}
		}
		_, err := tx.UpsertMessages([]Message{{List: "l", MessageID: "1", Subject: "s", Date: "d", URL: "u", Year: 2024}})
		return err
	})
	st.Publish(t.Context(), "hed")
	got, err := st.SyncStatus(t.Context(), "hed")
	if err != nil {
		t.Fatal(err)
	}
	if got.GitHubTotal != 6 || got.Issues != 4 || got.PRs != 2 || got.OpenItems != 4 || got.PapersTotal != 4 {
		t.Errorf("github %d (%d issues, %d prs, %d open), papers %d", got.GitHubTotal, got.Issues, got.PRs, got.OpenItems, got.PapersTotal)
	}
	wantRepos := map[string]RepoStatus{
		"hed-standard/hed-python":        {Items: 4, LastSync: base.Add(2 * time.Hour)},
		"hed-standard/hed-specification": {Items: 1},
		"hed-standard/hed-javascript":    {Items: 1},
	}
	if !reflect.DeepEqual(got.Repos, wantRepos) {
		t.Errorf("repos %v, want %v", got.Repos, wantRepos)
	}
	wantSources := map[string]SourceStatus{
		"openalex":        {Items: 2, LastSync: base.Add(5 * time.Hour)},
		"semanticscholar": {Items: 1, LastSync: base.Add(4 * time.Hour)},
		"pubmed":          {Items: 1},
	}
	if !reflect.DeepEqual(got.Sources, wantSources) {
		t.Errorf("sources %v, want %v", got.Sources, wantSources)
	}
	want := KnowledgeCounts{GitHubItems: 6, Papers: 4, Docstrings: 6, DiscourseTopics: 2, FAQEntries: 3, MailingListMessages: 1}
	if got.Knowledge != want {
		t.Errorf("knowledge %+v, want %+v", got.Knowledge, want)
	}
	if got.LastSync["github"] != base.Add(3*time.Hour) || got.LastSync["papers"] != base.Add(6*time.Hour) || got.LastSync["citations"] != base.Add(7*time.Hour) || len(got.LastSync) != 4 {
		t.Errorf("last syncs %v", got.LastSync)
	}
	h := got.Health(base.Add(3*time.Hour + 47*time.Hour + 56*time.Minute))
	if *h.GitHubAgeHours != 47.9 || !h.GitHubHealthy || !h.Healthy || *h.PapersAgeHours != 44.9 || !h.PapersHealthy {
		t.Errorf("health %+v (%v, %v)", h, *h.GitHubAgeHours, *h.PapersAgeHours)
	}
	h = got.Health(base.Add(3*time.Hour + 48*time.Hour))
	if h.GitHubHealthy || h.Healthy || !h.PapersHealthy {
		t.Errorf("at 48 h: %+v", h)
	}
	if h := (SyncStatus{}).Health(base); h.GitHubAgeHours != nil || !h.Healthy || !h.PapersHealthy {
		t.Errorf("never synced: %+v", h)
	}
	hc, err := st.SyncHealth(t.Context(), "hed", base.Add(3*time.Hour+30*time.Minute))
	if err != nil || hc.GitHubItems != 6 || hc.PapersItems != 4 || *hc.GitHubAgeHours != 0.5 || !hc.Healthy {
		t.Errorf("sync health %+v %v", hc, err)
	}
}

func TestStatusStates(t *testing.T) {
	st := testStore(t)
	got, err := st.SyncStatus(t.Context(), "none")
	if err != nil || got.GitHubTotal != 0 || len(got.Sources) != 3 || len(got.Repos) != 0 {
		t.Errorf("no file: %+v %v", got, err)
	}
	if err := st.Write(t.Context(), "docs", func(ctx context.Context, tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, `DROP TABLE github_items`)
		return true, err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SyncStatus(t.Context(), "docs"); err != nil || got.GitHubTotal != 0 {
		t.Errorf("missing table: %+v %v", got, err)
	}
	os.WriteFile(st.Path("bad"), []byte(strings.Repeat("garbage ", 200)), 0o644)
	if _, err := st.SyncStatus(t.Context(), "bad"); !errors.Is(err, ErrUnreadable) {
		t.Errorf("bad file: %v", err)
	}
	if _, err := st.SyncHealth(t.Context(), "bad", time.Now()); !errors.Is(err, ErrUnreadable) {
		t.Errorf("bad file health: %v", err)
	}
	if f, err := st.FAQFeed(t.Context(), "bad", FAQFeedQuery{}); !errors.Is(err, ErrUnreadable) || f.Entries == nil {
		t.Errorf("bad file feed: %v", err)
	}
	if _, err := st.CitationsFeed(t.Context(), "bad", nil); !errors.Is(err, ErrUnreadable) {
		t.Errorf("bad file citations: %v", err)
	}
	f, err := st.FAQFeed(t.Context(), "none", FAQFeedQuery{Q: "x"})
	if err != nil || f.Total != 0 || f.Entries == nil || len(f.Entries) != 0 {
		t.Errorf("no file feed: %+v %v", f, err)
	}
	c, err := st.CitationsFeed(t.Context(), "none", []string{"10.1/x"})
	if err != nil || c.Total != 0 || c.PerYear == nil || c.ByPaper == nil {
		t.Errorf("no file citations: %+v %v", c, err)
	}
}

func TestRedactEmails(t *testing.T) {
	tests := []struct{ in, want string }{
		{"write to jane.doe+eeg@uni-x.example.org today", "write to [email redacted] today"},
		{"a@b.c stays, a@b.co goes", "a@b.c stays, [email redacted] goes"},
		{"<x_y%z@mail.server.de>, second@x.io", "<[email redacted]>, [email redacted]"},
		{"no address @ here", "no address @ here"},
	}
	for _, tc := range tests {
		if got := RedactEmails(tc.in); got != tc.want {
			t.Errorf("RedactEmails(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFAQFeed(t *testing.T) {
	st := testStore(t)
	e := func(id, q, a string, quality float64, first, category string, tags ...string) FAQEntry {
		return FAQEntry{List: "l", ThreadID: id, ThreadURL: "https://l/thread.html#" + id, Question: q, Answer: a, Tags: tags,
			Category: category, MessageCount: 2, Quality: quality, FirstMessageDate: first}
	}
	update(t, st, "c", func(tx *Tx) error {
		_, err := tx.UpsertFAQ([]FAQEntry{
			e("1", "How to filter data?", "Ask bob@lab.example.com for the filter script.", 0.8, "Mon Jan 1 2024", "how-to", "filtering", "bob@lab.example.com"),
			e("2", "Filter crashes", "Update the toolbox.", 0.9, "", "troubleshooting"),
			e("3", "Plot channels", "Use the plot menu.", 0.8, "Tue Jan 2 2024", "how-to"),
			e("4", "Old question", "Old answer about filter settings.", 0.7, "Wed Jan 3 2024", "reference"),
		})
		return err
	})
	if err := st.Write(t.Context(), "c", func(ctx context.Context, tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, `UPDATE faq_entries SET tags = 'not json' WHERE thread_id = '3'`)
		return true, err
	}); err != nil {
		t.Fatal(err)
	}
	ids := func(f FAQFeed) []string {
		var out []string
		for _, e := range f.Entries {
			out = append(out, e.ThreadURL[strings.Index(e.ThreadURL, "#")+1:])
		}
		return out
	}
	tests := []struct {
		q     FAQFeedQuery
		total int
		ids   []string
	}{
		// Browsing: quality, then first_message_date descending (3's date sorts after 1's).
		{FAQFeedQuery{}, 4, []string{"2", "3", "1", "4"}},
		{FAQFeedQuery{Q: "   "}, 4, []string{"2", "3", "1", "4"}},
		{FAQFeedQuery{Limit: 2, Offset: 1}, 4, []string{"3", "1"}},
		{FAQFeedQuery{Offset: 10}, 4, nil},
		{FAQFeedQuery{Category: "HOW-TO"}, 2, []string{"3", "1"}},
		{FAQFeedQuery{MinQuality: 0.85}, 1, []string{"2"}},
		// Searching: quality, then relevance; total counts every match.
		{FAQFeedQuery{Q: "filter"}, 3, []string{"2", "1", "4"}},
		{FAQFeedQuery{Q: "filter", Limit: 1, Offset: 1}, 3, []string{"1"}},
		{FAQFeedQuery{Q: "filter", Category: "reference"}, 1, []string{"4"}},
		{FAQFeedQuery{Q: "filter", MinQuality: 0.75, Category: "how-to"}, 1, []string{"1"}},
		{FAQFeedQuery{Q: `"NEAR(*`}, 0, nil},
	}
	for _, tc := range tests {
		f, err := st.FAQFeed(t.Context(), "c", tc.q)
		if err != nil {
			t.Fatalf("%+v: %v", tc.q, err)
		}
		if f.Total != tc.total || !reflect.DeepEqual(ids(f), tc.ids) {
			t.Errorf("%+v: total %d %v, want %d %v", tc.q, f.Total, ids(f), tc.total, tc.ids)
		}
	}
	f, _ := st.FAQFeed(t.Context(), "c", FAQFeedQuery{})
	byID := map[string]FeedEntry{}
	for _, e := range f.Entries {
		byID[e.ThreadURL[len(e.ThreadURL)-1:]] = e
	}
	if e := byID["1"]; e.Answer != "Ask [email redacted] for the filter script." || !reflect.DeepEqual(e.Tags, []string{"filtering", "[email redacted]"}) || e.FirstMessageDate != "Mon Jan 1 2024" {
		t.Errorf("entry 1 %+v", e)
	}
	if e := byID["3"]; e.Tags == nil || len(e.Tags) != 0 {
		t.Errorf("bad tag JSON: %#v", e.Tags)
	}
	if e := byID["2"]; e.FirstMessageDate != "" || e.QualityScore != 0.9 || e.Category != "troubleshooting" || e.MessageCount != 2 {
		t.Errorf("entry 2 %+v", e)
	}
}

func TestCitationsFeed(t *testing.T) {
	st := testStore(t)
	update(t, st, "c", func(tx *Tx) error {
		if err := tx.ReplaceCitationCounts("10.1/A", map[int]int{2016: 22, 2017: 5}); err != nil {
			return err
		}
		if err := tx.ReplaceCitationCounts("10.1/b", map[int]int{2017: 3, 2020: 1}); err != nil {
			return err
		}
		return tx.ReplaceCitationCounts("10.1/gone", map[int]int{2017: 100})
	})
	st.Publish(t.Context(), "c")
	got, err := st.CitationsFeed(t.Context(), "c", []string{"10.1/a", "10.1/b", "10.1/never"})
	if err != nil {
		t.Fatal(err)
	}
	want := CitationsFeed{Total: 31, PerYear: map[int]int{2016: 22, 2017: 8, 2020: 1},
		ByPaper: map[string]map[int]int{"10.1/a": {2016: 22, 2017: 5}, "10.1/b": {2017: 3, 2020: 1}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if ys := Years(got.PerYear); !reflect.DeepEqual(ys, []int{2016, 2017, 2020}) {
		t.Errorf("years %v", ys)
	}
	all, _ := st.CitationsFeed(t.Context(), "c", nil)
	if all.Total != 131 || len(all.ByPaper) != 3 {
		t.Errorf("every DOI: %+v", all)
	}
}

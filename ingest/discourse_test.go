package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

type dcFixture struct {
	forum *ingesttest.Discourse
	store *knowledge.Store
	src   *Discourse
	clk   *stepClock
}

// newDCFixture is a forum of n topics over three categories (one a subcategory), every
// fifth tagged eeg, the first pinned, each with a first post and some replies; the source
// reaches it with a guarded client that allows loopback (as --knowledge-allow-loopback).
func newDCFixture(t *testing.T, n int) *dcFixture {
	t.Helper()
	clk := newStepClock()
	forum := ingesttest.NewDiscourse(t)
	forum.SetClock(clk.Now)
	forum.AddCategory(
		ingesttest.DiscourseCategory{ID: 5, Name: "General", Slug: "general"},
		ingesttest.DiscourseCategory{ID: 6, Name: "Support", Slug: "support"},
		ingesttest.DiscourseCategory{ID: 7, Name: "EEG data", Slug: "eeg-data", Parent: 6},
	)
	start := clk.Now().Add(-72 * time.Hour)
	for i := 1; i <= n; i++ {
		at := start.Add(time.Duration(i) * time.Minute)
		tp := ingesttest.DiscourseTopic{
			ID: 100 + i, Title: fmt.Sprintf("How do I epoch dataset %d?", i), CategoryID: 5 + i%3, Views: 10 * i,
			Pinned: i == 1, CreatedAt: at,
			Posts: []ingesttest.DiscoursePost{{Cooked: fmt.Sprintf("<p>I have <strong>dataset %d</strong> and want epochs.</p>", i), CreatedAt: at}},
		}
		if i%5 == 0 {
			tp.Tags = []string{"eeg", "epoching"}
		}
		if i%2 == 0 {
			tp.Posts = append(tp.Posts,
				ingesttest.DiscoursePost{Cooked: "<p>Use <code>pop_epoch</code>.</p>", Likes: 1, CreatedAt: at.Add(time.Second)},
				ingesttest.DiscoursePost{Cooked: "<p>Or the <em>GUI</em>.</p>", Likes: 3, CreatedAt: at.Add(2 * time.Second)})
		}
		if i%4 == 0 {
			tp.Accepted = 2
		}
		forum.AddTopic(tp)
	}
	store := openTestStore(t)
	src, err := NewDiscourse(DiscourseOptions{Store: store, Client: knowledge.NewGuardedClient(knowledge.GuardOptions{AllowLoopback: true}), Now: clk.Now, Sleep: clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	src.Pause = 0
	return &dcFixture{forum: forum, store: store, src: src, clk: clk}
}

func (f *dcFixture) community(mod func(*config.Discourse)) *config.Community {
	d := config.Discourse{URL: f.forum.URL + "/"}
	if mod != nil {
		mod(&d)
	}
	return &config.Community{ID: "eeglab", Name: "EEGLAB", Discourse: []config.Discourse{d}}
}

func (f *dcFixture) sync(t *testing.T, c *config.Community, full bool) (Result, error) {
	t.Helper()
	return f.src.Sync(context.Background(), c, RunOptions{Full: full}, nil)
}

func TestDiscourseFirstSyncFills(t *testing.T) {
	f := newDCFixture(t, 45)
	res, err := f.sync(t, f.community(nil), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 44 {
		t.Errorf("%d topics stored, want 44 (the pinned one skipped)", res.Items)
	}
	if n := f.forum.Count("/latest.json"); n != 2 {
		t.Errorf("%d listing pages, want 2 of 30", n)
	}
	if n := f.forum.Count("/t/"); n != 44 {
		t.Errorf("%d topic requests, want 44", n)
	}
	for _, r := range f.forum.Requests() {
		if r.Accept != "application/json" {
			t.Errorf("%s asked with Accept %q", r.Path, r.Accept)
		}
	}
	base := f.forum.URL
	rows := queryRows(t, f.store, "eeglab", `SELECT forum_url, title, first_post, accepted_answer, category_name, tags, reply_count, like_count, views, url, created_at, last_posted_at
		FROM discourse_topics WHERE topic_id = 112`)
	want := []string{base, "How do I epoch dataset 12?", "I have **dataset 12** and want epochs.", "Use `pop_epoch`.", "General",
		`[]`, "2", "4", "120", base + "/t/how-do-i-epoch-dataset-12/112", "2026-02-27T09:12:00.000Z", "2026-02-27T09:12:02.000Z"}
	if len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprint(want) {
		t.Errorf("topic 112 =\n%q\nwant\n%q", rows, want)
	}
	// Not accepted: the most-liked reply; a subcategory's name; tags.
	rows = queryRows(t, f.store, "eeglab", `SELECT accepted_answer, category_name, tags FROM discourse_topics WHERE topic_id = 110`)
	if fmt.Sprint(rows) != "[[Or the *GUI*. Support [\"eeg\",\"epoching\"]]]" {
		t.Errorf("topic 110 = %q", rows)
	}
	rows = queryRows(t, f.store, "eeglab", `SELECT accepted_answer IS NULL, category_name FROM discourse_topics WHERE topic_id IN (104, 105) ORDER BY topic_id`)
	if fmt.Sprint(rows) != "[[0 Support] [1 EEG data]]" {
		t.Errorf("topics 104, 105 (accepted?, category) = %q", rows)
	}
	if m, ok := syncMetaOf(t, f.store, "eeglab", "discourse", base); !ok || m.Items != 44 || !m.LastSyncAt.Equal(f.clk.Now()) {
		t.Errorf("sync_metadata (discourse, base) = %+v, %v", m, ok)
	}
}

func TestDiscourseIncrementalFetchesOnlyChangedTopics(t *testing.T) {
	f := newDCFixture(t, 45)
	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour)
	f.forum.Reply(107, ingesttest.DiscoursePost{Cooked: "<p>Solved it with <code>epoch()</code>.</p>", Likes: 9})
	f.forum.Edit(108, func(t *ingesttest.DiscourseTopic) { t.Title = "edited, not bumped" })
	f.forum.ResetRequests()

	res, err := f.sync(t, f.community(nil), false)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range f.forum.Requests() {
		paths = append(paths, r.Path+"?"+r.Query)
	}
	if want := "[/categories.json?include_subcategories=true /latest.json? /t/107.json?]"; fmt.Sprint(paths) != want {
		t.Errorf("second sync asked %v, want %s", paths, want)
	}
	if res.Items != 1 {
		t.Errorf("%d topics written, want 1", res.Items)
	}
	rows := queryRows(t, f.store, "eeglab", `SELECT reply_count, accepted_answer FROM discourse_topics WHERE topic_id = 107`)
	if fmt.Sprint(rows) != "[[1 Solved it with `epoch()`.]]" {
		t.Errorf("topic 107 = %q, want the new reply counted and taken as the answer", rows)
	}
}

func TestDiscourseCategoryAndTagListings(t *testing.T) {
	f := newDCFixture(t, 45)
	c := f.community(func(d *config.Discourse) {
		d.Categories = []config.DiscourseCategory{{Slug: "support", ID: 6}}
		d.Tags = []string{"eeg"}
	})
	res, err := f.sync(t, c, false)
	if err != nil {
		t.Fatal(err)
	}
	if f.forum.Count("/latest.json") != 0 || f.forum.Count("/c/support/6.json") != 1 || f.forum.Count("/tag/eeg.json") != 1 {
		t.Errorf("requests %+v: want the category's and the tag's listings, not latest", f.forum.Requests())
	}
	// Support (6) and its subcategory (7): i%3 in {1, 2}, 30 topics less the pinned #1; the
	// tag adds the eeg topics of General (i%15 == 0: 15, 30, 45); none fetched twice.
	if res.Items != 32 || f.forum.Count("/t/") != 32 {
		t.Errorf("%d stored, %d fetched; want 32 of each", res.Items, f.forum.Count("/t/"))
	}
}

func TestDiscourseRetryAfter(t *testing.T) {
	t.Run("waited, with 10 s when absent", func(t *testing.T) {
		f := newDCFixture(t, 3)
		f.forum.Queue429("7", "")
		res, err := f.sync(t, f.community(nil), false)
		if err != nil || res.Items != 2 {
			t.Fatalf("err %v, %d items", err, res.Items)
		}
		if s := fmt.Sprint(f.clk.Sleeps()); !strings.HasPrefix(s, "[7s 10s") {
			t.Errorf("waits %s, want 7s then the default 10s first", s)
		}
	})
	t.Run("three 429s fail the forum", func(t *testing.T) {
		f := newDCFixture(t, 3)
		f.forum.Queue429("1", "1", "1")
		res, err := f.sync(t, f.community(nil), false)
		var se *HTTPStatusError
		if err == nil || len(res.Failed) != 1 || !errors.As(res.Failed[0].Err, &se) || se.Status != http.StatusTooManyRequests {
			t.Errorf("err %v, result %+v; want the forum failed with the 429", err, res)
		}
		if n := len(f.forum.Requests()); n != 3 {
			t.Errorf("%d attempts, want 3", n)
		}
	})
	t.Run("a wait past 5 minutes is not taken", func(t *testing.T) {
		f := newDCFixture(t, 3)
		f.forum.Queue429("600")
		res, _ := f.sync(t, f.community(nil), false)
		if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Err.Error(), "Retry-After 10m0s") || len(f.clk.Sleeps()) != 0 {
			t.Errorf("result %+v, waits %v", res, f.clk.Sleeps())
		}
	})
}

func TestDiscourseFullRunDeletesUnlisted(t *testing.T) {
	f := newDCFixture(t, 10)
	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	f.forum.Delete(104)
	f.clk.Advance(time.Hour)
	if res, err := f.sync(t, f.community(nil), false); err != nil || res.Deleted != 0 {
		t.Fatalf("incremental: %+v, %v; want nothing deleted", res, err)
	}
	res, err := f.sync(t, f.community(nil), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 1 {
		t.Errorf("deleted %d, want 1", res.Deleted)
	}
	if got := queryRows(t, f.store, "eeglab", `SELECT count(*), sum(topic_id = 104) FROM discourse_topics`); fmt.Sprint(got) != "[[8 0]]" {
		t.Errorf("(rows, #104) = %v, want [[8 0]]", got)
	}
}

func TestDiscourseTextsCappedAndStripped(t *testing.T) {
	f := newDCFixture(t, 0)
	long := "<p>" + strings.Repeat("word ", 3000) + "</p>"
	f.forum.AddTopic(ingesttest.DiscourseTopic{ID: 9, Title: "Long", CategoryID: 5, Posts: []ingesttest.DiscoursePost{
		{Cooked: long + `<script>alert(1)</script><div class="lightbox-wrapper"><img src="/x.png" alt="plot"></div>`},
		{Cooked: "<p>" + strings.Repeat("reply ", 2000) + "</p>", Likes: 2},
	}})
	f.forum.AddTopic(ingesttest.DiscourseTopic{ID: 10, Title: "Breaks", CategoryID: 5, Posts: []ingesttest.DiscoursePost{
		{Cooked: "<p>one<br><br><br><br>two</p>"},
	}})
	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	rows := queryRows(t, f.store, "eeglab", `SELECT length(first_post), length(accepted_answer), instr(first_post, '<') FROM discourse_topics WHERE topic_id = 9`)
	if fmt.Sprint(rows) != "[[5000 5000 0]]" {
		t.Errorf("(first post, answer, '<' at) = %v, want [[5000 5000 0]]", rows)
	}
	// Runs of blank lines become one.
	if rows := queryRows(t, f.store, "eeglab", `SELECT first_post FROM discourse_topics WHERE topic_id = 10`); len(rows) != 1 || rows[0][0] != "one\n\ntwo" {
		t.Errorf("first post %q, want \"one\\n\\ntwo\"", rows)
	}
}

func TestDiscourseRefusesAPrivateAddress(t *testing.T) {
	f := newDCFixture(t, 3)
	// The default client is the guard's, which allows no loopback: the fake forum on
	// 127.0.0.1 must not be reached at all. 10.0.0.1 is refused before a connection too.
	src, err := NewDiscourse(DiscourseOptions{Store: f.store, Now: f.clk.Now, Sleep: f.clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	src.Pause = 0
	c := f.community(nil)
	c.Discourse = append(c.Discourse, config.Discourse{URL: "http://10.0.0.1/forum"})
	res, err := src.Sync(context.Background(), c, RunOptions{}, nil)
	if err == nil || len(res.Failed) != 2 {
		t.Fatalf("err %v, result %+v; want both forums refused", err, res)
	}
	for _, fe := range res.Failed {
		if !errors.Is(fe.Err, knowledge.ErrDestination) {
			t.Errorf("%s: %v, want the guard's refusal", fe.Source, fe.Err)
		}
	}
	if n := len(f.forum.Requests()); n != 0 {
		t.Errorf("the forum on loopback got %d requests", n)
	}
}

func TestDiscoursePausesAfterEachRequest(t *testing.T) {
	f := newDCFixture(t, 3)
	f.src.Pause = DefaultDiscoursePause
	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	sleeps := f.clk.Sleeps()
	if n := len(f.forum.Requests()); len(sleeps) != n || n != 4 {
		t.Errorf("%d pauses for %d requests, want one after each of 4", len(sleeps), n)
	}
	for _, s := range sleeps {
		if s != time.Second {
			t.Errorf("pause %v, want 1s", s)
		}
	}
}

// A 200 answer that is not a listing (a login wall's error, an empty object) must fail the
// forum: read as an empty, complete listing it would make a full run delete every topic and
// an incremental one record a clean sync past topics it never saw.
func TestDiscourseNotAListingFailsTheForum(t *testing.T) {
	notLoggedIn := `{"errors":["You need to be logged in to do that."],"error_type":"not_logged_in"}`
	for _, tc := range []struct {
		name, path, body string
	}{
		{"not logged in", "/latest.json", notLoggedIn},
		{"an empty object", "/latest.json", `{}`},
		{"a listing without topics", "/latest.json", `{"users":[],"topic_list":{"can_create_topic":false,"per_page":30}}`},
		{"topics null", "/latest.json", `{"topic_list":{"topics":null}}`},
		{"categories not logged in", "/categories.json", notLoggedIn},
	} {
		for _, full := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, full %v", tc.name, full), func(t *testing.T) {
				f := newDCFixture(t, 10)
				if _, err := f.sync(t, f.community(nil), false); err != nil {
					t.Fatal(err)
				}
				before, _ := syncMetaOf(t, f.store, "eeglab", "discourse", f.forum.URL)
				f.clk.Advance(time.Hour)
				f.forum.QueueAt(tc.path, ingesttest.CannedReply{Status: http.StatusOK, Body: tc.body})
				res, err := f.sync(t, f.community(nil), full)
				if err == nil || len(res.Failed) != 1 || res.Deleted != 0 {
					t.Errorf("err %v, result %+v; want the forum failed and nothing deleted", err, res)
				}
				if got := queryRows(t, f.store, "eeglab", `SELECT count(*) FROM discourse_topics`); fmt.Sprint(got) != "[[9]]" {
					t.Errorf("topics %v, want the 9 stored before", got)
				}
				if m, _ := syncMetaOf(t, f.store, "eeglab", "discourse", f.forum.URL); !m.LastSyncAt.Equal(before.LastSyncAt) {
					t.Errorf("last sync %v, want %v kept: the run was not clean", m.LastSyncAt, before.LastSyncAt)
				}
			})
		}
	}
}

// Listings are sorted by bumped_at, which an auto-bump or a moderator moves without a post:
// the incremental stop rule must use it, or a bumped old topic at the top ends the listing
// before the topics with newer replies below it.
func TestDiscourseIncrementalStopsOnBumpedAt(t *testing.T) {
	f := newDCFixture(t, 45)
	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour)
	f.forum.Reply(121, ingesttest.DiscoursePost{Cooked: "<p>Fixed in 2025.1.</p>", Likes: 7})
	f.clk.Advance(time.Minute)
	f.forum.Bump(103) // now on top, its last post three days old
	f.forum.ResetRequests()

	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range f.forum.Requests() {
		paths = append(paths, r.Path)
	}
	if want := "[/categories.json /latest.json /t/103.json /t/121.json]"; fmt.Sprint(paths) != want {
		t.Errorf("second sync asked %v, want %s", paths, want)
	}
	rows := queryRows(t, f.store, "eeglab", `SELECT reply_count, accepted_answer FROM discourse_topics WHERE topic_id = 121`)
	if fmt.Sprint(rows) != "[[1 Fixed in 2025.1.]]" {
		t.Errorf("topic 121 = %q, want the new reply stored", rows)
	}
}

// A full listing runs when the last one is over 30 days old, so what incremental listings
// missed is caught up and deleted topics go.
func TestDiscoursePeriodicFullRun(t *testing.T) {
	f := newDCFixture(t, 10)
	if _, err := f.sync(t, f.community(nil), false); err != nil {
		t.Fatal(err)
	}
	if m, ok := syncMetaOf(t, f.store, "eeglab", "discourse_full", f.forum.URL); !ok || !m.LastSyncAt.Equal(f.clk.Now()) {
		t.Errorf("(discourse_full, forum) = %+v, %v after the first run", m, ok)
	}
	f.forum.Delete(104)
	f.clk.Advance(29 * 24 * time.Hour)
	if res, err := f.sync(t, f.community(nil), false); err != nil || res.Deleted != 0 {
		t.Fatalf("after 29 days: %+v, %v; want an incremental run deleting nothing", res, err)
	}
	f.clk.Advance(2 * 24 * time.Hour)
	f.forum.ResetRequests()
	res, err := f.sync(t, f.community(nil), false)
	if err != nil || res.Deleted != 1 {
		t.Fatalf("after 31 days: %+v, %v; want a full run deleting #104", res, err)
	}
	if n := f.forum.Count("/t/"); n != 8 {
		t.Errorf("the full run fetched %d topics, want all 8", n)
	}
	if m, ok := syncMetaOf(t, f.store, "eeglab", "discourse_full", f.forum.URL); !ok || !m.LastSyncAt.Equal(f.clk.Now()) {
		t.Errorf("(discourse_full, forum) = %+v, %v, want now", m, ok)
	}
}

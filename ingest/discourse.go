package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// The Discourse sync's bounds (knowledge.md §6.8).
const (
	// DefaultDiscoursePause is the polite pause after each request to a forum.
	DefaultDiscoursePause = time.Second
	// discourseMaxPages bounds one listing: plain, then ?page=1 … ?page=199.
	discourseMaxPages = 200
	// discourseMaxBytes bounds one answer (a topic with its first 20 posts is far below).
	discourseMaxBytes = 8 << 20
	// discourseDefaultWait is a 429's wait without a Retry-After.
	discourseDefaultWait = 10 * time.Second
	// discourseMaxCooked bounds the HTML of one post converted to Markdown; what is kept of
	// it is 5,000 characters, so more would only cost time.
	discourseMaxCooked = 256 << 10
	discourseMaxText   = 5000
	discourseMaxTags   = 50
	// discourseFullEvery is how old the last full listing may get before a run lists in full
	// again (as GitHub's does): an incremental listing can miss a topic for good (one bumped
	// while a run was under way, one whose replies the stop rule passed over).
	discourseFullEvery = 30 * 24 * time.Hour
)

// Sync metadata types of the Discourse sync; the name is the forum's base. discourse_full is
// the last full listing's time.
const (
	metaDiscourse     = "discourse"
	metaDiscourseFull = "discourse_full"
)

// DiscourseOptions are a Discourse source's dependencies.
type DiscourseOptions struct {
	Store *knowledge.Store
	// Client reaches the forums; their URLs come from community configs, so it must be
	// knowledge.NewGuardedClient's (nil makes one with the default options).
	Client *http.Client
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
}

// Discourse syncs the topics of a community's discourse forums into discourse_topics
// (knowledge.md §6.8): each configured category's and tag's listing (else the latest
// topics), in the listings' own order (bumped_at, newest first), stopping at the first topic
// bumped before the last clean sync; every topic listed is fetched for its first post (as
// Markdown), accepted answer, category, tags and counts. A full run (the first one, Full, or
// the last full one over 30 days old) lists everything, and when its listings all ended before
// the page cap deletes the forum's topics they did not list. An answer that is not a listing
// fails the forum.
type Discourse struct {
	store  *knowledge.Store
	client *http.Client
	clk    clock
	log    *slog.Logger
	// Pause is waited after each request (DefaultDiscoursePause; tests set 0).
	Pause time.Duration
}

// NewDiscourse returns a Discourse source.
func NewDiscourse(o DiscourseOptions) (*Discourse, error) {
	if o.Store == nil {
		return nil, errors.New("ingest: NewDiscourse needs a store")
	}
	if o.Client == nil {
		o.Client = knowledge.NewGuardedClient(knowledge.GuardOptions{})
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Discourse{store: o.Store, client: o.Client, clk: newClock(o.Now, o.Sleep), log: o.Logger, Pause: DefaultDiscoursePause}, nil
}

// Type is TypeDiscourse.
func (d *Discourse) Type() string { return TypeDiscourse }

// Has reports whether c names any forum.
func (d *Discourse) Has(c *config.Community) bool { return len(c.Discourse) > 0 }

// Sync syncs every forum of c in turn; a forum that fails is named in Result.Failed and the
// others still run, the error then saying how many failed.
func (d *Discourse) Sync(ctx context.Context, c *config.Community, opts RunOptions, progress func(Progress)) (Result, error) {
	var res Result
	if progress == nil {
		progress = func(Progress) {}
	}
	for _, f := range c.Discourse {
		base := strings.TrimRight(f.URL, "/")
		st, err := d.syncForum(ctx, c.ID, base, f, opts.Full, progress)
		res.Items += st.items
		res.Deleted += st.deleted
		progress(Progress{Source: base, Items: st.items, Pages: st.pages, Done: true, Err: err})
		if err != nil {
			res.Failed = append(res.Failed, SourceError{Source: base, Err: err})
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
	}
	if len(res.Failed) > 0 {
		return res, fmt.Errorf("discourse: %d of %d forums failed: %s: %w", len(res.Failed), len(c.Discourse), res.Failed[0].Source, res.Failed[0].Err)
	}
	return res, nil
}

type discourseRun struct{ items, deleted, pages int }

// discourseListing is one listing to walk: a category's, a tag's or the latest topics.
func discourseListings(base string, f config.Discourse) []string {
	var out []string
	for _, cat := range f.Categories {
		out = append(out, base+"/c/"+url.PathEscape(cat.Slug)+"/"+strconv.Itoa(cat.ID)+".json")
	}
	for _, tag := range f.Tags {
		out = append(out, base+"/tag/"+url.PathEscape(tag)+".json")
	}
	if len(out) == 0 {
		out = append(out, base+"/latest.json")
	}
	return out
}

func (d *Discourse) syncForum(ctx context.Context, id, base string, f config.Discourse, forceFull bool, progress func(Progress)) (discourseRun, error) {
	var st discourseRun
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return st, fmt.Errorf("forum URL %q: want an http or https URL", base)
	}
	var meta, fullMeta knowledge.SyncMeta
	var have, haveFull bool
	err := d.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
		var err error
		if meta, have, err = tx.SyncMeta(metaDiscourse, base); err != nil {
			return err
		}
		fullMeta, haveFull, err = tx.SyncMeta(metaDiscourseFull, base)
		return err
	})
	if err != nil {
		return st, err
	}
	start := d.clk.now()
	full := forceFull || !have || !haveFull || start.Sub(fullMeta.LastSyncAt) > discourseFullEvery
	report := func(waiting time.Time) {
		progress(Progress{Source: base, Items: st.items, Pages: st.pages, Waiting: waiting})
	}

	var cats discourseCategories
	if err := d.getJSON(ctx, base+"/categories.json?include_subcategories=true", &cats, report); err != nil {
		return st, fmt.Errorf("categories: %w", err)
	}
	if cats.CategoryList == nil || cats.CategoryList.Categories == nil {
		return st, fmt.Errorf("categories: %s answered without a category list", base)
	}
	names := cats.names()

	seen := map[int]bool{}
	var listed []int
	complete := true
	for _, listing := range discourseListings(base, f) {
		for page := 0; ; page++ {
			if page >= discourseMaxPages {
				complete = false // a forum larger than the cap: never delete from a partial listing
				break
			}
			u := listing
			if page > 0 {
				u += "?page=" + strconv.Itoa(page)
			}
			var lst discourseList
			if err := d.getJSON(ctx, u, &lst, report); err != nil {
				return st, err
			}
			// A 200 without a listing (a login wall's {"errors":…}, a proxy's {}) is not an
			// empty one: taken as one, a full run would delete every topic and an incremental
			// one record a clean sync past topics it never saw.
			if lst.TopicList == nil || lst.TopicList.Topics == nil {
				return st, fmt.Errorf("GET %s: not a topic listing (no topic_list.topics)%s", u, discourseErrors(lst.Errors))
			}
			st.pages++
			var todo []int
			older := false
			for _, t := range *lst.TopicList.Topics {
				if t.Pinned || t.PinnedGlobally || t.ID <= 0 {
					continue
				}
				if !full {
					if at, ok := t.bumped(); ok && at.Before(meta.LastSyncAt) {
						older = true
						break
					}
				}
				if !seen[t.ID] {
					seen[t.ID] = true
					todo = append(todo, t.ID)
				}
			}
			topics, gone, err := d.fetchTopics(ctx, base, todo, names, report)
			if err != nil {
				return st, err
			}
			for _, t := range todo {
				if !gone[t] {
					listed = append(listed, t)
				}
			}
			if len(topics) > 0 {
				err := d.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
					n, err := tx.UpsertTopics(topics)
					st.items += n
					return err
				})
				if err != nil {
					return st, err
				}
			}
			report(time.Time{})
			if older || lst.TopicList.MoreTopicsURL == "" {
				break
			}
		}
	}

	err = d.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
		if full && complete {
			n, err := tx.DeleteTopicsExcept(base, listed)
			if err != nil {
				return err
			}
			st.deleted = n
		}
		if full {
			// Recorded though a listing hit the page cap: the next full one would hit it too.
			if err := tx.SetSyncMeta(knowledge.SyncMeta{SourceType: metaDiscourseFull, SourceName: base, LastSyncAt: start, Items: len(listed)}); err != nil {
				return err
			}
		}
		return tx.SetSyncMeta(knowledge.SyncMeta{SourceType: metaDiscourse, SourceName: base, LastSyncAt: start, Items: st.items})
	})
	return st, err
}

// fetchTopics fetches each topic; a topic answered 404 or 403 (deleted or made private since
// it was listed) is skipped and reported in gone.
func (d *Discourse) fetchTopics(ctx context.Context, base string, ids []int, names map[int]string, report func(time.Time)) ([]knowledge.Topic, map[int]bool, error) {
	var out []knowledge.Topic
	gone := map[int]bool{}
	for _, tid := range ids {
		var t discourseTopic
		err := d.getJSON(ctx, base+"/t/"+strconv.Itoa(tid)+".json", &t, report)
		var se *HTTPStatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusForbidden || se.Status == http.StatusGone) {
			gone[tid] = true
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if t.ID != tid {
			return nil, nil, fmt.Errorf("topic %d: the answer is topic %d", tid, t.ID)
		}
		out = append(out, t.record(base, names))
	}
	return out, gone, nil
}

// getJSON fetches u (Accept: application/json; 429 and 503 waited out), decodes it into v,
// and pauses politely.
func (d *Discourse) getJSON(ctx context.Context, u string, v any, report func(time.Time)) error {
	resp, err := getRetrying(ctx, d.client, d.clk, u, map[string]string{"Accept": "application/json"}, discourseDefaultWait, report)
	if err == nil {
		err = decodeDiscourse(resp, u, v)
	}
	if d.Pause > 0 {
		if perr := d.clk.sleep(ctx, d.Pause); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

func decodeDiscourse(resp *http.Response, u string, v any) error {
	defer resp.Body.Close()
	body, err := readCapped(resp.Body, discourseMaxBytes, u)
	if resp.StatusCode != http.StatusOK {
		return &HTTPStatusError{URL: u, Status: resp.StatusCode, Msg: errMessage(body)}
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: not a Discourse JSON answer: %v", u, err)
	}
	return nil
}

// discourseCategories is /categories.json with include_subcategories; CategoryList is nil
// when the answer has none.
type discourseCategories struct {
	CategoryList *struct {
		Categories []discourseCategory `json:"categories"`
	} `json:"category_list"`
}

type discourseCategory struct {
	ID              int                 `json:"id"`
	Name            string              `json:"name"`
	SubcategoryList []discourseCategory `json:"subcategory_list"`
}

// names maps every category id, subcategories included, to its name.
func (c discourseCategories) names() map[int]string {
	out := map[int]string{}
	var walk func([]discourseCategory, int)
	walk = func(cs []discourseCategory, depth int) {
		if depth > 3 { // Discourse nests at most three levels
			return
		}
		for _, cat := range cs {
			out[cat.ID] = cutRunes(strings.TrimSpace(cat.Name), 200)
			walk(cat.SubcategoryList, depth+1)
		}
	}
	if c.CategoryList != nil {
		walk(c.CategoryList.Categories, 0)
	}
	return out
}

// discourseList is a topic listing page (latest, a category's, a tag's). TopicList and its
// Topics are nil when the answer has none (then it is no listing); Errors is what Discourse
// sends instead of one.
type discourseList struct {
	TopicList *struct {
		MoreTopicsURL string                `json:"more_topics_url"`
		Topics        *[]discourseListTopic `json:"topics"`
	} `json:"topic_list"`
	Errors json.RawMessage `json:"errors"`
}

// discourseErrors is ": " and the first of Discourse's errors ({"errors":["…"]}), cut short,
// or "".
func discourseErrors(raw json.RawMessage) string {
	var errs []string
	if json.Unmarshal(raw, &errs) != nil || len(errs) == 0 {
		return ""
	}
	return ": " + cutRunes(strings.TrimSpace(errs[0]), 200)
}

type discourseListTopic struct {
	ID             int     `json:"id"`
	Pinned         bool    `json:"pinned"`
	PinnedGlobally bool    `json:"pinned_globally"`
	CreatedAt      string  `json:"created_at"`
	LastPostedAt   *string `json:"last_posted_at"`
	BumpedAt       *string `json:"bumped_at"`
}

// bumped is the listing's sort key, bumped_at; else the last post's time, else the creation's.
// An auto-bump or a moderator moves bumped_at without a post, so the stop rule must read this
// key and not last_posted_at, or a bumped old topic on top would end the listing early.
func (t discourseListTopic) bumped() (time.Time, bool) {
	s := t.CreatedAt
	switch {
	case t.BumpedAt != nil && *t.BumpedAt != "":
		s = *t.BumpedAt
	case t.LastPostedAt != nil && *t.LastPostedAt != "":
		s = *t.LastPostedAt
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	return at, err == nil
}

// discourseTopic is /t/{id}.json: the topic and its first posts.
type discourseTopic struct {
	ID             int           `json:"id"`
	Title          string        `json:"title"`
	Slug           string        `json:"slug"`
	CategoryID     int           `json:"category_id"`
	Tags           discourseTags `json:"tags"`
	PostsCount     int           `json:"posts_count"`
	ReplyCount     int           `json:"reply_count"`
	LikeCount      int           `json:"like_count"`
	Views          int           `json:"views"`
	CreatedAt      string        `json:"created_at"`
	LastPostedAt   *string       `json:"last_posted_at"`
	AcceptedAnswer *struct {
		PostNumber int    `json:"post_number"`
		Excerpt    string `json:"excerpt"`
	} `json:"accepted_answer"`
	PostStream struct {
		Posts []discoursePost `json:"posts"`
	} `json:"post_stream"`
}

type discoursePost struct {
	PostNumber     int    `json:"post_number"`
	Cooked         string `json:"cooked"`
	AcceptedAnswer bool   `json:"accepted_answer"`
	LikeCount      *int   `json:"like_count"`
	ActionsSummary []struct {
		ID    int `json:"id"`
		Count int `json:"count"`
	} `json:"actions_summary"`
}

// likes is the post's like count: like_count, else the like action's (id 2) count.
func (p discoursePost) likes() int {
	if p.LikeCount != nil {
		return *p.LikeCount
	}
	for _, a := range p.ActionsSummary {
		if a.ID == 2 {
			return a.Count
		}
	}
	return 0
}

// discourseTags reads a topic's tags as names, whether Discourse sends strings or (newer
// versions) objects with a name.
type discourseTags []string

func (t *discourseTags) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		*t = nil
		return nil // null or not a list: no tags
	}
	var out []string
	for _, r := range raw {
		if len(out) == discourseMaxTags {
			break
		}
		var s string
		if json.Unmarshal(r, &s) != nil {
			var o struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(r, &o) != nil {
				continue
			}
			s = o.Name
		}
		if s = cutRunes(strings.TrimSpace(s), 100); s != "" {
			out = append(out, s)
		}
	}
	*t = out
	return nil
}

// record is the topic's row (§6.8): the first post as Markdown; the accepted answer is the
// post flagged so, else the post the topic names as accepted (its excerpt when that post is
// not among those sent), else the most-liked reply with likes.
func (t discourseTopic) record(base string, names map[int]string) knowledge.Topic {
	rec := knowledge.Topic{
		ForumURL:  base,
		TopicID:   t.ID,
		Title:     cutRunes(strings.TrimSpace(t.Title), discourseMaxText),
		Category:  names[t.CategoryID],
		Tags:      []string(t.Tags),
		Replies:   max(t.ReplyCount, 0),
		Likes:     max(t.LikeCount, 0),
		Views:     max(t.Views, 0),
		URL:       base + "/t/" + url.PathEscape(t.Slug) + "/" + strconv.Itoa(t.ID),
		CreatedAt: cutRunes(t.CreatedAt, 64),
	}
	if t.Slug == "" || t.Slug == "." || t.Slug == ".." {
		rec.URL = base + "/t/" + strconv.Itoa(t.ID) // Discourse redirects to the slug
	}
	if t.LastPostedAt != nil {
		rec.LastPostedAt = cutRunes(*t.LastPostedAt, 64)
	}
	posts := t.PostStream.Posts
	for _, p := range posts {
		if p.PostNumber == 1 {
			rec.FirstPost = discourseMarkdown(p.Cooked, base)
			break
		}
	}
	if len(posts) > 1 || t.PostsCount > 1 {
		var best *discoursePost
		for i := range posts {
			p := &posts[i]
			if p.AcceptedAnswer || (t.AcceptedAnswer != nil && p.PostNumber == t.AcceptedAnswer.PostNumber && p.PostNumber > 1) {
				best = p
				break
			}
		}
		if best != nil {
			rec.AcceptedAnswer = discourseMarkdown(best.Cooked, base)
		} else if t.AcceptedAnswer != nil && t.AcceptedAnswer.PostNumber > 1 {
			rec.AcceptedAnswer = discourseMarkdown(t.AcceptedAnswer.Excerpt, base)
		} else {
			for i := range posts {
				p := &posts[i]
				if p.PostNumber > 1 && p.likes() > 0 && (best == nil || p.likes() > best.likes()) {
					best = p
				}
			}
			if best != nil {
				rec.AcceptedAnswer = discourseMarkdown(best.Cooked, base)
			}
		}
	}
	return rec
}

// discourseMarkdown is a post's cooked HTML as Markdown: runs of blank lines cut to one,
// trimmed, capped at 5,000 characters.
func discourseMarkdown(cooked, base string) string {
	if len(cooked) > discourseMaxCooked {
		cooked = cooked[:discourseMaxCooked]
	}
	md := knowledge.Convert([]byte(cooked), "text/html", "html", base).Markdown
	for strings.Contains(md, "\n\n\n") {
		md = strings.ReplaceAll(md, "\n\n\n", "\n\n")
	}
	return cutRunes(strings.TrimSpace(md), discourseMaxText)
}

// Compile-time check that the source types implement Source.
var (
	_ Source = (*GitHub)(nil)
	_ Source = (*Discourse)(nil)
)

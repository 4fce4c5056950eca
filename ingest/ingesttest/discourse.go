package ingesttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DiscourseCategory is one category of a fake forum; Parent is its parent's id, or 0.
type DiscourseCategory struct {
	ID           int
	Name, Slug   string
	Parent       int
	Description  string
	TopicsInList int
}

// DiscoursePost is one post of a fake topic. Cooked is its HTML as Discourse renders it.
type DiscoursePost struct {
	Username  string
	Cooked    string
	Likes     int
	CreatedAt time.Time
}

// DiscourseTopic is one topic of a fake forum. Posts[0] is the first post.
type DiscourseTopic struct {
	ID         int
	Title      string
	Slug       string
	CategoryID int
	Tags       []string
	Pinned     bool
	Views      int
	Posts      []DiscoursePost
	// Accepted is the post number the discourse-solved plugin marks as the answer, or 0.
	Accepted int
	// CreatedAt and BumpedAt default to the clock when added; a reply bumps the topic.
	CreatedAt, BumpedAt time.Time
}

// DiscourseRequest is one request the fake answered.
type DiscourseRequest struct {
	Path, Query, Accept string
	Status              int
}

// Discourse is a fake Discourse forum's JSON API: /latest.json, /c/{slug}/{id}.json,
// /tag/{tag}.json (each with ?page=N, 30 topics a page, pinned topics first, then by
// bumped_at, more_topics_url while more follow), /t/{id}.json (the topic with its first 20
// posts, actions_summary likes, accepted_answer as discourse-solved adds it) and
// /categories.json. Queue429 makes the next requests answer 429 with a Retry-After, QueueAt
// a path's next requests anything.
type Discourse struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	now      func() time.Time
	cats     []DiscourseCategory
	topics   map[int]*DiscourseTopic
	perPage  int
	requests []DiscourseRequest
	limited  []string // Retry-After values of queued 429s ("" for none)
	canned   map[string][]CannedReply
}

// NewDiscourse starts a fake forum, closed when the test ends.
func NewDiscourse(tb testing.TB) *Discourse {
	d := &Discourse{now: time.Now, topics: map[int]*DiscourseTopic{}, perPage: 30, canned: map[string][]CannedReply{}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	d.URL = d.srv.URL
	tb.Cleanup(d.srv.Close)
	return d
}

// SetClock makes now the forum's clock.
func (d *Discourse) SetClock(now func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.now = now
}

// AddCategory adds categories.
func (d *Discourse) AddCategory(cs ...DiscourseCategory) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cats = append(d.cats, cs...)
}

// AddTopic adds topics; zero times become the clock's now.
func (d *Discourse) AddTopic(ts ...DiscourseTopic) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now().UTC()
	for _, t := range ts {
		t := t
		if t.CreatedAt.IsZero() {
			t.CreatedAt = now
		}
		if t.Slug == "" {
			t.Slug = dcSlug(t.Title)
		}
		for i := range t.Posts {
			if t.Posts[i].CreatedAt.IsZero() {
				t.Posts[i].CreatedAt = t.CreatedAt
			}
			if t.Posts[i].Username == "" {
				t.Posts[i].Username = "sam"
			}
		}
		if t.BumpedAt.IsZero() {
			t.BumpedAt = t.CreatedAt
			if n := len(t.Posts); n > 0 {
				t.BumpedAt = t.Posts[n-1].CreatedAt
			}
		}
		d.topics[t.ID] = &t
	}
}

// Reply adds a post to a topic now, which bumps it.
func (d *Discourse) Reply(id int, p DiscoursePost) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.topics[id]
	if t == nil {
		panic(fmt.Sprintf("ingesttest: no topic %d", id))
	}
	p.CreatedAt = d.now().UTC()
	if p.Username == "" {
		p.Username = "alex"
	}
	t.Posts = append(t.Posts, p)
	t.BumpedAt = p.CreatedAt
}

// Edit changes a topic without bumping it (an edit does not).
func (d *Discourse) Edit(id int, fn func(*DiscourseTopic)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(d.topics[id])
}

// Delete removes a topic: listings drop it and /t/{id}.json answers 404.
func (d *Discourse) Delete(id int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.topics, id)
}

// Queue429 makes the next requests answer 429, one per value, with that Retry-After ("" for
// none), as Discourse's rate limiter does.
func (d *Discourse) Queue429(retryAfter ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limited = append(d.limited, retryAfter...)
}

// QueueAt makes the next requests for path ("/latest.json") get these answers, one each, in
// order: what a forum behind a login wall, a proxy or a broken plugin may send with a 200.
func (d *Discourse) QueueAt(path string, replies ...CannedReply) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.canned[path] = append(d.canned[path], replies...)
}

// Bump moves a topic to the top of the listings without a post (bumped_at now, last_posted_at
// unchanged), as a category's auto-bump or a moderator's "reset bump date" does.
func (d *Discourse) Bump(id int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.topics[id]
	if t == nil {
		panic(fmt.Sprintf("ingesttest: no topic %d", id))
	}
	t.BumpedAt = d.now().UTC()
}

// Requests returns the requests answered so far.
func (d *Discourse) Requests() []DiscourseRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.requests)
}

// Count returns how many requests had a path starting with prefix.
func (d *Discourse) Count(prefix string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, r := range d.requests {
		if strings.HasPrefix(r.Path, prefix) {
			n++
		}
	}
	return n
}

// ResetRequests forgets the requests answered so far.
func (d *Discourse) ResetRequests() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = nil
}

func (d *Discourse) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	status := d.answer(w, r)
	d.requests = append(d.requests, DiscourseRequest{Path: r.URL.Path, Query: r.URL.RawQuery, Accept: r.Header.Get("Accept"), Status: status})
}

func (d *Discourse) answer(w http.ResponseWriter, r *http.Request) int {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Discourse-Route", "list/latest")
	if q := d.canned[r.URL.Path]; len(q) > 0 {
		d.canned[r.URL.Path] = q[1:]
		for k, v := range q[0].Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(q[0].Status)
		fmt.Fprint(w, q[0].Body)
		return q[0].Status
	}
	if len(d.limited) > 0 {
		ra := d.limited[0]
		d.limited = d.limited[1:]
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.Header().Set("Discourse-Rate-Limit-Error-Code", "ip_10_secs_limit")
		return dcJSON(w, http.StatusTooManyRequests, map[string]any{
			"errors":     []string{"You’ve performed this action too many times. Please wait a few seconds before trying again."},
			"error_type": "rate_limit", "extras": map[string]any{"wait_seconds": 10, "time_left": "10 seconds"},
		})
	}
	if r.Method != http.MethodGet {
		return dcNotFound(w)
	}
	page := 0
	if s := r.URL.Query().Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return dcJSON(w, http.StatusBadRequest, map[string]any{"errors": []string{"page is invalid"}, "error_type": "invalid_parameters"})
		}
		page = n
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/latest.json":
		return d.list(w, func(*DiscourseTopic) bool { return true }, page, "/latest?no_definitions=true&page=")
	case r.URL.Path == "/categories.json":
		return d.categories(w)
	case len(parts) == 3 && parts[0] == "c" && strings.HasSuffix(parts[2], ".json"):
		id, err := strconv.Atoi(strings.TrimSuffix(parts[2], ".json"))
		if err != nil || !d.hasCategory(id, parts[1]) {
			return dcNotFound(w)
		}
		return d.list(w, func(t *DiscourseTopic) bool { return t.CategoryID == id || d.parentOf(t.CategoryID) == id }, page,
			fmt.Sprintf("/c/%s/%d/l/latest?no_definitions=true&page=", parts[1], id))
	case len(parts) == 2 && parts[0] == "tag" && strings.HasSuffix(parts[1], ".json"):
		tag := strings.TrimSuffix(parts[1], ".json")
		return d.list(w, func(t *DiscourseTopic) bool { return slices.Contains(t.Tags, tag) }, page, "/tag/"+tag+"/l/latest?page=")
	case (len(parts) == 2 || len(parts) == 3) && parts[0] == "t" && strings.HasSuffix(parts[len(parts)-1], ".json"):
		id, err := strconv.Atoi(strings.TrimSuffix(parts[len(parts)-1], ".json"))
		t := d.topics[id]
		if err != nil || t == nil {
			return dcNotFound(w)
		}
		return dcJSON(w, http.StatusOK, d.topicJSON(t))
	}
	return dcNotFound(w)
}

func (d *Discourse) hasCategory(id int, slug string) bool {
	for _, c := range d.cats {
		if c.ID == id && c.Slug == slug {
			return true
		}
	}
	return false
}

func (d *Discourse) parentOf(id int) int {
	for _, c := range d.cats {
		if c.ID == id {
			return c.Parent
		}
	}
	return 0
}

// list writes one page of the topics keep selects: pinned first, then by bumped_at, newest first.
func (d *Discourse) list(w http.ResponseWriter, keep func(*DiscourseTopic) bool, page int, more string) int {
	var ts []*DiscourseTopic
	for _, t := range d.topics {
		if keep(t) {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b *DiscourseTopic) int {
		if a.Pinned != b.Pinned {
			if a.Pinned {
				return -1
			}
			return 1
		}
		if c := b.BumpedAt.Compare(a.BumpedAt); c != 0 {
			return c
		}
		return b.ID - a.ID
	})
	from := min(page*d.perPage, len(ts))
	to := min(from+d.perPage, len(ts))
	topics := []map[string]any{}
	users := []map[string]any{}
	for _, t := range ts[from:to] {
		topics = append(topics, d.listTopicJSON(t))
		users = append(users, map[string]any{"id": 1000 + t.ID, "username": t.Posts[0].Username, "name": "", "avatar_template": "/user_avatar/forum/" + t.Posts[0].Username + "/{size}/2_2.png", "trust_level": 1})
	}
	tl := map[string]any{"can_create_topic": false, "per_page": d.perPage, "top_tags": []string{}, "topics": topics}
	if to < len(ts) {
		tl["more_topics_url"] = more + strconv.Itoa(page+1)
	}
	return dcJSON(w, http.StatusOK, map[string]any{"users": users, "primary_groups": []any{}, "flair_groups": []any{}, "topic_list": tl})
}

func (d *Discourse) categories(w http.ResponseWriter) int {
	var top []map[string]any
	sub := map[int][]map[string]any{}
	for _, c := range d.cats {
		m := map[string]any{
			"id": c.ID, "name": c.Name, "color": "0088CC", "text_color": "FFFFFF", "slug": c.Slug,
			"topic_count": c.TopicsInList, "post_count": 0, "position": c.ID, "description": c.Description,
			"description_text": c.Description, "topic_url": "/t/about-the-" + c.Slug + "-category/1",
			"read_restricted": false, "permission": nil, "notification_level": 1, "has_children": false,
			"sort_order": "", "sort_ascending": nil, "show_subcategory_list": false, "num_featured_topics": 3,
			"default_view": nil, "subcategory_list_style": "rows_with_featured_topics", "default_top_period": "all",
			"minimum_required_tags": 0, "navigate_to_first_post_after_read": false, "uploaded_logo": nil,
			"uploaded_background": nil, "subcategory_ids": []int{},
		}
		if c.Parent != 0 {
			m["parent_category_id"] = c.Parent
			sub[c.Parent] = append(sub[c.Parent], m)
			continue
		}
		top = append(top, m)
	}
	for _, m := range top {
		id := m["id"].(int)
		if s := sub[id]; len(s) > 0 {
			m["subcategory_list"] = s
			m["has_children"] = true
			ids := []int{}
			for _, x := range s {
				ids = append(ids, x["id"].(int))
			}
			m["subcategory_ids"] = ids
		}
	}
	if top == nil {
		top = []map[string]any{}
	}
	return dcJSON(w, http.StatusOK, map[string]any{"category_list": map[string]any{"can_create_category": false, "can_create_topic": false, "categories": top}})
}

func (d *Discourse) likes(t *DiscourseTopic) int {
	n := 0
	for _, p := range t.Posts {
		n += p.Likes
	}
	return n
}

func (d *Discourse) listTopicJSON(t *DiscourseTopic) map[string]any {
	last := t.Posts[len(t.Posts)-1]
	return map[string]any{
		"id": t.ID, "title": t.Title, "fancy_title": t.Title, "slug": t.Slug,
		"posts_count": len(t.Posts), "reply_count": len(t.Posts) - 1, "highest_post_number": len(t.Posts),
		"image_url": nil, "created_at": dcTime(t.CreatedAt), "last_posted_at": dcTime(last.CreatedAt),
		"bumped": true, "bumped_at": dcTime(t.BumpedAt), "archetype": "regular", "unseen": false,
		"pinned": t.Pinned, "unpinned": nil, "visible": true, "closed": false, "archived": false,
		"bookmarked": nil, "liked": nil, "tags": dcTags(t.Tags), "tags_descriptions": map[string]any{},
		"views": t.Views, "like_count": d.likes(t), "has_summary": false, "last_poster_username": last.Username,
		"category_id": t.CategoryID, "pinned_globally": false, "featured_link": nil,
		"has_accepted_answer": t.Accepted > 0, "can_have_answer": true,
		"posters": []map[string]any{{"extras": "latest single", "description": "Original Poster, Most Recent Poster", "user_id": 1000 + t.ID, "primary_group_id": nil, "flair_group_id": nil}},
	}
}

func (d *Discourse) topicJSON(t *DiscourseTopic) map[string]any {
	posts := []map[string]any{}
	stream := []int{}
	for i, p := range t.Posts {
		n := i + 1
		id := t.ID*100 + n
		stream = append(stream, id)
		if i >= 20 { // chunk_size: the first 20 posts come with the topic
			continue
		}
		posts = append(posts, map[string]any{
			"id": id, "name": "", "username": p.Username, "avatar_template": "/user_avatar/forum/" + p.Username + "/{size}/2_2.png",
			"created_at": dcTime(p.CreatedAt), "cooked": p.Cooked, "post_number": n, "post_type": 1,
			"updated_at": dcTime(p.CreatedAt), "reply_count": 0, "reply_to_post_number": nil, "quote_count": 0,
			"incoming_link_count": 0, "reads": 5, "readers_count": 4, "score": 1.2, "yours": false,
			"topic_id": t.ID, "topic_slug": t.Slug, "display_username": "", "primary_group_name": nil,
			"flair_name": nil, "version": 1, "can_edit": false, "can_delete": false, "can_recover": false,
			"can_see_hidden_post": false, "can_wiki": false, "read": true, "user_title": nil, "bookmarked": false,
			"actions_summary": []map[string]any{{"id": 2, "count": p.Likes}}, "moderator": false, "admin": false,
			"staff": false, "user_id": 1000 + i, "hidden": false, "trust_level": 1, "deleted_at": nil,
			"user_deleted": false, "edit_reason": nil, "can_view_edit_history": true, "wiki": false,
			"accepted_answer": t.Accepted == n, "can_accept_answer": false, "can_unaccept_answer": false,
		})
	}
	last := t.Posts[len(t.Posts)-1]
	m := map[string]any{
		"post_stream":     map[string]any{"posts": posts, "stream": stream},
		"timeline_lookup": [][]int{{1, 0}}, "suggested_topics": []any{}, "tags": dcTags(t.Tags),
		"tags_descriptions": map[string]any{}, "id": t.ID, "title": t.Title, "fancy_title": t.Title,
		"posts_count": len(t.Posts), "created_at": dcTime(t.CreatedAt), "views": t.Views,
		"reply_count": len(t.Posts) - 1, "like_count": d.likes(t), "last_posted_at": dcTime(last.CreatedAt),
		"visible": true, "closed": false, "archived": false, "has_summary": false, "archetype": "regular",
		"slug": t.Slug, "category_id": t.CategoryID, "word_count": 120, "deleted_at": nil, "user_id": 1000,
		"featured_link": nil, "pinned_globally": false, "pinned_at": nil, "pinned_until": nil, "image_url": nil,
		"slow_mode_seconds": 0, "draft": nil, "draft_key": fmt.Sprintf("topic_%d", t.ID), "draft_sequence": nil,
		"unpinned": nil, "pinned": t.Pinned, "current_post_number": 1, "highest_post_number": len(t.Posts),
		"deleted_by": nil, "actions_summary": []any{}, "chunk_size": 20, "bookmarked": false,
		"topic_timer": nil, "message_bus_last_id": 3, "participant_count": len(t.Posts),
		"show_read_indicator": false, "thumbnails": nil, "slow_mode_enabled_until": nil,
		"details": map[string]any{"can_edit": false, "notification_level": 1, "participants": []any{},
			"created_by": map[string]any{"id": 1000, "username": t.Posts[0].Username}, "last_poster": map[string]any{"id": 1000, "username": last.Username}},
	}
	if t.Accepted > 0 && t.Accepted <= len(t.Posts) {
		m["accepted_answer"] = map[string]any{"post_number": t.Accepted, "username": t.Posts[t.Accepted-1].Username,
			"excerpt": dcExcerpt(t.Posts[t.Accepted-1].Cooked), "name": ""}
	}
	return m
}

// dcExcerpt is a short plain excerpt of cooked HTML, as discourse-solved sends.
func dcExcerpt(cooked string) string {
	var b strings.Builder
	in := false
	for _, r := range cooked {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "&hellip;"
	}
	return s
}

func dcTags(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

func dcTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func dcSlug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if s == "" {
		return "topic"
	}
	return s
}

func dcJSON(w http.ResponseWriter, status int, v any) int {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
	return status
}

func dcNotFound(w http.ResponseWriter) int {
	return dcJSON(w, http.StatusNotFound, map[string]any{"errors": []string{"The requested URL or resource could not be found."}, "error_type": "not_found"})
}

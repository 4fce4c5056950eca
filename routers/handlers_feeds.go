package routers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/toolresults"
)

// The public feeds (knowledge.md §7.5, §7.6): GET /{c}/faq and GET /{c}/citations, no auth,
// for a community whose public_feeds turns them on, cached an hour by whoever sits between.

// FeedReader reads the feeds from a community's database (*knowledge.Store).
type FeedReader interface {
	FAQFeed(ctx context.Context, id string, q knowledge.FAQFeedQuery) (knowledge.FAQFeed, error)
	CitationsFeed(ctx context.Context, id string, dois []string) (knowledge.CitationsFeed, error)
}

const feedCacheControl = "public, max-age=3600"

var (
	errFAQFeedOff       = &apiError{http.StatusNotFound, "Public FAQ feed is not enabled for this community."}
	errCitationsFeedOff = &apiError{http.StatusNotFound, "Public citations feed is not enabled for this community."}
	errFAQFeed          = &apiError{http.StatusInternalServerError, "An unexpected error occurred while building the FAQ feed."}
	errCitationsFeed    = &apiError{http.StatusInternalServerError, "An unexpected error occurred while building the citations feed."}
)

// queryCheck reads query parameters as FastAPI does (the last of repeated ones), collecting
// its 422 items.
type queryCheck struct {
	c     echo.Context
	items []detailItem
}

func (q *queryCheck) fail(typ, name, msg string, input any, ctx map[string]any) {
	q.items = append(q.items, detailItem{Type: typ, Loc: []any{"query", name}, Msg: msg, Input: toolresults.Echo(input), Ctx: ctx})
}

func (q *queryCheck) raw(name string) (string, bool) {
	vs := q.c.QueryParams()[name]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

func (q *queryCheck) str(name string, maxChars int) string {
	v, _ := q.raw(name)
	if utf8.RuneCountInString(v) > maxChars {
		q.items = append(q.items, toolresults.StringTooLong([]any{"query", name}, v, maxChars))
		return ""
	}
	return v
}

func (q *queryCheck) integer(name string, def, lo, hi int) int {
	v, ok := q.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		q.fail("int_parsing", name, "Input should be a valid integer, unable to parse string as an integer", v, nil)
		return def
	}
	return int(q.bounds(name, v, float64(n), float64(lo), float64(hi), lo, hi))
}

func (q *queryCheck) number(name string, def, lo, hi float64) float64 {
	v, ok := q.raw(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		q.fail("float_parsing", name, "Input should be a valid number, unable to parse string as a number", v, nil)
		return def
	}
	return q.bounds(name, v, f, lo, hi, pyFloat(lo), pyFloat(hi))
}

// pyFloat writes a bound as Python writes a float (0.0, 1.0, 0.5), as pydantic's messages do.
type pyFloat float64

func (f pyFloat) String() string {
	if f == pyFloat(math.Trunc(float64(f))) {
		return strconv.FormatFloat(float64(f), 'f', 1, 64)
	}
	return strconv.FormatFloat(float64(f), 'g', -1, 64)
}

func (f pyFloat) MarshalJSON() ([]byte, error) { return []byte(f.String()), nil }

// bounds checks lo ≤ x ≤ hi (hi < lo: no upper bound); ctxLo and ctxHi are the bounds as
// pydantic writes them in ctx.
func (q *queryCheck) bounds(name, raw string, x, lo, hi float64, ctxLo, ctxHi any) float64 {
	switch {
	case x < lo:
		q.fail("greater_than_equal", name, fmt.Sprintf("Input should be greater than or equal to %v", ctxLo), raw, map[string]any{"ge": ctxLo})
		return lo
	case hi >= lo && x > hi:
		q.fail("less_than_equal", name, fmt.Sprintf("Input should be less than or equal to %v", ctxHi), raw, map[string]any{"le": ctxHi})
		return hi
	}
	return x
}

type feedEntry struct {
	Question         string   `json:"question"`
	Answer           string   `json:"answer"`
	Tags             []string `json:"tags"`
	Category         string   `json:"category"`
	QualityScore     float64  `json:"quality_score"`
	MessageCount     int      `json:"message_count"`
	FirstMessageDate string   `json:"first_message_date"`
	ThreadURL        string   `json:"thread_url"`
}

type faqFeedBody struct {
	CommunityID string      `json:"community_id"`
	Total       int         `json:"total"`
	Limit       int         `json:"limit"`
	Offset      int         `json:"offset"`
	Entries     []feedEntry `json:"entries"`
}

// faqFeed is GET /{c}/faq (§7.5).
func (s *Server) faqFeed(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	cfg := cc.cfg
	if cfg.PublicFeeds == nil || !cfg.PublicFeeds.FAQ {
		return errFAQFeedOff
	}
	qc := &queryCheck{c: c}
	q := knowledge.FAQFeedQuery{
		Q:          qc.str("q", knowledge.MaxFeedQueryChars),
		Category:   qc.str("category", knowledge.MaxFeedCategoryChars),
		MinQuality: qc.number("min_quality", 0, 0, 1),
		Limit:      qc.integer("limit", knowledge.DefaultFeedLimit, 1, knowledge.MaxFeedLimit),
		Offset:     qc.integer("offset", 0, 0, -1),
	}
	if len(qc.items) > 0 {
		return &validationError{items: qc.items}
	}
	body := faqFeedBody{CommunityID: cfg.ID, Limit: q.Limit, Offset: q.Offset, Entries: []feedEntry{}}
	if s.deps.Feeds != nil {
		feed, err := s.deps.Feeds.FAQFeed(c.Request().Context(), cfg.ID, q)
		switch {
		case errors.Is(err, knowledge.ErrUnreadable):
			return errKnowledgeUnavailable
		case err != nil:
			s.log.Error("building the FAQ feed", slog.String("community", cfg.ID), slog.Any("error", err))
			return errFAQFeed
		}
		body.Total = feed.Total
		for _, e := range feed.Entries {
			body.Entries = append(body.Entries, feedEntry{Question: e.Question, Answer: e.Answer, Tags: e.Tags, Category: e.Category,
				QualityScore: e.QualityScore, MessageCount: e.MessageCount, FirstMessageDate: e.FirstMessageDate, ThreadURL: e.ThreadURL})
		}
	}
	c.Response().Header().Set("Cache-Control", feedCacheControl)
	return c.JSON(http.StatusOK, body)
}

// yearCounts is a year → count map written with its keys in ascending numeric order (a JSON
// object's keys are strings, and "999" sorts after "2016").
type yearCounts map[int]int

func (y yearCounts) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, year := range knowledge.Years(y) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":%d`, year, y[year])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type citationsFeedBody struct {
	CommunityID   string                `json:"community_id"`
	Total         int                   `json:"total"`
	PerYear       yearCounts            `json:"per_year"`
	ByPaper       map[string]yearCounts `json:"by_paper"`
	CanonicalDOIs []string              `json:"canonical_dois"`
	Labels        map[string]string     `json:"labels"`
}

// citationsFeed is GET /{c}/citations (§7.6).
func (s *Server) citationsFeed(c echo.Context) error {
	cc, ok := s.community(c)
	if !ok {
		return errNotFound
	}
	cfg := cc.cfg
	if cfg.PublicFeeds == nil || !cfg.PublicFeeds.Citations {
		return errCitationsFeedOff
	}
	body := citationsFeedBody{CommunityID: cfg.ID, PerYear: yearCounts{}, ByPaper: map[string]yearCounts{},
		CanonicalDOIs: []string{}, Labels: map[string]string{}}
	if ci := cfg.Citations; ci != nil {
		body.CanonicalDOIs = append(body.CanonicalDOIs, ci.DOIs...)
		for k, v := range ci.PaperLabels {
			body.Labels[k] = v
		}
	}
	if s.deps.Feeds != nil {
		// The configured DOIs only, so by_paper and canonical_dois name the same papers.
		feed, err := s.deps.Feeds.CitationsFeed(c.Request().Context(), cfg.ID, body.CanonicalDOIs)
		switch {
		case errors.Is(err, knowledge.ErrUnreadable):
			return errKnowledgeUnavailable
		case err != nil:
			s.log.Error("building the citations feed", slog.String("community", cfg.ID), slog.Any("error", err))
			return errCitationsFeed
		}
		body.Total, body.PerYear = feed.Total, yearCounts(feed.PerYear)
		for doi, years := range feed.ByPaper {
			body.ByPaper[doi] = yearCounts(years)
		}
	}
	c.Response().Header().Set("Cache-Control", feedCacheControl)
	return c.JSON(http.StatusOK, body)
}

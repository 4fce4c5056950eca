package ingesttest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// S2Paper is one paper of the fake Semantic Scholar.
type S2Paper struct {
	PaperID  string // 40 hex digits
	Title    string
	Abstract string
	Year     int
	// PDF is the open-access PDF's URL, "" when none.
	PDF       string
	DOI, PMID string
}

// S2Request is one request the fake answered.
type S2Request struct {
	Query  url.Values
	APIKey string
	Status int
}

// SemanticScholar is a fake Semantic Scholar Graph API
// (https://api.semanticscholar.org/api-docs/graph): GET /graph/v1/paper/search with query,
// limit (1–100), offset and fields, answering {total, offset, next, data} with only the
// fields asked for (paperId always). With a key set, requests without it get 403.
type SemanticScholar struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	key      string
	papers   []S2Paper
	requests []S2Request
	queued   cannedQueue
}

// NewSemanticScholar starts a fake Semantic Scholar, closed when the test ends.
func NewSemanticScholar(tb testing.TB) *SemanticScholar {
	s := &SemanticScholar{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// SetKey makes the server require the x-api-key header to be key.
func (s *SemanticScholar) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Add adds papers.
func (s *SemanticScholar) Add(ps ...S2Paper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.papers = append(s.papers, ps...)
}

// Queue makes the next requests get these answers, in order.
func (s *SemanticScholar) Queue(replies ...CannedReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued = append(s.queued, replies...)
}

// Requests returns the requests answered so far.
func (s *SemanticScholar) Requests() []S2Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *SemanticScholar) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := S2Request{Query: r.URL.Query(), APIKey: r.Header.Get("x-api-key")}
	w.Header().Set("Content-Type", "application/json")
	if status, ok := s.queued.serveNext(w, ""); ok {
		rec.Status = status
		s.requests = append(s.requests, rec)
		return
	}
	status, body := s.answer(r)
	rec.Status = status
	s.requests = append(s.requests, rec)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

var s2Fields = []string{"paperId", "title", "abstract", "year", "url", "openAccessPdf", "externalIds", "venue", "authors"}

func (s *SemanticScholar) answer(r *http.Request) (int, any) {
	if s.key != "" && r.Header.Get("x-api-key") != s.key {
		return http.StatusForbidden, map[string]any{"message": "Forbidden"}
	}
	if r.URL.Path != "/graph/v1/paper/search" {
		return http.StatusNotFound, map[string]any{"error": "Not found"}
	}
	q := r.URL.Query()
	if q.Get("query") == "" {
		return http.StatusBadRequest, map[string]any{"error": "Missing required parameter: 'query'"}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return http.StatusBadRequest, map[string]any{"error": "Unacceptable query params: [limit=" + v + "] limit must be <= 100"}
		}
		limit = n
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	fields := []string{"paperId", "title"}
	if f := q.Get("fields"); f != "" {
		fields = []string{"paperId"}
		for _, name := range strings.Split(f, ",") {
			if !slices.Contains(s2Fields, name) {
				return http.StatusBadRequest, map[string]any{"error": "Unrecognized or unsupported fields: [" + name + "]"}
			}
			fields = append(fields, name)
		}
	}
	var hits []S2Paper
	for _, p := range s.papers {
		if matches(p.Title+" "+p.Abstract, q.Get("query")) {
			hits = append(hits, p)
		}
	}
	data := []any{}
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		data = append(data, s2JSON(hits[i], fields))
	}
	out := map[string]any{"total": len(hits), "offset": offset, "data": data}
	if offset+limit < len(hits) {
		out["next"] = offset + limit
	}
	return http.StatusOK, out
}

func s2JSON(p S2Paper, fields []string) map[string]any {
	m := map[string]any{}
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, f := range fields {
		switch f {
		case "paperId":
			m[f] = p.PaperID
		case "title":
			m[f] = p.Title
		case "abstract":
			m[f] = null(p.Abstract)
		case "year":
			if p.Year > 0 {
				m[f] = p.Year
			} else {
				m[f] = nil
			}
		case "url":
			m[f] = "https://www.semanticscholar.org/paper/" + p.PaperID
		case "openAccessPdf":
			if p.PDF != "" {
				m[f] = map[string]any{"url": p.PDF, "status": "GREEN", "license": "CCBY"}
			} else {
				m[f] = nil
			}
		case "externalIds":
			ids := map[string]any{"CorpusId": 1000 + len(p.PaperID)}
			if p.DOI != "" {
				ids["DOI"] = p.DOI
			}
			if p.PMID != "" {
				ids["PubMed"] = p.PMID
			}
			m[f] = ids
		case "venue":
			m[f] = ""
		case "authors":
			m[f] = []any{}
		}
	}
	return m
}

package ingesttest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Work is one work of the fake OpenAlex.
type Work struct {
	// ID is the bare OpenAlex id, "W2741809807"; it is served as https://openalex.org/{ID}.
	ID    string
	Title string
	// Abstract is served as an abstract_inverted_index (words split at spaces), as OpenAlex
	// serves every abstract.
	Abstract string
	// DOI is bare ("10.7717/peerj.4361"); it is served as https://doi.org/{DOI}.
	DOI string
	// PublicationDate is "2018-02-13"; its year is the publication_year.
	PublicationDate string
	// Cites lists the ids of the works it cites (its referenced_works).
	Cites []string
}

func (w Work) year() int {
	y, _ := strconv.Atoi(strings.SplitN(w.PublicationDate, "-", 2)[0])
	return y
}

// OpenAlexRequest is one request the fake answered.
type OpenAlexRequest struct {
	Path   string
	Query  url.Values
	Status int
}

// CannedReply is a queued answer of a fake API: the next request gets it instead of the real answer.
type CannedReply struct {
	Status int
	Header map[string]string
	Body   string
}

// OpenAlex is a fake OpenAlex API (https://docs.openalex.org): GET /works with search,
// filter=cites:W1|W2 (an OR group), sort=publication_date:desc, select, per-page (1–200),
// page, cursor paging (cursor=* then meta.next_cursor, null at the end) and
// group_by=publication_year; GET /works/doi:{doi} (404 for an unknown DOI). Answers carry
// meta and results as OpenAlex's do, and abstracts as abstract_inverted_index.
type OpenAlex struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	works    []Work
	requests []OpenAlexRequest
	queued   cannedQueue
}

// NewOpenAlex starts a fake OpenAlex, closed when the test ends.
func NewOpenAlex(tb testing.TB) *OpenAlex {
	o := &OpenAlex{}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	o.URL = o.srv.URL
	tb.Cleanup(o.srv.Close)
	return o
}

// Add adds works, or replaces those with the same id.
func (o *OpenAlex) Add(ws ...Work) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range ws {
		if i := slices.IndexFunc(o.works, func(x Work) bool { return x.ID == w.ID }); i >= 0 {
			o.works[i] = w
		} else {
			o.works = append(o.works, w)
		}
	}
}

// Queue makes the next requests get these answers, in order.
func (o *OpenAlex) Queue(replies ...CannedReply) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queued = append(o.queued, replies...)
}

// Requests returns the requests answered so far.
func (o *OpenAlex) Requests() []OpenAlexRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.requests)
}

// ResetRequests forgets the requests answered so far.
func (o *OpenAlex) ResetRequests() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = nil
}

func (o *OpenAlex) serve(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rec := OpenAlexRequest{Path: r.URL.Path, Query: r.URL.Query()}
	if status, ok := o.queued.serveNext(w, "application/json"); ok {
		rec.Status = status
		o.requests = append(o.requests, rec)
		return
	}
	status, body := o.answer(r)
	rec.Status = status
	o.requests = append(o.requests, rec)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// openAlexFields are the fields select may name.
var openAlexFields = []string{"id", "doi", "title", "display_name", "publication_year", "publication_date",
	"abstract_inverted_index", "primary_location", "cited_by_count", "type"}

func oaError(msg string) map[string]any {
	return map[string]any{"error": "Invalid query parameters error.", "message": msg}
}

func (o *OpenAlex) answer(r *http.Request) (int, any) {
	q := r.URL.Query()
	if r.Method != http.MethodGet {
		return http.StatusMethodNotAllowed, oaError("method not allowed")
	}
	sel, err := selectFields(q.Get("select"))
	if err != nil {
		return http.StatusForbidden, oaError(err.Error())
	}
	if doi, ok := strings.CutPrefix(r.URL.Path, "/works/doi:"); ok {
		for _, wk := range o.works {
			if strings.EqualFold(wk.DOI, doi) {
				return http.StatusOK, workJSON(wk, sel)
			}
		}
		return http.StatusNotFound, map[string]any{"error": "NotFoundError", "message": "https://doi.org/" + doi + " is not a valid OpenAlex ID."}
	}
	if r.URL.Path != "/works" {
		return http.StatusNotFound, map[string]any{"error": "Not Found", "message": "The requested URL was not found on the server."}
	}
	list := slices.Clone(o.works)
	if s := q.Get("search"); s != "" {
		list = slices.DeleteFunc(list, func(wk Work) bool { return !matches(wk.Title+" "+wk.Abstract, s) })
	}
	if f := q.Get("filter"); f != "" {
		ids, ok := strings.CutPrefix(f, "cites:")
		if !ok {
			return http.StatusForbidden, oaError(f + " is not a valid filter")
		}
		group := strings.Split(ids, "|")
		list = slices.DeleteFunc(list, func(wk Work) bool {
			return !slices.ContainsFunc(wk.Cites, func(c string) bool { return slices.Contains(group, c) })
		})
	}
	if g := q.Get("group_by"); g != "" {
		if g != "publication_year" {
			return http.StatusForbidden, oaError(g + " is not a valid group_by field")
		}
		counts := map[int]int{}
		for _, wk := range list {
			counts[wk.year()]++
		}
		type group struct {
			Key     string `json:"key"`
			Display string `json:"key_display_name"`
			Count   int    `json:"count"`
		}
		groups := []group{}
		for y, n := range counts {
			key := strconv.Itoa(y)
			if y == 0 {
				key = "unknown"
			}
			groups = append(groups, group{key, key, n})
		}
		slices.SortFunc(groups, func(a, b group) int { return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Key, b.Key)) })
		return http.StatusOK, map[string]any{
			"meta":     map[string]any{"count": len(list), "db_response_time_ms": 12, "page": nil, "per_page": 200, "groups_count": len(groups)},
			"results":  []any{},
			"group_by": groups,
		}
	}
	switch s := q.Get("sort"); s {
	case "":
	case "publication_date:desc":
		slices.SortStableFunc(list, func(a, b Work) int { return strings.Compare(b.PublicationDate, a.PublicationDate) })
	default:
		return http.StatusForbidden, oaError(s + " is not a valid sort field")
	}
	perPage := 25
	if v := q.Get("per-page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			return http.StatusForbidden, oaError("per-page parameter must be between 1 and 200")
		}
		perPage = n
	}
	offset, page := 0, any(1)
	var next any
	if c := q.Get("cursor"); c != "" {
		page = nil
		if c != "*" {
			b, err := base64.RawURLEncoding.DecodeString(c)
			n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "offset:"))
			if err != nil || err2 != nil || n < 0 {
				return http.StatusForbidden, oaError("invalid cursor")
			}
			offset = n
		}
		if offset+perPage < len(list) {
			next = base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(offset+perPage)))
		}
	} else if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return http.StatusForbidden, oaError("page must be a positive integer")
		}
		offset, page = (n-1)*perPage, n
	}
	results := []any{}
	for i := offset; i < len(list) && i < offset+perPage; i++ {
		results = append(results, workJSON(list[i], sel))
	}
	meta := map[string]any{"count": len(list), "db_response_time_ms": 21, "page": page, "per_page": perPage, "groups_count": nil}
	if q.Has("cursor") {
		meta["next_cursor"] = next
	}
	return http.StatusOK, map[string]any{"meta": meta, "results": results, "group_by": []any{}}
}

func selectFields(s string) ([]string, error) {
	if s == "" {
		return openAlexFields, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if !slices.Contains(openAlexFields, f) {
			return nil, fmt.Errorf("%s is not a valid select field", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// matches is a crude relevance search: every word of query appears in text, ignoring case.
func matches(text, query string) bool {
	text = strings.ToLower(text)
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

func workJSON(wk Work, sel []string) map[string]any {
	m := map[string]any{}
	for _, f := range sel {
		switch f {
		case "id":
			m["id"] = "https://openalex.org/" + wk.ID
		case "doi":
			if wk.DOI != "" {
				m["doi"] = "https://doi.org/" + wk.DOI
			} else {
				m["doi"] = nil
			}
		case "title", "display_name":
			if wk.Title != "" {
				m[f] = wk.Title
			} else {
				m[f] = nil
			}
		case "publication_year":
			if y := wk.year(); y > 0 {
				m[f] = y
			} else {
				m[f] = nil
			}
		case "publication_date":
			m[f] = wk.PublicationDate
		case "abstract_inverted_index":
			if wk.Abstract == "" {
				m[f] = nil
				break
			}
			idx := map[string][]int{}
			for i, word := range strings.Fields(wk.Abstract) {
				idx[word] = append(idx[word], i)
			}
			m[f] = idx
		case "primary_location":
			m[f] = map[string]any{"is_oa": true, "landing_page_url": "https://doi.org/" + wk.DOI,
				"source": map[string]any{"id": "https://openalex.org/S1983995261", "display_name": "PeerJ", "type": "journal"}}
		case "cited_by_count":
			m[f] = 0
		case "type":
			m[f] = "article"
		}
	}
	return m
}

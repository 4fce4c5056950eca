package ingest

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The OpenAlex client (knowledge.md §6.4–6.6): keyword search, DOI lookup, per-year counts of
// citing works, the citing works themselves page by page, and the live search.

// DefaultOpenAlexURL is the OpenAlex API.
const DefaultOpenAlexURL = "https://api.openalex.org"

const (
	// maxOpenAlexPage caps one OpenAlex answer: 200 works with their abstracts' inverted
	// indexes are a few MB.
	maxOpenAlexPage = 16 << 20
	// maxCitingPapers, maxCitingPages: how far the citing works of one DOI are listed (§6.5).
	maxCitingPapers = 2000
	maxCitingPages  = 60
	// openAlexPerPage is the API's largest page.
	openAlexPerPage = 200
	// maxAbstractChars is the papers table's cap on first_message (§2.2); an abstract is
	// rebuilt only that far.
	maxAbstractChars = 2000
)

// openAlex calls the OpenAlex API at base with the polite-pool address and key when given.
type openAlex struct {
	api   *apiClient
	base  string
	email string
	key   string
}

// oaWork is the part of an OpenAlex work these calls select.
type oaWork struct {
	ID              string           `json:"id"`
	Title           *string          `json:"title"`
	DOI             *string          `json:"doi"`
	PublicationDate *string          `json:"publication_date"`
	PublicationYear *int             `json:"publication_year"`
	Abstract        map[string][]int `json:"abstract_inverted_index"`
}

// oaList is a /works listing.
type oaList struct {
	Meta struct {
		Count      int     `json:"count"`
		NextCursor *string `json:"next_cursor"`
	} `json:"meta"`
	Results []oaWork `json:"results"`
	GroupBy []struct {
		Key   any `json:"key"`
		Count int `json:"count"`
	} `json:"group_by"`
}

// url builds base+path with the parameters in the given order, then mailto and api_key.
func (o *openAlex) url(path string, params ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(o.base, "/"))
	b.WriteString(path)
	sep := byte('?')
	add := func(k, v string) {
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(url.QueryEscape(k))
		b.WriteByte('=')
		b.WriteString(queryValue(v))
	}
	for i := 0; i+1 < len(params); i += 2 {
		add(params[i], params[i+1])
	}
	if o.email != "" {
		add("mailto", o.email)
	}
	if o.key != "" {
		add("api_key", o.key)
	}
	return b.String()
}

// queryValue escapes a query value, leaving the characters OpenAlex's filter and select
// syntax uses (":", "|", ",", "*") readable; it accepts them escaped too.
func queryValue(v string) string {
	s := url.QueryEscape(v)
	r := strings.NewReplacer("%3A", ":", "%7C", "|", "%2C", ",", "%2A", "*")
	return r.Replace(s)
}

func (o *openAlex) list(ctx context.Context, call apiCall) (*oaList, error) {
	call.max = maxOpenAlexPage
	resp, err := o.api.get(ctx, call)
	if err != nil {
		return nil, err
	}
	var l oaList
	if err := json.Unmarshal(resp.body, &l); err != nil {
		return nil, fmt.Errorf("%s: not an OpenAlex listing: %v", redactURL(call.url), err)
	}
	return &l, nil
}

// search is the keyword search of §6.4: one page of at most max works.
func (o *openAlex) search(ctx context.Context, query string, max int, waiting func(time.Time)) ([]paperHit, error) {
	u := o.url("/works", "search", query, "select", "id,title,abstract_inverted_index,publication_date,doi,primary_location",
		"per-page", strconv.Itoa(min(max, openAlexPerPage)))
	l, err := o.list(ctx, apiCall{url: u, waiting: waiting})
	if err != nil {
		return nil, err
	}
	var hits []paperHit
	for _, w := range l.Results {
		if h, ok := w.hit(); ok {
			h.CreatedAt = ptrValue(w.PublicationDate)
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// hit turns a work into a paper; untitled works are skipped.
func (w oaWork) hit() (paperHit, bool) {
	title := cleanTitle(ptrValue(w.Title))
	id := openAlexID(w.ID)
	if title == "" || id == "" {
		return paperHit{}, false
	}
	h := paperHit{Source: "openalex", ExternalID: id, Title: title, DOI: bareDOI(ptrValue(w.DOI))}
	h.Abstract = plainText(RebuildAbstract(w.Abstract, maxAbstractChars))
	h.URL = doiURL(ptrValue(w.DOI))
	if h.URL == "" {
		h.URL = strings.TrimSpace(w.ID)
		if !strings.HasPrefix(h.URL, "https://") && !strings.HasPrefix(h.URL, "http://") {
			h.URL = "https://openalex.org/" + id
		}
	}
	return h, true
}

// openAlexID is an OpenAlex id without its https://openalex.org/ prefix ("W2741809807"),
// or "" when it is not one.
func openAlexID(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimPrefix(id, "https://openalex.org/")
	id = strings.TrimPrefix(id, "http://openalex.org/")
	if id == "" || len(id) > 40 || strings.ContainsAny(id, "/?#|, \t\n") {
		return ""
	}
	return id
}

// doiURL is the https://doi.org/ link of a DOI given as a link or bare, or "".
func doiURL(doi string) string {
	if d := bareDOI(doi); d != "" {
		return "https://doi.org/" + d
	}
	return ""
}

// bareDOI is "10.xxxx/yyyy" from a DOI given bare or as a doi.org link, or "".
func bareDOI(doi string) string {
	d := strings.TrimSpace(doi)
	for _, p := range []string{"https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"} {
		if len(d) >= len(p) && strings.EqualFold(d[:len(p)], p) {
			d = d[len(p):]
			break
		}
	}
	if !strings.HasPrefix(d, "10.") || !strings.Contains(d, "/") || strings.ContainsAny(d, " \t\n\r") {
		return ""
	}
	return d
}

// RebuildAbstract writes an OpenAlex abstract_inverted_index back as text: each word at each
// of its positions, in position order, single spaces; at most maxChars characters are
// built (a word is not split). Only the positions the cap can hold are kept while building
// (n words take at least 2n-1 characters), so a page of millions of positions costs the
// cap's memory, not theirs.
func RebuildAbstract(index map[string][]int, maxChars int) string {
	keep := (maxChars + 1) / 2
	if keep <= 0 {
		return ""
	}
	// The keep first (position, word) pairs: a heap whose top is the last of them.
	h := make(abstractHeap, 0, min(keep, 1024))
	for w, ps := range index {
		if w == "" {
			continue
		}
		for _, p := range ps {
			a := abstractWord{p, w}
			if len(h) < keep {
				heap.Push(&h, a)
			} else if a.before(h[0]) {
				h[0] = a
				heap.Fix(&h, 0)
			}
		}
	}
	words := []abstractWord(h)
	slices.SortFunc(words, func(a, b abstractWord) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), strings.Compare(a.word, b.word))
	})
	var b strings.Builder
	n := 0
	for _, w := range words {
		l := utf8.RuneCountInString(w.word)
		if n > 0 {
			l++
		}
		if n+l > maxChars {
			break
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.word)
		n += l
	}
	return b.String()
}

// abstractWord is a word at one position of an abstract.
type abstractWord struct {
	pos  int
	word string
}

func (a abstractWord) before(b abstractWord) bool {
	return a.pos < b.pos || a.pos == b.pos && a.word < b.word
}

// abstractHeap is a max-heap of words (container/heap): the top is the last in text order.
type abstractHeap []abstractWord

func (h abstractHeap) Len() int           { return len(h) }
func (h abstractHeap) Less(i, j int) bool { return h[j].before(h[i]) }
func (h abstractHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *abstractHeap) Push(x any)        { *h = append(*h, x.(abstractWord)) }
func (h *abstractHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// errNotFound is a DOI OpenAlex does not know.
var errNotFound = errors.New("not found")

// resolve looks up a DOI (§6.5 step 1): its work id ("W…") and publication year (0 when
// unknown). A DOI OpenAlex does not have is errNotFound.
func (o *openAlex) resolve(ctx context.Context, doi string, waiting func(time.Time)) (string, int, error) {
	u := o.url("/works/doi:"+escapeDOIPath(doi), "select", "id,publication_year")
	resp, err := o.api.get(ctx, apiCall{url: u, max: 1 << 20, ok: []int{http.StatusNotFound}, waiting: waiting})
	if err != nil {
		return "", 0, err
	}
	if resp.status == http.StatusNotFound {
		return "", 0, errNotFound
	}
	var w oaWork
	if err := json.Unmarshal(resp.body, &w); err != nil {
		return "", 0, fmt.Errorf("%s: not an OpenAlex work: %v", redactURL(u), err)
	}
	id := openAlexID(w.ID)
	if id == "" {
		return "", 0, fmt.Errorf("%s: the work has no OpenAlex id", redactURL(u))
	}
	return id, ptrValue(w.PublicationYear), nil
}

// escapeDOIPath escapes a DOI for a URL path, keeping its slashes.
func escapeDOIPath(doi string) string {
	parts := strings.Split(doi, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// citationCounts is §6.5 step 2: the works citing any of ids, counted by publication year,
// years before earliest (when known) and keys that are no year dropped.
func (o *openAlex) citationCounts(ctx context.Context, ids []string, earliest int, waiting func(time.Time)) (map[int]int, error) {
	u := o.url("/works", "filter", "cites:"+strings.Join(ids, "|"), "group_by", "publication_year")
	l, err := o.list(ctx, apiCall{url: u, waiting: waiting})
	if err != nil {
		return nil, err
	}
	counts := map[int]int{}
	for _, g := range l.GroupBy {
		year, ok := groupYear(g.Key)
		if !ok || g.Count <= 0 || (earliest > 0 && year < earliest) {
			continue
		}
		counts[year] += g.Count
	}
	return counts, nil
}

// groupYear reads a group_by key as a year: OpenAlex sends "2021" (a string), and "unknown"
// for works without one.
func groupYear(key any) (int, bool) {
	var s string
	switch k := key.(type) {
	case string:
		s = k
	case float64:
		s = strconv.FormatFloat(k, 'f', -1, 64)
	default:
		return 0, false
	}
	y, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || y < 1000 || y > 9999 {
		return 0, false
	}
	return y, true
}

// citingPage is one page of §6.5 step 3.
type citingPage struct {
	hits []paperHit
	// works counts the page's works, titled or not; next is the cursor of the next page, "" at
	// the end.
	works int
	next  string
}

// citing lists one page of the works citing ids, newest first.
func (o *openAlex) citing(ctx context.Context, ids []string, perPage int, cursor string, waiting func(time.Time)) (*citingPage, error) {
	u := o.url("/works", "filter", "cites:"+strings.Join(ids, "|"), "sort", "publication_date:desc",
		"select", "id,doi,title,publication_date", "per-page", strconv.Itoa(min(perPage, openAlexPerPage)), "cursor", cursor)
	l, err := o.list(ctx, apiCall{url: u, waiting: waiting})
	if err != nil {
		return nil, err
	}
	p := &citingPage{works: len(l.Results), next: ptrValue(l.Meta.NextCursor)}
	for _, w := range l.Results {
		w.Abstract = nil // not selected; never stored for citing works
		if h, ok := w.hit(); ok {
			h.CreatedAt = ptrValue(w.PublicationDate)
			p.hits = append(p.hits, h)
		}
	}
	return p, nil
}

// live is the live search of §6.6: newest first, with the publication year.
func (o *openAlex) live(ctx context.Context, query string, limit int) ([]LivePaper, error) {
	u := o.url("/works", "search", query, "sort", "publication_date:desc", "per-page", strconv.Itoa(limit),
		"select", "id,title,abstract_inverted_index,publication_year,doi")
	l, err := o.list(ctx, apiCall{url: u, timeout: liveRequestTimeout, noRetry: true})
	if err != nil {
		return nil, err
	}
	var out []LivePaper
	for _, w := range l.Results {
		h, ok := w.hit()
		if !ok {
			continue
		}
		out = append(out, LivePaper{Source: h.Source, ExternalID: h.ExternalID, Title: h.Title, Abstract: h.Abstract,
			URL: h.URL, Year: ptrValue(w.PublicationYear), DOI: h.DOI})
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

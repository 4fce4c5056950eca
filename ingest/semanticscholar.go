package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The Semantic Scholar client (knowledge.md §6.4): the Graph API's paper search, with the
// key in x-api-key. It runs only when SEMANTIC_SCHOLAR_API_KEY is set.

// DefaultSemanticScholarURL is the Semantic Scholar API.
const DefaultSemanticScholarURL = "https://api.semanticscholar.org"

const (
	maxSemanticScholarPage = 8 << 20
	// semanticScholarLimit is the search's largest page.
	semanticScholarLimit = 100
)

type semanticScholar struct {
	api  *apiClient
	base string
	key  string
}

// s2Paper is one search result with the fields asked for.
type s2Paper struct {
	PaperID       string  `json:"paperId"`
	Title         *string `json:"title"`
	Abstract      *string `json:"abstract"`
	Year          *int    `json:"year"`
	URL           *string `json:"url"`
	OpenAccessPDF *struct {
		URL *string `json:"url"`
	} `json:"openAccessPdf"`
	ExternalIDs map[string]any `json:"externalIds"`
}

// search asks for at most max papers matching query.
func (s *semanticScholar) search(ctx context.Context, query string, max int, waiting func(time.Time)) ([]paperHit, error) {
	// externalIds (the DOI and PMID) is asked for beyond the spec's fields, to merge a paper
	// OpenAlex already gave (papers.go).
	u := strings.TrimRight(s.base, "/") + "/graph/v1/paper/search?query=" + url.QueryEscape(query) +
		"&limit=" + strconv.Itoa(min(max, semanticScholarLimit)) +
		"&fields=" + "paperId,title,abstract,year,url,openAccessPdf,externalIds"
	h := http.Header{}
	if s.key != "" {
		h.Set("x-api-key", s.key)
	}
	resp, err := s.api.get(ctx, apiCall{url: u, header: h, max: maxSemanticScholarPage, waiting: waiting})
	if err != nil {
		return nil, err
	}
	var page struct {
		Data []s2Paper `json:"data"`
	}
	if err := json.Unmarshal(resp.body, &page); err != nil {
		return nil, fmt.Errorf("%s: not a Semantic Scholar search result: %v", redactURL(u), err)
	}
	var hits []paperHit
	for _, p := range page.Data {
		title := cleanTitle(ptrValue(p.Title))
		id := strings.TrimSpace(p.PaperID)
		if title == "" || id == "" || len(id) > 64 || strings.ContainsAny(id, "/?# ") {
			continue
		}
		h := paperHit{Source: "semanticscholar", ExternalID: id, Title: title,
			Abstract: plainText(ptrValue(p.Abstract))}
		if p.OpenAccessPDF != nil {
			h.URL = httpURL(ptrValue(p.OpenAccessPDF.URL))
		}
		if h.URL == "" {
			h.URL = httpURL(ptrValue(p.URL))
		}
		if h.URL == "" {
			h.URL = "https://www.semanticscholar.org/paper/" + id
		}
		if p.Year != nil && *p.Year > 0 {
			h.CreatedAt = strconv.Itoa(*p.Year)
		}
		if d, ok := p.ExternalIDs["DOI"].(string); ok {
			h.DOI = bareDOI(d)
		}
		switch v := p.ExternalIDs["PubMed"].(type) {
		case string:
			h.PMID = v
		case float64:
			h.PMID = strconv.FormatFloat(v, 'f', -1, 64)
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// httpURL is u when it is an http or https URL, else "".
func httpURL(u string) string {
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
		return ""
	}
	return u
}

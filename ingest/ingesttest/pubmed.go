package ingesttest

import (
	"encoding/json"
	"encoding/xml"
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

// PubMedArticle is one article of the fake PubMed.
type PubMedArticle struct {
	PMID  string
	Title string // may hold inline markup, as ArticleTitle does: "<i>In vivo</i> …"
	// Abstract holds the AbstractText parts (a structured abstract has several).
	Abstract []string
	// Year is PubDate/Year; MedlineDate replaces it when set ("1998 Dec-1999 Jan").
	Year        int
	MedlineDate string
	DOI         string
}

// PubMedRequest is one request the fake answered.
type PubMedRequest struct {
	Path   string
	Query  url.Values
	Status int
}

// PubMed is a fake NCBI E-utilities (https://www.ncbi.nlm.nih.gov/books/NBK25499/):
// esearch.fcgi (db=pubmed, term, retmax, retmode=json) and efetch.fcgi (db=pubmed, id
// comma-separated, retmode=xml) answering a PubmedArticleSet with its DOCTYPE, under
// /entrez/eutils/.
type PubMed struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	articles []PubMedArticle
	requests []PubMedRequest
	queued   cannedQueue
}

// NewPubMed starts a fake PubMed, closed when the test ends.
func NewPubMed(tb testing.TB) *PubMed {
	p := &PubMed{}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	tb.Cleanup(p.srv.Close)
	return p
}

// Add adds articles.
func (p *PubMed) Add(as ...PubMedArticle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.articles = append(p.articles, as...)
}

// Queue makes the next requests get these answers, in order.
func (p *PubMed) Queue(replies ...CannedReply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queued = append(p.queued, replies...)
}

// Requests returns the requests answered so far.
func (p *PubMed) Requests() []PubMedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

func (p *PubMed) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := PubMedRequest{Path: r.URL.Path, Query: r.URL.Query()}
	if status, ok := p.queued.serveNext(w, ""); ok {
		rec.Status = status
		p.requests = append(p.requests, rec)
		return
	}
	q := r.URL.Query()
	rec.Status = http.StatusOK
	defer func() { p.requests = append(p.requests, rec) }()
	if q.Get("db") != "pubmed" {
		rec.Status = http.StatusBadRequest
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Status)
		fmt.Fprint(w, `{"error":"Invalid db name specified: `+q.Get("db")+`"}`)
		return
	}
	switch r.URL.Path {
	case "/entrez/eutils/esearch.fcgi":
		retmax, err := strconv.Atoi(q.Get("retmax"))
		if err != nil {
			retmax = 20
		}
		ids := []string{}
		for _, a := range p.articles {
			if matches(a.Title+" "+strings.Join(a.Abstract, " "), q.Get("term")) && len(ids) < retmax {
				ids = append(ids, a.PMID)
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		json.NewEncoder(w).Encode(map[string]any{
			"header": map[string]any{"type": "esearch", "version": "0.3"},
			"esearchresult": map[string]any{"count": strconv.Itoa(len(ids)), "retmax": strconv.Itoa(len(ids)), "retstart": "0",
				"idlist": ids, "translationset": []any{}, "querytranslation": q.Get("term")},
		})
	case "/entrez/eutils/efetch.fcgi":
		want := strings.Split(q.Get("id"), ",")
		w.Header().Set("Content-Type", "text/xml; charset=UTF-8")
		fmt.Fprint(w, `<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet>
`)
		for _, a := range p.articles {
			if slices.Contains(want, a.PMID) {
				fmt.Fprint(w, articleXML(a))
			}
		}
		fmt.Fprint(w, "</PubmedArticleSet>\n")
	default:
		rec.Status = http.StatusNotFound
		w.WriteHeader(rec.Status)
	}
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// articleXML writes one PubmedArticle as efetch does (the parts a reader looks at, and some
// it should skip: the journal, the authors, a comment's PMID, the MeSH headings).
func articleXML(a PubMedArticle) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM" IndexingMethod="Automated">
    <PMID Version="1">%s</PMID>
    <DateCompleted><Year>2024</Year><Month>03</Month><Day>12</Day></DateCompleted>
    <Article PubModel="Print-Electronic">
      <Journal>
        <ISSN IssnType="Electronic">1095-9572</ISSN>
        <JournalIssue CitedMedium="Internet">
          <Volume>287</Volume>
          <PubDate>`, a.PMID)
	if a.MedlineDate != "" {
		fmt.Fprintf(&b, "<MedlineDate>%s</MedlineDate>", esc(a.MedlineDate))
	} else {
		fmt.Fprintf(&b, "<Year>%d</Year><Month>Feb</Month><Day>01</Day>", a.Year)
	}
	// The title is inline XML as PubMed sends it: markup kept, text escaped by the caller.
	fmt.Fprintf(&b, `</PubDate>
        </JournalIssue>
        <Title>NeuroImage</Title>
        <ISOAbbreviation>Neuroimage</ISOAbbreviation>
      </Journal>
      <ArticleTitle>%s</ArticleTitle>
      <Pagination><StartPage>120</StartPage><MedlinePgn>120-133</MedlinePgn></Pagination>
`, a.Title)
	if len(a.Abstract) > 0 {
		b.WriteString("      <Abstract>\n")
		labels := []string{"BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS"}
		for i, part := range a.Abstract {
			if len(a.Abstract) > 1 && i < len(labels) {
				fmt.Fprintf(&b, "        <AbstractText Label=%q NlmCategory=%q>%s</AbstractText>\n", labels[i], labels[i], esc(part))
			} else {
				fmt.Fprintf(&b, "        <AbstractText>%s</AbstractText>\n", esc(part))
			}
		}
		b.WriteString("        <CopyrightInformation>Copyright © 2024. Published by Elsevier Inc.</CopyrightInformation>\n      </Abstract>\n")
	}
	fmt.Fprintf(&b, `      <AuthorList CompleteYN="Y">
        <Author ValidYN="Y"><LastName>Robbins</LastName><ForeName>Kay</ForeName><Initials>K</Initials></Author>
      </AuthorList>
      <Language>eng</Language>
    </Article>
    <CommentsCorrectionsList>
      <CommentsCorrections RefType="CommentIn"><RefSource>Neuroimage. 2024;290:120555.</RefSource><PMID Version="1">99999999</PMID></CommentsCorrections>
    </CommentsCorrectionsList>
    <MeshHeadingList><MeshHeading><DescriptorName UI="D001931" MajorTopicYN="N">Brain Mapping</DescriptorName></MeshHeading></MeshHeadingList>
  </MedlineCitation>
  <PubmedData>
    <PublicationStatus>ppublish</PublicationStatus>
    <ArticleIdList>
      <ArticleId IdType="pubmed">%s</ArticleId>
`, a.PMID)
	if a.DOI != "" {
		fmt.Fprintf(&b, "      <ArticleId IdType=\"doi\">%s</ArticleId>\n", esc(a.DOI))
	}
	b.WriteString("    </ArticleIdList>\n  </PubmedData>\n</PubmedArticle>\n")
	return b.String()
}

package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The PubMed client (knowledge.md §6.4): E-utilities esearch (JSON) for the ids, then efetch
// (XML) for the articles. It runs only when PUBMED_API_KEY is set.

// DefaultPubMedURL is the NCBI E-utilities host.
const DefaultPubMedURL = "https://eutils.ncbi.nlm.nih.gov"

const (
	maxPubMedSearch = 1 << 20
	// maxPubMedFetch caps one efetch answer: 100 full records are a few MB of XML.
	maxPubMedFetch     = 32 << 20
	pubMedFetchTimeout = 60 * time.Second
)

type pubMed struct {
	api  *apiClient
	base string
	key  string
	// pause is waited after each request (§6.4: 0.4 s).
	pause time.Duration
}

func (p *pubMed) url(path string, params ...string) string {
	v := strings.TrimRight(p.base, "/") + "/entrez/eutils/" + path
	sep := "?"
	for i := 0; i+1 < len(params); i += 2 {
		v += sep + params[i] + "=" + url.QueryEscape(params[i+1])
		sep = "&"
	}
	if p.key != "" {
		v += "&api_key=" + url.QueryEscape(p.key)
	}
	return v
}

// search finds at most max PubMed articles for query.
func (p *pubMed) search(ctx context.Context, query string, max int, waiting func(time.Time)) ([]paperHit, error) {
	u := p.url("esearch.fcgi", "db", "pubmed", "term", query, "retmax", strconv.Itoa(max), "retmode", "json")
	resp, err := p.api.get(ctx, apiCall{url: u, max: maxPubMedSearch, waiting: waiting})
	if err != nil {
		return nil, err
	}
	var res struct {
		ESearchResult struct {
			IDList []string `json:"idlist"`
		} `json:"esearchresult"`
	}
	if err := json.Unmarshal(resp.body, &res); err != nil {
		return nil, fmt.Errorf("%s: not an esearch result: %v", redactURL(u), err)
	}
	var ids []string
	for _, id := range res.ESearchResult.IDList {
		if validPMID(id) && len(ids) < max {
			ids = append(ids, id)
		}
	}
	if err := p.api.clk.sleep(ctx, p.pause); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	u = p.url("efetch.fcgi", "db", "pubmed", "id", strings.Join(ids, ","), "retmode", "xml")
	resp, err = p.api.get(ctx, apiCall{url: u, max: maxPubMedFetch, timeout: pubMedFetchTimeout, waiting: waiting})
	if err != nil {
		return nil, err
	}
	hits, err := ParsePubMedArticles(resp.body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redactURL(u), err)
	}
	if err := p.api.clk.sleep(ctx, p.pause); err != nil {
		return nil, err
	}
	return hits, nil
}

func validPMID(id string) bool {
	if id == "" || len(id) > 12 {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// pmArticle is the part of a PubmedArticle that is stored.
type pmArticle struct {
	Citation struct {
		PMID    string `xml:"PMID"`
		Article struct {
			Title    xmlText   `xml:"ArticleTitle"`
			Abstract []xmlText `xml:"Abstract>AbstractText"`
			PubDate  struct {
				Year        string `xml:"Year"`
				MedlineDate string `xml:"MedlineDate"`
			} `xml:"Journal>JournalIssue>PubDate"`
		} `xml:"Article"`
	} `xml:"MedlineCitation"`
	IDs []struct {
		Type  string `xml:"IdType,attr"`
		Value string `xml:",chardata"`
	} `xml:"PubmedData>ArticleIdList>ArticleId"`
}

// xmlText is an element's text with its inline markup (<i>, <sup>, …) dropped.
type xmlText string

// maxXMLTextBytes bounds one element's text; the tables keep far less.
const maxXMLTextBytes = 64 << 10

func (t *xmlText) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var b strings.Builder
	for depth := 1; depth > 0; {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if b.Len()+len(tk) <= maxXMLTextBytes {
				b.Write(tk)
			}
		}
	}
	*t = xmlText(strings.Join(strings.Fields(b.String()), " "))
	return nil
}

// ParsePubMedArticles reads an efetch PubmedArticleSet: per PubmedArticle its PMID,
// ArticleTitle, first AbstractText and PubDate year (the start of a MedlineDate when there
// is no Year), with the URL https://pubmed.ncbi.nlm.nih.gov/{pmid}/. Untitled articles and
// other records (PubmedBookArticle) are skipped.
func ParsePubMedArticles(data []byte) ([]paperHit, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = func(charset string, r io.Reader) (io.Reader, error) {
		if strings.EqualFold(charset, "utf-8") || strings.EqualFold(charset, "us-ascii") {
			return r, nil
		}
		return nil, fmt.Errorf("unsupported charset %q", charset)
	}
	var hits []paperHit
	sawSet := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a PubmedArticleSet: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "PubmedArticleSet":
			sawSet = true
		case "PubmedArticle":
			var a pmArticle
			if err := d.DecodeElement(&a, &se); err != nil {
				return nil, fmt.Errorf("not a PubmedArticleSet: %v", err)
			}
			if h, ok := a.hit(); ok {
				hits = append(hits, h)
			}
		default:
			if err := d.Skip(); err != nil {
				return nil, fmt.Errorf("not a PubmedArticleSet: %v", err)
			}
		}
	}
	if !sawSet {
		return nil, errors.New("not a PubmedArticleSet")
	}
	return hits, nil
}

func (a pmArticle) hit() (paperHit, bool) {
	pmid := strings.TrimSpace(a.Citation.PMID)
	title := cleanTitle(string(a.Citation.Article.Title))
	if !validPMID(pmid) || title == "" {
		return paperHit{}, false
	}
	h := paperHit{Source: "pubmed", ExternalID: pmid, PMID: pmid, Title: title,
		URL: "https://pubmed.ncbi.nlm.nih.gov/" + pmid + "/"}
	if len(a.Citation.Article.Abstract) > 0 {
		h.Abstract = plainText(string(a.Citation.Article.Abstract[0]))
	}
	pd := a.Citation.Article.PubDate
	if y := strings.TrimSpace(pd.Year); len(y) == 4 {
		h.CreatedAt = y
	} else if m := strings.TrimSpace(pd.MedlineDate); len(m) >= 4 {
		if _, err := strconv.Atoi(m[:4]); err == nil {
			h.CreatedAt = m[:4]
		}
	}
	for _, id := range a.IDs {
		if id.Type == "doi" {
			h.DOI = bareDOI(id.Value)
		}
	}
	return h, true
}

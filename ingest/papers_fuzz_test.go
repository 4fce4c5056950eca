package ingest

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkHit holds for every paper any parser returns: the key and title it needs, text that is
// valid UTF-8 within the caps, and a link a reader can follow.
func checkHit(t *testing.T, h paperHit) {
	t.Helper()
	if h.ExternalID == "" || strings.ContainsAny(h.ExternalID, "/?# ") {
		t.Errorf("external id %q", h.ExternalID)
	}
	if h.Title == "" || utf8.RuneCountInString(h.Title) > 1000 {
		t.Errorf("title %q", h.Title)
	}
	for _, s := range []string{h.Title, h.Abstract, h.URL, h.CreatedAt, h.DOI} {
		if !utf8.ValidString(s) {
			t.Errorf("invalid UTF-8 %q", s)
		}
	}
	if !strings.HasPrefix(h.URL, "https://") && !strings.HasPrefix(h.URL, "http://") {
		t.Errorf("url %q", h.URL)
	}
}

func FuzzParsePubMedArticles(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID Version="1">123</PMID><Article><Journal><JournalIssue><PubDate><Year>2020</Year></PubDate></JournalIssue></Journal>
<ArticleTitle>A <i>title</i> &amp; more</ArticleTitle><Abstract><AbstractText Label="A">First.</AbstractText><AbstractText>Second.</AbstractText></Abstract></Article>
<CommentsCorrectionsList><CommentsCorrections><PMID>9</PMID></CommentsCorrections></CommentsCorrectionsList></MedlineCitation>
<PubmedData><ArticleIdList><ArticleId IdType="doi">10.1/x</ArticleId></ArticleIdList></PubmedData></PubmedArticle>
<PubmedBookArticle><BookDocument><PMID>5</PMID></BookDocument></PubmedBookArticle></PubmedArticleSet>`))
	f.Add([]byte(`<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article><ArticleTitle><b><i>x</i></b></ArticleTitle>` +
		`<Journal><JournalIssue><PubDate><MedlineDate>1998 Dec-1999 Jan</MedlineDate></PubDate></JournalIssue></Journal></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>`))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><PubmedArticleSet/>`))
	f.Add([]byte(`<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>12a</PMID></MedlineCitation></PubmedArticle>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		hits, err := ParsePubMedArticles(data)
		if err != nil {
			return
		}
		for _, h := range hits {
			checkHit(t, h)
			if !validPMID(h.ExternalID) || h.Source != "pubmed" {
				t.Errorf("pmid %q source %q", h.ExternalID, h.Source)
			}
		}
	})
}

func TestParsePubMedArticles(t *testing.T) {
	hits, err := ParsePubMedArticles([]byte(`<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>77</PMID><Article>
		<ArticleTitle>A <i>nested</i>   title</ArticleTitle><Abstract><AbstractText Label="BACKGROUND">First part.</AbstractText>
		<AbstractText Label="METHODS">Second.</AbstractText></Abstract></Article>
		<CommentsCorrectionsList><CommentsCorrections><PMID>88</PMID></CommentsCorrections></CommentsCorrectionsList></MedlineCitation>
		</PubmedArticle><PubmedBookArticle><BookDocument><PMID>5</PMID></BookDocument></PubmedBookArticle></PubmedArticleSet>`))
	if err != nil {
		t.Fatal(err)
	}
	want := []paperHit{{Source: "pubmed", ExternalID: "77", PMID: "77", Title: "A nested title", Abstract: "First part.",
		URL: "https://pubmed.ncbi.nlm.nih.gov/77/"}}
	if len(hits) != 1 || hits[0] != want[0] {
		t.Errorf("got %+v, want %+v", hits, want)
	}
	for _, bad := range []string{``, `<html><body>Service unavailable</body></html>`, `<PubmedArticleSet><PubmedArticle>`,
		`<?xml version="1.0" encoding="ISO-8859-1"?><PubmedArticleSet/>`} {
		if _, err := ParsePubMedArticles([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzOpenAlexWorks(f *testing.F) {
	f.Add([]byte(`{"meta":{"count":1,"next_cursor":"abc"},"results":[{"id":"https://openalex.org/W1","title":"T <i>x</i>","doi":"https://doi.org/10.1/a",` +
		`"publication_date":"2020-01-01","abstract_inverted_index":{"Hello":[0,2],"world":[1]}}],"group_by":[]}`))
	f.Add([]byte(`{"results":[{"id":"W2","title":"Bare","doi":"10.2/b","abstract_inverted_index":{"a":[-5,1000000000],"b":[3]}}]}`))
	f.Add([]byte(`{"results":[{"id":"https://openalex.org/W3/x","title":"slash"},{"id":"","title":"none"},{"id":"W4","title":null}]}`))
	f.Add([]byte(`{"group_by":[{"key":"2020","count":3},{"key":"unknown","count":1},{"key":2021,"count":2}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var l oaList
		if json.Unmarshal(data, &l) != nil {
			return
		}
		for _, w := range l.Results {
			h, ok := w.hit()
			if !ok {
				continue
			}
			checkHit(t, h)
			if n := utf8.RuneCountInString(h.Abstract); n > maxAbstractChars {
				t.Errorf("abstract of %d characters", n)
			}
		}
		for _, g := range l.GroupBy {
			if y, ok := groupYear(g.Key); ok && (y < 1000 || y > 9999) {
				t.Errorf("year %d", y)
			}
		}
	})
}

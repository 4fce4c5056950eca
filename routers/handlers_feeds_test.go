package routers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/tests/golden"
)

func TestFAQFeed(t *testing.T) {
	f := newSyncFixture(t, false)
	resp, body := f.call(t, http.MethodGet, "/hed/faq", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=3600" {
		t.Errorf("Cache-Control %q", cc)
	}
	if strings.Contains(string(body), "@example") || strings.Contains(string(body), "help@hed.org") {
		t.Errorf("an e-mail address is in the feed: %s", body)
	}
	golden.Check(t, "testdata/sync/faq_hed.json", indented(t, body))

	for _, tc := range []struct {
		query string
		want  string // total, limit, offset and the questions, in order
	}{
		{"limit=1&offset=1", "3 1 1 [Schema versions and validation]"},
		{"q=validation", "2 50 0 [How do I validate? Ask [email redacted] Schema versions and validation]"},
		{"q=validation&offset=1", "2 50 1 [Schema versions and validation]"},
		{"category=HOW-TO&min_quality=0.85", "1 50 0 [How do I validate? Ask [email redacted]]"},
		{"q=%20%20", "3 50 0 [How do I validate? Ask [email redacted] Schema versions and validation Why does Onset need a Definition?]"},
		{"q=NEAR%20%22%20*", "0 50 0 []"},
		{"limit=5&limit=2", "3 2 0 [How do I validate? Ask [email redacted] Schema versions and validation]"}, // the last one wins
	} {
		resp, body := f.call(t, http.MethodGet, "/hed/faq?"+tc.query, "")
		var feed struct {
			Total, Limit, Offset int
			Entries              []struct{ Question string }
		}
		if err := json.Unmarshal(body, &feed); resp.StatusCode != http.StatusOK || err != nil {
			t.Errorf("%s: %d %s", tc.query, resp.StatusCode, body)
			continue
		}
		var qs []string
		for _, e := range feed.Entries {
			qs = append(qs, e.Question)
		}
		got := strings.Join([]string{itoa(feed.Total), itoa(feed.Limit), itoa(feed.Offset), "[" + strings.Join(qs, " ") + "]"}, " ")
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
	}

	// No database yet: an empty feed.
	resp, body = f.call(t, http.MethodGet, "/empty/faq", "")
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"community_id":"empty","total":0,"limit":50,"offset":0,"entries":[]}` {
		t.Errorf("no database: %d %s", resp.StatusCode, body)
	}
	resp, body = f.call(t, http.MethodGet, "/broken/faq", "")
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != `{"detail":"Knowledge database is temporarily unavailable."}` {
		t.Errorf("unreadable database: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") == "public, max-age=3600" {
		t.Error("an error answer is cached publicly")
	}
	resp, body = f.call(t, http.MethodGet, "/bids/faq", "")
	if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"detail":"Public FAQ feed is not enabled for this community."}` {
		t.Errorf("feed off: %d %s", resp.StatusCode, body)
	}
	resp, body = f.call(t, http.MethodGet, "/nope/faq", "")
	if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"detail":"Not Found"}` {
		t.Errorf("unknown community: %d %s", resp.StatusCode, body)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestFAQFeedBounds: every parameter out of bounds is a FastAPI-shaped 422 naming it.
func TestFAQFeedBounds(t *testing.T) {
	f := newSyncFixture(t, false)
	for _, tc := range []struct {
		query, typ, param, msg string
	}{
		{"limit=0", "greater_than_equal", "limit", "Input should be greater than or equal to 1"},
		{"limit=201", "less_than_equal", "limit", "Input should be less than or equal to 200"},
		{"limit=ten", "int_parsing", "limit", "Input should be a valid integer, unable to parse string as an integer"},
		{"limit=99999999999999999999999", "int_parsing", "limit", "Input should be a valid integer, unable to parse string as an integer"},
		{"offset=-1", "greater_than_equal", "offset", "Input should be greater than or equal to 0"},
		{"min_quality=1.5", "less_than_equal", "min_quality", "Input should be less than or equal to 1.0"},
		{"min_quality=-0.1", "greater_than_equal", "min_quality", "Input should be greater than or equal to 0.0"},
		{"min_quality=NaN", "float_parsing", "min_quality", "Input should be a valid number, unable to parse string as a number"},
		{"q=" + strings.Repeat("é", 201), "string_too_long", "q", "String should have at most 200 characters"},
		{"category=" + strings.Repeat("x", 51), "string_too_long", "category", "String should have at most 50 characters"},
	} {
		resp, body := f.call(t, http.MethodGet, "/hed/faq?"+(&url.URL{RawQuery: tc.query}).Query().Encode(), "")
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%.40s: %d %s", tc.query, resp.StatusCode, body)
			continue
		}
		items := fastAPI422(t, body)
		if len(items) != 1 || items[0]["type"] != tc.typ || items[0]["msg"] != tc.msg {
			t.Errorf("%.40s: %s", tc.query, body)
			continue
		}
		if loc, _ := json.Marshal(items[0]["loc"]); string(loc) != `["query","`+tc.param+`"]` {
			t.Errorf("%.40s: loc %s", tc.query, loc)
		}
	}
	// At the bounds it answers.
	for _, q := range []string{"limit=1", "limit=200", "offset=0", "min_quality=0", "min_quality=1", "q=" + strings.Repeat("é", 200), "category=" + strings.Repeat("x", 50)} {
		if resp, body := f.call(t, http.MethodGet, "/hed/faq?"+(&url.URL{RawQuery: q}).Query().Encode(), ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%.40s: %d %s", q, resp.StatusCode, body)
		}
	}
}

func TestCitationsFeed(t *testing.T) {
	f := newSyncFixture(t, false)
	resp, body := f.call(t, http.MethodGet, "/hed/citations", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=3600" {
		t.Errorf("Cache-Control %q", cc)
	}
	want := `{"community_id":"hed","total":19,"per_year":{"2021":3,"2022":5,"2023":2,"2024":9},` +
		`"by_paper":{"10.1016/j.neuroimage.2021.118766":{"2021":3,"2022":5,"2024":9},"10.5281/zenodo.1":{"2023":2}},` +
		`"canonical_dois":["10.1016/j.neuroimage.2021.118766","10.5281/zenodo.1"],"labels":{"10.1016/j.neuroimage.2021.118766":"HED paper"}}`
	if strings.TrimSpace(string(body)) != want {
		t.Errorf("feed\n%s\nwant\n%s", body, want)
	}
	resp, body = f.call(t, http.MethodGet, "/empty/citations", "")
	if want := `{"community_id":"empty","total":0,"per_year":{},"by_paper":{},"canonical_dois":[],"labels":{}}`; resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != want {
		t.Errorf("no database: %d %s", resp.StatusCode, body)
	}
	resp, body = f.call(t, http.MethodGet, "/broken/citations", "")
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != `{"detail":"Knowledge database is temporarily unavailable."}` {
		t.Errorf("unreadable database: %d %s", resp.StatusCode, body)
	}
	resp, body = f.call(t, http.MethodGet, "/bids/citations", "")
	if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"detail":"Public citations feed is not enabled for this community."}` {
		t.Errorf("feed off: %d %s", resp.StatusCode, body)
	}
}

// TestYearCountsOrder: years are written in numeric order, not as strings sort.
func TestYearCountsOrder(t *testing.T) {
	b, err := json.Marshal(yearCounts{2016: 1, 999: 2, 10000: 3})
	if err != nil || string(b) != `{"999":2,"2016":1,"10000":3}` {
		t.Errorf("%s, %v", b, err)
	}
}

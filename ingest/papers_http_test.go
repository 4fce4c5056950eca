package ingest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/config"
)

func TestAPIClient(t *testing.T) {
	type answer struct {
		status int
		header map[string]string
		body   string
	}
	clk := newPClock()
	at := clk.Now()
	for _, tc := range []struct {
		name    string
		answers []answer // in turn; the last repeats
		max     int64
		// want: the body returned, or the error's text; waits the clock was asked for.
		want     string
		wantErr  bool
		waits    []time.Duration
		requests int
	}{
		{"ok", []answer{{200, nil, "hello"}}, 100, "hello", false, nil, 1},
		{"a body over the cap", []answer{{200, nil, strings.Repeat("x", 101)}}, 100,
			"GET URL/p: answer larger than 100 bytes, not read further", true, nil, 1},
		{"a declared length over the cap", []answer{{200, map[string]string{"Content-Length": "5000"}, strings.Repeat("x", 5000)}}, 100,
			"GET URL/p: answer larger than 100 bytes, not read further", true, nil, 1},
		{"429 with Retry-After, then ok", []answer{{429, map[string]string{"Retry-After": "30"}, ""}, {200, nil, "ok"}}, 100, "ok", false,
			[]time.Duration{30 * time.Second}, 2},
		{"503 with an HTTP date", []answer{{503, map[string]string{"Retry-After": at.Add(2 * time.Minute).Format(http.TimeFormat)}, ""}, {200, nil, "ok"}}, 100,
			"ok", false, []time.Duration{2 * time.Minute}, 2},
		{"Retry-After past 5 minutes is not waited", []answer{{429, map[string]string{"Retry-After": "301"}, `{"message":"slow down"}`}}, 100,
			"rate limited until 2025-06-02T02:05:01Z", true, nil, 1},
		{"three attempts at most", []answer{{503, map[string]string{"Retry-After": "1"}, ""}}, 100,
			"GET URL/p: HTTP 503 Service Unavailable", true, []time.Duration{time.Second, time.Second}, 3},
		{"a 429 without Retry-After waits 10 s", []answer{{429, nil, ""}, {200, nil, "ok"}}, 100, "ok", false, []time.Duration{10 * time.Second}, 2},
		{"GitHub's limit at zero: waited until its reset and a second", []answer{
			{403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(at.Add(14*time.Minute).Unix(), 10)}, ""},
			{200, nil, "ok"}}, 100, "ok", false, []time.Duration{14*time.Minute + time.Second}, 2},
		{"GitHub's reset too far", []answer{
			{403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(at.Add(time.Hour).Unix(), 10)}, ""}}, 100,
			"rate limited until 2025-06-02T03:00:00Z", true, nil, 1},
		{"a plain 403", []answer{{403, nil, `{"message":"Resource not accessible"}`}}, 100,
			"GET URL/p: HTTP 403 Forbidden: Resource not accessible", true, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if ua := r.Header.Get("User-Agent"); ua != UserAgent {
					t.Errorf("User-Agent %q", ua)
				}
				i := min(int(n.Add(1))-1, len(tc.answers)-1)
				a := tc.answers[i]
				for k, v := range a.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(a.status)
				w.Write([]byte(a.body))
			}))
			defer srv.Close()
			clk := newPClock()
			api := newAPIClient(nil, newClock(clk.Now, clk.Sleep), nil)
			resp, err := api.get(context.Background(), apiCall{url: srv.URL + "/p?api_key=secret", max: tc.max})
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), srv.URL, "URL")
			} else {
				got = string(resp.body)
			}
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %q (err %v), want %q", got, err, tc.want)
			}
			if strings.Contains(got, "secret") {
				t.Errorf("the key in %q", got)
			}
			if d := cmp.Diff(tc.waits, clk.Waits()); d != "" {
				t.Errorf("waits (-want +got):\n%s", d)
			}
			if int(n.Load()) != tc.requests {
				t.Errorf("%d requests, want %d", n.Load(), tc.requests)
			}
		})
	}
}

func TestAPIClientTransportErrorHidesKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	u := srv.URL
	srv.Close() // nothing listens any more
	api := newAPIClient(nil, newClock(nil, nil), nil)
	_, err := api.get(context.Background(), apiCall{url: u + "/works?api_key=secret", max: 10})
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "/works") {
		t.Errorf("err = %v", err)
	}
	var tl *TooLargeError
	if errors.As(err, &tl) {
		t.Error("a transport error is not a size error")
	}
}

// Go's client copies a request's headers (x-api-key among them) onto a redirect to any host,
// and a Location may carry the api_key query on: the API clients follow no redirect off
// their host, so a key never reaches another one.
func TestAPIKeysStayOnTheirHost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{{"default client", nil}, {"the caller's client", &http.Client{Timeout: time.Minute}}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var leaked []string
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				for _, v := range []string{r.Header.Get("x-api-key"), r.URL.Query().Get("api_key"), r.Header.Get("Authorization")} {
					if v != "" {
						leaked = append(leaked, r.URL.Path+": "+v)
					}
				}
				w.Write([]byte(`{}`))
			}))
			defer other.Close()
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
			}))
			defer api.Close()
			clk := newPClock()
			p := NewPapers(PapersOptions{Store: paperStore(t), Client: tc.client, OpenAlexURL: api.URL, SemanticScholarURL: api.URL, PubMedURL: api.URL,
				OpenAlexKey: "oa-key", SemanticScholarKey: "s2-key", PubMedKey: "pm-key", Now: clk.Now, Sleep: clk.Sleep})
			p.SemanticScholarPause, p.PubMedPause = 0, 0
			c := &config.Community{ID: "hed", Citations: &config.Citations{Queries: []string{"hierarchical event"}, DOIs: []string{"10.1016/j.neuroimage.2021.118766"}}}
			res, _ := p.Sync(context.Background(), c, RunOptions{}, nil)
			if len(res.Failed) != 4 {
				t.Errorf("result %+v, want every source (a DOI, three searches) failed on the redirect", res)
			}
			for _, f := range res.Failed {
				if msg := f.Err.Error(); !strings.Contains(msg, "redirect") || strings.Contains(msg, "-key") {
					t.Errorf("%s: %v, want a refused redirect, without the key", f.Source, msg)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(leaked) > 0 {
				t.Errorf("the other host got the keys: %v", leaked)
			}
		})
	}
}

// A redirect on the API's own host (a moved path, http to https) is followed, key and all.
func TestAPIClientFollowsARedirectOnItsHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new?"+r.URL.RawQuery, http.StatusMovedPermanently)
			return
		}
		w.Write([]byte(r.URL.Path + " " + r.Header.Get("x-api-key") + " " + r.URL.Query().Get("api_key")))
	}))
	defer srv.Close()
	api := newAPIClient(nil, newClock(nil, nil), nil)
	resp, err := api.get(context.Background(), apiCall{url: srv.URL + "/old?api_key=k1", header: http.Header{"X-Api-Key": {"k2"}}, max: 100})
	if err != nil || string(resp.body) != "/new k2 k1" {
		t.Errorf("got %v, %v; want /new with both keys", resp, err)
	}
}

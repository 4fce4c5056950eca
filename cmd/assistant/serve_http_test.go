package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCORS(t *testing.T) {
	ts := startServer(t, "--cors-origins", "https://osc.example.org")
	tests := []struct {
		name, path, origin string
		allowed            bool
	}{
		{"community exact", "/hed", "https://www.hedtags.org", true},
		{"community wildcard one label", "/hed", "https://docs.hed-standard.org", true},
		{"wildcard needs a label", "/hed", "https://hed-standard.org", false},
		{"wildcard is one label only", "/hed", "https://a.b.hed-standard.org", false},
		{"wildcard keeps the scheme", "/hed", "http://docs.hed-standard.org", false},
		{"other community's origin", "/bids", "https://www.hedtags.org", false},
		{"server-wide list", "/bids", "https://osc.example.org", true},
		{"foreign", "/hed", "https://evil.example", false},
		{"global route allows community origins", "/health", "https://nemar.org", true},
		{"global route refuses foreign", "/health", "https://evil.example", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pre := ts.do(t, "OPTIONS", tc.path, nil, "Origin", tc.origin, "Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "content-type,x-anthropic-api-key")
			if pre.StatusCode != http.StatusNoContent {
				t.Fatalf("preflight status %d, want 204", pre.StatusCode)
			}
			acao := pre.Header.Get("Access-Control-Allow-Origin")
			if tc.allowed {
				if acao != tc.origin {
					t.Fatalf("ACAO %q, want %q", acao, tc.origin)
				}
				for k, want := range map[string]string{
					"Access-Control-Allow-Credentials": "true",
					"Access-Control-Allow-Methods":     "GET, POST, OPTIONS",
				} {
					if got := pre.Header.Get(k); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
				h := pre.Header.Get("Access-Control-Allow-Headers")
				for _, need := range []string{"Content-Type", "X-Anthropic-API-Key", "X-OpenRouter-Key"} {
					if !strings.Contains(h, need) {
						t.Errorf("Allow-Headers %q lacks %s", h, need)
					}
				}
			} else if acao != "" || pre.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("foreign origin got ACAO %q", acao)
			}
			get := ts.do(t, "GET", tc.path, nil, "Origin", tc.origin)
			if got := get.Header.Get("Access-Control-Allow-Origin"); (got == tc.origin) != tc.allowed {
				t.Errorf("GET ACAO %q, allowed=%v", got, tc.allowed)
			}
			if !strings.Contains(get.Header.Get("Vary"), "Origin") {
				t.Errorf("GET without Vary: Origin")
			}
		})
	}
	// Wheels are public and immutable, fetched from a blob: worker: any origin, no credentials.
	w := ts.do(t, "GET", "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", nil, "Origin", "https://evil.example")
	if w.Header.Get("Access-Control-Allow-Origin") != "*" || w.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("wheel CORS: ACAO %q credentials %q", w.Header.Get("Access-Control-Allow-Origin"), w.Header.Get("Access-Control-Allow-Credentials"))
	}
}

func TestBasePath(t *testing.T) {
	ts := startServer(t, "--base-path", "/osa-dev/")
	noRedirect := *ts.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Get(ts.URL + "/osa-dev?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != "/osa-dev/?x=1" {
		t.Fatalf("bare prefix: %d Location %q, want 308 /osa-dev/?x=1", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, want := range map[string]int{
		"/osa-dev/":       200,
		"/osa-dev/health": 200,
		"/osa-dev/hed":    200,
		"/osa-devx":       404,
		"/hed":            404,
		"/health":         404,
	} {
		if r := ts.do(t, "GET", path, nil); r.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, r.StatusCode, want)
		}
	}
	// Wheels stay public under a base path: a page on any origin may load them.
	w := ts.do(t, "GET", "/osa-dev/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", nil, "Origin", "https://elsewhere.example")
	if w.StatusCode != 200 || w.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("wheel under the base path: %d, ACAO %q", w.StatusCode, w.Header.Get("Access-Control-Allow-Origin"))
	}
	// The base path /osa-dev selects the develop deployment when none is set.
	var v struct {
		Runtime struct {
			Python struct {
				FetchAllow []string `json:"fetch_allow"`
			} `json:"python"`
		} `json:"runtime"`
	}
	if err := json.Unmarshal(readAll(t, ts.do(t, "GET", "/osa-dev/nemar", nil)), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Runtime.Python.FetchAllow) != 1 || v.Runtime.Python.FetchAllow[0] != "https://zarr-test.nemar.org/" {
		t.Errorf("fetch_allow %v, want the develop list", v.Runtime.Python.FetchAllow)
	}
}

func TestGlobalRoutes(t *testing.T) {
	ts := startServer(t)
	var health struct {
		Status  string `json:"status"`
		Backend struct {
			Version string `json:"version"`
		} `json:"backend"`
	}
	if err := json.Unmarshal(readAll(t, ts.do(t, "GET", "/health", nil)), &health); err != nil || health.Status != "healthy" || health.Backend.Version != version {
		t.Errorf("health = %+v, %v", health, err)
	}
	var list []struct {
		ID     string         `json:"id"`
		Widget map[string]any `json:"widget"`
		Links  map[string]any `json:"links"`
	}
	if err := json.Unmarshal(readAll(t, ts.do(t, "GET", "/communities", nil)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].ID != "bids" || list[1].ID != "hed" || list[2].ID != "nemar" {
		t.Fatalf("communities = %+v", list)
	}
	if _, ok := list[0].Widget["theme_color"]; ok {
		t.Errorf("an unset colour is listed for bids: %v", list[0].Widget)
	}
	if list[1].Widget["theme_color"] != "#1f4e79" || list[1].Widget["logo_url"] != "/hed/logo" || list[1].Links["homepage"] != "https://www.hedtags.org" {
		t.Errorf("hed listing = %+v", list[1])
	}
	var root struct {
		Communities []string `json:"communities"`
	}
	if err := json.Unmarshal(readAll(t, ts.do(t, "GET", "/", nil)), &root); err != nil || len(root.Communities) != 3 {
		t.Errorf("root = %+v, %v", root, err)
	}
	if r := ts.do(t, "GET", "/nope", nil); r.StatusCode != 404 || string(readAll(t, r)) != `{"detail":"Not Found"}`+"\n" {
		t.Errorf("unknown community: %d", r.StatusCode)
	}
	if r := ts.do(t, "DELETE", "/hed", nil); r.StatusCode != 405 {
		t.Errorf("DELETE /hed: %d, want 405", r.StatusCode)
	}
}

func TestLogo(t *testing.T) {
	ts := startServer(t)
	r := ts.do(t, "GET", "/hed/logo", nil)
	want, _ := os.ReadFile("../../communities/hed/logo.svg")
	if got := readAll(t, r); r.StatusCode != 200 || string(got) != string(want) {
		t.Fatalf("status %d", r.StatusCode)
	}
	if r.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("headers %v", r.Header)
	}
	if r := ts.do(t, "GET", "/bids/logo", nil); r.StatusCode != 404 || string(readAll(t, r)) != `{"detail":"No logo found for this community"}`+"\n" {
		t.Errorf("bids logo: %d", r.StatusCode)
	}
}

func TestFeedback(t *testing.T) {
	ts := startServer(t)
	post := func(body string) (int, string) {
		r := ts.do(t, "POST", "/feedback", strings.NewReader(body), "Content-Type", "application/json")
		return r.StatusCode, string(readAll(t, r))
	}
	if code, body := post(`{"community_id":"hed","feedback_type":"response","sentiment":"up","comment":null,"request_id":null,"session_id":"s1","message_index":2,"extra":"ignored"}`); code != 200 || !strings.Contains(body, `"status":"ok"`) || !strings.Contains(body, `"feedback_id":"`) {
		t.Errorf("good response feedback: %d %s", code, body)
	}
	if code, body := post(`{"community_id":"hed","feedback_type":"general","comment":"Great","page_url":"https://www.hedtags.org/"}`); code != 200 {
		t.Errorf("good general feedback: %d %s", code, body)
	}
	if code, body := post(`{"community_id":"nope","sentiment":"down"}`); code != 404 || body != `{"detail":"Unknown community: nope"}`+"\n" {
		t.Errorf("unknown community: %d %s", code, body)
	}
	code, body := post(`{"community_id":"","feedback_type":"general","comment":"  ","page_url":"file:///x","message_index":-1,"session_id":"` + strings.Repeat("s", 129) + `"}`)
	if code != 422 {
		t.Fatalf("bad feedback: %d %s", code, body)
	}
	var detail struct {
		Detail []struct {
			Type string `json:"type"`
			Loc  []any  `json:"loc"`
		} `json:"detail"`
	}
	if err := json.Unmarshal([]byte(body), &detail); err != nil {
		t.Fatal(err)
	}
	var locs []string
	for _, d := range detail.Detail {
		locs = append(locs, d.Loc[1].(string)+":"+d.Type)
	}
	want := "community_id:string_too_short session_id:string_too_long message_index:greater_than_equal page_url:value_error comment:value_error"
	if strings.Join(locs, " ") != want {
		t.Errorf("422 items = %v\nwant %s", locs, want)
	}
	if code, _ := post(`{"community_id":"hed"`); code != 422 {
		t.Errorf("broken JSON: %d, want 422", code)
	}
	if code, _ := post(`{"community_id":"hed","sentiment":"up","comment":"` + strings.Repeat("x", 70000) + `"}`); code != 413 {
		t.Errorf("oversized body: %d, want 413", code)
	}
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../../communities", dir)
	ts := startServer(t, "--communities", dir, "--admin-key", "sesame")
	reload := func(key string) (int, string) {
		r := ts.do(t, "POST", "/admin/reload", nil, "X-API-Key", key)
		return r.StatusCode, string(readAll(t, r))
	}
	if code, _ := reload(""); code != 401 {
		t.Errorf("no key: %d, want 401", code)
	}
	if code, _ := reload("wrong"); code != 403 {
		t.Errorf("wrong key: %d, want 403", code)
	}
	hedFile := filepath.Join(dir, "hed/config.yaml")
	good, _ := os.ReadFile(hedFile)
	// A broken config: the reload fails and the old communities stay.
	if err := os.WriteFile(hedFile, []byte(strings.Replace(string(good), "name: HED (Hierarchical Event Descriptors)", "name: [broken", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := reload("sesame"); code != 422 || !strings.Contains(body, "still serving the previous communities") {
		t.Errorf("broken reload: %d %s", code, body)
	}
	if !strings.Contains(string(readAll(t, ts.do(t, "GET", "/hed", nil))), `"name":"HED (Hierarchical Event Descriptors)"`) {
		t.Error("a failed reload changed what is served")
	}
	metrics := string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
	if !strings.Contains(metrics, "assistant_config_last_reload_success 0") || !strings.Contains(metrics, `assistant_config_reloads_total{result="failure"} 1`) {
		t.Errorf("metrics after a failed reload:\n%s", grepLines(metrics, "reload"))
	}
	// A good config: the reload swaps.
	if err := os.WriteFile(hedFile, []byte(strings.Replace(string(good), "name: HED (Hierarchical Event Descriptors)", "name: HED 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := reload("sesame"); code != 200 {
		t.Errorf("good reload: %d %s", code, body)
	}
	if !strings.Contains(string(readAll(t, ts.do(t, "GET", "/hed", nil))), `"name":"HED 2"`) {
		t.Error("a good reload did not swap")
	}
	if m := string(readAll(t, ts.do(t, "GET", "/metrics", nil))); !strings.Contains(m, "assistant_config_last_reload_success 1") {
		t.Errorf("metrics after a good reload:\n%s", grepLines(m, "reload"))
	}
}

func TestMetrics(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "GET", "/hed", nil)
	ts.do(t, "GET", "/nope/logo", nil)
	m := string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
	for _, want := range []string{
		`assistant_http_requests_total{method="GET",route="/:c",status="200"} 1`,
		`assistant_http_requests_total{method="GET",route="/:c/logo",status="404"} 1`,
		`assistant_http_request_duration_seconds_bucket{route="/:c",le="+Inf"} 1`,
		`assistant_community_config_status{community="nemar",status="healthy"} 1`,
		`assistant_config_last_reload_success 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

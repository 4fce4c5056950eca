package routers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// do sends one request over real HTTP (so net/http, not a recorder, decides what a HEAD
// answer carries) and returns the answer and its body.
func do(t *testing.T, ts *httptest.Server, method, path string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestUnknownPathsNotFound: a path no route serves is 404 {"detail":"Not Found"} for every
// method. A catch-all OPTIONS route used to make every path known, so they answered 405.
func TestUnknownPathsNotFound(t *testing.T) {
	for _, base := range []string{"", "/osa"} {
		ts := httptest.NewServer(newDemoServer(t, base, nil))
		t.Cleanup(ts.Close)
		for _, path := range []string{"/no/such/path", "/nemar/nope/deeper", "/hed/chat/resume/x", "/health/x"} {
			for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, http.MethodHead} {
				resp, body := do(t, ts, method, base+path, "Origin", "https://www.hedtags.org")
				want := `{"detail":"Not Found"}` + "\n"
				if method == http.MethodHead {
					want = ""
				}
				if resp.StatusCode != http.StatusNotFound || body != want {
					t.Errorf("%s %s%s: %d %q, want 404 %q", method, base, path, resp.StatusCode, body, want)
				}
			}
		}
	}
}

// TestWrongMethodStill405: a path that a route serves with other methods stays 405, with an
// Allow header.
func TestWrongMethodStill405(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t))
	t.Cleanup(ts.Close)
	for _, tc := range []struct{ method, path string }{
		{http.MethodDelete, "/hed"}, {http.MethodPost, "/health"}, {http.MethodGet, "/hed/chat"}, {http.MethodPut, "/feedback"},
	} {
		resp, body := do(t, ts, tc.method, tc.path)
		if resp.StatusCode != http.StatusMethodNotAllowed || body != `{"detail":"Method Not Allowed"}`+"\n" || resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: %d %q, Allow %q", tc.method, tc.path, resp.StatusCode, body, resp.Header.Get("Allow"))
		}
	}
}

// TestHeadLikeGet: HEAD answers wherever GET does, with the same status and headers and no
// body. It used to be 405 everywhere.
func TestHeadLikeGet(t *testing.T) {
	ts := httptest.NewServer(newDemoServer(t, "", nil))
	t.Cleanup(ts.Close)
	// Headers that differ between any two requests.
	varying := []string{"Date", "X-Request-Id"}
	for _, path := range []string{
		"/", "/health", "/version", "/communities", "/metrics", "/hed", "/hed/", "/hed/logo",
		"/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", "/nemar/demo", "/nemar/demo/",
		"/nope", "/hed/runtime/nope.whl", "/hed/sessions/s/artifacts/c/x.png",
	} {
		// The same Accept-Encoding on both (a client adds gzip to a GET, not to a HEAD).
		get, getBody := do(t, ts, http.MethodGet, path, "Origin", "https://www.hedtags.org", "Accept-Encoding", "gzip")
		head, headBody := do(t, ts, http.MethodHead, path, "Origin", "https://www.hedtags.org", "Accept-Encoding", "gzip")
		if head.StatusCode != get.StatusCode || headBody != "" || get.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("%s: HEAD %d with %d bytes, GET %d", path, head.StatusCode, len(headBody), get.StatusCode)
			continue
		}
		if get.StatusCode == http.StatusOK && getBody == "" {
			t.Errorf("%s: GET has no body", path)
		}
		for k := range get.Header {
			if slices.Contains(varying, k) || (path == "/metrics" && k == "Content-Length") {
				continue // the metrics grow with every request
			}
			if g, h := strings.Join(get.Header[k], ", "), strings.Join(head.Header[k], ", "); g != h {
				t.Errorf("%s: %s is %q on GET, %q on HEAD", path, k, g, h)
			}
		}
	}
}

// TestPreflights: a preflight on a path a route serves is 204 with the CORS headers for an
// allowed origin and without them for a foreign one, as when a catch-all route answered it.
func TestPreflights(t *testing.T) {
	for _, base := range []string{"", "/osa"} {
		ts := httptest.NewServer(newDemoServer(t, base, nil))
		t.Cleanup(ts.Close)
		for _, tc := range []struct {
			path, origin string
			allowed      bool
		}{
			{"/hed/chat", "https://www.hedtags.org", true},
			{"/hed/chat/resume", "https://docs.hed-standard.org", true},
			{"/hed", "https://www.hedtags.org", true},
			{"/health", "https://nemar.org", true},
			{"/feedback", "https://nemar.org", true},
			{"/bids/chat", "https://www.hedtags.org", false},
			{"/hed/chat", "https://evil.example", false},
			// Wheels are judged by the community's origins on a preflight, as before; their
			// GET allows any origin.
			{"/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", "https://nemar.org", true},
			{"", "https://nemar.org", true}, // the bare base path, or the root
		} {
			resp, body := do(t, ts, http.MethodOptions, base+tc.path, "Origin", tc.origin, "Access-Control-Request-Method", "POST")
			h := resp.Header
			if resp.StatusCode != http.StatusNoContent || body != "" {
				t.Errorf("OPTIONS %s%s: %d %q", base, tc.path, resp.StatusCode, body)
				continue
			}
			got := h.Get("Access-Control-Allow-Origin") == tc.origin && h.Get("Access-Control-Allow-Credentials") == "true" &&
				h.Get("Access-Control-Allow-Methods") == "GET, POST, OPTIONS" && strings.Contains(h.Get("Access-Control-Allow-Headers"), "X-Anthropic-API-Key")
			if got != tc.allowed || (!tc.allowed && h.Get("Access-Control-Allow-Origin") != "") {
				t.Errorf("OPTIONS %s%s from %s: CORS headers %v, want allowed=%v", base, tc.path, tc.origin, h, tc.allowed)
			}
		}
	}
}

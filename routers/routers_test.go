package routers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
)

func TestOriginSet(t *testing.T) {
	s := newOriginSet([]string{"https://example.org", "https://*.hed.org", "http://localhost:8080/", "https://*.port.org:8443"})
	tests := map[string]bool{
		"https://example.org":     true,
		"HTTPS://EXAMPLE.ORG":     true,
		"https://example.org:443": false,
		"http://example.org":      false,
		"https://a.hed.org":       true,
		"https://a-b.hed.org":     true,
		"https://-a.hed.org":      false,
		"https://a.b.hed.org":     false,
		"https://hed.org":         false,
		"https://.hed.org":        false,
		"https://evilhed.org":     false,
		"http://localhost:8080":   true,
		"https://x.port.org:8443": true,
		"https://x.port.org":      false,
		"https://a.hed.org/path":  false,
		"https://user@a.hed.org":  false,
		"":                        false,
		"null":                    false,
		// A DNS label is at most 63 characters.
		"https://" + strings.Repeat("a", 63) + ".hed.org": true,
		"https://" + strings.Repeat("a", 64) + ".hed.org": false,
		"https://a-.hed.org":                              false,
		"https://a_b.hed.org":                             false,
		"https://A.HED.ORG":                               true,
		"https://a.hed.org.":                              false,
		"https://a.hed.org:443":                           false,
		"https://a.hed.org?x":                             false,
		"https://a.hed.org#x":                             false,
		"https://x.y.port.org:8443":                       false,
		"https://" + strings.Repeat("a", 300):             false,
	}
	for origin, want := range tests {
		if got := s.allows(origin); got != want {
			t.Errorf("allows(%q) = %v, want %v", origin, got, want)
		}
	}
}

// TestCatalogOrigins: the global routes allow every community's origins from one set built at
// load, with each pattern held once however many communities list it.
func TestCatalogOrigins(t *testing.T) {
	s := syntheticServer(t, 1000)
	global := s.cat.Load().origins
	if len(global.wildcard) != 1000 {
		t.Errorf("%d wildcard patterns for 1000 communities", len(global.wildcard))
	}
	for _, tc := range []struct {
		origin  string
		allowed bool
	}{
		{"https://www.c000.example.org", true},
		{"https://www.c999.example.org", true},
		{"https://www.c1000.example.org", false},
		{"https://c999.example.org", false},
		{"http://www.c999.example.org", false},
		{craftedOrigin, false},
	} {
		if got := global.allows(tc.origin); got != tc.allowed {
			t.Errorf("global allows(%q) = %v", tc.origin, got)
		}
		// A community's own routes allow only its own origins.
		if got := s.cat.Load().byID["c999"].origins.allows(tc.origin); got != (tc.allowed && strings.Contains(tc.origin, "c999")) {
			t.Errorf("c999 allows(%q) = %v", tc.origin, got)
		}
	}
	shared := newOriginSet([]string{"https://*.shared.org", "https://*.SHARED.org/", " https://*.shared.org "})
	if len(shared.wildcard) != 1 || !shared.allows("https://a.shared.org") {
		t.Errorf("a pattern listed three times: %v", shared.wildcard)
	}
}

func newTestServer(t testing.TB) *Server {
	t.Helper()
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo"}, Getenv: func(string) string { return "" }, Communities: set})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzWheelPath: no request path under the wheel route yields anything but the one listed
// wheel, which is served only under its exact name.
func FuzzWheelPath(f *testing.F) {
	const listed = "nemar_tools-0.1.0-py3-none-any.whl"
	for _, seed := range []string{listed, "..%2Fconfig.yaml", "%2E%2E%2Flock.json", "../config.yaml", "wheels/" + listed, listed + "%00", "./" + listed} {
		f.Add(seed)
	}
	s := newTestServer(f)
	f.Fuzz(func(t *testing.T, name string) {
		u := &url.URL{Path: "/nemar/runtime/" + name}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL = u
		req.RequestURI = u.EscapedPath()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK && name != listed {
			t.Fatalf("name %q served %d bytes", name, rec.Body.Len())
		}
		if rec.Code != http.StatusOK && name == listed {
			t.Fatalf("the listed wheel answered %d", rec.Code)
		}
		if rec.Code >= 500 {
			t.Fatalf("name %q: status %d", name, rec.Code)
		}
	})
}

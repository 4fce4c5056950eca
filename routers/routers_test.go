package routers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	}
	for origin, want := range tests {
		if got := s.allows(origin); got != want {
			t.Errorf("allows(%q) = %v, want %v", origin, got, want)
		}
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

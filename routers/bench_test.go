package routers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
)

// BenchmarkRoutes measures the server's own cost per request (routing, middleware, logging
// to a discarding handler, metrics), without the network.
func BenchmarkRoutes(b *testing.B) {
	s := newTestServer(b)
	for _, path := range []string{"/nemar", "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", "/health"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// syntheticServer serves n minimal communities c000, c001, …, each allowing its own wildcard
// origin https://*.cNNN.example.org.
func syntheticServer(tb testing.TB, n int) *Server {
	tb.Helper()
	set := &config.Set{}
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		set.Communities = append(set.Communities, &config.Community{
			ID: id, Name: id, Description: id, Status: "available",
			CORSOrigins: []string{"https://*." + id + ".example.org"},
		})
	}
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo"}, Getenv: func(string) string { return "" }, Communities: set})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// craftedOrigin has the scheme of every wildcard origin and a valid first label, and matches
// none of them, so a matcher that tries each pattern in turn tries them all.
var craftedOrigin = "https://" + strings.Repeat("a", 60) + ".nope.example.org"

// BenchmarkCORSCommunities is GET /health with a crafted Origin at 1 and at 1,000 communities:
// the global routes allow every community's origins, and checking one must not cost more with
// more communities. The allows benchmarks time the origin check alone.
func BenchmarkCORSCommunities(b *testing.B) {
	// Both servers are built first, so both runs see the same live heap and so the same
	// garbage-collection pace.
	sizes := []int{1, 1000}
	servers := make([]*Server, len(sizes))
	for i, n := range sizes {
		servers[i] = syntheticServer(b, n)
	}
	for i, n := range sizes {
		s := servers[i]
		b.Run(fmt.Sprintf("health/communities=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/health", nil)
				req.Header.Set("Origin", craftedOrigin)
				s.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || rec.Header().Get("Access-Control-Allow-Origin") != "" {
					b.Fatalf("status %d, ACAO %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"))
				}
			}
		})
		b.Run(fmt.Sprintf("allows/communities=%d", n), func(b *testing.B) {
			set := s.cat.Load().origins
			b.ReportAllocs()
			for b.Loop() {
				if set.allows(craftedOrigin) {
					b.Fatal("the crafted origin is allowed")
				}
			}
		})
	}
}

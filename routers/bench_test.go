package routers

import (
	"net/http"
	"net/http/httptest"
	"testing"
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

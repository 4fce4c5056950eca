package routers

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/fastpath"
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

// BenchmarkObserve is GET /nemar (gzip) with the request log off, writing to a ResponseWriter
// that keeps nothing: what the server itself allocates per request.
func BenchmarkObserve(b *testing.B) {
	s := newQuietServer(b)
	req := httptest.NewRequest(http.MethodGet, "/nemar", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, req)
	}
}

// BenchmarkWrk serves the shipped communities over loopback through the fast path ahead of
// net/http (as assistant serve does) and with net/http alone, the request log off, and drives
// each path with wrk (one op is one wrk run), so that
// `go test -cpuprofile` profiles the server under the load scripts/bench_http.sh puts on it.
// It runs only with ASSISTANT_BENCH_WRK=1 and wrk on PATH:
//
//	ASSISTANT_BENCH_WRK=1 go test ./routers -run '^$' -bench BenchmarkWrk -benchtime 1x -cpuprofile /tmp/cpu.out
func BenchmarkWrk(b *testing.B) {
	if os.Getenv("ASSISTANT_BENCH_WRK") != "1" {
		b.Skip("set ASSISTANT_BENCH_WRK=1")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("no wrk")
	}
	al, _ := ParseAccessLog("off")
	s, err := New(Deps{Settings: Settings{DefaultModel: "scripted/demo", AccessLog: al}, Logger: slog.New(slog.DiscardHandler),
		Getenv: func(string) string { return "" }, Communities: newTestServer(b).deps.Communities})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: s}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	// What assistant serve runs: the fast path ahead of net/http.
	fastLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	fp := &fastpath.Server{Answer: s.AnswerFast, Sent: s.SentFast, HTTP: &http.Server{Handler: s}}
	go func() { _ = fp.Serve(fastLn) }()
	b.Cleanup(func() { _ = fp.Shutdown(context.Background()) })
	fast := fastLn.Addr().String()
	// The floor: a bare net/http handler writing GET /nemar's gzip bytes with the same headers,
	// no router, no middleware, no metrics.
	nb := s.cat.Load().byID["nemar"].public
	floorLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	floor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"], h["Content-Length"], h["Content-Encoding"] = nb.contentType, nb.gzip.length, nb.gzip.encoding
		h["Etag"], h["Vary"], h["Cache-Control"], h["X-Request-Id"] = nb.gzip.etag, varyOriginAE, noCache, newRequestID()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(nb.gzip.data)
	})}
	go func() { _ = floor.Serve(floorLn) }()
	b.Cleanup(func() { _ = floor.Close() })
	for _, tc := range []struct{ name, addr, path, accept string }{
		{"fast-nemar-gzip", fast, "/nemar", "gzip"},
		{"fast-wheel", fast, "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", ""},
		{"fast-communities-gzip", fast, "/communities", "gzip"},
		{"net-http-nemar-gzip", ln.Addr().String(), "/nemar", "gzip"},
		{"bare-net-http-nemar-gzip", floorLn.Addr().String(), "/nemar", "gzip"},
		{"net-http-wheel", ln.Addr().String(), "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", ""},
		{"net-http-communities-gzip", ln.Addr().String(), "/communities", "gzip"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var rps float64
			for b.Loop() {
				args := []string{"-t1", "-c16", "-d5s"}
				if tc.accept != "" {
					args = append(args, "-H", "Accept-Encoding: "+tc.accept)
				}
				out, err := exec.Command(wrk, append(args, "http://"+tc.addr+tc.path)...).CombinedOutput()
				if err != nil {
					b.Fatalf("wrk: %v\n%s", err, out)
				}
				for line := range strings.Lines(string(out)) {
					if v, ok := strings.CutPrefix(line, "Requests/sec:"); ok {
						rps, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
					}
				}
			}
			b.ReportMetric(rps, "req/s")
		})
	}
}

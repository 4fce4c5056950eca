package routers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/fastpath"
)

// syncBuffer is a log destination the connections' goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// take returns what was logged since the last take.
func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// takeRequest waits for a request line to be logged (a handler may log after the client has
// its answer), then returns what was logged.
func (s *syncBuffer) takeRequest() string {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		logged := strings.Contains(s.b.String(), `"msg":"request"`)
		s.mu.Unlock()
		if logged {
			break
		}
	}
	return s.take()
}

// fastPair serves one Server twice on loopback: through the fast path ahead of net/http, and
// through net/http alone.
type fastPair struct {
	srv       *Server
	fp        *fastpath.Server
	fast, std string // addresses
	log       *syncBuffer
}

func newFastPair(t *testing.T, base string, getenv func(string) string) *fastPair {
	t.Helper()
	p := &fastPair{log: &syncBuffer{}}
	srv, err := New(Deps{Settings: Settings{BasePath: base, Deployment: config.Production, DefaultModel: "scripted/demo", FastPath: true},
		Logger: slog.New(slog.NewJSONHandler(p.log, nil)), Getenv: getenv, Communities: newTestServer(t).deps.Communities})
	if err != nil {
		t.Fatal(err)
	}
	p.srv = srv
	lf, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.fp = &fastpath.Server{Answer: srv.AnswerFast, Sent: srv.SentFast, HTTP: &http.Server{Handler: srv}}
	hs := &http.Server{Handler: srv}
	go func() { _ = p.fp.Serve(lf) }()
	go func() { _ = hs.Serve(ls) }()
	t.Cleanup(func() {
		_ = p.fp.Shutdown(t.Context())
		_ = hs.Close()
	})
	p.fast, p.std = lf.Addr().String(), ls.Addr().String()
	p.log.take() // the warnings of New
	return p
}

// rawAnswer sends one request in its own connection and reads the answer; for a HEAD the
// body is not read.
func rawAnswer(t *testing.T, addr, req string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	method := req[:strings.IndexByte(req, ' ')]
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// logLine reads the one request line logged, without the fields that differ per request.
func logLine(t *testing.T, logged string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(logged), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one log line, got %q", logged)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "time")
	delete(m, "duration")
	return m
}

// TestFastPathMatchesEcho: for every request the fast path answers, and for the neighbours it
// leaves to echo, the client sees the same status, headers and bytes as from net/http and echo
// alone, the request log has the same line and the metrics count the same series. Each case
// also says whether the fast path must have answered it, so the comparison cannot pass by
// handing everything off.
func TestFastPathMatchesEcho(t *testing.T) {
	wheel := "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl"
	type tc struct {
		name    string
		method  string
		path    string
		headers []string
		fast    bool
	}
	cases := []tc{
		{"config", "GET", "/nemar", nil, true},
		{"config, trailing slash", "GET", "/hed/", nil, true},
		{"config with a query", "GET", "/nemar?v=2", nil, true},
		{"config gzip", "GET", "/nemar", []string{"Accept-Encoding: gzip, deflate, br"}, true},
		{"config gzip refused", "GET", "/nemar", []string{"Accept-Encoding: gzip;q=0"}, true},
		{"config identity refused", "GET", "/nemar", []string{"Accept-Encoding: identity;q=0"}, true},
		{"config everything refused", "GET", "/nemar", []string{"Accept-Encoding: *;q=0"}, true},
		{"config HEAD", "HEAD", "/nemar", []string{"Accept-Encoding: gzip"}, true},
		{"config 304", "GET", "/nemar", []string{"If-None-Match: *"}, true},
		{"config 304 weak, gzip", "GET", "/nemar", []string{"Accept-Encoding: gzip", "If-None-Match: W/\"x\", " + "%ETAG%"}, true},
		{"config, other ETag", "GET", "/nemar", []string{"If-None-Match: \"nope\""}, true},
		{"config, allowed origin", "GET", "/nemar", []string{"Origin: https://nemar.org"}, true},
		{"config, allowed origin in capitals", "GET", "/nemar", []string{"Origin: HTTPS://NEMAR.ORG"}, true},
		{"config, foreign origin", "GET", "/nemar", []string{"Origin: https://evil.example"}, true},
		{"config, another community's origin", "GET", "/nemar", []string{"Origin: https://www.hedtags.org"}, true},
		{"config, client request id", "GET", "/bids", []string{"X-Request-ID: client-id-123"}, true},
		{"config, Connection: close", "GET", "/bids", []string{"Connection: close"}, true},
		{"listing", "GET", "/communities", nil, true},
		{"listing gzip, origin", "GET", "/communities", []string{"Accept-Encoding: gzip", "Origin: https://www.hedtags.org"}, true},
		{"logo", "GET", "/hed/logo", []string{"Origin: https://anywhere.example"}, true},
		{"logo gzip", "GET", "/hed/logo", []string{"Accept-Encoding: gzip"}, true},
		{"wheel", "GET", wheel, []string{"Origin: https://anywhere.example", "Accept-Encoding: gzip"}, true},
		{"wheel HEAD", "HEAD", wheel, nil, true},
		{"wheel 304", "GET", wheel, []string{"If-None-Match: %ETAG%"}, true},

		{"wheel range (echo's)", "GET", wheel, []string{"Range: bytes=0-9"}, false},
		{"wheel unknown", "GET", "/nemar/runtime/nope-0.1-py3-none-any.whl", nil, false},
		{"wheel of a community without one", "GET", "/hed/runtime/x.whl", nil, false},
		{"no logo", "GET", "/nemar/logo", nil, false},
		{"unknown community", "GET", "/nope", nil, false},
		{"upper case", "GET", "/NEMAR", nil, false},
		{"double slash", "GET", "//nemar", nil, false},
		{"percent-encoded", "GET", "/ne%6Dar", nil, false},
		{"health", "GET", "/health", nil, false},
		{"root", "GET", "/", nil, false},
		{"demo page", "GET", "/nemar/demo/", nil, false},
		{"POST", "POST", "/nemar", []string{"Content-Length: 0"}, false},
		{"preflight", "OPTIONS", "/nemar", []string{"Origin: https://nemar.org", "Access-Control-Request-Method: GET"}, false},
	}
	for _, variant := range []struct {
		name, base string
		getenv     func(string) string
	}{
		{"plain", "", func(string) string { return "" }},
		{"base path", "/osa", func(string) string { return "" }},
		{"nemar's tools off", "", func(k string) string {
			if k == "ASSISTANT_CLIENT_TOOLS_DISABLED" {
				return "nemar"
			}
			return ""
		}},
	} {
		t.Run(variant.name, func(t *testing.T) {
			p := newFastPair(t, variant.base, variant.getenv)
			toolsOff := variant.getenv("ASSISTANT_CLIENT_TOOLS_DISABLED") != ""
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					fast := c.fast
					if toolsOff && strings.HasPrefix(c.path, "/nemar/runtime/") {
						fast = false // 404 with the tools off
					}
					path := c.path
					if variant.base != "" && strings.HasPrefix(path, "/") && path != "//nemar" {
						path = variant.base + path
					}
					headers := c.headers
					if etagIn(headers) {
						probe, _ := rawAnswer(t, p.std, c.method+" "+path+" HTTP/1.1\r\nHost: x\r\n"+acceptOf(headers)+"\r\n")
						headers = withETag(headers, probe.Header.Get("Etag"))
						p.log.takeRequest()
					}
					req := c.method + " " + path + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(append(headers, ""), "\r\n") + "\r\n"
					before, _ := p.fp.Stats()
					c0 := requestCounts(t, p.srv)
					got, gotBody := rawAnswer(t, p.fast, req)
					after, _ := p.fp.Stats()
					gotLog := p.log.takeRequest()
					c1 := requestCounts(t, p.srv)
					want, wantBody := rawAnswer(t, p.std, req)
					wantLog := p.log.takeRequest()
					c2 := requestCounts(t, p.srv)
					if answered := after > before; answered != fast {
						t.Errorf("answered by the fast path: %v, want %v", answered, fast)
					}
					if got.StatusCode != want.StatusCode || !bytes.Equal(gotBody, wantBody) {
						t.Fatalf("%d with %d bytes, want %d with %d bytes", got.StatusCode, len(gotBody), want.StatusCode, len(wantBody))
					}
					compareHeaders(t, got.Header, want.Header, hasHeader(headers, "X-Request-ID"))
					gl, wl := logLine(t, gotLog), logLine(t, wantLog)
					if hasHeader(headers, "X-Request-ID") {
						if gl["request_id"] != wl["request_id"] {
							t.Errorf("logged request id %v, want %v", gl["request_id"], wl["request_id"])
						}
					} else if gl["request_id"] != got.Header.Get("X-Request-Id") {
						t.Errorf("logged request id %v, answered %q", gl["request_id"], got.Header.Get("X-Request-Id"))
					}
					delete(gl, "request_id")
					delete(wl, "request_id")
					if !equalJSON(gl, wl) {
						t.Errorf("log line\n %v\nwant\n %v", gl, wl)
					}
					// Each answer was counted once, under the same series.
					route, _ := wl["route"].(string)
					series := route + " " + c.method + " " + strconv.Itoa(want.StatusCode)
					if d := countDiff(c0, c1); len(d) != 1 || d[series] != 1 {
						t.Errorf("metrics for the fast path's answer: %v, want %s +1", d, series)
					}
					if d := countDiff(c1, c2); len(d) != 1 || d[series] != 1 {
						t.Errorf("metrics for echo's answer: %v, want %s +1", d, series)
					}
				})
			}
		})
	}
}

// requestCounts reads assistant_http_requests_total by "route method status".
func requestCounts(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "assistant_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out[l["route"]+" "+l["method"]+" "+l["status"]] = m.GetCounter().GetValue()
		}
	}
	return out
}

// countDiff is what changed from a to b.
func countDiff(a, b map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range b {
		if v != a[k] {
			d[k] = v - a[k]
		}
	}
	return d
}

func etagIn(headers []string) bool {
	for _, h := range headers {
		if strings.Contains(h, "%ETAG%") {
			return true
		}
	}
	return false
}

func acceptOf(headers []string) string {
	for _, h := range headers {
		if strings.HasPrefix(h, "Accept-Encoding:") {
			return h + "\r\n"
		}
	}
	return ""
}

func withETag(headers []string, etag string) []string {
	out := make([]string, len(headers))
	for i, h := range headers {
		out[i] = strings.ReplaceAll(h, "%ETAG%", etag)
	}
	return out
}

func hasHeader(headers []string, name string) bool {
	for _, h := range headers {
		if strings.HasPrefix(strings.ToLower(h), strings.ToLower(name)+":") {
			return true
		}
	}
	return false
}

// compareHeaders: the same header lines, values in the same order, except Date (the clock) and
// a request id the server made up (random).
func compareHeaders(t *testing.T, got, want http.Header, sameID bool) {
	t.Helper()
	skip := map[string]bool{"Date": true}
	if !sameID {
		skip["X-Request-Id"] = true
		if len(got.Values("X-Request-Id")) != 1 || len(got.Get("X-Request-Id")) != 32 {
			t.Errorf("X-Request-Id %q", got.Values("X-Request-Id"))
		}
	}
	if len(got.Values("Date")) != 1 {
		t.Errorf("Date %q", got.Values("Date"))
	}
	for k, v := range want {
		if !skip[k] && strings.Join(got[k], "\n") != strings.Join(v, "\n") {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && !skip[k] {
			t.Errorf("%s: %q, not sent by echo", k, v)
		}
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// newQuietServer is the shipped communities with the request log off.
func newQuietServer(t testing.TB) *Server {
	t.Helper()
	al, _ := ParseAccessLog("off")
	s, err := New(Deps{Settings: Settings{DefaultModel: "scripted/demo", AccessLog: al}, Getenv: func(string) string { return "" }, Communities: newTestServer(t).deps.Communities})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAnswerFastAllocs: with the request log off, answering GET /{c} on the fast path and
// recording it allocates nothing.
func TestAnswerFastAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := newQuietServer(t)
	for _, r := range []fastpath.Request{
		{Method: "GET", Path: "/nemar", AcceptEncoding: "gzip", Origin: "https://nemar.org"},
		{Method: "GET", Path: "/communities", AcceptEncoding: "gzip"},
		{Method: "GET", Path: "/bids", RequestID: "a-client-request-id-longer-than-thirty-two-bytes"},
		{Method: "GET", Path: testWheel, Origin: "https://nemar.org"},
	} {
		var w fastpath.Response
		if !s.AnswerFast(&r, &w) { // grows w's buffers once
			t.Fatalf("%s: not answered", r.Path)
		}
		if allocs := testing.AllocsPerRun(100, func() {
			w.Reset()
			s.AnswerFast(&r, &w)
			s.SentFast(&r, &w, 100, nil)
		}); allocs > 0 {
			t.Errorf("%s: %.0f allocations per answer, want 0", r.Path, allocs)
		}
	}
}

// TestFastPathAllocsOverTheWire: 20,000 keep-alive requests for GET /nemar through the fast
// path over a real connection, request log off, allocate nothing per request in the process
// (the client reads into a fixed buffer).
func TestFastPathAllocsOverTheWire(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := newQuietServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fp := &fastpath.Server{Answer: s.AnswerFast, Sent: s.SentFast, HTTP: &http.Server{Handler: s}}
	go func() { _ = fp.Serve(ln) }()
	t.Cleanup(func() { _ = fp.Shutdown(t.Context()) })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /nemar HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nOrigin: https://nemar.org\r\n\r\n")
	want := len(s.cat.Load().byID["nemar"].public.gzip.data)
	buf := make([]byte, 64<<10)
	one := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		// The head and the body: read until the body's last byte is in.
		n := 0
		for {
			m, err := c.Read(buf[n:])
			if err != nil {
				t.Fatal(err)
			}
			n += m
			if end := bytes.Index(buf[:n], []byte("\r\n\r\n")); end >= 0 && n-end-4 >= want {
				return
			}
		}
	}
	for range 1000 {
		one()
	}
	const n = 20000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		one()
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.Mallocs-before.Mallocs) / n; per > 0.05 {
		t.Errorf("%.2f allocations per request, want none", per)
	}
	if answered, _ := fp.Stats(); answered < n {
		t.Errorf("the fast path answered %d of %d", answered, n)
	}
}

// TestSealCatalog: with the fast path on, bodies of 64 KB or more get a sealed copy, one per
// distinct body however many catalogs (reloads) hold it; small bodies and a server without
// the fast path get none.
func TestSealCatalog(t *testing.T) {
	big := bytes.Repeat([]byte(`{"id":"x"},`), 10_000) // 110 KB, gzips small
	wheel := bytes.Repeat([]byte{0x50, 0x4b, 3, 4, 9}, 20_000)
	newCat := func() *catalog {
		return &catalog{
			communities: newBody("application/json", big, true),
			byID: map[string]*community{"c": {
				public: newBody("application/json", []byte(`{"small":true}`), true),
				wheels: map[string]*wheelFile{"w.whl": newWheelFile(wheel, "ab")},
			}},
		}
	}
	on := &Server{deps: Deps{Settings: Settings{FastPath: true}}}
	a, b := newCat(), newCat()
	on.sealCatalog(a)
	on.sealCatalog(b)
	if a.communities.identity.sealed == nil || a.byID["c"].wheels["w.whl"].sealed == nil {
		t.Fatal("a large body or wheel was not sealed")
	}
	if a.communities.gzip == nil || a.communities.gzip.sealed != nil || a.byID["c"].public.identity.sealed != nil {
		t.Error("a body under 64 KB was sealed")
	}
	if a.communities.identity.sealed != b.communities.identity.sealed || a.byID["c"].wheels["w.whl"].sealed != b.byID["c"].wheels["w.whl"].sealed {
		t.Error("a second catalog of the same bytes sealed them again")
	}
	other := newCat()
	other.communities = newBody("application/json", append(bytes.Clone(big), ' '), true)
	on.sealCatalog(other)
	if other.communities.identity.sealed == a.communities.identity.sealed {
		t.Error("different bytes shared a sealed copy")
	}
	off := &Server{}
	c := newCat()
	off.sealCatalog(c)
	if c.communities.identity.sealed != nil || c.byID["c"].wheels["w.whl"].sealed != nil {
		t.Error("sealed without the fast path")
	}
}

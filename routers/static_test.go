package routers

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

const testWheel = "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl"

// serve sends one request straight to the handler (no client, so nothing is decompressed or
// added on the way) with headers given as name, value pairs.
func serve(s *Server, method, path string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrecomputedEncodings: GET /{c}, GET /communities and the SVG logo carry Content-Length,
// answer gzip or identity by Accept-Encoding (q-values honoured, q=0 refusing), with
// Vary: Accept-Encoding and a distinct ETag per encoding.
func TestPrecomputedEncodings(t *testing.T) {
	s := newTestServer(t)
	for _, path := range []string{"/nemar", "/hed/", "/communities", "/hed/logo"} {
		plain := serve(s, http.MethodGet, path)
		if plain.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, plain.Code)
		}
		identity := plain.Body.Bytes()
		idTag := plain.Header().Get("ETag")
		gz := serve(s, http.MethodGet, path, "Accept-Encoding", "gzip")
		gzTag := gz.Header().Get("ETag")
		if gzTag != strings.TrimSuffix(idTag, `"`)+`-gzip"` {
			t.Errorf("%s: ETag %s for gzip, %s for identity", path, gzTag, idTag)
		}
		if !bytes.Equal(gunzip(t, gz.Body.Bytes()), identity) || gz.Body.Len() >= len(identity) {
			t.Errorf("%s: the gzip body (%d bytes) is not the identity body (%d bytes) compressed", path, gz.Body.Len(), len(identity))
		}
		for _, tc := range []struct {
			accept string
			gzip   bool
		}{
			{"", false},
			{"gzip", true},
			{"x-gzip", true},
			{"GZIP", true},
			{"gzip, deflate, br, zstd", true},
			{"identity", false},
			{"br", false},
			{"*", true},
			{"*;q=0", false}, // refuses everything: the identity bytes, not 406 (static.go)
			{"gzip;q=0", false},
			{"gzip;q=0.000", false},
			{"gzip; q=0, identity", false},
			{"identity;q=0", false}, // gzip is not named, so refused too
			{"identity;q=0, gzip", true},
			{"identity;q=0, gzip;q=0", false},
			{"gzip;q=0.5, identity", false},
			{"gzip;q=0.5, identity;q=0.4", true},
			{"gzip;q=1.0, identity;q=1", true},
			{"*;q=0.2, identity;q=0.1", true},
			{"gzip;q=banana", false},
			{"deflate, gzip;q=0.001", false}, // identity, not named, keeps q=1
			{"deflate, gzip;q=0.001, identity;q=0", true},
		} {
			rec := serve(s, http.MethodGet, path, "Accept-Encoding", tc.accept)
			h := rec.Header()
			wantTag, wantBody, wantEnc := idTag, identity, ""
			if tc.gzip {
				wantTag, wantBody, wantEnc = gzTag, gz.Body.Bytes(), "gzip"
			}
			if rec.Code != http.StatusOK || h.Get("ETag") != wantTag || h.Get("Content-Encoding") != wantEnc || !bytes.Equal(rec.Body.Bytes(), wantBody) {
				t.Errorf("%s, Accept-Encoding %q: %d, ETag %s, Content-Encoding %q, %d bytes; want ETag %s, %q, %d bytes",
					path, tc.accept, rec.Code, h.Get("ETag"), h.Get("Content-Encoding"), rec.Body.Len(), wantTag, wantEnc, len(wantBody))
			}
			if h.Get("Content-Length") != strconv.Itoa(len(wantBody)) {
				t.Errorf("%s, Accept-Encoding %q: Content-Length %q, want %d", path, tc.accept, h.Get("Content-Length"), len(wantBody))
			}
			if !strings.Contains(strings.Join(h.Values("Vary"), ", "), "Accept-Encoding") {
				t.Errorf("%s, Accept-Encoding %q: Vary %q", path, tc.accept, h.Values("Vary"))
			}
		}
	}
}

// TestPrecomputedConditional: If-None-Match answers 304 for the ETag of the encoding the
// request would get, and 200 for the other encoding's ETag; HEAD has GET's headers.
func TestPrecomputedConditional(t *testing.T) {
	s := newTestServer(t)
	for _, path := range []string{"/nemar", "/communities", "/hed/logo"} {
		idTag := serve(s, http.MethodGet, path).Header().Get("ETag")
		gzTag := serve(s, http.MethodGet, path, "Accept-Encoding", "gzip").Header().Get("ETag")
		for _, tc := range []struct {
			accept, inm string
			want        int
		}{
			{"", idTag, http.StatusNotModified},
			{"gzip", gzTag, http.StatusNotModified},
			{"gzip", idTag, http.StatusOK},
			{"", gzTag, http.StatusOK},
			{"gzip", `"x", ` + gzTag, http.StatusNotModified},
			{"gzip", "W/" + gzTag, http.StatusNotModified},
			{"identity", "*", http.StatusNotModified},
			{"gzip", `"other"`, http.StatusOK},
		} {
			rec := serve(s, http.MethodGet, path, "Accept-Encoding", tc.accept, "If-None-Match", tc.inm)
			if rec.Code != tc.want {
				t.Errorf("%s, Accept-Encoding %q, If-None-Match %s: %d, want %d", path, tc.accept, tc.inm, rec.Code, tc.want)
			}
			if rec.Code == http.StatusNotModified && (rec.Body.Len() != 0 || rec.Header().Get("ETag") == "") {
				t.Errorf("%s: 304 with %d bytes, ETag %q", path, rec.Body.Len(), rec.Header().Get("ETag"))
			}
		}
		for _, accept := range []string{"", "gzip"} {
			get := serve(s, http.MethodGet, path, "Accept-Encoding", accept)
			head := serve(s, http.MethodHead, path, "Accept-Encoding", accept)
			for _, k := range []string{"Content-Length", "Content-Encoding", "Content-Type", "Etag", "Vary", "Cache-Control"} {
				if g, h := get.Header().Get(k), head.Header().Get(k); g != h {
					t.Errorf("%s, Accept-Encoding %q: %s %q on GET, %q on HEAD", path, accept, k, g, h)
				}
			}
			if head.Body.Len() != 0 {
				t.Errorf("%s: HEAD has a body", path)
			}
		}
	}
}

// TestWheelRoute: the wheel is never recompressed; Range (single), If-Range, If-None-Match and
// HEAD answer as http.ServeContent did, with the immutable Cache-Control and the sha256 ETag.
func TestWheelRoute(t *testing.T) {
	s := newTestServer(t)
	full := serve(s, http.MethodGet, testWheel)
	data := full.Body.Bytes()
	size := len(data)
	etag := full.Header().Get("ETag")
	n := strconv.Itoa(size)
	if full.Code != http.StatusOK || size < 100 || len(etag) != 66 {
		t.Fatalf("GET: %d, %d bytes, ETag %s", full.Code, size, etag)
	}
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
		body    []byte
		cr      string // Content-Range
	}{
		{"whole", nil, 200, data, ""},
		{"gzip asked, not given", []string{"Accept-Encoding", "gzip"}, 200, data, ""},
		{"first bytes", []string{"Range", "bytes=0-9"}, 206, data[:10], "bytes 0-9/" + n},
		{"middle", []string{"Range", "bytes=10-19"}, 206, data[10:20], "bytes 10-19/" + n},
		{"open end", []string{"Range", "bytes=100-"}, 206, data[100:], "bytes 100-" + strconv.Itoa(size-1) + "/" + n},
		{"suffix", []string{"Range", "bytes=-5"}, 206, data[size-5:], "bytes " + strconv.Itoa(size-5) + "-" + strconv.Itoa(size-1) + "/" + n},
		{"suffix longer than the file", []string{"Range", "bytes=-999999999"}, 206, data, "bytes 0-" + strconv.Itoa(size-1) + "/" + n},
		{"last past the end", []string{"Range", "bytes=5-999999999"}, 206, data[5:], "bytes 5-" + strconv.Itoa(size-1) + "/" + n},
		{"past the end", []string{"Range", "bytes=" + n + "-"}, 416, nil, "bytes */" + n},
		{"backwards", []string{"Range", "bytes=9-3"}, 416, nil, "bytes */" + n},
		{"If-Range matches", []string{"Range", "bytes=0-9", "If-Range", etag}, 206, data[:10], "bytes 0-9/" + n},
		{"If-Range differs", []string{"Range", "bytes=0-9", "If-Range", `"old"`}, 200, data, ""},
		{"not modified", []string{"If-None-Match", etag}, 304, nil, ""},
		{"not modified beats Range", []string{"If-None-Match", etag, "Range", "bytes=0-9"}, 304, nil, ""},
		{"other tag", []string{"If-None-Match", `"old"`}, 200, data, ""},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			rec := serve(s, method, testWheel, tc.headers...)
			h := rec.Header()
			wantBody := tc.body
			if method == http.MethodHead || tc.status == 416 {
				wantBody = nil
			}
			if rec.Code != tc.status || (tc.status != 416 && !bytes.Equal(rec.Body.Bytes(), wantBody)) || h.Get("Content-Range") != tc.cr {
				t.Errorf("%s %s: %d, %d bytes, Content-Range %q; want %d, %d bytes, %q", method, tc.name, rec.Code, rec.Body.Len(), h.Get("Content-Range"), tc.status, len(wantBody), tc.cr)
			}
			if method == http.MethodHead && rec.Body.Len() != 0 {
				t.Errorf("HEAD %s: a body", tc.name)
			}
			if h.Get("ETag") != etag || h.Get("Cache-Control") != runtimeCacheControl || h.Get("Content-Encoding") != "" {
				t.Errorf("%s %s: ETag %q, Cache-Control %q, Content-Encoding %q", method, tc.name, h.Get("ETag"), h.Get("Cache-Control"), h.Get("Content-Encoding"))
			}
			if (tc.status == 200 || tc.status == 206) && h.Get("Content-Length") != strconv.Itoa(len(tc.body)) {
				t.Errorf("%s %s: Content-Length %q, want %d", method, tc.name, h.Get("Content-Length"), len(tc.body))
			}
		}
	}
	// Several ranges fall back to http.ServeContent's multipart answer.
	rec := serve(s, http.MethodGet, testWheel, "Range", "bytes=0-1,5-6")
	if rec.Code != http.StatusPartialContent || !strings.HasPrefix(rec.Header().Get("Content-Type"), "multipart/byteranges") {
		t.Errorf("two ranges: %d, %s", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// TestParseAccessLog pins the --access-log values.
func TestParseAccessLog(t *testing.T) {
	for _, tc := range []struct {
		in   string
		skip float64
		ok   bool
	}{
		{"", 0, true}, {"on", 0, true}, {"ON", 0, true}, {"off", 1, true}, {"1", 0, true}, {"0", 1, true},
		{"0.25", 0.75, true}, {"1.5", 0, false}, {"-0.1", 0, false}, {"sometimes", 0, false}, {"NaN", 0, false},
	} {
		got, err := ParseAccessLog(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got.skip != tc.skip) {
			t.Errorf("ParseAccessLog(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// TestAccessLog: off records only errors; on records every request.
func TestAccessLog(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int // log lines for 3 good requests and one 404
	}{
		{"on", 4}, {"off", 0},
	} {
		var buf bytes.Buffer
		set := newTestServer(t).deps.Communities
		al, err := ParseAccessLog(tc.value)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Deps{Settings: Settings{DefaultModel: "scripted/demo", AccessLog: al}, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
			Getenv: func(string) string { return "" }, Communities: set})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/nemar", "/health", "/communities", "/nope"} {
			serve(s, http.MethodGet, p)
		}
		if got := strings.Count(buf.String(), `"msg":"request"`); got != tc.want {
			t.Errorf("--access-log %s: %d request lines, want %d:\n%s", tc.value, got, tc.want, buf.String())
		}
	}
	if !(AccessLog{skip: 1}).records(500) || (AccessLog{skip: 1}).records(404) {
		t.Error("off must record 5xx and nothing else")
	}
	tenth, _ := ParseAccessLog("0.1")
	n := 0
	for range 10000 {
		if tenth.records(200) {
			n++
		}
	}
	if n < 800 || n > 1200 || !tenth.records(503) {
		t.Errorf("--access-log 0.1 recorded %d of 10,000 requests", n)
	}
}

// TestObserveAllocs: a request for precomputed bytes that is not logged allocates only what
// net/http and echo need (the request id is one allocation).
func TestObserveAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := newQuietServer(t)
	req := httptest.NewRequest(http.MethodGet, "/nemar", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	w := &discardWriter{h: http.Header{}}
	serveOnce := func() {
		clear(w.h)
		s.ServeHTTP(w, req)
	}
	serveOnce()
	if allocs := testing.AllocsPerRun(100, serveOnce); allocs > 1 {
		t.Errorf("GET /nemar allocates %.0f times per request, want at most 1 (the request id)", allocs)
	}
}

// discardWriter is a ResponseWriter that keeps nothing, so the allocations counted are the
// server's.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// SetWriteDeadline is net/http's, which observe sets.
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }

// TestRequestID: a plain client id is echoed, anything else replaced by 32 hex digits.
func TestRequestID(t *testing.T) {
	s := newTestServer(t)
	for _, tc := range []struct{ sent, want string }{
		{"abc-123_x.y", "abc-123_x.y"},
		{"short", ""},
		{"has space in it", ""},
		{"", ""},
	} {
		got := serve(s, http.MethodGet, "/health", "X-Request-ID", tc.sent).Header().Get("X-Request-ID")
		if tc.want != "" && got != tc.want || tc.want == "" && (len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "") {
			t.Errorf("sent %q: got %q", tc.sent, got)
		}
	}
}

// TestPanicIs500: a panicking handler answers 500 in the usual error shape, logged with its
// stack, and the server goes on serving.
func TestPanicIs500(t *testing.T) {
	var buf bytes.Buffer
	s, err := New(Deps{Settings: Settings{DefaultModel: "scripted/demo"}, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
		Getenv: func(string) string { return "" }, Communities: newTestServer(t).deps.Communities})
	if err != nil {
		t.Fatal(err)
	}
	s.e.GET("/boom", func(echo.Context) error { panic("boom") })
	rec := serve(s, http.MethodGet, "/boom")
	if rec.Code != http.StatusInternalServerError || !strings.HasPrefix(rec.Body.String(), `{"detail":`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(buf.String(), "panic in a handler") || !strings.Contains(buf.String(), `"status":500`) {
		t.Errorf("log:\n%s", buf.String())
	}
	if rec := serve(s, http.MethodGet, "/health"); rec.Code != http.StatusOK {
		t.Errorf("after the panic: %d", rec.Code)
	}
}

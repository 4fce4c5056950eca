package routers

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/store/storetest"
)

// The fixes of the review of issue 22's upload and export bounds: one client's share of the
// upload buffer, a body that must keep coming, one export per client and an answer that must
// keep being read, clients keyed by IPv6 /64, and an export's reads reserved from the buffer.

// reviewServer is a files server over the shipped communities (nemar takes uploads by up)
// that believes X-Forwarded-For from loopback, so each request may name its client; tune, when
// not nil, adjusts the file gates (their paces) before it serves. Body bytes read are counted
// in read, except for requests to sessions whose id starts with "held", whose body is left to
// net/http as it is (a wrapped body changes what net/http does with a body left unread).
type reviewServer struct {
	filesServer
	srv  *Server
	logs *syncLog
}

// syncLog is a log's text, safe for the handler's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newReviewServer(t *testing.T, st SessionFiles, up config.Uploads, files FileSettings, tune func(*fileGates)) *reviewServer {
	t.Helper()
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range set.Communities {
		if c.ID == "nemar" {
			c.Runtime.Python.Uploads = up
		}
	}
	_, loopback, _ := net.ParseCIDR("127.0.0.1/32")
	rs := &reviewServer{logs: &syncLog{}}
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo", Files: files, TrustedProxies: []*net.IPNet{loopback}},
		Getenv: func(string) string { return "" }, Communities: set, Artifacts: st, Files: st,
		Logger: slog.New(slog.NewTextHandler(rs.logs, nil)),
		Load:   func(context.Context) (*config.Set, error) { return set, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(s.files)
	}
	rs.srv = s
	if ss, ok := st.(store.Store); ok {
		rs.st = ss
	}
	rs.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(strings.TrimPrefix(r.URL.Path, "/nemar/sessions/"), "held") {
			r.Body = &countingBody{r: r.Body, n: &rs.read}
		}
		s.ServeHTTP(w, r)
	}))
	// An answer that never comes (a bound missing) fails the test rather than hanging it.
	rs.ts.Client().Timeout = 15 * time.Second
	t.Cleanup(rs.ts.Close)
	return rs
}

// bigUploads take files of up to 100 MB, as many as 16 a session: larger than the buffers the
// tests set, so the buffer is what bounds them.
func bigUploads() config.Uploads {
	return config.Uploads{Enabled: true, MaxFileMB: 100, MaxSessionMB: 100, MaxFiles: 16, Types: []string{"csv", "txt", "xlsx"}}
}

// openUpload starts an upload on a connection of its own as client (X-Forwarded-For): its
// head, announcing size bytes of body, then the first bytes of the body (a part's head and
// sent bytes of a CSV), and nothing more: the rest is the caller's to send, or not.
func openUpload(t *testing.T, base, path, client string, size int64, sent int) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b0und\r\nContent-Length: %d\r\nX-Forwarded-For: %s\r\n\r\n", path, size, client)
	fmt.Fprintf(conn, "--b0und\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\n%s", bytes.Repeat([]byte("x"), sent))
	return conn, bufio.NewReader(conn)
}

// answerOn reads the answer on an upload's connection, failing after 20 s (an answer that
// never comes, where one is due at once or within a test's short pace).
func answerOn(t *testing.T, conn net.Conn, r *bufio.Reader) (*http.Response, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer on the upload's connection: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// waitHeld waits until uploads hold n bytes of the buffer.
func (rs *reviewServer) waitHeld(t *testing.T, n int64) {
	t.Helper()
	b := rs.srv.files.buffer
	used := func() int64 {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.used
	}
	for deadline := time.Now().Add(20 * time.Second); used() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("uploads hold %d bytes of the buffer, want %d", used(), n)
		}
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:DB8:1:2::ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"not an address", "not an address"},
		{"", ""},
	} {
		if got := clientKey(tc.ip); got != tc.want {
			t.Errorf("clientKey(%q) = %q, want %q", tc.ip, got, tc.want)
		}
	}
}

// TestUploadClientShare (review items 1a and 3): one client holds at most a quarter of the
// upload buffer at once, beside its first upload in flight: its connections that send no body
// after the first are refused with 503 and a Retry-After at once, and another client's upload
// still fits. IPv6 clients count by their /64. (Before, 400 KB + 300 KB + 324 KB of bodies that
// never came filled a 1 MiB buffer and the other client's 2-byte upload got 503.)
func TestUploadClientShare(t *testing.T) {
	for _, tc := range []struct {
		name           string
		heavy          []string // the client of each upload that sends no body; the first is held
		other          string   // a client whose upload must fit
		sizes          []int64
		refusedAtIndex int // the heavy uploads from here on are refused
	}{
		{"IPv4", []string{"203.0.113.5", "203.0.113.5", "203.0.113.5"}, "198.51.100.1", []int64{400 << 10, 300 << 10, 324 << 10}, 1},
		{"IPv6 by /64", []string{"2001:db8:1:2::1", "2001:db8:1:2::beef", "2001:db8:1:2:ffff::9"}, "2001:db8:1:3::1", []int64{400 << 10, 300 << 10, 324 << 10}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReviewServer(t, store.NewMemory(store.Limits{}, nil, nil), bigUploads(), FileSettings{UploadBufferBytes: 1 << 20}, func(g *fileGates) {
				g.bodyWindow = time.Minute // none of them is cut while the test runs
			})
			for i, size := range tc.sizes {
				conn, r := openUpload(t, rs.ts.URL, fmt.Sprintf("/nemar/sessions/held-%d/files", i), tc.heavy[i], size, 10)
				if i < tc.refusedAtIndex {
					rs.waitHeld(t, size)
					continue
				}
				resp, body := answerOn(t, conn, r)
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != busyRetrySeconds || !strings.Contains(body, "as one reader may") {
					t.Errorf("upload %d from %s while it holds %d bytes: %d %q %s, want 503 for its share", i, tc.heavy[i], tc.sizes[0], resp.StatusCode, resp.Header.Get("Retry-After"), body)
				}
			}
			if resp, b := rs.upload2(t, "/nemar/sessions/light/files", tc.other); resp.StatusCode != http.StatusOK {
				t.Errorf("another client's 2-byte upload: %d %s, want 200", resp.StatusCode, b)
			}
		})
	}
}

// upload2 posts a 2-byte CSV as client.
func (rs *reviewServer) upload2(t *testing.T, path, client string) (*http.Response, []byte) {
	t.Helper()
	ct, body := multipartBody(t, filePart("x.csv", []byte("a\n")))
	return rs.send(t, http.MethodPost, path, ct, bytes.NewReader(body), "X-Forwarded-For", client)
}

// TestUploadBodyPace (review item 1b): an upload whose body stops coming is cut within the
// pace's window (408, saying why) and its reservation is freed, so an upload that did not fit
// beside it fits then; a body that keeps coming, a MiB within each window, is read whole
// however long it takes. (Before, such a body held its reservation as long as the server's
// read timeout, 60 s; here, with no timeout, for ever.)
func TestUploadBodyPace(t *testing.T) {
	const window = 2 * time.Second
	rs := newReviewServer(t, store.NewMemory(store.Limits{}, nil, nil), bigUploads(), FileSettings{UploadBufferBytes: 4 << 20}, func(g *fileGates) {
		g.bodyWindow = window
	})
	conn, r := openUpload(t, rs.ts.URL, "/nemar/sessions/held-stalled/files", "203.0.113.5", 3<<20, 100)
	rs.waitHeld(t, 3<<20)
	ct, body := multipartBody(t, filePart("b.csv", bytes.Repeat([]byte("x"), 2<<20)))
	resp, b := rs.send(t, http.MethodPost, "/nemar/sessions/b/files", ct, bytes.NewReader(body), "X-Forwarded-For", "198.51.100.1")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an upload that does not fit beside the stalled one: %d %s, want 503", resp.StatusCode, b)
	}
	resp, text := answerOn(t, conn, r)
	if resp.StatusCode != http.StatusRequestTimeout || detail(t, []byte(text)) != errUploadTooSlow.detail {
		t.Errorf("the stalled upload: %d %s, want 408", resp.StatusCode, text)
	}
	if resp, b := rs.send(t, http.MethodPost, "/nemar/sessions/b/files", ct, bytes.NewReader(body), "X-Forwarded-For", "198.51.100.1"); resp.StatusCode != http.StatusOK {
		t.Errorf("the upload once the stalled one was cut: %d %s, want 200", resp.StatusCode, b)
	}
	// 3 MiB sent a MiB at a time, 0.7 of a window apart: longer than a window in all.
	ct, body = multipartBody(t, filePart("c.csv", bytes.Repeat([]byte("y"), 3<<20)))
	pr, pw := io.Pipe()
	go func() {
		for off := 0; off < len(body); off += 1 << 20 {
			if off > 0 {
				time.Sleep(window * 7 / 10) // the pace under test, not a synchronisation
			}
			if _, err := pw.Write(body[off:min(off+1<<20, len(body))]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, rs.ts.URL+"/nemar/sessions/held-slow/files", pr)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-Forwarded-For", "198.51.100.2")
	start := time.Now()
	resp, err := rs.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a body that keeps its pace, %v in all: %d %s, want 200", time.Since(start).Round(time.Millisecond), resp.StatusCode, got)
	}
}

// TestPacedBodyAndWriter: the body's deadline is set once at the start and moved at every step
// of bytes read, each to a window from then; the writer gives every step of an answer its own
// window, however large the write, and reports what it wrote before a failure.
func TestPacedBodyAndWriter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	clock := func() time.Time { now = now.Add(time.Second); return now }
	var set []time.Time
	var at []int64 // the bytes read when each deadline was set
	var p *pacedBody
	record := func(d time.Time) error {
		set = append(set, d)
		if p != nil {
			at = append(at, p.n)
		} else {
			at = append(at, 0)
		}
		return nil
	}
	p = newPacedBody(bytes.NewReader(make([]byte, 3500)), record, clock, 10*time.Second, 1000)
	buf := make([]byte, 300)
	for {
		if _, err := p.Read(buf); err != nil {
			break
		}
	}
	// Set at the start, then as the reads pass 1,000 (at 1,200 bytes), 2,200 (at 2,400) and
	// 3,400 (at 3,500), each 10 s after the clock's reading then (a second later every time).
	want := []time.Time{t0.Add(11 * time.Second), t0.Add(12 * time.Second), t0.Add(13 * time.Second), t0.Add(14 * time.Second)}
	if fmt.Sprint(set) != fmt.Sprint(want) || fmt.Sprint(at) != "[0 1200 2400 3500]" {
		t.Errorf("body deadlines %v at %v bytes, want %v at [0 1200 2400 3500]", set, at, want)
	}
	set, now = nil, t0
	var out bytes.Buffer
	w := &pacedWriter{w: &out, set: record, now: clock, window: 30 * time.Second, step: 256}
	if n, err := w.Write(make([]byte, 1000)); n != 1000 || err != nil || out.Len() != 1000 {
		t.Fatalf("Write = %d, %v (%d written)", n, err, out.Len())
	}
	if len(set) != 4 || !set[0].Equal(t0.Add(31*time.Second)) || !set[3].Equal(t0.Add(34*time.Second)) {
		t.Errorf("writer deadlines %v, want 4, from t0+31 s to t0+34 s", set)
	}
	w.w = &failAfter{n: 300}
	if n, err := w.Write(make([]byte, 1000)); n != 300 || err == nil {
		t.Errorf("a write that fails after 300 bytes: %d, %v", n, err)
	}
}

// failAfter takes n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, io.ErrClosedPipe
	}
	f.n -= len(p)
	return len(p), nil
}

// TestExportOnePerClient (review items 2 and 3): a client writes one export at a time, with
// IPv6 clients counted by their /64: its second export while the first is in flight is
// refused with 503 and a Retry-After, while another client's export is written.
func TestExportOnePerClient(t *testing.T) {
	for _, tc := range []struct{ name, first, again, other string }{
		{"IPv4", "203.0.113.5", "203.0.113.5", "203.0.113.6"},
		{"IPv6 by /64", "2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:3::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory(store.Limits{}, nil, nil)
			g := &gatedFiles{Store: st, entered: make(chan struct{}, 4), release: make(chan struct{})}
			rs := newReviewServer(t, g, smallUploads(), FileSettings{Exports: 4}, nil)
			var once sync.Once
			open := func() { once.Do(func() { close(g.release) }) }
			defer open()
			mustSession(t, st, "s")
			if _, err := st.PutFiles(context.Background(), "nemar", "s", []store.NewFile{{Name: "a.csv", Type: "csv", Data: []byte("a\n")}}, store.FileLimits{MaxFiles: 3, MaxSessionBytes: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			exports := make(chan int, 2)
			export := func(client string) {
				req, _ := http.NewRequest(http.MethodGet, rs.ts.URL+"/nemar/sessions/s/export.zip", nil)
				req.Header.Set("X-Forwarded-For", client)
				resp, err := rs.ts.Client().Do(req)
				if err != nil {
					exports <- 0
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				exports <- resp.StatusCode
			}
			go export(tc.first)
			<-g.entered // the first is writing
			resp, b := rs.send(t, http.MethodGet, "/nemar/sessions/s/export.zip", "", nil, "X-Forwarded-For", tc.again)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != busyRetrySeconds || detail(t, b) != errClientExportBusy.detail {
				t.Errorf("a second export of %s beside %s's: %d %q %s, want 503 with a Retry-After", tc.again, tc.first, resp.StatusCode, resp.Header.Get("Retry-After"), b)
			}
			go export(tc.other)
			<-g.entered // another client's is writing too
			open()
			for range 2 {
				if code := <-exports; code != http.StatusOK {
					t.Errorf("an export: %d, want 200", code)
				}
			}
			if resp, _ := rs.send(t, http.MethodGet, "/nemar/sessions/s/export.zip", "", nil, "X-Forwarded-For", tc.again); resp.StatusCode != http.StatusOK {
				t.Errorf("the client's export once its first ended: %d, want 200", resp.StatusCode)
			}
		})
	}
}

// noise is n random bytes: incompressible, so the zip holds them as they are.
func noise(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExportWritePace (review item 2): an export whose reader stops reading ends within the
// write window and frees its place, so the next export (the only place, here) is written. The
// held reader's socket takes 4 KB, so the server blocks once its own buffers are full. (Before,
// it held the place for the 10-minute bound of the whole answer.)
func TestExportWritePace(t *testing.T) {
	st := store.NewMemory(store.Limits{}, nil, nil)
	rs := newReviewServer(t, st, smallUploads(), FileSettings{Exports: 1}, func(g *fileGates) { g.writeWindow = 300 * time.Millisecond })
	mustSession(t, st, "s")
	if _, err := st.PutFiles(context.Background(), "nemar", "s", []store.NewFile{{Name: "a.xlsx", Type: "xlsx", Data: noise(t, 16<<20)}}, store.FileLimits{MaxFiles: 3, MaxSessionBytes: 32 << 20}); err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(rs.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /nemar/sessions/s/export.zip HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.5\r\n\r\n")
	// It reads nothing more: the export fills the buffers and waits. Another client's export
	// is refused until the place is free.
	var code int
	for deadline := time.Now().Add(20 * time.Second); code != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the reader stopped reading, another export still gets %d", code)
		}
		resp, b := rs.send(t, http.MethodGet, "/nemar/sessions/s/export.zip", "", nil, "X-Forwarded-For", "198.51.100.1")
		code = resp.StatusCode
		if code == http.StatusOK {
			if z, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); err != nil || len(z.File) != 3 {
				t.Errorf("the next export does not open: %v", err)
			}
		}
	}
	if !strings.Contains(rs.logs.String(), "writing an export failed") {
		t.Errorf("the cut export was not logged:\n%s", rs.logs)
	}
}

// gatedRedis is the Redis store with a ViewFile that waits for release after saying so on
// entered (each call), so that exports stay in flight while they hold a file's bytes.
type gatedRedis struct {
	*store.Redis
	entered chan string
	release chan struct{}
}

func (g *gatedRedis) ViewFile(ctx context.Context, community, id, name string) ([]byte, error) {
	g.entered <- name
	<-g.release
	return g.Redis.ViewFile(ctx, community, id, name)
}

// TestExportReservesFileBytes (review item 5): with Redis, whose reads are copies, an export
// reserves a file's bytes from the process's buffer before it reads them and waits for room
// (bounded) rather than failing: two exports of a session of two 700 KB files with a 1 MiB
// buffer read one file at a time between them, and both are written whole. The in-memory
// store, whose reads are its own bytes, reserves nothing.
func TestExportReservesFileBytes(t *testing.T) {
	addr := storetest.RedisAddr(t)
	rst, err := store.NewRedis(context.Background(), store.RedisOptions{URL: "redis://" + addr + "/0", Prefix: fmt.Sprintf("test:review:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	g := &gatedRedis{Redis: rst, entered: make(chan string, 8), release: make(chan struct{})}
	var once sync.Once
	open := func() { once.Do(func() { close(g.release) }) }
	defer open()
	rs := newReviewServer(t, g, smallUploads(), FileSettings{UploadBufferBytes: 1 << 20, Exports: 4}, nil)
	ctx := context.Background()
	files := []store.NewFile{{Name: "a.xlsx", Type: "xlsx", Data: noise(t, 700<<10)}, {Name: "b.xlsx", Type: "xlsx", Data: noise(t, 700<<10)}}
	if _, _, err := rst.EnsureSession(ctx, "nemar", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := rst.PutFiles(ctx, "nemar", "s", files, store.FileLimits{MaxFiles: 3, MaxSessionBytes: 2 << 20}); err != nil {
		t.Fatal(err)
	}
	bodies := make(chan []byte, 2)
	for _, client := range []string{"203.0.113.5", "203.0.113.6"} {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, rs.ts.URL+"/nemar/sessions/s/export.zip", nil)
			req.Header.Set("X-Forwarded-For", client)
			resp, err := rs.ts.Client().Do(req)
			if err != nil {
				bodies <- nil
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies <- b
		}()
	}
	<-g.entered // one export holds a.xlsx's 700 KB; the other waits for room to read it
	b := rs.srv.files.buffer
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		waiting, used := b.waiting, b.used
		b.mu.Unlock()
		if waiting == 1 && used == 700<<10 {
			break
		}
		if time.Now().After(deadline) || len(g.entered) > 0 {
			t.Fatalf("the second export did not wait for room: %d waiting, %d bytes reserved, %d in ViewFile", waiting, used, 1+len(g.entered))
		}
	}
	open()
	for range 2 {
		z := <-bodies
		r, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
		if err != nil {
			t.Fatalf("an export does not open: %v", err)
		}
		for _, f := range r.File {
			if f.Name == "data/a.xlsx" || f.Name == "data/b.xlsx" {
				if f.UncompressedSize64 != 700<<10 {
					t.Errorf("%s: %d bytes", f.Name, f.UncompressedSize64)
				}
			}
		}
	}
	if b.used != 0 {
		t.Errorf("%d bytes still reserved after the exports", b.used)
	}

	// In memory nothing is reserved: an export is written while a stalled upload holds the
	// whole buffer.
	st := store.NewMemory(store.Limits{}, nil, nil)
	mem := newReviewServer(t, st, bigUploads(), FileSettings{UploadBufferBytes: 1 << 20}, func(g *fileGates) {
		g.bodyWindow, g.roomWait = time.Minute, 200*time.Millisecond
	})
	mustSession(t, st, "s")
	if _, err := st.PutFiles(ctx, "nemar", "s", files, store.FileLimits{MaxFiles: 3, MaxSessionBytes: 2 << 20}); err != nil {
		t.Fatal(err)
	}
	openUpload(t, mem.ts.URL, "/nemar/sessions/held/files", "203.0.113.7", 1<<20, 10)
	mem.waitHeld(t, 1<<20)
	resp, z := mem.send(t, http.MethodGet, "/nemar/sessions/s/export.zip", "", nil)
	if _, err := zip.NewReader(bytes.NewReader(z), int64(len(z))); resp.StatusCode != http.StatusOK || err != nil {
		t.Errorf("an export from memory while the buffer is full: %d, %v", resp.StatusCode, err)
	}
}

// TestClientBytesWarning (review item 4): an operator's --upload-client-mb below a community's
// max_file_mb is logged at start and on every reload, naming the community.
func TestClientBytesWarning(t *testing.T) {
	up := bigUploads()
	up.MaxFileMB = 25
	for _, tc := range []struct {
		name        string
		clientBytes int64
		warn        bool
	}{
		{"below max_file_mb", 10 << 20, true},
		{"at max_file_mb", 25 << 20, false},
		{"the default", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReviewServer(t, store.NewMemory(store.Limits{}, nil, nil), up, FileSettings{ClientBytes: tc.clientBytes}, nil)
			const line = "--upload-client-mb is below the community's max_file_mb"
			if got := strings.Count(rs.logs.String(), line); got != map[bool]int{true: 1}[tc.warn] {
				t.Errorf("at start: %d warnings, want warn=%v:\n%s", got, tc.warn, rs.logs)
			}
			if tc.warn && !strings.Contains(rs.logs.String(), "community=nemar") {
				t.Errorf("the warning does not name the community:\n%s", rs.logs)
			}
			if err := rs.srv.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(rs.logs.String(), line); got != map[bool]int{true: 2}[tc.warn] {
				t.Errorf("after a reload: %d warnings, want warn=%v", got, tc.warn)
			}
		})
	}
}

// TestByteBudget: a reservation is all or nothing; a client holds at most the share beside its
// first reservation, which may be as large as what is free; "" is no client; a grant is given
// back once however often it is released, and in part by shrink; wait takes its bytes once
// room is made, or gives up with its context.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(100, 25)
	steps := []struct {
		client string
		n      int64
		want   error
	}{
		{"a", 60, nil},           // a's first: larger than the share
		{"a", 1, errShareFull},   // a holds more than its share already
		{"b", 20, nil},           // b's first
		{"b", 5, nil},            // b up to its share
		{"b", 1, errShareFull},   // b past it
		{"c", 16, errBudgetFull}, // 85 taken: 16 do not fit
		{"", 15, nil},            // no client: no share
	}
	var grants []*grant
	for i, st := range steps {
		g, err := b.reserve(st.client, st.n)
		if !errors.Is(err, st.want) {
			t.Fatalf("step %d: reserve(%q, %d) = %v, want %v", i, st.client, st.n, err, st.want)
		}
		if g != nil {
			grants = append(grants, g)
		}
	}
	if b.used != 100 || b.byClient["a"] != 60 || b.byClient["b"] != 25 || len(b.byClient) != 2 {
		t.Fatalf("used %d, by client %v", b.used, b.byClient)
	}
	grants[0].shrink(10) // a keeps 10
	grants[0].shrink(20) // growing is not shrinking
	grants[1].release()
	grants[1].release()
	if b.used != 30 || b.byClient["a"] != 10 || b.byClient["b"] != 5 {
		t.Fatalf("after shrink and release: used %d, by client %v", b.used, b.byClient)
	}
	// wait: 80 do not fit beside 30 until the 15 of no client and a's 10 go.
	got := make(chan error, 1)
	go func() {
		g, err := b.wait(context.Background(), 80)
		if err == nil {
			g.release()
		}
		got <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		w := b.waiting
		b.mu.Unlock()
		if w == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("wait did not wait")
		}
	}
	grants[3].release()
	grants[0].release()
	if err := <-got; err != nil {
		t.Fatalf("wait once room was made: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.wait(ctx, 100); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with its context ended: %v", err)
	}
	// More than the whole budget is clipped to it: once the last holder (b's 5) goes.
	grants[2].release()
	if g, err := b.wait(context.Background(), 1000); err != nil || g.n != 100 {
		t.Errorf("wait for more than the total: %v, %+v", err, g)
	}
}

package routers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
)

// newFilesServerWith is newFilesServer with the process's file bounds set. The body bytes read
// of requests to session "held" are counted in held (when not nil), not in read.
func newFilesServerWith(t *testing.T, st SessionFiles, up config.Uploads, files FileSettings, held *atomic.Int64) *filesServer {
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
	_, loopback, _ := net.ParseCIDR("127.0.0.1/32") // each request may name its client
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo", Files: files, TrustedProxies: []*net.IPNet{loopback}},
		Getenv: func(string) string { return "" }, Communities: set, Artifacts: st, Files: st})
	if err != nil {
		t.Fatal(err)
	}
	fs := &filesServer{}
	if ss, ok := st.(store.Store); ok {
		fs.st = ss
	}
	fs.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := &fs.read
		if held != nil && strings.Contains(r.URL.Path, "/sessions/held/") {
			n = held
		}
		r.Body = &countingBody{r: r.Body, n: n}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(fs.ts.Close)
	return fs
}

// TestSessionIDFromPath: every session route decodes the id in its path once (a %2F is a
// slash, a %252F the three characters %2F), then holds it to the body's rule with no control
// character; the upload answers 400 for an id no session may have, the reads 404.
func TestSessionIDFromPath(t *testing.T) {
	st := store.NewMemory(store.Limits{}, nil, nil)
	fs := newFilesServer(t, st, smallUploads(), nil, RateLimits{})
	ctx := context.Background()
	cases := []struct {
		seg  string
		want string // the session the path names, or "" when it names none
	}{
		{"plain", "plain"},
		{"x%2Fy", "x/y"},
		{"x%2fy", "x/y"},
		{"x%252Fy", "x%2Fy"},
		{"caf%C3%A9", "café"},
		{"a%20b", "a b"},
		{strings.Repeat("%C3%A9", 256), strings.Repeat("é", 256)},
		{strings.Repeat("%C3%A9", 257), ""},
		{"%0d%0a", ""},
		{"a%0D%0Ab", ""},
		{"a%00b", ""},
		{"a%09b", ""},
		{"%7F", ""},
		{"a%C2%85", ""}, // NEL, a C1 control
		{"a%ffb", ""},   // not UTF-8
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%.30s", tc.seg), func(t *testing.T) {
			resp, b := fs.upload(t, "/nemar/sessions/"+tc.seg+"/files", filePart("a.csv", []byte("a\n")))
			if tc.want == "" {
				if resp.StatusCode != http.StatusBadRequest || detail(t, b) != errUploadSession.detail {
					t.Errorf("upload: %d %s, want 400", resp.StatusCode, b)
				}
				for _, p := range []string{"/files", "/artifacts", "/export.zip", "/artifacts/c/f.txt"} {
					if resp, _ := fs.send(t, http.MethodGet, "/nemar/sessions/"+tc.seg+p, "", nil); resp.StatusCode != http.StatusNotFound {
						t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
					}
				}
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("upload: %d %s", resp.StatusCode, b)
			}
			if l, err := st.Files(ctx, "nemar", tc.want); err != nil || len(l) != 1 {
				t.Errorf("session %q holds %+v (%v): the path named another", tc.want, l, err)
			}
			if resp, b := fs.send(t, http.MethodGet, "/nemar/sessions/"+tc.seg+"/files", "", nil); resp.StatusCode != http.StatusOK || len(decodeFiles(t, b)) != 1 {
				t.Errorf("GET files: %d %s", resp.StatusCode, b)
			}
			if resp, _ := fs.send(t, http.MethodDelete, "/nemar/sessions/"+tc.seg+"/files/a%2Ecsv", "", nil); resp.StatusCode != http.StatusNoContent {
				t.Errorf("DELETE files/a%%2Ecsv: %d", resp.StatusCode)
			}
		})
	}
	// The artifact route decodes its call id and path once too.
	mustSession(t, st, "x/y")
	if err := st.PutArtifacts(ctx, "nemar", "x/y", "toolu/1", map[string][]byte{"out/a b.txt": []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	if resp, b := fs.send(t, http.MethodGet, "/nemar/sessions/x%2Fy/artifacts/toolu%2F1/out/a%20b.txt", "", nil); resp.StatusCode != http.StatusOK || string(b) != "hi" {
		t.Errorf("an artifact by encoded ids: %d %q", resp.StatusCode, b)
	}
}

func mustSession(t *testing.T, st store.Store, id string) {
	t.Helper()
	if _, _, err := st.EnsureSession(context.Background(), "nemar", id); err != nil {
		t.Fatal(err)
	}
}

// TestUploadBuffer: an upload reserves its Content-Length of the process's upload buffer before
// it reads a byte, and holds it until it is answered: while one holds most of it, another that
// does not fit is refused at once with 503 and a Retry-After (its body unread), one of unknown
// length reserves as much as the buffer allows, and one larger than the whole buffer is refused
// with 413.
func TestUploadBuffer(t *testing.T) {
	up := smallUploads()
	var held atomic.Int64
	fs := newFilesServerWith(t, store.NewMemory(store.Limits{}, nil, nil), up, FileSettings{UploadBufferBytes: 1 << 20}, &held)
	// A holds 900 KB: its body comes in two halves, the second once B was refused.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	head := &bytes.Buffer{}
	hw := multipart.NewWriter(head)
	_ = hw.SetBoundary(mw.Boundary())
	fw, _ := hw.CreateFormFile("file", "held.csv")
	data := bytes.Repeat([]byte("a,b\n"), 900<<10/4)
	fw.Write(data)
	hw.Close()
	body := head.Bytes()
	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, fs.ts.URL+"/nemar/sessions/held/files", pr)
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := fs.ts.Client().Do(req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp
	}()
	if _, err := pw.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	// The handler reads only once it holds its reservation.
	for deadline := time.Now().Add(10 * time.Second); held.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the held upload was never read")
		}
		time.Sleep(time.Millisecond)
	}
	ct, small := multipartBody(t, filePart("b.csv", bytes.Repeat([]byte("x"), 200<<10)))
	other := []string{"X-Forwarded-For", "198.51.100.1"} // not the held upload's client
	resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/b/files", ct, bytes.NewReader(small), other...)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != busyRetrySeconds || detail(t, b) != errUploadsBusy.detail {
		t.Errorf("an upload past the buffer: %d %q %s, want 503 with a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if n := fs.read.Load(); n != 0 {
		t.Errorf("the refused upload was read: %d bytes", n)
	}
	// Of unknown length, an upload reserves the whole buffer (smaller than its cap): refused too.
	resp, _ = fs.send(t, http.MethodPost, "/nemar/sessions/c/files", ct, io.MultiReader(bytes.NewReader(small)), other...)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a chunked upload while the buffer is held: %d, want 503", resp.StatusCode)
	}
	if _, err := pw.Write(body[len(body)/2:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if r := <-done; r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the held upload: %+v", r)
	}
	// Released: both fit now.
	if resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/b/files", ct, bytes.NewReader(small), other...); resp.StatusCode != http.StatusOK {
		t.Errorf("after the held upload: %d %s", resp.StatusCode, b)
	}
	if resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/c/files", ct, io.MultiReader(bytes.NewReader(small)), other...); resp.StatusCode != http.StatusOK {
		t.Errorf("a chunked upload after the held one: %d %s", resp.StatusCode, b)
	}
	// Larger than the whole buffer (within the community's 2 MB): 413, declared or not.
	ct, large := multipartBody(t, filePart("a.csv", bytes.Repeat([]byte("x"), 700<<10)), filePart("b.csv", bytes.Repeat([]byte("x"), 700<<10)))
	for name, r := range map[string]io.Reader{"declared": bytes.NewReader(large), "chunked": io.MultiReader(bytes.NewReader(large))} {
		resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/d/files", ct, r)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || detail(t, b) != "This server takes uploads of at most 1 MB at once." {
			t.Errorf("%s, larger than the buffer: %d %s, want 413", name, resp.StatusCode, b)
		}
	}
}

// TestUploadBuffersFitTheirFiles: with the body's length known, each file is read into a buffer
// of about its size, and what the store is given holds no more than a little slack: a file of
// several in a request does not carry the rest of the body's buffer with it.
func TestUploadBuffersFitTheirFiles(t *testing.T) {
	up := uploadLimits{maxFile: 4 << 20, maxSession: 16 << 20, maxFiles: 8, types: []string{"csv"}}
	sizes := []int{3 << 20, 10, 1 << 20, 200 << 10}
	parts := make([]part, len(sizes))
	for i, n := range sizes {
		parts[i] = filePart(fmt.Sprintf("f%d.csv", i), bytes.Repeat([]byte("x"), n))
	}
	ct, body := multipartBody(t, parts...)
	boundary := strings.TrimPrefix(ct, "multipart/form-data; boundary=")
	r := &countingReader{r: bytes.NewReader(body)}
	files, err := readUploads(r, boundary, up, func() int64 { return int64(len(body)) - r.n })
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if len(f.Data) != sizes[i] {
			t.Fatalf("%s: %d bytes, want %d", f.Name, len(f.Data), sizes[i])
		}
		if slack := cap(f.Data) - len(f.Data); slack > 64<<10 && slack > len(f.Data)/8 {
			t.Errorf("%s: %d bytes in a buffer of %d", f.Name, len(f.Data), cap(f.Data))
		}
	}
	// Without a length the buffers grow, and a file still reads whole.
	files, err = readUploads(bytes.NewReader(body), boundary, up, nil)
	if err != nil || len(files) != len(sizes) || len(files[0].Data) != sizes[0] {
		t.Fatalf("without a length: %d files, %v", len(files), err)
	}
}

// gatedFiles is a store whose ViewFile waits for release, so that an export stays in flight;
// entered receives a value as each one waits.
type gatedFiles struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (g *gatedFiles) ViewFile(ctx context.Context, community, id, name string) ([]byte, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Store.ViewFile(ctx, community, id, name)
}

// TestExportLimit: past FileSettings.Exports exports in flight, another (of another client) is
// refused with 503 and a Retry-After; HEAD writes no zip and is not counted; once the export
// ends, its place is free.
func TestExportLimit(t *testing.T) {
	st := store.NewMemory(store.Limits{}, nil, nil)
	g := &gatedFiles{Store: st, entered: make(chan struct{}, 4), release: make(chan struct{})}
	fs := newReviewServer(t, g, smallUploads(), FileSettings{Exports: 1}, nil)
	var once sync.Once
	open := func() { once.Do(func() { close(g.release) }) }
	defer open()
	mustSession(t, st, "s")
	if _, err := st.PutFiles(context.Background(), "nemar", "s", []store.NewFile{{Name: "a.csv", Type: "csv", Data: []byte("a\n")}}, store.FileLimits{MaxFiles: 3, MaxSessionBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	first := make(chan int, 1)
	go func() {
		resp, err := fs.ts.Client().Get(fs.ts.URL + "/nemar/sessions/s/export.zip")
		if err != nil {
			first <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-g.entered // the first export is writing
	// A second one would wait for the gate too: bound it, so that a missing limit fails.
	client := &http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, fs.ts.URL+"/nemar/sessions/s/export.zip", nil)
	req.Header.Set("X-Forwarded-For", "198.51.100.9")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("a second export was not refused at once: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != busyRetrySeconds || detail(t, b) != errExportsBusy.detail {
		t.Errorf("a second export: %d %q %s, want 503 with a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if resp, _ := fs.send(t, http.MethodHead, "/nemar/sessions/s/export.zip", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD while an export is written: %d, want 200", resp.StatusCode)
	}
	open()
	if code := <-first; code != http.StatusOK {
		t.Fatalf("the first export: %d", code)
	}
	// (entered has room for the next one, which passes straight through.)
	if resp, _ := fs.send(t, http.MethodGet, "/nemar/sessions/s/export.zip", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("an export after the first ended: %d", resp.StatusCode)
	}
}

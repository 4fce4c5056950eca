package routers

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/store/storetest"
	"github.com/osc-assistant/assistant/workspace"
)

// smallUploads are upload rules small enough for fast tests: 1 MB a file, 2 MB a session,
// 3 files.
func smallUploads() config.Uploads {
	return config.Uploads{Enabled: true, MaxFileMB: 1, MaxSessionMB: 2, MaxFiles: 3, Types: []string{"csv", "tsv", "txt", "json", "xlsx"}}
}

// filesServer is a real HTTP server over the shipped communities, with uploads set to up for
// nemar and for hed (which is given a Python runtime for it), and st as its store. read counts
// the request body bytes the server read.
type filesServer struct {
	ts   *httptest.Server
	st   store.Store
	read atomic.Int64
}

func newFilesServer(t *testing.T, st store.Store, up config.Uploads, limiter Limiter, rl RateLimits) *filesServer {
	t.Helper()
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range set.Communities {
		switch c.ID {
		case "nemar":
			c.Runtime.Python.Uploads = up
		case "hed":
			c.Runtime = &config.Runtime{Python: &config.PythonRuntime{PyodideVersion: "0.29.5", PreloadOn: "first_run", Uploads: up}}
		}
	}
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo", RateLimits: rl},
		Getenv: func(string) string { return "" }, Communities: set, Artifacts: st, Files: st, Limiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	fs := &filesServer{st: st}
	fs.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingBody{r: r.Body, n: &fs.read}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(fs.ts.Close)
	return fs
}

type countingBody struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingBody) Close() error { return c.r.Close() }

// part is one part of a multipart body: a form field name, a filename ("" for none) and bytes.
type part struct {
	field, filename string
	data            []byte
}

func filePart(name string, data []byte) part { return part{"file", name, data} }

// multipartBody encodes parts; the filename is written as given, so a test can send names a
// browser would not.
func multipartBody(t *testing.T, parts ...part) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.field)
		if p.filename != "" {
			cd += fmt.Sprintf(`; filename=%q`, p.filename)
		}
		h.Set("Content-Disposition", cd)
		h.Set("Content-Type", "application/octet-stream")
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.Bytes()
}

// send makes one request with a body and returns the answer and its body.
func (fs *filesServer) send(t *testing.T, method, path, contentType string, body io.Reader, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, fs.ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := fs.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func (fs *filesServer) upload(t *testing.T, path string, parts ...part) (*http.Response, []byte) {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	return fs.send(t, http.MethodPost, path, ct, bytes.NewReader(body))
}

// xlsxBytes is a minimal Office Open XML package: a zip holding [Content_Types].xml.
func xlsxBytes(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "xl/workbook.xml"} {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(`<?xml version="1.0"?><x/>`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func decodeFiles(t *testing.T, b []byte) []store.SessionFile {
	t.Helper()
	var body struct {
		Files []store.SessionFile `json:"files"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Files == nil {
		t.Fatalf("answer %s: not {\"files\": [...]} (%v)", b, err)
	}
	return body.Files
}

func detail(t *testing.T, b []byte) string {
	t.Helper()
	var d struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("error body %q is not {\"detail\": \"...\"}: %v", b, err)
	}
	return d.Detail
}

// TestSessionFilesFlow: upload two files, list them, replace and delete one, see a server run's
// manifest and export (with the uploads under data/), against the memory store and, where the
// tests have one, Redis.
func TestSessionFilesFlow(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return store.NewMemory(store.Limits{}, nil, nil) },
		"redis":  func(t *testing.T) store.Store { return testRedisStore(t, "") },
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			testSessionFilesFlow(t, newFilesServer(t, newStore(t), smallUploads(), nil, RateLimits{}))
		})
	}
}

func testSessionFilesFlow(t *testing.T, fs *filesServer) {
	ctx := context.Background()
	csv := []byte("subject,score\ns1,3\n")
	xlsx := xlsxBytes(t)
	const base = "/nemar/sessions/sess-1"
	resp, b := fs.upload(t, base+"/files", filePart("scores.csv", csv), filePart("book.xlsx", xlsx))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	got := decodeFiles(t, b)
	if len(got) != 2 || got[0].Name != "book.xlsx" || got[0].Type != "xlsx" || got[0].Bytes != int64(len(xlsx)) || got[0].SHA256 != sum(xlsx) ||
		got[1].Name != "scores.csv" || got[1].Type != "csv" || got[1].SHA256 != sum(csv) {
		t.Errorf("upload answered %+v", got)
	}
	// The session was created by the upload.
	if _, err := fs.st.Session(ctx, "nemar", "sess-1"); err != nil {
		t.Errorf("the upload did not create the session: %v", err)
	}
	resp, b = fs.send(t, http.MethodGet, base+"/files", "", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "private, no-store" {
		t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	if list := decodeFiles(t, b); len(list) != 2 || list[1] != got[1] {
		t.Errorf("list = %+v, want %+v", list, got)
	}
	// A second upload answers the session's whole list; the same name replaces a file.
	resp, b = fs.upload(t, base+"/files", filePart("scores.csv", []byte("subject,score\n")), filePart("notes.txt", []byte("hi")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("second upload: %d %s", resp.StatusCode, b)
	}
	if list := decodeFiles(t, b); len(list) != 3 || list[2].Name != "scores.csv" || list[2].Bytes != 14 {
		t.Errorf("after the second upload: %+v", list)
	}
	if resp, b := fs.send(t, http.MethodDelete, base+"/files/notes.txt", "", nil); resp.StatusCode != http.StatusNoContent || len(b) != 0 {
		t.Errorf("delete: %d %q", resp.StatusCode, b)
	}
	if resp, b := fs.send(t, http.MethodDelete, base+"/files/notes.txt", "", nil); resp.StatusCode != http.StatusNotFound || detail(t, b) != errNoFile.detail {
		t.Errorf("second delete: %d %s", resp.StatusCode, b)
	}

	// A server run, as the chat records it: its files kept, then its record.
	if err := fs.st.PutArtifacts(ctx, "nemar", "sess-1", "toolu_1", map[string][]byte{"out/summary.csv": []byte("n,1\n")}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range []store.RunRecord{
		{CallID: "toolu_1", Status: "ok", Description: "Sum the scores", Code: "print(3)\n", Stdout: "3\n", Summary: "Ran.", Files: []string{"out/summary.csv"}},
		{CallID: "toolu_0", Status: "ok", Description: "Files gone", Code: "pass\n", Files: []string{"old.png"}},
	} {
		if _, err := fs.st.PutRun(ctx, "nemar", "sess-1", rec); err != nil {
			t.Fatal(err)
		}
	}
	resp, b = fs.send(t, http.MethodGet, base+"/artifacts", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("manifest: %d %s", resp.StatusCode, b)
	}
	var manifest []workspace.Entry
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 2 || manifest[0].Ordinal != 1 || manifest[0].CallID != "toolu_1" || !slices.Equal(manifest[0].Files, []string{"out/summary.csv"}) ||
		manifest[0].Timestamp == "" || manifest[1].Files == nil || len(manifest[1].Files) != 0 || !slices.Equal(manifest[1].Missing, []string{"old.png"}) {
		t.Errorf("manifest = %s", b)
	}
	// The file route beside /artifacts still serves a run's file.
	if resp, b := fs.send(t, http.MethodGet, base+"/artifacts/toolu_1/out/summary.csv", "", nil); resp.StatusCode != http.StatusOK || string(b) != "n,1\n" {
		t.Errorf("artifact route: %d %q", resp.StatusCode, b)
	}

	resp, b = fs.send(t, http.MethodGet, base+"/export.zip", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %s", resp.StatusCode, b)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/zip", "Content-Disposition": `attachment; filename=nemar-sess-1.zip`,
		"X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store", "Content-Security-Policy": "default-src 'none'; sandbox",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("export %s = %q, want %q", k, got, want)
		}
	}
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("export is not a zip: %v", err)
	}
	entries := map[string]string{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		entries[f.Name] = string(data)
	}
	for name, want := range map[string]string{
		"scripts/run-001.py": "print(3)\n", "results/run-001/stdout.txt": "3\n", "results/run-001/summary.txt": "Ran.",
		"artifacts/run-001/out/summary.csv": "n,1\n", "data/scores.csv": "subject,score\n", "data/book.xlsx": string(xlsx),
		"scripts/run-002.py": "pass\n",
	} {
		if got, ok := entries[name]; !ok || got != want {
			t.Errorf("export %s = %q (present %v), want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"data/notes.txt", "artifacts/run-002/old.png"} {
		if _, ok := entries[name]; ok {
			t.Errorf("export holds %s", name)
		}
	}
	var zm []workspace.Entry
	if err := json.Unmarshal([]byte(entries["manifest.json"]), &zm); err != nil || len(zm) != 2 || !slices.Equal(zm[1].Missing, []string{"old.png"}) {
		t.Errorf("export manifest.json = %s (%v)", entries["manifest.json"], err)
	}
	var nb struct {
		NBFormat      int `json:"nbformat"`
		NBFormatMinor int `json:"nbformat_minor"`
		Cells         []struct {
			ID string `json:"id"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(entries["notebook.ipynb"]), &nb); err != nil || nb.NBFormat != 4 || nb.NBFormatMinor != 5 || len(nb.Cells) != 4 {
		t.Errorf("notebook: %+v %v", nb, err)
	}
	// HEAD answers the export's headers without building it.
	if resp, b := fs.send(t, http.MethodHead, base+"/export.zip", "", nil); resp.StatusCode != http.StatusOK || len(b) != 0 || resp.Header.Get("Content-Type") != "application/zip" {
		t.Errorf("HEAD export: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	// Unknown sessions are 404 on every read route.
	for _, p := range []string{"/files", "/artifacts", "/export.zip"} {
		if resp, b := fs.send(t, http.MethodGet, "/nemar/sessions/nope"+p, "", nil); resp.StatusCode != http.StatusNotFound || detail(t, b) != errSessionNotFound.detail {
			t.Errorf("GET %s of an unknown session: %d %s", p, resp.StatusCode, b)
		}
	}
	// Deleting the session deletes its files.
	if err := fs.st.DeleteSession(ctx, "nemar", "sess-1"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := fs.send(t, http.MethodGet, base+"/files", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("files of a deleted session: %d", resp.StatusCode)
	}
}

// testRedisStore is a Redis store on the test server under prefix (a fresh one when empty),
// skipped without ASSISTANT_TEST_REDIS_ADDR and failed without it under CI=true, as the store's
// own tests are.
func testRedisStore(t *testing.T, prefix string) *store.Redis {
	t.Helper()
	addr := storetest.RedisAddr(t)
	if prefix == "" {
		prefix = fmt.Sprintf("assistant-test-routers:%d:", time.Now().UnixNano())
	}
	st, err := store.NewRedis(context.Background(), store.RedisOptions{URL: "redis://" + addr + "/0", Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestSessionFilesAcrossReplicas: a file uploaded through one replica is listed and exported
// by another that shares its Redis.
func TestSessionFilesAcrossReplicas(t *testing.T) {
	prefix := fmt.Sprintf("assistant-test-routers:%d:", time.Now().UnixNano())
	a := newFilesServer(t, testRedisStore(t, prefix), smallUploads(), nil, RateLimits{})
	b := newFilesServer(t, testRedisStore(t, prefix), smallUploads(), nil, RateLimits{})
	if resp, body := a.upload(t, "/nemar/sessions/shared/files", filePart("a.csv", []byte("x\n"))); resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if _, err := a.st.PutRun(context.Background(), "nemar", "shared", store.RunRecord{CallID: "toolu_1", Code: "print(1)\n"}); err != nil {
		t.Fatal(err)
	}
	resp, body := b.send(t, http.MethodGet, "/nemar/sessions/shared/files", "", nil)
	if resp.StatusCode != http.StatusOK || len(decodeFiles(t, body)) != 1 {
		t.Errorf("the other replica's list: %d %s", resp.StatusCode, body)
	}
	resp, body = b.send(t, http.MethodGet, "/nemar/sessions/shared/export.zip", "", nil)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("data/a.csv")) || !bytes.Contains(body, []byte("scripts/run-001.py")) {
		t.Errorf("the other replica's export: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// TestUploadRefusals: every rule refuses with a 4xx and a precise message, and nothing of a
// refused request is kept.
func TestUploadRefusals(t *testing.T) {
	fs := newFilesServer(t, store.NewMemory(store.Limits{}, nil, nil), smallUploads(), nil, RateLimits{})
	ctx := context.Background()
	ok := filePart("ok.csv", []byte("a,b\n"))
	mb := 1 << 20
	cases := []struct {
		name   string
		parts  []part
		status int
		detail string
	}{
		{"renamed PNG", []part{ok, filePart("book.xlsx", pngBytes)}, 422, `File "book.xlsx" was refused: a .xlsx file must be an Office Open XML workbook (a zip), and this is not a zip.`},
		{"zip without content types", []part{filePart("book.xlsx", zipWith(t, "a.txt"))}, 422, `File "book.xlsx" was refused: a .xlsx file must be an Office Open XML workbook, and this zip has no [Content_Types].xml.`},
		{"over max_file_mb", []part{ok, filePart("big.csv", bytes.Repeat([]byte("x"), mb+1))}, 413, `File "big.csv" is larger than 1 MB, the most one file may have.`},
		{"the 4th file of a request", []part{ok, filePart("b.csv", nil), filePart("c.csv", nil), filePart("d.csv", nil)}, 409, "A session may hold at most 3 files. Delete one to make room."},
		{"a climbing name", []part{ok, filePart("../x.csv", []byte("a\n"))}, 422, `File "../x.csv" was refused: a file name may only hold letters, digits, '.', '_' and '-'.`},
		{"a dot-dot name", []part{filePart("..", []byte("a\n"))}, 422, `File ".." was refused: a file name may not be empty, . or ...`},
		{"a long name", []part{filePart(strings.Repeat("a", 130)+".csv", nil)}, 422, `File "` + strings.Repeat("a", 128) + `…" was refused: a file name may have at most 128 characters.`},
		{"invalid UTF-8 in a csv", []part{filePart("bad.csv", []byte("a,\xff\n"))}, 422, `File "bad.csv" was refused: a .csv file must be UTF-8 text.`},
		{"invalid JSON", []part{filePart("x.json", []byte("{"))}, 422, `File "x.json" was refused: a .json file must be valid JSON in UTF-8.`},
		{"a type the community does not take", []part{filePart("x.parquet", []byte("PAR1....PAR1"))}, 422, `File "x.parquet" was refused: only csv, tsv, txt, json, xlsx files may be attached here.`},
		{"no file part", []part{{"note", "", []byte("hello")}}, 422, errNoFilePart.detail},
		{"a file field without a filename", []part{{"file", "", []byte("a\n")}}, 422, errFileNoName.detail},
		{"the same name twice", []part{ok, ok}, 422, `File "ok.csv" is in the request twice.`},
		{"over max_session_mb", []part{filePart("a.csv", bytes.Repeat([]byte("x"), mb)), filePart("b.csv", bytes.Repeat([]byte("x"), mb)), filePart("c.csv", []byte("x"))}, 413,
			"A session's files may total at most 2 MB, and one file at most 1 MB."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sid := "refused-" + strings.ReplaceAll(tc.name, " ", "-")
			resp, b := fs.upload(t, "/nemar/sessions/"+sid+"/files", tc.parts...)
			if resp.StatusCode != tc.status || detail(t, b) != tc.detail {
				t.Errorf("%d %s, want %d %q", resp.StatusCode, b, tc.status, tc.detail)
			}
			if l, err := fs.st.Files(ctx, "nemar", sid); !errors.Is(err, store.ErrNotFound) && len(l) != 0 {
				t.Errorf("a refused upload kept %+v (%v)", l, err)
			}
		})
	}

	// Not multipart, or malformed multipart.
	for _, tc := range []struct {
		name, ct, body string
		status         int
	}{
		{"json", "application/json", `{"file":"x"}`, 415},
		{"no content type", "", "x", 415},
		{"no boundary", "multipart/form-data", "x", 415},
		{"url-encoded form", "application/x-www-form-urlencoded", "file=x", 415},
		{"truncated multipart", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\nabc", 400},
	} {
		resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/s-415/files", tc.ct, strings.NewReader(tc.body))
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
		}
		if tc.status == 415 && detail(t, b) != errNotMultipart.detail {
			t.Errorf("%s: %s", tc.name, b)
		}
	}

	// The session's count and bytes count what it already holds.
	const sid = "/nemar/sessions/full/files"
	if resp, b := fs.upload(t, sid, filePart("a.csv", bytes.Repeat([]byte("x"), mb)), filePart("b.csv", []byte("b"))); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if resp, b := fs.upload(t, sid, filePart("c.csv", bytes.Repeat([]byte("x"), mb))); resp.StatusCode != 413 || !strings.Contains(detail(t, b), "at most 2 MB") {
		t.Errorf("past the session's bytes: %d %s", resp.StatusCode, b)
	}
	if resp, b := fs.upload(t, sid, filePart("c.csv", nil), filePart("d.csv", nil)); resp.StatusCode != 409 {
		t.Errorf("the 4th file of the session: %d %s", resp.StatusCode, b)
	}
	if l, _ := fs.st.Files(ctx, "nemar", "full"); len(l) != 2 {
		t.Errorf("after refusals the session holds %d files, want 2", len(l))
	}

	// Session ids and file names are bounded.
	long := strings.Repeat("s", 257)
	if resp, b := fs.upload(t, "/nemar/sessions/"+long+"/files", ok); resp.StatusCode != 400 || detail(t, b) != errUploadSession.detail {
		t.Errorf("an over-long session id: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/files", "/artifacts", "/export.zip", "/files/a.csv"} {
		method := http.MethodGet
		if p == "/files/a.csv" {
			method = http.MethodDelete
		}
		if resp, _ := fs.send(t, method, "/nemar/sessions/"+long+p, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s of an over-long session id: %d", method, p, resp.StatusCode)
		}
	}
}

func zipWith(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, n := range names {
		if _, err := z.Create(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestUploadDefaultCapStreams: at the default 25 MB a file, a 26 MB file is refused with 413
// after the server read little more than 25 MB of it, and a body declared past the session's
// cap is refused before a byte is read.
func TestUploadDefaultCapStreams(t *testing.T) {
	up := smallUploads()
	up.MaxFileMB, up.MaxSessionMB, up.MaxFiles = 25, 100, 16
	fs := newFilesServer(t, store.NewMemory(store.Limits{}, nil, nil), up, nil, RateLimits{})
	const mb = 1 << 20

	// The body is generated as it is sent: the test holds none of it.
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() {
		fw, err := w.CreateFormFile("file", "big.csv")
		if err == nil {
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for i := 0; i < 26*mb/len(chunk) && err == nil; i++ {
				_, err = fw.Write(chunk)
			}
		}
		if err == nil {
			err = w.Close()
		}
		pw.CloseWithError(err)
	}()
	resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/big/files", w.FormDataContentType(), pr)
	pr.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || detail(t, b) != `File "big.csv" is larger than 25 MB, the most one file may have.` {
		t.Errorf("a 26 MB file: %d %s", resp.StatusCode, b)
	}
	t.Logf("the server read %d bytes of the 26 MB body", fs.read.Load())
	if n := fs.read.Load(); n > 25*mb+256<<10 {
		t.Errorf("the server read %d bytes of a 26 MB body, want at most 25 MB and a little", n)
	}

	// Declared too large: refused before reading.
	fs.read.Store(0)
	req, err := http.NewRequest(http.MethodPost, fs.ts.URL+"/nemar/sessions/big/files", io.LimitReader(zeroReader{}, 101*mb))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 101 * mb
	req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
	r2, err := fs.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(r2.Body)
	r2.Body.Close()
	if r2.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(detail(t, b2), "at most 100 MB") || fs.read.Load() != 0 {
		t.Errorf("a 101 MB declared body: %d %s, %d bytes read", r2.StatusCode, b2, fs.read.Load())
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestUploadOtherCommunitysSession: sessions are keyed by community, so an upload to
// /hed/sessions/<a nemar session id>/files makes or fills a hed session of that id and never
// reaches the nemar session; and nemar's routes do not show hed's files.
func TestUploadOtherCommunitysSession(t *testing.T) {
	fs := newFilesServer(t, store.NewMemory(store.Limits{}, nil, nil), smallUploads(), nil, RateLimits{})
	ctx := context.Background()
	if resp, b := fs.upload(t, "/nemar/sessions/shared-id/files", filePart("nemar.csv", []byte("n\n"))); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b := fs.upload(t, "/hed/sessions/shared-id/files", filePart("hed.csv", []byte("h\n")))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if l := decodeFiles(t, b); len(l) != 1 || l[0].Name != "hed.csv" {
		t.Errorf("the hed upload answered %+v: it saw nemar's files", l)
	}
	if l, err := fs.st.Files(ctx, "nemar", "shared-id"); err != nil || len(l) != 1 || l[0].Name != "nemar.csv" {
		t.Errorf("the nemar session holds %+v (%v), want only nemar.csv", l, err)
	}
	if resp, _ := fs.send(t, http.MethodDelete, "/hed/sessions/shared-id/files/nemar.csv", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("hed deleted nemar's file: %d", resp.StatusCode)
	}
	if resp, b := fs.send(t, http.MethodGet, "/hed/sessions/nemar-only/files", "", nil); resp.StatusCode != 404 {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if _, _, err := fs.st.File(ctx, "nemar", "shared-id", "hed.csv"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("hed's file reached the nemar session: %v", err)
	}
}

// TestUploadsOff: a community without uploads enabled, or without a Python runtime, has no file
// routes (404), and keeps nothing; its manifest and export still answer.
func TestUploadsOff(t *testing.T) {
	off := smallUploads()
	off.Enabled = false
	fs := newFilesServer(t, store.NewMemory(store.Limits{}, nil, nil), off, nil, RateLimits{})
	for _, path := range []string{"/nemar/sessions/s/files", "/hed/sessions/s/files", "/bids/sessions/s/files"} {
		resp, b := fs.upload(t, path, filePart("a.csv", []byte("a\n")))
		if resp.StatusCode != http.StatusNotFound || detail(t, b) != errUploadsOff.detail {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		if resp, _ := fs.send(t, http.MethodGet, path, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
	}
	if _, err := fs.st.Session(context.Background(), "nemar", "s"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused upload created the session: %v", err)
	}
	if resp, b := fs.send(t, http.MethodGet, "/nope/sessions/s/files", "", nil); resp.StatusCode != 404 || detail(t, b) != errNotFound.detail {
		t.Errorf("an unknown community: %d %s", resp.StatusCode, b)
	}
	// Without the whole store behind them the session routes do not exist.
	s := newTestServer(t)
	for _, path := range []string{"/nemar/sessions/s/artifacts", "/nemar/sessions/s/export.zip"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s without a store: %d", path, rec.Code)
		}
	}
}

// TestFileRoutesCORSAndRateLimit: the routes answer the community's origins as its other routes
// do, a DELETE preflight allows DELETE, and uploads are limited like resumes.
func TestFileRoutesCORSAndRateLimit(t *testing.T) {
	st := store.NewMemory(store.Limits{}, nil, nil)
	fs := newFilesServer(t, st, smallUploads(), st, RateLimits{ResumePerMinute: 2})
	const origin = "https://nemar.org"
	resp, b := fs.send(t, http.MethodOptions, "/nemar/sessions/s/files/a.csv", "", nil, "Origin", origin, "Access-Control-Request-Method", "DELETE")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "DELETE") {
		t.Errorf("DELETE preflight: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	ct, body := multipartBody(t, filePart("a.csv", []byte("a\n")))
	for i, want := range []int{200, 200, 429} {
		resp, b := fs.send(t, http.MethodPost, "/nemar/sessions/s/files", ct, bytes.NewReader(body), "Origin", origin)
		if resp.StatusCode != want {
			t.Errorf("upload %d: %d %s, want %d", i+1, resp.StatusCode, b, want)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("upload %d: no CORS headers for the community's origin", i+1)
		}
	}
	// Listing is not counted.
	if resp, _ := fs.send(t, http.MethodGet, "/nemar/sessions/s/files", "", nil, "Origin", "https://evil.example"); resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("list from a foreign origin: %d %v", resp.StatusCode, resp.Header)
	}
}

// FuzzReadUploads: no multipart body makes the upload parser panic, keep a file that breaks a
// rule (two names that differ only in case among them), or fail with anything but a 4xx.
func FuzzReadUploads(f *testing.F) {
	seed := func(parts ...string) string {
		return strings.Join(parts, "\r\n")
	}
	for _, sized := range []bool{false, true} {
		f.Add(seed("--B", `Content-Disposition: form-data; name="file"; filename="a.csv"`, "", "a,b", "--B--", ""), sized)
		f.Add(seed("--B", `Content-Disposition: form-data; name="file"; filename="../a.csv"`, "", "a", "--B--"), sized)
		f.Add(seed("--B", `Content-Disposition: form-data; name="file"; filename*=UTF-8''%2e%2e%2fa.csv`, "", "a", "--B--"), sized)
		f.Add(seed("--B", `Content-Disposition: form-data; name="x"`, "", "y", "--B--"), sized)
		f.Add(seed("--B", `Content-Disposition: form-data; name="file"; filename="a.json"`, "Content-Transfer-Encoding: quoted-printable", "", "=7B=7D", "--B--"), sized)
		f.Add(seed("--B", `Content-Disposition: form-data; name="file"; filename="A.csv"`, "", "a", "--B",
			`Content-Disposition: form-data; name="file"; filename="a.csv"`, "", "b", "--B--"), sized)
		f.Add("", sized)
	}
	up := uploadLimits{maxFile: 64, maxSession: 128, maxFiles: 3, types: []string{"csv", "json", "txt", "xlsx"}}
	f.Fuzz(func(t *testing.T, body string, sized bool) {
		// With sized, the body's length is known and files are read into buffers of the size
		// left, as with a Content-Length; else they grow as they are read.
		r := &countingReader{r: strings.NewReader(body)}
		var left func() int64
		if sized {
			left = func() int64 { return int64(len(body)) - r.n }
		}
		files, err := readUploads(r, "B", up, left)
		if err != nil {
			var api *apiError
			if !errors.As(err, &api) || api.status < 400 || api.status >= 500 {
				t.Fatalf("error %v (%T) is not a 4xx", err, err)
			}
			return
		}
		var total int64
		for i, file := range files {
			for _, other := range files[:i] {
				if workspace.SameName(other.Name, file.Name) {
					t.Fatalf("kept %q and %q", other.Name, file.Name)
				}
			}
			typ, cerr := workspace.CheckUpload(file.Name, file.Data, up.types)
			if cerr != nil || typ != file.Type || int64(len(file.Data)) > up.maxFile {
				t.Fatalf("kept %q (%d bytes, %s) that breaks a rule: %v", file.Name, len(file.Data), file.Type, cerr)
			}
			total += int64(len(file.Data))
		}
		if len(files) == 0 || len(files) > up.maxFiles || total > up.maxSession {
			t.Fatalf("%d files, %d bytes", len(files), total)
		}
	})
}

// TestUploadPastTheStorageBudget: when the server's storage for files is full the upload is
// refused (507) and nothing is kept; the error mapping answers the store's file refusals
// alike wherever they come from.
func TestUploadPastTheStorageBudget(t *testing.T) {
	fs := newFilesServer(t, store.NewMemory(store.Limits{ArtifactBytes: 10_000}, nil, nil), smallUploads(), nil, RateLimits{})
	resp, b := fs.upload(t, "/nemar/sessions/s/files", filePart("a.csv", bytes.Repeat([]byte("x"), 20_000)))
	if resp.StatusCode != http.StatusInsufficientStorage || detail(t, b) != errUploadsStorage.detail {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if l, err := fs.st.Files(context.Background(), "nemar", "s"); err != nil || len(l) != 0 {
		t.Errorf("kept %+v (%v)", l, err)
	}
	for err, status := range map[error]int{store.ErrTooManyFiles: 409, store.ErrSessionFilesFull: 413, store.ErrArtifactBudget: 507} {
		if a := fileStoreError(fmt.Errorf("wrapped: %w", err)); a == nil || a.status != status {
			t.Errorf("%v: %+v, want %d", err, a, status)
		}
	}
	if fileStoreError(store.ErrNotFound) != nil {
		t.Error("ErrNotFound is not a file refusal")
	}
}

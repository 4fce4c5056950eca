package tests

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/store/storetest"
)

// The black-box tests of issue 22, items 11 to 16: uploads, exports and session ids against
// the built binary (and, for item 15, a redis-server of the test's own that it stalls).

// uploadCommunities writes a communities directory with one community per id, each taking
// uploads of at most fileMB a file and sessionMB a session, and returns it.
func uploadCommunities(t *testing.T, fileMB, sessionMB int, ids ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, id := range ids {
		cfg := fmt.Sprintf(`id: %s
name: %s
description: Takes the reader's tables.
extensions:
  client_tools:
    - name: execute_code
      runtime: python
      description: Runs Python and returns its output.
runtime:
  python:
    pyodide_version: "0.29.5"
    uploads:
      enabled: true
      max_file_mb: %d
      max_session_mb: %d
      types: [csv, txt, json, xlsx]
`, id, strings.ToUpper(id), fileMB, sessionMB)
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id, "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// noLimits turns the rate limits off: the tests send more uploads than a reader would.
const noLimits = "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"

// answer is a response's status, Retry-After and body.
type answer struct {
	status int
	retry  string
	body   string
}

// multipartUpload is a multipart body of files (name → bytes), in order, with its content type.
func multipartUpload(t *testing.T, names []string, data [][]byte) (string, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for i, name := range names {
		part, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		part.Write(data[i])
	}
	w.Close()
	return w.FormDataContentType(), body.Bytes()
}

// send makes one request; header pairs follow the body. The client waits for 100 Continue
// before it sends a body, as curl does for large ones.
func send(t *testing.T, method, url, contentType string, body io.Reader, size int64, header ...string) answer {
	t.Helper()
	a, err := trySend(method, url, contentType, body, size, header...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// trySend is send for goroutines of a test: it returns the error.
func trySend(method, url, contentType string, body io.Reader, size int64, header ...string) (answer, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Expect", "100-continue")
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := continueClient.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}, err
}

var continueClient = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}}

func uploadFiles(t *testing.T, url string, names []string, data [][]byte, header ...string) answer {
	t.Helper()
	ct, body := multipartUpload(t, names, data)
	return send(t, http.MethodPost, url, ct, bytes.NewReader(body), int64(len(body)), header...)
}

// procKB reads a field of /proc/<pid>/status in kB (VmRSS, VmHWM).
func procKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// csvStream is a multipart body of one CSV file of n bytes, generated as it is sent, and its
// length.
func csvStream(n int64) (contentType string, body io.Reader, size int64) {
	const boundary = "hardeningboundary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	row := bytes.Repeat([]byte("s01,3.5,A\n"), 6554) // 64 KB and a little
	rows := &repeatReader{chunk: row, left: n}
	return "multipart/form-data; boundary=" + boundary, io.MultiReader(strings.NewReader(head), rows, strings.NewReader(tail)), int64(len(head)) + n + int64(len(tail))
}

// repeatReader yields chunk over and over, left bytes in all.
type repeatReader struct {
	chunk []byte
	off   int
	left  int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(int64(len(p)), r.left)], r.chunk[r.off:])
	r.off = (r.off + n) % len(r.chunk)
	r.left -= int64(n)
	return n, nil
}

// TestUploadsBoundedUnderConcurrency (item 11): ten 60 MB uploads at once, each from a client
// of its own, hold no more memory than the upload buffer (256 MB by default): the server's peak
// RSS grows by at most that and a margin, uploads past it are refused with 503 and a
// Retry-After before they are read, and those let in are kept. (Before, every upload was read
// whole at once: about 1 GB here.)
func TestUploadsBoundedUnderConcurrency(t *testing.T) {
	dir := uploadCommunities(t, 100, 100, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--trusted-proxies", "127.0.0.1/32")
	pid := p.cmd.Process.Pid
	if a := uploadFiles(t, p.url+"/tables/sessions/warm/files", []string{"a.csv"}, [][]byte{[]byte("a\n")}); a.status != 200 {
		t.Fatalf("a first upload: %+v", a)
	}
	before := procKB(t, pid, "VmHWM")
	const n, size = 10, 60 << 20
	answers := make([]answer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ct, body, length := csvStream(size)
			answers[i], errs[i] = trySend(http.MethodPost, fmt.Sprintf("%s/tables/sessions/big-%d/files", p.url, i), ct, body, length,
				"X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("upload %d: %v", i, err)
		}
	}
	grew := (procKB(t, pid, "VmHWM") - before) >> 10
	kept := 0
	for i, a := range answers {
		switch {
		case a.status == 200:
			kept++
		case a.status == 503 && a.retry != "":
		default:
			t.Errorf("upload %d: %d (Retry-After %q) %s, want 200, or 503 with a Retry-After", i, a.status, a.retry, a.body)
		}
	}
	t.Logf("%d of %d uploads of 60 MB kept; peak RSS grew by %d MB", kept, n, grew)
	if kept == 0 {
		t.Error("no upload was let in")
	}
	if limit := int64(256 + 128); grew > limit {
		t.Errorf("ten uploads at once grew the peak RSS by %d MB, more than the 256 MB upload buffer and a margin (%d MB)", grew, limit)
	}
	// Nothing is held once they are done: another upload fits at once.
	if a := uploadFiles(t, p.url+"/tables/sessions/after/files", []string{"a.csv"}, [][]byte{[]byte("a\n")}); a.status != 200 {
		t.Errorf("an upload after the others: %+v", a)
	}
}

// TestOneClientCannotFillStorage (item 12): with 8 MB for files in all and two communities
// (4 MB each in memory), a client that uploads until it is refused keeps at most its share of
// a community (by default a quarter, 1 MB, or a session's worth when that is more: here 1 MB
// and its 16 files' names and overhead, so two files of half a MB; --upload-client-mb sets
// it), and then another client still uploads to that community and to the other; a client's
// address is the one the rate limits use (X-Forwarded-For from a trusted proxy).
func TestOneClientCannotFillStorage(t *testing.T) {
	dir := uploadCommunities(t, 1, 1, "alpha", "beta")
	half := bytes.Repeat([]byte("abcdefgh,1\n"), (512<<10)/11)
	for _, tc := range []struct {
		name   string
		flags  []string
		shares int // the half-MB files the first client keeps before it is refused
	}{
		{"default", nil, 2},
		{"--upload-client-mb 2", []string{"--upload-client-mb", "2"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--communities", dir, "--artifact-mb", "8", "--rate-limits", noLimits, "--trusted-proxies", "127.0.0.1/32"}, tc.flags...)
			p := serve(t, nil, args...)
			heavy := []string{"X-Forwarded-For", "203.0.113.9"}
			kept := 0
			var refused answer
			for i := range 40 {
				a := uploadFiles(t, fmt.Sprintf("%s/alpha/sessions/heavy-%d/files", p.url, i), []string{"t.csv"}, [][]byte{half}, heavy...)
				if a.status != 200 {
					refused = a
					break
				}
				kept++
			}
			if refused.status != http.StatusInsufficientStorage || !strings.Contains(refused.body, "as one reader may") {
				t.Errorf("the heavy client was refused with %+v, want 507 about its share", refused)
			}
			if kept != tc.shares {
				t.Errorf("the heavy client kept %d files of half a MB, want %d", kept, tc.shares)
			}
			light := []string{"X-Forwarded-For", "203.0.113.10"}
			for _, c := range []string{"alpha", "beta"} {
				if a := uploadFiles(t, p.url+"/"+c+"/sessions/light/files", []string{"x.csv"}, [][]byte{[]byte("a\n")}, light...); a.status != 200 {
					t.Errorf("another client's 2-byte upload to %s: %+v", c, a)
				}
			}
		})
	}
}

// xlsxOfSize is a workbook (a zip holding [Content_Types].xml) of about n bytes, most of them
// a stored member of random bytes: incompressible, as a real workbook's deflated sheets are.
func xlsxOfSize(t *testing.T, n int) []byte {
	t.Helper()
	noise := make([]byte, n)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, err := z.Create("[Content_Types].xml")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(`<?xml version="1.0"?><Types/>`))
	w, err = z.CreateHeader(&zip.FileHeader{Name: "xl/media/image1.bin", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(noise)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestExportsBounded (item 13): exports held by readers who do not read them (each a client of
// its own) take the export places (one per CPU by default); one more is refused with 503 and a
// Retry-After, and once a place is free an export is written again. The export stores the
// workbooks as they are and deflates the table.
func TestExportsBounded(t *testing.T) {
	dir := uploadCommunities(t, 100, 100, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--trusted-proxies", "127.0.0.1/32")
	session := p.url + "/tables/sessions/export-1"
	getAs := func(client string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, session+"/export.zip", nil)
		req.Header.Set("X-Forwarded-For", client)
		return http.DefaultClient.Do(req)
	}
	table := bytes.Repeat([]byte("subject,score,group\ns01,3,A\n"), 20000)
	books := [][]byte{xlsxOfSize(t, 20<<20), xlsxOfSize(t, 20<<20)}
	if a := uploadFiles(t, session+"/files", []string{"a.xlsx", "b.xlsx", "scores.csv"}, [][]byte{books[0], books[1], table}); a.status != 200 {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	places := runtime.GOMAXPROCS(0) // the binary's default, on this machine
	var held []*http.Response
	defer func() {
		for _, r := range held {
			r.Body.Close()
		}
	}()
	for i := range places {
		resp, err := getAs(fmt.Sprintf("198.51.100.%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, resp) // its 40 MB fill the socket's buffers; the export waits
		if resp.StatusCode != 200 {
			t.Fatalf("export %d: %d", len(held), resp.StatusCode)
		}
	}
	resp, err := getAs("203.0.113.1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "exports") {
		t.Errorf("an export past the %d held: %d (Retry-After %q) %.200q, want 503 with a Retry-After", places, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for _, r := range held {
		r.Body.Close()
	}
	held = nil
	// The held exports end as their readers leave; poll until a place is free.
	var zipped []byte
	waitFor(t, "a free export place", func() bool {
		resp, err := http.Get(session + "/export.zip")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return false
		}
		zipped, err = io.ReadAll(resp.Body)
		return err == nil
	})
	z, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatalf("the export does not open: %v", err)
	}
	methods := map[string]uint16{}
	for _, f := range z.File {
		methods[f.Name] = f.Method
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if want := map[string][]byte{"data/a.xlsx": books[0], "data/b.xlsx": books[1], "data/scores.csv": table}[f.Name]; want != nil && !bytes.Equal(got, want) {
			t.Errorf("%s reads back as %d bytes, want %d", f.Name, len(got), len(want))
		}
	}
	if methods["data/a.xlsx"] != zip.Store || methods["data/b.xlsx"] != zip.Store || methods["data/scores.csv"] != zip.Deflate {
		t.Errorf("export methods %v, want the workbooks stored and the table deflated", methods)
	}
}

// rawRequest sends one request with the path exactly as given (no client re-encodes it) and returns
// the status and body.
func rawRequest(t *testing.T, base, method, path, contentType string, body []byte) (int, string) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, path, host)
	if body != nil {
		fmt.Fprintf(conn, "Content-Type: %s\r\nContent-Length: %d\r\n", contentType, len(body))
	}
	io.WriteString(conn, "\r\n")
	conn.Write(body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSessionIDsInPaths (item 14): a session id in a path is decoded exactly once and then
// held to the body's session_id rule (1 to 256 code points) with no control character: %2F is
// a slash, %252F the three characters %2F (two sessions, not one), CR, LF, NUL, DEL, C1
// controls and bytes that are not UTF-8 are refused (400 on the upload, 404 on the reads), and
// the length is counted after decoding.
func TestSessionIDsInPaths(t *testing.T) {
	dir := uploadCommunities(t, 1, 2, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits)
	ct, slashBody := multipartUpload(t, []string{"slash.csv"}, [][]byte{[]byte("a\n")})
	ct2, percentBody := multipartUpload(t, []string{"percent.csv"}, [][]byte{[]byte("b\n")})
	for _, u := range []struct {
		seg, ct string
		body    []byte
	}{{"x%2Fy", ct, slashBody}, {"x%252Fy", ct2, percentBody}} {
		if code, b := rawRequest(t, p.url, "POST", "/tables/sessions/"+u.seg+"/files", u.ct, u.body); code != 200 {
			t.Fatalf("upload to %s: %d %s", u.seg, code, b)
		}
	}
	for seg, want := range map[string]string{"x%2Fy": "slash.csv", "x%252Fy": "percent.csv", "x%2fy": "slash.csv"} {
		code, b := rawRequest(t, p.url, "GET", "/tables/sessions/"+seg+"/files", "", nil)
		var list struct{ Files []struct{ Name string } }
		if err := json.Unmarshal([]byte(b), &list); code != 200 || err != nil || len(list.Files) != 1 || list.Files[0].Name != want {
			t.Errorf("GET %s/files: %d %s, want only %s", seg, code, b, want)
		}
	}
	// The export names the decoded id: "x/y" gives xy, "x%2Fy" gives x2Fy.
	for seg, want := range map[string]string{"x%2Fy": "tables-xy.zip", "x%252Fy": "tables-x2Fy.zip"} {
		resp, err := http.Head(p.url + "/tables/sessions/" + seg + "/export.zip")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, want) {
			t.Errorf("HEAD %s/export.zip: %d %q, want %s", seg, resp.StatusCode, cd, want)
		}
	}
	long := strings.Repeat("%C3%A9", 256) // 256 code points, 1,536 characters in the path
	if code, b := rawRequest(t, p.url, "POST", "/tables/sessions/"+long+"/files", ct, slashBody); code != 200 {
		t.Errorf("an id of 256 encoded code points: %d %s, want 200", code, b)
	}
	for _, seg := range []string{"%0d%0a", "a%0D%0Ab", "a%00b", "%7F", "a%C2%85", "a%ffb", long + "%C3%A9"} {
		code, b := rawRequest(t, p.url, "POST", "/tables/sessions/"+seg+"/files", ct, slashBody)
		if code != 400 || !strings.Contains(b, "control character") {
			t.Errorf("upload to %.40s: %d %s, want 400", seg, code, b)
		}
		if code, b := rawRequest(t, p.url, "GET", "/tables/sessions/"+seg+"/files", "", nil); code != 404 {
			t.Errorf("GET %.40s/files: %d %s, want 404", seg, code, b)
		}
	}
}

// TestUploadNamesSafeToUnpack (item 16): a Windows device name (CON.csv, nul.txt, COM1.json),
// a name that starts with a dot, and a name that differs from another of the session only in
// case are refused, so an unpacked export holds every file under its own name.
func TestUploadNamesSafeToUnpack(t *testing.T) {
	dir := uploadCommunities(t, 1, 2, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits)
	session := p.url + "/tables/sessions/names"
	csv := []byte("a,b\n")
	for _, name := range []string{"CON.csv", "nul.txt", "COM1.json", "Lpt9.csv", "aux.data.csv", ".hidden.csv", ".csv"} {
		data := csv
		if strings.HasSuffix(name, ".json") {
			data = []byte("{}")
		}
		if a := uploadFiles(t, session+"/files", []string{name}, [][]byte{data}); a.status != 422 {
			t.Errorf("%s: %d %s, want 422", name, a.status, a.body)
		}
	}
	if a := uploadFiles(t, session+"/files", []string{"Data.csv", "data.csv"}, [][]byte{csv, csv}); a.status != 422 || !strings.Contains(a.body, "differ only in case") {
		t.Errorf("two names that differ only in case: %d %s, want 422", a.status, a.body)
	}
	if a := uploadFiles(t, session+"/files", []string{"Data.csv"}, [][]byte{csv}); a.status != 200 {
		t.Fatalf("Data.csv: %d %s", a.status, a.body)
	}
	if a := uploadFiles(t, session+"/files", []string{"DATA.csv"}, [][]byte{csv}); a.status != 409 || !strings.Contains(a.body, "Data.csv") {
		t.Errorf("DATA.csv beside Data.csv: %d %s, want 409 naming Data.csv", a.status, a.body)
	}
	if a := uploadFiles(t, session+"/files", []string{"Data.csv", "CONFIG.csv"}, [][]byte{[]byte("c\n"), csv}); a.status != 200 {
		t.Errorf("Data.csv again (a replacement) and CONFIG.csv: %d %s, want 200", a.status, a.body)
	}
}

// ownRedis starts a redis-server of the test's own on a free port, so the test can stop it
// (SIGSTOP) as if it stalled; it is skipped without redis-server (failed under CI=true).
func ownRedis(t *testing.T) (addr string, proc *os.Process) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed under CI=true")
		}
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "redis-server", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr, cmd.Process
}

// TestUploadAnsweredAsKeptDuringARedisStall (item 15): uploads keep arriving while Redis
// stalls for 5 s (SIGSTOP) with some of them in flight, past the client's timeouts; once it is
// back, every upload answered 200 is listed and every one answered otherwise is not.
func TestUploadAnsweredAsKeptDuringARedisStall(t *testing.T) {
	addr, redis := ownRedis(t)
	dir := uploadCommunities(t, 1, 2, "tables")
	url := "redis://" + addr + "/0?read_timeout=500ms&write_timeout=500ms"
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--redis-url", url)
	const workers = 14
	type result struct {
		session string
		status  int
	}
	results := make(chan result, 10000)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				sid := fmt.Sprintf("stall-%d-%d", w, i)
				ct, body := multipartUpload(t, []string{"a.csv"}, [][]byte{[]byte("a,b\n1,2\n")})
				resp, err := client.Post(p.url+"/tables/sessions/"+sid+"/files", ct, bytes.NewReader(body))
				if err != nil {
					results <- result{sid, 0}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				results <- result{sid, resp.StatusCode}
			}
		})
	}
	// Let uploads flow, stall Redis for 5 s, let it answer again, then stop the uploads.
	waitFor(t, "uploads before the stall", func() bool { return len(results) >= 2*workers })
	if err := redis.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the stall
	if err := redis.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	n := len(results)
	waitFor(t, "uploads after the stall", func() bool { return len(results) >= n+2*workers })
	stop()
	wg.Wait()
	close(results)
	var failed, mismatched int
	for r := range results {
		code, body := get(t, p.url+"/tables/sessions/"+r.session+"/files")
		listed := code == 200 && strings.Contains(body, `"a.csv"`)
		if r.status != 200 {
			failed++
		}
		if listed != (r.status == 200) {
			mismatched++
			t.Errorf("upload to %s answered %d, and its file is listed: %v", r.session, r.status, listed)
		}
	}
	t.Logf("%d uploads failed during the stall", failed)
	if failed == 0 {
		t.Error("no upload failed: the stall did not reach an upload in flight")
	}
}

// TestFileBoundsFromFlagsAndEnvironment: --upload-buffer-mb and ASSISTANT_EXPORT_CONCURRENCY
// reach the routes (an upload larger than a 30 MB buffer is refused with 413 before it is
// read; a second export while one is held in flight is refused with 503), and a value out of
// range stops the start, naming what it wants.
func TestFileBoundsFromFlagsAndEnvironment(t *testing.T) {
	dir := uploadCommunities(t, 100, 100, "tables")
	p := serve(t, []string{"ASSISTANT_EXPORT_CONCURRENCY=1"}, "--communities", dir, "--rate-limits", noLimits, "--upload-buffer-mb", "30")
	session := p.url + "/tables/sessions/flags"
	ct, body, size := csvStream(31 << 20)
	if a := send(t, http.MethodPost, session+"/files", ct, body, size); a.status != 413 || !strings.Contains(a.body, "at most 30 MB at once") {
		t.Errorf("an upload past a 30 MB buffer: %d %s, want 413", a.status, a.body)
	}
	if a := uploadFiles(t, session+"/files", []string{"book.xlsx"}, [][]byte{xlsxOfSize(t, 25<<20)}); a.status != 200 {
		t.Fatalf("a 25 MB upload within the buffer: %d %s", a.status, a.body)
	}
	held, err := http.Get(session + "/export.zip") // 25 MB fill the socket's buffers: it waits
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	resp, err := http.Get(session + "/export.zip")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if held.StatusCode != 200 || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("two exports with one place: %d and %d, want 200 and 503", held.StatusCode, resp.StatusCode)
	}
	for _, args := range [][]string{{"--upload-buffer-mb", "0"}, {"--upload-client-mb", "-1"}, {"--export-concurrency", "2000"}} {
		out, err := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--communities", dir}, args...)...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "want") {
			t.Errorf("%v: %v, want exit 2 naming what it wants:\n%s", args, err, out)
		}
	}
}

// The black-box tests of the review of items 11 to 15 (its items 1 to 6; item 6 is the store's
// TestRedisPartitionUndoesAFailedWrite).

// openRawUpload starts an upload on a connection of its own as client (X-Forwarded-For from
// the trusted loopback), announcing size bytes of body with Expect: 100-continue, and sends no
// body. It returns the connection and its reader; the server answers 100 Continue once the
// upload holds its reservation and reads.
func openRawUpload(t *testing.T, base, path, client string, size int64) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b0und\r\nContent-Length: %d\r\nExpect: 100-continue\r\nX-Forwarded-For: %s\r\n\r\n", path, size, client)
	return conn, bufio.NewReader(conn)
}

// rawAnswer reads the next answer on conn, failing after bound (an answer that should have come).
func rawAnswer(t *testing.T, conn net.Conn, r *bufio.Reader, bound time.Duration) (int, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", bound, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestStalledUploadsLockNoOneOut (review items 1 and 3): the reviewer's attack, three
// connections of one client that announce 100 MiB, 100 MiB and 56 MiB and send no body, against
// the default 256 MB buffer; the same from an IPv6 client's /64. The first of each holds its
// reservation (it is told to continue), the others are refused at once with 503 for the
// client's share, another client's 2-byte upload is kept, and the first is cut with 408 once
// its first MiB has not come within 10 s, which frees its reservation. (Before, the three held
// the whole buffer and every other upload got 503 for the 60 s read timeout, renewable.)
func TestStalledUploadsLockNoOneOut(t *testing.T) {
	dir := uploadCommunities(t, 100, 100, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--trusted-proxies", "127.0.0.1/32")
	type held struct {
		conn net.Conn
		r    *bufio.Reader
	}
	var first []held
	for _, clients := range [][]string{
		{"203.0.113.5", "203.0.113.5", "203.0.113.5"},
		{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"},
	} {
		for i, size := range []int64{100 << 20, 100 << 20, 56 << 20} {
			conn, r := openRawUpload(t, p.url, fmt.Sprintf("/tables/sessions/stall-%d/files", i), clients[i], size)
			code, body := rawAnswer(t, conn, r, 10*time.Second)
			switch {
			case i == 0 && code == http.StatusContinue:
				first = append(first, held{conn, r})
			case i > 0 && code == http.StatusServiceUnavailable && strings.Contains(body, "as one reader may"):
			default:
				t.Errorf("upload %d of %s, %d MiB: %d %s", i, clients[i], size>>20, code, body)
			}
		}
	}
	if a := uploadFiles(t, p.url+"/tables/sessions/light/files", []string{"x.csv"}, [][]byte{[]byte("a\n")}, "X-Forwarded-For", "198.51.100.1"); a.status != 200 {
		t.Errorf("another client's 2-byte upload beside the stalled ones: %+v", a)
	}
	start := time.Now()
	for _, h := range first {
		if code, body := rawAnswer(t, h.conn, h.r, 30*time.Second); code != http.StatusRequestTimeout || !strings.Contains(body, "too slowly") {
			t.Errorf("a stalled upload: %d %s, want 408", code, body)
		}
	}
	t.Logf("the stalled uploads were cut %v after the last of them was let in", time.Since(start).Round(100*time.Millisecond))
	// Their reservations are free: the same client may upload again.
	if a := uploadFiles(t, p.url+"/tables/sessions/again/files", []string{"x.csv"}, [][]byte{[]byte("a\n")}, "X-Forwarded-For", "203.0.113.5"); a.status != 200 {
		t.Errorf("the stalling client, once its uploads were cut: %+v", a)
	}
}

// smallWindow dials base with a 4 KB receive buffer, so that an answer it does not read fills
// the buffers at once and the server's writes wait.
func smallWindow(t *testing.T, base string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestExportsPerClientAndPaced (review items 2 and 3): a client whose reader stops reading its
// export holds no more than that one export, and not for long: its second export (from
// another address of its /64) is refused with 503 and a Retry-After while another client's is
// written, and 30 s without progress end the stalled answer and free its place, so the client
// exports again. (Before, one client's readers could take every place, each for the 10-minute
// write bound.)
func TestExportsPerClientAndPaced(t *testing.T) {
	dir := uploadCommunities(t, 100, 100, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--trusted-proxies", "127.0.0.1/32")
	session := p.url + "/tables/sessions/export-paced"
	if a := uploadFiles(t, session+"/files", []string{"a.xlsx"}, [][]byte{xlsxOfSize(t, 16<<20)}); a.status != 200 {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	conn := smallWindow(t, p.url)
	fmt.Fprintf(conn, "GET /tables/sessions/export-paced/export.zip HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 2001:db8:1:2::1\r\n\r\n")
	r := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the stalled export: %v %v", resp, err)
	}
	start := time.Now()
	exportAs := func(client string) (int, string, []byte) {
		req, _ := http.NewRequest(http.MethodGet, session+"/export.zip", nil)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Retry-After"), b
	}
	if code, retry, b := exportAs("2001:db8:1:2::ffff"); code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(string(b), "An export of yours") {
		t.Errorf("a second export of the /64: %d (Retry-After %q) %.200s, want 503", code, retry, b)
	}
	if code, _, b := exportAs("198.51.100.1"); code != 200 {
		t.Errorf("another client's export: %d %.200s", code, b)
	} else if _, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Errorf("another client's export does not open: %v", err)
	}
	// The stalled answer ends within its 30 s window (and a margin): the /64 exports again.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, _, _ := exportAs("2001:db8:1:2::ffff")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after its reader stopped, the stalled export still holds the client's place (%d)", code)
		}
	}
	t.Logf("the stalled export ended %v after its reader stopped reading", time.Since(start).Round(time.Second))
}

// TestDefaultClientShareHoldsAFile (review item 4): in memory with four communities taking
// uploads (a 64 MB share each of the default 256 MB), a reader's first file of 20 MB, within
// the communities' 25 MB a file, is kept: by default a client may keep a session's worth. An
// operator's --upload-client-mb below a community's max_file_mb is logged at start.
func TestDefaultClientShareHoldsAFile(t *testing.T) {
	dir := uploadCommunities(t, 25, 100, "one", "two", "three", "four")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits)
	if a := uploadFiles(t, p.url+"/one/sessions/first/files", []string{"book.xlsx"}, [][]byte{xlsxOfSize(t, 20<<20)}); a.status != 200 {
		t.Errorf("a reader's first 20 MB file: %d %s, want 200", a.status, a.body)
	}
	low := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--upload-client-mb", "10", "--log-format", "json")
	waitFor(t, "the warning about --upload-client-mb", func() bool {
		return strings.Count(low.stdout.String()+low.stderr.String(), "below the community's max_file_mb") == 4
	})
}

// TestRedisExportsHoldOneFileAtOnce (review item 5): with Redis, whose replies are copies, the
// files four concurrent exports read are reserved from the upload buffer (30 MB here) before
// they are read, so the exports take turns with their 24 MB files rather than hold four at once:
// the peak RSS grows by well under the four files, and every zip is whole.
func TestRedisExportsHoldOneFileAtOnce(t *testing.T) {
	redis := storetest.RedisURL(t)
	prefix := fmt.Sprintf("test:exports:%d:", time.Now().UnixNano())
	dir := uploadCommunities(t, 25, 100, "tables")
	p := serve(t, nil, "--communities", dir, "--rate-limits", noLimits, "--trusted-proxies", "127.0.0.1/32",
		"--redis-url", redis, "--redis-prefix", prefix, "--upload-buffer-mb", "30", "--export-concurrency", "4")
	session := p.url + "/tables/sessions/redis-export"
	// The files go into Redis from here, so that the server's memory starts from its own.
	ctx := context.Background()
	st, err := store.NewRedis(ctx, store.RedisOptions{URL: redis, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.EnsureSession(ctx, "tables", "redis-export"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f := []store.NewFile{{Name: fmt.Sprintf("b%d.xlsx", i), Type: "xlsx", Data: xlsxOfSize(t, 24<<20)}}
		if _, err := st.PutFiles(ctx, "tables", "redis-export", f, store.FileLimits{MaxFiles: 16, MaxSessionBytes: 100 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	pid := p.cmd.Process.Pid
	// The uploads' own peak is behind us: the high-water mark starts again from the RSS now.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	before := procKB(t, pid, "VmRSS")
	var wg sync.WaitGroup
	zips := make([][]byte, 4)
	for i := range zips {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, session+"/export.zip", nil)
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			zips[i], _ = io.ReadAll(resp.Body)
		})
	}
	wg.Wait()
	grew := (procKB(t, pid, "VmHWM") - before) >> 10
	for i, z := range zips {
		r, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
		if err != nil {
			t.Fatalf("export %d does not open: %v", i, err)
		}
		n := 0
		for _, f := range r.File {
			if strings.HasPrefix(f.Name, "data/") {
				n++
			}
		}
		if n != 3 {
			t.Errorf("export %d holds %d of the 3 files", i, n)
		}
	}
	t.Logf("four exports of 3 × 24 MB from Redis grew the peak RSS by %d MB", grew)
	if grew > 90 {
		t.Errorf("four exports grew the peak RSS by %d MB: more than one 24 MB file at a time and a margin (90 MB)", grew)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/routers"
	"github.com/osc-assistant/assistant/tests/golden"
)

// env is a settable environment for the live kill switch.
type env struct {
	mu sync.Mutex
	m  map[string]string
}

func (e *env) get(k string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[k]
}

func (e *env) set(k, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[k] = v
}

type testServer struct {
	*httptest.Server
	srv *routers.Server
	env *env
}

// startServer builds the server exactly as serve does, from flags, and serves it on loopback.
func startServer(t testing.TB, args ...string) *testServer {
	t.Helper()
	return startServerWith(t, nil, nil, args...)
}

// startServerWith is startServer with an environment and a clock.
func startServerWith(t testing.TB, environ map[string]string, now func() time.Time, args ...string) *testServer {
	t.Helper()
	e := &env{m: map[string]string{}}
	for k, v := range environ {
		e.m[k] = v
	}
	if e.m["ASSISTANT_DATA_DIR"] == "" { // never the user's own
		e.m["ASSISTANT_DATA_DIR"] = t.TempDir()
	}
	if e.m["ASSISTANT_SYNC_ENABLED"] == "" { // no test reaches the real APIs (sync_test.go)
		e.m["ASSISTANT_SYNC_ENABLED"] = "false"
	}
	s, err := parseServe(append([]string{"--communities", "../../communities"}, args...), e.get, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s.now = now
	srv, closeState, err := buildServer(context.Background(), s, e.get, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeState)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, srv: srv, env: e}
}

func (ts *testServer) do(t *testing.T, method, path string, body io.Reader, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return append(out.Bytes(), '\n')
}

// TestCommunityConfigGolden pins GET /{c} for every shipped community in both deployments.
func TestCommunityConfigGolden(t *testing.T) {
	for _, dep := range []string{"production", "develop"} {
		ts := startServer(t, "--deployment", dep)
		for _, id := range []string{"bids", "hed", "nemar"} {
			t.Run(dep+"/"+id, func(t *testing.T) {
				resp := ts.do(t, "GET", "/"+id, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				golden.Check(t, "testdata/public/"+id+"."+dep+".json", indent(t, readAll(t, resp)))
				// The trailing-slash form serves the same bytes.
				slash := ts.do(t, "GET", "/"+id+"/", nil)
				if slash.StatusCode != 200 || slash.Header.Get("ETag") != resp.Header.Get("ETag") {
					t.Errorf("GET /%s/: status %d, ETag %q vs %q", id, slash.StatusCode, slash.Header.Get("ETag"), resp.Header.Get("ETag"))
				}
			})
		}
	}
}

func TestCommunityConfigETag(t *testing.T) {
	ts := startServer(t)
	resp := ts.do(t, "GET", "/nemar", nil)
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag %q is not a strong tag", etag)
	}
	again := ts.do(t, "GET", "/nemar", nil, "If-None-Match", etag)
	if again.StatusCode != http.StatusNotModified || len(readAll(t, again)) != 0 {
		t.Fatalf("If-None-Match: status %d, want 304 with no body", again.StatusCode)
	}
	other := ts.do(t, "GET", "/nemar", nil, "If-None-Match", `"something-else"`)
	if other.StatusCode != 200 {
		t.Fatalf("other tag: status %d, want 200", other.StatusCode)
	}
}

type publicView struct {
	Status      string            `json:"status"`
	ClientTools []json.RawMessage `json:"client_tools"`
	Runtime     json.RawMessage   `json:"runtime"`
	RuntimeLock json.RawMessage   `json:"runtime_lock"`
}

func (ts *testServer) public(t *testing.T, id string) publicView {
	t.Helper()
	var v publicView
	if err := json.Unmarshal(readAll(t, ts.do(t, "GET", "/"+id, nil)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKillSwitch flips the switch while the server runs: globally, then for one community.
func TestKillSwitch(t *testing.T) {
	ts := startServer(t)
	const wheel = "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl"
	if v := ts.public(t, "nemar"); len(v.ClientTools) != 1 || string(v.Runtime) == "null" || string(v.RuntimeLock) == "null" {
		t.Fatalf("tools not offered before the switch: %+v", v)
	}
	for _, value := range []string{"1", " YES ", "hed,nemar"} {
		ts.env.set("ASSISTANT_CLIENT_TOOLS_DISABLED", value)
		v := ts.public(t, "nemar")
		if len(v.ClientTools) != 0 || string(v.Runtime) != "null" || string(v.RuntimeLock) != "null" {
			t.Errorf("switch %q: tools still offered: %+v", value, v)
		}
		if r := ts.do(t, "GET", wheel, nil); r.StatusCode != 404 {
			t.Errorf("switch %q: wheel status %d, want 404", value, r.StatusCode)
		}
	}
	ts.env.set("ASSISTANT_CLIENT_TOOLS_DISABLED", "hed")
	if v := ts.public(t, "nemar"); len(v.ClientTools) != 1 {
		t.Errorf("switching off hed switched off nemar")
	}
	ts.env.set("ASSISTANT_CLIENT_TOOLS_DISABLED", "")
	ts.env.set("OSA_CLIENT_TOOLS_DISABLED", "on")
	if v := ts.public(t, "nemar"); len(v.ClientTools) != 0 {
		t.Errorf("the OSA alias did not switch tools off")
	}
}

func TestWheelRoute(t *testing.T) {
	ts := startServer(t)
	const name = "nemar_tools-0.1.0-py3-none-any.whl"
	want, err := os.ReadFile("../../communities/nemar/runtime/wheels/" + name)
	if err != nil {
		t.Fatal(err)
	}
	resp := ts.do(t, "GET", "/nemar/runtime/"+name, nil)
	got := readAll(t, resp)
	if resp.StatusCode != 200 || !bytes.Equal(got, want) {
		t.Fatalf("status %d, %d bytes; want 200 and the %d wheel bytes", resp.StatusCode, len(got), len(want))
	}
	for k, v := range map[string]string{
		"Cache-Control": "public, max-age=31536000, immutable",
		"Content-Type":  "application/octet-stream",
		"ETag":          `"0ea6d0d558d410e7714dfc8dbbf517002fead9e0e5a9b0b3760f8c5447a94314"`,
	} {
		if resp.Header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, resp.Header.Get(k), v)
		}
	}
	if resp.Header.Get("Last-Modified") != "" {
		t.Errorf("Last-Modified set: the identity of a wheel is its name and hash")
	}
	nm := ts.do(t, "GET", "/nemar/runtime/"+name, nil, "If-None-Match", resp.Header.Get("ETag"))
	if nm.StatusCode != 304 {
		t.Errorf("If-None-Match: status %d, want 304", nm.StatusCode)
	}
	rg := ts.do(t, "GET", "/nemar/runtime/"+name, nil, "Range", "bytes=10-19")
	if part := readAll(t, rg); rg.StatusCode != 206 || !bytes.Equal(part, want[10:20]) {
		t.Errorf("Range: status %d, %q; want 206 and bytes 10-19", rg.StatusCode, part)
	}
	if cr := rg.Header.Get("Content-Range"); cr == "" {
		t.Errorf("Range: no Content-Range")
	}
}

// TestWheelRouteRefusesEverythingUnlisted: the wheel route looks names up in the verified
// overlay and never touches the file system, so nothing but a listed wheel comes back.
func TestWheelRouteRefusesEverythingUnlisted(t *testing.T) {
	ts := startServer(t)
	for _, p := range []string{
		"/nemar/runtime/config.yaml",
		"/nemar/runtime/lock.json",
		"/nemar/runtime/..%2Fconfig.yaml",
		"/nemar/runtime/%2E%2E%2F%2E%2E%2Fconfig.yaml",
		"/nemar/runtime/..%2F..%2F..%2Fetc%2Fpasswd",
		"/nemar/runtime/%2Fetc%2Fpasswd",
		"/nemar/runtime/wheels%2Fnemar_tools-0.1.0-py3-none-any.whl",
		"/nemar/runtime/nemar_tools-0.2.0-py3-none-any.whl",
		"/nemar/runtime/NEMAR_TOOLS-0.1.0-py3-none-any.whl",
		"/hed/runtime/nemar_tools-0.1.0-py3-none-any.whl",
		"/unknown/runtime/nemar_tools-0.1.0-py3-none-any.whl",
	} {
		resp := ts.do(t, "GET", p, nil)
		body := readAll(t, resp)
		if resp.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", p, resp.StatusCode)
		}
		if resp.Header.Get("Cache-Control") == runtimeCacheControlForTest {
			t.Errorf("%s: a 404 carries the immutable header", p)
		}
		if bytes.Contains(body, []byte("nemar")) && !bytes.Contains(body, []byte("detail")) {
			t.Errorf("%s: body %q", p, body)
		}
	}
	resp := ts.do(t, "GET", "/nemar/runtime/config.yaml", nil)
	if got := string(readAll(t, resp)); got != `{"detail":"No such runtime file"}`+"\n" {
		t.Errorf("404 body = %q", got)
	}
}

const runtimeCacheControlForTest = "public, max-age=31536000, immutable"

// TestTamperedOverlayFailsClosed: a wheel changed on disk before start leaves the community
// served without client tools, its wheel route 503 without the immutable header.
func TestTamperedOverlayFailsClosed(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../../communities", dir)
	wheel := filepath.Join(dir, "nemar/runtime/wheels/nemar_tools-0.1.0-py3-none-any.whl")
	f, err := os.OpenFile(wheel, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	ts := startServer(t, "--communities", dir)
	v := ts.public(t, "nemar")
	if v.Status != "degraded" || len(v.ClientTools) != 0 || string(v.Runtime) != "null" || string(v.RuntimeLock) != "null" {
		t.Fatalf("tampered overlay not failed closed: %+v", v)
	}
	resp := ts.do(t, "GET", "/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl", nil)
	body := string(readAll(t, resp))
	if resp.StatusCode != 503 || body != `{"detail":"This community's browser runtime is unavailable"}`+"\n" {
		t.Errorf("status %d body %q, want 503", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") == runtimeCacheControlForTest {
		t.Error("a 503 carries the immutable header")
	}
	if hv := ts.public(t, "hed"); hv.Status != "healthy" {
		t.Errorf("another community was affected: %+v", hv)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

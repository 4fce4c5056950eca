package routers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/limits"
)

// fakePyodide writes a folder that looks like the npm pyodide package, plus files the route
// must not serve, and returns the folder holding it.
func fakePyodide(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "0.29.5")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"pyodide.mjs":       "export const version = '0.29.5';",
		"pyodide.asm.js":    "// asm",
		"pyodide.asm.wasm":  "\x00asm\x01\x00\x00\x00 and the rest of the module",
		"pyodide-lock.json": `{"info":{},"packages":{}}`,
		"python_stdlib.zip": "PK",
		"console.html":      "<script>alert(1)</script>",
		"README.md":         "readme",
		"pyodide.d.ts":      "types",
		".installed":        "",
		"sub/inner.js":      "nested",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(root, "secret.js")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "linked.js")); err != nil {
		t.Fatal(err)
	}
	// Not versions: ignored.
	if err := os.MkdirAll(filepath.Join(root, "latest"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A version folder that is not a distribution: ignored.
	if err := os.MkdirAll(filepath.Join(root, "0.28.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "0.28.0", "pyodide.mjs"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func newDemoServer(t *testing.T, base string, env map[string]string) *Server {
	t.Helper()
	set, err := config.Load(context.Background(), "../communities", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Deps{
		Settings:    Settings{BasePath: base, Deployment: config.Production, DefaultModel: "scripted/demo"},
		Getenv:      func(k string) string { return env[k] },
		Communities: set,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, s http.Handler, rawPath string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	u, err := url.Parse(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	req.URL = u
	req.RequestURI = rawPath
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

var demoConfigRE = regexp.MustCompile(`<script id="demo-config" type="application/json">(.*?)</script>`)

func pageConfig(t *testing.T, body string) demoConfig {
	t.Helper()
	m := demoConfigRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no config in the page:\n%s", body)
	}
	var cfg demoConfig
	if err := json.Unmarshal([]byte(m[1]), &cfg); err != nil {
		t.Fatalf("config %q: %v", m[1], err)
	}
	return cfg
}

func TestDemoPage(t *testing.T) {
	s := newDemoServer(t, "", map[string]string{envPyodideDir: fakePyodide(t)})
	rec := get(t, s, "/nemar/demo/")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	h := rec.Header()
	if ct := h.Get("Content-Type"); ct != "text/html; charset=UTF-8" {
		t.Errorf("Content-Type %q", ct)
	}
	want := "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; " +
		"connect-src 'self' https://zarr.nemar.org; img-src 'self' data: blob:; style-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if csp := h.Get("Content-Security-Policy"); csp != want {
		t.Errorf("CSP\n got %s\nwant %s", csp, want)
	}
	if h.Get("Cache-Control") != "no-cache" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", h)
	}
	body := rec.Body.String()
	if !strings.Contains(body, "<title>NEMAR Assistant</title>") {
		t.Errorf("no title in the page")
	}
	cfg := pageConfig(t, body)
	p := cfg.Pyodide
	if cfg.Community != "nemar" || p.Version != "0.29.5" || p.IndexURL != "../../pyodide/v0.29.5/" || p.Problem != "" {
		t.Errorf("config %+v", cfg)
	}
	if got := strings.Join(p.Files, ","); got != "pyodide-lock.json,pyodide.asm.js,pyodide.asm.wasm,pyodide.mjs,python_stdlib.zip" {
		t.Errorf("files %s", got)
	}

	// A community without client tools gets a plain chat page.
	rec = get(t, s, "/hed/demo/")
	if rec.Code != http.StatusOK || pageConfig(t, rec.Body.String()).Pyodide.IndexURL != "" {
		t.Errorf("hed: %d %s", rec.Code, rec.Body)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("hed CSP %s", csp)
	}
	if rec := get(t, s, "/nope/demo/"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown community: %d", rec.Code)
	}
}

func TestDemoPageSettings(t *testing.T) {
	dir := fakePyodide(t)
	t.Run("kill switch", func(t *testing.T) {
		s := newDemoServer(t, "", map[string]string{envPyodideDir: dir, "ASSISTANT_CLIENT_TOOLS_DISABLED": "1"})
		rec := get(t, s, "/nemar/demo/")
		if p := pageConfig(t, rec.Body.String()).Pyodide; p.IndexURL != "" || p.Version != "" {
			t.Errorf("pyodide %+v", p)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self';") {
			t.Errorf("CSP %s", csp)
		}
	})
	t.Run("no local copy", func(t *testing.T) {
		s := newDemoServer(t, "", map[string]string{envPyodideDir: t.TempDir()})
		p := pageConfig(t, get(t, s, "/nemar/demo/").Body.String()).Pyodide
		if p.IndexURL != "" || !strings.Contains(p.Problem, "scripts/install_pyodide.sh") {
			t.Errorf("pyodide %+v", p)
		}
	})
	t.Run("CDN", func(t *testing.T) {
		s := newDemoServer(t, "", map[string]string{envPyodideDir: dir, envPyodideURL: "https://cdn.jsdelivr.net/pyodide/v{version}/full"})
		rec := get(t, s, "/nemar/demo/")
		p := pageConfig(t, rec.Body.String()).Pyodide
		if p.IndexURL != "https://cdn.jsdelivr.net/pyodide/v0.29.5/full/" || p.Files != nil {
			t.Errorf("pyodide %+v", p)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self' 'wasm-unsafe-eval' https://cdn.jsdelivr.net;") ||
			!strings.Contains(csp, "connect-src 'self' https://cdn.jsdelivr.net https://zarr.nemar.org;") {
			t.Errorf("CSP %s", csp)
		}
	})
	t.Run("packages URL", func(t *testing.T) {
		s := newDemoServer(t, "", map[string]string{envPyodideDir: dir, envPyodidePackagesURL: "https://cdn.jsdelivr.net/pyodide/v{version}/full/"})
		rec := get(t, s, "/nemar/demo/")
		p := pageConfig(t, rec.Body.String()).Pyodide
		if p.IndexURL != "../../pyodide/v0.29.5/" || p.PackagesURL != "https://cdn.jsdelivr.net/pyodide/v0.29.5/full/" {
			t.Errorf("pyodide %+v", p)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' https://cdn.jsdelivr.net https://zarr.nemar.org;") {
			t.Errorf("CSP %s", csp)
		}
	})
	t.Run("a bad CDN setting is ignored", func(t *testing.T) {
		for _, bad := range []string{"http://cdn.example/x/", "ftp://cdn.example/", "https://u:p@cdn.example/", "https://cdn.example/?q=1", "https://cdn example/", "cdn.example"} {
			s := newDemoServer(t, "", map[string]string{envPyodideDir: dir, envPyodideURL: bad})
			if p := pageConfig(t, get(t, s, "/nemar/demo/").Body.String()).Pyodide; p.IndexURL != "../../pyodide/v0.29.5/" {
				t.Errorf("%s: pyodide %+v", bad, p)
			}
		}
	})
}

func TestDemoRedirect(t *testing.T) {
	for _, base := range []string{"", "/osa"} {
		s := newDemoServer(t, base, nil)
		rec := get(t, s, base+"/nemar/demo?dataset=ds000001")
		if rec.Code != http.StatusPermanentRedirect || rec.Header().Get("Location") != "demo/?dataset=ds000001" {
			t.Errorf("base %q: %d %q", base, rec.Code, rec.Header().Get("Location"))
		}
		// The relative Location lands on the page under any prefix.
		target, _ := url.Parse("http://h" + base + "/nemar/demo")
		loc, _ := url.Parse(rec.Header().Get("Location"))
		if got := target.ResolveReference(loc).Path; got != base+"/nemar/demo/" {
			t.Errorf("base %q: resolves to %s", base, got)
		}
		if rec := get(t, s, base+"/nemar/demo"); rec.Header().Get("Location") != "demo/" {
			t.Errorf("no query: %q", rec.Header().Get("Location"))
		}
		if rec := get(t, s, base+"/nope/demo"); rec.Code != http.StatusNotFound {
			t.Errorf("unknown community: %d", rec.Code)
		}
		if rec := get(t, s, base+"/nemar/demo/"); rec.Code != http.StatusOK {
			t.Errorf("base %q: page %d", base, rec.Code)
		}
	}
}

func TestDemoAssets(t *testing.T) {
	s := newDemoServer(t, "/osa", map[string]string{envPyodideDir: fakePyodide(t)})
	for name, ct := range map[string]string{
		"app.js":         "text/javascript; charset=utf-8",
		"worker.js":      "text/javascript; charset=utf-8",
		"lib.mjs":        "text/javascript; charset=utf-8",
		"style.css":      "text/css; charset=utf-8",
		"osa_runtime.py": "text/plain; charset=utf-8",
	} {
		rec := get(t, s, "/osa/nemar/demo/"+name)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ct || rec.Body.Len() == 0 {
			t.Errorf("%s: %d %q", name, rec.Code, rec.Header().Get("Content-Type"))
		}
		// The worker's own response carries the policy that binds code run in it.
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' https://zarr.nemar.org;") {
			t.Errorf("%s: CSP %s", name, csp)
		}
		etag := rec.Header().Get("ETag")
		if rec := get(t, s, "/osa/nemar/demo/"+name, "If-None-Match", etag); rec.Code != http.StatusNotModified {
			t.Errorf("%s: If-None-Match: %d", name, rec.Code)
		}
	}
	rec := get(t, s, "/osa/nemar/demo/config.json")
	var cfg demoConfig
	if err := json.Unmarshal(rec.Body.Bytes(), &cfg); err != nil || rec.Code != http.StatusOK || cfg.Pyodide.IndexURL != "../../pyodide/v0.29.5/" {
		t.Errorf("config.json: %d %s", rec.Code, rec.Body)
	}
	for _, name := range []string{"index.html", "nope.js", "..%2Fapp.js", "static%2Fapp.js", "doc.go"} {
		if rec := get(t, s, "/osa/nemar/demo/"+name); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d", name, rec.Code)
		}
	}
	if rec := get(t, s, "/osa/nope/demo/app.js"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown community: %d", rec.Code)
	}
}

func TestPyodideRoute(t *testing.T) {
	for _, base := range []string{"", "/osa"} {
		s := newDemoServer(t, base, map[string]string{envPyodideDir: fakePyodide(t)})
		p := base + "/pyodide/v0.29.5/"
		rec := get(t, s, p+"pyodide.asm.wasm", "Origin", "https://elsewhere.example")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", base, rec.Code, rec.Body)
		}
		h := rec.Header()
		if h.Get("Content-Type") != "application/wasm" || h.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
			h.Get("ETag") == "" || h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("headers %v", h)
		}
		if !strings.HasPrefix(rec.Body.String(), "\x00asm") {
			t.Errorf("body %q", rec.Body)
		}
		if ct := get(t, s, p+"pyodide.mjs").Header().Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
			t.Errorf("pyodide.mjs: %s", ct)
		}

		// Range and conditional requests.
		rec = get(t, s, p+"pyodide.asm.wasm", "Range", "bytes=1-3")
		if rec.Code != http.StatusPartialContent || rec.Body.String() != "asm" || rec.Header().Get("Content-Range") == "" {
			t.Errorf("range: %d %q %v", rec.Code, rec.Body, rec.Header())
		}
		if rec := get(t, s, p+"pyodide.asm.wasm", "If-None-Match", h.Get("ETag")); rec.Code != http.StatusNotModified {
			t.Errorf("If-None-Match: %d", rec.Code)
		}

		// Only what the manifest lists: never a path joined from the request.
		for _, name := range []string{
			"console.html", "README.md", "pyodide.d.ts", ".installed", "linked.js", "sub", "sub%2Finner.js",
			"..%2F0.29.5%2Fpyodide.mjs", "%2E%2E%2Fsecret.js", "..%2Fsecret.js", "..", "%2E%2E", "pyodide.mjs%00",
			"nope.js", "PYODIDE.MJS",
		} {
			rec := get(t, s, p+name)
			if rec.Code != http.StatusNotFound {
				t.Errorf("%s%s: %d %q", p, name, rec.Code, rec.Body)
			}
		}
		for _, path := range []string{
			base + "/pyodide/0.29.5/pyodide.mjs", base + "/pyodide/v0.28.0/pyodide.mjs", base + "/pyodide/vlatest/pyodide.mjs",
			base + "/pyodide/v0.29.5/sub/inner.js", base + "/pyodide/v..%2F0.29.5/pyodide.mjs",
		} {
			if rec := get(t, s, path); rec.Code != http.StatusNotFound {
				t.Errorf("%s: %d", path, rec.Code)
			}
		}
		rec = get(t, s, p+"README.md")
		if rec.Body.String() != `{"detail":"No such Pyodide file"}`+"\n" {
			t.Errorf("404 body %q", rec.Body)
		}
	}
}

func TestPyodideFileChangedAfterStart(t *testing.T) {
	dir := fakePyodide(t)
	s := newDemoServer(t, "", map[string]string{envPyodideDir: dir})
	if err := os.WriteFile(filepath.Join(dir, "0.29.5", "pyodide.mjs"), []byte("something else entirely"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := get(t, s, "/pyodide/v0.29.5/pyodide.mjs")
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a changed file: %d %q", rec.Code, rec.Body)
	}
	if err := os.Remove(filepath.Join(dir, "0.29.5", "pyodide.asm.js")); err != nil {
		t.Fatal(err)
	}
	if rec := get(t, s, "/pyodide/v0.29.5/pyodide.asm.js"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a removed file: %d", rec.Code)
	}
}

func TestDefaultPyodideDir(t *testing.T) {
	env := map[string]string{"HOME": "/home/x"}
	if got := defaultPyodideDir(func(k string) string { return env[k] }); got != "/home/x/.cache/assistant/pyodide" {
		t.Errorf("HOME: %s", got)
	}
	env["XDG_CACHE_HOME"] = "/cache"
	if got := defaultPyodideDir(func(k string) string { return env[k] }); got != "/cache/assistant/pyodide" {
		t.Errorf("XDG_CACHE_HOME: %s", got)
	}
	if got := defaultPyodideDir(func(string) string { return "" }); got != "" {
		t.Errorf("nothing: %s", got)
	}
}

func TestCSPOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://zarr.nemar.org/":          "https://zarr.nemar.org",
		"https://Zarr.Nemar.org/data/x":    "https://zarr.nemar.org",
		"http://127.0.0.1:8080/allowed/":   "http://127.0.0.1:8080",
		"http://[::1]:8080/":               "http://[::1]:8080",
		"https://h.example;script-src *":   "",
		"https://h.example 'unsafe-eval'/": "",
		"ftp://h.example/":                 "",
		"https://u:p@h.example/":           "",
		"relative/path":                    "",
		"":                                 "",
	} {
		got, ok := cspOrigin(in)
		if got != want || ok != (want != "") {
			t.Errorf("cspOrigin(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// The page and config.json carry the server's caps, from package limits: app.js and the worker
// read every cap they apply from there.
func TestDemoConfigLimits(t *testing.T) {
	s := newDemoServer(t, "", map[string]string{envPyodideDir: fakePyodide(t)})
	page := demoConfigRE.FindStringSubmatch(get(t, s, "/nemar/demo/").Body.String())
	if page == nil {
		t.Fatal("no config in the page")
	}
	for name, body := range map[string][]byte{"page": []byte(page[1]), "config.json": get(t, s, "/nemar/demo/config.json").Body.Bytes()} {
		var cfg struct {
			Limits map[string]any `json:"limits"`
		}
		if err := json.Unmarshal(body, &cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		l := cfg.Limits
		for key, want := range map[string]int{
			"stdout_chars": int(limits.MaxStdoutChars), "stderr_chars": int(limits.MaxStderrChars),
			"summary_chars": int(limits.MaxSummaryChars), "images": limits.MaxImages,
			"image_bytes": int(limits.MaxImageBytes), "image_px": int(limits.MaxImageEdgePx),
			"call_id_chars": int(limits.MaxCallIDChars), "saved_files": limits.MaxSavedFiles,
			"saved_file_bytes": int(limits.MaxSavedFileBytes), "saved_bytes": int(limits.MaxSavedBytes),
			"artifact_name_chars": int(limits.MaxArtifactNameChars), "captured_chars": int(limits.MaxCapturedChars),
			"full_output_runs": limits.FullOutputRuns, "full_output_total_chars": int(limits.FullOutputTotalChars),
			"runs_per_reply": limits.MaxBrowserRunsPerReply, "page_url_chars": int(limits.MaxPageURLChars),
		} {
			if got, ok := l[key].(float64); !ok || int(got) != want {
				t.Errorf("%s: limits.%s = %v, want %d", name, key, l[key], want)
			}
		}
		if got, _ := json.Marshal(l["sealed_import_roots"]); string(got) != `["micropip","js","pyodide","pyodide_js","pyodide_http","ctypes"]` {
			t.Errorf("%s: sealed_import_roots = %s", name, got)
		}
		d, _ := l["defaults"].(map[string]any)
		r := limits.Runtime
		for key, want := range map[string]int{"stdout_chars": r.StdoutChars.Default, "stderr_chars": r.StderrChars.Default,
			"images": r.Images.Default, "image_px": r.ImagePx.Default, "exec_seconds": r.ExecSeconds.Default} {
			if got, ok := d[key].(float64); !ok || int(got) != want {
				t.Errorf("%s: limits.defaults.%s = %v, want %d", name, key, d[key], want)
			}
		}
	}
}

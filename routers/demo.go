package routers

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/osc-assistant/assistant/web"
)

// The settings of the demo page, read through Deps.Getenv when the server is built.
const (
	// envPyodideDir is the folder holding local copies of Pyodide, one subfolder per version
	// (<dir>/0.29.5/pyodide.mjs, ...), as scripts/install_pyodide.sh writes them.
	envPyodideDir = "ASSISTANT_PYODIDE_DIR"
	// envPyodideURL points the page at a CDN instead of the local copy, such as
	// https://cdn.jsdelivr.net/pyodide/v{version}/full/ ({version} is replaced).
	envPyodideURL = "ASSISTANT_PYODIDE_URL"
	// envPyodidePackagesURL is where the page fetches the distribution's own packages that the
	// local copy does not hold (the npm package holds only the core), in the same form.
	envPyodidePackagesURL = "ASSISTANT_PYODIDE_PACKAGES_URL"
)

var (
	errNoPyodideFile    = &apiError{http.StatusNotFound, "No such Pyodide file"}
	errPyodideCopyMoved = &apiError{http.StatusServiceUnavailable, "This server's copy of Pyodide changed after it started; restart the server"}
)

// pyodideVersionRE is a Pyodide version as it appears in a folder name and in the route.
var pyodideVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.]*$`)

// pyodideFileRE is a file name the Pyodide route may serve.
var pyodideFileRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)

// pyodideTypes are the files of a Pyodide distribution the route serves, with their media
// types; anything else in the folder (the package's HTML consoles, README, type definitions)
// is not served. application/wasm matters: instantiateStreaming refuses anything else.
var pyodideTypes = map[string]string{
	".mjs":  "text/javascript; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".wasm": "application/wasm",
	".json": "application/json",
	".map":  "application/json",
	".zip":  "application/zip",
	".whl":  "application/octet-stream",
	".tar":  "application/x-tar",
	".so":   "application/octet-stream",
}

// pyodideRequired are the files without which a folder is not a Pyodide distribution.
var pyodideRequired = []string{"pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "pyodide-lock.json", "python_stdlib.zip"}

// pyodideFile is one file of a local copy, as found when the server was built.
type pyodideFile struct {
	name        string
	size        int64
	modTime     time.Time
	contentType string
	etag        string
}

// pyodideCopy is one version's local copy: the manifest of what may be served from it.
type pyodideCopy struct {
	dir   string
	files map[string]*pyodideFile
	names []string // sorted, for the page
}

// demoSite is the demo page's state, fixed when the server is built.
type demoSite struct {
	log *slog.Logger
	// copies are the local Pyodide copies by version.
	copies map[string]*pyodideCopy
	// cdn and packages are URL templates with {version}, or "".
	cdn, packages string
}

// demoRoutes registers the reference chat page and the Pyodide copy it runs on.
func (s *Server) demoRoutes(g *echo.Group) {
	d := newDemoSite(s.deps.Getenv, s.log)
	for _, cc := range s.cat.Load().byID {
		d.checkCommunity(cc)
	}
	getRoute(g, "/pyodide/:version/:file", d.pyodideFile)
	getRoute(g, "/:c/demo", s.demoRedirect)
	getRoute(g, "/:c/demo/", s.demoPage(d))
	getRoute(g, "/:c/demo/:asset", s.demoAsset(d))
}

func newDemoSite(getenv func(string) string, log *slog.Logger) *demoSite {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	d := &demoSite{log: log, copies: map[string]*pyodideCopy{}}
	d.cdn = urlTemplate(getenv, envPyodideURL, log)
	d.packages = urlTemplate(getenv, envPyodidePackagesURL, log)
	dir := strings.TrimSpace(getenv(envPyodideDir))
	if dir == "" {
		dir = defaultPyodideDir(getenv)
	}
	if dir != "" {
		d.scan(dir)
	}
	return d
}

// defaultPyodideDir is where scripts/install_pyodide.sh installs by default.
func defaultPyodideDir(getenv func(string) string) string {
	if c := strings.TrimSpace(getenv("XDG_CACHE_HOME")); c != "" {
		return filepath.Join(c, "assistant", "pyodide")
	}
	if h := strings.TrimSpace(getenv("HOME")); h != "" {
		return filepath.Join(h, ".cache", "assistant", "pyodide")
	}
	return ""
}

// urlTemplate reads a Pyodide URL setting: an absolute https URL (http only on loopback), with
// {version} where the version goes. A bad value is logged and ignored.
func urlTemplate(getenv func(string) string, name string, log *slog.Logger) string {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return ""
	}
	if _, err := resolveTemplate(v, "0.0.0"); err != nil {
		log.Error("ignoring a Pyodide URL setting", slog.String("setting", name), slog.String("value", v), slog.Any("error", err))
		return ""
	}
	return v
}

// resolveTemplate puts version into a URL template and checks the result.
func resolveTemplate(tmpl, version string) (string, error) {
	s := strings.ReplaceAll(tmpl, "{version}", url.PathEscape(version))
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Host == "" {
		return "", errors.New("want a URL like https://cdn.jsdelivr.net/pyodide/v{version}/full/")
	}
	loopback := u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"
	if u.Scheme != "https" && (u.Scheme != "http" || !loopback) {
		return "", errors.New("must be https:// (http:// only on localhost)")
	}
	if _, ok := cspOrigin(u.String()); !ok {
		return "", errors.New("its host cannot appear in a Content-Security-Policy")
	}
	return u.String(), nil
}

// scan builds the manifest of every local copy under dir. Only regular files directly inside
// a version folder, with a served extension and a plain name, are listed; the route never
// looks at the file system with a name from a request.
func (d *demoSite) scan(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("cannot read the Pyodide folder", slog.String("dir", dir), slog.Any("error", err))
		}
		return
	}
	for _, e := range entries {
		version := e.Name()
		if !pyodideVersionRE.MatchString(version) {
			continue
		}
		vdir := filepath.Join(dir, version)
		if info, err := os.Stat(vdir); err != nil || !info.IsDir() {
			continue
		}
		cp, err := scanCopy(vdir)
		if err != nil {
			d.log.Warn("not serving a Pyodide copy", slog.String("dir", vdir), slog.Any("error", err))
			continue
		}
		d.copies[version] = cp
		d.log.Info("serving a local copy of Pyodide", slog.String("version", version), slog.String("dir", vdir), slog.Int("files", len(cp.names)))
	}
}

func scanCopy(dir string) (*pyodideCopy, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	cp := &pyodideCopy{dir: dir, files: map[string]*pyodideFile{}}
	for _, e := range entries {
		name := e.Name()
		ct, ok := pyodideTypes[path.Ext(name)]
		if !ok || !e.Type().IsRegular() || !pyodideFileRE.MatchString(name) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		cp.files[name] = &pyodideFile{
			name: name, size: info.Size(), modTime: info.ModTime(), contentType: ct,
			etag: `"` + strconv.FormatInt(info.Size(), 36) + "-" + strconv.FormatInt(info.ModTime().UnixNano(), 36) + `"`,
		}
		cp.names = append(cp.names, name)
	}
	for _, n := range pyodideRequired {
		if cp.files[n] == nil {
			return nil, errors.New("not a Pyodide distribution: no " + n)
		}
	}
	sort.Strings(cp.names)
	return cp, nil
}

// checkCommunity logs, once at start, a community whose page could not run Python.
func (d *demoSite) checkCommunity(cc *community) {
	py := pythonOf(cc.cfg)
	if py == nil || !cc.offersTools {
		return
	}
	if d.cdn == "" && d.copies[py.PyodideVersion] == nil {
		d.log.Warn("the demo page of this community cannot run Python: no local copy of its Pyodide version; run scripts/install_pyodide.sh or set "+envPyodideURL,
			slog.String("community", cc.cfg.ID), slog.String("pyodide_version", py.PyodideVersion))
	}
}

// pyodideFile is GET /pyodide/v{version}/{file}: a file of a local copy, found by exact name
// in the manifest built at start.
func (d *demoSite) pyodideFile(c echo.Context) error {
	extendWrite(c)
	version, ok := strings.CutPrefix(c.Param("version"), "v")
	cp := d.copies[version]
	if !ok || cp == nil {
		return errNoPyodideFile
	}
	pf := cp.files[c.Param("file")]
	if pf == nil {
		return errNoPyodideFile
	}
	f, err := os.OpenInRoot(cp.dir, pf.name)
	if err != nil {
		d.log.Error("a listed Pyodide file cannot be opened", slog.String("dir", cp.dir), slog.String("file", pf.name), slog.Any("error", err))
		return errPyodideCopyMoved
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() != pf.size || !info.ModTime().Equal(pf.modTime) {
		d.log.Error("a listed Pyodide file changed after start", slog.String("dir", cp.dir), slog.String("file", pf.name))
		return errPyodideCopyMoved
	}
	h := c.Response().Header()
	h.Set("Content-Type", pf.contentType)
	h.Set("Cache-Control", runtimeCacheControl)
	h.Set("ETag", pf.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	// Public immutable files, as wheels are: a widget's blob: worker on another site may load
	// them.
	h.Set("Access-Control-Allow-Origin", "*")
	h.Del("Access-Control-Allow-Credentials")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, f)
	return nil
}

// demoRedirect is GET /{c}/demo: 308 to the page, relative so that it holds under any mount
// prefix, the query kept.
func (s *Server) demoRedirect(c echo.Context) error {
	if _, ok := s.community(c); !ok {
		return errNotFound
	}
	target := "demo/"
	if q := c.Request().URL.RawQuery; q != "" {
		target += "?" + q
	}
	return c.Redirect(http.StatusPermanentRedirect, target)
}

// demoConfig is what the server tells the page beyond GET /{c}: where Pyodide comes from, and
// the server's caps that the page and its runtime apply (package limits, through web).
type demoConfig struct {
	Community string      `json:"community"`
	Pyodide   demoPyodide `json:"pyodide"`
	Limits    web.Limits  `json:"limits"`
}

type demoPyodide struct {
	Version string `json:"version"`
	// IndexURL is where pyodide.mjs and the core files are: relative to the page for the local
	// copy, absolute for a CDN. Empty when Python cannot run here.
	IndexURL string `json:"index_url"`
	// Files lists the local copy's files; null when IndexURL is a CDN (which holds everything).
	Files []string `json:"files"`
	// PackagesURL is where the distribution's packages that Files lacks come from, or "".
	PackagesURL string `json:"packages_url"`
	// Problem says why Python cannot run on this page, or "".
	Problem string `json:"problem"`
}

// pageSetup works out a community's page config and Content-Security-Policy.
func (s *Server) pageSetup(d *demoSite, cc *community) (demoConfig, string) {
	cfg := demoConfig{Community: cc.cfg.ID, Limits: web.PageLimits()}
	connect := []string{"'self'"}
	script := []string{"'self'", "'wasm-unsafe-eval'"}
	py := pythonOf(cc.cfg)
	if py != nil && cc.offersTools && !s.toolsOff(cc.cfg.ID) {
		v := py.PyodideVersion
		p := demoPyodide{Version: v}
		cp := d.copies[v]
		switch {
		case d.cdn != "":
			p.IndexURL, _ = resolveTemplate(d.cdn, v)
			o, _ := cspOrigin(p.IndexURL)
			script = append(script, o)
			connect = append(connect, o)
		case cp != nil:
			p.IndexURL = "../../pyodide/v" + url.PathEscape(v) + "/"
			p.Files = cp.names
			if d.packages != "" {
				p.PackagesURL, _ = resolveTemplate(d.packages, v)
				o, _ := cspOrigin(p.PackagesURL)
				connect = append(connect, o)
			}
		default:
			p.Problem = "This server has no copy of Pyodide " + v + ", the version this community runs. " +
				"Whoever runs the server can install it with scripts/install_pyodide.sh, or set " + envPyodideURL + " to a CDN."
		}
		cfg.Pyodide = p
		for _, e := range resolvePython(py, s.deps.Settings.Deployment).FetchAllow {
			if o, ok := cspOrigin(e); ok {
				connect = append(connect, o)
			}
		}
	}
	return cfg, demoCSP(script, connect)
}

// demoCSP is the page's policy: its own scripts and WebAssembly, its own worker, and network
// access to the API (same origin), Pyodide's origin and the fetch_allow origins only.
func demoCSP(script, connect []string) string {
	return "default-src 'none'; script-src " + strings.Join(dedupe(script), " ") +
		"; worker-src 'self' blob:; connect-src " + strings.Join(dedupe(connect), " ") +
		"; img-src 'self' data: blob:; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	out := list[:0:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// cspHostRE is a host[:port] that can be written into a policy as is.
var cspHostRE = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$`)

// cspOrigin is the origin of an absolute http(s) URL, as a CSP source expression.
func cspOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if !cspHostRE.MatchString(host) {
		return "", false
	}
	return u.Scheme + "://" + host, true
}

// setPageHeaders sets what every response of the page carries.
func setPageHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// demoPage is GET /{c}/demo/: the page, with the server's part of its config inside.
func (s *Server) demoPage(d *demoSite) echo.HandlerFunc {
	return func(c echo.Context) error {
		cc, ok := s.community(c)
		if !ok {
			return errNotFound
		}
		cfg, csp := s.pageSetup(d, cc)
		var buf bytes.Buffer
		if err := web.Render(&buf, web.Page{Title: resolveWidget(cc.cfg, nil).Title, Config: cfg}); err != nil {
			return err
		}
		setPageHeaders(c.Response().Header(), csp)
		return c.HTMLBlob(http.StatusOK, buf.Bytes())
	}
}

// demoAsset is GET /{c}/demo/{asset}: the page's scripts, style and the runtime's Python,
// embedded in the binary, and config.json, the server's part of the page's config. The
// worker's own policy is the one that binds code run in it, so every asset carries the
// community's policy.
func (s *Server) demoAsset(d *demoSite) echo.HandlerFunc {
	return func(c echo.Context) error {
		cc, ok := s.community(c)
		if !ok {
			return errNotFound
		}
		cfg, csp := s.pageSetup(d, cc)
		h := c.Response().Header()
		if c.Param("asset") == "config.json" {
			// The same config, for a site that runs the runtime in its own page; index_url is
			// relative to this file as it is to the page.
			h.Set("Cache-Control", "no-cache")
			return c.JSON(http.StatusOK, cfg)
		}
		a, ok := web.Lookup(c.Param("asset"))
		if !ok {
			return errNotFound
		}
		setPageHeaders(h, csp)
		h.Set("Content-Type", a.ContentType)
		h.Set("ETag", a.ETag)
		http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(a.Data))
		return nil
	}
}

// DemoCommunities lists the communities whose demo page can run code: those that offer client
// tools right now.
func (s *Server) DemoCommunities() []string {
	var out []string
	cat := s.cat.Load()
	for _, id := range cat.ids {
		if cat.byID[id].offersTools && !s.toolsOff(id) {
			out = append(out, id)
		}
	}
	return out
}

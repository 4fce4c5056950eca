package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io"
	"io/fs"
	"path"
	"sort"

	"github.com/osc-assistant/assistant/web/osa"
)

//go:embed static
var static embed.FS

// Asset is one embedded file of the page, served as is.
type Asset struct {
	Name        string
	ContentType string
	Data        []byte
	// ETag is a strong entity tag of Data.
	ETag string
}

// pageFile is the page's HTML template; it is rendered, not served as an asset.
const pageFile = "index.html"

var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".mjs": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".py":  "text/plain; charset=utf-8",
}

var (
	assets = loadAssets()
	page   = template.Must(template.ParseFS(static, "static/"+pageFile))
)

func loadAssets() map[string]*Asset {
	out := map[string]*Asset{}
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		name := e.Name()
		ct, ok := contentTypes[path.Ext(name)]
		if e.IsDir() || name == pageFile || !ok {
			continue
		}
		data, err := static.ReadFile("static/" + name)
		if err != nil {
			panic(err)
		}
		out[name] = newAsset(name, ct, data)
	}
	// The osa module, which the server's runtime runs too (package osa).
	out[osaFile] = newAsset(osaFile, contentTypes[".py"], osa.Module)
	return out
}

// osaFile is the osa module's asset: worker.js fetches it beside osa_runtime.py.
const osaFile = "osa.py"

func newAsset(name, contentType string, data []byte) *Asset {
	sum := sha256.Sum256(data)
	return &Asset{Name: name, ContentType: contentType, Data: data, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// Lookup returns the asset with exactly this name (such as "app.js"); anything else, the page
// itself included, is not an asset.
func Lookup(name string) (*Asset, bool) {
	a, ok := assets[name]
	return a, ok
}

// Names lists the assets, sorted.
func Names() []string {
	names := make([]string, 0, len(assets))
	for n := range assets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Page is what the page's HTML is rendered from.
type Page struct {
	// Title is the community's widget title.
	Title string
	// Config is marshalled to JSON into a <script type="application/json"> element that
	// app.js reads: the values only the server knows (where Pyodide is served from, and the
	// caps of PageLimits).
	Config any
}

// Render writes the page's HTML.
func Render(w io.Writer, p Page) error {
	return page.Execute(w, p)
}

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Package is one entry of the engine's packages.json: a library the engine holds beyond the
// bare standard library (scripts/build_python_wasi.sh writes the file).
type Package struct {
	// Name is the package's own name (openpyxl, python-dateutil).
	Name string `json:"name"`
	// Import is the module a program imports (openpyxl, dateutil).
	Import  string `json:"import"`
	Version string `json:"version"`
	// Debian is the Debian package (and version) its files came from.
	Debian string `json:"debian"`
}

// BrowserOnly are the packages a reader's browser (Pyodide) has and the server's Python
// cannot: the model is told so before it writes an import that fails on the server.
var BrowserOnly = []string{"numpy", "pandas", "scipy", "matplotlib"}

// readPackages reads packages.json; an engine built before it existed has none.
func readPackages(path string) ([]Package, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m struct {
		Packages []Package `json:"packages"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for i, p := range m.Packages {
		if p.Import == "" || p.Version == "" {
			return nil, fmt.Errorf("%s: package %d has no import name or version", path, i)
		}
	}
	return m.Packages, nil
}

// packageList is "sqlite3 3.46.1, zoneinfo 2026f, …".
func packageList(pkgs []Package) string {
	parts := make([]string, len(pkgs))
	for i, p := range pkgs {
		parts[i] = p.Import + " " + p.Version
	}
	return strings.Join(parts, ", ")
}

// Packages returns what the engine holds beyond the bare standard library.
func (e *Engine) Packages() []Package { return e.packages }

// PackagesNote is one sentence for the model: what the server's Python has beyond the
// standard library, and what needs the reader's browser.
func PackagesNote(pkgs []Package) string {
	have := "the standard library and osa"
	if len(pkgs) > 0 {
		have += ", plus " + packageList(pkgs)
	}
	return "The server's Python has " + have + "; " + strings.Join(BrowserOnly[:len(BrowserOnly)-1], ", ") +
		" and " + BrowserOnly[len(BrowserOnly)-1] + " need the reader's browser, and nothing can be installed."
}

// available is what a run's ModuleNotFoundError names besides the standard library: the
// engine's packages, then the community's overlay wheels.
func (e *Engine) available(req Request) []string {
	out := make([]string, 0, len(e.packages)+len(req.Available))
	for _, p := range e.packages {
		out = append(out, p.Import+" "+p.Version)
	}
	return append(out, req.Available...)
}

// packageImports are the import names of the engine's packages.
func (e *Engine) packageImports() []string {
	out := make([]string, len(e.packages))
	for i, p := range e.packages {
		out[i] = p.Import
	}
	return out
}

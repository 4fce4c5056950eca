package runtimelock

import (
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/osc-assistant/assistant/limits"
)

// pyodideLocks holds the stock lock of every Pyodide release we support, exactly as the
// pyodide npm package ships it (scripts/update_pyodide_lock.sh writes them).
//
//go:embed pyodide/*/pyodide-lock.json
var pyodideLocks embed.FS

// Dist is the stock package list of one Pyodide release.
type Dist struct {
	Version  string // the Pyodide release, such as "0.29.5"
	Python   string // the CPython version it runs, from the lock's info
	packages map[string]DistPackage
}

// DistPackage is one entry of a Pyodide distribution's lock.
type DistPackage struct {
	Name        string
	Version     string
	FileName    string
	PackageType string // "package", "cpython_module" or "shared_library"
	Imports     []string
	Depends     []string
}

// SupportedVersions lists the Pyodide releases whose lock is embedded, oldest first.
func SupportedVersions() []string {
	entries, err := fs.ReadDir(pyodideLocks, "pyodide")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.SortFunc(out, compareVersions)
	return out
}

// CheckVersion reports a pyodide_version this server has no distribution lock for, with the
// path relative to runtime.python.
func CheckVersion(version string) []Problem {
	if slices.Contains(SupportedVersions(), version) {
		return nil
	}
	return []Problem{{
		Path: "pyodide_version",
		Msg: fmt.Sprintf("%s is not a Pyodide release this server knows the packages of (it knows %s); add one with scripts/update_pyodide_lock.sh",
			strconv.Quote(version), strings.Join(SupportedVersions(), ", ")),
	}}
}

// distributions holds each embedded lock once parsed. A *Dist is never modified after
// parsing, so sharing it is safe; parsing one costs about 3 ms, which a load of hundreds of
// communities would otherwise pay for each of them.
var distributions sync.Map // version → *Dist

// Distribution returns the stock lock of a supported Pyodide release. The returned *Dist is
// shared and read-only.
func Distribution(version string) (*Dist, bool) {
	if d, ok := distributions.Load(version); ok {
		return d.(*Dist), true
	}
	if !slices.Contains(SupportedVersions(), version) {
		return nil, false
	}
	d := parseDistribution(version)
	actual, _ := distributions.LoadOrStore(version, d)
	return actual.(*Dist), true
}

func parseDistribution(version string) *Dist {
	data, err := pyodideLocks.ReadFile(path.Join("pyodide", version, "pyodide-lock.json"))
	if err != nil {
		panic(err) // listed by SupportedVersions, so embedded
	}
	var raw struct {
		Info struct {
			Python string `json:"python"`
		} `json:"info"`
		Packages map[string]struct {
			Name        string   `json:"name"`
			Version     string   `json:"version"`
			FileName    string   `json:"file_name"`
			PackageType string   `json:"package_type"`
			Imports     []string `json:"imports"`
			Depends     []string `json:"depends"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		panic(fmt.Sprintf("embedded Pyodide %s lock: %v", version, err)) // a test loads every one
	}
	d := &Dist{Version: version, Python: raw.Info.Python, packages: make(map[string]DistPackage, len(raw.Packages))}
	for key, p := range raw.Packages {
		d.packages[key] = DistPackage{
			Name: p.Name, Version: p.Version, FileName: p.FileName, PackageType: p.PackageType,
			Imports: p.Imports, Depends: p.Depends,
		}
	}
	return d
}

// Package returns the distribution's package of that name, compared in canonical form.
func (d *Dist) Package(name string) (DistPackage, bool) {
	p, ok := d.packages[CanonicalName(name)]
	if ok {
		p.Imports = slices.Clone(p.Imports)
		p.Depends = slices.Clone(p.Depends)
	}
	return p, ok
}

// moduleRE is config.md §4.2's import_before_seal syntax; entries that fail it, or that name a
// sealed root, are config's to report, so Check skips them rather than report them twice.
var moduleRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// sealedRoots are config.md §4.1's SEALED_IMPORT_ROOTS (from limits), only to skip entries
// config already refuses.
var sealedRoots = limits.SealedImportRoots

// Check resolves a community's runtime.python names against this distribution and the
// community's overlay (nil when it names no lockfile). Paths are relative to runtime.python.
// It reports:
//   - a preload name that is neither a distribution nor an overlay package (compared in
//     canonical form), with a suggestion when one is close;
//   - an overlay entry whose depends names such a package;
//   - an overlay entry that would replace a distribution package (the browser only adds);
//   - an import_before_seal entry whose top-level module no preloaded package provides,
//     judged by the lock entries' imports lists (so matplotlib provides pylab), with the
//     spec's rule that preload "eegprep-lean" provides "eegprep_lean" also counting.
func (d *Dist) Check(ov *Overlay, preload, importBeforeSeal []string) []Problem {
	var probs []Problem
	var extra []Package
	if ov != nil {
		extra = ov.Packages
	}
	overlayPkg := make(map[string]Package, len(extra))
	for _, p := range extra {
		overlayPkg[p.Key] = p
	}
	for _, p := range extra {
		if _, ok := d.packages[p.Key]; ok {
			probs = append(probs, Problem{Path: "lockfile", Msg: fmt.Sprintf(
				"lock entry %s would replace the Pyodide %s distribution's own; an overlay may only add packages, so give it a name the distribution does not ship",
				pyRepr(p.Key), d.Version)})
		}
	}
	for _, p := range extra {
		for i, dep := range p.Depends {
			if !d.resolves(dep, overlayPkg) {
				probs = append(probs, Problem{Path: "lockfile", Msg: fmt.Sprintf("packages[%s].depends[%d]: %s",
					strconv.Quote(p.Key), i, d.unknown(dep, ov != nil, overlayPkg))})
			}
		}
	}

	provided := map[string]bool{}
	for i, name := range preload {
		key := CanonicalName(name)
		provided[strings.ReplaceAll(key, "-", "_")] = true
		if dp, ok := d.packages[key]; ok {
			for _, m := range dp.Imports {
				provided[m] = true
			}
		} else if op, ok := overlayPkg[key]; ok {
			for _, m := range op.Imports {
				provided[m] = true
			}
		} else {
			probs = append(probs, Problem{Path: fmt.Sprintf("preload[%d]", i), Msg: d.unknown(name, ov != nil, overlayPkg)})
		}
	}
	seen := map[string]bool{}
	for i, entry := range importBeforeSeal {
		if seen[entry] || !moduleRE.MatchString(entry) {
			continue
		}
		seen[entry] = true
		root, _, _ := strings.Cut(entry, ".")
		if slices.Contains(sealedRoots, root) || provided[root] {
			continue
		}
		probs = append(probs, Problem{Path: fmt.Sprintf("import_before_seal[%d]", i), Msg: fmt.Sprintf(
			"import_before_seal entry %s: its top-level package %s is not a module the preloaded packages provide (%s); only a package preload names may be imported before the seal",
			pyRepr(entry), pyRepr(root), pyList(slices.Sorted(maps.Keys(provided))))})
	}
	return probs
}

func (d *Dist) resolves(name string, overlayPkg map[string]Package) bool {
	key := CanonicalName(name)
	_, inDist := d.packages[key]
	_, inOverlay := overlayPkg[key]
	return inDist || inOverlay
}

// unknown says that name is not a package, and suggests the package providing a module of
// that name, or else the nearest package name by edit distance.
func (d *Dist) unknown(name string, haveOverlay bool, overlayPkg map[string]Package) string {
	msg := fmt.Sprintf("%s is not a package of Pyodide %s", strconv.Quote(name), d.Version)
	if haveOverlay {
		msg += " or of the lock overlay"
	}
	keys := slices.Sorted(maps.Keys(d.packages))
	keys = append(keys, slices.Sorted(maps.Keys(overlayPkg))...)
	for _, k := range keys {
		imports := d.packages[k].Imports
		if p, ok := overlayPkg[k]; ok {
			imports = p.Imports
		}
		if slices.Contains(imports, name) {
			return msg + fmt.Sprintf("; the module %s comes from the package %s, which is the name to preload", strconv.Quote(name), strconv.Quote(k))
		}
	}
	want := CanonicalName(name)
	best, bestDist := "", max(1, min(3, len(want)/3))+1
	for _, k := range keys {
		if dist := editDistance(want, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		msg += fmt.Sprintf("; did you mean %s?", strconv.Quote(best))
	}
	return msg
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// compareVersions orders dotted release numbers numerically ("0.29.5" < "0.100.0"), falling
// back to string order for parts that are not numbers.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if na != nb {
				return cmp.Compare(na, nb)
			}
			continue
		}
		if c := strings.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

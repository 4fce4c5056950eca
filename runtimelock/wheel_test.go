package runtimelock

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestShippedWheelIsReproducible rebuilds NEMAR's own wheel from its sources in memory and
// expects exactly the bytes the committed overlay records and the committed file holds.
func TestShippedWheelIsReproducible(t *testing.T) {
	const src = "../communities/nemar/runtime/src"
	spec, err := ReadWheelSpec(src)
	if err != nil {
		t.Fatal(err)
	}
	want := WheelSpec{
		Name: "nemar-tools", Version: "0.1.0", RequiresPython: ">=3.12",
		Summary: "Small helpers for exploring NEMAR datasets in the assistant's browser Python runtime",
	}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("pyproject.toml (-want +got):\n%s", diff)
	}
	name, data, err := BuildWheel(src, spec)
	if err != nil {
		t.Fatal(err)
	}
	if name != "nemar_tools-0.1.0-py3-none-any.whl" {
		t.Errorf("file name %q", name)
	}
	lock, err := os.ReadFile("../communities/nemar/runtime/lock.json")
	if err != nil {
		t.Fatal(err)
	}
	ov, err := Decode(lock)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ov.Package("nemar-tools")
	if !ok || p.FileName != name {
		t.Fatalf("the overlay has no entry for %s: %+v", name, ov)
	}
	if got := sha(data); got != p.SHA256 {
		t.Errorf("rebuilt wheel has sha256 %s, the overlay records %s: sources changed without a new version? (scripts/build_wheel.sh)", got, p.SHA256)
	}
	committed, err := os.ReadFile(filepath.Join("../communities/nemar/runtime/wheels", name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, data) {
		t.Error("the committed wheel differs from a rebuild")
	}
}

// srcTree writes a source folder; files maps slash paths to contents, and paths are created
// in the given order so a second tree can be written in another order.
func srcTree(t *testing.T, files map[string]string, order []string, mtime time.Time) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range order {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildWheel(t *testing.T) {
	files := map[string]string{
		"pyproject.toml":            "[project]\nname = \"Demo.Pkg\"\nversion = \"1.2.3\"\ndescription = \"A demo\"\n",
		"README.md":                 "not packed\n",
		"demo_pkg/__init__.py":      "from .core import f\n",
		"demo_pkg/core.py":          "def f():\n    return 1\n",
		"demo_pkg/data/table.csv":   "a,b\n1,2\n",
		"demo_pkg/__pycache__/x.py": "skipped\n",
		"demo_pkg/stale.pyc":        "skipped",
		"demo_pkg/.hidden":          "skipped",
		".git/config":               "skipped",
		"single.py":                 "X = 1\n",
	}
	var order []string
	for p := range files {
		order = append(order, p)
	}
	reversed := make([]string, len(order))
	for i, p := range order {
		reversed[len(order)-1-i] = p
	}
	dirA := srcTree(t, files, order, time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	dirB := srcTree(t, files, reversed, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))

	spec, err := ReadWheelSpec(dirA)
	if err != nil {
		t.Fatal(err)
	}
	nameA, a, err := BuildWheel(dirA, spec)
	if err != nil {
		t.Fatal(err)
	}
	nameB, b, err := BuildWheel(dirB, spec)
	if err != nil {
		t.Fatal(err)
	}
	if nameA != "demo_pkg-1.2.3-py3-none-any.whl" || nameB != nameA {
		t.Errorf("file names %q, %q", nameA, nameB)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same sources differ")
	}

	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, f := range zr.File {
		if f.Method != zip.Store || !f.Modified.Equal(wheelEpoch) || f.Mode() != 0o644 {
			t.Errorf("%s: method %d, modified %v, mode %v", f.Name, f.Method, f.Modified, f.Mode())
		}
		got.WriteString("--- " + f.Name + "\n")
		if strings.Contains(f.Name, ".dist-info/") {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(rc)
			rc.Close()
			got.Write(body)
		}
	}
	golden(t, "wheel/demo_pkg.golden", []byte(got.String()))

	info, msg := readWheel(nameA, a)
	if msg != "" {
		t.Fatal(msg)
	}
	wantInfo := wheelInfo{name: "Demo.Pkg", version: "1.2.3", imports: []string{"demo_pkg", "single"}}
	if diff := cmp.Diff(wantInfo, info, cmp.AllowUnexported(wheelInfo{})); diff != "" {
		t.Errorf("readWheel (-want +got):\n%s", diff)
	}
}

func TestBuildWheelRefuses(t *testing.T) {
	good := WheelSpec{Name: "x", Version: "1.0"}
	for _, tc := range []struct {
		name  string
		spec  WheelSpec
		files map[string]string
		link  bool
		want  string
	}{
		{name: "bad name", spec: WheelSpec{Name: "x y", Version: "1.0"}, files: map[string]string{"x.py": ""}, want: `wheel name "x y" is not a valid distribution name`},
		{name: "path name", spec: WheelSpec{Name: "../x", Version: "1.0"}, files: map[string]string{"x.py": ""}, want: `wheel name "../x" is not a valid distribution name`},
		{name: "bad version", spec: WheelSpec{Name: "x", Version: "1.0-1/2"}, files: map[string]string{"x.py": ""}, want: `wheel version "1.0-1/2" is not a plain version such as 0.1.0`},
		{name: "two-line summary", spec: WheelSpec{Name: "x", Version: "1.0", Summary: "a\nb"}, files: map[string]string{"x.py": ""}, want: "wheel summary and requires-python must be one line each"},
		{name: "nothing to pack", spec: good, files: map[string]string{"pyproject.toml": "", "README.md": ""}, want: "$DIR has no Python package or module to pack"},
		{name: "symlink", spec: good, files: map[string]string{"x/__init__.py": ""}, link: true, want: "$DIR/x/link.py is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var order []string
			for p := range tc.files {
				order = append(order, p)
			}
			dir := srcTree(t, tc.files, order, wheelEpoch)
			if tc.link {
				if err := os.Symlink("/etc/passwd", filepath.Join(dir, "x", "link.py")); err != nil {
					t.Skip(err)
				}
			}
			_, _, err := BuildWheel(dir, tc.spec)
			if err == nil {
				t.Fatal("BuildWheel succeeded")
			}
			if got := strings.ReplaceAll(err.Error(), dir, "$DIR"); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}

package workspace

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testRuns() []Run {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return []Run{
		{Ordinal: 2, CallID: "toolu_b", Status: "error", Description: "Plot it", Code: "import numpy\n", Stderr: "ModuleNotFoundError: numpy\n", Summary: "The code raised.", Time: t0.Add(time.Minute)},
		{Ordinal: 1, CallID: "toolu_a", Status: "ok", Description: "Sum the scores", Code: "print(1 + 2)\nprint('done')\n", Stdout: "3\ndone\n", Summary: "Ran without an error.",
			Files: []string{"out/summary.csv", "a.txt"}, Time: t0},
	}
}

// mapSource serves files from maps: runs' by call id and path, attached files by name.
type mapSource struct {
	runs map[string]map[string][]byte
	data map[string][]byte
}

func (m mapSource) RunFile(callID, path string) ([]byte, error) {
	if b, ok := m.runs[callID][path]; ok {
		return b, nil
	}
	return nil, ErrGone
}

func (m mapSource) DataFile(name string) ([]byte, error) {
	if b, ok := m.data[name]; ok {
		return b, nil
	}
	return nil, ErrGone
}

func testSource() mapSource {
	return mapSource{runs: map[string]map[string][]byte{"toolu_a": {"out/summary.csv": []byte("n,3\n"), "a.txt": []byte("x")}},
		data: map[string][]byte{"scores.csv": []byte("subject,score\n")}}
}

func TestManifest(t *testing.T) {
	got := Manifest(testRuns())
	want := []Entry{
		{Ordinal: 1, CallID: "toolu_a", Status: "ok", Description: "Sum the scores", Files: []string{"a.txt", "out/summary.csv"}, Timestamp: "2026-12-01T10:00:00Z"},
		{Ordinal: 2, CallID: "toolu_b", Status: "error", Description: "Plot it", Files: []string{}, Timestamp: "2026-12-01T10:01:00Z"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Manifest (-want +got):\n%s", d)
	}
	if b, _ := json.Marshal(Manifest(nil)); string(b) != "[]" {
		t.Errorf("an empty manifest is %s", b)
	}
}

// TestZip: export.zip holds the layout, is the same bytes for the same workspace, and its
// notebook is valid nbformat 4.5 by Debian's python3-nbformat.
func TestZip(t *testing.T) {
	var a, b bytes.Buffer
	when := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	data := []string{"scores.csv"}
	if err := WriteZip(&a, testRuns(), data, when, testSource()); err != nil {
		t.Fatal(err)
	}
	if err := WriteZip(&b, testRuns(), data, when, testSource()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two exports of one workspace differ")
	}
	z, err := zip.NewReader(bytes.NewReader(a.Bytes()), int64(a.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	files := map[string]string{}
	for _, f := range z.File {
		names = append(names, f.Name)
		r, _ := f.Open()
		body, _ := io.ReadAll(r)
		files[f.Name] = string(body)
	}
	want := []string{"scripts/run-001.py", "results/run-001/stdout.txt", "results/run-001/stderr.txt", "results/run-001/summary.txt",
		"artifacts/run-001/a.txt", "artifacts/run-001/out/summary.csv", "scripts/run-002.py", "results/run-002/stdout.txt",
		"results/run-002/stderr.txt", "results/run-002/summary.txt", "data/scores.csv", "manifest.json", "notebook.ipynb"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %q\nwant %q", names, want)
	}
	if files["results/run-001/stdout.txt"] != "3\ndone\n" || files["artifacts/run-001/out/summary.csv"] != "n,3\n" || files["data/scores.csv"] != "subject,score\n" {
		t.Errorf("contents %v", files)
	}

	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import nbformat").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Debian's python3-nbformat is needed under CI=true (scripts/native_packages.sh)")
		}
		t.Skip("python3-nbformat is not installed")
	}
	nb := filepath.Join(t.TempDir(), "notebook.ipynb")
	if err := os.WriteFile(nb, []byte(files["notebook.ipynb"]), 0o644); err != nil {
		t.Fatal(err)
	}
	check := `import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)
nbformat.validate(nb)
assert (nb.nbformat, nb.nbformat_minor) == (4, 5), (nb.nbformat, nb.nbformat_minor)
print(len(nb.cells), [c.cell_type for c in nb.cells], nb.cells[1].outputs[0].text, nb.cells[3].outputs[0].name)
`
	out, err := exec.Command(py, "-c", check, nb).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat refused the notebook: %v\n%s", err, out)
	}
	if got := string(out); got != "4 ['markdown', 'code', 'markdown', 'code'] 3\ndone\n stderr\n" {
		t.Errorf("nbformat read %q", got)
	}
}

// TestManifestMissing: files a run saved that are gone are listed under missing, sorted, and the
// key is left out when none are.
func TestManifestMissing(t *testing.T) {
	runs := testRuns()
	runs[0].Missing = []string{"z.png", "a.png"}
	m := Manifest(runs)
	if !slices.Equal(m[1].Missing, []string{"a.png", "z.png"}) || m[0].Missing != nil {
		t.Errorf("missing = %q, %q", m[0].Missing, m[1].Missing)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte(`"missing"`)); n != 1 {
		t.Errorf("the manifest names missing %d times, want once: %s", n, b)
	}
}

// TestSafePath: no zip entry can climb out of its folder, whatever a run named its file.
func TestSafePath(t *testing.T) {
	for p, want := range map[string]bool{
		"a.txt": true, "out/summary.csv": true, "a/b/c.png": true, ".hidden": true, "a..b": true,
		"": false, "/etc/passwd": false, "../x": false, "a/../../x": false, "a/./b": false, "./a": false, "a/": false,
		"a//b": false, `a\..\x`: false, "C:x": false, "a\x00b": false, "..": false, ".": false,
	} {
		if got := SafePath(p); got != want {
			t.Errorf("SafePath(%q) = %v, want %v", p, got, want)
		}
	}
	var b bytes.Buffer
	runs := []Run{{Ordinal: 1, CallID: "c", Files: []string{"../escape.txt", "ok.txt"}, Time: time.Unix(0, 0)}}
	src := mapSource{runs: map[string]map[string][]byte{"c": {"../escape.txt": []byte("x"), "ok.txt": []byte("y")}}, data: map[string][]byte{"../d.csv": nil}}
	if err := WriteZip(&b, runs, []string{"../d.csv"}, time.Unix(0, 0), src); err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range z.File {
		if strings.Contains(f.Name, "..") {
			t.Errorf("the zip holds %q", f.Name)
		}
	}
	if !slices.ContainsFunc(z.File, func(f *zip.File) bool { return f.Name == "artifacts/run-001/ok.txt" }) {
		t.Error("the safe file is missing")
	}
}

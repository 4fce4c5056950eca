package workspace

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestZipMethods: members that are compressed already (by their format, or by their bytes) are
// stored as they are, text is deflated, and every member reads back as it went in (issue 22,
// item 13).
func TestZipMethods(t *testing.T) {
	noise := make([]byte, 200<<10)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	table := []byte(strings.Repeat("subject,score,group\ns01,3,A\n", 5000))
	data := map[string][]byte{
		"book.xlsx":     xlsxOf(t, table),
		"t.parquet":     append(append([]byte("PAR1"), noise[:4096]...), "PAR1"...),
		"scores.csv":    table,
		"notes.txt":     []byte("short"),
		"random.json":   noise, // not JSON, but Method judges bytes, not types
		"TABLE.CSV":     table,
		"empty.tsv":     nil,
		"sampled.json":  append(bytes.Repeat([]byte(`{"a": 1}, `), 10000), noise...),
		"noisy-end.txt": append(noise[:100<<10:100<<10], table...),
	}
	runFiles := map[string][]byte{"plot.png": table, "out.bin": noise, "summary.csv": table}
	want := map[string]uint16{
		"data/book.xlsx": zip.Store, "data/t.parquet": zip.Store, "data/scores.csv": zip.Deflate, "data/notes.txt": zip.Deflate,
		"data/random.json": zip.Store, "data/TABLE.CSV": zip.Deflate, "data/empty.tsv": zip.Deflate,
		"data/sampled.json": zip.Deflate, "data/noisy-end.txt": zip.Store,
		"artifacts/run-001/plot.png": zip.Store, "artifacts/run-001/out.bin": zip.Store, "artifacts/run-001/summary.csv": zip.Deflate,
		"scripts/run-001.py": zip.Deflate, "manifest.json": zip.Deflate, "notebook.ipynb": zip.Deflate,
	}
	runs := []Run{{Ordinal: 1, CallID: "c1", Code: "print(1)\n", Files: []string{"plot.png", "out.bin", "summary.csv"}, Time: time.Unix(1e9, 0)}}
	src := mapSource{runs: map[string]map[string][]byte{"c1": runFiles}, data: data}
	var out bytes.Buffer
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	if err := WriteZip(&out, runs, names, time.Unix(1e9, 0), src); err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range z.File {
		if m, ok := want[f.Name]; ok && f.Method != m {
			t.Errorf("%s: method %d, want %d", f.Name, f.Method, m)
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		var in []byte
		if name, ok := strings.CutPrefix(f.Name, "data/"); ok {
			in = data[name]
		} else if p, ok := strings.CutPrefix(f.Name, "artifacts/run-001/"); ok {
			in = runFiles[p]
		} else {
			continue
		}
		if !bytes.Equal(got, in) {
			t.Errorf("%s reads back as %d bytes, went in as %d", f.Name, len(got), len(in))
		}
	}
	// Stored as they are: 3.5 noises, and the table twice (in plot.png and after noisy-end.txt's
	// noise); the other four tables deflate to a few KB each.
	if limit := len(noise)*4 + 2*len(table) + 64<<10; out.Len() > limit {
		t.Errorf("the zip is %d bytes, over %d: the text was not deflated", out.Len(), limit)
	}
}

// TestZipFileGoneMeanwhile: a run's file that went between the listing and its entry is listed
// as missing, and an attached file that went is left out.
func TestZipFileGoneMeanwhile(t *testing.T) {
	runs := []Run{{Ordinal: 1, CallID: "c1", Files: []string{"kept.csv", "gone.csv"}, Missing: []string{"old.png"}, Time: time.Unix(1e9, 0)}}
	src := mapSource{runs: map[string]map[string][]byte{"c1": {"kept.csv": []byte("a\n")}}, data: map[string][]byte{"here.csv": []byte("b\n")}}
	var out bytes.Buffer
	if err := WriteZip(&out, runs, []string{"here.csv", "deleted.csv"}, time.Unix(1e9, 0), src); err != nil {
		t.Fatal(err)
	}
	z, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var manifest []Entry
	for _, f := range z.File {
		names = append(names, f.Name)
		if f.Name == "manifest.json" {
			r, _ := f.Open()
			if err := json.NewDecoder(r).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	}
	if !slices.Contains(names, "artifacts/run-001/kept.csv") || slices.Contains(names, "artifacts/run-001/gone.csv") ||
		!slices.Contains(names, "data/here.csv") || slices.Contains(names, "data/deleted.csv") {
		t.Errorf("entries %q", names)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].Files, []string{"kept.csv"}) || !slices.Equal(manifest[0].Missing, []string{"gone.csv", "old.png"}) {
		t.Errorf("manifest %+v", manifest)
	}
}

// xlsxOf is a zip holding [Content_Types].xml and b, deflated, as a workbook is.
func xlsxOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	z := zip.NewWriter(&out)
	for _, name := range []string{"[Content_Types].xml", "xl/worksheets/sheet1.xml"} {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

package tests

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/store/storetest"
)

// nativePython is Debian's python3, with the packages the engine takes from Debian; it skips
// the test when one is missing, except under CI, where it fails.
func nativePython(t *testing.T, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Debian's python3 with %s is needed under CI=true (scripts/native_packages.sh): %v\n%s", strings.Join(modules, ", "), err, out)
		}
		t.Skipf("Debian's python3 with %s is not installed (scripts/native_packages.sh)", strings.Join(modules, ", "))
	}
	return py
}

// runPy runs a native Python program with args and returns its stdout.
func runPy(t *testing.T, py, program string, args ...string) string {
	t.Helper()
	out, err := exec.Command(py, append([]string{"-c", program}, args...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("native python: %v\n%s", err, stderr)
	}
	return string(out)
}

// upload posts files (name → bytes) to a session as multipart parts named "file".
func upload(t *testing.T, url string, files map[string][]byte) (int, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		part, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		part.Write(files[name])
	}
	w.Close()
	resp, err := http.Post(url, w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// download GETs url and fails the test unless it answers 200.
func download(t *testing.T, url string) []byte {
	t.Helper()
	code, body := get(t, url)
	b := []byte(body)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	return b
}

// filesProgram reads the reader's csv and xlsx, joins them in sqlite3, sums the scores of each
// group and saves the sums as summary.xlsx.
const filesProgram = `import csv, io, sqlite3
import openpyxl, osa
with open("/data/scores.csv", newline="") as f:
    scores = [(r["subject"], float(r["score"])) for r in csv.DictReader(f)]
subjects = list(openpyxl.load_workbook("/data/subjects.xlsx").active.iter_rows(min_row=2, values_only=True))
db = sqlite3.connect(":memory:")
db.execute("create table scores (subject text, score real)")
db.execute("create table subjects (subject text, grp text)")
db.executemany("insert into scores values (?, ?)", scores)
db.executemany("insert into subjects values (?, ?)", subjects)
rows = db.execute("select grp, count(*), sum(score), avg(score) from scores join subjects using (subject) group by grp order by grp").fetchall()
out = openpyxl.Workbook()
ws = out.active
ws.title = "summary"
ws.append(["group", "n", "total", "mean"])
for r in rows:
    ws.append(list(r))
buf = io.BytesIO()
out.save(buf)
osa.save_artifact("summary.xlsx", buf.getvalue())
print(rows)`

// TestFilesEndToEnd: issue 14's "Done when", through the real binary (its worker pool and the
// Python engine) on the real redis-server. A CSV and an XLSX made by Debian's openpyxl are
// uploaded; the scripted model runs a program on the server that reads both at /data, joins
// them in sqlite3, aggregates, and saves summary.xlsx; native openpyxl reads the numbers back
// from the artifact route; export.zip has the workspace layout, the uploads and a notebook that
// Debian's nbformat validates and that holds the run's code. A second replica on the same
// Redis lists the same files and serves the same export.
func TestFilesEndToEnd(t *testing.T) {
	py := nativePython(t, "openpyxl", "nbformat")
	redis := storetest.RedisURL(t)
	eng := engineDir(t)
	prefix := "files-e2e-" + rand.Text() + ":"
	off := "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"
	a := serve(t, nil, "--communities", "testdata/uploads", "--engine-dir", eng, "--sandbox-workers", "1",
		"--redis-url", redis, "--redis-prefix", prefix, "--rate-limits", off)
	b := serve(t, nil, "--communities", "testdata/uploads", "--engine-dir", eng, "--sandbox-workers", "0",
		"--redis-url", redis, "--redis-prefix", prefix, "--rate-limits", off)

	dir := t.TempDir()
	csvData := []byte("subject,score\ns01,3\ns02,5\ns03,4\ns04,10\ns05,1\n")
	xlsx := filepath.Join(dir, "subjects.xlsx")
	runPy(t, py, `import sys, openpyxl
wb = openpyxl.Workbook()
ws = wb.active
for row in [("subject", "group"), ("s01", "A"), ("s02", "B"), ("s03", "A"), ("s04", "B"), ("s06", "A")]:
    ws.append(row)
wb.save(sys.argv[1])`, xlsx)
	xlsxData, err := os.ReadFile(xlsx)
	if err != nil {
		t.Fatal(err)
	}

	sid := "files-e2e-" + hex.EncodeToString([]byte(rand.Text()))[:16]
	session := "/tables/sessions/" + sid
	code, body := upload(t, a.url+session+"/files", map[string][]byte{"scores.csv": csvData, "subjects.xlsx": xlsxData})
	if code != 200 {
		t.Fatalf("upload: %d %s", code, body)
	}
	var uploaded struct {
		Files []struct {
			Name, SHA256, Type string
			Bytes              int64
		}
	}
	if err := json.Unmarshal([]byte(body), &uploaded); err != nil || len(uploaded.Files) != 2 ||
		uploaded.Files[0].Name != "scores.csv" || uploaded.Files[0].Type != "csv" || uploaded.Files[0].Bytes != int64(len(csvData)) ||
		uploaded.Files[1].Name != "subjects.xlsx" || uploaded.Files[1].Type != "xlsx" || uploaded.Files[1].Bytes != int64(len(xlsxData)) {
		t.Fatalf("upload answer %s (%v)", body, err)
	}
	// The second replica sees the same files through Redis.
	if code, list := get(t, b.url+session+"/files"); code != 200 || !strings.Contains(list, uploaded.Files[0].SHA256) || !strings.Contains(list, uploaded.Files[1].SHA256) {
		t.Fatalf("the second replica's list: %d %s", code, list)
	}

	msg, _ := json.Marshal(map[string]string{"message": "Summarise my tables:\n```python\n" + filesProgram + "\n```", "session_id": sid})
	resp, err := http.Post(a.url+"/tables/chat", "application/json", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	end := toolEnd(t, string(stream))
	if !strings.Contains(end.Output, "status: ok") || !strings.Contains(end.Output, "[('A', 2, 7.0, 3.5), ('B', 2, 15.0, 7.5)]") ||
		!slices.Equal(end.Artifacts, []string{"summary.xlsx"}) {
		t.Fatalf("the run's tool_end %+v\nstream:\n%s\nserver:\n%s", end, stream, a.stderr)
	}

	// The artifact, read by Debian's own openpyxl.
	summary := filepath.Join(dir, "summary.xlsx")
	if err := os.WriteFile(summary, download(t, a.url+session+"/artifacts/"+end.CallID+"/summary.xlsx"), 0o644); err != nil {
		t.Fatal(err)
	}
	const readBack = `import sys, openpyxl
wb = openpyxl.load_workbook(sys.argv[1])
print(wb.sheetnames, [list(r) for r in wb["summary"].iter_rows(values_only=True)])`
	if got, want := runPy(t, py, readBack, summary), "['summary'] [['group', 'n', 'total', 'mean'], ['A', 2, 7, 3.5], ['B', 2, 15, 7.5]]\n"; got != want {
		t.Errorf("summary.xlsx holds %q, want %q", got, want)
	}

	// The manifest, from either replica.
	var manifest []struct {
		Ordinal     int      `json:"ordinal"`
		CallID      string   `json:"call_id"`
		Status      string   `json:"status"`
		Description string   `json:"description"`
		Files       []string `json:"files"`
		Timestamp   string   `json:"timestamp"`
	}
	if err := json.Unmarshal(download(t, b.url+session+"/artifacts"), &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest %+v (%v)", manifest, err)
	}
	if m := manifest[0]; m.Ordinal != 1 || m.CallID != end.CallID || m.Status != "ok" || m.Description == "" ||
		!slices.Equal(m.Files, []string{"summary.xlsx"}) || m.Timestamp == "" {
		t.Errorf("manifest entry %+v", m)
	}

	// export.zip: the layout, the uploads, the run and a valid notebook; both replicas give the
	// same bytes.
	zipped := download(t, a.url+session+"/export.zip")
	if other := download(t, b.url+session+"/export.zip"); !bytes.Equal(zipped, other) {
		t.Error("the two replicas' exports differ")
	}
	z, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatalf("export.zip does not open: %v", err)
	}
	entries := map[string][]byte{}
	var names []string
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		entries[f.Name], _ = io.ReadAll(r)
		r.Close()
		names = append(names, f.Name)
	}
	want := []string{"scripts/run-001.py", "results/run-001/stdout.txt", "results/run-001/stderr.txt", "results/run-001/summary.txt",
		"artifacts/run-001/summary.xlsx", "data/scores.csv", "data/subjects.xlsx", "manifest.json", "notebook.ipynb"}
	if !slices.Equal(names, want) {
		t.Errorf("export entries %q\nwant %q", names, want)
	}
	if string(entries["scripts/run-001.py"]) != filesProgram+"\n" || !strings.Contains(string(entries["results/run-001/stdout.txt"]), "('B', 2, 15.0, 7.5)") ||
		!bytes.Equal(entries["data/scores.csv"], csvData) || !bytes.Equal(entries["data/subjects.xlsx"], xlsxData) ||
		!strings.Contains(string(entries["results/run-001/summary.txt"]), "Saved 1 file: summary.xlsx.") ||
		!strings.Contains(string(entries["manifest.json"]), end.CallID) {
		t.Errorf("export contents: script %q\nstdout %q\nsummary %q", entries["scripts/run-001.py"], entries["results/run-001/stdout.txt"], entries["results/run-001/summary.txt"])
	}
	if err := os.WriteFile(summary, entries["artifacts/run-001/summary.xlsx"], 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runPy(t, py, readBack, summary); !strings.Contains(got, "['B', 2, 15, 7.5]") {
		t.Errorf("the exported summary.xlsx holds %q", got)
	}
	nb, script := filepath.Join(dir, "notebook.ipynb"), filepath.Join(dir, "program.py")
	if err := os.WriteFile(nb, entries["notebook.ipynb"], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(filesProgram+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const checkNotebook = `import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)
nbformat.validate(nb)
assert (nb.nbformat, nb.nbformat_minor) == (4, 5), (nb.nbformat, nb.nbformat_minor)
code = [c for c in nb.cells if c.cell_type == "code"]
assert len(code) == 1 and code[0].source == open(sys.argv[2]).read(), code
assert all(c.get("id") for c in nb.cells)
print([c.cell_type for c in nb.cells], code[0].outputs[0].name, "('A', 2, 7.0, 3.5)" in code[0].outputs[0].text)`
	if got := runPy(t, py, checkNotebook, nb, script); got != "['markdown', 'code'] stdout True\n" {
		t.Errorf("nbformat read %q", got)
	}

	// A file deleted on the second replica is gone from the next run's /data on the first.
	req, _ := http.NewRequest(http.MethodDelete, b.url+session+"/files/scores.csv", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v %v", resp, err)
	}
	msg, _ = json.Marshal(map[string]string{"message": "```python import os; print(sorted(os.listdir('/data'))) ```", "session_id": sid})
	resp, err = http.Post(a.url+"/tables/chat", "application/json", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	stream, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if end := toolEnd(t, string(stream)); !strings.Contains(end.Output, "['subjects.xlsx']") {
		t.Errorf("after the delete the run sees:\n%s", end.Output)
	}
}

// toolEndEvent is the part of a tool_end event the test reads.
type toolEndEvent struct {
	Output    string   `json:"output"`
	CallID    string   `json:"call_id"`
	Artifacts []string `json:"artifacts"`
}

// toolEnd finds the one tool_end event of an SSE stream.
func toolEnd(t *testing.T, stream string) toolEndEvent {
	t.Helper()
	var found []toolEndEvent
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !strings.Contains(data, `"event":"tool_end"`) {
			continue
		}
		var ev toolEndEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("tool_end %s: %v", data, err)
		}
		found = append(found, ev)
	}
	if len(found) != 1 {
		t.Fatalf("%d tool_end events in:\n%s", len(found), stream)
	}
	return found[0]
}

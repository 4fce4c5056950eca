package workspace

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// Run is one server-side run as the workspace records it.
type Run struct {
	// Ordinal numbers the session's runs from 1, in the order they ran.
	Ordinal     int
	CallID      string
	Status      string
	Description string
	Code        string
	Stdout      string
	Stderr      string
	Summary     string
	// Files are the files the run saved (osa.save_script, osa.save_artifact), by path.
	Files map[string][]byte
	// Missing are files the run saved that the server no longer keeps (only a session's newest
	// runs keep their files), by path.
	Missing []string
	Time    time.Time
}

// Entry is one run in manifest.json, the shape of the browser workspace's manifest.
type Entry struct {
	Ordinal     int      `json:"ordinal"`
	CallID      string   `json:"call_id"`
	Status      string   `json:"status"`
	Description string   `json:"description"`
	Files       []string `json:"files"`
	// Missing lists saved files the export does not hold any more; the browser's manifest has
	// no such field, and it is left out when empty.
	Missing   []string `json:"missing,omitempty"`
	Timestamp string   `json:"timestamp"`
}

// Manifest lists runs in order, each with its saved files sorted.
func Manifest(runs []Run) []Entry {
	out := make([]Entry, 0, len(runs))
	for _, r := range sorted(runs) {
		var missing []string
		if len(r.Missing) > 0 {
			missing = slices.Sorted(slices.Values(r.Missing))
		}
		out = append(out, Entry{Ordinal: r.Ordinal, CallID: r.CallID, Status: r.Status, Description: r.Description,
			Files: slices.Sorted(maps.Keys(r.Files)), Missing: missing, Timestamp: r.Time.UTC().Format(time.RFC3339)})
	}
	if out == nil {
		out = []Entry{}
	}
	for i := range out {
		if out[i].Files == nil {
			out[i].Files = []string{}
		}
	}
	return out
}

func sorted(runs []Run) []Run {
	out := slices.Clone(runs)
	slices.SortStableFunc(out, func(a, b Run) int { return a.Ordinal - b.Ordinal })
	return out
}

// dir is a run's directory name: run-001.
func dir(r Run) string { return fmt.Sprintf("run-%03d", r.Ordinal) }

// WriteZip writes the workspace of runs and the attached files data as a zip: scripts/run-NNN.py,
// results/run-NNN/{stdout,stderr,summary}.txt, artifacts/run-NNN/<path>, data/<name>,
// manifest.json and notebook.ipynb. Entries are in a fixed order with the runs' own times, so
// the same workspace gives the same bytes.
func WriteZip(w io.Writer, runs []Run, data map[string][]byte, modified time.Time) error {
	z := zip.NewWriter(w)
	add := func(name string, t time.Time, b []byte) error {
		f, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: t.UTC()})
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		return err
	}
	for _, r := range sorted(runs) {
		d := dir(r)
		if err := add("scripts/"+d+".py", r.Time, []byte(r.Code)); err != nil {
			return err
		}
		for _, part := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}, {"summary", r.Summary}} {
			if err := add("results/"+d+"/"+part.name+".txt", r.Time, []byte(part.text)); err != nil {
				return err
			}
		}
		for _, p := range slices.Sorted(maps.Keys(r.Files)) {
			if !SafePath(p) {
				continue // no entry may climb out of its folder
			}
			if err := add("artifacts/"+d+"/"+p, r.Time, r.Files[p]); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(data)) {
		if !SafePath(name) {
			continue
		}
		if err := add("data/"+name, modified, data[name]); err != nil {
			return err
		}
	}
	manifest, err := json.MarshalIndent(Manifest(runs), "", "  ")
	if err != nil {
		return err
	}
	if err := add("manifest.json", modified, append(manifest, '\n')); err != nil {
		return err
	}
	nb, err := Notebook(runs)
	if err != nil {
		return err
	}
	if err := add("notebook.ipynb", modified, nb); err != nil {
		return err
	}
	return z.Close()
}

// notebook is nbformat 4.5: every cell has an id.
type notebook struct {
	Cells         []cell         `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

type cell struct {
	CellType       string         `json:"cell_type"`
	ExecutionCount *int           `json:"execution_count,omitempty"`
	ID             string         `json:"id"`
	Metadata       map[string]any `json:"metadata"`
	Outputs        *[]output      `json:"outputs,omitempty"`
	Source         []string       `json:"source"`
}

type output struct {
	Name       string   `json:"name"`
	OutputType string   `json:"output_type"`
	Text       []string `json:"text"`
}

// Notebook renders runs as a Jupyter notebook (nbformat 4, minor 5): for each run a markdown cell
// with its description, status and summary, then a code cell with its code and its stdout and
// stderr as stream outputs.
func Notebook(runs []Run) ([]byte, error) {
	nb := notebook{Cells: []cell{}, NBFormat: 4, NBFormatMinor: 5, Metadata: map[string]any{
		"kernelspec":    map[string]any{"display_name": "Python 3", "language": "python", "name": "python3"},
		"language_info": map[string]any{"name": "python"},
	}}
	for _, r := range sorted(runs) {
		d := dir(r)
		title := r.Description
		if title == "" {
			title = "Run " + fmt.Sprint(r.Ordinal)
		}
		md := fmt.Sprintf("### %d. %s\n\nStatus: `%s`. %s", r.Ordinal, title, r.Status, r.Summary)
		nb.Cells = append(nb.Cells, cell{CellType: "markdown", ID: d + "-md", Metadata: map[string]any{}, Source: lines(md)})
		outs := []output{}
		for _, s := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
			if s.text != "" {
				outs = append(outs, output{Name: s.name, OutputType: "stream", Text: lines(s.text)})
			}
		}
		n := r.Ordinal
		nb.Cells = append(nb.Cells, cell{CellType: "code", ExecutionCount: &n, ID: d + "-code", Metadata: map[string]any{}, Outputs: &outs, Source: lines(r.Code)})
	}
	b, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// lines splits text as Jupyter stores it: each line keeps its newline.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// SafePath reports whether p may name a zip entry below a folder: a clean relative path of
// plain segments, with no "..", no backslash, no drive or leading slash.
func SafePath(p string) bool {
	if p == "" || strings.ContainsAny(p, "\\:\x00") || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

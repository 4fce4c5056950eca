package workspace

import (
	"archive/zip"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
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
	// Files are the paths of the files the run saved (osa.save_script, osa.save_artifact) that
	// are still kept; their bytes are read through a Source as the zip is written.
	Files []string
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
			Files: slices.Sorted(slices.Values(r.Files)), Missing: missing, Timestamp: r.Time.UTC().Format(time.RFC3339)})
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

// ErrGone is what a Source returns for a file that went since it was listed (a run's files
// evicted, an attached file deleted): the zip leaves it out, and a run's is listed as missing.
var ErrGone = errors.New("workspace: the file is no longer kept")

// Source reads the files a zip holds, one at a time as each entry is written, so that a writer
// holds at most one file's bytes. The bytes are only read.
type Source interface {
	// RunFile returns one file a run saved, or ErrGone.
	RunFile(callID, path string) ([]byte, error)
	// DataFile returns one attached file, or ErrGone.
	DataFile(name string) ([]byte, error)
}

// WriteZip writes the workspace of runs and the attached files named data as a zip:
// scripts/run-NNN.py, results/run-NNN/{stdout,stderr,summary}.txt, artifacts/run-NNN/<path>,
// data/<name>, manifest.json and notebook.ipynb. Entries are in a fixed order with the runs' own
// times, so the same workspace gives the same bytes. Files are read from src as their entry is
// written (a run's file that is gone by then is listed as missing in manifest.json, which comes
// after them). What is already compressed is stored as it is (Method); the rest is deflated at
// flate.BestSpeed.
func WriteZip(w io.Writer, runs []Run, data []string, modified time.Time, src Source) error {
	z := zip.NewWriter(w)
	z.RegisterCompressor(zip.Deflate, fastDeflate)
	add := func(name string, t time.Time, method uint16, b []byte) error {
		f, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: t.UTC()})
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		return err
	}
	runs = sorted(runs)
	for i := range runs {
		r := &runs[i]
		d := dir(*r)
		if err := add("scripts/"+d+".py", r.Time, zip.Deflate, []byte(r.Code)); err != nil {
			return err
		}
		for _, part := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}, {"summary", r.Summary}} {
			if err := add("results/"+d+"/"+part.name+".txt", r.Time, zip.Deflate, []byte(part.text)); err != nil {
				return err
			}
		}
		var kept []string
		for _, p := range slices.Sorted(slices.Values(r.Files)) {
			if !SafePath(p) {
				continue // no entry may climb out of its folder
			}
			b, err := src.RunFile(r.CallID, p)
			if errors.Is(err, ErrGone) {
				r.Missing = append(r.Missing, p)
				continue
			}
			if err != nil {
				return err
			}
			if err := add("artifacts/"+d+"/"+p, r.Time, Method(p, b), b); err != nil {
				return err
			}
			kept = append(kept, p)
		}
		r.Files = kept
	}
	for _, name := range slices.Sorted(slices.Values(data)) {
		if !SafePath(name) {
			continue
		}
		b, err := src.DataFile(name)
		if errors.Is(err, ErrGone) {
			continue
		}
		if err != nil {
			return err
		}
		if err := add("data/"+name, modified, Method(name, b), b); err != nil {
			return err
		}
	}
	manifest, err := json.MarshalIndent(Manifest(runs), "", "  ")
	if err != nil {
		return err
	}
	if err := add("manifest.json", modified, zip.Deflate, append(manifest, '\n')); err != nil {
		return err
	}
	nb, err := Notebook(runs)
	if err != nil {
		return err
	}
	if err := add("notebook.ipynb", modified, zip.Deflate, nb); err != nil {
		return err
	}
	return z.Close()
}

// compressed are the extensions of formats that are compressed already (xlsx, docx and the
// other Office files are zips; parquet's pages are compressed; images, archives): deflating
// them again costs CPU and saves nothing.
var compressed = []string{"xlsx", "xlsm", "docx", "pptx", "odt", "ods", "parquet", "zip", "gz", "tgz", "bz2", "xz", "zst",
	"7z", "png", "jpg", "jpeg", "gif", "webp", "avif", "mp3", "mp4", "webm", "npz", "h5", "nc", "pdf", "feather", "arrow"}

// sampleBytes is how much of a file Method deflates to judge the rest: enough to span
// several of deflate's 32 KB windows' worth of repeats, cheap next to the file.
const sampleBytes = 64 << 10

// Method is how the zip stores one file: zip.Store for a format that is compressed already
// (by its extension) and for bytes whose first 64 KB deflate (at BestSpeed) to more than 90% of
// their size; zip.Deflate for the rest (text, tables, uncompressed binaries). The test costs a
// fraction of a millisecond, whatever the file's size.
func Method(name string, b []byte) uint16 {
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if slices.Contains(compressed, ext) {
		return zip.Store
	}
	sample := b[:min(len(b), sampleBytes)]
	if len(sample) < 512 {
		return zip.Deflate // too little to judge, and too little to matter
	}
	var n countWriter
	fw := flateWriter(&n)
	_, _ = fw.Write(sample) // a countWriter never fails
	_ = fw.Close()
	flatePool.Put(fw)
	if int64(n) > int64(len(sample))*9/10 {
		return zip.Store
	}
	return zip.Deflate
}

// countWriter counts what is written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// flatePool keeps BestSpeed writers: each holds about 1 MB of state, too much to make for every
// entry of every export.
var flatePool sync.Pool

func flateWriter(w io.Writer) *flate.Writer {
	if fw, ok := flatePool.Get().(*flate.Writer); ok {
		fw.Reset(w)
		return fw
	}
	fw, _ := flate.NewWriter(w, flate.BestSpeed) // the level is valid
	return fw
}

// fastDeflate is the zip's deflate compressor: BestSpeed rather than archive/zip's default
// level, several times faster on tables for a few percent more bytes.
func fastDeflate(w io.Writer) (io.WriteCloser, error) {
	return &pooledFlate{fw: flateWriter(w)}, nil
}

type pooledFlate struct{ fw *flate.Writer }

func (p *pooledFlate) Write(b []byte) (int, error) { return p.fw.Write(b) }

func (p *pooledFlate) Close() error {
	err := p.fw.Close()
	flatePool.Put(p.fw)
	return err
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

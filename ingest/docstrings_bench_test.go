package ingest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// The docstrings sync's throughput against the local fake API, with its baselines in the same
// command:
//
//	go test -run '^$' -bench 'Docstrings' -benchtime 3x ./ingest/
//
// BenchmarkDocstringsSync is a first run (the tree, every raw file, MATLAB parsed, stored);
// BenchmarkDocstringsUnchanged a later run of the same repo (one 304); BenchmarkDocstringsStore
// the baseline: the same rows written through the same Tx calls with nothing fetched or parsed.

const benchFiles = 400

func benchRepo(b *testing.B) *ingesttest.GitHubTrees {
	g := ingesttest.NewGitHubTrees(b)
	for i := range benchFiles {
		var src strings.Builder
		for j := range 3 {
			fmt.Fprintf(&src, "%% FN_%d_%d Filters the signal of channel %d with a window of %d samples.\n", i, j, j, i)
			fmt.Fprintf(&src, "%%   OUT = FN_%d_%d(IN, WINDOW) returns the filtered data.\nfunction out = fn_%d_%d(in, window)\nout = in;\nend\n\n", i, j, i, j)
		}
		g.SetFile("org/toolbox", "main", fmt.Sprintf("functions/group%02d/file%04d.m", i%20, i), src.String())
	}
	return g
}

var benchCommunity = &config.Community{ID: "bench", Docstrings: &config.Docstrings{Repos: []config.DocstringRepo{
	{Repo: "org/toolbox", Branch: "main", Languages: []string{"matlab"}}}}}

func BenchmarkDocstringsSync(b *testing.B) {
	g := benchRepo(b)
	symbols := 0
	for b.Loop() {
		st := paperStore(b)
		d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL})
		res, err := d.Sync(context.Background(), benchCommunity, RunOptions{}, nil)
		if err != nil || len(res.Failed) != 0 {
			b.Fatal(err, res.Failed)
		}
		symbols += res.Items
	}
	b.ReportMetric(float64(symbols)/b.Elapsed().Seconds(), "symbols/s")
}

func BenchmarkDocstringsUnchanged(b *testing.B) {
	g := benchRepo(b)
	st := paperStore(b)
	d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, CacheDir: b.TempDir()})
	if _, err := d.Sync(context.Background(), benchCommunity, RunOptions{}, nil); err != nil {
		b.Fatal(err)
	}
	g.ResetRequests()
	for b.Loop() {
		if res, err := d.Sync(context.Background(), benchCommunity, RunOptions{}, nil); err != nil || len(res.Failed) != 0 {
			b.Fatal(err, res.Failed)
		}
	}
	if g.Count("raw") != 0 {
		b.Fatalf("%d raw downloads of an unchanged repo", g.Count("raw"))
	}
	b.ReportMetric(float64(benchFiles*3*b.N)/b.Elapsed().Seconds(), "symbols/s")
}

func BenchmarkDocstringsStore(b *testing.B) {
	var recs []knowledge.Docstring
	for i := range benchFiles {
		for j := range 3 {
			recs = append(recs, knowledge.Docstring{Repo: "org/toolbox", FilePath: fmt.Sprintf("functions/group%02d/file%04d.m", i%20, i),
				Language: "matlab", Symbol: fmt.Sprintf("fn_%d_%d", i, j), SymbolType: "function", Line: 1 + 6*j, Branch: "main",
				Docstring: fmt.Sprintf("FN_%d_%d Filters the signal of channel %d with a window of %d samples.\n  OUT = FN_%d_%d(IN, WINDOW) returns the filtered data.", i, j, j, i, i, j)})
		}
	}
	symbols := 0
	for b.Loop() {
		st := paperStore(b)
		for k := 0; k < len(recs); k += 3 * docChunkFiles { // the sync's transactions: one per chunk of files
			n, err := updateCounted(context.Background(), st, "bench", func(tx *knowledge.Tx) (int, error) {
				return tx.UpsertDocstrings(recs[k:min(k+3*docChunkFiles, len(recs))])
			})
			if err != nil {
				b.Fatal(err)
			}
			symbols += n
		}
	}
	b.ReportMetric(float64(symbols)/b.Elapsed().Seconds(), "symbols/s")
}

// BenchmarkPythonExtractor is the sandboxed parser's throughput (files per second, 60 files
// of a dozen documented symbols each, one run), against the baseline of one run of an empty
// program with the same files attached.
func BenchmarkPythonExtractor(b *testing.B) {
	runner := pythonRunner(b)
	files := map[string][]byte{}
	for i := range 60 {
		var src strings.Builder
		fmt.Fprintf(&src, "\"\"\"Module %d: signal filters.\"\"\"\n\n", i)
		for j := range 4 {
			fmt.Fprintf(&src, "class Filter%d:\n    \"\"\"A filter of order %d.\n\n    Parameters\n    ----------\n    order : int\n    \"\"\"\n\n", j, j)
			fmt.Fprintf(&src, "    def apply(self, data):\n        \"\"\"Apply the filter to data.\"\"\"\n        return data\n\n")
			fmt.Fprintf(&src, "def make_filter_%d(order=2):\n    \"\"\"Make a Filter%d.\"\"\"\n    return Filter%d()\n\n", j, j, j)
		}
		files[fmt.Sprintf("pkg/mod%02d.py", i)] = []byte(src.String())
	}
	b.Run("extractor", func(b *testing.B) {
		x := NewPythonExtractor(runner, nil)
		for b.Loop() {
			got, err := x.Docstrings(context.Background(), files)
			if err != nil || len(got) != len(files) {
				b.Fatal(err, len(got))
			}
		}
		b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
	})
	b.Run("baseline-empty-run", func(b *testing.B) {
		data := map[string][]byte{}
		i := 0
		for _, v := range files {
			data[fmt.Sprintf("f%d.py", i)] = v
			i++
		}
		for b.Loop() {
			if _, err := runner.Run(context.Background(), "pass\n", data); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
	})
}

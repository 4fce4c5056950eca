package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/sandbox"
)

// engineRunner is the PythonRunner cmd builds: the sandbox engine in strict mode (every loop
// is stopped at the deadline), a time and memory cap, stdout allowed the extractor's budget,
// and any run that did not end ok, or whose output was clipped, an error.
type engineRunner struct{ eng *sandbox.Engine }

func (r engineRunner) Run(ctx context.Context, source string, data map[string][]byte) (string, error) {
	res, err := r.eng.Run(ctx, sandbox.Request{Source: source, Data: data, Timeout: 60 * time.Second,
		MemoryBytes: 512 << 20, StdoutChars: ExtractorOutputChars + 1024})
	if err != nil {
		return "", err
	}
	if res.Status != sandbox.StatusOK || res.StdoutTruncated {
		return "", fmt.Errorf("the extractor's run ended %s (%s)", res.Status, res.Exception)
	}
	return res.Stdout, nil
}

var testEngine struct {
	once sync.Once
	eng  *sandbox.Engine
	err  error
}

// pythonRunner returns the real engine, skipping without one (failing under CI=true).
func pythonRunner(t testing.TB) engineRunner {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping tests that run python.wasm")
	}
	dir := os.Getenv("ASSISTANT_ENGINE_DIR")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ASSISTANT_ENGINE_DIR is not set")
		}
		t.Skip("ASSISTANT_ENGINE_DIR is not set (the Python engine's directory)")
	}
	testEngine.once.Do(func() {
		cache, _ := os.UserCacheDir()
		testEngine.eng, testEngine.err = sandbox.New(context.Background(), sandbox.Options{Dir: dir,
			CacheDir: cache + "/assistant/wazero-test-cache", Mode: sandbox.ModeStrict})
	})
	if testEngine.err != nil {
		t.Fatal(testEngine.err)
	}
	return engineRunner{testEngine.eng}
}

// countingRunner counts runs and can fail those holding a marker.
type countingRunner struct {
	PythonRunner
	runs   atomic.Int32
	failOn string
}

func (c *countingRunner) Run(ctx context.Context, source string, data map[string][]byte) (string, error) {
	c.runs.Add(1)
	for _, b := range data {
		if c.failOn != "" && strings.Contains(string(b), c.failOn) {
			return "", errors.New("the run crashed")
		}
	}
	return c.PythonRunner.Run(ctx, source, data)
}

const samplePython = `"""Tools for events.

    The module's own help.
"""
import os

os.system("echo should never run")
print("PWNED")


class Annotator:
	"""Annotates events.

	With a tab-indented body.
	"""

	def __init__(self, schema):
		"""Make one for a schema."""

	@property
	def name(self):
		"""The annotator's name."""
		return "a"

	def _undocumented(self):
		return 1

	class Inner:
		"""A nested class."""

		def deep(self):
			"""A method of the nested class."""


@decorator
async def fetch_events(url):
    """Fetch events from url.

    Returns a list.
    """

    def helper():
        """A function inside a function."""

    return []


def fetch_events():
    """A second definition of the same name."""
`

func TestPythonExtractor(t *testing.T) {
	x := NewPythonExtractor(pythonRunner(t), nil)
	files := map[string][]byte{
		"pkg/events.py":  []byte(samplePython),
		"pkg/bad.py":     []byte("def f(:\n    pass\n"),
		"pkg/latin1.py":  []byte("\"\"\"Caf\xe9.\"\"\"\n"),
		"pkg/bom.py":     []byte("\ufeff\"\"\"With a byte order mark.\"\"\"\n"),
		"pkg/empty.py":   nil,
		"pkg/nested.py":  []byte("x = " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300) + "\n"),
		"pkg/surrog.py":  []byte("def s():\n    \"\"\"bad \\ud800 escape\"\"\"\n"),
		"pkg/unicode.py": []byte("def größe():\n    \"\"\"Größe – ein Maß.\"\"\"\n"),
	}
	got, err := x.Docstrings(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PyFile{
		"pkg/events.py": {Symbols: []PySymbol{
			{Name: "", Type: "module", Line: 1, Docstring: "Tools for events.\n\nThe module's own help."},
			{Name: "Annotator", Type: "class", Line: 11, Docstring: "Annotates events.\n\nWith a tab-indented body."},
			{Name: "__init__", Type: "method", Line: 17, Docstring: "Make one for a schema."},
			{Name: "name", Type: "method", Line: 21, Docstring: "The annotator's name."},
			{Name: "Inner", Type: "class", Line: 28, Docstring: "A nested class."},
			{Name: "deep", Type: "method", Line: 31, Docstring: "A method of the nested class."},
			{Name: "fetch_events", Type: "function", Line: 36, Docstring: "Fetch events from url.\n\nReturns a list."},
			{Name: "helper", Type: "function", Line: 42, Docstring: "A function inside a function."},
			{Name: "fetch_events", Type: "function", Line: 48, Docstring: "A second definition of the same name."},
		}},
		"pkg/bad.py":     {Failed: "syntax error at line 1: invalid syntax"},
		"pkg/latin1.py":  {Failed: "not UTF-8 (at byte 6)"},
		"pkg/bom.py":     {Symbols: []PySymbol{{Type: "module", Line: 1, Docstring: "With a byte order mark."}}},
		"pkg/empty.py":   {},
		"pkg/nested.py":  {Failed: "MemoryError: Parser stack overflowed - Python source too complex to parse"},
		"pkg/surrog.py":  {Symbols: []PySymbol{{Name: "s", Type: "function", Line: 1, Docstring: "bad \ufffd escape"}}},
		"pkg/unicode.py": {Symbols: []PySymbol{{Name: "größe", Type: "function", Line: 1, Docstring: "Größe – ein Maß."}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("docstrings (-want +got):\n%s", d)
	}
}

func TestPythonExtractorBatches(t *testing.T) {
	real := pythonRunner(t)
	files := map[string][]byte{}
	for i := range 70 { // more than one run's 63 files
		files[fmt.Sprintf("m/f%02d.py", i)] = fmt.Appendf(nil, "def f%d():\n    \"\"\"%s\"\"\"\n", i, strings.Repeat("word ", 60))
	}
	files["m/crash.py"] = []byte("def boom():\n    \"\"\"CRASH-ME\"\"\"\n")

	// A run holding crash.py fails (as a file that crashed the interpreter would): the batch
	// is halved down to it, and every other file still parses.
	r := &countingRunner{PythonRunner: real, failOn: "CRASH-ME"}
	x := NewPythonExtractor(r, nil)
	got, err := x.Docstrings(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	for p := range files {
		f := got[p]
		switch {
		case p == "m/crash.py":
			if !strings.HasPrefix(f.Failed, "the parser failed on it: ") {
				t.Errorf("crash.py: %+v", f)
			}
		case f.Failed != "" || len(f.Symbols) != 1:
			t.Errorf("%s: %+v", p, f)
		}
	}
	// 71 files, crash.py first: the first 63 fail and are halved down to crash.py (runs of
	// 63, 31, 15, 7, 3 and 1 files fail; the other halves, 32, 16, 8, 4 and 2, parse), then
	// one run for the last 8 files.
	if n := r.runs.Load(); n != 12 {
		t.Errorf("%d runs, want 12", n)
	}

	// A budget that holds about two files' lines: runs go on until every file is written.
	for p := range files {
		if p >= "m/f10.py" || p == "m/crash.py" {
			delete(files, p)
		}
	}
	r = &countingRunner{PythonRunner: real}
	x = NewPythonExtractor(r, nil)
	x.outputChars = 800
	got, err = x.Docstrings(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	for p := range files {
		if f := got[p]; f.Failed != "" || len(f.Symbols) != 1 || !strings.HasPrefix(f.Symbols[0].Docstring, "word word") {
			t.Errorf("%s: %+v", p, f)
		}
	}
	if n := r.runs.Load(); n != 5 {
		t.Errorf("%d runs for 10 files with room for two each, want 5", n)
	}
}

func TestParseExtractorOutput(t *testing.T) {
	names := []string{"f0.py", "f1.py"}
	for _, tc := range []struct {
		name, out string
		want      []PyFile
		ok        bool
	}{
		{"both", `{"file":"f0.py","symbols":[["","module",1,"Doc."],["g","function",3,"G."]]}` + "\n" +
			`{"file":"f1.py","error":"syntax error at line 2: invalid syntax"}` + "\n" + `{"end": 2}` + "\n",
			[]PyFile{{Symbols: []PySymbol{{Type: "module", Line: 1, Docstring: "Doc."}, {Name: "g", Type: "function", Line: 3, Docstring: "G."}}},
				{Failed: "syntax error at line 2: invalid syntax"}}, true},
		{"a prefix", `{"file":"f0.py","symbols":[]}` + "\n" + `{"end": 1}` + "\n", []PyFile{{}}, true},
		{"no end", `{"file":"f0.py","symbols":[]}` + "\n", nil, false},
		{"end miscounted", `{"file":"f0.py","symbols":[]}` + "\n" + `{"end": 2}`, nil, false},
		{"clipped", `{"file":"f0.py","symbols":[["g","function",3,"G` + "\n... 120 characters omitted ...\n" + `"]]}` + "\n" + `{"end": 1}`, nil, false},
		{"out of order", `{"file":"f1.py","symbols":[]}` + "\n" + `{"end": 1}`, nil, false},
		{"unknown type", `{"file":"f0.py","symbols":[["g","lambda",3,"G."]]}` + "\n" + `{"end": 1}`, nil, false},
		{"module with a name", `{"file":"f0.py","symbols":[["g","module",1,"G."]]}` + "\n" + `{"end": 1}`, nil, false},
		{"line zero", `{"file":"f0.py","symbols":[["g","function",0,"G."]]}` + "\n" + `{"end": 1}`, nil, false},
		{"repeated key", `{"file":"f0.py","file":"f0.py"}` + "\n" + `{"end": 1}`, nil, false},
		{"printed by the file", "PWNED\n" + `{"file":"f0.py","symbols":[]}` + "\n" + `{"end": 1}`, nil, false},
		{"more lines than files", `{"file":"f0.py","symbols":[]}` + "\n" + `{"file":"f1.py","symbols":[]}` + "\n" +
			`{"file":"f1.py","symbols":[]}` + "\n" + `{"end": 3}`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseExtractorOutput(tc.out, names)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func FuzzExtractorOutput(f *testing.F) {
	f.Add(`{"file":"f0.py","symbols":[["","module",1,"Doc."],["g","method",3,"G."]]}`+"\n"+`{"end": 1}`, 2)
	f.Add(`{"file":"f0.py","error":"x"}`+"\n"+`{"file":"f1.py","symbols":[]}`+"\n"+`{"end": 2}`+"\n", 2)
	f.Add(`{"end": 0}`, 1)
	f.Add(`{"file":"f0.py","symbols":[["g","function",1e9,"\ud800"]]}`+"\n"+`{"end": 1}`, 1)
	f.Fuzz(func(t *testing.T, out string, n int) {
		n = min(max(n, 0), 70)
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("f%d.py", i)
		}
		got, err := parseExtractorOutput(out, names)
		if err != nil {
			return
		}
		if len(got) == 0 || len(got) > n {
			t.Fatalf("%d files for %d names", len(got), n)
		}
		for _, file := range got {
			for _, s := range file.Symbols {
				if s.Line < 1 || (s.Type == "module") != (s.Name == "") || strings.TrimSpace(s.Docstring) == "" {
					t.Errorf("symbol %+v", s)
				}
			}
		}
	})
}

// brokenRunner fails every run, as a runner whose engine is gone does.
type brokenRunner struct{ runs atomic.Int32 }

func (b *brokenRunner) Run(context.Context, string, map[string][]byte) (string, error) {
	b.runs.Add(1)
	return "", errors.New("sandbox: the engine is closed")
}

func TestPythonExtractorGivesUp(t *testing.T) {
	files := map[string][]byte{}
	for i := range 200 {
		files[fmt.Sprintf("f%03d.py", i)] = []byte("x = 1\n")
	}
	b := &brokenRunner{}
	_, err := NewPythonExtractor(b, nil).Docstrings(context.Background(), files)
	if err == nil || !strings.Contains(err.Error(), "the engine is closed") {
		t.Fatalf("err = %v", err)
	}
	// Not the hundreds of runs halving every batch down to its files would take.
	if n := b.runs.Load(); n != maxFailedRuns {
		t.Errorf("%d runs, want %d", n, maxFailedRuns)
	}
}

// timingRunner plays the extractor on a test clock: a run holding a file with SLOW in it
// times out after 60 s (as the sandbox's limit ends it), any other takes a second and gives
// each file a module docstring.
type timingRunner struct {
	clk  *pClock
	runs atomic.Int32
}

func (r *timingRunner) Run(ctx context.Context, _ string, data map[string][]byte) (string, error) {
	r.runs.Add(1)
	var params struct {
		Files []string `json:"files"`
	}
	if err := json.Unmarshal(data["params.json"], &params); err != nil {
		return "", err
	}
	for _, n := range params.Files {
		if bytes.Contains(data[n], []byte("SLOW")) {
			r.clk.Sleep(ctx, 60*time.Second)
			return "", errors.New("the extractor's run ended timeout ()")
		}
	}
	r.clk.Sleep(ctx, time.Second)
	var b strings.Builder
	for _, n := range params.Files {
		fmt.Fprintf(&b, `{"file":%q,"symbols":[["","module",1,"Doc."]]}`+"\n", n)
	}
	fmt.Fprintf(&b, `{"end": %d}`+"\n", len(params.Files))
	return b.String(), nil
}

// Each file that times out costs a run of the sandbox's full limit while its batch is halved
// down to it: the runs of one call are bounded by a time budget, and once it is spent the
// files not parsed yet fail saying so.
func TestPythonExtractorTimeBudget(t *testing.T) {
	clk := newPClock()
	r := &timingRunner{clk: clk}
	x := NewPythonExtractor(r, nil)
	x.now = clk.Now
	files := map[string][]byte{"a.py": []byte(`"""Fine."""`)}
	for i := range 40 {
		files[fmt.Sprintf("slow%02d.py", i)] = []byte("# SLOW\n")
	}
	start := clk.Now()
	got, err := x.Docstrings(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if f := got["a.py"]; f.Failed != "" || len(f.Symbols) != 1 {
		t.Errorf("a.py: %+v, want parsed", f)
	}
	spent := clk.Now().Sub(start)
	if spent > DefaultExtractorBudget+time.Minute {
		t.Errorf("the runs took %v of the test clock in %d runs, want at most the %v budget and one run", spent, r.runs.Load(), DefaultExtractorBudget)
	}
	budgetFailed := 0
	for p, f := range got {
		switch {
		case p == "a.py":
		case strings.HasPrefix(f.Failed, "not parsed: the Python extractor's 10m0s for this repository is spent ("):
			budgetFailed++
		case !strings.HasPrefix(f.Failed, "the parser failed on it: "):
			t.Errorf("%s: %+v", p, f)
		}
	}
	if budgetFailed == 0 || len(got) != len(files) {
		t.Errorf("%d files failed for want of time, %d of %d answered; want the rest failed so", budgetFailed, len(got), len(files))
	}
}

// The budget is one repository's: shared by the source's calls for its chunks of files, and
// fresh for the next repository.
func TestDocstringsPythonBudgetPerRepository(t *testing.T) {
	g := ingesttest.NewGitHubTrees(t)
	for i := range 150 { // three chunks of 64 files
		g.SetFile("slow/repo", "main", fmt.Sprintf("pkg/m%03d.py", i), "# SLOW\n")
	}
	g.SetFile("slow/repo", "main", "pkg/a.py", `"""Fine."""`)
	g.SetFile("fast/repo", "main", "fast.py", `"""Fast."""`)
	clk := newPClock()
	r := &timingRunner{clk: clk}
	x := NewPythonExtractor(r, nil)
	x.now = clk.Now
	x.Budget = 7 * time.Minute // a.py parses after six failed runs (64 files halved down to two)
	st := paperStore(t)
	d := NewDocstrings(DocstringsOptions{Store: st, APIURL: g.APIURL, RawURL: g.RawURL, Python: x, Now: clk.Now, Sleep: clk.Sleep})
	c := &config.Community{ID: "x", Docstrings: &config.Docstrings{Repos: []config.DocstringRepo{
		{Repo: "slow/repo", Branch: "main", Languages: []string{"python"}},
		{Repo: "fast/repo", Branch: "main", Languages: []string{"python"}},
	}}}
	start := clk.Now()
	if _, err := d.Sync(context.Background(), c, RunOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	// 7 minutes and the last run over it, then the other repository's one run.
	if spent := clk.Now().Sub(start); spent > 8*time.Minute+time.Second {
		t.Errorf("the syncs took %v of the test clock in %d runs, want at most 8m1s", spent, r.runs.Load())
	}
	rows := published(t, st, "x", `SELECT repo, file_path FROM docstrings ORDER BY repo`)
	if fmt.Sprint(rows) != "[[fast/repo fast.py] [slow/repo pkg/a.py]]" {
		t.Errorf("rows %v, want both fine files", rows)
	}
}

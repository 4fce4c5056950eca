package ingest

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/strictjson"
)

// Python docstrings (knowledge.md §6.7) come from a real parser: the ast module of the
// server's own Python engine, run in the sandbox by the extractor program embedded here.
// This package does not import the sandbox: cmd backs PythonRunner with it.

// PySymbol is one documented symbol of a Python file.
type PySymbol struct {
	// Name is the class or function name; "" for the module (the source names it after the
	// file).
	Name string
	// Type is "module", "class", "function" or "method" (a def directly in a class body).
	Type      string
	Line      int // the def or class line; 1 for the module
	Docstring string
}

// PyFile is what the parser made of one file: its symbols, or why it could not be parsed
// (a syntax error, not UTF-8, too deeply nested).
type PyFile struct {
	Symbols []PySymbol
	Failed  string
}

// PythonParser extracts the docstrings of Python files, by path. An error means the parser
// could not run at all; a file it could not parse has its Failed set.
type PythonParser interface {
	Docstrings(ctx context.Context, files map[string][]byte) (map[string]PyFile, error)
}

// PythonRunner runs a Python program in the sandbox with data mounted read-only at
// /data/<name> and returns what it printed. cmd backs it with sandbox.Engine in strict mode
// with a time and memory cap; an error is any run that did not finish ok, or whose stdout was
// clipped (the sandbox's StdoutChars must be at least ExtractorOutputChars).
type PythonRunner interface {
	Run(ctx context.Context, source string, data map[string][]byte) (stdout string, err error)
}

//go:embed docstrings_extract.py
var extractorSource string

// ExtractorSource is the extractor program PythonExtractor runs.
func ExtractorSource() string { return extractorSource }

const (
	// ExtractorOutputChars is what one extractor run prints at most (it stops before a file
	// that would take it past this, and the next run takes that file). The runner's stdout
	// cap must allow it.
	ExtractorOutputChars = 2 << 20
	// extractorBatchFiles and extractorBatchBytes bound one run's input: the sandbox pool
	// takes 64 attached files (params.json is one), and a few MB parse in seconds.
	extractorBatchFiles = 63
	extractorBatchBytes = 8 << 20
	// maxPySymbols bounds the symbols taken from one file.
	maxPySymbols = 5000
)

// PythonExtractor is the PythonParser that runs the embedded extractor through a
// PythonRunner, in batches. A batch whose run fails (a timeout, running out of memory, a
// crash the file caused) is halved and run again, down to single files, so one bad file
// fails only itself. Every run's time, a failed one's included, is spent from Budget; once
// it is spent, the files not parsed yet fail saying so. The budget is one Docstrings call's,
// or (for the docstrings source) one repository's over all its calls.
type PythonExtractor struct {
	runner PythonRunner
	log    *slog.Logger
	// outputChars is the budget given to each run (ExtractorOutputChars; tests lower it).
	outputChars int
	// Budget is the extractor time one repository's sync may spend (DefaultExtractorBudget,
	// also when not positive; tests shorten it). A file that times out costs a run of the runner's whole limit at
	// every halving of its batch: without a bound, a repository of such files would keep a
	// sync going for hours.
	Budget time.Duration
	// now is the clock runs are timed by (tests set theirs).
	now func() time.Time
}

// DefaultExtractorBudget is PythonExtractor's default Budget: ten runs that time out at the
// sandbox's 60 s, or minutes of parsing that a repository's Python never needs.
const DefaultExtractorBudget = 10 * time.Minute

// NewPythonExtractor returns a PythonExtractor running through r.
func NewPythonExtractor(r PythonRunner, log *slog.Logger) *PythonExtractor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PythonExtractor{runner: r, log: log, outputChars: ExtractorOutputChars, Budget: DefaultExtractorBudget, now: time.Now}
}

// Docstrings parses files (path → contents) and returns each one's symbols or failure,
// within one Budget.
func (x *PythonExtractor) Docstrings(ctx context.Context, files map[string][]byte) (map[string]PyFile, error) {
	return x.docstrings(ctx, files, x.newBudget())
}

func (x *PythonExtractor) newBudget() *extractorBudget {
	if x.Budget <= 0 {
		return &extractorBudget{limit: DefaultExtractorBudget}
	}
	return &extractorBudget{limit: x.Budget}
}

// session is a parser whose calls share one Budget: the docstrings source takes one per
// repository.
func (x *PythonExtractor) session() PythonParser {
	return &extractorSession{x: x, budget: x.newBudget()}
}

// pythonSessions is a PythonParser that can bound several calls by one budget.
type pythonSessions interface {
	session() PythonParser
}

// extractorSession is PythonExtractor.session's parser.
type extractorSession struct {
	x      *PythonExtractor
	budget *extractorBudget
}

func (s *extractorSession) Docstrings(ctx context.Context, files map[string][]byte) (map[string]PyFile, error) {
	return s.x.docstrings(ctx, files, s.budget)
}

// extractorBudget is the extractor time spent of a limit, and the runs that failed meanwhile.
type extractorBudget struct {
	limit, spent time.Duration
	failed       int
	warned       bool
}

func (b *extractorBudget) left() time.Duration { return b.limit - b.spent }

func (x *PythonExtractor) docstrings(ctx context.Context, files map[string][]byte, budget *extractorBudget) (map[string]PyFile, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out := make(map[string]PyFile, len(files))
	runs := &extractorRuns{budget: budget}
	for len(paths) > 0 {
		n, size := 0, 0
		for n < len(paths) && n < extractorBatchFiles && (n == 0 || size+len(files[paths[n]]) <= extractorBatchBytes) {
			size += len(files[paths[n]])
			n++
		}
		if err := x.batch(ctx, runs, paths[:n], files, out); err != nil {
			return out, err
		}
		paths = paths[n:]
	}
	return out, nil
}

// extractorRuns counts one Docstrings call's runs: a runner that fails every run (the engine
// is gone, every run times out) ends the call rather than halving every batch down to its
// files. budget is the time the runs may take.
type extractorRuns struct {
	ok, failed int
	budget     *extractorBudget
}

// maxFailedRuns is how many runs may fail before any succeeds.
const maxFailedRuns = 8

// batch parses paths, splitting it when a run fails, and runs again for the files a run left
// out for want of output budget.
func (x *PythonExtractor) batch(ctx context.Context, runs *extractorRuns, paths []string, files map[string][]byte, out map[string]PyFile) error {
	b := runs.budget
	for len(paths) > 0 {
		if b.left() <= 0 {
			x.outOfTime(b, paths, out)
			return nil
		}
		got, err := x.timedRun(ctx, b, paths, files)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			runs.failed++
			b.failed++
			if runs.ok == 0 && runs.failed >= maxFailedRuns {
				return fmt.Errorf("the Python extractor failed on its first %d runs: %w", runs.failed, err)
			}
			if b.left() <= 0 {
				// Halving would only run again what there is no time left for.
				x.outOfTime(b, paths, out)
				return nil
			}
			if len(paths) == 1 {
				x.log.Warn("docstrings: the Python extractor failed on a file", "file", paths[0], "error", err)
				out[paths[0]] = PyFile{Failed: "the parser failed on it: " + err.Error()}
				return nil
			}
			half := len(paths) / 2
			if err := x.batch(ctx, runs, paths[:half], files, out); err != nil {
				return err
			}
			return x.batch(ctx, runs, paths[half:], files, out)
		}
		runs.ok++
		for i, f := range got {
			out[paths[i]] = f
		}
		paths = paths[len(got):]
	}
	return nil
}

// timedRun is run within what is left of b, its time spent from b.
func (x *PythonExtractor) timedRun(ctx context.Context, b *extractorBudget, paths []string, files map[string][]byte) ([]PyFile, error) {
	runCtx, cancel := context.WithTimeout(ctx, b.left())
	defer cancel()
	start := x.now()
	got, err := x.run(runCtx, paths, files)
	b.spent += x.now().Sub(start)
	return got, err
}

// outOfTime fails the files of paths not parsed yet: b is spent.
func (x *PythonExtractor) outOfTime(b *extractorBudget, paths []string, out map[string]PyFile) {
	why := fmt.Sprintf("not parsed: the Python extractor's %v for this repository is spent (%d of its runs failed); tried again next sync",
		b.limit, b.failed)
	n := 0
	for _, p := range paths {
		if _, ok := out[p]; !ok {
			out[p] = PyFile{Failed: why}
			n++
		}
	}
	if !b.warned {
		b.warned = true
		x.log.Warn("docstrings: the Python extractor's time budget is spent; the files not parsed yet are skipped",
			"budget", b.limit.String(), "failed_runs", b.failed, "files", n)
	}
}

// run runs the extractor once on paths and returns the files it reported, in order (at least
// the first).
func (x *PythonExtractor) run(ctx context.Context, paths []string, files map[string][]byte) ([]PyFile, error) {
	names := make([]string, len(paths))
	data := make(map[string][]byte, len(paths)+1)
	for i, p := range paths {
		names[i] = "f" + strconv.Itoa(i) + ".py" // flat names: the sandbox mounts no directories
		data[names[i]] = files[p]
	}
	params, err := json.Marshal(map[string]any{"files": names, "budget": x.outputChars - 64,
		"max_doc": knowledge.CapDocstring, "max_symbols": maxPySymbols})
	if err != nil {
		return nil, err
	}
	data["params.json"] = params
	stdout, err := x.runner.Run(ctx, extractorSource, data)
	if err != nil {
		return nil, err
	}
	got, err := parseExtractorOutput(stdout, names)
	if err != nil {
		return nil, fmt.Errorf("the extractor's output: %w", err)
	}
	return got, nil
}

// errExtractorOutput is wrapped by every complaint about the extractor's output.
var errExtractorOutput = errors.New("not the extractor's output")

// parseExtractorOutput reads what the extractor printed for names: one line per file in
// order (a prefix of names, at least one), then {"end": n}. Anything else, a clipped output
// included, is an error: the output is checked, not trusted.
func parseExtractorOutput(stdout string, names []string) ([]PyFile, error) {
	if len(stdout) > 4*ExtractorOutputChars {
		return nil, fmt.Errorf("%w: %d bytes", errExtractorOutput, len(stdout))
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) < 2 || len(lines)-1 > len(names) {
		return nil, fmt.Errorf("%w: %d lines for %d files", errExtractorOutput, len(lines), len(names))
	}
	end, err := strictjson.Parse([]byte(lines[len(lines)-1]), strictjson.Limits{MaxDepth: 1, MaxValues: 2})
	if err != nil || end.Kind != strictjson.Object || len(end.Members) != 1 || end.Members[0].Key != "end" ||
		end.Members[0].Value.Str != strconv.Itoa(len(lines)-1) {
		return nil, fmt.Errorf("%w: no end line for %d files", errExtractorOutput, len(lines)-1)
	}
	files := make([]PyFile, 0, len(lines)-1)
	for i, line := range lines[:len(lines)-1] {
		f, err := parseExtractorLine(line, names[i])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", errExtractorOutput, i+1, err)
		}
		files = append(files, f)
	}
	return files, nil
}

var pySymbolTypes = []string{"module", "class", "function", "method"}

// parseExtractorLine reads one file's line.
func parseExtractorLine(line, name string) (PyFile, error) {
	v, err := strictjson.Parse([]byte(line), strictjson.Limits{MaxDepth: 3, MaxValues: 5*maxPySymbols + 8})
	if err != nil {
		return PyFile{}, err
	}
	if v.Kind != strictjson.Object || len(v.Members) != 2 || v.Members[0].Key != "file" || v.Members[0].Value.Str != name {
		return PyFile{}, fmt.Errorf("not the line of %s", name)
	}
	body := v.Members[1]
	switch {
	case body.Key == "error" && body.Value.Kind == strictjson.String:
		return PyFile{Failed: capChars(body.Value.Str, 300)}, nil
	case body.Key != "symbols" || body.Value.Kind != strictjson.Array || len(body.Value.Items) > maxPySymbols:
		return PyFile{}, errors.New("neither symbols nor an error")
	}
	var f PyFile
	for _, s := range body.Value.Items {
		if s.Kind != strictjson.Array || len(s.Items) != 4 {
			return PyFile{}, errors.New("a symbol is not [name, type, line, docstring]")
		}
		nm, typ, ln, doc := s.Items[0], s.Items[1], s.Items[2], s.Items[3]
		if nm.Kind != strictjson.String || typ.Kind != strictjson.String || ln.Kind != strictjson.Number || doc.Kind != strictjson.String {
			return PyFile{}, errors.New("a symbol is not [name, type, line, docstring]")
		}
		line, err := strconv.Atoi(ln.Str)
		if err != nil || line < 1 {
			return PyFile{}, fmt.Errorf("line %q", ln.Str)
		}
		if !slices.Contains(pySymbolTypes, typ.Str) || (typ.Str == "module") != (nm.Str == "") || utf8.RuneCountInString(nm.Str) > 256 {
			return PyFile{}, fmt.Errorf("symbol %q of type %q", nm.Str, typ.Str)
		}
		if strings.TrimSpace(doc.Str) == "" {
			continue
		}
		f.Symbols = append(f.Symbols, PySymbol{Name: nm.Str, Type: typ.Str, Line: line, Docstring: capChars(doc.Str, knowledge.CapDocstring)})
	}
	return f, nil
}

// capChars is s cut to n characters.
func capChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

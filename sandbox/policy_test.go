package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/toolresults"
)

func TestToolResult(t *testing.T) {
	base := Result{Python: "3.13.5", Timeout: 60 * time.Second, Elapsed: 1234 * time.Millisecond}
	with := func(f func(r *Result)) Result {
		r := base
		f(&r)
		return r
	}
	tests := []struct {
		name    string
		res     Result
		lim     ResultLimits
		status  string
		stderr  string // exact
		summary string // exact
	}{
		{
			name: "ok", status: "ok",
			res: with(func(r *Result) {
				r.Status, r.Stdout, r.StdoutTotal = StatusOK, "a\nb\n", 4
				r.Artifacts = []string{"a.csv", "plots/b.png"}
			}),
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). Ran without an error. stdout: 4 characters. stderr: empty. Saved 2 files: a.csv, plots/b.png.",
		},
		{
			name: "exception", status: "error",
			res: with(func(r *Result) {
				r.Status, r.ExitCode, r.Stderr, r.StderrTotal = StatusError, 1, "Traceback ...\nZeroDivisionError: division by zero\n", 49
				r.Exception = "ZeroDivisionError: division by zero"
				r.Artifacts = []string{"x"}
			}),
			stderr:  "Traceback ...\nZeroDivisionError: division by zero\n",
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). The code raised ZeroDivisionError: division by zero. The traceback is at the end of stderr. stdout: empty. stderr: 49 characters. Saved 1 file: x.",
		},
		{
			name: "exit status", status: "error",
			res:     with(func(r *Result) { r.Status, r.ExitCode = StatusError, 3 }),
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). The code exited with status 3. stdout: empty. stderr: empty.",
		},
		{
			name: "prelude", status: "error",
			res: with(func(r *Result) {
				r.Status, r.ExitCode, r.PreludeFailed, r.Exception = StatusError, 1, true, "NameError: name 'x' is not defined"
			}),
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). Not run: the community's prelude failed with NameError: name 'x' is not defined. stdout: empty. stderr: empty.",
		},
		{
			name: "timeout", status: "timeout",
			res: with(func(r *Result) {
				r.Status, r.Stdout, r.StdoutTotal, r.Stderr, r.StderrTotal = StatusTimeout, "started\n", 8, "warning", 7
			}),
			stderr:  "warning\n[runtime] the code ran longer than 60s and was stopped.",
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). Stopped: the code ran longer than 60s, the limit for one run. What it printed before that is kept. stdout: 8 characters. stderr: 7 characters.",
		},
		{
			name: "fractional timeout", status: "timeout",
			res:     with(func(r *Result) { r.Status, r.Timeout = StatusTimeout, 1500*time.Millisecond }),
			stderr:  "[runtime] the code ran longer than 1.5s and was stopped.",
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). Stopped: the code ran longer than 1.5s, the limit for one run. What it printed before that is kept. stdout: empty. stderr: empty.",
		},
		{
			name: "oom", status: "oom",
			res:     with(func(r *Result) { r.Status, r.Stderr = StatusOOM, "MemoryError\n" }),
			stderr:  "MemoryError\n" + oomText,
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). Stopped: the code ran out of memory. What it printed before that is kept. stdout: empty. stderr: empty.",
		},
		{
			name: "clipped", status: "ok", lim: ResultLimits{StdoutChars: 300, StderrChars: 100_000},
			res: with(func(r *Result) {
				r.Status, r.Stdout, r.StdoutTotal, r.StdoutTruncated = StatusOK, strings.Repeat("é", 1000), 5000, true
			}),
			summary: "Ran on the server, in its Python 3.13 (not in the reader's browser). Ran without an error. stdout: 5000 characters, clipped to 300 (the middle is left out). stderr: empty.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ToolResult(tc.res, "call_1", tc.lim)
			if got.CallID != "call_1" || got.Status != tc.status || got.ElapsedMS != 1234 {
				t.Errorf("call_id %q status %q elapsed %d", got.CallID, got.Status, got.ElapsedMS)
			}
			if got.Stderr != tc.stderr {
				t.Errorf("stderr = %q, want %q", got.Stderr, tc.stderr)
			}
			if got.Summary != tc.summary {
				t.Errorf("summary = %q\nwant      %q", got.Summary, tc.summary)
			}
			if strings.Join(got.Artifacts, ",") != strings.Join(tc.res.Artifacts, ",") {
				t.Errorf("artifacts = %q", got.Artifacts)
			}
			// Whatever it holds, the result passes the server's own check.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := toolresults.Decode(b); err != nil {
				t.Errorf("the server refuses the result: %v\n%s", err, b)
			}
		})
	}
	clipped := ToolResult(tests[len(tests)-1].res, "c", ResultLimits{StdoutChars: 300})
	if n := utf8.RuneCountInString(clipped.Stdout); n > 300 || n < 290 || !strings.HasPrefix(clipped.Stdout, strings.Repeat("é", 180)+"\n... 733 characters omitted ...\n") {
		t.Errorf("clipped stdout: %d characters: %q", n, clipped.Stdout)
	}
	// Caps above the server's are the server's.
	big := ToolResult(Result{Status: StatusOK, Stdout: strings.Repeat("x", 20000)}, "c", ResultLimits{StdoutChars: 1 << 20})
	if n := utf8.RuneCountInString(big.Stdout); n > 16384 || n < 16380 {
		t.Errorf("stdout over the server cap: %d characters", n)
	}
}

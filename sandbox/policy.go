package sandbox

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/toolresults"
)

// ResultLimits are a community's caps on the text of a result (runtime.python.limits
// stdout_chars and stderr_chars). Zero, or more than the server accepts, means the server's
// maximum (limits.MaxStdoutChars, limits.MaxStderrChars).
type ResultLimits struct {
	StdoutChars int
	StderrChars int
}

// Runtime texts added to stderr, in the widget's words where the widget has them (api.md §6.3).
const (
	oomText = "[runtime] the Python runtime ran out of memory and was stopped. Try working on less data at a time."
)

func timeoutText(d string) string {
	return "[runtime] the code ran longer than " + d + "s and was stopped."
}

// ToolResult turns a run into the ClientToolResult the model reads, as a browser run would
// give it (api.md §6.3): the status as it is; stdout and stderr clipped head-and-tail with the
// widget's "\n... N characters omitted ...\n" marker, stderr ending with a "[runtime] ..." line
// for a timeout or running out of memory; a short summary of facts; the saved files' names,
// sorted; the elapsed time. The summary is deterministic: the same run gives the same words
// (no timings), so the model's prompt caches well. callID is used as given.
func ToolResult(res Result, callID string, lim ResultLimits) toolresults.Result {
	outCap := capOr(lim.StdoutChars, int(limits.MaxStdoutChars))
	errCap := capOr(lim.StderrChars, int(limits.MaxStderrChars))
	stderr := res.Stderr
	seconds := strconv.FormatFloat(res.Timeout.Seconds(), 'f', -1, 64)
	switch res.Status {
	case StatusTimeout:
		stderr = appendLine(stderr, timeoutText(seconds))
	case StatusOOM:
		stderr = appendLine(stderr, oomText)
	}
	return toolresults.Result{
		CallID:    callID,
		Status:    string(res.Status),
		Stdout:    clipString(res.Stdout, outCap),
		Stderr:    clipString(stderr, errCap),
		Summary:   clipString(summary(res, seconds, outCap, errCap), int(limits.MaxSummaryChars)),
		Artifacts: res.Artifacts,
		ElapsedMS: max(res.Elapsed.Milliseconds(), 0),
	}
}

// summary states what happened in a few sentences, deterministically.
func summary(res Result, seconds string, outCap, errCap int) string {
	version := "3"
	if major, rest, ok := strings.Cut(res.Python, "."); ok {
		minor, _, _ := strings.Cut(rest, ".")
		version = major + "." + minor
	}
	parts := []string{"Ran on the server, in its Python " + version + " (not in the reader's browser)."}
	if len(res.Packages) > 0 {
		parts = append(parts, "It has "+strings.Join(res.Packages, ", ")+" beyond the standard library; "+
			strings.Join(BrowserOnly[:len(BrowserOnly)-1], ", ")+" and "+BrowserOnly[len(BrowserOnly)-1]+" need the browser.")
	}
	exc := clipRunes(res.Exception, 300)
	switch {
	case res.Status == StatusOK:
		parts = append(parts, "Ran without an error.")
	case res.Status == StatusTimeout:
		parts = append(parts, "Stopped: the code ran longer than "+seconds+"s, the limit for one run. What it printed before that is kept.")
	case res.Status == StatusOOM:
		parts = append(parts, "Stopped: the code ran out of memory. What it printed before that is kept.")
	case res.PreludeFailed && exc != "":
		parts = append(parts, "Not run: the community's prelude failed with "+exc+".")
	case res.PreludeFailed:
		parts = append(parts, "Not run: the community's prelude failed.")
	case exc != "":
		parts = append(parts, "The code raised "+exc+". The traceback is at the end of stderr.")
	case res.ExitCode != 0 && res.ExitCode != 1:
		parts = append(parts, fmt.Sprintf("The code exited with status %d.", res.ExitCode))
	default:
		parts = append(parts, "The code failed; stderr says how.")
	}
	parts = append(parts, countText("stdout", res.StdoutTotal, outCap), countText("stderr", res.StderrTotal, errCap))
	switch n := len(res.Artifacts); {
	case n == 1:
		parts = append(parts, "Saved 1 file: "+res.Artifacts[0]+".")
	case n > 1:
		parts = append(parts, fmt.Sprintf("Saved %d files: %s.", n, strings.Join(res.Artifacts, ", ")))
	}
	return strings.Join(parts, " ")
}

func countText(name string, total int64, limit int) string {
	switch {
	case total == 0:
		return name + ": empty."
	case total <= int64(limit):
		return fmt.Sprintf("%s: %d characters.", name, total)
	}
	return fmt.Sprintf("%s: %d characters, clipped to %d (the middle is left out).", name, total, limit)
}

func capOr(v, max int) int {
	if v <= 0 || v > max {
		return max
	}
	return v
}

func appendLine(s, line string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + line
}

// clipString clips s to at most limit characters the way the widget clips a stream.
func clipString(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	w := newClipWriter(limit)
	_, _ = w.Write([]byte(s))
	return w.String()
}

// clipRunes cuts s to at most n characters, marking a cut with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	wsys "github.com/tetratelabs/wazero/sys"

	"github.com/osc-assistant/assistant/limits"
)

// Status is how a run ended. The values are the ClientToolResult statuses.
type Status string

// The statuses Run reports.
const (
	// StatusOK: the program finished with exit code 0.
	StatusOK Status = "ok"
	// StatusError: the program exited non-zero (an uncaught exception, sys.exit(n)) or
	// crashed the interpreter.
	StatusError Status = "error"
	// StatusTimeout: the deadline passed and the program was stopped.
	StatusTimeout Status = "timeout"
	// StatusOOM: the program ran out of memory (an uncaught MemoryError, or a crash with its
	// memory at the cap).
	StatusOOM Status = "oom"
)

// Defaults for a Request's zero scratch fields.
const (
	DefaultScratchBytes = 64 << 20
	DefaultScratchFiles = 1024
)

// Request is one run of untrusted Python.
type Request struct {
	// Source is run as the __main__ module, named "<code>" in tracebacks. It gets an empty
	// stdin and starts in /tmp, the run's own in-memory scratch directory.
	Source string
	// Timeout is the run's deadline; zero means limits.Runtime.ExecSeconds.Default (120 s),
	// the community default. A ctx deadline that comes first is the caller's, and ends the
	// run with ctx's error instead of StatusTimeout.
	Timeout time.Duration
	// MemoryBytes caps the run's linear memory; zero, or more than the engine's cap, means
	// the engine's cap. Values under 32 MiB are raised to 32 MiB, which the interpreter needs.
	MemoryBytes int64
	// StdoutChars and StderrChars cap the captured text in characters (code points); zero
	// means limits.MaxStdoutChars and limits.MaxStderrChars.
	StdoutChars int
	StderrChars int
	// ScratchBytes and ScratchFiles cap the /tmp scratch directory; zero means
	// DefaultScratchBytes and DefaultScratchFiles.
	ScratchBytes int64
	ScratchFiles int
}

// Result is how a run ended and what it printed.
type Result struct {
	Status Status
	// ExitCode is the interpreter's exit code (0 for ok; meaningless for timeout).
	ExitCode int
	// Stdout and Stderr are the captured text, clipped to the request's caps keeping the first
	// 3/5 and the end around a "\n... N characters omitted ...\n" marker.
	Stdout string
	Stderr string
	// StdoutTruncated and StderrTruncated report that the text was clipped.
	StdoutTruncated bool
	StderrTruncated bool
	// Elapsed is the wall time of the run, instance creation included.
	Elapsed time.Duration
	// MemoryPeak is the largest size the run's linear memory reached, in bytes.
	MemoryPeak int64
}

// exitOOM is the exit code the run driver uses for an uncaught MemoryError.
const exitOOM = 0x6d

// runDriver runs the program on stdin as __main__ in a fresh module, so a traceback shows
// only the program's frames and the program's lines, and an uncaught MemoryError is told
// apart from other failures by its exit code. SystemExit passes through unchanged.
const runDriver = `import sys
def _run():
    src = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    try:
        import os
        os.chdir("/tmp")
    except OSError:
        pass
    main = type(sys)("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv[:] = ["<code>"]
    try:
        exec(compile(src, "<code>", "exec", dont_inherit=True), main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:
        if isinstance(e, MemoryError):
            # Free what the program held, so the traceback can be printed.
            main.__dict__.clear()
            tb = e.__traceback__
            while tb is not None:
                try:
                    tb.tb_frame.clear()
                except RuntimeError:
                    pass
                tb = tb.tb_next
        try:
            import linecache, traceback
            linecache.cache["<code>"] = (len(src), None, src.splitlines(True), "<code>")
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != "<code>":
                tb = tb.tb_next
            traceback.print_exception(type(e), e, tb)
        except MemoryError:
            sys.stderr.write(type(e).__name__ + ": " + str(e) + "\n")
        return 0x6d if isinstance(e, MemoryError) else 1
    return 0
sys.exit(_run())
`

// Run runs req.Source in a fresh instance and reports how it ended. The error is non-nil only
// when the run could not be judged: ctx ended first (its error is returned), or the engine
// failed. A program that fails, overruns its deadline or runs out of memory is a Result.
func (e *Engine) Run(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = time.Duration(limits.Runtime.ExecSeconds.Default) * time.Second
	}
	mem := uint64(max(req.MemoryBytes, 0))
	if mem != 0 && mem < minMemoryBytes {
		mem = minMemoryBytes
	}
	stdout := newClipWriter(orDefault(req.StdoutChars, int(limits.MaxStdoutChars)))
	stderr := newClipWriter(orDefault(req.StderrChars, int(limits.MaxStderrChars)))
	scratch := newScratchFS(int64(orDefault(int(req.ScratchBytes), DefaultScratchBytes)),
		orDefault(req.ScratchFiles, DefaultScratchFiles))

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	o := e.run(runCtx, instance{
		args:     []string{"python", "-c", runDriver},
		stdin:    []byte(req.Source),
		stdout:   stdout,
		stderr:   stderr,
		memLimit: mem,
		scratch:  scratch,
	})
	res := Result{Elapsed: time.Since(start), MemoryPeak: int64(o.memPeak), ExitCode: int(o.exitCode)}
	if err := ctx.Err(); err != nil {
		return Result{}, err // the caller's deadline or cancellation, not the program's
	}

	var exit *wsys.ExitError
	switch {
	case o.err == nil:
		res.Status = StatusOK
	case errors.Is(o.err, context.DeadlineExceeded):
		res.Status = StatusTimeout
		res.ExitCode = 0
	case errors.As(o.err, &exit) && exit.ExitCode() == exitOOM:
		res.Status = StatusOOM
	case errors.As(o.err, &exit):
		res.Status = StatusError
	default:
		// A trap: the interpreter crashed (a C stack overflow, or an allocation failure it
		// could not turn into MemoryError). Say so after whatever it printed.
		res.Status = StatusError
		if o.memPeak+oomMargin >= o.memLimit {
			res.Status = StatusOOM
		}
		crash := firstLines("", o.err)
		e.log.Warn("python runtime crashed", "status", res.Status, "error", crash)
		fmt.Fprintf(stderr, "\n[runtime] the Python runtime crashed: %s\n", crash)
	}
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	return res, nil
}

// oomMargin: a trap with the memory this close to its cap counts as running out of memory.
const oomMargin = 4 << 20

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

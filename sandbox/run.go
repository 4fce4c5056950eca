package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// crashed the interpreter, or the run ended before the program ran (PreludeFailed).
	StatusError Status = "error"
	// StatusTimeout: the deadline passed and the program was stopped.
	StatusTimeout Status = "timeout"
	// StatusOOM: the program ran out of memory: it failed (an uncaught MemoryError, or a
	// crash) after the host refused to grow its memory past the cap.
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

	// The community's policy (osa.go). Prelude runs before Source in the same __main__
	// namespace, named "<prelude>" in tracebacks; its output is discarded, and if it raises
	// the program does not run (Result.PreludeFailed).
	Prelude string
	// FetchAllow is the serving deployment's runtime.python.fetch_allow: what osa.fetch may
	// reach (CheckURL). Empty means no fetch at all.
	FetchAllow []string
	// Wheels are the overlay wheels, importable read-only. Available names the packages the
	// runtime has besides the standard library and osa (e.g. "nemar_tools"), for the message
	// of an import that fails.
	Wheels    []Wheel
	Available []string
	// Data are the reader's attached files, by name, read-only at /data/<name> (from these
	// bytes: no host path is mounted). Names are flat ([A-Za-z0-9._-], not "." or ".."); the
	// run is refused otherwise.
	Data map[string][]byte
	// Session, when set, names the live session whose interpreter runs this request (a worker
	// of a Pool keeps one per session; see Session). SessionRestarted tells a worker that sees
	// the session for the first time that an interpreter of it ended elsewhere (its worker
	// died), so its first run says so.
	Session          string
	SessionRestarted bool
	// Interpreter, for a session's run, is the interpreter that held the session's state after
	// its last run, as that run's Result.Interpreter said (the caller keeps it in the session
	// store, so it holds across replicas); "" when none is known. A session whose interpreter
	// is not that one (it ended, or it runs on another replica) starts a new one, and the run
	// says so (MsgRestarted): the session's names are in the other one.
	Interpreter string
	// AllowLoopback lets osa.fetch reach loopback addresses, for tests against a local server.
	// Private, link-local and reserved addresses are refused regardless.
	AllowLoopback bool
	// FetchTimeout bounds one osa.fetch and FetchMaxBytes its response body; zero means
	// DefaultFetchTimeout and DefaultFetchMaxBytes. A fetch never outlives the run either.
	FetchTimeout  time.Duration
	FetchMaxBytes int64
}

// Result is how a run ended and what it printed.
type Result struct {
	Status Status
	// ExitCode is the interpreter's exit code (0 for ok, 1 for an uncaught exception;
	// meaningless for timeout). It is the program's to choose, so it is reported, never read
	// as a verdict: sys.exit(109) is an error with exit code 109.
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

	// StdoutTotal and StderrTotal count the characters written before clipping.
	StdoutTotal int64
	StderrTotal int64
	// Timeout is the deadline the run had; Python is the engine's CPython version, and
	// Packages the import names of what it holds beyond the standard library (packages.json).
	Timeout  time.Duration
	Python   string
	Packages []string
	// Exception is "Type: message" of the uncaught exception that ended the run, or "".
	Exception string
	// PreludeFailed: the run ended during the prelude (it raised or exited), so Source did not
	// run. Status is error, or oom when the prelude ran out of memory.
	PreludeFailed bool
	// Artifacts names the files the run saved with osa.save_script and osa.save_artifact,
	// sorted, and Files holds their bytes by name (nil when none). They are kept whatever the
	// status.
	Artifacts []string
	Files     map[string][]byte
	// Interpreter, for a session's run, names the interpreter that holds the session's state
	// after the run (an id drawn when it started); the caller records it for the session's next
	// run (Request.Interpreter). It is set when the run ended the interpreter too (a timeout),
	// so the next run says it restarted wherever it runs, and NoInterpreter when no state is
	// left to remember (the prelude failed, so the next interpreter starts clean, as at first,
	// and one elsewhere with older names is replaced).
	Interpreter string
}

// How a run's verdict is reached. The program runs in the same interpreter as the run driver,
// so anything the driver can say from Python the program can say too: an exit code, a line on
// stderr, a request to /dev/osa. Run therefore takes the verdicts that matter from what the
// host saw itself, never from a value the guest chose, and the exit code is only data:
//
//   - Out of memory: the run failed and the allocator refused a grow past the run's cap
//     (allocator.hitCap), unless it ended with an exception other than MemoryError. Python code
//     can set that record only by really asking for more memory than the cap; sys.exit(109) or
//     any other exit code sets nothing.
//   - The prelude failed: the run ended while the host's phase was still the prelude's. The
//     driver tells the host through /dev/osa when the prelude starts and when the program starts
//     (osaHost.advance), before the program's first line runs, and the host accepts each phase
//     once and only forward; so once the program runs the phase is the program's for good, and
//     nothing it writes to the device can move it back. The driver runs the program only after
//     the host accepted its phase.
//
// Timeouts are the host's own context, and crashes (traps) are wazero's.

// runDriver runs the community's prelude and then the program, both read from stdin (see
// driverInput), in one fresh __main__ module, so a traceback shows only the program's frames
// and lines. Both may use top-level await: they are compiled with
// PyCF_ALLOW_TOP_LEVEL_AWAIT (0x2000) and a coroutine is stepped by hand, moving onto an
// asyncio event loop only if asyncio is imported (importing it costs more than most runs).
// Before the prelude it puts /opt/osa/python (the osa module) and every overlay wheel on
// sys.path, patches asyncio on import to work without socketpair, and installs a last finder
// whose ImportError names what is available. It announces each phase to the host (_phase)
// before running it, and does not run a phase the host did not accept. The prelude's own output
// is discarded; if it raises, the program does not run. An uncaught exception exits 1; the
// exception that ended the run is reported to the host through /dev/osa (Result.Exception).
// SystemExit passes through.
const runDriver = `import sys
_driver_globals = globals()
_loop = None
_driving = False
class _AsyncioHook:
    # Makes asyncio work on WASI when it is imported: its selector loop wants a self-pipe made
    # with socket.socketpair, which WASI lacks, and nothing here wakes a loop from another
    # thread or a signal, so the pipe is left out. While the driver steps a coroutine by hand,
    # the new loop also becomes the running loop, so asyncio calls made inside it work.
    def find_spec(self, name, path=None, target=None):
        if name != "asyncio":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                spec.loader = _AsyncioLoader(spec.loader)
                return spec
        return None
class _AsyncioLoader:
    def __init__(self, loader):
        self._loader = loader
    def __getattr__(self, name):
        return getattr(self._loader, name)
    def create_module(self, spec):
        return self._loader.create_module(spec)
    def exec_module(self, module):
        global _loop
        self._loader.exec_module(module)
        class WASIEventLoop(module.SelectorEventLoop):
            def _make_self_pipe(self):
                pass
            def _close_self_pipe(self):
                pass
            def _write_to_self(self):
                pass
        class WASIEventLoopPolicy(module.DefaultEventLoopPolicy):
            _loop_factory = WASIEventLoop
        module.SelectorEventLoop = WASIEventLoop
        module.set_event_loop_policy(WASIEventLoopPolicy())
        if _driving:
            _loop = WASIEventLoop()
            module.events._set_running_loop(_loop)
class _Unavailable:
    # Last on sys.meta_path: a top-level module that no other finder found is not in this
    # runtime, and an import statement says what is. importlib.util.find_spec still gets None.
    def find_spec(self, name, path=None, target=None):
        if path is not None or "." in name or sys._getframe(2).f_code.co_name != "_find_and_load_unlocked":
            return None
        try:
            with open("/opt/osa/available", "rb") as f:
                have = [x for x in f.read().decode("utf-8", "replace").split("\0") if x]
        except OSError:
            have = []
        have = ", ".join(["the standard library (without sockets, threads, subprocesses, ssl or ctypes)", "osa"] + sorted(set(have)))
        raise ModuleNotFoundError(f"No module named {name!r}: {name} is not available in the server's Python, and nothing can be installed; available: {have}. numpy, pandas, scipy and matplotlib need the reader's browser.", name=name)
class _Resume:
    # The rest of a coroutine the driver began stepping by hand, as an awaitable for a Task.
    def __init__(self, coro, step):
        self.coro, self.step = coro, step
    def __await__(self):
        coro, step = self.coro, self.step
        while True:
            try:
                sent = yield step
            except BaseException as e:
                try:
                    step = coro.throw(e)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    step = coro.send(sent)
                except StopIteration as stop:
                    return stop.value
def _on_loop(aw):
    global _loop
    import asyncio
    if _loop is None:
        _loop = asyncio.new_event_loop()
    async def main():
        return await aw
    return _loop.run_until_complete(main())
def _drive(coro):
    # Runs a coroutine from top-level await. Most never wait for anything (osa.fetch answers
    # at once), so it is stepped by hand and asyncio is not imported; once asyncio is, the
    # rest runs on its event loop (asyncio.run needs socketpair, which WASI lacks).
    global _driving
    if _loop is not None or "asyncio" in sys.modules:
        return _on_loop(coro)
    _driving = True
    try:
        try:
            step = coro.send(None)
        except StopIteration as stop:
            return stop.value
        while _loop is None:
            try:
                if step is None:
                    step = coro.send(None)
                else:
                    step = coro.throw(RuntimeError(f"cannot wait for {step!r} here: await coroutines and asyncio objects"))
            except StopIteration as stop:
                return stop.value
    finally:
        _driving = False
        if _loop is not None:
            sys.modules["asyncio"].events._set_running_loop(None)
    return _on_loop(_Resume(coro, step))
def _exec(src, filename, g):
    code = compile(src, filename, "exec", flags=0x2000, dont_inherit=True)
    if code.co_flags & 0x80:
        _drive(eval(code, g))
    else:
        exec(code, g)
def _fail(e, main, sources, filename):
    # Prints the traceback from the first frame of filename on; returns the exit code.
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
        for name, src in sources.items():
            linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != filename:
            tb = tb.tb_next
        t = tb
        while t is not None:  # leave out the driver's frames: its import finder, its stepping
            n = t.tb_next
            while n is not None and n.tb_frame.f_globals is _driver_globals:
                n = n.tb_next
            t.tb_next = t = n
        traceback.print_exception(type(e), e, tb)
    except MemoryError:
        sys.stderr.write(type(e).__name__ + ": " + str(e) + "\n")
    try:
        t = type(e)
        name = t.__qualname__ if t.__module__ in ("builtins", "__main__") else t.__module__ + "." + t.__qualname__
        text = str(e)
        import os
        fd = os.open("/dev/osa/call", os.O_RDWR)
        try:
            os.write(fd, b'{"op":"report"}\n' + (name + ": " + text if text else name).encode("utf-8", "replace")[:1000])
            os.read(fd, 4096)
        finally:
            os.close(fd)
    except BaseException:
        pass
    return 1
def _phase(name):
    # Tells the host that the named phase starts now; False when it did not accept it.
    try:
        import os
        fd = os.open("/dev/osa/call", os.O_RDWR)
        try:
            os.write(fd, b'{"op":"phase","phase":"' + name + b'"}\n')
            return os.read(fd, 4096).startswith(b'{"ok":true}')
        finally:
            os.close(fd)
    except Exception:
        return False
_installed = False
def _install():
    # The policy's paths and import hooks, once per interpreter (a snapshot's warm-up may have
    # done it already).
    global _installed
    if _installed:
        return
    _installed = True
    import os
    try:
        os.chdir("/tmp")
    except OSError:
        pass
    sys.path.insert(0, "/opt/osa/python")
    try:
        sys.path.extend("/opt/osa/wheels/" + w for w in sorted(os.listdir("/opt/osa/wheels")))
    except OSError:
        pass
    sys.meta_path.insert(0, _AsyncioHook())
    sys.meta_path.append(_Unavailable())
def _setup():
    _install()
    main = type(sys)("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv[:] = ["<code>"]
    return main
def _run():
    data = sys.stdin.buffer.read()
    n, _, data = data.partition(b"\n")
    n = int(n)
    prelude = data[:n].decode("utf-8", "surrogateescape")
    src = data[n:].decode("utf-8", "surrogateescape")
    return _one(_setup(), prelude, src)
def _serve():
    # A live session: requests ("<prelude bytes> <code bytes>\n", the prelude, the code) until
    # stdin ends, all in one __main__, so names, imports and /tmp last from run to run. The
    # prelude is sent with the first request only. After each run the host is told its exit
    # code; SystemExit ends the run, not the interpreter.
    main = _setup()
    rd = sys.stdin.buffer
    while True:
        hdr = rd.readline()
        if not hdr:
            return 0
        np, nc = hdr.split()
        prelude = rd.read(int(np)).decode("utf-8", "surrogateescape")
        src = rd.read(int(nc)).decode("utf-8", "surrogateescape")
        try:
            code = _one(main, prelude, src)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        if not _done(code):
            return 1
def _done(code):
    # Tells the host that this run of a live session ended with code.
    try:
        import os
        fd = os.open("/dev/osa/call", os.O_RDWR)
        try:
            os.write(fd, b'{"op":"done","code":' + str(int(code) & 0xff).encode() + b'}\n')
            return os.read(fd, 4096).startswith(b'{"ok":true}')
        finally:
            os.close(fd)
    except Exception:
        return False
def _one(main, prelude, src):
    sources = {"<prelude>": prelude, "<code>": src}
    if prelude:
        if not _phase(b"prelude"):
            sys.stderr.write("[runtime] the code could not be run: the runtime could not start the prelude.\n")
            return 1
        import io
        out, err = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = io.StringIO()
        try:
            _exec(prelude, "<prelude>", main.__dict__)
        except BaseException as e:
            sys.stdout, sys.stderr = out, err
            sys.stderr.write("[runtime] the code could not be run: the community's prelude failed.\n")
            return _fail(e, main, sources, "<prelude>")
        finally:
            sys.stdout, sys.stderr = out, err
    if not _phase(b"code"):
        # Still the prelude's phase, when there is one, so the host counts this as its failure:
        # the prelude left the device unusable (every call slot open).
        sys.stderr.write("[runtime] the code could not be run: " + ("the community's prelude failed.\n" if prelude else "the runtime could not start it.\n"))
        return 1
    try:
        _exec(src, "<code>", main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:
        return _fail(e, main, sources, "<code>")
    return 0
sys.exit(_run())
`

// sessionDriver is runDriver serving a live session's runs (_serve) instead of one.
var sessionDriver = func() string {
	d := strings.Replace(runDriver, "\nsys.exit(_run())\n", "\nsys.exit(_serve())\n", 1)
	if d == runDriver {
		panic("sandbox: the run driver no longer ends with sys.exit(_run())")
	}
	return d
}()

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
	mem := requestMemory(req)
	stdout := newClipWriter(orDefault(req.StdoutChars, int(limits.MaxStdoutChars)))
	stderr := newClipWriter(orDefault(req.StderrChars, int(limits.MaxStderrChars)))
	scratch := requestScratch(req)

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	policy, err := e.newRunPolicy(ctx, runCtx, req)
	if err != nil {
		return Result{}, err
	}
	defer policy.close()
	start := time.Now()
	o := e.run(runCtx, instance{
		args:     policy.args,
		stdin:    driverInput(req),
		stdout:   stdout,
		stderr:   stderr,
		memLimit: mem,
		scratch:  scratch,
		mounts:   policy.mounts,
	})
	res := Result{Elapsed: time.Since(start), MemoryPeak: int64(o.memPeak), ExitCode: int(o.exitCode),
		Timeout: timeout, Python: e.python, Packages: e.packageImports()}
	if err := ctx.Err(); err != nil {
		return Result{}, err // the caller's deadline or cancellation, not the program's
	}

	// The verdict comes from the host's own records (see "How a run's verdict is reached"):
	// the deadline, the allocator's refusals, the phase the driver reached. The exit code is
	// only reported.
	phase := policy.host.phaseNow()
	var exit *wsys.ExitError
	switch {
	case o.err == nil && phase == phaseCode:
		res.Status = StatusOK
	case o.err == nil:
		res.Status = StatusError // the interpreter exited 0 before the program ran
	case errors.Is(o.err, context.DeadlineExceeded):
		res.Status = StatusTimeout
		res.ExitCode = 0
	case errors.As(o.err, &exit):
		res.Status = StatusError
		if o.memCap && memoryError(policy.host.reported()) {
			res.Status = StatusOOM
		}
	default:
		// A trap: the interpreter crashed (a C stack overflow, or an allocation failure it
		// could not turn into MemoryError). Say so after whatever it printed.
		res.Status = StatusError
		if o.memCap || o.memPeak+oomMargin >= o.memLimit {
			res.Status = StatusOOM
		}
		crash := firstLines("", o.err)
		e.log.Warn("python runtime crashed", "status", res.Status, "error", crash)
		fmt.Fprintf(stderr, "\n[runtime] the Python runtime crashed: %s\n", crash)
	}
	res.PreludeFailed = phase == phasePrelude && res.Status != StatusTimeout
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	res.StdoutTotal, res.StderrTotal = stdout.chars, stderr.chars
	res.Exception = policy.host.reported()
	res.Artifacts, res.Files = policy.host.files()
	return res, nil
}

// oomMargin: a trap with the memory this close to its cap counts as running out of memory.
const oomMargin = 4 << 20

// memoryError reports whether exc, the exception the driver reported, is consistent with a
// run that ran out of memory: a MemoryError, or nothing (the report itself may have failed for
// want of memory, or the program exited after catching one). It only narrows the allocator's
// record: a program that caught a MemoryError and then failed otherwise is an error.
func memoryError(exc string) bool {
	return exc == "" || exc == "MemoryError" || strings.HasPrefix(exc, "MemoryError:")
}

// requestMemory is req's memory cap in bytes: 0 for the engine's, raised to minMemoryBytes.
func requestMemory(req Request) uint64 {
	mem := uint64(max(req.MemoryBytes, 0))
	if mem != 0 && mem < minMemoryBytes {
		mem = minMemoryBytes
	}
	return mem
}

// requestScratch is a fresh /tmp with req's caps.
func requestScratch(req Request) *scratchFS {
	return newScratchFS(int64(orDefault(int(req.ScratchBytes), DefaultScratchBytes)), orDefault(req.ScratchFiles, DefaultScratchFiles))
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tetratelabs/wazero"
	wsys "github.com/tetratelabs/wazero/sys"
)

// Mode is how an Engine enforces a run's deadline. The two modes run the same python.wasm and
// give the same results; they differ in speed and in what they can stop.
type Mode int

const (
	// ModeStrict uses wazero's close-on-context-done: compiled code checks the context at every
	// wasm loop header, so every loop stops at the deadline, including loops running inside C
	// (sum(range(10**13)), a catastrophic regex). CPython's eval loop hits such a check on every
	// bytecode, which makes CPU-bound Python about 3.2× slower than ModeFast. It is the default, and the
	// right mode in a process that must never lose control of a run (the server's in-process
	// compile checks and runs, `assistant run --strict`).
	ModeStrict Mode = iota
	// ModeFast enforces the deadline cooperatively, without a per-bytecode check: the engine's eval
	// loop (patched by scripts/build_python_wasi.sh with -DPy_WASI_PERIODIC_YIELD) calls WASI
	// sched_yield every 10000 eval-breaker checks, and the host's yield, sleep and stdout/stderr
	// hooks end the instance once the run's context is done. Pure-Python loops, sleeps and
	// printing loops stop at the deadline; a loop running inside C does not stop until it
	// returns to Python, so use this mode only in a process that can be killed from outside:
	// the `assistant sandbox-worker` processes of a Pool. New refuses it for an engine built
	// without the yield patch.
	ModeFast
)

// String returns "strict" or "fast".
func (m Mode) String() string {
	switch m {
	case ModeStrict:
		return "strict"
	case ModeFast:
		return "fast"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "strict" or "fast".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "strict":
		return ModeStrict, nil
	case "fast":
		return ModeFast, nil
	}
	return 0, fmt.Errorf("sandbox: unknown mode %q: want strict or fast", s)
}

// withDeadlineHooks adds the host hooks that enforce ctx in cfg: in strict mode only a sleep
// that wakes when ctx is done (wazero's own checks stop the guest when it resumes); in fast
// mode also the yield and stdout/stderr hooks, each of which ends the instance by panicking with
// the *sys.ExitError wazero itself uses for a done context (so errors.Is(err,
// context.DeadlineExceeded) still classifies the run). wazero recovers a host function's
// *sys.ExitError panic and returns it from InstantiateModule unwrapped, as it does for
// proc_exit.
func withDeadlineHooks(ctx context.Context, mode Mode, cfg wazero.ModuleConfig, stdout, stderr io.Writer) wazero.ModuleConfig {
	if mode != ModeFast {
		return cfg.WithStdout(stdout).WithStderr(stderr).WithNanosleep(sleeper(ctx))
	}
	check := func() {
		if err := ctx.Err(); err != nil {
			panic(exitFor(err))
		}
	}
	sleep := sleeper(ctx)
	return cfg.
		WithOsyield(check).
		WithNanosleep(func(ns int64) {
			check()
			sleep(ns)
			check()
		}).
		WithStdout(deadlineWriter{stdout, check}).
		WithStderr(deadlineWriter{stderr, check})
}

// exitFor is the exit error wazero's close-on-context-done gives for a context ended by err.
func exitFor(err error) *wsys.ExitError {
	if errors.Is(err, context.DeadlineExceeded) {
		return wsys.NewExitError(wsys.ExitCodeDeadlineExceeded)
	}
	return wsys.NewExitError(wsys.ExitCodeContextCanceled)
}

// deadlineWriter checks the deadline before every write, so a program that prints in a loop
// (through C: print, sys.stdout.write in a comprehension) stops at its deadline.
type deadlineWriter struct {
	w     io.Writer
	check func()
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.check()
	return d.w.Write(p)
}

// yieldInterval reads the periodic-yield interval the engine was built with from BUILDINFO
// (periodic_yield=N); 0 when the engine has no yield patch.
func yieldInterval(buildinfo string) int {
	var n int
	if v := buildInfo(buildinfo, "periodic_yield"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			return 0
		}
	}
	return n
}

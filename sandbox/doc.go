// Package sandbox runs Python (CPython 3.13 built for wasm32-wasi by
// scripts/build_python_wasi.sh) under wazero, for untrusted code and for compile checks.
//
// It is the only package in the module that imports wazero. It owns:
//
//   - loading the engine directory the build script wrote: python.wasm is verified against the
//     build's SHA256SUMS and compiled once per process (a broken binary is an error from New),
//     with wazero's on-disk compilation cache so a restart skips the multi-second compile;
//   - a fresh, anonymous module instance for every call, never reused, so nothing one run does
//     is visible to the next;
//   - the guest's world: the standard library mounted read-only at /usr/lib/python3.13, an
//     in-memory scratch directory at /tmp (capped, no symlinks or hard links), no host
//     directory ever mounted writable, an explicit environment (never the host's), the real
//     clock and crypto/rand (wazero's defaults are fake), stdin from memory so it never blocks;
//   - limits: a deadline enforced in one of two modes (mode.go): strict, wazero's
//     close-on-context-done (every loop, including ones running inside C, is stopped; CPU-bound
//     Python about 3.2× slower than fast mode), or fast, cooperative hooks reached from the eval loop's
//     periodic yield (no per-bytecode check; a loop inside C is not stopped); a linear-memory cap
//     backed by an mmap allocator so an allocation past the cap becomes a clean MemoryError;
//     and stdout/stderr captured into capped buffers (the program keeps running; the text is
//     clipped head-and-tail with an omission marker);
//   - classifying the outcome as ok, error, timeout or oom, and telling a failed prelude, from
//     what the host saw itself (its deadline, the allocator's refusals, the phases the run
//     driver announced once each), never from an exit code the program could choose (run.go);
//     a live session's run ends when the host sees its interpreter wait for the next request,
//     never on a message the program could write too, so a program cannot end its own run and
//     compute on past its deadline (session.go); an interpreter that does not stop when told
//     to is counted (Engine.Stuck) and its worker process killed;
//   - which interpreter holds a session's state (Request.Interpreter, Result.Interpreter): a
//     run told of another one, on another replica or ended, starts anew and says so;
//   - the worker pool (pool.go, worker.go, protocol.go): `assistant sandbox-worker` processes
//     of the same binary, each an Engine in fast mode, started ahead of demand and fed over a
//     framed protocol on stdin/stdout; a worker whose run overstays its deadline by a grace is
//     killed and replaced (that is what stops a loop inside C), a crashed one is replaced, and
//     runs past the workers wait in a bounded queue, past which Run fails with *OverloadError;
//     a worker that dies during a run gives *WorkerLostError, whose text names no host detail;
//   - the same admission rule for runs in this process (Limited, limit.go): a fixed number at
//     once, a bounded FIFO queue, then *OverloadError;
//   - the community's policy inside the guest, given as plain values in the Request (osa.go,
//     egress.go, wheels.go): the prelude runs first, top-level await allowed in it and in the
//     code; overlay wheels mounted read-only at /opt/osa/wheels and imported zipped; the osa
//     module (web/osa, the one the browser's runtime runs too, with this runtime's transport,
//     osa_device.py), whose fetch, fetch_bytes, fetch_text, save_script and save_artifact reach
//     the host through a device file, /dev/osa/call, where every rule is enforced (CheckURL, the
//     browser's fetch_allow rule; no redirects; no private, loopback or link-local address
//     after DNS resolution; size and time caps, counted per run in a live session too; the
//     workspace caps); an import of a package
//     the runtime lacks fails naming what it has; bytecode for the driver, osa and the wheels
//     compiled once per process by a trusted run;
//   - turning a Result into the ClientToolResult the model reads, with its deterministic
//     summary (policy.go, ToolResult).
//
// It does not own: the ClientToolResult's validation (toolresults), HTTP status codes, or config
// loading: callers turn a community's config into a Request (sandbox imports neither config
// nor runtimelock; the config package declares its own SyntaxChecker interface, and cmd adapts
// Engine.CheckSyntax to it).
package sandbox

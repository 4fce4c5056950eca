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
//   - limits: a deadline enforced by wazero's close-on-context-done (every loop, including
//     ones running inside C, is stopped), a linear-memory cap backed by an mmap allocator so an
//     allocation past the cap becomes a clean MemoryError, and stdout/stderr captured into
//     capped buffers (the program keeps running; the text is clipped head-and-tail with an
//     omission marker);
//   - classifying the outcome as ok, error, timeout or oom.
//
// It does not own: the community policy inside the guest (prelude, overlay wheels, the osa
// module), concurrency limits or worker processes (callers bound how many runs they start),
// the ClientToolResult wire format and its summary, HTTP status codes, or config loading (the
// config package declares its own SyntaxChecker interface; cmd adapts Engine.CheckSyntax to it).
package sandbox

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/sandbox"
)

// runSandboxWorker is `assistant sandbox-worker`: one process of the server's Python worker
// pool (sandbox.Pool starts it; people do not). It loads the engine (from wazero's on-disk
// compilation cache, in fast mode by default) and serves runs over the framed protocol of
// sandbox.ServeWorker on stdin and stdout; stderr carries its logs only. It exits when stdin
// ends, so it never outlives the server; it ignores SIGINT and SIGTERM (the server's process
// group gets them too, and the server finishes its runs before it closes the pool).
// maxWorkerMemoryMB is the most memory a worker's runs may have: wasm32's 4 GiB.
const maxWorkerMemoryMB = 4096

func runSandboxWorker(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandbox-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	engineDir := fs.String("engine-dir", env("ASSISTANT_ENGINE_DIR"), "the Python engine built by scripts/build_python_wasi.sh (ASSISTANT_ENGINE_DIR)")
	engineCache := fs.String("engine-cache", env("ASSISTANT_ENGINE_CACHE"), "wazero's compilation cache directory; default: the user cache directory (ASSISTANT_ENGINE_CACHE)")
	memoryMB := fs.Int("memory-mb", 0, "the largest linear memory one run may use, in MiB; default: the community default (1536)")
	modeName := fs.String("mode", "fast", "how deadlines are enforced: fast (needs a pool that kills overrunning workers) or strict")
	defaultLogFormat := env("ASSISTANT_LOG_FORMAT")
	if defaultLogFormat == "" {
		defaultLogFormat = "auto"
	}
	sessionIdle := fs.Duration("session-idle", 10*time.Minute, "how long a session's live interpreter lives without a run (the server passes its --sandbox-session-idle)")
	logFormat := fs.String("log-format", defaultLogFormat, "json, text, or auto (ASSISTANT_LOG_FORMAT)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: assistant sandbox-worker [flags]\n\n"+
			"Serves Python runs for the server's worker pool over stdin/stdout; not for interactive use.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "assistant sandbox-worker: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	mode, err := sandbox.ParseMode(*modeName)
	if err != nil {
		fmt.Fprintf(stderr, "assistant sandbox-worker: %v\n", err)
		return 2
	}
	if *memoryMB < 0 || *memoryMB > maxWorkerMemoryMB {
		fmt.Fprintf(stderr, "assistant sandbox-worker: --memory-mb %d is outside 0..%d\n", *memoryMB, maxWorkerMemoryMB)
		return 2
	}
	if *engineDir == "" {
		fmt.Fprintln(stderr, "assistant sandbox-worker: no engine (--engine-dir or ASSISTANT_ENGINE_DIR)")
		return 2
	}
	switch *logFormat {
	case "auto", "json", "text":
	default:
		fmt.Fprintf(stderr, "assistant sandbox-worker: log format %q: want json, text or auto\n", *logFormat)
		return 2
	}
	log := newLogger(*logFormat, stderr).With("worker", os.Getpid())

	cacheDir := *engineCache
	if cacheDir == "" {
		cacheDir = defaultEngineCache()
	}
	eng, err := sandbox.New(ctx, sandbox.Options{
		Dir:              *engineDir,
		CacheDir:         cacheDir,
		MemoryLimitPages: uint32(*memoryMB << 20 / sandbox.PageSize),
		Mode:             mode,
		Logger:           log,
	})
	if err != nil {
		log.Error("sandbox worker: loading the engine failed", "error", err)
		return 1
	}
	defer eng.Close(context.WithoutCancel(ctx))
	// A signal sent to the server's process group must not end a run the server still waits
	// for: the worker ends with its stdin.
	if err := sandbox.ServeWorker(context.WithoutCancel(ctx), eng, stdin, stdout, log, sandbox.SessionsOptions{Idle: *sessionIdle}); err != nil {
		log.Error("sandbox worker stopped", "error", err)
		return 1
	}
	return 0
}

// defaultEngineCache is the compilation cache directory openEngine uses when none is given.
func defaultEngineCache() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "assistant", "wazero")
}

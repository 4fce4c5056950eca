package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	wsys "github.com/tetratelabs/wazero/sys"

	"github.com/osc-assistant/assistant/limits"
)

// PageSize is the size of one wasm linear-memory page.
const PageSize = 64 << 10

// wasm32Pages is the most pages a wasm32 memory can have (4 GiB).
const wasm32Pages = 65536

// minMemoryBytes is the smallest memory cap that lets the interpreter start: python.wasm asks
// for 20 MiB of initial memory (8 MiB of it stack) and needs a little more to import site.
const minMemoryBytes = 32 << 20

// Guest paths.
const (
	guestHome    = "/usr"
	guestScratch = "/tmp"
	// guestZoneinfo is where the engine's tz database is mounted: zoneinfo's default TZPATH,
	// and the path Debian's pytz reads.
	guestZoneinfo = "/usr/share/zoneinfo"
)

// Options configures New.
type Options struct {
	// Dir is the engine directory written by scripts/build_python_wasi.sh: python.wasm,
	// lib/python3.X/ and SHA256SUMS.
	Dir string
	// CacheDir holds wazero's compilation cache, so a restart does not recompile python.wasm
	// (about 3.5 s on 2 cores). Empty means an in-memory cache only. Both modes may share it:
	// wazero's cache key includes close-on-context-done, so each mode loads its own code.
	CacheDir string
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB pages. Zero means
	// limits.Runtime.MemoryMB.Default (1536 MiB), the community default. A Request may ask for less, never more. Host memory to budget is
	// concurrent runs × this cap.
	MemoryLimitPages uint32
	// Logger receives a line when the engine is loaded and when the interpreter crashes (a
	// wasm trap, not a Python exception). Nil discards.
	Logger *slog.Logger
	// Mode is how deadlines are enforced: ModeStrict (the zero value) stops everything but
	// makes CPU-bound Python about 3.2× slower than ModeFast, which cannot stop a loop
	// inside C, so it belongs in killable worker processes (see Mode and Pool).
	Mode Mode
}

// An Engine holds one compiled python.wasm and creates a fresh instance for every call. It is
// safe for concurrent use; every call costs one instance (tens of MiB while it runs).
type Engine struct {
	log      *slog.Logger
	dir      string
	sha256   string
	python   string // e.g. "3.13.5", from BUILDINFO
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	compiled wazero.CompiledModule
	root     *os.Root        // the stdlib directory, open for the engine's lifetime
	libGuest string          // e.g. "/usr/lib/python3.13"
	fsBase   wazero.FSConfig // the stdlib, read-only
	tzRoot   *os.Root        // the tz database, when the engine has one
	packages []Package       // packages.json: what the engine holds beyond the bare stdlib
	maxMem   uint64          // bytes
	base     wazero.ModuleConfig
	mode     Mode
	syntax   checker   // the long-lived compile-check interpreter (syntax.go)
	cacheDir string    // where snapshots are kept on disk ("" for memory only)
	snaps    snapshots // the image session interpreters start from (snapshot.go)
	// stuck counts the session interpreters that did not stop when told to (Session.stop).
	stuck atomic.Int64
}

// Stuck reports how many session interpreters did not stop within the grace when told to:
// each still runs, on a goroutine nothing can end (a loop inside C, in ModeFast). A worker
// process with one has itself killed (ServeWorker); in any other process it is logged.
func (e *Engine) Stuck() int64 { return e.stuck.Load() }

// New loads the engine in opts.Dir: it checks python.wasm against the build's SHA256SUMS,
// compiles it (from the on-disk cache when present) and logs which engine it loaded. Any failure
// is an error; the caller should stop rather than serve without it.
func New(ctx context.Context, opts Options) (*Engine, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Dir == "" {
		return nil, errors.New("sandbox: no engine directory given (build it with scripts/build_python_wasi.sh)")
	}
	pages := opts.MemoryLimitPages
	if pages == 0 {
		pages = uint32(limits.Runtime.MemoryMB.Default << 20 / PageSize)
	}
	if pages > wasm32Pages {
		return nil, fmt.Errorf("sandbox: memory limit of %d pages is over the wasm32 maximum of %d", pages, wasm32Pages)
	}
	if uint64(pages)*PageSize < minMemoryBytes {
		return nil, fmt.Errorf("sandbox: memory limit of %d pages is under the %d MiB the interpreter needs", pages, minMemoryBytes>>20)
	}

	wasmPath := filepath.Join(opts.Dir, "python.wasm")
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading the engine: %w", err)
	}
	sum := sha256.Sum256(wasm)
	got := hex.EncodeToString(sum[:])
	want, err := recordedSum(filepath.Join(opts.Dir, "SHA256SUMS"), "python.wasm")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %v", err)
	}
	if got != want {
		return nil, fmt.Errorf("sandbox: %s has sha256 %s, but SHA256SUMS records %s", wasmPath, got, want)
	}

	libs, _ := filepath.Glob(filepath.Join(opts.Dir, "lib", "python3.*"))
	if len(libs) != 1 {
		return nil, fmt.Errorf("sandbox: want exactly one lib/python3.* directory in %s, found %d", opts.Dir, len(libs))
	}
	root, err := os.OpenRoot(libs[0])
	if err != nil {
		return nil, fmt.Errorf("sandbox: opening the standard library: %w", err)
	}

	// Fast mode relies on the eval loop's periodic yield; without it a `while True: pass`
	// would never see its deadline.
	if opts.Mode == ModeFast && yieldInterval(filepath.Join(opts.Dir, "BUILDINFO")) <= 0 {
		_ = root.Close()
		return nil, fmt.Errorf("sandbox: fast mode needs an engine built with the periodic yield (periodic_yield in %s/BUILDINFO); rebuild it with scripts/build_python_wasi.sh", opts.Dir)
	}

	e := &Engine{
		log:      log,
		dir:      opts.Dir,
		sha256:   got,
		python:   buildInfo(filepath.Join(opts.Dir, "BUILDINFO"), "python"),
		root:     root,
		libGuest: guestHome + "/lib/" + filepath.Base(libs[0]),
		maxMem:   uint64(pages) * PageSize,
		mode:     opts.Mode,
		cacheDir: opts.CacheDir,
	}
	e.startSnapshots()
	// os.Root keeps every path inside the directory; ReadFS refuses opens for writing (EROFS)
	// rather than failing later at the first write.
	e.fsBase = wazero.NewFSConfig().(sysfs.FSConfig).
		WithSysFSMount(&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: root.FS()}}, e.libGuest)
	if e.packages, err = readPackages(filepath.Join(opts.Dir, "packages.json")); err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("sandbox: %v", err)
	}
	// The tz database, read-only where zoneinfo and Debian's pytz look for it.
	if tz, err := os.OpenRoot(filepath.Join(opts.Dir, "share", "zoneinfo")); err == nil {
		e.tzRoot = tz
		e.fsBase = e.fsBase.(sysfs.FSConfig).WithSysFSMount(&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: tz.FS()}}, guestZoneinfo)
	}
	if opts.CacheDir != "" {
		e.cache, err = wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			_ = root.Close()
			return nil, fmt.Errorf("sandbox: compilation cache: %w", err)
		}
	} else {
		e.cache = wazero.NewCompilationCache()
	}
	// The cap is enforced by the allocator of each run (engine.run), not by wazero: a grow
	// that wazero refused itself would never reach the allocator, which must see every refusal
	// to tell a run that ran out of memory (allocator.hitCap). So wazero allows the whole wasm32
	// address space, and the allocator never maps more than the cap.
	e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(opts.Mode != ModeFast). // fast mode: see withDeadlineHooks
		WithMemoryLimitPages(wasm32Pages).
		WithCompilationCache(e.cache))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("sandbox: instantiating WASI: %w", err)
	}
	if err := e.instantiateHost(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("sandbox: instantiating the host module: %w", err)
	}
	start := time.Now()
	e.compiled, err = e.rt.CompileModule(ctx, wasm)
	if err != nil {
		_ = e.Close(ctx)
		return nil, fmt.Errorf("sandbox: compiling %s: %w", wasmPath, err)
	}
	e.base = wazero.NewModuleConfig().
		WithName(""). // anonymous, so instances can run side by side
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithEnv("PYTHONHOME", guestHome).
		WithEnv("PYTHONDONTWRITEBYTECODE", "1").
		WithEnv("PYTHONUNBUFFERED", "1"). // output written before a timeout is kept
		WithEnv("PYTHONUTF8", "1").
		WithEnv("PYTHONSAFEPATH", "1").
		WithEnv("PYTHONNOUSERSITE", "1").
		WithEnv("HOME", guestScratch).
		WithEnv("TMPDIR", guestScratch).
		WithEnv("LANG", "C.UTF-8")
	log.Info("python engine loaded", "path", wasmPath, "sha256", got, "python", e.python,
		"packages", packageList(e.packages),
		"duration", time.Since(start).Round(time.Millisecond), "memory_limit_mb", e.maxMem>>20,
		"mode", e.mode.String())
	return e, nil
}

// SHA256 returns the hex sha256 of the loaded python.wasm.
func (e *Engine) SHA256() string { return e.sha256 }

// PythonVersion returns the CPython version the engine was built from, e.g. "3.13.5", or ""
// when the build did not record it.
func (e *Engine) PythonVersion() string { return e.python }

// Mode returns how the engine enforces deadlines.
func (e *Engine) Mode() Mode { return e.mode }

// Close releases the runtime, the compiled module and the compilation cache. Calls in flight
// fail.
func (e *Engine) Close(ctx context.Context) error {
	e.stopSnapshots() // before the runtime goes: a build runs in it
	e.syntax.close()
	var errs []error
	if e.rt != nil {
		errs = append(errs, e.rt.Close(ctx))
	}
	if e.cache != nil {
		errs = append(errs, e.cache.Close(ctx))
	}
	if e.root != nil {
		errs = append(errs, e.root.Close())
	}
	if e.tzRoot != nil {
		errs = append(errs, e.tzRoot.Close())
	}
	return errors.Join(errs...)
}

// instance describes one run of the interpreter.
type instance struct {
	args   []string
	stdin  []byte
	stdinR io.Reader // when set, stdin comes from it instead (a long-lived instance's requests)
	// onAlloc, when set, is given the instance's allocator before it starts, so a long-lived
	// instance's memory can be read while it lives.
	onAlloc  func(*allocator)
	stdout   io.Writer
	stderr   io.Writer
	memLimit uint64     // bytes; 0 = the engine's cap
	scratch  *scratchFS // nil = no /tmp
	mounts   []mount    // more file systems: the run's policy (osa.go)
	snap     *snapshot  // when set, the instance starts from this image (snapshot.go)
	onResume func()     // called once the instance runs from snap (not when it started cold)
}

func stdinOf(in instance) io.Reader {
	if in.stdinR != nil {
		return in.stdinR
	}
	return bytes.NewReader(in.stdin)
}

// outcome is what wazero said about one instance.
type outcome struct {
	exitCode uint32
	err      error  // nil, *sys.ExitError with a non-zero code, or a trap
	memPeak  uint64 // bytes of linear memory at its largest
	memLimit uint64
	memCap   bool // a grow past memLimit was refused (allocator.hitCap)
}

// run instantiates the module once with in's settings and runs it to completion, or until ctx
// is done (wazero then closes the instance from inside guest code).
func (e *Engine) run(ctx context.Context, in instance) outcome {
	limit := e.maxMem
	if in.memLimit != 0 && in.memLimit < limit {
		limit = in.memLimit
	}
	alloc := newAllocator(limit)
	if in.onAlloc != nil {
		in.onAlloc(alloc)
	}
	ctx = experimental.WithMemoryAllocator(ctx, alloc)

	fsc := e.fsBase
	if in.scratch != nil {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(in.scratch, guestScratch)
	}
	for _, m := range in.mounts {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(m.fs, m.guest)
	}
	cfg := e.base.
		WithArgs(in.args...).
		WithStdin(stdinOf(in)).
		WithFSConfig(fsc)
	cfg = withDeadlineHooks(ctx, e.mode, cfg, in.stdout, in.stderr) // stdout, stderr, sleep, yield
	var err error
	if in.snap != nil && uint64(in.snap.pages)*PageSize <= limit {
		err = e.instantiateFrom(ctx, in.snap, cfg, in.onResume)
	} else {
		// No image, or one larger than this instance may grow: start cold, before the
		// allocator could record a refused grow that would read as running out of memory.
		var mod api.Module
		mod, err = e.rt.InstantiateModule(ctx, e.compiled, cfg)
		if mod != nil {
			_ = mod.Close(ctx)
		}
	}
	o := outcome{err: err, memPeak: alloc.peak(), memLimit: limit, memCap: alloc.hitCap()}
	var exit *wsys.ExitError
	if errors.As(err, &exit) {
		o.exitCode = exit.ExitCode()
	}
	return o
}

// sleeper is a nanosleep that returns early when ctx is done: wazero's deadline checks run
// only in guest code, so a guest sleeping in the host would otherwise outlive its deadline.
func sleeper(ctx context.Context) wsys.Nanosleep {
	return func(ns int64) {
		if ns <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// recordedSum returns the sha256 recorded for name in a sha256sum-format file.
func recordedSum(sumsPath, name string) (string, error) {
	f, err := os.Open(sumsPath)
	if err != nil {
		return "", fmt.Errorf("reading the engine checksums: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if ok && strings.TrimPrefix(file, "*") == name && len(sum) == 64 {
			return sum, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", sumsPath, err)
	}
	return "", fmt.Errorf("%s records no sha256 for %s", sumsPath, name)
}

// buildInfo returns the value of key in the build's BUILDINFO (key=value lines), or "".
func buildInfo(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			return v
		}
	}
	return ""
}

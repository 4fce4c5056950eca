package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/runtimelock"
	"github.com/osc-assistant/assistant/sandbox"
)

const runUsage = `usage: assistant run --community ID [flags] FILE|-

Runs a Python file (or stdin, for -) in the server's Python under community ID's policy, as the
server runs a client tool for a reader whose browser cannot: the deployment's prelude first,
top-level await allowed, the overlay wheels importable, osa.fetch limited to fetch_allow, the
community's limits. Prints the ClientToolResult as JSON. Exits 0 when the code ran, whatever its
status; 1 when it could not be run; 2 on a usage error.

The code runs as the server's workers run it: in an assistant sandbox-worker process, in fast
mode, which this command kills when the code overstays its deadline (a loop inside C). With
--strict it runs in this process in strict mode instead: every loop checks the deadline, and
CPU-bound Python is about three times slower.

`

// maxRunSource caps the file assistant run reads.
const maxRunSource = 4 << 20

// runRun is assistant run.
func runRun(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(names ...string) string { return firstEnv(getenv, names...) }
	communities := env("ASSISTANT_COMMUNITIES")
	if communities == "" {
		communities = "communities"
	}
	id := fs.String("community", "", "the community whose policy the code runs under (required)")
	deployment := fs.String("deployment", env("ASSISTANT_DEPLOYMENT", "OSA_DEPLOYMENT"), "production or develop: whose prelude and fetch_allow; default: as assistant serve decides (ASSISTANT_DEPLOYMENT)")
	fs.StringVar(&communities, "communities", communities, "communities directory (ASSISTANT_COMMUNITIES)")
	engineDir := fs.String("engine-dir", env("ASSISTANT_ENGINE_DIR"), "the Python engine built by scripts/build_python_wasi.sh (ASSISTANT_ENGINE_DIR)")
	engineCache := fs.String("engine-cache", env("ASSISTANT_ENGINE_CACHE"), "wazero's compilation cache directory; default: the user cache directory (ASSISTANT_ENGINE_CACHE)")
	callID := fs.String("call-id", "run", "the call_id of the printed result")
	artifacts := fs.String("artifacts", "", "write the files the code saved (osa.save_script, osa.save_artifact) into this directory")
	allowLoopback := fs.Bool("allow-loopback", false, "let osa.fetch reach loopback addresses, to test against a local server")
	strict := fs.Bool("strict", false, "run in this process in strict mode (slower; every loop checks the deadline) instead of in a fast-mode worker as the server does")
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "assistant run: "+format+"\n\n", a...)
		fs.Usage()
		return 2
	}
	switch {
	case *id == "":
		return usageErr("--community is required")
	case fs.NArg() != 1:
		return usageErr("want one FILE (or - for stdin), got %d arguments", fs.NArg())
	case *callID == "" || len([]rune(*callID)) > 256:
		return usageErr("--call-id must be 1 to 256 characters")
	}
	var dep config.Deployment
	if *deployment == "" {
		d, err := config.ServingDeployment(getenv)
		if err != nil {
			return usageErr("%v", err)
		}
		dep = d
	} else {
		dep = config.Deployment(strings.ToLower(*deployment))
		if !slices.Contains(config.Deployments, dep) {
			return usageErr("--deployment %q: want production or develop", *deployment)
		}
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "assistant run: "+format+"\n", a...)
		return 1
	}

	source, err := readSource(fs.Arg(0), stdin)
	if err != nil {
		return fail("%v", err)
	}
	if *engineDir == "" {
		return fail("no Python engine: set ASSISTANT_ENGINE_DIR or --engine-dir (make engine builds it)")
	}
	eng, err := openEngine(ctx, *engineDir, *engineCache, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		return fail("%v", err)
	}
	defer eng.Close(context.WithoutCancel(ctx))

	set, err := config.Load(ctx, communities, loadOptions(eng))
	var list config.ErrorList
	if err != nil && !errors.As(err, &list) {
		return fail("%v", err)
	}
	var c *config.Community
	if set != nil {
		c = set.Get(*id)
	}
	if c == nil {
		if len(list) > 0 {
			fmt.Fprintln(stderr, list.Error())
		}
		return fail("no community %q in %s", *id, communities)
	}
	var own config.ErrorList
	for _, e := range list {
		if e.File == c.File {
			own = append(own, e)
		}
	}
	if len(own) > 0 {
		fmt.Fprintln(stderr, own.Error())
		return fail("community %q has %d config %s; assistant validate lists them", *id, len(own), plural(len(own), "error", "errors"))
	}
	req, lim, err := policyRequest(c, dep)
	if err != nil {
		return fail("%v", err)
	}
	req.Source = source
	req.AllowLoopback = *allowLoopback

	runCode := eng.Run
	if !*strict {
		pool, err := runWorker(ctx, *engineDir, *engineCache, req.MemoryBytes)
		if err != nil {
			return fail("%v", err)
		}
		defer pool.Close()
		runCode = pool.Run
	}
	res, err := runCode(ctx, req)
	if err != nil {
		return fail("the code could not be run: %v", err)
	}
	if *artifacts != "" && len(res.Files) > 0 {
		if err := writeArtifacts(*artifacts, res); err != nil {
			return fail("%v", err)
		}
	}
	out, err := json.MarshalIndent(sandbox.ToolResult(res, *callID, lim), "", "  ")
	if err != nil {
		return fail("%v", err)
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		return 1
	}
	return 0
}

// runWorker starts the one worker process assistant run's code runs in: this binary's
// sandbox-worker in fast mode, as serve starts them, with room for the policy's memory. The
// pool kills it when a run overstays its deadline by the grace, which is what makes fast mode
// safe. A policy's memory over what a worker takes (maxWorkerMemoryMB) gets the most it takes,
// as the engine lowers an oversized request in process. Its logs are kept only to explain a
// worker that does not start (the result says what the code did; a crash is the run's error).
func runWorker(ctx context.Context, engineDir, engineCache string, memoryBytes int64) (*sandbox.Pool, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary for the Python worker: %v", err)
	}
	args := []string{"sandbox-worker", "--engine-dir", engineDir, "--mode", "fast", "--log-format", "text",
		"--memory-mb", strconv.FormatInt(min(max(memoryBytes>>20, 0), maxWorkerMemoryMB), 10)}
	if engineCache != "" {
		args = append(args, "--engine-cache", engineCache)
	}
	logs := &tailWriter{max: 4 << 10}
	pool, err := sandbox.NewPool(ctx, sandbox.PoolOptions{Binary: bin, Args: args, Workers: 1, Stderr: logs})
	if err != nil {
		if tail := strings.TrimSpace(logs.String()); tail != "" {
			return nil, fmt.Errorf("starting the Python worker: %v; it said: %s", err, tail)
		}
		return nil, fmt.Errorf("starting the Python worker: %v", err)
	}
	logs.stop()
	return pool, nil
}

// tailWriter keeps the last max bytes written to it, until stop; it is safe for concurrent use.
type tailWriter struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	stopped bool
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.buf = append(t.buf, p...)
		if len(t.buf) > t.max {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		}
	}
	return len(p), nil
}

func (t *tailWriter) stop() {
	t.mu.Lock()
	t.stopped, t.buf = true, nil
	t.mu.Unlock()
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// readSource reads the code from file name, or from stdin for "-".
func readSource(name string, stdin io.Reader) (string, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxRunSource+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > maxRunSource {
		return "", fmt.Errorf("%s is over %d bytes", name, maxRunSource)
	}
	return string(b), nil
}

// policyRequest builds the run of community c's Python for deployment dep: its prelude and
// fetch_allow for dep, its limits, and the overlay wheels its preload installs (with their
// overlay dependencies), with their import names as the available packages. The Source is
// left to the caller.
func policyRequest(c *config.Community, dep config.Deployment) (sandbox.Request, sandbox.ResultLimits, error) {
	if c.Runtime == nil || c.Runtime.Python == nil {
		return sandbox.Request{}, sandbox.ResultLimits{}, fmt.Errorf("community %q has no runtime.python, so it runs no Python", c.ID)
	}
	py := c.Runtime.Python
	if py.Lockfile != nil && c.Overlay == nil {
		return sandbox.Request{}, sandbox.ResultLimits{}, fmt.Errorf("community %q: its lock overlay did not verify: %v", c.ID, c.OverlayErr)
	}
	req := sandbox.Request{
		FetchAllow:  py.FetchAllow.Resolve(dep),
		Timeout:     time.Duration(py.Limits.ExecSeconds) * time.Second,
		MemoryBytes: int64(py.Limits.MemoryMB) << 20,
		StdoutChars: py.Limits.StdoutChars,
		StderrChars: py.Limits.StderrChars,
	}
	if py.Prelude != nil {
		req.Prelude = py.Prelude.Resolve(dep)
	}
	if c.Overlay != nil {
		wheels, available, err := overlayWheels(c.Overlay, py.Preload)
		if err != nil {
			return sandbox.Request{}, sandbox.ResultLimits{}, fmt.Errorf("community %q: %v", c.ID, err)
		}
		req.Wheels, req.Available = wheels, available
	}
	return req, sandbox.ResultLimits{StdoutChars: py.Limits.StdoutChars, StderrChars: py.Limits.StderrChars}, nil
}

// overlayWheels returns the overlay wheels that preload installs, directly or as an overlay
// dependency of one it installs, in overlay order, and their import names, sorted. A browser
// installs exactly the preload list; names that are Pyodide packages (numpy) have no wheel
// here and stay unavailable.
func overlayWheels(v *runtimelock.Verified, preload []string) ([]sandbox.Wheel, []string, error) {
	ov := v.Overlay()
	want := map[string]bool{}
	var visit func(key string)
	visit = func(key string) {
		p, ok := ov.Package(key)
		if !ok || want[key] {
			return
		}
		want[key] = true
		for _, d := range p.Depends {
			visit(runtimelock.CanonicalName(d))
		}
	}
	for _, name := range preload {
		visit(runtimelock.CanonicalName(name))
	}
	var wheels []sandbox.Wheel
	var available []string
	for _, p := range ov.Packages {
		if !want[p.Key] {
			continue
		}
		data, _, ok := v.Wheel(p.FileName)
		if !ok {
			return nil, nil, fmt.Errorf("the overlay serves no verified wheel %s", p.FileName)
		}
		wheels = append(wheels, sandbox.Wheel{Name: p.FileName, Data: data})
		available = append(available, p.Imports...)
	}
	slices.Sort(available)
	return wheels, slices.Compact(available), nil
}

// writeArtifacts writes the files a run saved under dir, through an os.Root so no name can
// leave it (names are checked by the sandbox already).
func writeArtifacts(dir string, res sandbox.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, name := range res.Artifacts {
		if p := sandbox.ArtifactNameProblem(name); p != "" {
			return fmt.Errorf("artifact %q: %s", name, p)
		}
		if d := filepath.Dir(filepath.FromSlash(name)); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := root.WriteFile(filepath.FromSlash(name), res.Files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

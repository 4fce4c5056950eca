package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCompareRuntimes measures the server's Python runtime beside native CPython and
// Pyodide on Node.js, interleaved in one run, and writes the Markdown tables of BENCHMARKS.md to
// the file named by ASSISTANT_BENCH_COMPARE. scripts/bench_python.sh sets that and the rest of
// the environment (below); without it the benchmark skips, so `go test -bench .` stays quick.
// Like every test here it skips when the engine is not built.
//
//	ASSISTANT_BENCH_COMPARE  the Markdown output file (required)
//	BENCH_NATIVE             native interpreters, space-separated; the first is the baseline
//	BENCH_NODE               node; BENCH_PYODIDE_SCRIPT scripts/bench_pyodide.mjs (PYODIDE_DIR
//	                         is passed through to it); without both, Pyodide is left out
//	BENCH_N, BENCH_N_CPU     repetitions (default 7 and 3)
//
// It runs once whatever b.N is (the script passes -benchtime 1x).
func BenchmarkCompareRuntimes(b *testing.B) {
	outPath := os.Getenv("ASSISTANT_BENCH_COMPARE")
	if outPath == "" {
		b.Skip("set by scripts/bench_python.sh (ASSISTANT_BENCH_COMPARE=<output file>)")
	}
	strict := testEngine(b) // skips without the engine
	bin := workerBinary(b)
	c := &comparison{
		b:      b,
		strict: strict,
		bin:    bin,
		n:      envInt(b, "BENCH_N", 7),
		nCPU:   envInt(b, "BENCH_N_CPU", 3),
		node:   os.Getenv("BENCH_NODE"),
		script: os.Getenv("BENCH_PYODIDE_SCRIPT"),
		loadA:  readLoadavg(),
	}
	for _, p := range strings.Fields(os.Getenv("BENCH_NATIVE")) {
		c.natives = append(c.natives, native{path: p, version: pythonVersion(b, p)})
	}
	if len(c.natives) == 0 {
		b.Fatal("BENCH_NATIVE names no interpreter")
	}
	c.snippets = []snippet{
		{key: "print", title: "`print(1)`", code: "print(1)", want: "1\n", n: c.n},
		{key: "imports", title: "import-heavy", code: "import json, re, statistics, csv, decimal, datetime, dataclasses, asyncio\nprint('ok')", want: "ok\n", n: c.n},
		{key: "cpu", title: "CPU loop", code: "print(sum(i*i for i in range(10**7)))", want: "333333283333335000000\n", n: c.nCPU},
	}
	c.samples = map[string]map[string][]time.Duration{}
	start := time.Now()
	c.run()
	c.elapsed = time.Since(start)
	c.loadB = readLoadavg()
	if err := os.WriteFile(outPath, []byte(c.markdown()), 0o644); err != nil {
		b.Fatal(err)
	}
}

const (
	// holdSnippet keeps ~100 MB of real bytes alive for a second, long enough to sample VmRSS.
	holdSnippet = "b = bytearray(b'x') * (100 << 20)\nimport time\ntime.sleep(1)\nprint(len(b))"
	holdWant    = "104857600\n"
	// idleSnippet is the native interpreter doing nothing, for its idle RSS.
	idleSnippet = "import time\ntime.sleep(0.5)"
)

type snippet struct {
	key, title, code, want string
	n                      int
}

type native struct{ path, version string }

type comparison struct {
	b        *testing.B
	strict   *Engine
	bin      string
	n, nCPU  int
	natives  []native
	node     string
	script   string
	snippets []snippet

	// samples[row][snippet key] are the measured wall times.
	samples map[string]map[string][]time.Duration
	// poolReady are the cold pools' start times alone (NewPool until every worker is ready).
	poolReady []time.Duration
	// emptyCache is one cold start with an empty compilation cache (pool ready, first run).
	emptyCacheReady, emptyCacheRun time.Duration
	workers                        int

	pyodideVersion, pyodidePython, nodeVersion string
	pyodideLoad                                []time.Duration // loadPyodide inside the warm processes

	mem map[string]memRow
	// sessIdle and sessTen are a worker's VmRSS at rest and with ten live sessions.
	sessIdle, sessTen int64

	loadA, loadB string
	elapsed      time.Duration
}

// memRow is VmRSS in bytes: at rest after start, the peak while running the CPU loop, the peak
// while holding 100 MB, and at rest after that run.
type memRow struct{ idle, cpu, hold, after int64 }

func (c *comparison) add(row, key string, d time.Duration) {
	if c.samples[row] == nil {
		c.samples[row] = map[string][]time.Duration{}
	}
	c.samples[row][key] = append(c.samples[row][key], d)
}

func (c *comparison) hasPyodide() bool { return c.node != "" && c.script != "" }

// run takes every measurement: the fresh-start rows, then the warm rows, then memory. Within a
// phase the runtimes take turns, repetition by repetition, so a change in the machine's load
// falls on all of them.
func (c *comparison) run() {
	b := c.b
	ctx := context.Background()
	c.workers = runtime.NumCPU()

	// The compilation cache is warm for every start below, as it is for a server restart: one
	// start that is not measured makes sure of it.
	if p, _ := c.startPool(ctx, 0, testCacheDir()); p != nil {
		_ = p.Close()
	}

	// A first deployment: an empty compilation cache, so the first worker compiles python.wasm.
	{
		t0 := time.Now()
		p, err := c.startPool(ctx, 0, b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		c.emptyCacheReady = time.Since(t0)
		t1 := time.Now()
		c.expect("pool, empty cache", c.snippets[0])(poolRun(ctx, p, c.snippets[0].code))
		c.emptyCacheRun = time.Since(t1)
		_ = p.Close()
	}

	// Fresh starts: a new pool (its start included) and its first run; a new node process.
	for _, s := range c.snippets {
		for i := range s.n {
			c.turns(i, []func(){
				func() {
					t0 := time.Now()
					p, err := c.startPool(ctx, 0, testCacheDir())
					if err != nil {
						b.Fatal(err)
					}
					c.poolReady = append(c.poolReady, time.Since(t0))
					c.expect("pool cold", s)(poolRun(ctx, p, s.code))
					c.add("poolCold", s.key, time.Since(t0))
					_ = p.Close()
				},
				func() {
					if !c.hasPyodide() {
						return
					}
					t0 := time.Now()
					out, err := exec.Command(c.node, c.script, "once", s.code).Output()
					c.check("pyodide fresh", s, string(out), exitErr(err))
					c.add("pyodideFresh", s.key, time.Since(t0))
				},
				func() { c.runNatives(s) },
			})
		}
	}

	// Warm: one pool, the in-process strict engine, one Pyodide process; each snippet run once
	// first, not measured.
	pool, err := c.startPool(ctx, 0, testCacheDir())
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var py *pyodideServer
	if c.hasPyodide() {
		py = c.startPyodide()
		defer py.close()
		c.pyodideVersion, c.pyodidePython, c.nodeVersion = py.hello.Pyodide, py.hello.Python, py.hello.Node
		c.pyodideLoad = append(c.pyodideLoad, time.Duration(py.hello.LoadMS*float64(time.Millisecond)))
	}
	// Sessions under NEMAR's production policy (its wheel; its prelude, with top-level await),
	// through the pool: a later run of one live session, and a new session's first run (a new
	// interpreter from the policy's snapshot, the prelude, the snippet).
	nemar := nemarPolicy(b)
	newSessions := 0
	sessionRun := func(id, code string) (string, error) {
		req := nemar
		req.Source, req.Session, req.Timeout = code, id, time.Minute
		res, err := pool.Run(ctx, req)
		return resultOut(res, err)
	}
	for _, s := range c.snippets {
		c.expect("session warm-up", s)(sessionRun("bench-live", s.code))
		c.expect("pool warm-up", s)(poolRun(ctx, pool, s.code))
		c.expect("strict warm-up", s)(strictRun(ctx, c.strict, s.code))
		if py != nil {
			c.expect("pyodide warm-up", s)(py.run(s.code))
		}
	}
	for _, s := range c.snippets {
		for i := range s.n {
			c.turns(i, []func(){
				func() {
					t0 := time.Now()
					c.expect("pool warm", s)(poolRun(ctx, pool, s.code))
					c.add("poolWarm", s.key, time.Since(t0))
				},
				func() {
					t0 := time.Now()
					c.expect("strict", s)(strictRun(ctx, c.strict, s.code))
					c.add("strict", s.key, time.Since(t0))
				},
				func() {
					t0 := time.Now()
					c.expect("session later run", s)(sessionRun("bench-live", s.code))
					c.add("sessionLater", s.key, time.Since(t0))
				},
				func() {
					newSessions++
					id := fmt.Sprintf("bench-new-%d", newSessions)
					t0 := time.Now()
					c.expect("session first run", s)(sessionRun(id, s.code))
					c.add("sessionFirst", s.key, time.Since(t0))
				},
				func() {
					if py == nil {
						return
					}
					t0 := time.Now()
					c.expect("pyodide warm", s)(py.run(s.code))
					c.add("pyodideWarm", s.key, time.Since(t0))
				},
				func() { c.runNatives(s) },
			})
		}
	}
	_ = pool.Close()
	if py != nil {
		py.close()
	}
	c.measureMemory(ctx)
}

// turns runs fs in an order rotated by i.
func (c *comparison) turns(i int, fs []func()) {
	for k := range fs {
		fs[(i+k)%len(fs)]()
	}
}

func (c *comparison) runNatives(s snippet) {
	for _, nat := range c.natives {
		t0 := time.Now()
		out, err := exec.Command(nat.path, "-c", s.code).Output()
		c.check(nat.path, s, string(out), exitErr(err))
		c.add("native:"+nat.path, s.key, time.Since(t0))
	}
}

// expect returns check for what and s, in a form that takes a run's results directly.
func (c *comparison) expect(what string, s snippet) func(string, error) {
	return func(stdout string, err error) { c.check(what, s, stdout, err) }
}

// check fails the benchmark unless a run printed what it should.
func (c *comparison) check(what string, s snippet, stdout string, err error) {
	c.b.Helper()
	if err != nil {
		c.b.Fatalf("%s, %s: %v", what, s.key, err)
	}
	if stdout != s.want {
		c.b.Fatalf("%s, %s: stdout %q, want %q", what, s.key, stdout, s.want)
	}
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

// startPool starts a pool of the server's default size (workers 0) with the worker's default
// memory cap, as `assistant serve` does.
func (c *comparison) startPool(ctx context.Context, workers int, cacheDir string) (*Pool, error) {
	return NewPool(ctx, PoolOptions{
		Binary:  c.bin,
		Args:    []string{"sandbox-worker", "--engine-dir", c.strict.dir, "--engine-cache", cacheDir, "--log-format", "json"},
		Workers: workers,
		Stderr:  io.Discard,
	})
}

func poolRun(ctx context.Context, p *Pool, code string) (string, error) {
	res, err := p.Run(ctx, Request{Source: code, Timeout: time.Minute})
	return resultOut(res, err)
}

func strictRun(ctx context.Context, e *Engine, code string) (string, error) {
	res, err := e.Run(ctx, Request{Source: code, Timeout: time.Minute})
	return resultOut(res, err)
}

func resultOut(res Result, err error) (string, error) {
	if err == nil && res.Status != StatusOK {
		err = fmt.Errorf("status %s: %s", res.Status, res.Stderr)
	}
	return res.Stdout, err
}

// pyodideServer is `node bench_pyodide.mjs serve`: Pyodide loaded once, runs over stdin/stdout.
type pyodideServer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	hello struct {
		Ready   bool    `json:"ready"`
		LoadMS  float64 `json:"load_ms"`
		RSS     int64   `json:"rss"`
		Pyodide string  `json:"pyodide"`
		Python  string  `json:"python"`
		Node    string  `json:"node"`
	}
}

func (c *comparison) startPyodide() *pyodideServer {
	b := c.b
	s := &pyodideServer{cmd: exec.Command(c.node, c.script, "serve")}
	s.cmd.Stderr = os.Stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(make([]byte, 1<<20), 1<<20)
	if !s.out.Scan() {
		b.Fatalf("pyodide serve: no hello (%v)", s.out.Err())
	}
	if err := json.Unmarshal(s.out.Bytes(), &s.hello); err != nil || !s.hello.Ready {
		b.Fatalf("pyodide serve: hello %q: %v", s.out.Bytes(), err)
	}
	return s
}

func (s *pyodideServer) run(code string) (string, error) {
	line, _ := json.Marshal(map[string]string{"code": code})
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return "", err
	}
	if !s.out.Scan() {
		return "", fmt.Errorf("pyodide serve ended: %v", s.out.Err())
	}
	var r struct {
		Stdout string `json:"stdout"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		return "", err
	}
	if r.Error != "" {
		return r.Stdout, errors.New(r.Error)
	}
	return r.Stdout, nil
}

func (s *pyodideServer) close() {
	if s.in != nil {
		_ = s.in.Close()
		s.in = nil
		_ = s.cmd.Wait()
	}
}

// measureMemory reads VmRSS of a worker, of the native baseline and of a Pyodide process: at
// rest, and sampled every 5 ms while each runs the CPU loop and the 100 MB snippet.
func (c *comparison) measureMemory(ctx context.Context) {
	b := c.b
	c.mem = map[string]memRow{}
	cpu := c.snippets[2]
	hold := snippet{key: "hold", code: holdSnippet, want: holdWant}

	// One worker, so its pid is the one that runs.
	p, err := c.startPool(ctx, 1, testCacheDir())
	if err != nil {
		b.Fatal(err)
	}
	pid := p.pids()[0]
	var w memRow
	c.expect("pool", c.snippets[0])(poolRun(ctx, p, c.snippets[0].code))
	time.Sleep(200 * time.Millisecond)
	w.idle = rssOf(b, pid)
	stop := sampleRSS(pid)
	c.expect("pool", cpu)(poolRun(ctx, p, cpu.code))
	w.cpu = stop()
	stop = sampleRSS(pid)
	c.expect("pool", hold)(poolRun(ctx, p, hold.code))
	w.hold = stop()
	time.Sleep(200 * time.Millisecond)
	w.after = rssOf(b, pid)
	c.mem["worker"] = w
	_ = p.Close()

	// Ten live sessions in one worker, each holding a 1 MB list (131,072 pointers), beside the
	// same worker at rest after print(1).
	if p, err = c.startPool(ctx, 1, testCacheDir()); err != nil {
		b.Fatal(err)
	}
	pid = p.pids()[0]
	c.expect("pool", c.snippets[0])(poolRun(ctx, p, c.snippets[0].code))
	time.Sleep(200 * time.Millisecond)
	c.sessIdle = rssOf(b, pid)
	nemar := nemarPolicy(b)
	for i := range 10 {
		req := nemar
		req.Source, req.Session, req.Timeout = "x = [0] * (1 << 17)\nprint(len(x))", fmt.Sprintf("mem-%d", i), time.Minute
		res, err := p.Run(ctx, req)
		if out, err := resultOut(res, err); err != nil || out != "131072\n" {
			b.Fatalf("session %d: %q %v", i, out, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	c.sessTen = rssOf(b, pid)
	_ = p.Close()

	base := c.natives[0].path
	c.mem["native"] = memRow{
		idle: c.nativePeak(base, snippet{key: "idle", code: idleSnippet}),
		cpu:  c.nativePeak(base, cpu),
		hold: c.nativePeak(base, hold),
	}

	if c.hasPyodide() {
		py := c.startPyodide()
		pid := py.cmd.Process.Pid
		time.Sleep(200 * time.Millisecond)
		var m memRow
		m.idle = rssOf(b, pid)
		stop := sampleRSS(pid)
		c.expect("pyodide", cpu)(py.run(cpu.code))
		m.cpu = stop()
		stop = sampleRSS(pid)
		c.expect("pyodide", hold)(py.run(hold.code))
		m.hold = stop()
		time.Sleep(200 * time.Millisecond)
		m.after = rssOf(b, pid)
		c.mem["pyodide"] = m
		c.pyodideLoad = append(c.pyodideLoad, time.Duration(py.hello.LoadMS*float64(time.Millisecond)))
		py.close()
	}
}

// nativePeak runs s in a fresh native process and returns its peak VmRSS, sampled.
func (c *comparison) nativePeak(path string, s snippet) int64 {
	cmd := exec.Command(path, "-c", s.code)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		c.b.Fatal(err)
	}
	stop := sampleRSS(cmd.Process.Pid)
	err := cmd.Wait()
	peak := stop()
	if s.want != "" {
		c.check(path, s, out.String(), err)
	}
	return peak
}

// sampleRSS polls pid's VmRSS every 5 ms until the returned function is called, which returns
// the largest value seen.
func sampleRSS(pid int) func() int64 {
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var m int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := vmRSS(pid); err == nil {
				m = max(m, v)
			}
			select {
			case <-stop:
				if v, err := vmRSS(pid); err == nil {
					m = max(m, v)
				}
				peak <- m
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-peak
	}
}

func rssOf(b *testing.B, pid int) int64 {
	v, err := vmRSS(pid)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// vmRSS reads VmRSS from /proc/<pid>/status, in bytes.
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

func pythonVersion(b *testing.B, path string) string {
	out, err := exec.Command(path, "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		b.Fatalf("%s: %v", path, exitErr(err))
	}
	return strings.TrimSpace(string(out))
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func readLoadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ms formats d in milliseconds with about three significant figures.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	case v < 1000:
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%s ms", thousands(int64(v+0.5)))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func ratio(x, base time.Duration) string {
	r := float64(x) / float64(base)
	switch {
	case r < 0.1:
		return fmt.Sprintf("%.3f", r)
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

func mib(v int64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }

func (c *comparison) markdown() string {
	var w strings.Builder
	base := "native:" + c.natives[0].path
	fmt.Fprintf(&w, "Median wall time per run, and the ratio to native `%s` (%s), a fresh process per run.\n\n",
		c.natives[0].path, c.natives[0].version)
	fmt.Fprint(&w, "| runtime |")
	for _, s := range c.snippets {
		fmt.Fprintf(&w, " %s (n=%d) | × |", s.title, s.n)
	}
	fmt.Fprint(&w, "\n|---|")
	for range c.snippets {
		fmt.Fprint(&w, "---|---|")
	}
	fmt.Fprintln(&w)
	type row struct{ key, label string }
	rows := []row{}
	for i, nat := range c.natives {
		label := fmt.Sprintf("native `%s -c` (CPython %s)", nat.path, nat.version)
		if i == 0 {
			label += ", baseline"
		}
		rows = append(rows, row{"native:" + nat.path, label})
	}
	rows = append(rows,
		row{"poolCold", fmt.Sprintf("ours, cold: new pool (%d workers, fast) + first run", c.workers)},
		row{"poolWarm", "ours, warm: pool (fast), `Pool.Run`"},
		row{"strict", "ours, warm: in-process strict, `Engine.Run`"},
		row{"sessionFirst", "ours, session (pool, NEMAR policy): a new session's first run (snapshot, prelude, snippet)"},
		row{"sessionLater", "ours, session (pool, NEMAR policy): a later run of a live session"},
	)
	if c.hasPyodide() {
		rows = append(rows,
			row{"pyodideFresh", fmt.Sprintf("Pyodide %s, fresh: `node` + `loadPyodide` + run", c.pyodideVersion)},
			row{"pyodideWarm", fmt.Sprintf("Pyodide %s, warm: loaded once, `runPython`", c.pyodideVersion)},
		)
	}
	for _, r := range rows {
		fmt.Fprintf(&w, "| %s |", r.label)
		for _, s := range c.snippets {
			m := median(c.samples[r.key][s.key])
			fmt.Fprintf(&w, " %s | %s |", ms(m), ratio(m, median(c.samples[base][s.key])))
		}
		fmt.Fprintln(&w)
	}

	fmt.Fprintf(&w, "\nResident memory (VmRSS from /proc/<pid>/status; the busy columns are the peak, sampled every 5 ms).\n\n")
	fmt.Fprint(&w, "| process | at rest | busy: CPU loop | busy: holding 100 MB | at rest after it | holding 100 MB / native |\n")
	fmt.Fprint(&w, "|---|---|---|---|---|---|\n")
	nat := c.mem["native"]
	memLine := func(label string, m memRow, after bool) {
		a := "—"
		if after {
			a = mib(m.after)
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s | %.2f |\n", label, mib(m.idle), mib(m.cpu), mib(m.hold), a,
			float64(m.hold)/float64(nat.hold))
	}
	memLine(fmt.Sprintf("native `%s -c` (at rest: `time.sleep`), baseline", c.natives[0].path), nat, false)
	memLine("ours: one `assistant sandbox-worker` (at rest: after `print(1)`)", c.mem["worker"], true)
	if c.hasPyodide() {
		memLine(fmt.Sprintf("Node %s + Pyodide (at rest: fresh, after `loadPyodide`)", c.nodeVersion), c.mem["pyodide"], true)
	}

	per := float64(c.sessTen-c.sessIdle) / 10
	fmt.Fprintf(&w, "\nTen live sessions (NEMAR policy) in one worker, each holding a 1 MB list: %s at rest, %s with the ten, %.1f MiB a session (target: at most 1 + 8 MiB).\n",
		mib(c.sessIdle), mib(c.sessTen), per/(1<<20))
	fmt.Fprintf(&w, "\nDetails: %s; our engine CPython %s under wazero %s", cpuModel(), c.strict.PythonVersion(), wazeroVersion())
	if c.hasPyodide() {
		fmt.Fprintf(&w, "; Pyodide %s (CPython %s) on Node %s, `loadPyodide` alone %s (median of %d)",
			c.pyodideVersion, c.pyodidePython, c.nodeVersion, ms(median(c.pyodideLoad)), len(c.pyodideLoad))
	}
	fmt.Fprintf(&w, ". Cold pool: start alone (every worker ready) %s of the cold total (median of %d);"+
		" with an empty compilation cache (a first deployment) the start took %s and the first `print(1)` %s."+
		" Load average %s before, %s after; %s in all.\n",
		ms(median(c.poolReady)), len(c.poolReady), ms(c.emptyCacheReady), ms(c.emptyCacheRun),
		c.loadA, c.loadB, c.elapsed.Round(time.Second))
	return w.String()
}

// wazeroVersion reads wazero's version from the module's go.mod (a test binary carries no
// dependency list in its build info).
func wazeroVersion() string {
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		return "?"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/tetratelabs/wazero" {
			return f[1]
		}
	}
	return "?"
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return fmt.Sprintf("%d cores", runtime.NumCPU())
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return fmt.Sprintf("%d × %s", runtime.NumCPU(), strings.TrimSpace(v))
		}
	}
	return fmt.Sprintf("%d cores", runtime.NumCPU())
}

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkEngineDirs compares engines side by side in one run: the engine directories listed,
// colon-separated, in ASSISTANT_BENCH_ENGINE_DIRS (e.g. the engine before and after an engine
// change), or only the test engine. For each it measures loading the engine with a cold
// compilation cache (compiling python.wasm) and with a warm one, and a worker process's
// resident memory when idle after its first run (reported as idle-rss-MB). Sizes of python.wasm
// are reported as wasm-MB. The worker binary is built from this tree, so both engines run under
// the same host code.
func BenchmarkEngineDirs(b *testing.B) {
	dirs := strings.Split(os.Getenv("ASSISTANT_BENCH_ENGINE_DIRS"), ":")
	if dirs[0] == "" {
		d, why := engineDir()
		if why != "" {
			b.Skip(why)
		}
		dirs = []string{d}
	}
	ctx := context.Background()
	for i, dir := range dirs {
		name := filepath.Base(dir)
		if i == 0 && len(dirs) > 1 {
			name = "baseline=" + name
		}
		b.Run(name+"/load-cold", func(b *testing.B) {
			for b.Loop() {
				cache := b.TempDir()
				e, err := New(ctx, Options{Dir: dir, CacheDir: cache})
				if err != nil {
					b.Fatal(err)
				}
				_ = e.Close(ctx)
			}
			if st, err := os.Stat(filepath.Join(dir, "python.wasm")); err == nil {
				b.ReportMetric(float64(st.Size())/(1<<20), "wasm-MB")
			}
		})
		b.Run(name+"/load-cached", func(b *testing.B) {
			cache := b.TempDir()
			e, err := New(ctx, Options{Dir: dir, CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			_ = e.Close(ctx)
			for b.Loop() {
				e, err := New(ctx, Options{Dir: dir, CacheDir: cache})
				if err != nil {
					b.Fatal(err)
				}
				_ = e.Close(ctx)
			}
		})
		b.Run(name+"/sqlite", func(b *testing.B) {
			// What a reader's SQL costs with the engine's SQLite build: a load, an index, a
			// group by, a window and deletes, in a fresh run each time.
			e, err := New(ctx, Options{Dir: dir, CacheDir: testCacheDir(), Mode: ModeFast})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(ctx)
			for b.Loop() {
				res, err := e.Run(ctx, Request{Source: benchSQLite, Timeout: time.Minute})
				if err != nil || res.Status != StatusOK || res.Stdout != "ok\n" {
					b.Fatalf("%v %s %q %s", err, res.Status, res.Stdout, res.Stderr)
				}
			}
		})
		b.Run(name+"/worker-idle", func(b *testing.B) {
			bin := workerBinary(b)
			cache := b.TempDir()
			var rss int64
			for b.Loop() {
				p, err := NewPool(ctx, PoolOptions{Binary: bin, Workers: 1,
					Args: []string{"sandbox-worker", "--engine-dir", dir, "--mode", "fast", "--engine-cache", cache}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Run(ctx, Request{Source: "print(1)"}); err != nil {
					b.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
				rss = rssOf(b, p.pids()[0])
				_ = p.Close()
			}
			b.ReportMetric(float64(rss)/(1<<20), "idle-rss-MB")
		})
	}
}

// benchSQLite is BenchmarkEngineDirs' SQLite workload (SQL every build of the engine runs).
const benchSQLite = `import sqlite3
db = sqlite3.connect("/tmp/b.db")
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, subject TEXT, grp INTEGER, score REAL)")
db.executemany("INSERT INTO t (subject, grp, score) VALUES (?, ?, ?)", ((f"s{i:05d}", i % 17, (i * 7919) % 1000 / 10) for i in range(50000)))
db.commit()
db.execute("CREATE INDEX t_grp ON t (grp)")
rows = db.execute("SELECT grp, count(*), avg(score) FROM t GROUP BY grp ORDER BY grp").fetchall()
ranks = db.execute("SELECT subject, rank() OVER (PARTITION BY grp ORDER BY score DESC) FROM t WHERE grp < 3").fetchall()
db.execute("DELETE FROM t WHERE score < 20")
db.commit()
assert len(rows) == 17 and len(ranks) > 0
print("ok")
`

// nemarPolicy is the shipped NEMAR community's production policy: its overlay wheel, its
// prelude (top-level await) and its fetch_allow.
func nemarPolicy(b testing.TB) Request {
	return Request{
		Wheels:     []Wheel{nemarWheel(b)},
		FetchAllow: []string{"https://zarr.nemar.org/"},
		Prelude: "import osa\nimport nemar_tools\n" +
			"nemar_tools.configure(fetch=osa.fetch_text, zarr_base=\"https://zarr.nemar.org\")\nawait nemar_tools.ready()\n",
	}
}

// BenchmarkSessionRun measures `print(1)` under NEMAR's policy: in a fresh instance per run (the
// baseline: what every server run cost before sessions), as the first run of a new session
// (start, prelude, run), and as a later run of a live session.
func BenchmarkSessionRun(b *testing.B) {
	e := testEngine(b)
	ctx := context.Background()
	req := nemarPolicy(b)
	req.Source = "print(1)"
	check := func(res Result, err error) {
		if err != nil || res.Status != StatusOK || res.Stdout != "1\n" {
			b.Fatalf("%v %s %q %s", err, res.Status, res.Stdout, res.Stderr)
		}
	}
	if _, err := e.sessionSnapshot(ctx, req); err != nil { // made in the background otherwise
		b.Fatal(err)
	}
	b.Run("baseline=fresh-instance", func(b *testing.B) {
		for b.Loop() {
			check(e.Run(ctx, req))
		}
	})
	b.Run("session-first-run", func(b *testing.B) {
		for b.Loop() {
			s := e.NewSession()
			check(s.Run(ctx, req))
			s.Close()
		}
	})
	b.Run("session-later-run", func(b *testing.B) {
		s := e.NewSession()
		defer s.Close()
		check(s.Run(ctx, req))
		for b.Loop() {
			check(s.Run(ctx, req))
		}
	})
}

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testSnapshot is the shared engine's image, failing the test when the engine cannot make one.
func testSnapshot(t *testing.T) (*Engine, *snapshot) {
	t.Helper()
	e := testEngine(t)
	s, err := e.sessionSnapshot(context.Background(), Request{})
	if err != nil || s == nil {
		t.Fatalf("no snapshot: %v (rebuild the engine with scripts/build_python_wasi.sh)", err)
	}
	return e, s
}

// TestSnapshotFile: an image saved to disk loads back whole under its engine and key, and is
// refused for another engine, another key, a flipped byte or a cut file.
func TestSnapshotFile(t *testing.T) {
	e, s := testSnapshot(t)
	path := filepath.Join(t.TempDir(), "s.snap")
	if err := writeSnapshot(path, e.sha256, s); err != nil {
		t.Fatal(err)
	}
	got, err := readSnapshot(path, e.sha256, s.key)
	if err != nil {
		t.Fatal(err)
	}
	if got.sum != s.sum || got.pages != s.pages || len(got.segs) != len(s.segs) || got.bytes() != s.bytes() {
		t.Errorf("loaded %d pages in %d segments (%s), saved %d in %d (%s)", got.pages, len(got.segs), got.sum, s.pages, len(s.segs), s.sum)
	}
	other := strings.Repeat("0", 64)
	if _, err := readSnapshot(path, other, s.key); err == nil || !strings.Contains(err.Error(), "built for engine") {
		t.Errorf("another engine's image: %v", err)
	}
	if _, err := readSnapshot(path, e.sha256, other); err == nil || !strings.Contains(err.Error(), "built for key") {
		t.Errorf("another key's image: %v", err)
	}
	raw, _ := os.ReadFile(path)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 1
	_ = os.WriteFile(path, flipped, 0o600)
	if _, err := readSnapshot(path, e.sha256, s.key); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a flipped byte: %v", err)
	}
	_ = os.WriteFile(path, raw[:len(raw)-10], 0o600)
	if _, err := readSnapshot(path, e.sha256, s.key); err == nil {
		t.Error("a cut file loaded")
	}
}

// TestSnapshotOnDisk: an engine loads the image another engine of the same build saved, and a
// file whose engine hash is not its own is refused and rebuilt (and then replaced).
func TestSnapshotOnDisk(t *testing.T) {
	shared := testEngine(t)
	dir := t.TempDir()
	open := func() *Engine {
		e, err := New(context.Background(), Options{Dir: shared.dir, CacheDir: dir, MemoryLimitPages: uint32(shared.maxMem / PageSize)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		return e
	}
	a := open()
	key := a.snapshotKey(sessionLayout(a), mustFiles(t, a), "")
	sa, from, err := a.loadOrBuildSnapshot(context.Background(), key, Request{}, mustFiles(t, a))
	if err != nil || from != "build" {
		t.Fatalf("first engine: %v %q", err, from)
	}
	b := open()
	sb, from, err := b.loadOrBuildSnapshot(context.Background(), key, Request{}, mustFiles(t, b))
	if err != nil || from != "disk" || sb.sum != sa.sum {
		t.Fatalf("second engine: %v %q", err, from)
	}
	// Another build of the engine: the file's header names the other hash.
	path := a.snapshotPath(sa.key)
	if err := writeSnapshot(path, strings.Repeat("f", 64), sa); err != nil {
		t.Fatal(err)
	}
	c := open()
	sc, from, err := c.loadOrBuildSnapshot(context.Background(), key, Request{}, mustFiles(t, c))
	if err != nil || from != "build" {
		t.Fatalf("a file of another engine was not refused: %v %q", err, from)
	}
	if _, err := readSnapshot(path, c.sha256, sc.key); err != nil {
		t.Errorf("the refused file was not replaced: %v", err)
	}
}

// TestSessionStartsFromSnapshot: a session's interpreter comes from the image, keeps its
// names from run to run, gets its own randomness, and its /data follows the run's files without
// a restart.
func TestSessionStartsFromSnapshot(t *testing.T) {
	e, _ := testSnapshot(t)
	// The prelude imports random, so the image holds it already seeded: the resume must
	// reseed it.
	const prelude = "import random\n"
	if _, err := e.sessionSnapshot(context.Background(), Request{Prelude: prelude}); err != nil {
		t.Fatal(err)
	}
	a, b := e.NewSession(), e.NewSession()
	defer a.Close()
	defer b.Close()
	ra := sessionRun(t, a, Request{Prelude: prelude, Source: "import os\nx = 41\nprint(random.getrandbits(64), os.listdir('/data'))"})
	rb := sessionRun(t, b, Request{Prelude: prelude, Source: "print(random.getrandbits(64))"})
	if ra.Status != StatusOK || rb.Status != StatusOK {
		t.Fatalf("%s %s / %s %s", ra.Status, ra.Stderr, rb.Status, rb.Stderr)
	}
	if !a.startedFromSnapshot() || !b.startedFromSnapshot() {
		t.Fatal("the interpreters did not start from the snapshot")
	}
	na, _, _ := strings.Cut(ra.Stdout, " ")
	if na == strings.TrimSpace(rb.Stdout) {
		t.Errorf("two sessions drew the same random numbers: %s", na)
	}
	if ra.Stderr != "" || rb.Stderr != "" {
		t.Errorf("stderr of a first run from the image: %q %q", ra.Stderr, rb.Stderr)
	}
	if !strings.HasSuffix(ra.Stdout, " []\n") {
		t.Errorf("an empty /data: %q", ra.Stdout)
	}
	r := sessionRun(t, a, Request{Prelude: prelude, Source: "print(x + 1, open('/data/n.csv').read())", Data: map[string][]byte{"n.csv": []byte("a,b")}})
	if r.Status != StatusOK || r.Stdout != "42 a,b\n" {
		t.Errorf("a file attached later: %s %q %s", r.Status, r.Stdout, r.Stderr)
	}
	r = sessionRun(t, a, Request{Prelude: prelude, Source: "import os\nprint(x, os.listdir('/data'))"})
	if r.Stdout != "41 []\n" || strings.Contains(r.Stderr, "restarted") {
		t.Errorf("the file removed: %q %s", r.Stdout, r.Stderr)
	}
}

func mustFiles(t *testing.T, e *Engine) memFS {
	t.Helper()
	files, err := e.policyFiles(context.Background(), Request{})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestSnapshotSessionIsolation: an interpreter started from the image keeps the sandbox's
// promises: no sockets, no host files, nothing writable outside /tmp, /data read-only, osa.fetch
// only within fetch_allow.
func TestSnapshotSessionIsolation(t *testing.T) {
	e, _ := testSnapshot(t)
	srv := testServer(t)
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")
	s := e.NewSession()
	defer s.Close()
	req := Request{FetchAllow: []string{srv.URL + "/data/"}, AllowLoopback: true, Data: map[string][]byte{"a.csv": []byte("x\n1\n")},
		Prelude: "import osa\n"}
	if _, err := e.sessionSnapshot(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Source = `import os, socket, urllib.request
out = []
for f in [lambda: socket.create_connection(("127.0.0.1", ` + port + `), timeout=2), lambda: urllib.request.urlopen(` + pyQuote(srv.URL+"/data/hello.txt") + `, timeout=2)]:
    try:
        f()
        out.append("connected")
    except Exception:
        out.append("refused")
for p in ["/etc/passwd", "/proc/self/environ", "/root"]:
    out.append("seen" if os.path.exists(p) else "absent")
for p in ["/usr/x", "/opt/osa/x", "/data/a.csv", "/data/new"]:
    try:
        open(p, "w").write("x")
        out.append("written")
    except OSError:
        out.append("refused")
out.append(open("/data/a.csv").read().split()[1])
try:
    await osa.fetch(` + pyQuote(srv.URL+"/secret") + `)
    out.append("fetched")
except osa.FetchRefused:
    out.append("fetch refused")
out.append((await osa.fetch_text(` + pyQuote(srv.URL+"/data/hello.txt") + `)).split()[0])
print(" ".join(out))
`
	res := sessionRun(t, s, req)
	want := "refused refused absent absent absent refused refused refused refused 1 fetch refused hello"
	if res.Status != StatusOK || strings.TrimSpace(res.Stdout) != want || !s.startedFromSnapshot() {
		t.Errorf("%s %q (want %q) from image %v\n%s", res.Status, res.Stdout, want, s.startedFromSnapshot(), res.Stderr)
	}
}

// TestSnapshotNeverDelaysARun: a session whose image is not ready starts cold at once (the
// image is made in the background, never inside a run's deadline); a build that fails or
// panics leaves its policy's sessions starting cold, not waiting, and is tried again later.
func TestSnapshotNeverDelaysARun(t *testing.T) {
	shared := testEngine(t)
	e, err := New(context.Background(), Options{Dir: shared.dir, CacheDir: t.TempDir(), MemoryLimitPages: uint32(shared.maxMem / PageSize)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	e.snaps.wait = 0
	release := make(chan struct{})
	build := e.snaps.make
	e.snaps.make = func(ctx context.Context, key string, req Request, files memFS) (*snapshot, string, error) {
		<-release // a build that takes as long as the test wants
		return build(ctx, key, req, files)
	}
	req := Request{Source: "print(6 * 7)", Prelude: "import json\n"}
	s := e.NewSession()
	if res := sessionRun(t, s, req); res.Stdout != "42\n" || s.startedFromSnapshot() {
		t.Errorf("while the image is made: %q, from the image %v", res.Stdout, s.startedFromSnapshot())
	}
	s.Close()
	close(release)
	if _, err := e.sessionSnapshot(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	s = e.NewSession()
	if res := sessionRun(t, s, req); res.Stdout != "42\n" || !s.startedFromSnapshot() {
		t.Errorf("once it is made: %q, from the image %v", res.Stdout, s.startedFromSnapshot())
	}
	s.Close()

	// A panicking build: the entry is ready (with its error), sessions start cold.
	e.snaps.make = func(context.Context, string, Request, memFS) (*snapshot, string, error) { panic("boom") }
	other := Request{Source: "print(1)", Prelude: "import csv\n"}
	if _, err := e.sessionSnapshot(context.Background(), other); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("a panicking build: %v", err)
	}
	s = e.NewSession()
	if res := sessionRun(t, s, other); res.Stdout != "1\n" || s.startedFromSnapshot() {
		t.Errorf("after a failed build: %q %v", res.Stdout, s.startedFromSnapshot())
	}
	s.Close()
	// Past snapshotRetry it is built again.
	e.snaps.make = build
	e.snaps.mu.Lock()
	for _, ent := range e.snaps.byKey {
		if ent.err != nil {
			ent.failed = ent.failed.Add(-2 * snapshotRetry)
		}
	}
	e.snaps.mu.Unlock()
	if snap, err := e.sessionSnapshot(context.Background(), other); err != nil || snap == nil {
		t.Errorf("the retry: %v", err)
	}
}

// TestSnapshotTooLargeStartsCold: an image larger than an instance may grow (one a process
// with a larger memory cap left on disk) starts the interpreter cold, and the refused grow
// is not mistaken for the program running out of memory.
func TestSnapshotTooLargeStartsCold(t *testing.T) {
	e, s := testSnapshot(t)
	big := *s
	big.pages = 4096 // 256 MiB
	var out strings.Builder
	o := e.run(context.Background(), instance{args: []string{"python", "-c", "raise MemoryError('not really')"},
		stdout: &out, stderr: &out, memLimit: 64 << 20, snap: &big})
	if o.memCap || o.exitCode != 1 || !strings.Contains(out.String(), "MemoryError: not really") {
		t.Errorf("cold fallback: memCap %v, exit %d, output %q", o.memCap, o.exitCode, out.String())
	}

	// A session whose cap is under the image's size does not take it.
	files := mustFiles(t, e)
	key := e.snapshotKey(sessionLayout(e), files, "")
	e.snaps.mu.Lock()
	saved := e.snaps.byKey[key]
	ready := make(chan struct{})
	close(ready)
	e.snaps.byKey[key] = &snapEntry{ready: ready, snap: &big}
	e.snaps.mu.Unlock()
	defer func() {
		e.snaps.mu.Lock()
		e.snaps.byKey[key] = saved
		e.snaps.mu.Unlock()
	}()
	sess := e.NewSession()
	defer sess.Close()
	res := sessionRun(t, sess, Request{Source: "raise MemoryError('not really')", MemoryBytes: 64 << 20})
	if sess.startedFromSnapshot() || res.Status != StatusError {
		t.Errorf("from the image %v, status %s\n%s", sess.startedFromSnapshot(), res.Status, res.Stderr)
	}
}

// sessionSnapshot waits for req's image (for tests and benchmarks).
func (e *Engine) sessionSnapshot(ctx context.Context, req Request) (*snapshot, error) {
	files, err := e.policyFiles(ctx, req)
	if err != nil {
		return nil, err
	}
	ent := e.policySnapshot(req, files)
	select {
	case <-ent.ready:
		return ent.snap, ent.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startedFromSnapshot reports whether an interpreter of the session started from the engine's
// image (for tests).
func (s *Session) startedFromSnapshot() bool { return s.snapStarts.Load() > 0 }

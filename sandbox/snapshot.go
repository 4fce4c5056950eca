package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	expsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	wsys "github.com/tetratelabs/wazero/sys"
)

// Snapshots: a live session's new interpreter starts from an image of one that has already
// started, instead of running CPython's start-up again (Wizer's pre-initialisation, done at
// run time for wazero).
//
// The engine is built with a patched main (patch_snapshot in scripts/build_python_wasi.sh):
// `python --osa-snapshot -c CODE` initialises CPython, runs CODE (snapshotDriver: the session
// driver's definitions and the standard-library imports it and osa use) and then calls the
// host import osa.checkpoint with no Python frame active. The host copies the linear memory and
// ends that instance. A new interpreter is a fresh instance of the same compiled module whose
// start function is not run: its memory is grown to the image's size, the pages that differ
// from a fresh instance's are written, and the export osa_resume runs _osa_resume(), which
// serves the session's runs as the driver does. python.wasm's only mutable global is
// __stack_pointer, and its initial value is the right one for a fresh C stack, so the memory
// is the whole state.
//
// What the image holds is what is the same for every session of one policy (a community's
// deployment): CPython initialised, the driver defined, the compiler and traceback paths used
// once, the standard-library modules the driver and osa use, osa itself and the modules the
// prelude imports (the overlay's wheels), imported but never run as the prelude. The prelude is
// never in the image: it runs in each new interpreter, as in the browser. Then gc.freeze()
// moves the image's objects out of the collector's sight, so a new interpreter's collections
// (and its exit) do not walk them. The key (snapshotKey) holds the engine's sha256, the driver,
// the guest layout, /opt/osa's files and the prelude.
//
// The file descriptors the image's libc knows (the preopened directories) must be the new
// instance's: sessions therefore always mount the same guest paths in the same order
// (sessionLayout, /data included even without files), and the layout is in the key. The
// osa_resume export runs libc's constructors again (wasm-ld wraps a command's exports so):
// the same preopens are registered a second time (lookups find the same descriptors), mimalloc
// finds itself initialised and flushes its delayed output (a newline, dropped: Session.start)
// and registers its exit handler again (which does nothing the second time).
// Randomness an import seeded is reseeded at resume; str hashing keeps the image's secret
// (PYTHONHASHSEED), shared by the interpreters started from one image, each of which is
// still alone in its session.
//
// An image is kept in memory (at most maxSnapshots, least recently used first) and, when the
// engine has a cache directory, on disk beside wazero's compilation cache (at most
// maxSnapshotFiles), with the engine's sha256 and the key in its header and a sha256 of its
// pages; a file whose engine, key or sum differ is refused and rebuilt. The disk copy is
// trusted as the compilation cache is (whoever can write either can change what the guest
// runs, never what the host does): the sum catches damage, not an attacker.

// snapshotFormat is the first line of a snapshot file.
const snapshotFormat = "osa-snapshot/1"

// snapshotExit is the exit code the checkpoint ends the building instance with.
const snapshotExit = 0x5a

// A snapshot is an interpreter's linear memory after start-up.
type snapshot struct {
	key   string
	pages uint32    // the memory's size
	segs  []segment // the pages that differ from a fresh instance's memory
	sum   string    // sha256 of the encoded segments
}

// segment is a run of pages of the image, at byte offset off.
type segment struct {
	off  uint32
	data []byte
}

// capture is where the checkpoint copies the memory of the instance being imaged; it travels
// in the instantiation's context, so no other instance can reach it.
type capture struct{ image []byte }

type captureKey struct{}

// instantiateHost adds the host module the engine imports: osa.checkpoint ends any instance
// that is not being imaged, so guest code gains nothing by reaching it.
func (e *Engine) instantiateHost(ctx context.Context) error {
	_, err := e.rt.NewHostModuleBuilder("osa").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, _ []uint64) {
			c, _ := ctx.Value(captureKey{}).(*capture)
			if c == nil || c.image != nil {
				panic(wsys.NewExitError(126))
			}
			mem := m.Memory()
			b, ok := mem.Read(0, mem.Size())
			if !ok {
				panic(wsys.NewExitError(126))
			}
			c.image = bytes.Clone(b)
			panic(wsys.NewExitError(snapshotExit))
		}), nil, nil).Export("checkpoint").Instantiate(ctx)
	return err
}

// snapshotDriver is the session driver that stops, once defined and warmed, for its image;
// _osa_resume serves the session from there.
var snapshotDriver = func() string {
	d := strings.Replace(runDriver, "\nsys.exit(_run())\n", `
def _osa_resume():
    # An interpreter started from the image: what the image froze that must not be the same
    # in every session is made anew.
    r = sys.modules.get("random")
    if r is not None:
        r.seed()
    sys.exit(_serve())
def _osa_warm(prelude):
    # What every first run would pay once more: the imports the driver and osa use, the
    # compiler's first use (it builds the ast types then), a traceback, and the modules the
    # prelude imports (the overlay's wheels), which are imported, never run as the prelude.
    # Then the heap is frozen out of the collector's sight, so no collection of a new
    # interpreter walks the image.
    import io, os, json, linecache, traceback, gc, ast
    _install()
    g = {"__builtins__": __builtins__}
    _exec("x = [i for i in range(3)]\nasync def f():\n    return 1\n", "<warm>", g)
    try:
        _exec("1/0", "<warm>", g)
    except ZeroDivisionError as e:
        traceback.print_exception(type(e), e, e.__traceback__, file=io.StringIO())
    try:
        tree = compile(prelude, "<prelude>", "exec", flags=ast.PyCF_ONLY_AST | 0x2000, dont_inherit=True)
    except BaseException:
        tree = None
    for node in tree.body if tree is not None else ():
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            try:
                __import__(name)
            except BaseException:
                pass  # the prelude meets it again, in the session's interpreter
    gc.collect()
    gc.freeze()
    sys.stdout.flush()  # nothing the warm-up left in a buffer reaches a session's first run
    sys.stderr.flush()
`, 1)
	if d == runDriver {
		panic("sandbox: the run driver no longer ends with sys.exit(_run())")
	}
	return d
}()

// snapshotKey is what an image depends on: the engine, the driver, the guest's layout, and
// the policy's /opt/osa (the osa module reads fetch_allow when imported; the wheels) and
// prelude (whose imports are warmed).
func (e *Engine) snapshotKey(layout []string, files memFS, prelude string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00%q\x00%d\x00%s", snapshotFormat, e.sha256, len(snapshotDriver), snapshotDriver, layout, len(prelude), prelude)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxSnapshots bounds the images an engine keeps in memory (one per policy in use: a
// community's deployment); the least recently used goes first.
const maxSnapshots = 16

// snapshotWait is how long a new interpreter waits for its policy's image when it is not
// ready: long enough to read one from disk, not to build one. An interpreter that does not get
// it starts cold (as before snapshots), so a build never counts against a run's deadline.
const snapshotWait = 150 * time.Millisecond

// snapshotRetry is how long a failed build is remembered before the next session tries again.
const snapshotRetry = time.Minute

// snapshots holds the engine's images by key. Each is loaded or built once, in the background,
// one build at a time, and never outlives the engine (Close waits for the build in progress).
type snapshots struct {
	mu     sync.Mutex
	byKey  map[string]*snapEntry
	tick   int64
	build  sync.Mutex     // one build at a time: each is a CPython start-up's worth of CPU
	bg     sync.WaitGroup // the builds in flight
	ctx    context.Context
	stop   context.CancelFunc
	closed bool          // set under mu by stopSnapshots: no build starts after it
	wait   time.Duration // snapshotWait; tests change it
	// make loads or builds an image (loadOrBuildSnapshot); tests replace it to fail.
	make func(ctx context.Context, key string, req Request, files memFS) (*snapshot, string, error)
}

type snapEntry struct {
	ready  chan struct{} // closed once snap or err is set
	snap   *snapshot
	err    error
	failed time.Time // when err was set
	used   int64
}

// startSnapshots prepares e's images; stopSnapshots ends a build in progress and waits for it.
func (e *Engine) startSnapshots() {
	e.snaps.byKey = map[string]*snapEntry{}
	e.snaps.ctx, e.snaps.stop = context.WithCancel(context.Background())
	e.snaps.wait, e.snaps.make = snapshotWait, e.loadOrBuildSnapshot
}

func (e *Engine) stopSnapshots() {
	e.snaps.mu.Lock()
	e.snaps.closed = true
	if e.snaps.stop != nil {
		e.snaps.stop()
	}
	e.snaps.mu.Unlock()
	e.snaps.bg.Wait() // every Add happened under mu before closed was set
}

// policySnapshot returns the key of req's image (files are req's /opt/osa, from policyFiles)
// and its entry, starting its load or build when there is none (or its last build failed more
// than snapshotRetry ago).
func (e *Engine) policySnapshot(req Request, files memFS) *snapEntry {
	key := e.snapshotKey(sessionLayout(e), files, req.Prelude)
	e.snaps.mu.Lock()
	defer e.snaps.mu.Unlock()
	e.snaps.tick++
	ent, ok := e.snaps.byKey[key]
	if ok {
		select {
		case <-ent.ready: // its fields are set (and read only) after ready closes
			if ent.err != nil && time.Since(ent.failed) > snapshotRetry {
				ok = false
			}
		default:
		}
	}
	if ok {
		ent.used = e.snaps.tick
		return ent
	}
	if e.snaps.closed {
		ent = &snapEntry{ready: make(chan struct{}), err: errors.New("sandbox: the engine is closed"), failed: time.Now()}
		close(ent.ready)
		return ent
	}
	ent = &snapEntry{ready: make(chan struct{}), used: e.snaps.tick}
	e.snaps.byKey[key] = ent
	e.snaps.evict()
	e.snaps.bg.Add(1)
	req.Data, req.Source = nil, "" // the image needs neither; do not hold them while it is made
	go e.fillSnapshot(ent, key, req, files)
	return ent
}

// fillSnapshot loads or builds ent's image; whatever happens, ent is ready afterwards.
func (e *Engine) fillSnapshot(ent *snapEntry, key string, req Request, files memFS) {
	defer e.snaps.bg.Done()
	defer close(ent.ready)
	defer func() {
		if r := recover(); r != nil {
			ent.snap, ent.err = nil, fmt.Errorf("sandbox: building the snapshot panicked: %v", r)
		}
		if ent.err != nil {
			ent.failed = time.Now()
			e.log.Warn("python snapshot unavailable; its interpreters start without it", "error", ent.err)
		}
	}()
	e.snaps.build.Lock()
	defer e.snaps.build.Unlock()
	e.snaps.mu.Lock()
	evicted := e.snaps.byKey[key] != ent
	e.snaps.mu.Unlock()
	if evicted { // dropped while it waited its turn: nobody will take it from the map
		ent.err = errors.New("sandbox: the snapshot was evicted before it was made")
		return
	}
	start := time.Now()
	s, from, err := e.snaps.make(e.snaps.ctx, key, req, files)
	ent.snap, ent.err = s, err
	if err == nil {
		e.log.Info("python snapshot ready", "from", from, "pages", s.pages, "bytes", s.bytes(),
			"duration", time.Since(start).Round(time.Millisecond))
	}
}

// readySnapshot is req's image if it is ready within snapshotWait, else nil (the interpreter
// starts cold; the image goes on being made for the next one).
func (e *Engine) readySnapshot(ctx context.Context, req Request, files memFS) *snapshot {
	ent := e.policySnapshot(req, files)
	select {
	case <-ent.ready:
		return ent.snap
	default:
	}
	t := time.NewTimer(e.snaps.wait)
	defer t.Stop()
	select {
	case <-ent.ready:
		return ent.snap
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// evict drops the least recently used images past maxSnapshots. The caller holds mu.
func (s *snapshots) evict() {
	for len(s.byKey) > maxSnapshots {
		var oldest string
		for k, ent := range s.byKey {
			if oldest == "" || ent.used < s.byKey[oldest].used {
				oldest = k
			}
		}
		delete(s.byKey, oldest)
	}
}

// snapshotPath is where the image for key is kept on disk ("" without a cache directory).
func (e *Engine) snapshotPath(key string) string {
	if e.cacheDir == "" {
		return ""
	}
	return filepath.Join(e.cacheDir, "snapshots", key[:32]+".snap")
}

func (e *Engine) loadOrBuildSnapshot(ctx context.Context, key string, req Request, files memFS) (*snapshot, string, error) {
	path := e.snapshotPath(key)
	if path != "" {
		s, err := readSnapshot(path, e.sha256, key)
		if err == nil {
			return s, "disk", nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			e.log.Warn("python snapshot on disk refused; building it again", "path", path, "error", err)
		}
	}
	s, err := e.buildSnapshot(ctx, key, req, files)
	if err != nil {
		return nil, "", err
	}
	if path != "" {
		if err := writeSnapshot(path, e.sha256, s); err != nil {
			e.log.Warn("python snapshot not saved", "path", path, "error", err)
		}
		pruneSnapshots(filepath.Dir(path), maxSnapshotFiles)
	}
	return s, "build", nil
}

// buildSnapshot starts an interpreter of req's policy with the session layout, warms it, and
// images it.
func (e *Engine) buildSnapshot(ctx context.Context, key string, req Request, files memFS) (*snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	policy, mounts, err := e.sessionPolicy(ctx, req, files, newDataFS())
	if err != nil {
		return nil, err
	}
	defer policy.close()
	prelude, _ := json.Marshal(req.Prelude) // a JSON string is a Python str literal
	c := &capture{}
	var out bytes.Buffer
	o := e.run(context.WithValue(ctx, captureKey{}, c), instance{
		args:    []string{"python", "--osa-snapshot", "-c", snapshotDriver + "_osa_warm(" + string(prelude) + ")\n"},
		stdout:  &out,
		stderr:  &out,
		scratch: newScratchFS(DefaultScratchBytes, DefaultScratchFiles),
		mounts:  mounts,
	})
	e.log.Debug("python snapshot built", "output", firstLines(out.String(), nil))
	if c.image == nil {
		return nil, fmt.Errorf("sandbox: the interpreter did not reach its checkpoint (exit code %d, %v): %s", o.exitCode, o.err, firstLines(out.String(), nil))
	}
	fresh, err := e.freshMemory(ctx)
	if err != nil {
		return nil, err
	}
	return newSnapshot(key, c.image, fresh), nil
}

// freshMemory is the linear memory of an instance that ran nothing: its data segments.
func (e *Engine) freshMemory(ctx context.Context) ([]byte, error) {
	ctx = experimental.WithMemoryAllocator(ctx, newAllocator(e.maxMem))
	mod, err := e.rt.InstantiateModule(ctx, e.compiled, e.base.WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("sandbox: instantiating the engine: %w", err)
	}
	defer mod.Close(ctx)
	b, _ := mod.Memory().Read(0, mod.Memory().Size())
	return bytes.Clone(b), nil
}

// newSnapshot keeps the pages of image that differ from fresh (zero past its end).
func newSnapshot(key string, image, fresh []byte) *snapshot {
	s := &snapshot{key: key, pages: uint32(len(image) / PageSize)}
	for off := 0; off < len(image); off += PageSize {
		page := image[off : off+PageSize]
		var was []byte
		if off < len(fresh) {
			was = fresh[off : off+PageSize]
		}
		if (was == nil && isZero(page)) || (was != nil && bytes.Equal(page, was)) {
			continue
		}
		if n := len(s.segs); n > 0 && int(s.segs[n-1].off)+len(s.segs[n-1].data) == off {
			s.segs[n-1].data = image[s.segs[n-1].off : off+PageSize]
			continue
		}
		s.segs = append(s.segs, segment{off: uint32(off), data: page})
	}
	for i := range s.segs {
		s.segs[i].data = bytes.Clone(s.segs[i].data) // let image go
	}
	s.sum = hex.EncodeToString(s.digest())
	return s
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// bytes is the image's size as kept.
func (s *snapshot) bytes() int {
	n := 0
	for _, g := range s.segs {
		n += len(g.data)
	}
	return n
}

func (s *snapshot) digest() []byte {
	h := sha256.New()
	_ = s.writeSegments(h)
	return h.Sum(nil)
}

// writeSegments writes the segments as a snapshot file holds them (and its sum covers them):
// each a little-endian uint32 offset and length, then its bytes.
func (s *snapshot) writeSegments(w io.Writer) error {
	var hdr [8]byte
	for _, g := range s.segs {
		binary.LittleEndian.PutUint32(hdr[:4], g.off)
		binary.LittleEndian.PutUint32(hdr[4:], uint32(len(g.data)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(g.data); err != nil {
			return err
		}
	}
	return nil
}

// restore writes the image into a fresh instance's memory.
func (s *snapshot) restore(mem api.Memory) error {
	if have := mem.Size() / PageSize; have < s.pages {
		if _, ok := mem.Grow(s.pages - have); !ok {
			return errors.New("sandbox: the memory cap is smaller than the snapshot")
		}
	}
	for _, g := range s.segs {
		if !mem.Write(g.off, g.data) {
			return errors.New("sandbox: the snapshot does not fit the instance's memory")
		}
	}
	return nil
}

// maxSnapshotFiles bounds the images kept on disk (old engines' and policies' images would
// otherwise pile up); the least recently written go first.
const maxSnapshotFiles = 32

// pruneSnapshots removes the oldest *.snap files of dir past keep, and temporary files a crash
// left behind.
func pruneSnapshots(dir string, keep int) {
	temps, _ := filepath.Glob(filepath.Join(dir, ".snap-*"))
	for _, p := range temps {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
			_ = os.Remove(p)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	if len(paths) <= keep {
		return
	}
	type file struct {
		path string
		mod  time.Time
	}
	files := make([]file, 0, len(paths))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			files = append(files, file{p, fi.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	for _, f := range files[min(keep, len(files)):] {
		_ = os.Remove(f.path)
	}
}

// snapshotHeader is a snapshot file's second line.
type snapshotHeader struct {
	Engine   string `json:"engine_sha256"`
	Key      string `json:"key"`
	Pages    uint32 `json:"pages"`
	Segments int    `json:"segments"`
	SHA256   string `json:"sha256"`
}

// writeSnapshot saves s under path, atomically (workers of one host share the directory).
func writeSnapshot(path, engine string, s *snapshot) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	hdr, _ := json.Marshal(snapshotHeader{Engine: engine, Key: s.key, Pages: s.pages, Segments: len(s.segs), SHA256: s.sum})
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snap-*")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(tmp)
	_, _ = fmt.Fprintf(w, "%s\n%s\n", snapshotFormat, hdr)
	err = s.writeSegments(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readSnapshot loads the image at path, refusing one built for another engine or key, or whose
// pages do not match its sum.
func readSnapshot(path, engine, key string) (*snapshot, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	format, rest, _ := bytes.Cut(raw, []byte("\n"))
	if string(format) != snapshotFormat {
		return nil, fmt.Errorf("not a %s file", snapshotFormat)
	}
	line, body, ok := bytes.Cut(rest, []byte("\n"))
	var h snapshotHeader
	if !ok || json.Unmarshal(line, &h) != nil {
		return nil, errors.New("unreadable header")
	}
	if h.Engine != engine {
		return nil, fmt.Errorf("built for engine sha256 %.16s…, not this engine's %.16s…", h.Engine, engine)
	}
	if h.Key != key {
		return nil, fmt.Errorf("built for key %.16s…, not %.16s…", h.Key, key)
	}
	if h.Pages > wasm32Pages || h.Segments < 0 || h.Segments > int(h.Pages) {
		return nil, errors.New("header out of range")
	}
	s := &snapshot{key: h.Key, pages: h.Pages, segs: make([]segment, 0, h.Segments)}
	for len(body) > 0 {
		if len(body) < 8 {
			return nil, errors.New("truncated")
		}
		off, n := binary.LittleEndian.Uint32(body[:4]), binary.LittleEndian.Uint32(body[4:8])
		body = body[8:]
		if uint64(n) > uint64(len(body)) || uint64(off)+uint64(n) > uint64(h.Pages)*PageSize {
			return nil, errors.New("a segment is out of range")
		}
		s.segs = append(s.segs, segment{off: off, data: body[:n:n]})
		body = body[n:]
	}
	if len(s.segs) != h.Segments {
		return nil, errors.New("segment count does not match its header")
	}
	if s.sum = hex.EncodeToString(s.digest()); s.sum != h.SHA256 {
		return nil, errors.New("its pages do not match their sha256")
	}
	return s, nil
}

// instantiateFrom starts cfg's instance from the image and runs osa_resume; its outcome is
// what InstantiateModule's would be for a run of _start.
func (e *Engine) instantiateFrom(ctx context.Context, s *snapshot, cfg wazero.ModuleConfig, onResume func()) error {
	mod, err := e.rt.InstantiateModule(ctx, e.compiled, cfg.WithStartFunctions())
	if err != nil {
		return err
	}
	defer mod.Close(ctx)
	if err := s.restore(mod.Memory()); err != nil {
		// The image does not fit (a cap below its size, the host short of memory): start
		// the interpreter cold instead, as without an image.
		_ = mod.Close(ctx)
		cold, err := e.rt.InstantiateModule(ctx, e.compiled, cfg)
		if cold != nil {
			_ = cold.Close(ctx)
		}
		return err
	}
	fn := mod.ExportedFunction("osa_resume")
	if fn == nil {
		return errors.New("sandbox: the engine has no osa_resume export")
	}
	if onResume != nil {
		onResume()
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return err
	}
	if len(res) == 1 && res[0] != 0 {
		return wsys.NewExitError(uint32(res[0]))
	}
	return nil
}

// dataFS is a session's /data: always mounted, so the guest's layout does not depend on the
// files, and switched to the current run's files before it starts (a file open from an
// earlier set keeps its bytes), so attaching a file never restarts the interpreter.
type dataFS struct {
	cur atomic.Pointer[expsys.FS]
}

// set makes files (name → bytes, checked names) what /data holds from now on.
func (d *dataFS) set(files map[string][]byte) error {
	m := make(memFS, len(files))
	for name, b := range files {
		if !dataNameRE.MatchString(name) || name == "." || name == ".." {
			return fmt.Errorf("sandbox: attached file name %q is not a plain file name", name)
		}
		m[name] = b
	}
	var fsys expsys.FS = &sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: m}}
	d.cur.Store(&fsys)
	return nil
}

// newDataFS is an empty /data.
func newDataFS() *dataFS {
	d := new(dataFS)
	_ = d.set(nil)
	return d
}

func (d *dataFS) fs() expsys.FS { return *d.cur.Load() }

func (d *dataFS) OpenFile(path string, flag expsys.Oflag, perm fs.FileMode) (expsys.File, expsys.Errno) {
	return d.fs().OpenFile(path, flag, perm)
}
func (d *dataFS) Lstat(path string) (wsys.Stat_t, expsys.Errno) { return d.fs().Lstat(path) }
func (d *dataFS) Stat(path string) (wsys.Stat_t, expsys.Errno)  { return d.fs().Stat(path) }
func (d *dataFS) Mkdir(path string, perm fs.FileMode) expsys.Errno {
	return d.fs().Mkdir(path, perm)
}
func (d *dataFS) Chmod(path string, perm fs.FileMode) expsys.Errno {
	return d.fs().Chmod(path, perm)
}
func (d *dataFS) Rename(from, to string) expsys.Errno       { return d.fs().Rename(from, to) }
func (d *dataFS) Rmdir(path string) expsys.Errno            { return d.fs().Rmdir(path) }
func (d *dataFS) Unlink(path string) expsys.Errno           { return d.fs().Unlink(path) }
func (d *dataFS) Link(oldPath, newPath string) expsys.Errno { return d.fs().Link(oldPath, newPath) }
func (d *dataFS) Symlink(oldPath, linkName string) expsys.Errno {
	return d.fs().Symlink(oldPath, linkName)
}
func (d *dataFS) Readlink(path string) (string, expsys.Errno) { return d.fs().Readlink(path) }
func (d *dataFS) Utimens(path string, atim, mtim int64) expsys.Errno {
	return d.fs().Utimens(path, atim, mtim)
}

// sessionPolicy is req's policy for a session's interpreter (files: its /opt/osa, from
// policyFiles), with the guest layout every session has (so an image fits any of them): the
// policy's mounts, then /data.
func (e *Engine) sessionPolicy(runCtx context.Context, req Request, files memFS, data *dataFS) (*runPolicy, []mount, error) {
	req.Data = nil // /data is the session's dataFS
	p, err := e.newRunPolicyFiles(runCtx, req, files)
	if err != nil {
		return nil, nil, err
	}
	return p, append(slices.Clone(p.mounts), mount{fs: data, guest: guestData}), nil
}

// sessionLayout is the guest paths a session's interpreter has, in the order of their file
// descriptors.
func sessionLayout(e *Engine) []string {
	l := []string{e.libGuest}
	if e.tzRoot != nil {
		l = append(l, guestZoneinfo)
	}
	return append(l, guestScratch, guestOsa, guestDevice, guestData)
}

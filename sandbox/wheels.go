package sandbox

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Wheel is one overlay wheel a run can import: the verified bytes of a pure-Python wheel
// (runtimelock.Verified.Wheel), mounted read-only at /opt/osa/wheels/Name and put on sys.path,
// so Python imports it zipped, as it would any zip archive.
type Wheel struct {
	// Name is the wheel's file name, e.g. "nemar_tools-0.1.0-py3-none-any.whl".
	Name string
	// Data is the wheel's bytes; it is not copied, and must not change while a run uses it.
	Data []byte
}

var wheelNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+!-]*\.whl$`)

// memFS is a read-only file system of in-memory files, keyed by slash paths without a leading
// slash. Directories are implied by the paths.
type memFS map[string][]byte

var memModTime = time.Unix(0, 0)

// Open implements fs.FS.
func (m memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := m[name]; ok {
		return &memFile{info: memInfo{name: path.Base(name), size: int64(len(data))}, r: bytes.NewReader(data)}, nil
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	seen := map[string]bool{}
	var entries []fs.DirEntry
	for p, data := range m {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		child, _, isDir := strings.Cut(rest, "/")
		if seen[child] {
			continue
		}
		seen[child] = true
		info := memInfo{name: child, size: int64(len(data)), dir: isDir}
		if isDir {
			info.size = 0
		}
		entries = append(entries, fs.FileInfoToDirEntry(info))
	}
	if entries == nil && name != "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return &memDir{info: memInfo{name: path.Base(name), dir: true}, entries: entries}, nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return memModTime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// memFile is an open memFS file; it can Seek and ReadAt, which zipimport needs.
type memFile struct {
	info memInfo
	r    *bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error)                { return f.info, nil }
func (f *memFile) Read(p []byte) (int, error)                { return f.r.Read(p) }
func (f *memFile) ReadAt(p []byte, off int64) (int, error)   { return f.r.ReadAt(p, off) }
func (f *memFile) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *memFile) Close() error                              { return nil }

// memDir is an open memFS directory.
type memDir struct {
	info    memInfo
	entries []fs.DirEntry
	off     int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}
func (d *memDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.off += len(rest)
	return rest, nil
}

// policyFiles builds the read-only /opt/osa of one run: the osa module, the overlay wheels, and
// the lists the guest shows in messages (fetch_allow and the available packages, each
// NUL-separated). The run driver puts every file in wheels/ on sys.path, in name order.
// Compiled bytecode is added where the engine has it (see compileDriver).
func (e *Engine) policyFiles(ctx context.Context, req Request) (memFS, error) {
	m := memFS{
		"python/osa.py": osaModule,
		"fetch_allow":   []byte(strings.Join(req.FetchAllow, "\x00")),
		"available":     []byte(strings.Join(e.available(req), "\x00")),
	}
	if name, pyc := e.osaBytecode(ctx); pyc != nil {
		m[name] = pyc
	}
	if pyc := e.driverBytecode(ctx); pyc != nil {
		m["driver.pyc"] = pyc
	}
	for _, w := range req.Wheels {
		if !wheelNameRE.MatchString(w.Name) {
			return nil, fmt.Errorf("sandbox: wheel name %q is not a wheel file name", w.Name)
		}
		p := "wheels/" + w.Name
		if _, dup := m[p]; dup {
			return nil, fmt.Errorf("sandbox: wheel %q given twice", w.Name)
		}
		m[p] = e.wheelBytecode(ctx, w)
	}
	return m, nil
}

// Bytecode for the policy's own Python.
//
// Without it every run would compile the osa module and every module of a wheel it imports
// from source (about 15 ms for osa and 45 ms for nemar_tools in strict mode), because the
// guest cannot write bytecode anywhere that outlives it. Instead the engine compiles them once
// per process in a trusted run of its own (compileDriver: compile only, nothing is executed)
// and mounts the results read-only beside the sources as unchecked hash-based .pyc files
// (PEP 552), which CPython loads without looking at the source: osa's in
// python/__pycache__/, a wheel's inside a copy of the wheel (its own entries copied
// unchanged, a .pyc added next to each .py, where zipimport looks first). Guests never write
// the cache, so one run cannot plant bytecode for the next. A module that does not compile
// gets no .pyc, and its import fails as it would anyway; if compiling fails altogether, runs
// use the sources.

// compileDriver reads "<name length> <source length>\n<name><source>" records on stdin and
// writes "<name length> <pyc length>\n<name><pyc>" records for those that compile, each
// compiled with its guest path as the file name.
const compileDriver = `import sys, _imp
import _frozen_importlib_external as be
data = sys.stdin.buffer.read()
out = sys.stdout.buffer
i = 0
while i < len(data):
    j = data.index(b"\n", i)
    a, b = (int(x) for x in data[i:j].split(b" "))
    name, src = data[j + 1:j + 1 + a], data[j + 1 + a:j + 1 + a + b]
    i = j + 1 + a + b
    try:
        code = compile(src, name.decode("utf-8"), "exec", dont_inherit=True)
    except Exception:
        continue
    pyc = be._code_to_hash_pyc(code, _imp.source_hash(be._RAW_MAGIC_NUMBER, src), False)
    out.write(b"%d %d\n" % (len(name), len(pyc)) + name + pyc)
`

// maxBytecodeEntries bounds the process-wide bytecode cache.
const maxBytecodeEntries = 64

// bytecode caches compiled results by engine and source, for the life of the process.
var bytecode struct {
	mu sync.Mutex
	m  map[string]*bytecodeEntry
}

type bytecodeEntry struct {
	done chan struct{}
	data []byte // a .pyc, or a wheel with .pyc files added; nil when compiling failed
}

// cached returns the value for key, computing it with build once even when runs ask at the
// same time. A failure is not kept, so a later run tries again.
func cached(key string, build func() ([]byte, error)) []byte {
	bytecode.mu.Lock()
	if bytecode.m == nil {
		bytecode.m = map[string]*bytecodeEntry{}
	}
	if e, ok := bytecode.m[key]; ok {
		bytecode.mu.Unlock()
		<-e.done
		return e.data
	}
	if len(bytecode.m) >= maxBytecodeEntries {
		for k, e := range bytecode.m {
			select {
			case <-e.done:
				delete(bytecode.m, k)
			default:
			}
			if len(bytecode.m) < maxBytecodeEntries {
				break
			}
		}
	}
	e := &bytecodeEntry{done: make(chan struct{})}
	bytecode.m[key] = e
	bytecode.mu.Unlock()

	data, err := build()
	bytecode.mu.Lock()
	if err != nil {
		delete(bytecode.m, key)
	} else {
		e.data = data
	}
	bytecode.mu.Unlock()
	close(e.done)
	return e.data
}

// compileSources compiles Python sources (guest path → source) in a fresh instance and
// returns the .pyc of each that compiles.
func (e *Engine) compileSources(ctx context.Context, sources map[string][]byte) (map[string][]byte, error) {
	var in []byte
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		in = fmt.Appendf(in, "%d %d\n", len(name), len(sources[name]))
		in = append(append(in, name...), sources[name]...)
	}
	ctx, cancel := context.WithTimeout(ctx, syntaxTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	o := e.run(ctx, instance{
		args:     []string{"python", "-S", "-c", compileDriver},
		stdin:    in,
		stdout:   &limitedBuffer{buf: &stdout, max: 256 << 20},
		stderr:   &limitedBuffer{buf: &stderr, max: 64 << 10},
		memLimit: syntaxMemory,
	})
	if o.err != nil {
		return nil, fmt.Errorf("sandbox: compiling the policy's Python: %s", firstLines(stderr.String(), o.err))
	}
	out := map[string][]byte{}
	data := stdout.Bytes()
	for len(data) > 0 {
		head, rest, ok := bytes.Cut(data, []byte("\n"))
		var a, b int
		if _, err := fmt.Sscanf(string(head), "%d %d", &a, &b); !ok || err != nil || a < 0 || b < 0 || a+b > len(rest) {
			return nil, errors.New("sandbox: compiling the policy's Python: a malformed answer")
		}
		out[string(rest[:a])] = rest[a : a+b]
		data = rest[a+b:]
	}
	return out, nil
}

// osaBytecode returns the osa module's .pyc and its path under /opt/osa, or nil.
func (e *Engine) osaBytecode(ctx context.Context) (string, []byte) {
	major, rest, _ := strings.Cut(e.python, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if major == "" || minor == "" {
		return "", nil
	}
	name := "python/__pycache__/osa.cpython-" + major + minor + ".pyc"
	sum := sha256.Sum256(osaModule)
	pyc := cached(e.sha256+" osa "+hex.EncodeToString(sum[:]), func() ([]byte, error) {
		out, err := e.compileSources(ctx, map[string][]byte{guestOsaPy + "/osa.py": osaModule})
		if err != nil {
			return nil, err
		}
		return out[guestOsaPy+"/osa.py"], nil
	})
	if pyc == nil {
		return "", nil
	}
	return name, pyc
}

// driverBootstrap runs the run driver from its bytecode in /opt/osa, in the namespace a
// "python -c runDriver" would give it.
const driverBootstrap = `import marshal
with open("/opt/osa/driver.pyc", "rb") as f:
    exec(marshal.loads(f.read()[16:]))
`

// driverBytecode returns runDriver compiled (as "<string>", like -c), or nil. It saves
// compiling the driver in every run (about 20 ms in strict mode).
func (e *Engine) driverBytecode(ctx context.Context) []byte {
	sum := sha256.Sum256([]byte(runDriver))
	return cached(e.sha256+" driver "+hex.EncodeToString(sum[:]), func() ([]byte, error) {
		out, err := e.compileSources(ctx, map[string][]byte{"<string>": []byte(runDriver)})
		if err != nil {
			return nil, err
		}
		if out["<string>"] == nil {
			return nil, errors.New("sandbox: the run driver does not compile")
		}
		return out["<string>"], nil
	})
}

// wheelBytecode returns w's bytes with a .pyc added beside each .py member that compiles, or
// w's own bytes when that cannot be done.
func (e *Engine) wheelBytecode(ctx context.Context, w Wheel) []byte {
	sum := sha256.Sum256(w.Data)
	data := cached(e.sha256+" wheel "+w.Name+" "+hex.EncodeToString(sum[:]), func() ([]byte, error) {
		return e.addBytecode(ctx, w)
	})
	if data == nil {
		return w.Data
	}
	return data
}

func (e *Engine) addBytecode(ctx context.Context, w Wheel) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(w.Data), int64(len(w.Data)))
	if err != nil {
		return nil, err
	}
	base := guestOsa + "/wheels/" + w.Name + "/"
	sources := map[string][]byte{}
	have := map[string]bool{}
	for _, f := range zr.File {
		have[f.Name] = true
		if !strings.HasSuffix(f.Name, ".py") || f.UncompressedSize64 > 16<<20 {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		src, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return nil, err
		}
		sources[base+f.Name] = src
	}
	compiled, err := e.compileSources(ctx, sources)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if err := zw.Copy(f); err != nil {
			return nil, err
		}
		pycName := strings.TrimSuffix(f.Name, ".py") + ".pyc"
		pyc, ok := compiled[base+f.Name]
		if !ok || !strings.HasSuffix(f.Name, ".py") || have[pycName] {
			continue
		}
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: pycName, Method: zip.Store, Modified: f.Modified})
		if err != nil {
			return nil, err
		}
		if _, err := fw.Write(pyc); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

package sandbox

import (
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	expsys "github.com/tetratelabs/wazero/experimental/sys"
	wsys "github.com/tetratelabs/wazero/sys"
)

// errFull is the error for a write or create past the scratch caps. WASI preview 1 has no
// ENOSPC that wazero can pass on, so the guest sees EIO ("OSError: [Errno 29] I/O error").
const errFull = expsys.EIO

// scratchFS is the in-memory, writable directory a run sees at /tmp. It lives and dies with
// one run. It holds regular files and directories only: Symlink and Link are refused, so
// nothing created here can point anywhere else, and it never touches the host file system.
// Its total file bytes and its number of entries are capped; a write past the cap fails with
// errFull.
//
// wazero hands it paths already cleaned and relative to the mount ("." is the root), and
// serialises nothing, so every method takes the lock.
type scratchFS struct {
	expsys.UnimplementedFS
	mu       sync.Mutex
	root     *node
	nextIno  uint64
	used     int64 // file bytes held
	maxBytes int64
	nodes    int
	maxNodes int
}

type node struct {
	ino      uint64
	dir      bool
	perm     fs.FileMode
	data     []byte
	children map[string]*node
	atim     int64
	mtim     int64
	ctim     int64
	open     int  // open files
	unlinked bool // removed from the tree; its bytes are released at the last close
}

func newScratchFS(maxBytes int64, maxNodes int) *scratchFS {
	s := &scratchFS{maxBytes: maxBytes, maxNodes: maxNodes}
	s.root = s.newNode(true, 0o777)
	return s
}

func (s *scratchFS) newNode(dir bool, perm fs.FileMode) *node {
	s.nextIno++
	s.nodes++
	now := time.Now().UnixNano()
	n := &node{ino: s.nextIno, dir: dir, perm: perm & fs.ModePerm, atim: now, mtim: now, ctim: now}
	if dir {
		n.children = map[string]*node{}
	}
	return n
}

func (n *node) stat() wsys.Stat_t {
	st := wsys.Stat_t{Dev: 1, Ino: n.ino, Mode: n.perm, Nlink: 1, Size: int64(len(n.data)),
		Atim: n.atim, Mtim: n.mtim, Ctim: n.ctim}
	if n.dir {
		st.Mode |= fs.ModeDir
		st.Nlink = 2
		st.Size = 0
	}
	return st
}

// split cleans p and tells whether it named a directory with a trailing slash.
func split(p string) (clean string, mustDir bool) {
	mustDir = strings.HasSuffix(p, "/")
	clean = path.Clean(strings.TrimSuffix(p, "/"))
	if clean == "" {
		clean = "."
	}
	return clean, mustDir
}

// lookup walks p from the root.
func (s *scratchFS) lookup(p string) (*node, expsys.Errno) {
	n := s.root
	if p == "." {
		return n, 0
	}
	for _, name := range strings.Split(p, "/") {
		if !n.dir {
			return nil, expsys.ENOTDIR
		}
		c, ok := n.children[name]
		if !ok {
			return nil, expsys.ENOENT
		}
		n = c
	}
	return n, 0
}

// parent returns the directory that holds p, and p's last element.
func (s *scratchFS) parent(p string) (*node, string, expsys.Errno) {
	if p == "." {
		return nil, "", expsys.EINVAL
	}
	dir, name := path.Split(p)
	d, errno := s.lookup(path.Clean("./" + dir))
	if errno != 0 {
		return nil, "", errno
	}
	if !d.dir {
		return nil, "", expsys.ENOTDIR
	}
	return d, name, 0
}

// resize changes n's length, within the byte cap.
func (s *scratchFS) resize(n *node, size int64) expsys.Errno {
	delta := size - int64(len(n.data))
	if delta > 0 && s.used+delta > s.maxBytes {
		return errFull
	}
	if size <= int64(cap(n.data)) {
		clear(n.data[min(int64(len(n.data)), size):size])
		n.data = n.data[:size]
	} else {
		grown := make([]byte, size, max(size, min(2*int64(cap(n.data)), s.maxBytes)))
		copy(grown, n.data)
		n.data = grown
	}
	s.used += delta
	n.mtim = time.Now().UnixNano()
	return 0
}

// OpenFile implements expsys.FS.
func (s *scratchFS) OpenFile(p string, flag expsys.Oflag, perm fs.FileMode) (expsys.File, expsys.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, mustDir := split(p)
	write := flag&(expsys.O_WRONLY|expsys.O_RDWR) != 0
	n, errno := s.lookup(p)
	switch {
	case errno == expsys.ENOENT && flag&expsys.O_CREAT != 0:
		if mustDir || flag&expsys.O_DIRECTORY != 0 {
			return nil, expsys.EISDIR
		}
		d, name, errno := s.parent(p)
		if errno != 0 {
			return nil, errno
		}
		if s.nodes >= s.maxNodes {
			return nil, errFull
		}
		n = s.newNode(false, perm)
		d.children[name] = n
		d.mtim = n.mtim
	case errno != 0:
		return nil, errno
	case flag&expsys.O_CREAT != 0 && flag&expsys.O_EXCL != 0:
		return nil, expsys.EEXIST
	case n.dir && write:
		return nil, expsys.EISDIR
	case !n.dir && (mustDir || flag&expsys.O_DIRECTORY != 0):
		return nil, expsys.ENOTDIR
	case !n.dir && write && flag&expsys.O_TRUNC != 0:
		if errno := s.resize(n, 0); errno != 0 {
			return nil, errno
		}
	}
	n.open++
	f := &scratchFile{fs: s, n: n, read: flag&expsys.O_WRONLY == 0, write: write,
		append: flag&expsys.O_APPEND != 0}
	f.seeker.f = f
	return f, 0
}

// Stat implements expsys.FS.
func (s *scratchFS) Stat(p string) (wsys.Stat_t, expsys.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, mustDir := split(p)
	n, errno := s.lookup(p)
	if errno != 0 {
		return wsys.Stat_t{}, errno
	}
	if mustDir && !n.dir {
		return wsys.Stat_t{}, expsys.ENOTDIR
	}
	return n.stat(), 0
}

// Lstat implements expsys.FS. There are no symbolic links, so it is Stat.
func (s *scratchFS) Lstat(p string) (wsys.Stat_t, expsys.Errno) { return s.Stat(p) }

// Mkdir implements expsys.FS.
func (s *scratchFS) Mkdir(p string, perm fs.FileMode) expsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _ = split(p)
	if p == "." {
		return expsys.EEXIST
	}
	d, name, errno := s.parent(p)
	if errno != 0 {
		return errno
	}
	if _, ok := d.children[name]; ok {
		return expsys.EEXIST
	}
	if s.nodes >= s.maxNodes {
		return errFull
	}
	n := s.newNode(true, perm)
	d.children[name] = n
	d.mtim = n.mtim
	return 0
}

// Chmod implements expsys.FS.
func (s *scratchFS) Chmod(p string, perm fs.FileMode) expsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _ = split(p)
	n, errno := s.lookup(p)
	if errno != 0 {
		return errno
	}
	n.perm = perm & fs.ModePerm
	n.ctim = time.Now().UnixNano()
	return 0
}

// Rename implements expsys.FS, with POSIX rename(2) rules.
func (s *scratchFS) Rename(from, to string) expsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, _ = split(from)
	to, _ = split(to)
	src, errno := s.lookup(from)
	if errno != 0 {
		return errno
	}
	if from == "." || to == "." {
		return expsys.EPERM
	}
	if src.dir && (to == from || strings.HasPrefix(to, from+"/")) {
		if to == from {
			return 0
		}
		return expsys.EINVAL // into its own subtree
	}
	fd, fname, errno := s.parent(from)
	if errno != 0 {
		return errno
	}
	td, tname, errno := s.parent(to)
	if errno != 0 {
		return errno
	}
	if dst, ok := td.children[tname]; ok {
		if dst == src {
			return 0
		}
		switch {
		case src.dir && !dst.dir:
			return expsys.ENOTDIR
		case !src.dir && dst.dir:
			return expsys.EISDIR
		case dst.dir && len(dst.children) > 0:
			return expsys.ENOTEMPTY
		}
		s.drop(dst)
	}
	delete(fd.children, fname)
	td.children[tname] = src
	now := time.Now().UnixNano()
	fd.mtim, td.mtim, src.ctim = now, now, now
	return 0
}

// drop accounts for n leaving the tree.
func (s *scratchFS) drop(n *node) {
	s.nodes--
	n.unlinked = true
	if n.open == 0 {
		s.used -= int64(len(n.data))
		n.data = nil
	}
}

// Rmdir implements expsys.FS.
func (s *scratchFS) Rmdir(p string) expsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _ = split(p)
	if p == "." {
		return expsys.EPERM
	}
	d, name, errno := s.parent(p)
	if errno != 0 {
		return errno
	}
	n, ok := d.children[name]
	switch {
	case !ok:
		return expsys.ENOENT
	case !n.dir:
		return expsys.ENOTDIR
	case len(n.children) > 0:
		return expsys.ENOTEMPTY
	}
	delete(d.children, name)
	s.drop(n)
	return 0
}

// Unlink implements expsys.FS.
func (s *scratchFS) Unlink(p string) expsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _ = split(p)
	if p == "." {
		return expsys.EISDIR
	}
	d, name, errno := s.parent(p)
	if errno != 0 {
		return errno
	}
	n, ok := d.children[name]
	switch {
	case !ok:
		return expsys.ENOENT
	case n.dir:
		return expsys.EISDIR
	}
	delete(d.children, name)
	s.drop(n)
	return 0
}

// Link implements expsys.FS: hard links are not supported.
func (s *scratchFS) Link(string, string) expsys.Errno { return expsys.EPERM }

// Symlink implements expsys.FS: symbolic links are not supported, so none can lead out.
func (s *scratchFS) Symlink(string, string) expsys.Errno { return expsys.EPERM }

// Readlink implements expsys.FS: nothing here is a link.
func (s *scratchFS) Readlink(p string) (string, expsys.Errno) {
	if _, errno := s.Stat(p); errno != 0 {
		return "", errno
	}
	return "", expsys.EINVAL
}

// Utimens implements expsys.FS.
func (s *scratchFS) Utimens(p string, atim, mtim int64) expsys.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, _ = split(p)
	n, errno := s.lookup(p)
	if errno != 0 {
		return errno
	}
	n.utimens(atim, mtim)
	return 0
}

func (n *node) utimens(atim, mtim int64) {
	if atim != expsys.UTIME_OMIT {
		n.atim = atim
	}
	if mtim != expsys.UTIME_OMIT {
		n.mtim = mtim
	}
	n.ctim = time.Now().UnixNano()
}

// scratchFile is one open file or directory of a scratchFS.
type scratchFile struct {
	seeker[int64]
	fs      *scratchFS
	n       *node
	read    bool
	write   bool
	append  bool
	off     int64
	closed  bool
	dirents []expsys.Dirent // directory listing, taken at the first Readdir after open or rewind
	listed  bool
}

func (f *scratchFile) Dev() (uint64, expsys.Errno)     { return 1, 0 }
func (f *scratchFile) Ino() (wsys.Inode, expsys.Errno) { return f.n.ino, 0 }
func (f *scratchFile) IsDir() (bool, expsys.Errno)     { return f.n.dir, 0 }
func (f *scratchFile) IsAppend() bool                  { return f.append }

func (f *scratchFile) SetAppend(enable bool) expsys.Errno {
	f.append = enable
	return 0
}

func (f *scratchFile) Stat() (wsys.Stat_t, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return wsys.Stat_t{}, expsys.EBADF
	}
	return f.n.stat(), 0
}

func (f *scratchFile) Read(buf []byte) (int, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n, errno := f.pread(buf, f.off)
	f.off += int64(n)
	return n, errno
}

func (f *scratchFile) Pread(buf []byte, off int64) (int, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.pread(buf, off)
}

func (f *scratchFile) pread(buf []byte, off int64) (int, expsys.Errno) {
	switch {
	case f.closed || !f.read:
		return 0, expsys.EBADF
	case f.n.dir:
		return 0, expsys.EISDIR
	case off < 0:
		return 0, expsys.EINVAL
	case off >= int64(len(f.n.data)):
		return 0, 0
	}
	n := copy(buf, f.n.data[off:])
	f.n.atim = time.Now().UnixNano()
	return n, 0
}

var _ expsys.File = (*scratchFile)(nil)

// seeker gives scratchFile its Seek method. It is generic only because go vet's stdmethods
// check wants every method named Seek to have io.Seeker's signature, and wazero's File.Seek
// returns an Errno; instantiated with int64 it has exactly the signature wazero needs.
type seeker[O ~int64] struct{ f *scratchFile }

// Seek implements expsys.File.
func (s seeker[O]) Seek(offset O, whence int) (int64, expsys.Errno) {
	return s.f.seek(int64(offset), whence)
}

func (f *scratchFile) seek(offset int64, whence int) (int64, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, expsys.EBADF
	}
	if f.n.dir {
		if offset != 0 || whence != io.SeekStart {
			return 0, expsys.EINVAL
		}
		f.listed, f.dirents = false, nil
		return 0, 0
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.off
	case io.SeekEnd:
		base = int64(len(f.n.data))
	default:
		return 0, expsys.EINVAL
	}
	if offset < -base {
		return 0, expsys.EINVAL
	}
	f.off = base + offset
	return f.off, 0
}

func (f *scratchFile) Readdir(n int) ([]expsys.Dirent, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.closed:
		return nil, expsys.EBADF
	case !f.n.dir:
		return nil, expsys.EBADF
	}
	if !f.listed {
		names := make([]string, 0, len(f.n.children))
		for name := range f.n.children {
			names = append(names, name)
		}
		sort.Strings(names)
		f.dirents = make([]expsys.Dirent, 0, len(names))
		for _, name := range names {
			c := f.n.children[name]
			d := expsys.Dirent{Ino: c.ino, Name: name}
			if c.dir {
				d.Type = fs.ModeDir
			}
			f.dirents = append(f.dirents, d)
		}
		f.listed = true
	}
	if n <= 0 || n > len(f.dirents) {
		n = len(f.dirents)
	}
	out := f.dirents[:n:n]
	f.dirents = f.dirents[n:]
	return out, 0
}

func (f *scratchFile) Write(buf []byte) (int, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	off := f.off
	if f.append {
		off = int64(len(f.n.data))
	}
	n, errno := f.pwrite(buf, off)
	f.off = off + int64(n)
	return n, errno
}

func (f *scratchFile) Pwrite(buf []byte, off int64) (int, expsys.Errno) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.pwrite(buf, off)
}

func (f *scratchFile) pwrite(buf []byte, off int64) (int, expsys.Errno) {
	switch {
	case f.closed || !f.write:
		return 0, expsys.EBADF
	case f.n.dir:
		return 0, expsys.EISDIR
	case off < 0:
		return 0, expsys.EINVAL
	case len(buf) == 0:
		return 0, 0
	case off > f.fs.maxBytes || int64(len(buf)) > f.fs.maxBytes-off:
		return 0, errFull
	}
	if end := off + int64(len(buf)); end > int64(len(f.n.data)) {
		if errno := f.fs.resize(f.n, end); errno != 0 {
			return 0, errno
		}
	}
	copy(f.n.data[off:], buf)
	f.n.mtim = time.Now().UnixNano()
	return len(buf), 0
}

func (f *scratchFile) Truncate(size int64) expsys.Errno {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.closed || !f.write:
		return expsys.EBADF
	case f.n.dir:
		return expsys.EISDIR
	case size < 0:
		return expsys.EINVAL
	case size > f.fs.maxBytes:
		return errFull
	}
	return f.fs.resize(f.n, size)
}

func (f *scratchFile) Sync() expsys.Errno     { return 0 }
func (f *scratchFile) Datasync() expsys.Errno { return 0 }

func (f *scratchFile) Utimens(atim, mtim int64) expsys.Errno {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return expsys.EBADF
	}
	f.n.utimens(atim, mtim)
	return 0
}

func (f *scratchFile) Close() expsys.Errno {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0
	}
	f.closed = true
	f.n.open--
	if f.n.unlinked && f.n.open == 0 {
		f.fs.used -= int64(len(f.n.data))
		f.n.data = nil
	}
	return 0
}

package sandbox

import (
	"io"
	"io/fs"
	"testing"

	expsys "github.com/tetratelabs/wazero/experimental/sys"
)

func mustOpen(t *testing.T, s *scratchFS, p string, flag expsys.Oflag) expsys.File {
	t.Helper()
	f, errno := s.OpenFile(p, flag, 0o644)
	if errno != 0 {
		t.Fatalf("OpenFile(%q, %v) = %v", p, flag, errno)
	}
	return f
}

func readAll(t *testing.T, f expsys.File) string {
	t.Helper()
	if _, errno := f.Seek(0, io.SeekStart); errno != 0 {
		t.Fatalf("Seek: %v", errno)
	}
	var out []byte
	buf := make([]byte, 3)
	for {
		n, errno := f.Read(buf)
		if errno != 0 {
			t.Fatalf("Read: %v", errno)
		}
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

func TestScratchFiles(t *testing.T) {
	s := newScratchFS(100, 10)
	f := mustOpen(t, s, "a.txt", expsys.O_RDWR|expsys.O_CREAT)
	if n, errno := f.Write([]byte("hello")); n != 5 || errno != 0 {
		t.Fatalf("Write = %d, %v", n, errno)
	}
	if n, errno := f.Pwrite([]byte("J"), 0); n != 1 || errno != 0 {
		t.Fatalf("Pwrite = %d, %v", n, errno)
	}
	if got := readAll(t, f); got != "Jello" {
		t.Errorf("content = %q, want Jello", got)
	}
	if off, errno := f.Seek(-2, io.SeekEnd); off != 3 || errno != 0 {
		t.Errorf("Seek(-2, end) = %d, %v; want 3", off, errno)
	}
	if _, errno := f.Seek(-10, io.SeekCurrent); errno != expsys.EINVAL {
		t.Errorf("Seek before the start: %v, want EINVAL", errno)
	}
	// A write past the end leaves a zero-filled hole.
	if _, errno := f.Pwrite([]byte("!"), 7); errno != 0 {
		t.Fatal(errno)
	}
	if got := readAll(t, f); got != "Jello\x00\x00!" {
		t.Errorf("content = %q, want a hole", got)
	}
	if errno := f.Truncate(2); errno != 0 {
		t.Fatal(errno)
	}
	if errno := f.Truncate(4); errno != 0 {
		t.Fatal(errno)
	}
	if got := readAll(t, f); got != "Je\x00\x00" {
		t.Errorf("after truncating down and up: %q, want the old bytes gone", got)
	}
	st, errno := s.Stat("a.txt")
	if errno != 0 || st.Size != 4 || st.Mode.IsDir() {
		t.Errorf("Stat = %+v, %v", st, errno)
	}
	_ = f.Close()

	// O_APPEND, O_TRUNC, O_EXCL, read-only.
	f = mustOpen(t, s, "a.txt", expsys.O_WRONLY|expsys.O_APPEND)
	_, _ = f.Write([]byte("zz"))
	_ = f.Close()
	f = mustOpen(t, s, "a.txt", expsys.O_RDONLY)
	if got := readAll(t, f); got != "Je\x00\x00zz" {
		t.Errorf("after append: %q", got)
	}
	if _, errno := f.Write([]byte("x")); errno != expsys.EBADF {
		t.Errorf("Write on a read-only file: %v, want EBADF", errno)
	}
	_ = f.Close()
	if _, errno := s.OpenFile("a.txt", expsys.O_CREAT|expsys.O_EXCL|expsys.O_WRONLY, 0o644); errno != expsys.EEXIST {
		t.Errorf("O_EXCL on an existing file: %v, want EEXIST", errno)
	}
	f = mustOpen(t, s, "a.txt", expsys.O_WRONLY|expsys.O_TRUNC)
	_ = f.Close()
	if st, _ := s.Stat("a.txt"); st.Size != 0 {
		t.Errorf("size after O_TRUNC = %d", st.Size)
	}
	if _, errno := s.OpenFile("missing", expsys.O_RDONLY, 0); errno != expsys.ENOENT {
		t.Errorf("open missing: %v, want ENOENT", errno)
	}
	if _, errno := s.OpenFile("a.txt/x", expsys.O_RDONLY, 0); errno != expsys.ENOTDIR {
		t.Errorf("open under a file: %v, want ENOTDIR", errno)
	}
	if _, errno := s.OpenFile("a.txt/", expsys.O_RDONLY, 0); errno != expsys.ENOTDIR {
		t.Errorf("open a file with a trailing slash: %v, want ENOTDIR", errno)
	}
}

func TestScratchDirectories(t *testing.T) {
	s := newScratchFS(100, 10)
	for _, d := range []string{"d", "d/e"} {
		if errno := s.Mkdir(d, 0o755); errno != 0 {
			t.Fatalf("Mkdir(%q) = %v", d, errno)
		}
	}
	if errno := s.Mkdir("d", 0o755); errno != expsys.EEXIST {
		t.Errorf("Mkdir existing: %v, want EEXIST", errno)
	}
	if errno := s.Mkdir("x/y", 0o755); errno != expsys.ENOENT {
		t.Errorf("Mkdir without parent: %v, want ENOENT", errno)
	}
	f := mustOpen(t, s, "d/f", expsys.O_WRONLY|expsys.O_CREAT)
	_, _ = f.Write([]byte("abc"))
	_ = f.Close()

	dir := mustOpen(t, s, "d", expsys.O_RDONLY|expsys.O_DIRECTORY)
	ents, errno := dir.Readdir(-1)
	if errno != 0 || len(ents) != 2 || ents[0].Name != "e" || !ents[0].IsDir() || ents[1].Name != "f" || ents[1].IsDir() {
		t.Errorf("Readdir = %v, %v; want [e/ f]", ents, errno)
	}
	if _, errno := dir.Write([]byte("x")); errno == 0 {
		t.Error("Write to a directory succeeded")
	}
	_ = dir.Close()
	if _, errno := s.OpenFile("d", expsys.O_WRONLY, 0); errno != expsys.EISDIR {
		t.Errorf("open a directory for writing: %v, want EISDIR", errno)
	}

	if errno := s.Rmdir("d"); errno != expsys.ENOTEMPTY {
		t.Errorf("Rmdir non-empty: %v, want ENOTEMPTY", errno)
	}
	if errno := s.Rename("d", "d/e/g"); errno != expsys.EINVAL {
		t.Errorf("Rename into own subtree: %v, want EINVAL", errno)
	}
	if errno := s.Rename("d/f", "g"); errno != 0 {
		t.Fatalf("Rename file: %v", errno)
	}
	if errno := s.Rename("g", "d/e"); errno != expsys.EISDIR {
		t.Errorf("Rename file over a directory: %v, want EISDIR", errno)
	}
	if errno := s.Rename("d", "g"); errno != expsys.ENOTDIR {
		t.Errorf("Rename directory over a file: %v, want ENOTDIR", errno)
	}
	if errno := s.Unlink("d/e"); errno != expsys.EISDIR {
		t.Errorf("Unlink a directory: %v, want EISDIR", errno)
	}
	if errno := s.Rmdir("d/e"); errno != 0 {
		t.Fatal(errno)
	}
	if errno := s.Rename("g", "d/h"); errno != 0 {
		t.Fatal(errno)
	}
	if st, errno := s.Stat("d/h"); errno != 0 || st.Size != 3 {
		t.Errorf("moved file: %+v, %v", st, errno)
	}
	if errno := s.Symlink("/etc/passwd", "p"); errno != expsys.EPERM {
		t.Errorf("Symlink = %v, want EPERM", errno)
	}
	if errno := s.Link("d/h", "l"); errno != expsys.EPERM {
		t.Errorf("Link = %v, want EPERM", errno)
	}
	if _, errno := s.Readlink("d/h"); errno != expsys.EINVAL {
		t.Errorf("Readlink of a file = %v, want EINVAL", errno)
	}
	if st, errno := s.Stat("."); errno != 0 || st.Mode&fs.ModeDir == 0 {
		t.Errorf("Stat(.) = %+v, %v", st, errno)
	}
	if errno := s.Rmdir("."); errno == 0 {
		t.Error("Rmdir of the root succeeded")
	}
}

func TestScratchCaps(t *testing.T) {
	s := newScratchFS(10, 3) // the root counts as one entry
	f := mustOpen(t, s, "a", expsys.O_RDWR|expsys.O_CREAT)
	if n, errno := f.Write([]byte("0123456789")); n != 10 || errno != 0 {
		t.Fatalf("Write up to the cap = %d, %v", n, errno)
	}
	if _, errno := f.Write([]byte("x")); errno != errFull {
		t.Errorf("Write past the byte cap: %v, want %v", errno, errFull)
	}
	if _, errno := f.Pwrite([]byte("x"), 1<<62); errno != errFull {
		t.Errorf("Pwrite far past the cap: %v, want %v", errno, errFull)
	}
	if errno := f.Truncate(1 << 40); errno != errFull {
		t.Errorf("Truncate past the cap: %v, want %v", errno, errFull)
	}
	if errno := s.Mkdir("d", 0o755); errno != 0 {
		t.Fatal(errno)
	}
	if _, errno := s.OpenFile("b", expsys.O_WRONLY|expsys.O_CREAT, 0o644); errno != errFull {
		t.Errorf("create past the entry cap: %v, want %v", errno, errFull)
	}
	// Unlinking an open file keeps its bytes until the last close.
	if errno := s.Unlink("a"); errno != 0 {
		t.Fatal(errno)
	}
	if s.used != 10 {
		t.Errorf("used = %d after unlinking an open file, want 10", s.used)
	}
	_ = f.Close()
	if s.used != 0 {
		t.Errorf("used = %d after the last close, want 0", s.used)
	}
	g := mustOpen(t, s, "b", expsys.O_WRONLY|expsys.O_CREAT)
	if n, errno := g.Write([]byte("0123456789")); n != 10 || errno != 0 {
		t.Errorf("Write after space was freed = %d, %v", n, errno)
	}
	_ = g.Close()
}

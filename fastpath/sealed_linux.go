package fastpath

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Sealed is a copy of a large precomputed body in a sealed memory file (memfd), sent with
// sendfile(2): the kernel hands its own pages to the socket instead of copying the bytes from
// the process on every answer, as nginx does with a file in the page cache. The seals forbid
// any write, shrink or grow, so the bytes sent are the bytes sealed. The file is closed when
// the Sealed is garbage (os.File's cleanup), so a reload's old bodies go with the old catalog,
// after the answers still sending them.
type Sealed struct {
	file *os.File
	fd   int
	size int64
}

// MinSealed is the smallest body worth a memory file: below it one copy costs less than a
// second system call.
const MinSealed = 64 << 10

// Seal copies data into a sealed memory file. It returns nil when data is smaller than
// MinSealed or the system will not make one (callers then send data from memory).
func Seal(data []byte) *Sealed {
	if len(data) < MinSealed {
		return nil
	}
	fd, err := unix.MemfdCreate("assistant-body", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "assistant-body")
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		_ = f.Close()
		return nil
	}
	return &Sealed{file: f, fd: fd, size: int64(len(data))}
}

// sealedSends counts the answers sent with sendfile, for the tests.
var sealedSends atomic.Uint64

//go:build unix

package sandbox

import "syscall"

// mapMemory reserves size bytes of zeroed, lazily backed memory, or returns nil.
func mapMemory(size uint64) []byte {
	if size == 0 || size > 1<<32 {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, mapFlags)
	if err != nil {
		return nil
	}
	return b
}

func unmapMemory(b []byte) { _ = syscall.Munmap(b) }

package sandbox

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// allocator hands wazero the linear memory of one instance and records how large it grew.
// A request to grow past limit fails, which the guest's malloc reports as MemoryError, and is
// recorded (refused): that record, not anything the guest says, is how Run knows a run ran out
// of memory. The engine's wazero runtime allows the whole wasm32 address space (New), so every
// grow within it reaches the allocator and none is refused by wazero unseen.
//
// On unix the memory is one anonymous mapping of limit bytes reserved up front (pages are
// only backed when touched), so growing never copies: with wazero's default allocator every
// memory.grow copies the whole memory, which made a memory bomb take 10 s and 1 GB of RSS
// (python-engine.md). Elsewhere it falls back to a Go slice.
type allocator struct {
	limit   uint64
	high    atomic.Uint64
	refused atomic.Bool
}

func newAllocator(limit uint64) *allocator { return &allocator{limit: limit} }

// peak returns the largest size the memory reached, in bytes.
func (a *allocator) peak() uint64 { return a.high.Load() }

// hitCap reports whether a grow was refused for going past the limit. The guest cannot set it
// without asking for more memory than its cap: Python code cannot grow memory except by
// allocating.
func (a *allocator) hitCap() bool { return a.refused.Load() }

// Allocate implements experimental.MemoryAllocator.
func (a *allocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	if max > a.limit {
		max = a.limit
	}
	if m := mapMemory(max); m != nil {
		return &mappedMemory{buf: m, a: a}
	}
	return &sliceMemory{buf: make([]byte, 0, min(capacity, max)), max: max, a: a}
}

func (a *allocator) record(size uint64) {
	for {
		old := a.high.Load()
		if size <= old || a.high.CompareAndSwap(old, size) {
			return
		}
	}
}

// mappedMemory is a fixed mapping; Reallocate only reslices it.
type mappedMemory struct {
	buf []byte
	a   *allocator
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.buf == nil {
		return nil
	}
	if size > uint64(len(m.buf)) {
		m.a.refused.Store(true)
		return nil
	}
	m.a.record(size)
	return m.buf[:size:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		unmapMemory(m.buf)
		m.buf = nil
	}
}

// sliceMemory grows a Go slice, as wazero's default allocator does.
type sliceMemory struct {
	buf []byte
	max uint64
	a   *allocator
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		m.a.refused.Store(true)
		return nil
	}
	if size > uint64(cap(m.buf)) {
		grown := make([]byte, size, max(size, min(2*uint64(cap(m.buf)), m.max)))
		copy(grown, m.buf)
		m.buf = grown
	} else {
		m.buf = m.buf[:size]
	}
	m.a.record(size)
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }

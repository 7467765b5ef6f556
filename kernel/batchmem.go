package kernel

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// offHeapMin is the batch capacity from which Grow puts the batch in
// memory mapped outside the Go heap. A restore's batch is most of what it
// keeps alive (tens of MB): on the heap it would set the garbage
// collector's goal, so every other allocation would be allowed to pile up
// in proportion to it, and each growth would copy it. Mapped, it costs
// only the pages written, and the heap stays small.
const offHeapMin = 4 << 20

// mapBuffer reserves n bytes of anonymous memory that is committed page by
// page as it is written (nil if the system refuses, e.g. under strict
// overcommit: the caller then uses the heap).
func mapBuffer(n int) []byte {
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return m
}

// growOffHeap moves the batch's buffer into a mapping with room for n
// more bytes, reserving generously: appends past the reservation still
// work (they move the buffer to the heap), they only lose the benefit.
func (b *Batch) growOffHeap(n int) bool {
	need := len(b.e.buf) + n
	m := mapBuffer(2*need + 64<<20)
	if m == nil {
		return false
	}
	copy(m, b.e.buf)
	old := b.mapped
	b.e.buf = m[:len(b.e.buf)]
	b.mapped = m
	if old != nil {
		_ = unix.Munmap(old)
	} else {
		runtime.SetFinalizer(b, (*Batch).Release)
	}
	return true
}

// Release returns the memory of a batch that Grow placed outside the heap.
// The batch must not be used afterwards. A batch that is dropped without
// Release has its memory returned when the garbage collector finds it
// unreachable.
func (b *Batch) Release() {
	if b.mapped != nil {
		m := b.mapped
		b.mapped, b.e.buf = nil, nil
		runtime.SetFinalizer(b, nil)
		_ = unix.Munmap(m)
	}
}

package xdp

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestFillArray: an array map filled through its memory mapping reads
// back entry by entry as through a batch update.
func TestFillArray(t *testing.T) {
	requireBPF(t)
	vals := make([]uint32, 1000)
	for i := range vals {
		vals[i] = uint32(i*7 + 1)
	}
	for _, flags := range []uint32{0, unix.BPF_F_MMAPABLE} {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1001, Flags: flags})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := fillArray(m, vals); err != nil {
			t.Fatal(err)
		}
		for i, want := range append(vals, 0) {
			var v uint32
			if err := m.Lookup(uint32(i), &v); err != nil || v != want {
				t.Fatalf("flags %#x: entry %d: %d (%v), want %d", flags, i, v, err, want)
			}
		}
	}
}

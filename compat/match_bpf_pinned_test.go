package compat

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// TestBPFPinned: --object-pinned asks the kernel for the object as
// libxt_bpf does (no object: its parameter problem) and becomes
// xt_bpf_info_v1 in path mode, which the kernel opens itself.
func TestBPFPinned(t *testing.T) {
	saved := KernelGetsPinnedBPF
	defer func() { KernelGetsPinnedBPF = saved }()
	var asked []string
	KernelGetsPinnedBPF = func(path string) bool { asked = append(asked, path); return path == "/sys/fs/bpf/prog" }
	_, err := Parse(IPv4, strings.Fields("-A INPUT -m bpf --object-pinned /sys/fs/bpf/none"), ParseOptions{LookupSets: true})
	if StatusOf(err) != StatusParameter || err.Error() != "bpf: failed to get bpf object" {
		t.Errorf("no object: %v", err)
	}
	cmd, err := Parse(IPv4, strings.Fields("-A INPUT -m bpf --object-pinned /sys/fs/bpf/prog"), ParseOptions{LookupSets: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[1] != "/sys/fs/bpf/prog" {
		t.Errorf("asked for %q", asked)
	}
	// a rule read back is not checked again (its object may be gone)
	if _, err := Parse(IPv4, strings.Fields("-A INPUT -m bpf --object-pinned /sys/fs/bpf/none"), ParseOptions{}); err != nil || len(asked) != 2 {
		t.Errorf("read back: %v, asked %q", err, asked)
	}
	es, err := cmd.Rules[0].Matches[0].(*BPFMatch).NftExprs(&NftContext{Family: IPv4, Table: "filter", Chain: "INPUT"})
	if err != nil || len(es) != 1 {
		t.Fatalf("%v %v", es, err)
	}
	m, ok := es[0].(*expr.Match)
	if !ok || m.Name != "bpf" || m.Rev != 1 {
		t.Fatalf("%#v", es[0])
	}
	b := []byte(*m.Info.(*xt.Unknown))
	if len(b) != 528 || binary.NativeEndian.Uint16(b) != 1 || int32(binary.NativeEndian.Uint32(b[4:])) != -1 ||
		!bytes.Equal(bytes.TrimRight(b[8:520], "\x00"), []byte("/sys/fs/bpf/prog")) {
		t.Errorf("info %x", b)
	}
}

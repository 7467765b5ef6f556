package compat

import (
	"errors"
	"syscall"
	"testing"

	"github.com/google/nftables/expr"
)

// TestSecmarkKernelRefusal: in mangle and security, a context the kernel
// does not map is the kernel's refusal (ENOENT, as xt_SECMARK's check
// gives iptables-nft); a context it maps has no exact form here; other
// tables get the xtables target, which the kernel refuses by table name.
func TestSecmarkKernelRefusal(t *testing.T) {
	saved := KernelMapsSecctx
	defer func() { KernelMapsSecctx = saved }()
	var asked []string
	maps, ok := false, true
	KernelMapsSecctx = func(f Family, ctx string) (bool, bool) {
		asked = append(asked, ctx)
		return maps, ok
	}
	tg := &SecmarkTarget{Context: "system_u:object_r:ssh_packet_t:s0"}
	for _, table := range []string{"mangle", "security"} {
		_, err := tg.NftExprs(&NftContext{Family: IPv4, Table: table, Chain: "INPUT"})
		var kr *KernelRefusal
		if !errors.As(err, &kr) || kr.Errno != syscall.ENOENT {
			t.Errorf("%s, context not mapped: %v, want the kernel's ENOENT", table, err)
		}
	}
	if len(asked) != 2 || asked[0] != tg.Context {
		t.Errorf("asked the kernel for %q", asked)
	}
	maps = true
	if _, err := tg.NftExprs(&NftContext{Family: IPv6, Table: "mangle"}); !errors.Is(err, ErrNoNative) {
		t.Errorf("context mapped: %v, want a refusal for want of a native form", err)
	}
	maps, ok = false, false
	if _, err := tg.NftExprs(&NftContext{Family: IPv4, Table: "security"}); !errors.Is(err, ErrNoNative) {
		t.Errorf("kernel not asked: %v, want a refusal for want of a native form", err)
	}
	asked = nil
	es, err := tg.NftExprs(&NftContext{Family: IPv4, Table: "filter"})
	if err != nil || len(es) != 1 {
		t.Fatalf("filter: %v %v", es, err)
	}
	if _, isTarget := es[0].(*expr.Target); !isTarget || len(asked) != 0 {
		t.Errorf("filter: %T (asked %q), want the xtables target without asking", es[0], asked)
	}
}

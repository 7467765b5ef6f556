package integration

import (
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/kernel"
)

// TestSecmarkProbe: kernel.Conn.MapsSecctx answers as xt_SECMARK's check
// answers iptables-nft (-j SECMARK is refused with ENOENT exactly when
// the kernel does not map the context), and its checked batch leaves
// nothing behind (not even our table).
func TestSecmarkProbe(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") || !netns.Have("nft") {
		t.Fatal("reference iptables-nft and nft are not installed")
	}
	for _, ctx := range []string{"system_u:object_r:ssh_packet_t:s0", "unconfined_u:unconfined_r:unconfined_t:s0", "x"} {
		ref, ours := netns.New(t, "smr"), netns.New(t, "smo")
		r := ref.Run("", "iptables-nft", "-t", "mangle", "-A", "INPUT", "-j", "SECMARK", "--selctx", ctx)
		refMaps := r.RC == 0
		if !refMaps && !strings.Contains(r.Stderr, "RULE_APPEND failed (No such file or directory)") {
			t.Fatalf("reference, context %q: rc %d: %s", ctx, r.RC, r.Stderr)
		}
		conn := digestConn(t, ours)
		for _, fam := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
			maps, err := conn.MapsSecctx(fam, ctx)
			if err != nil {
				t.Fatalf("context %q: %v", ctx, err)
			}
			if maps != refMaps {
				t.Errorf("context %q, family %d: maps %v, the reference's rule was taken: %v", ctx, fam, maps, refMaps)
			}
		}
		if l := ours.Run("", "nft", "list", "ruleset"); l.RC != 0 || strings.TrimSpace(l.Stdout) != "" {
			t.Errorf("after the probe: rc %d, ruleset %q", l.RC, l.Stdout)
		}
	}
}

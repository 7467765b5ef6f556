package integration

import (
	"path/filepath"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestNonRootRestoreSaveIpset: restore, save and ipset without
// privileges fail as the reference tools do (message and exit status)
// and change nothing.
func TestNonRootRestoreSaveIpset(t *testing.T) {
	netns.RequireRoot(t)
	copyDir := nobodyLinkDir(t)
	ns := netns.New(t, "nr2")
	priv := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
	rules := "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -s 198.51.100.1/32 -j DROP\nCOMMIT\n"
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{rules, []string{"iptables-nft-restore"}},
		{rules, []string{"iptables-nft-restore", "--noflush"}},
		{rules, []string{"iptables-nft-restore", "--test"}},
		{"*filter\nCOMMIT\n", []string{"ip6tables-nft-restore"}},
		{"", []string{"iptables-nft-save"}},
		{"", []string{"iptables-nft-save", "-t", "nat"}},
		{"", []string{"ip6tables-nft-save"}},
		{"", []string{"iptables-nft", "-S", "INPUT"}},
		{"", []string{"iptables-nft", "-N", "X"}},
		{"", []string{"ipset", "list"}},
		{"", []string{"ipset", "create", "s", "hash:ip"}},
		{"", []string{"ipset", "add", "s", "198.51.100.1"}},
		{"", []string{"ipset", "save"}},
		{"create s hash:ip\n", []string{"ipset", "restore"}},
	} {
		ref := ns.Run(c.stdin, append(priv, c.args...)...)
		ours := ns.Run(c.stdin, append(append(priv, filepath.Join(copyDir, c.args[0])), c.args[1:]...)...)
		if ref != ours {
			t.Errorf("%v:\nreference rc %d %q %q\nxdptables rc %d %q %q", c.args, ref.RC, ref.Stdout, ref.Stderr, ours.RC, ours.Stdout, ours.Stderr)
		}
		if ours.RC == 0 {
			t.Errorf("%v succeeded without privileges", c.args)
		}
	}
	if r := ns.Run("", "nft", "list", "ruleset"); r.Stdout != "" {
		t.Errorf("something was created: %s", r.Stdout)
	}
}

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// TestCTHelperUserChains: CT --helper rules in user chains of raw, which
// PREROUTING reaches through jumps and gotos as in firewalld's zones,
// give new connections the helpers the reference's xtables CT target
// gives them: an ACCEPT in a user chain ends raw before later helper
// rules, RETURN goes back to the caller, a goto returns past the chain
// that went, a jump on an ipset match (a set without counters) is
// followed, a zone template set first keeps the helper off, and an
// expected (FTP data) connection gets none. Commands, -S and the
// mirror's going away with the rules are compared too.
func TestCTHelperUserChains(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("conntrack") {
		t.Fatal("conntrack is not installed (make deps installs it)")
	}
	cmds := []string{
		"-t raw -N ZONES",
		"-t raw -N Z_home",
		"-t raw -N Z_home_allow",
		"-t raw -N EARLY",
		"-t raw -A EARLY -p tcp --dport 2125 -j ACCEPT",
		"-t raw -A EARLY -p tcp --dport 2126 -j RETURN",
		"-t raw -A EARLY -p tcp --dport 2126 -j CT --helper irc",
		"-t raw -A Z_home_allow -p tcp -m multiport --dports 21,2125,2126,2127,2130,5001 -j CT --helper ftp",
		"-t raw -A Z_home_allow -p tcp --dport 2128 -j CT --helper irc",
		"-t raw -A Z_home -j EARLY",
		"-t raw -A Z_home -j Z_home_allow",
		"-t raw -N Z_set",
		"-t raw -A Z_set -p tcp --dport 2131 -j CT --helper irc",
		"-t raw -A ZONES -m set --match-set clients src -j Z_set",
		"-t raw -A ZONES -s " + pktClient + " -g Z_home",
		"-t raw -A ZONES -p tcp -j CT --helper irc",
		"-t raw -A PREROUTING -p tcp --dport 2127 -j CT",
		"-t raw -A PREROUTING -j ZONES",
		"-t raw -A PREROUTING -p tcp --dport 2129 -j CT --helper ftp",
		"-t raw -S",
	}
	want := map[int]string{21: "ftp", 2125: "", 2126: "ftp", 2127: "", 2128: "irc", 2129: "ftp", 2130: "ftp", 5001: "", 2131: "irc"}
	got := map[string]map[int]string{}
	out := map[string][]string{}
	for _, side := range []string{"ref", "ours"} {
		tool := tools[side]
		p := newPktPair(t, "ctu"+side[:1])
		// a set without counters, which the mirror may look up again
		ipset := "ipset"
		if side == "ours" {
			ipset = filepath.Join(LinkDir(t), "ipset")
		}
		mustRun(t, p.server, ipset, "create", "clients", "hash:ip")
		mustRun(t, p.server, ipset, "add", "clients", pktClient)
		for _, c := range cmds {
			x := p.server.Run("", append([]string{tool}, strings.Fields(c)...)...)
			out[side] = append(out[side], fmt.Sprintf("%s: rc %d\n%s%s", c, x.RC, x.Stdout, x.Stderr))
		}
		for _, port := range []int{21, 2125, 2126, 2127, 2128, 2129, 2131} {
			listenTCP(t, p.server, port)
			dialTCP(t, p.client, port, 1)
		}
		ftpData(t, p)
		got[side] = ctHelpers(t, p.server)
		for _, c := range []string{"-t raw -F", "-t raw -X", "-t raw -S"} {
			x := p.server.Run("", append([]string{tool}, strings.Fields(c)...)...)
			out[side] = append(out[side], fmt.Sprintf("%s: rc %d\n%s%s", c, x.RC, x.Stdout, x.Stderr))
		}
		if side == "ours" {
			if nft := mustRun(t, p.server, "nft", "list", "table", "ip", "xdptables"); strings.Contains(nft, "ct-helper") {
				t.Errorf("after -F and -X, mirrors or helper objects remain:\n%s", nft)
			}
		}
	}
	for i := range out["ref"] {
		if out["ref"][i] != out["ours"][i] {
			t.Errorf("reference:\n%s\nours:\n%s", out["ref"][i], out["ours"][i])
		}
	}
	for port, w := range want {
		for _, side := range []string{"ref", "ours"} {
			if h, ok := got[side][port]; !ok || h != w {
				t.Errorf("%s: port %d: helper %q (entry %v), want %q", side, port, h, ok, w)
			}
		}
	}
}

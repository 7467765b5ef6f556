package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/translate"
)

// Tests of the connlimit, policy, rpfilter, time, tos, ecn, connbytes
// and devgroup matches against the reference iptables-nft: what the
// kernel accepts and lists, the xtables info blobs, and packets.

// kernelDiffCKnown are corpus lines where xdptables deliberately
// differs from the reference once the rule reaches the kernel.
var kernelDiffCKnown = map[string]string{
	// xt_rpfilter cannot run in the xdptables table and fib has no
	// form of --accept-local: refused (docs/extensions.md)
	"-t raw -A PREROUTING -m rpfilter --accept-local --accept-local": "accept-local",
}

// TestKernelDiffC runs every -A line of matches_c.txt with the
// reference and with xdptables, each in its own namespace: the exit
// code and message, and then -S, -L -n and -L of the chain must be the
// same. Where the reference rule holds an xtables match and ours does
// too, the info blobs must be equal (same name, revision and bytes).
func TestKernelDiffC(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft is not installed")
	}
	lines, err := ReadCorpus("../testdata/corpus/matches_c.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := LinkDir(t)
	refNS, ourNS := netns.New(t, "h5kr"), netns.New(t, "h5ko")
	fd, err := os.Open("/run/netns/" + refNS.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(fd.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	compared, blobs := 0, 0
	for _, l := range lines {
		f, fam, ref := compat.IPv4, nftables.TableFamilyIPv4, "iptables-nft"
		ours := filepath.Join(dir, "iptables")
		if l.Tool == "ip6tables" {
			f, fam, ref = compat.IPv6, nftables.TableFamilyIPv6, "ip6tables-nft"
			ours = filepath.Join(dir, "ip6tables")
		}
		cmd, err := compat.Parse(f, l.Args, compat.ParseOptions{})
		if err != nil || cmd.Op != compat.OpAppend {
			continue
		}
		if kernelDiffCKnown[strings.Join(l.Args, " ")] != "" {
			continue
		}
		for _, tb := range []string{"filter", "raw", "mangle"} {
			refNS.Run("", ref, "-t", tb, "-F")
			ourNS.Run("", ours, "-t", tb, "-F")
		}
		a := refNS.Run("", append([]string{ref}, l.Args...)...)
		b := ourNS.Run("", append([]string{ours}, l.Args...)...)
		if a.RC != b.RC || a.Stderr != b.Stderr {
			t.Errorf("line %d %v:\nref  rc %d %q\nours rc %d %q", l.Line, l.Args, a.RC, a.Stderr, b.RC, b.Stderr)
			continue
		}
		if a.RC != 0 {
			continue
		}
		for _, view := range [][]string{{"-S", cmd.Chain}, {"-L", cmd.Chain, "-n"}, {"-L", cmd.Chain}, {"-L", cmd.Chain, "-n", "-v", "-x"}} {
			args := append([]string{"-t", cmd.Table}, view...)
			x, y := refNS.Run("", append([]string{ref}, args...)...), ourNS.Run("", append([]string{ours}, args...)...)
			if x.Stdout != y.Stdout || x.RC != y.RC {
				t.Errorf("line %d %v: %v differs:\nref:\n%s%s\nours:\n%s%s", l.Line, l.Args, view, x.Stdout, x.Stderr, y.Stdout, y.Stderr)
			}
		}
		compared++
		// the blobs
		es, err := translate.ExprsIn(cmd.Table, cmd.Chain, cmd.Rules[0])
		if err != nil {
			t.Errorf("line %d: %v", l.Line, err)
			continue
		}
		rules, err := conn.GetRules(&nftables.Table{Name: cmd.Table, Family: fam}, &nftables.Chain{Name: cmd.Chain})
		if err != nil || len(rules) != 1 {
			t.Errorf("line %d: reading the reference rule: %v (%d rules)", l.Line, err, len(rules))
			continue
		}
		refMatches := map[string]*expr.Match{}
		for _, e := range rules[0].Exprs {
			if m, ok := e.(*expr.Match); ok {
				refMatches[m.Name] = m
			}
		}
		for _, e := range es {
			m, ok := e.(*expr.Match)
			if !ok {
				continue
			}
			r := refMatches[m.Name]
			if r == nil {
				t.Errorf("line %d: reference has no match %q", l.Line, m.Name)
				continue
			}
			x, y := infoBytes(t, f, m), infoBytes(t, f, r)
			if m.Rev != r.Rev || !bytes.Equal(x, y) {
				t.Errorf("line %d %v: match %s rev %d\n ours %x\n ref  %x (rev %d)", l.Line, l.Args, m.Name, m.Rev, x, y, r.Rev)
			}
			blobs++
		}
	}
	t.Logf("%d rules compared, %d xtables blobs", compared, blobs)
	if compared < 100 {
		t.Errorf("only %d rules compared", compared)
	}
}

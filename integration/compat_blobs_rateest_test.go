package integration

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/translate"
)

// TestCompatBlobsRateest checks the struct xt_rateest_match_info of every
// -m rateest rule of compat_ext.txt against the one the reference
// iptables-nft puts in the kernel for the same line (the estimators
// the lines name are made first by RATEEST rules in INPUT): the -S text
// alone would not see a misplaced rate, since -S rounds and leaves some
// out.
func TestCompatBlobsRateest(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft is not installed")
	}
	lines, err := ReadCorpus("../testdata/corpus/compat_ext.txt")
	if err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "rblob")
	for _, est := range []string{"eth0", "h19x"} {
		if r := ns.Run("", "iptables-nft", "-A", "INPUT", "-j", "RATEEST", "--rateest-name", est, "--rateest-interval", "1s", "--rateest-ewmalog", "2s"); r.RC != 0 {
			t.Fatalf("RATEEST %s: %s", est, r.Stderr)
		}
	}
	if r := ns.Run("", "ip6tables-nft", "-A", "INPUT", "-j", "RATEEST", "--rateest-name", "v6", "--rateest-interval", "1s", "--rateest-ewmalog", "2s"); r.RC != 0 {
		t.Fatalf("RATEEST v6: %s", r.Stderr)
	}
	fd, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(fd.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, l := range lines {
		if !strings.Contains(strings.Join(l.Args, " "), "-m rateest") {
			continue
		}
		f, fam, prog := compat.IPv4, nftables.TableFamilyIPv4, "iptables-nft"
		if l.Tool == "ip6tables" {
			f, fam, prog = compat.IPv6, nftables.TableFamilyIPv6, "ip6tables-nft"
		}
		cmd, err := compat.Parse(f, l.Args, compat.ParseOptions{})
		if err != nil || cmd.Op != compat.OpAppend || len(cmd.Rules) != 1 {
			continue
		}
		ours, err := translate.Exprs(cmd.Table, cmd.Rules[0])
		if err != nil {
			t.Errorf("line %d: %v", l.Line, err)
			continue
		}
		ns.Run("", prog, "-F", cmd.Chain)
		if r := ns.Run("", append([]string{prog}, l.Args...)...); r.RC != 0 {
			continue // refused by the kernel: nothing to compare
		}
		rules, err := conn.GetRules(&nftables.Table{Name: cmd.Table, Family: fam}, &nftables.Chain{Name: cmd.Chain})
		if err != nil || len(rules) != 1 {
			t.Errorf("line %d: reading the reference rule: %v (%d rules)", l.Line, err, len(rules))
			continue
		}
		var ref *expr.Match
		for _, e := range rules[0].Exprs {
			if m, ok := e.(*expr.Match); ok && m.Name == "rateest" {
				ref = m
			}
		}
		for _, e := range ours {
			m, ok := e.(*expr.Match)
			if !ok || m.Name != "rateest" {
				continue
			}
			if ref == nil {
				t.Errorf("line %d: reference has no rateest match", l.Line)
				continue
			}
			a, b := infoBytes(t, f, m), infoBytes(t, f, ref)
			if m.Rev != ref.Rev || !bytes.Equal(a, b) {
				t.Errorf("line %d %s: rateest rev %d\n ours %x\n ref  %x (rev %d)", l.Line, l.Args, m.Rev, a, b, ref.Rev)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d rateest rules compared", checked)
	}
	t.Logf("%d rateest matches compared", checked)
}

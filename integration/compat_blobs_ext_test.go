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

// TestCompatBlobsExt checks the info struct of every -m rateest, -m
// ipcomp and -m srh rule of compat_ext.txt against the one the reference
// iptables-nft puts in the kernel for the same line (the estimators
// the lines name are made first by RATEEST rules in OUTPUT): the -S text
// alone would not see a misplaced field, since -S rounds rates and
// leaves some values out.
func TestCompatBlobsExt(t *testing.T) {
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
		if r := ns.Run("", "iptables-nft", "-A", "OUTPUT", "-j", "RATEEST", "--rateest-name", est, "--rateest-interval", "1s", "--rateest-ewmalog", "2s"); r.RC != 0 {
			t.Fatalf("RATEEST %s: %s", est, r.Stderr)
		}
	}
	if r := ns.Run("", "ip6tables-nft", "-A", "OUTPUT", "-j", "RATEEST", "--rateest-name", "v6", "--rateest-interval", "1s", "--rateest-ewmalog", "2s"); r.RC != 0 {
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
	names := map[string]bool{"rateest": true, "ipcomp": true, "srh": true}
	checked := map[string]int{}
	for _, l := range lines {
		line := strings.Join(l.Args, " ")
		if !strings.Contains(line, "-m rateest") && !strings.Contains(line, "-m ipcomp") && !strings.Contains(line, "-m srh") {
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
		refs := map[string]*expr.Match{}
		for _, e := range rules[0].Exprs {
			if m, ok := e.(*expr.Match); ok {
				refs[m.Name] = m
			}
		}
		for _, e := range ours {
			m, ok := e.(*expr.Match)
			if !ok || !names[m.Name] {
				continue
			}
			ref := refs[m.Name]
			if ref == nil {
				t.Errorf("line %d: reference has no %s match", l.Line, m.Name)
				continue
			}
			a, b := infoBytes(t, f, m), infoBytes(t, f, ref)
			if m.Rev != ref.Rev || !bytes.Equal(a, b) {
				t.Errorf("line %d %s: %s rev %d\n ours %x\n ref  %x (rev %d)", l.Line, l.Args, m.Name, m.Rev, a, b, ref.Rev)
			}
			checked[m.Name]++
		}
	}
	if checked["rateest"] < 20 || checked["ipcomp"] < 10 || checked["srh"] < 10 {
		t.Errorf("too few rules compared: %v", checked)
	}
	t.Logf("matches compared: %v", checked)
}

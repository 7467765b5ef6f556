package integration

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/translate"
)

// TestCompatBlobsB checks the xtables info blobs the group-b matches send
// (where they are not native) against what the reference iptables-nft
// puts in the kernel for the same corpus line: same name, revision and
// bytes. The kernel's view is read back through the nftables library.
func TestCompatBlobsB(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft is not installed")
	}
	lines, err := ReadCorpus("../testdata/corpus/matches_b.txt")
	if err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "blob")
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
		if l.Tool != "iptables" && l.Tool != "ip6tables" {
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
		for _, tb := range []string{"filter", "nat", "mangle"} {
			ns.Run("", prog, "-t", tb, "-F")
		}
		if r := ns.Run("", append([]string{prog}, l.Args...)...); r.RC != 0 {
			continue // a user chain missing, or refused by the kernel: nothing to compare
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
		for _, e := range ours {
			m, ok := e.(*expr.Match)
			if !ok {
				continue
			}
			ref := refMatches[m.Name]
			if ref == nil {
				t.Errorf("line %d: reference has no match %q", l.Line, m.Name)
				continue
			}
			a, b := infoBytes(t, f, m), infoBytes(t, f, ref)
			if m.Rev != ref.Rev || !bytes.Equal(a, b) {
				t.Errorf("line %d %s: match %s rev %d\n ours %x\n ref  %x (rev %d)", l.Line, l.Args, m.Name, m.Rev, a, b, ref.Rev)
			}
			checked++
		}
	}
	t.Logf("%d compat matches compared", checked)
}

func infoBytes(t *testing.T, f compat.Family, m *expr.Match) []byte {
	b, err := xt.Marshal(xt.TableFamily(f), m.Rev, m.Info)
	if err != nil {
		t.Fatal(fmt.Errorf("marshal %s: %w", m.Name, err))
	}
	return b
}

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

// compatBlobLinesT are rules whose target stays an nft_compat target.
var compatBlobLinesT = []struct {
	fam          compat.Family
	table, chain string
	args         string
}{
	{compat.IPv4, "filter", "INPUT", "-j NFQUEUE"},
	{compat.IPv4, "filter", "INPUT", "-j NFQUEUE --queue-num 7"},
	{compat.IPv4, "filter", "INPUT", "-j NFQUEUE --queue-balance 2:5 --queue-bypass"},
	{compat.IPv4, "filter", "INPUT", "-j NFQUEUE --queue-balance 2:5 --queue-cpu-fanout"},
	{compat.IPv6, "filter", "INPUT", "-j NFQUEUE --queue-num 3 --queue-bypass"},
	// CONNMARK --set-xmark/--set-mark and a plain --save-mark are native
	{compat.IPv4, "mangle", "PREROUTING", "-j CONNMARK --save-mark --nfmask 0xf --ctmask 0xf0"},
	{compat.IPv4, "mangle", "PREROUTING", "-j CONNMARK --restore-mark --mask 0xff"},
	{compat.IPv4, "mangle", "PREROUTING", "-j CONNMARK --save-mark --left-shift-mark 8"},
	{compat.IPv4, "mangle", "PREROUTING", "-j CONNMARK --restore-mark --right-shift-mark 4 --mask 0xff00"},
	{compat.IPv4, "mangle", "FORWARD", "-p tcp --syn -j TCPMSS --set-mss 1400"},
	{compat.IPv4, "mangle", "FORWARD", "-p tcp --syn -j TCPMSS --clamp-mss-to-pmtu"},
	{compat.IPv6, "mangle", "FORWARD", "-p tcp --syn -j TCPMSS --set-mss 1300"},
	{compat.IPv4, "mangle", "POSTROUTING", "-j CLASSIFY --set-class 1:10"},
	{compat.IPv4, "mangle", "PREROUTING", "-j TEE --gateway 10.0.0.1 --oif eth0"},
	{compat.IPv6, "mangle", "PREROUTING", "-j TEE --gateway 2001:db8::1 --oif eth1"},
}

// TestCompatBlobsT checks that every nft_compat target we build carries
// the same name, revision and info bytes as iptables-nft's.
func TestCompatBlobsT(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft is not installed")
	}
	ns := netns.New(t, "blobt")
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range compatBlobLinesT {
		tool, tfam := "iptables-nft", nftables.TableFamilyIPv4
		if l.fam == compat.IPv6 {
			tool, tfam = "ip6tables-nft", nftables.TableFamilyIPv6
		}
		args, err := ShellWords(l.args)
		if err != nil {
			t.Fatal(err)
		}
		ns.Run("", tool, "-t", l.table, "-F", l.chain)
		if r := ns.Run("", append([]string{tool, "-t", l.table, "-A", l.chain}, args...)...); r.RC != 0 {
			t.Errorf("%s: reference rc %d: %s", l.args, r.RC, r.Stderr)
			continue
		}
		rules, err := conn.GetRules(&nftables.Table{Name: l.table, Family: tfam}, &nftables.Chain{Name: l.chain})
		if err != nil || len(rules) != 1 {
			t.Fatalf("%s: reading reference rule: %v (%d rules)", l.args, err, len(rules))
		}
		ref := targetBlobs(t, byte(l.fam), rules[0].Exprs)
		cmd, err := compat.Parse(l.fam, append([]string{"-A", l.chain}, args...), compat.ParseOptions{Table: l.table})
		if err != nil {
			t.Fatalf("%s: parse: %v", l.args, err)
		}
		ours, err := translate.Exprs(l.table, cmd.Rules[0])
		if err != nil {
			t.Fatalf("%s: translate: %v", l.args, err)
		}
		got := targetBlobs(t, byte(l.fam), ours)
		if len(got) != 1 {
			t.Errorf("%s: %d compat targets in our translation", l.args, len(got))
		}
		for name, blob := range got {
			if !bytes.Equal(blob, ref[name]) {
				t.Errorf("%s: target %s\n ours %x\n ref  %x (ref has %v)", l.args, name, blob, ref[name], keys(ref))
			}
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// targetBlobs maps "name/rev" of each compat target to its info bytes.
func targetBlobs(t *testing.T, fam byte, es []expr.Any) map[string][]byte {
	out := map[string][]byte{}
	for _, e := range es {
		m, ok := e.(*expr.Target)
		if !ok {
			continue
		}
		b, err := xt.Marshal(xt.TableFamily(fam), m.Rev, m.Info)
		if err != nil {
			t.Fatalf("marshal %s: %v", m.Name, err)
		}
		out[fmt.Sprintf("%s/%d", m.Name, m.Rev)] = b
	}
	return out
}

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

// compatBlobLinesA are rules whose translation uses nft_compat matches
// (multiport, recent, hashlimit, icmp6, conntrack with addresses/ports/
// expiry, icmp without -p icmp is refused by the kernel so not here).
var compatBlobLinesA = []struct {
	fam  compat.Family
	args string
}{
	{compat.IPv4, "-p tcp -m multiport --dports 80,443,22"},
	{compat.IPv4, "-p tcp -m multiport ! --sports 1:1024,2000"},
	{compat.IPv4, "-p udp -m multiport --ports 53,67:68,100:200"},
	{compat.IPv6, "-p tcp -m multiport --dports 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"},
	{compat.IPv6, "-p icmpv6 --icmpv6-type 1/4"},
	{compat.IPv6, "-p icmpv6 ! --icmpv6-type echo-request"},
	{compat.IPv4, "-p icmp ! --icmp-type any"},
	{compat.IPv4, "-m recent --set"},
	{compat.IPv4, "-m recent ! --rcheck --seconds 60 --hitcount 3 --rttl --name foo --rdest"},
	{compat.IPv4, "-m recent --update --seconds 10 --reap --name bar --mask 255.255.0.0"},
	{compat.IPv6, "-m recent --remove --name x6 --mask ffff:ffff::"},
	{compat.IPv4, "-m conntrack --ctorigsrc 10.1.2.3/8 --ctrepldst 192.168.1.1"},
	{compat.IPv4, "-m conntrack ! --ctorigdst 10.0.0.0/255.255.0.0 --ctreplsrc 1.2.3.4/32"},
	{compat.IPv4, "-m conntrack --ctorigsrcport 1000:2000 ! --ctorigdstport 80 --ctreplsrcport 5 --ctrepldstport :9"},
	{compat.IPv4, "-m conntrack --ctexpire 10:100"},
	{compat.IPv4, "-m conntrack ! --ctexpire 5"},
	{compat.IPv4, "-m conntrack --ctstate SNAT,NEW"},
	{compat.IPv4, "-m conntrack ! --ctstate DNAT"},
	{compat.IPv4, "-m conntrack --ctstate INVALID,NEW --ctdir REPLY --ctproto tcp --ctstatus ASSURED,CONFIRMED"},
	{compat.IPv4, "-m conntrack ! --ctstate NEW --ctstatus NONE"},
	{compat.IPv6, "-m conntrack --ctorigsrc 2001:db8::1/64 --ctexpire 7 --ctdir ORIGINAL"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 5/sec --hashlimit-name foo"},
	{compat.IPv4, "-m hashlimit --hashlimit-above 5/min --hashlimit-burst 10 --hashlimit-mode srcip,dstport --hashlimit-name foo2 --hashlimit-srcmask 24"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 1kb/s --hashlimit-name b1"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 5kb/s --hashlimit-burst 1mb --hashlimit-name b2 --hashlimit-mode dstip --hashlimit-dstmask 16"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 1000b/s --hashlimit-name b3"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 512kb/m --hashlimit-name b4"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 5/sec --hashlimit-name r1 --hashlimit-rate-match --hashlimit-rate-interval 5"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 5/sec --hashlimit-name r2 --hashlimit-rate-match"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 60/min --hashlimit-name r4 --hashlimit-burst 5k"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 100mb/s --hashlimit-name r5 --hashlimit-htable-expire 5"},
	{compat.IPv4, "-m hashlimit --hashlimit-upto 5/min --hashlimit-name h1 --hashlimit-htable-size 100 --hashlimit-htable-max 200 --hashlimit-htable-expire 3000 --hashlimit-htable-gcinterval 500"},
	{compat.IPv4, "-m hashlimit ! --hashlimit-above 10001/sec --hashlimit-name h2"},
	{compat.IPv6, "-m hashlimit --hashlimit-upto 5/hour --hashlimit-name h6 --hashlimit-mode srcip --hashlimit-srcmask 64"},
}

// TestCompatBlobsA checks that every nft_compat match we build carries
// the same name, revision and info bytes as iptables-nft's for the same
// rule.
func TestCompatBlobsA(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft is not installed")
	}
	ns := netns.New(t, "blob")
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range compatBlobLinesA {
		tool, tfam := "iptables-nft", nftables.TableFamilyIPv4
		if l.fam == compat.IPv6 {
			tool, tfam = "ip6tables-nft", nftables.TableFamilyIPv6
		}
		args, err := ShellWords(l.args)
		if err != nil {
			t.Fatal(err)
		}
		ns.Run("", tool, "-F", "INPUT")
		if r := ns.Run("", append([]string{tool, "-A", "INPUT"}, args...)...); r.RC != 0 {
			t.Errorf("%s: reference rc %d: %s", l.args, r.RC, r.Stderr)
			continue
		}
		rules, err := conn.GetRules(&nftables.Table{Name: "filter", Family: tfam}, &nftables.Chain{Name: "INPUT"})
		if err != nil || len(rules) != 1 {
			t.Fatalf("%s: reading reference rule: %v (%d rules)", l.args, err, len(rules))
		}
		ref := matchBlobs(t, byte(l.fam), rules[0].Exprs)
		cmd, err := compat.Parse(l.fam, append([]string{"-A", "INPUT"}, args...), compat.ParseOptions{})
		if err != nil {
			t.Fatalf("%s: parse: %v", l.args, err)
		}
		ours, err := translate.Exprs("filter", cmd.Rules[0])
		if err != nil {
			t.Fatalf("%s: translate: %v", l.args, err)
		}
		got := matchBlobs(t, byte(l.fam), ours)
		if len(got) == 0 {
			t.Errorf("%s: no compat match in our translation", l.args)
		}
		for name, blob := range got {
			if !bytes.Equal(blob, ref[name]) {
				t.Errorf("%s: match %s\n ours %x\n ref  %x", l.args, name, blob, ref[name])
			}
		}
	}
}

// matchBlobs maps "name/rev" of each compat match to its info bytes.
func matchBlobs(t *testing.T, fam byte, es []expr.Any) map[string][]byte {
	out := map[string][]byte{}
	for _, e := range es {
		m, ok := e.(*expr.Match)
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

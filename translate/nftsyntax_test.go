package translate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
)

func TestNftSyntaxRules(t *testing.T) {
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		return compat.SetInfo{NftName: "ipset." + name, Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr, compat.SetDimPort}}, true
	}
	defer func() { compat.LookupIPSet = nil }()
	cases := []struct {
		f          compat.Family
		table      string
		rule, want string
	}{
		{compat.IPv4, "filter", "-A FORWARD -s 10.0.0.0/8 -d 192.0.2.1 -i eth+ -o lo -j DROP",
			`iifname "eth*" oifname "lo" ip saddr 10.0.0.0/8 ip daddr 192.0.2.1 counter drop`},
		{compat.IPv4, "filter", "-A INPUT ! -s 10.1.2.0/23 -p tcp --dport 22 -j ACCEPT",
			`@nh,48,32 & 0x1fff00ff == 0x6 ip saddr != 10.1.2.0/23 th dport 22 counter accept`},
		{compat.IPv4, "filter", "-A INPUT -p udp --dport 1000:2000 -j RETURN",
			`@nh,48,32 & 0x1fff00ff == 0x11 th dport 1000-2000 counter return`},
		{compat.IPv4, "filter", "-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
			`ct state established,related counter accept`},
		{compat.IPv4, "filter", "-A INPUT -m mark --mark 0x4000/0x4000 -j FOO",
			`meta mark & 0x00004000 == 0x00004000 counter jump filter.FOO`},
		{compat.IPv4, "nat", "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
			`counter meta mark set meta mark & 0xffffbfff ^ 0x00004000`},
		{compat.IPv4, "nat", "-A POSTROUTING -o eth0 -j MASQUERADE --random-fully",
			`oifname "eth0" counter masquerade fully-random`},
		{compat.IPv4, "nat", "-A PREROUTING -p tcp --dport 80 -j DNAT --to-destination 192.0.2.1-192.0.2.3:8080-8090",
			`meta l4proto 6 @nh,48,16 & 0x1fff == 0x0 th dport 80 counter dnat to 192.0.2.1-192.0.2.3:8080-8090`},
		{compat.IPv4, "nat", "-A POSTROUTING -p tcp -j MASQUERADE --to-ports 1024-65535",
			`meta l4proto 6 counter masquerade to :1024-65535`},
		{compat.IPv4, "nat", "-A PREROUTING -d 198.51.100.0/24 -j NETMAP --to 203.0.113.0/24",
			`ip daddr 198.51.100.0/24 counter dnat ip prefix to 203.0.113.0/24`},
		{compat.IPv6, "nat", "-A POSTROUTING -j NETMAP --to 2001:db8:1::/64",
			`counter snat ip6 prefix to 2001:db8:1::/64`},
		{compat.IPv4, "mangle", "-A PREROUTING -p tcp -j TPROXY --on-port 8080 --tproxy-mark 0x1/0x1",
			`meta l4proto 6 counter jump { meta l4proto 6 tproxy to :8080 meta mark set meta mark & 0xfffffffe ^ 0x00000001 accept; drop; }`},
		{compat.IPv4, "nat", "-A PREROUTING -p tcp -j REDIRECT --to-ports 3128",
			`meta l4proto 6 counter redirect to :3128`},
		{compat.IPv4, "filter", "-A INPUT -j REJECT",
			`counter reject with icmp type port-unreachable`},
		{compat.IPv4, "filter", "-A INPUT -p tcp -j REJECT --reject-with tcp-reset",
			`meta l4proto 6 counter reject with tcp reset`},
		{compat.IPv6, "filter", "-A INPUT -s 2001:db8::/32 -j REJECT",
			`ip6 saddr 2001:db8::/32 counter reject with icmpv6 type port-unreachable`},
		{compat.IPv4, "filter", `-A INPUT -j LOG --log-prefix "x: " --log-level 6`,
			`counter log prefix "x: " level info`},
		{compat.IPv4, "filter", "-A INPUT -m limit --limit 3/min --limit-burst 7 -j ACCEPT",
			`limit rate 3/minute burst 7 packets counter accept`},
		{compat.IPv4, "filter", "-A INPUT -m set --match-set blk src,dst -j DROP",
			`ip saddr . meta l4proto . th dport @ipset.blk counter drop`},
		{compat.IPv4, "filter", "-A INPUT -m set ! --match-set blk src,src -j DROP",
			`ip saddr . meta l4proto . th sport != @ipset.blk counter drop`},
		{compat.IPv4, "raw", "-A PREROUTING -j CT --notrack",
			`counter notrack`},
		{compat.IPv4, "nat", "-A x -m statistic --mode nth --every 3 --packet 1 -j ACCEPT",
			`numgen inc mod 3 1 counter accept`},
		// a raw link-layer payload takes an integer (nft lists it back
		// as "ether saddr 00:11:22:aa:bb:cc")
		{compat.IPv4, "mangle", "-A PREROUTING -m mac --mac-source 00:11:22:AA:BB:CC -j ACCEPT",
			`meta iiftype 1 @ll,48,48 0x001122aabbcc counter accept`},
		{compat.IPv6, "filter", "-A INPUT -m mac ! --mac-source 02:00:5e:10:00:01 -j DROP",
			`meta iiftype 1 @ll,48,48 != 0x02005e100001 counter drop`},
	}
	for _, c := range cases {
		cmd, err := compat.Parse(c.f, compat.RestoreWords(c.rule), compat.ParseOptions{Table: c.table, Restore: true})
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		es, err := ExprsIn(c.table, cmd.Chain, cmd.Rules[0])
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		st, err := NftSyntax(c.f, es)
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if st.Text != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.rule, st.Text, c.want)
		}
	}
}

func TestNftSyntaxCompat(t *testing.T) {
	es := []expr.Any{&expr.Match{Name: "recent"}, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}}
	st, err := NftSyntax(compat.IPv4, es)
	if err != nil || len(st.Compat) != 1 || st.Text != `xt match "recent" counter drop` {
		t.Fatalf("%+v %v", st, err)
	}
	if _, err := NftSyntax(compat.IPv4, []expr.Any{&expr.Verdict{Kind: expr.VerdictBreak}}); err == nil {
		t.Fatal("break has no syntax")
	}
	st, _ = NftSyntax(compat.IPv4, []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Counter{}})
	if st.Text != "counter" || len(st.Notes) != 1 {
		t.Fatalf("lone load: %+v", st)
	}
}

// TestNftSyntaxSetKeys: a lookup key keeps the netmask of its set (ip
// saddr & MASK), and bitmap:port's protocol guard, an anonymous set, is
// printed as a membership test, as nft lists both.
func TestNftSyntaxSetKeys(t *testing.T) {
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		if name == "ports" {
			return compat.SetInfo{NftName: "ipset.ports", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimPortOnly}}, true
		}
		return compat.SetInfo{NftName: "ipset." + name, Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}, Netmask: 24}, true
	}
	defer func() { compat.LookupIPSet = nil }()
	for _, c := range []struct{ rule, want string }{
		{"-A INPUT -m set --match-set masked src -j DROP", "ip saddr & 255.255.255.0 @ipset.masked counter drop"},
		{"-A INPUT -m set --match-set ports dst -j DROP", "meta l4proto { 6, 17 } th dport @ipset.ports counter drop"},
	} {
		cmd, err := compat.Parse(compat.IPv4, strings.Fields(c.rule), compat.ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		es, err := ExprsIn("filter", "INPUT", cmd.Rules[0])
		if err != nil {
			t.Fatal(err)
		}
		st, err := NftSyntax(compat.IPv4, es)
		if err != nil || st.Text != c.want {
			t.Errorf("%s: %q, %v; want %q", c.rule, st.Text, err, c.want)
		}
	}
}

// TestNftSyntaxTcpoptstrip: TCPOPTSTRIP's bound chain (see
// compat.TcpoptstripTarget.NftExprs) in nft syntax: a fragment returns,
// then per kind 39 times `tcp option K exists reset tcp option K`, then
// a return for each whole header and a drop.
func TestNftSyntaxTcpoptstrip(t *testing.T) {
	tail := ""
	for d := 5; d <= 15; d++ {
		tail += fmt.Sprintf(" @th,96,8 & 0xf0 == 0x%x @th,%d,8 <= 0xff return;", d<<4, (4*d-1)*8)
	}
	tail += " drop; }"
	strip := func(k int) string {
		return strings.TrimSpace(strings.Repeat(fmt.Sprintf("tcp option %d exists reset tcp option %d ", k, k), 39)) + ";"
	}
	for _, c := range []struct {
		f          compat.Family
		rule, want string
	}{
		{compat.IPv4, "-A POSTROUTING -p tcp -j TCPOPTSTRIP --strip-options mss,sack-permitted",
			"meta l4proto 6 counter jump { @nh,48,16 & 0x1fff != 0x0 return; " + strip(2) + " " + strip(4) + tail},
		{compat.IPv6, "-A FORWARD -p tcp -j TCPOPTSTRIP --strip-options 255",
			"meta l4proto 6 counter jump { frag frag-off != 0 return; " + strip(255) + tail},
		{compat.IPv4, "-A POSTROUTING -p tcp -j TCPOPTSTRIP",
			"meta l4proto 6 counter jump { @nh,48,16 & 0x1fff != 0x0 return;" + tail},
	} {
		cmd, err := compat.Parse(c.f, compat.RestoreWords(c.rule), compat.ParseOptions{Table: "mangle", Restore: true})
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		es, err := ExprsIn("mangle", cmd.Chain, cmd.Rules[0])
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		st, err := NftSyntax(c.f, es)
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if st.Text != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.rule, st.Text, c.want)
		}
	}
}

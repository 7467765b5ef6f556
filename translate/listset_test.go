package translate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
)

// -m set on a list:set: a chain bound to the rule, "return" where the
// match fails (no member matches, or with ! one does), then the rest of
// the rule.
func TestListSetExprs(t *testing.T) {
	sets := map[string]compat.SetInfo{
		"net4":  {NftName: "ipset.net4", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}, Nomatch: &nftables.Set{Name: "ipset.net4.nomatch"}},
		"ip4":   {NftName: "ipset.ip4", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}},
		"ipp4":  {NftName: "ipset.ipp4", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr, compat.SetDimPort}},
		"ip6":   {NftName: "ipset.ip6", Family: compat.IPv6, Dims: []compat.SetDim{compat.SetDimAddr}},
		"ports": {NftName: "ipset.ports", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimPortOnly}},
		"ctrs":  {NftName: "ipset.ctrs", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}, Counters: true},
	}
	list := func(names ...string) compat.SetInfo {
		info := compat.SetInfo{NftName: "ipset.L", Family: compat.IPv4, List: true, MembersKnown: true, Members: []compat.SetInfo{}}
		for _, n := range names {
			info.Members = append(info.Members, sets[n])
		}
		return info
	}
	lists := map[string]compat.SetInfo{
		"L":     list("net4", "ip4", "ipp4", "ip6"),
		"P":     list("ip4", "ports"),
		"E":     list(),
		"C":     list("ip4", "ctrs"),
		"LC":    func() compat.SetInfo { l := list("ip6", "ip4"); l.Counters = true; return l }(),
		"U":     {NftName: "ipset.U", Family: compat.IPv4, List: true},
		"Lctrs": func() compat.SetInfo { l := list("ip4"); l.Counters = true; return l }(),
	}
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		if l, ok := lists[name]; ok {
			return l, true
		}
		s, ok := sets[name]
		return s, ok
	}
	defer func() { compat.LookupIPSet = nil }()
	cases := []struct{ rule, want string }{
		// members in list order; ipp4 has two dimensions for one
		// direction and ip6 is of the other family: they never match
		{"-A INPUT -p icmp -m set --match-set L src -j DROP",
			`meta l4proto 1 jump { ip saddr != @ipset.net4 ip saddr != @ipset.ip4 return; counter drop; }`},
		{"-A INPUT -m set --match-set L src,dst -j ACCEPT",
			`jump { ip saddr != @ipset.net4 ip saddr != @ipset.ip4 ip saddr . meta l4proto . th dport != @ipset.ipp4 return; counter accept; }`},
		// the matches after the list match run once, after the OR
		{"-A INPUT -s 198.51.100.0/24 -m set --match-set L dst -m limit --limit 3/min -j LOG",
			`ip saddr 198.51.100.0/24 jump { ip daddr != @ipset.net4 ip daddr != @ipset.ip4 return; limit rate 3/minute burst 5 packets counter log level warn; }`},
		{"-A INPUT -m set --match-set L src --return-nomatch -j DROP",
			`jump { ip saddr != @ipset.net4.nomatch ip saddr != @ipset.ip4 return; counter drop; }`},
		{"-A INPUT -m set ! --match-set L src -j DROP",
			`jump { ip saddr @ipset.net4 return; ip saddr @ipset.ip4 return; counter drop; }`},
		// ! --match-set with no member that can match: every packet
		{"-A INPUT -m set ! --match-set E src -j DROP", `jump { counter drop; }`},

		// an empty list matches nothing
		{"-A INPUT -m set --match-set E src -j DROP", `jump { return; counter drop; }`},
		// a bitmap:port member: "not TCP/UDP, or the port not in it"
		{"-A INPUT -m set --match-set P src -j DROP",
			`jump { ip saddr != @ipset.ip4 meta l4proto != { 6, 17 } return; ip saddr != @ipset.ip4 th sport != @ipset.ports return; counter drop; }`},
		{"-A INPUT -m set ! --match-set P dst -j DROP",
			`jump { ip daddr @ipset.ip4 return; meta l4proto { 6, 17 } th dport @ipset.ports return; counter drop; }`},
		// a member with counters is counted where it is the first
		// member that matches (an inverted lookup counts nothing), not
		// with ! --update-subcounters
		{"-A INPUT -m set --match-set C src -j DROP",
			`jump { ip saddr != @ipset.ip4 ip saddr @ipset.ctrs; ip saddr != @ipset.ip4 ip saddr != @ipset.ctrs return; counter drop; }`},
		{"-A INPUT -m set --match-set C src ! --update-subcounters -j DROP",
			`jump { ip saddr != @ipset.ip4 ip saddr != @ipset.ctrs return; counter drop; }`},
		{"-A INPUT -m set ! --match-set C src -j DROP",
			`jump { ip saddr @ipset.ip4 return; ip saddr @ipset.ctrs return; counter drop; }`},
		{"-A INPUT -m set --match-set LC src ! --update-counters -j DROP",
			`jump { ip saddr != @ipset.ip4 return; counter drop; }`},
		// a user chain: its RETURN comes back to the bound chain's caller
		{"-A INPUT -m set --match-set L src -j USER",
			`jump { ip saddr != @ipset.net4 ip saddr != @ipset.ip4 return; counter jump filter.USER; }`},
	}
	for _, c := range cases {
		st, err := ruleSyntax(t, c.rule)
		if err != nil {
			t.Errorf("%s: %v", c.rule, err)
			continue
		}
		if st != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.rule, st, c.want)
		}
	}
	// a list with counters counts the packet in its element of the
	// first member that matches, keyed by the member's position (ip4 is
	// LC's second): nft has no syntax for that lookup of a constant
	if _, err := ruleSyntax(t, "-A INPUT -m set --match-set LC src -j DROP"); !errors.Is(err, ErrNoSyntax) {
		t.Errorf("list with counters: got %v, want ErrNoSyntax", err)
	}
	cmd, _ := compat.Parse(compat.IPv4, strings.Fields("-A INPUT -m set --match-set LC src -j DROP"), compat.ParseOptions{Table: "filter"})
	es, err := ExprsIn("filter", "INPUT", cmd.Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	count := es[0].(*compat.BoundJump).Rules[0]
	if imm, ok := count[len(count)-2].(*expr.Immediate); !ok || string(imm.Data) != "\x00\x00\x00\x01" {
		t.Errorf("list with counters: the member's element key is %#v", count[len(count)-2])
	}
	if l, ok := count[len(count)-1].(*expr.Lookup); !ok || l.SetName != "ipset.L" || l.Invert {
		t.Errorf("list with counters: the lookup of the member's element is %#v", count[len(count)-1])
	}
	for _, c := range []struct{ rule, msg string }{
		{"-A INPUT -m set --match-set L src -j RETURN", "Set L is a list:set: the nftables backend cannot match it in a rule with -j RETURN or -g."},
		{"-A INPUT -m set ! --match-set L src -j RETURN", "Set L is a list:set: the nftables backend cannot match it in a rule with -j RETURN or -g."},
		{"-A INPUT -m set --match-set L src -g USER", "Set L is a list:set: the nftables backend cannot match it in a rule with -j RETURN or -g."},
		{"-A INPUT -m set --match-set U src -j DROP", "Set U is a list:set: the nftables backend cannot match it yet."},
		// the kernel takes no chain bound in a bound chain
		{"-A INPUT -m set --match-set E src -p tcp -m set ! --match-set P dst -j ACCEPT", "Set E is a list:set: the nftables backend cannot match it in a rule with another list:set match or a target that needs a chain of its own (TPROXY, ECN, SET, TCPOPTSTRIP)."},
		{"-A INPUT -m set --match-set Lctrs src --packets-gt 3 -j DROP", "--packets-*/--bytes-* are not supported by the nftables backend for a set with counters."},
	} {
		_, err := ruleSyntax(t, c.rule)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %q", c.rule, err, c.msg)
		}
	}
}

func ruleSyntax(t *testing.T, rule string) (string, error) {
	t.Helper()
	cmd, err := compat.Parse(compat.IPv4, strings.Fields(rule), compat.ParseOptions{Table: "filter"})
	if err != nil {
		t.Fatalf("%s: %v", rule, err)
	}
	es, err := ExprsIn("filter", "INPUT", cmd.Rules[0])
	if err != nil {
		return "", err
	}
	st, err := NftSyntax(compat.IPv4, es)
	if err != nil {
		return "", err
	}
	return st.Text, nil
}

// A list:set rule read back: the kernel lists the bound chain as a jump
// to the chain it named; the rule's own expressions must still be the
// translation's, and the counter is not among them (it is the bound
// chain's: kernel.Rule.CounterValues).
func TestListSetReadBack(t *testing.T) {
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		m := compat.SetInfo{NftName: "ipset.m", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}}
		if name == "m" {
			return m, true
		}
		return compat.SetInfo{NftName: "ipset." + name, List: true, MembersKnown: true, Members: []compat.SetInfo{m}}, name == "L"
	}
	defer func() { compat.LookupIPSet = nil }()
	const text = "-p icmp -m set --match-set L src -m comment --comment x -j DROP"
	cmd, err := compat.Parse(compat.IPv4, append([]string{"-A", "INPUT"}, compat.RestoreWords(text)...), compat.ParseOptions{Table: "filter"})
	if err != nil {
		t.Fatal(err)
	}
	r := cmd.Rules[0]
	es, err := ExprsIn("filter", "INPUT", r)
	if err != nil {
		t.Fatal(err)
	}
	ud, err := UserDataFor(compat.IPv4, "filter", "INPUT", r, es)
	if err != nil {
		t.Fatal(err)
	}
	if HasDigest(ud) {
		t.Errorf("a rule with a bound chain got a digest: its listing names the chain the kernel made")
	}
	listed := func(es []expr.Any) []expr.Any {
		var out []expr.Any
		for _, e := range es {
			if _, ok := e.(*compat.BoundJump); ok {
				e = &expr.Verdict{Kind: expr.VerdictJump, Chain: "__chain7"}
			}
			out = append(out, e)
		}
		return out
	}
	got, err := FromKernel(compat.IPv4, "filter", "INPUT", listed(es), ud)
	if err != nil {
		t.Fatalf("FromKernel: %v", err)
	}
	if s := strings.TrimSpace(compat.ExactSpec(got)); s != text || got.Counters != nil {
		t.Errorf("read back %q, counters %v; want %q and none", s, got.Counters, text)
	}
	// changed behind our back: the protocol test gone, or a jump to a
	// chain that is not bound to the rule
	for _, bad := range [][]expr.Any{listed(es)[2:], append(listed(es)[:2:2], &expr.Verdict{Kind: expr.VerdictJump, Chain: "filter.X"})} {
		if _, err := FromKernel(compat.IPv4, "filter", "INPUT", bad, ud); err != ErrForeign {
			t.Errorf("%d expressions: got %v, want ErrForeign", len(bad), err)
		}
	}
}

package compat_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"github.com/xdptables/xdptables/compat"
)

// matchExprs parses "-A INPUT ARGS" and returns the expressions of its
// last match.
func matchExprs(t *testing.T, f compat.Family, args string) []expr.Any {
	t.Helper()
	cmd, err := compat.Parse(f, append([]string{"-A", "INPUT"}, strings.Fields(args)...), compat.ParseOptions{})
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	r := cmd.Rules[0]
	m := r.Matches[len(r.Matches)-1]
	n, ok := m.(compat.NftExpresser)
	if !ok {
		t.Fatalf("%s: %s has no NftExprs", args, m.Name())
	}
	es, err := n.NftExprs(&compat.NftContext{Family: f, Rule: r, Table: "filter"})
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	return es
}

// shape names each expression by kind, with its key facts.
func shape(es []expr.Any) string {
	var parts []string
	for _, e := range es {
		switch e := e.(type) {
		case *expr.Meta:
			parts = append(parts, "meta")
		case *expr.Ct:
			parts = append(parts, "ct")
		case *expr.Payload:
			base := "th"
			if e.Base == expr.PayloadBaseNetworkHeader {
				base = "nh"
			}
			parts = append(parts, "payload:"+base)
		case *expr.Bitwise:
			parts = append(parts, "bitwise")
		case *expr.Cmp:
			op := map[expr.CmpOp]string{expr.CmpOpEq: "eq", expr.CmpOpNeq: "neq"}[e.Op]
			parts = append(parts, "cmp:"+op)
		case *expr.Range:
			parts = append(parts, "range")
		case *expr.Limit:
			parts = append(parts, "limit")
		case *expr.Match:
			parts = append(parts, "match:"+e.Name)
		default:
			parts = append(parts, "?")
		}
	}
	return strings.Join(parts, " ")
}

func TestNftShapesA(t *testing.T) {
	for _, c := range []struct {
		fam        compat.Family
		args, want string
	}{
		{compat.IPv4, "-m mark --mark 5", "meta cmp:eq"},
		{compat.IPv4, "-m mark ! --mark 5/0xff", "meta bitwise cmp:neq"},
		{compat.IPv6, "-m connmark --mark 1/1", "ct bitwise cmp:eq"},
		{compat.IPv4, "-m connmark ! --mark 7", "ct cmp:neq"},
		{compat.IPv4, "-m state --state NEW,ESTABLISHED", "ct bitwise cmp:neq"},
		{compat.IPv4, "-m state ! --state INVALID", "ct bitwise cmp:eq"},
		{compat.IPv4, "-m conntrack --ctstate NEW --ctdir REPLY --ctproto tcp --ctstatus ASSURED", "ct bitwise cmp:neq ct cmp:eq ct cmp:eq ct bitwise cmp:neq"},
		{compat.IPv4, "-m conntrack ! --ctproto udp", "ct cmp:neq"},
		// a passed state test returns at once in xt conntrack, also for
		// packets without an entry: not a conjunction of ct loads
		{compat.IPv4, "-m conntrack --ctstate INVALID --ctdir ORIGINAL", "match:conntrack"},
		{compat.IPv4, "-m conntrack ! --ctstate NEW --ctproto tcp", "match:conntrack"},
		{compat.IPv4, "-m conntrack ! --ctstate INVALID,UNTRACKED --ctproto tcp", "ct bitwise cmp:eq ct cmp:eq"},
		{compat.IPv4, "-m conntrack --ctstate SNAT", "match:conntrack"},
		{compat.IPv4, "-m conntrack --ctorigsrc 1.2.3.4", "match:conntrack"},
		{compat.IPv4, "-m conntrack --ctexpire 5", "match:conntrack"},
		{compat.IPv4, "-p icmp --icmp-type 8", "payload:nh bitwise cmp:eq payload:th cmp:eq"},
		{compat.IPv4, "-p icmp ! --icmp-type 3/4", "payload:nh bitwise cmp:eq payload:th cmp:neq"},
		{compat.IPv4, "-p icmp ! -f --icmp-type 8", "payload:th cmp:eq"},
		{compat.IPv4, "-p icmp --icmp-type any", "payload:nh bitwise cmp:eq"},
		{compat.IPv4, "-p icmp ! --icmp-type any", "match:icmp"},
		{compat.IPv4, "-m icmp --icmp-type 8", "match:icmp"},
		{compat.IPv6, "-p icmpv6 --icmpv6-type 1/4", "match:icmp6"},
		{compat.IPv4, "-p tcp -m multiport --dports 1,2", "match:multiport"},
		{compat.IPv4, "-m comment --comment x", ""},
		{compat.IPv4, "-m limit --limit 3/hour", "limit"},
		{compat.IPv4, "-m recent --set", "match:recent"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 5/sec --hashlimit-name x", "match:hashlimit"},
	} {
		if got := shape(matchExprs(t, c.fam, c.args)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.args, got, c.want)
		}
	}
}

func TestNftValuesA(t *testing.T) {
	ne := binary.NativeEndian
	es := matchExprs(t, compat.IPv4, "-m mark ! --mark 0x5/0xff")
	if b := es[1].(*expr.Bitwise); ne.Uint32(b.Mask) != 0xff {
		t.Errorf("mark mask %x", b.Mask)
	}
	if c := es[2].(*expr.Cmp); ne.Uint32(c.Data) != 5 || c.Op != expr.CmpOpNeq {
		t.Errorf("mark cmp %+v", c)
	}
	// ct state bits: established 2, related 4, new 8, untracked 64
	es = matchExprs(t, compat.IPv4, "-m conntrack --ctstate NEW,RELATED,ESTABLISHED,UNTRACKED")
	if b := es[1].(*expr.Bitwise); ne.Uint32(b.Mask) != 2|4|8|64 {
		t.Errorf("ct state mask %x", b.Mask)
	}
	es = matchExprs(t, compat.IPv4, "-p icmp --icmp-type 3/4")
	if c := es[4].(*expr.Cmp); !bytes.Equal(c.Data, []byte{3, 4}) {
		t.Errorf("icmp type/code %x", c.Data)
	}
	for args, want := range map[string]expr.Limit{
		"-m limit --limit 3/hour":                      {Type: expr.LimitTypePkts, Rate: 3, Unit: expr.LimitTimeHour, Burst: 5},
		"-m limit --limit 5001/sec --limit-burst 9":    {Type: expr.LimitTypePkts, Rate: 10000, Unit: expr.LimitTimeSecond, Burst: 9},
		"-m limit --limit 60/min":                      {Type: expr.LimitTypePkts, Rate: 1, Unit: expr.LimitTimeSecond, Burst: 5},
		"-m limit --limit 1441/day --limit-burst 0":    {Type: expr.LimitTypePkts, Rate: 1441, Unit: expr.LimitTimeDay, Burst: 5},
		"-m limit --limit 7/minute --limit-burst 1000": {Type: expr.LimitTypePkts, Rate: 7, Unit: expr.LimitTimeMinute, Burst: 1000},
	} {
		if got := *matchExprs(t, compat.IPv4, args)[0].(*expr.Limit); got != want {
			t.Errorf("%s: %+v, want %+v", args, got, want)
		}
	}
	// multiport rev 1: flags, count, ports, range flags, invert
	m := matchExprs(t, compat.IPv4, "-p tcp -m multiport ! --sports 1:1024,2000")[0].(*expr.Match)
	info := []byte(*m.Info.(*xt.Unknown))
	if m.Rev != 1 || len(info) != 48 || info[0] != 0 || info[1] != 3 || ne.Uint16(info[2:]) != 1 ||
		ne.Uint16(info[4:]) != 1024 || ne.Uint16(info[6:]) != 2000 || info[32] != 1 || info[33] != 0 || info[47] != 1 {
		t.Errorf("multiport blob %x", info)
	}
}

// TestNftExactRoundTripA: the rule text kept in userdata must give back
// the same expressions (listing compares them with the kernel's).
func TestNftExactRoundTripA(t *testing.T) {
	for _, c := range []struct {
		fam  compat.Family
		args string
	}{
		{compat.IPv4, "-m limit --limit 5001/sec"},
		{compat.IPv4, "-m limit --limit 1441/day --limit-burst 0"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 10001/sec --hashlimit-name x"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 1500/sec --hashlimit-name x"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 60/min --hashlimit-name x"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 333/min --hashlimit-burst 7 --hashlimit-name x --hashlimit-htable-expire 1000"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 5kb/s --hashlimit-burst 1mb --hashlimit-name x"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 3kb/s --hashlimit-burst 6k --hashlimit-name x"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 1000b/s --hashlimit-name x"},
		{compat.IPv4, "-m hashlimit ! --hashlimit-above 5/sec --hashlimit-name x --hashlimit-rate-match --hashlimit-rate-interval 3"},
		{compat.IPv4, "-m hashlimit --hashlimit-upto 5/sec --hashlimit-name x --hashlimit-rate-interval 3"},
		{compat.IPv6, "-m hashlimit --hashlimit-upto 5/hour --hashlimit-name x --hashlimit-srcmask 64 --hashlimit-mode srcip,dstport"},
		{compat.IPv4, "-m recent --update --seconds 10 --reap --hitcount 3 --rttl --name n --mask 255.255.0.0 --rdest"},
		{compat.IPv4, "-m conntrack ! --ctstate NEW --ctorigsrc 1.2.3.4/8 --ctorigdstport 1:2 --ctexpire 3:4 --ctdir REPLY"},
	} {
		first := matchExprs(t, c.fam, c.args)
		cmd, _ := compat.Parse(c.fam, append([]string{"-A", "INPUT"}, strings.Fields(c.args)...), compat.ParseOptions{})
		spec := compat.ExactSpec(cmd.Rules[0])
		again := matchExprs(t, c.fam, spec)
		if len(first) != len(again) {
			t.Errorf("%s -> %s: %d vs %d expressions", c.args, spec, len(first), len(again))
			continue
		}
		for i := range first {
			a, _ := expr.Marshal(byte(c.fam), first[i])
			b, _ := expr.Marshal(byte(c.fam), again[i])
			if !bytes.Equal(a, b) {
				t.Errorf("%s -> %s: expression %d differs", c.args, spec, i)
			}
		}
	}
}

package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// TcpoptstripTarget is -j TCPOPTSTRIP: it overwrites the TCP options
// of the given kinds with NOPs. Strip is the kernel's 256-bit map of
// option kinds.
type TcpoptstripTarget struct {
	Strip [8]uint32
}

// tgTcpoptNames are xtables' option names, in its order.
var tgTcpoptNames = []struct {
	name string
	kind uint8
}{
	{"wscale", 3}, {"mss", 2}, {"sack-permitted", 4}, {"sack", 5}, {"timestamp", 8}, {"md5", 19},
}

func init() {
	for _, f := range []Family{IPv4, IPv6} {
		RegisterTarget(&ExtSpec{
			Name:      "TCPOPTSTRIP",
			Family:    f,
			X6:        true,
			Options:   []OptDef{{Name: "strip-options", Arg: RequiredArg, ID: 0}},
			NewTarget: func(Family) TargetExt { return &TcpoptstripTarget{} },
		})
	}
}

func (t *TcpoptstripTarget) Name() string { return "TCPOPTSTRIP" }

func (t *TcpoptstripTarget) has(k uint8) bool { return t.Strip[k/32]&(1<<(k%32)) != 0 }

// Parse reads the comma-separated list as xtables' parse_list does: a
// name (exact case) or a number 2-255, each at most once.
func (t *TcpoptstripTarget) Parse(p *OptArg) error {
	for _, item := range strings.Split(p.Arg, ",") {
		kind, found := uint64(0), false
		for _, n := range tgTcpoptNames {
			if n.name == item {
				kind, found = uint64(n.kind), true
				break
			}
		}
		if !found {
			v, ok := xtStrtoui(item, 0, 255)
			if !ok {
				return Paramf("Bad TCP option value \"%s\"", item)
			}
			kind = v
		}
		if kind < 2 {
			return Paramf("Option value may not be 0 or 1")
		}
		k := uint8(kind)
		if t.has(k) {
			return Paramf("Option \"%s\" already specified", item)
		}
		t.Strip[k/32] |= 1 << (k % 32)
	}
	return nil
}

func (t *TcpoptstripTarget) Final(*Rule, OptSet) error { return nil }

func (t *TcpoptstripTarget) empty() bool { return t.Strip == [8]uint32{} }

// list prints the kinds in ascending order, by name unless numeric.
func (t *TcpoptstripTarget) list(b *strings.Builder, numeric bool) {
	first := true
	for k := 0; k < 256; k++ {
		if !t.has(uint8(k)) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name := ""
		if !numeric {
			for _, n := range tgTcpoptNames {
				if int(n.kind) == k {
					name = n.name
				}
			}
		}
		if name == "" {
			name = strconv.Itoa(k)
		}
		b.WriteString(name)
	}
}

func (t *TcpoptstripTarget) Save(b *strings.Builder, _ *Rule) {
	if t.empty() {
		return
	}
	b.WriteString(" --strip-options ")
	t.list(b, true)
}

func (t *TcpoptstripTarget) List(b *strings.Builder, _ *Rule, numeric bool) {
	if t.empty() {
		return
	}
	b.WriteString(" TCPOPTSTRIP options ")
	t.list(b, numeric)
}

// NftExprs: TCPOPTSTRIP is bound to the mangle table and needs -p tcp;
// elsewhere we hand the kernel the xtables target, which it refuses as
// it does iptables-nft's. In mangle there is no exact nftables form:
// nft's `reset tcp option` NOPs only the first option of a kind, ends
// the rule when there is none, and drops a packet whose option of that
// kind overruns the header, where xt TCPOPTSTRIP NOPs every option of
// the kinds and leaves an overrunning one alone (and drops a packet
// whose TCP header is cut short, which nft's exthdr walk skips).
func (t *TcpoptstripTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" || !ruleProtoIs(ctx.Rule, 6) {
		return tgRefused("TCPOPTSTRIP", 0, 32), nil
	}
	return nil, tgNotInTable("TCPOPTSTRIP", "mangle", "stripping every option of the kinds and leaving malformed option lists alone")
}

package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
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

var tcpoptstripTargetSpec = ExtSpec{
	Name:      "TCPOPTSTRIP",
	X6:        true,
	Options:   []OptDef{{Name: "strip-options", Arg: RequiredArg, ID: 0}},
	NewTarget: func(Family) TargetExt { return &TcpoptstripTarget{} },
}

var _ = RegisterTarget(&tcpoptstripTargetSpec)

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

// tcpOptionsMax is how many options of one kind a TCP header can hold:
// xt_TCPOPTSTRIP and nft's exthdr walk look for options at offsets 20 to
// 58 (the last byte of a 60-byte header starts none), and an option whose
// length byte is 0 or 1 takes one byte.
const tcpOptionsMax = 39

// tcpOptionReset is `reset tcp option KIND` (kernel.TCPOptionReset).
type tcpOptionReset struct{ *expr.Exthdr }

func (r *tcpOptionReset) ResetKind() uint8 { return r.Type }

// NftExprs: TCPOPTSTRIP is bound to the mangle table and needs -p tcp;
// elsewhere we hand the kernel the xtables target, which it refuses as
// it does iptables-nft's. In mangle the rule jumps to a chain bound to it
// that does what xt TCPOPTSTRIP does, with nft's `reset tcp option`
// (which NOPs the first option of a kind and drops the packet when that
// option runs past the header):
//
//   - a non-first fragment returns untouched (xt: no TCP header);
//   - one rule per kind: `tcp option K exists reset tcp option K`, 39
//     times, the most a header can hold. `exists` finds the first option
//     of the kind and is false when there is none left or it runs past
//     the header (then the rule ends, as xt's walk stops there and leaves
//     it alone), so every whole option of the kind is NOPed, the
//     checksum updated as xt does;
//   - a packet whose TCP header is whole (data offset d from 5 to 15 and
//     the header's last byte, 4d-1, in the packet) returns; any other is
//     dropped, as xt drops it (nft's exthdr walk skips it).
//
// Packets with options of every shape, truncated headers and bad data
// offsets: TestPacketsTcpoptstrip, against xt TCPOPTSTRIP.
func (t *TcpoptstripTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" || !ruleProtoIs(ctx.Rule, 6) {
		return tgRefused("TCPOPTSTRIP", 0, 32), nil
	}
	ret := &expr.Verdict{Kind: expr.VerdictReturn}
	var rules [][]expr.Any
	if ctx.Family == IPv6 {
		rules = append(rules, []expr.Any{
			&expr.Exthdr{Op: expr.ExthdrOpIpv6, Type: 44, Offset: 2, Len: 2, DestRegister: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: []byte{0xff, 0xf8}, Xor: []byte{0, 0}},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0}},
			ret,
		})
	} else {
		rules = append(rules, []expr.Any{
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 6, Len: 2},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 2, Mask: []byte{0x1f, 0xff}, Xor: []byte{0, 0}},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0}},
			ret,
		})
	}
	for k := 0; k < 256; k++ {
		if !t.has(uint8(k)) {
			continue
		}
		var strip []expr.Any
		for range tcpOptionsMax {
			strip = append(strip,
				&expr.Exthdr{Op: expr.ExthdrOpTcpopt, Type: uint8(k), Len: 1, DestRegister: 1, Flags: unix.NFT_EXTHDR_F_PRESENT},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{1}},
				&tcpOptionReset{&expr.Exthdr{Op: expr.ExthdrOpTcpopt, Type: uint8(k)}})
		}
		rules = append(rules, strip)
	}
	th := expr.PayloadBaseTransportHeader
	for d := uint32(5); d <= 15; d++ {
		rules = append(rules, []expr.Any{
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: th, Offset: 12, Len: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{0xf0}, Xor: []byte{0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(d << 4)}},
			// a test that only loading can fail (nft has no lone load)
			&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 1, Base: th, Offset: 4*d - 1, Len: 1},
			&expr.Cmp{Op: expr.CmpOpLte, Register: 1, Data: []byte{0xff}},
			ret,
		})
	}
	rules = append(rules, []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}})
	return []expr.Any{&BoundJump{Verdict: &expr.Verdict{Kind: expr.VerdictJump}, Rules: rules}}, nil
}

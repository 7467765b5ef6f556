package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// RpfilterMatch is -m rpfilter: a reverse-path (source address) route
// lookup.
type RpfilterMatch struct {
	Flags uint8 // rpfLoose | rpfValidMark | rpfAcceptLocal | rpfInvert
}

const (
	rpfLoose       = 1
	rpfValidMark   = 2
	rpfAcceptLocal = 4
	rpfInvert      = 8
)

var rpfilterOpts = []OptDef{
	{Name: "loose", Arg: NoArg, ID: 0},
	{Name: "validmark", Arg: NoArg, ID: 1},
	{Name: "accept-local", Arg: NoArg, ID: 2},
	{Name: "invert", Arg: NoArg, ID: 3},
}

func init() {
	RegisterMatch(&ExtSpec{
		Name:     "rpfilter",
		Options:  rpfilterOpts,
		X6:       true,
		NewMatch: func(Family) MatchExt { return &RpfilterMatch{} },
	})
}

func (m *RpfilterMatch) Name() string { return "rpfilter" }

func (m *RpfilterMatch) Parse(p *OptArg) error {
	m.Flags |= 1 << uint(p.Def.ID)
	return nil
}

func (m *RpfilterMatch) Final(*Rule, OptSet) error { return nil }

func (m *RpfilterMatch) print(b *strings.Builder, prefix string) {
	for i, o := range rpfilterOpts {
		if m.Flags&(1<<uint(i)) != 0 {
			b.WriteString(" " + prefix + o.Name)
		}
	}
}

func (m *RpfilterMatch) Save(b *strings.Builder, _ *Rule) { m.print(b, "--") }

func (m *RpfilterMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" rpfilter")
	m.print(b, "")
}

// NftExprs: the kernel refuses xt_rpfilter outside tables named "raw"
// or "mangle", and compares with the nftables table name (xdptables),
// so the xtables match cannot run here. The rule becomes nftables' own
// reverse-path test instead: "fib saddr [. mark] [. iif] oif", which
// finds the interface the source routes out of (none when there is no
// route; with iif only when it is the input interface) and has the
// same shortcuts for loopback traffic and 0.0.0.0 to broadcast/local
// multicast. One case differs: xt_rpfilter fails a route back of type
// broadcast (a source that is a local subnet's broadcast address),
// where fib finds the interface. For IPv4 the rule therefore looks up
// (route found, "fib saddr type", class of the source's first byte) in
// constant maps made with the rule (ValueMap) that hold the keys that
// match: the route is found and the source is not a broadcast address
// other than 0.0.0.0/8 (which the shortcuts and the lookup treat alike)
// or 255.x.x.x (255.255.255.255 likewise); with --invert the others.
// --accept-local has no such form (fib never accepts a local source)
// and is refused. Where xt_rpfilter is not allowed (other tables,
// built-in chains other than PREROUTING) the rule keeps the xtables
// match, which the kernel refuses as it does iptables-nft's.
func (m *RpfilterMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	_, builtin := builtinHook[ctx.Chain]
	if (ctx.Table != "raw" && ctx.Table != "mangle") || (builtin && ctx.Chain != "PREROUTING") {
		x := &xtBlob{}
		x.u8(m.Flags)
		return []expr.Any{compatMatch("rpfilter", 0, x)}, nil
	}
	if m.Flags&rpfAcceptLocal != 0 {
		return nil, Errorf(StatusParameter, "rpfilter: --accept-local is not supported by the nftables backend.")
	}
	invert := m.Flags&rpfInvert != 0
	fib := &expr.Fib{Register: 1, ResultOIF: true, FlagSADDR: true,
		FlagMARK: m.Flags&rpfValidMark != 0, FlagIIF: m.Flags&rpfLoose == 0}
	if ctx.Family == IPv6 {
		op := expr.CmpOpNeq
		if invert {
			op = expr.CmpOpEq // no route back (via the input interface)
		}
		return []expr.Any{fib, &expr.Cmp{Op: op, Register: 1, Data: []byte{0, 0, 0, 0}}}, nil
	}
	// registers (32-bit): 8 route found (listed as 1), 9 address type,
	// 10 first byte of the source, mapped to 0 for 0 and 255, else 1;
	// the key is their 9 bytes
	fib.FlagPRESENT = true
	const rtnBroadcast, rtnMax = 3, 11
	class := &ValueMap{Lookup: &expr.Lookup{SourceRegister: 10, DestRegister: 10, IsDestRegSet: true}, KeyLen: 1, DataLen: 1}
	for b := 0; b < 256; b++ {
		c := byte(1)
		if b == 0 || b == 255 {
			c = 0
		}
		class.Keys = append(class.Keys, []byte{byte(b)})
		class.Values = append(class.Values, []byte{c})
	}
	vm := &ValueMap{Lookup: &expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true}, KeyLen: 9, DataLen: 1}
	for found := 0; found <= 1; found++ {
		for t := 0; t <= rtnMax; t++ {
			for c := 0; c <= 1; c++ {
				pass := found == 1 && (t != rtnBroadcast || c == 0)
				if pass == invert {
					continue
				}
				key := []byte{byte(found), 0, 0, 0}
				key = append(key, host32(uint32(t))...)
				vm.Keys = append(vm.Keys, append(key, byte(c)))
				vm.Values = append(vm.Values, []byte{1})
			}
		}
	}
	return []expr.Any{fib,
		&expr.Fib{Register: 9, ResultADDRTYPE: true, FlagSADDR: true},
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: 10, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 1},
		class, vm}, nil
}

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

var rpfilterMatchSpec = ExtSpec{
	Name:     "rpfilter",
	Options:  rpfilterOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &RpfilterMatch{} },
}

var _ = RegisterMatch(&rpfilterMatchSpec)

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
// finds the interface the source routes out of (0 when there is no
// route; with iif only when it is the input interface) and has the
// same shortcuts for loopback traffic and 0.0.0.0 to broadcast/local
// multicast. It is not exact: xt_rpfilter fails a route back of type
// broadcast (a source that is a local subnet's broadcast address),
// where fib finds the interface (docs/extensions.md lists the
// differences). --accept-local has no such form (fib never accepts a
// local source; passing a local source that arrives on the interface
// that holds it would need a second fib lookup ORed with the first, in a
// chain bound to the rule that holds the rest of it) and is refused
// (status 1, as other extensions without an exact form; iptables-nft
// runs xt_rpfilter in its table named raw or mangle). Where xt_rpfilter is not allowed
// (other tables, built-in chains other than PREROUTING) the rule keeps
// the xtables match, which the kernel refuses as it does iptables-nft's.
func (m *RpfilterMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	_, builtin := builtinHook[ctx.Chain]
	if (ctx.Table != "raw" && ctx.Table != "mangle") || (builtin && ctx.Chain != "PREROUTING") {
		x := &xtBlob{}
		x.u8(m.Flags)
		return []expr.Any{compatMatch("rpfilter", 0, x)}, nil
	}
	if m.Flags&rpfAcceptLocal != 0 {
		return nil, mtAcceptLocal{}
	}
	fib := &expr.Fib{Register: 1, ResultOIF: true, FlagSADDR: true,
		FlagMARK: m.Flags&rpfValidMark != 0, FlagIIF: m.Flags&rpfLoose == 0}
	op := expr.CmpOpNeq
	if m.Flags&rpfInvert != 0 {
		op = expr.CmpOpEq // no route back (via the input interface)
	}
	return []expr.Any{fib, &expr.Cmp{Op: op, Register: 1, Data: []byte{0, 0, 0, 0}}}, nil
}

// mtAcceptLocal is the refusal of rpfilter --accept-local where
// xt_rpfilter could run for iptables-nft.
type mtAcceptLocal struct{}

func (mtAcceptLocal) Error() string {
	return "cannot run in the xdptables table: the kernel runs the xtables rpfilter match only in tables named \"raw\" and \"mangle\", and nftables has no exact equivalent of --accept-local (its fib lookup never accepts a local source address) (see docs/extensions.md)"
}

func (mtAcceptLocal) Unwrap() error { return ErrNoNative }

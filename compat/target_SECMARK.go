package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// SecmarkTarget is -j SECMARK --selctx CONTEXT (mangle or security
// table): it sets the packet's security mark to the SELinux context's
// id.
type SecmarkTarget struct {
	Context string
}

// secmarkCtxMax is SECMARK_SECCTX_MAX, the size of the context field.
const secmarkCtxMax = 256

func init() {
	RegisterTarget(&ExtSpec{
		Name:      "SECMARK",
		X6:        true,
		Options:   []OptDef{{Name: "selctx", Arg: RequiredArg, ID: 0, Mandatory: true}},
		NewTarget: func(Family) TargetExt { return &SecmarkTarget{} },
	})
}

func (t *SecmarkTarget) Name() string { return "SECMARK" }

func (t *SecmarkTarget) Parse(p *OptArg) error {
	t.Context = p.Arg
	if len(t.Context) >= secmarkCtxMax {
		t.Context = t.Context[:secmarkCtxMax-1] // XTTYPE_STRING's silent cut
	}
	return nil
}

func (t *SecmarkTarget) Final(*Rule, OptSet) error { return nil }

func (t *SecmarkTarget) Save(b *strings.Builder, _ *Rule) { b.WriteString(" --selctx " + t.Context) }

func (t *SecmarkTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" SECMARK selctx " + t.Context)
}

// NftExprs: xt_SECMARK runs only in the mangle and security tables (its
// check compares the table name, and ours is "xdptables"). nftables sets
// a security mark only from a named secmark object, which xdptables does
// not keep. Outside those tables the rule carries the xtables target
// (revision 1, struct xt_secmark_target_info_v1), which the kernel
// refuses as it does iptables-nft's.
func (t *SecmarkTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" && ctx.Table != "security" {
		return tgRefused("SECMARK", 1, 264), nil
	}
	return nil, tgNotInTable("SECMARK", ctx.Table, "setting a security mark without a named secmark object")
}

package compat

import (
	"strings"
	"syscall"

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

var secmarkTargetSpec = ExtSpec{
	Name:      "SECMARK",
	X6:        true,
	Options:   []OptDef{{Name: "selctx", Arg: RequiredArg, ID: 0, Mandatory: true}},
	NewTarget: func(Family) TargetExt { return &SecmarkTarget{} },
}

var _ = RegisterTarget(&secmarkTargetSpec)

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

// KernelMapsSecctx, set by the binary, asks the running kernel whether
// its security module maps a security context to an id (see
// kernel.Conn.MapsSecctx); ok is false when it could not ask.
var KernelMapsSecctx func(f Family, ctx string) (maps, ok bool)

// NftExprs: xt_SECMARK runs only in the mangle and security tables (its
// check compares the table name, and ours is "xdptables"). nftables sets
// a security mark only from a named secmark object, which xdptables does
// not keep. Outside those tables the rule carries the xtables target
// (revision 1, struct xt_secmark_target_info_v1), which the kernel
// refuses as it does iptables-nft's. In them, xt_SECMARK's check asks the
// security module for the context's id and fails with ENOENT when it has
// none (no SELinux policy loaded, an unknown context): the kernel is asked
// the same (a secmark object needs the same id), and the rule is refused
// as the kernel refuses iptables-nft's. Only a context the kernel maps is
// refused for want of an exact form.
func (t *SecmarkTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" && ctx.Table != "security" {
		return tgRefused("SECMARK", 1, 264), nil
	}
	if KernelMapsSecctx != nil {
		if maps, ok := KernelMapsSecctx(ctx.Family, t.Context); ok && !maps {
			return nil, &KernelRefusal{Errno: syscall.ENOENT}
		}
	}
	return nil, tgNotInTable("SECMARK", ctx.Table, "setting a security mark without a named secmark object")
}

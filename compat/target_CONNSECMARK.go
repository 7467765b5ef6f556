package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// ConnsecmarkTarget is -j CONNSECMARK --save|--restore (mangle or
// security table): it copies the security mark from the packet to its
// connection (save) or back (restore).
type ConnsecmarkTarget struct {
	Mode uint8 // connsecmarkSave or connsecmarkRestore
}

// CONNSECMARK_SAVE, CONNSECMARK_RESTORE.
const (
	connsecmarkSave    = 1
	connsecmarkRestore = 2
)

var connsecmarkOpts = []OptDef{
	{Name: "save", Arg: NoArg, ID: 0},
	{Name: "restore", Arg: NoArg, ID: 1},
}

var connsecmarkTargetSpec = ExtSpec{
	Name:      "CONNSECMARK",
	X6:        true,
	Options:   connsecmarkOpts,
	NewTarget: func(Family) TargetExt { return &ConnsecmarkTarget{} },
}

var _ = RegisterTarget(&connsecmarkTargetSpec)

func (t *ConnsecmarkTarget) Name() string { return "CONNSECMARK" }

func (t *ConnsecmarkTarget) Parse(p *OptArg) error {
	t.Mode = connsecmarkSave
	if p.Def.ID == 1 {
		t.Mode = connsecmarkRestore
	}
	return nil
}

func (t *ConnsecmarkTarget) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("CONNSECMARK target: parameter required")
	}
	return x6Fcheck("CONNSECMARK", connsecmarkOpts, seen, map[int]x6Rel{
		0: {excl: bit(1)},
		1: {excl: bit(0)},
	})
}

func (t *ConnsecmarkTarget) mode() string {
	if t.Mode == connsecmarkRestore {
		return "restore"
	}
	return "save"
}

func (t *ConnsecmarkTarget) Save(b *strings.Builder, _ *Rule) { b.WriteString(" --" + t.mode()) }

func (t *ConnsecmarkTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" CONNSECMARK " + t.mode())
}

// NftExprs: in the mangle and security tables, where xt_CONNSECMARK
// runs, the copy with its conditions as nftables expressions: save puts
// the packet's security mark on its connection when the packet has one
// and the connection none, restore puts the connection's on a packet
// that has none. A failed condition, or no connection (ct reads end the
// rule then), leaves the rule as xt's target does, which always goes on
// to the next rule; the counter before them has counted the packet.
// Setting the connection's mark caches the same conntrack event as xt
// does. Elsewhere the rule carries the xtables target (struct
// xt_connsecmark_target_info), which the kernel refuses (it checks the
// table name) as it does iptables-nft's.
func (t *ConnsecmarkTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" && ctx.Table != "security" {
		return tgRefused("CONNSECMARK", 0, 1), nil
	}
	zero := []byte{0, 0, 0, 0}
	if t.Mode == connsecmarkRestore {
		return []expr.Any{
			metaLoad(expr.MetaKeySECMARK),
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: zero},
			&expr.Ct{Key: expr.CtKeySECMARK, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: zero},
			tgMetaSet(expr.MetaKeySECMARK),
		}, nil
	}
	return []expr.Any{
		metaLoad(expr.MetaKeySECMARK),
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: zero},
		&expr.Ct{Key: expr.CtKeySECMARK, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: zero},
		metaLoad(expr.MetaKeySECMARK),
		&expr.Ct{Key: expr.CtKeySECMARK, Register: 1, SourceRegister: true},
	}, nil
}

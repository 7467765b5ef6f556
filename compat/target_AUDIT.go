package compat

import (
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// AuditTarget is -j AUDIT --type accept|drop|reject: it records the
// packet in the audit log.
type AuditTarget struct {
	Type string // "accept", "drop" or "reject"
}

var tgAuditOptions = []OptDef{{Name: "type", Arg: RequiredArg, ID: 0}}

var auditTargetSpec = ExtSpec{
	Name:      "AUDIT",
	X6:        true,
	Options:   tgAuditOptions,
	NewTarget: func(Family) TargetExt { return &AuditTarget{} },
}

var _ = RegisterTarget(&auditTargetSpec)

func (t *AuditTarget) Name() string { return "AUDIT" }

func (t *AuditTarget) Parse(p *OptArg) error {
	switch s := strings.ToLower(p.Arg); s {
	case "accept", "drop", "reject":
		t.Type = s
		return nil
	}
	return Paramf("Bad action type value \"%s\"", p.Arg)
}

func (t *AuditTarget) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("AUDIT", tgAuditOptions, seen, map[int]x6Rel{0: {mand: true}})
}

func (t *AuditTarget) Save(b *strings.Builder, _ *Rule) {
	if t.Type != "" {
		b.WriteString(" --type " + t.Type)
	}
}

func (t *AuditTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" AUDIT " + t.Type)
}

// NftExprs is `log level audit`: nft_log's audit path writes the same
// AUDIT_NETFILTER_PKT record as xt AUDIT, which ignores the type once
// the rule is loaded (the type lives in the rule text only).
func (t *AuditTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	return []expr.Any{&expr.Log{Key: 1 << unix.NFTA_LOG_LEVEL, Level: expr.LogLevelAudit}}, nil
}

package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// QuotaMatch is -m quota: matches until a byte budget is used up.
type QuotaMatch struct {
	Quota  uint64
	Invert bool
}

var quotaMatchSpec = ExtSpec{
	Name:     "quota",
	Options:  []OptDef{{Name: "quota", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &QuotaMatch{} },
}

var _ = RegisterMatch(&quotaMatchSpec)

func (m *QuotaMatch) Name() string { return "quota" }

func (m *QuotaMatch) Parse(p *OptArg) error {
	v, err := x6Uint(p, 0, math.MaxUint64)
	if err != nil {
		return err
	}
	m.Quota = v
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *QuotaMatch) Final(*Rule, OptSet) error { return nil }

func (m *QuotaMatch) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, "%s --quota %d", invMark(m.Invert), m.Quota)
}

func (m *QuotaMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	fmt.Fprintf(b, " quota: %d bytes", m.Quota)
}

// NftExprs: the xtables match (struct xt_quota_info). nft's quota counts
// a packet that exactly uses up the budget as over it and keeps counting
// afterwards; xt_quota does neither.
func (m *QuotaMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	var flags uint32
	if m.Invert {
		flags = 1
	}
	x.u32(flags)
	x.u32(0)
	x.u64(m.Quota)
	x.u64(0) // the kernel's master pointer
	return []expr.Any{compatMatch("quota", 0, x)}, nil
}

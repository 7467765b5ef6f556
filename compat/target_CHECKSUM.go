package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// ChecksumTarget is -j CHECKSUM --checksum-fill: it computes a missing
// checksum in place.
type ChecksumTarget struct {
	Fill bool
}

var tgChecksumOptions = []OptDef{{Name: "checksum-fill", Arg: NoArg, ID: 0}}

func init() {
	RegisterTarget(&ExtSpec{
		Name:      "CHECKSUM",
		X6:        true,
		Options:   tgChecksumOptions,
		NewTarget: func(Family) TargetExt { return &ChecksumTarget{} },
	})
}

func (t *ChecksumTarget) Name() string { return "CHECKSUM" }

func (t *ChecksumTarget) Parse(*OptArg) error { t.Fill = true; return nil }

func (t *ChecksumTarget) Final(_ *Rule, seen OptSet) error {
	return x6Fcheck("CHECKSUM", tgChecksumOptions, seen, map[int]x6Rel{0: {mand: true}})
}

func (t *ChecksumTarget) Save(b *strings.Builder, _ *Rule) {
	if t.Fill {
		b.WriteString(" --checksum-fill")
	}
}

func (t *ChecksumTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" CHECKSUM")
	if t.Fill {
		b.WriteString(" fill")
	}
}

// NftExprs: CHECKSUM completes a partial (offloaded) checksum in place,
// and nftables has no expression that does (payload writes only update
// checksums incrementally). The kernel binds the xtables target to a
// table named "mangle", so it cannot run in our table either: the rule
// is refused with a message that says so, rather than accepted as a
// no-op that would silently leave checksums partial (see
// docs/extensions.md). Outside the mangle table the kernel refuses it
// anyway, and does so for the xtables target we hand it there.
func (t *ChecksumTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" {
		return tgRefused("CHECKSUM", 0, 1), nil
	}
	return nil, tgNotInTable("CHECKSUM", "mangle", "--checksum-fill")
}

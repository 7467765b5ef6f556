package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// ChecksumTarget is -j CHECKSUM --checksum-fill: it computes a missing
// checksum in place.
type ChecksumTarget struct {
	Fill  bool
	table string // the iptables table named with the rule, for Warning
}

var tgChecksumOptions = []OptDef{{Name: "checksum-fill", Arg: NoArg, ID: 0}}

var checksumTargetSpec = ExtSpec{
	Name:      "CHECKSUM",
	X6:        true,
	Options:   tgChecksumOptions,
	NewTarget: func(Family) TargetExt { return &ChecksumTarget{} },
}

var _ = RegisterTarget(&checksumTargetSpec)

func (t *ChecksumTarget) Name() string { return "CHECKSUM" }

func (t *ChecksumTarget) Parse(p *OptArg) error { t.Fill, t.table = true, p.Table; return nil }

// ChecksumWarning is printed on stderr for every CHECKSUM rule accepted
// in the mangle table.
const ChecksumWarning = "Warning: xdptables: CHECKSUM --checksum-fill has no nftables equivalent: the rule matches and counts packets but leaves partial checksums as they are (see docs/extensions.md)\n"

func (t *ChecksumTarget) warnsOnAdd() {}

// Warning says that the rule will not fill in checksums, where the
// kernel would otherwise accept it (the mangle table).
func (t *ChecksumTarget) Warning() string {
	if t.table == "mangle" {
		return ChecksumWarning
	}
	return ""
}

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

// NftExprs: CHECKSUM completes a partial (offloaded) checksum in place.
// nftables has no expression that does (payload writes only update
// checksums incrementally), and the kernel binds the xtables target to a
// table named "mangle", so it cannot run in our table either. The rule is
// accepted in the mangle table with its matches and counter and no action
// (the target itself never ends the chain, so every later rule runs as
// with iptables), and Warning says so on stderr: refusing it would make
// whole restore files fail, e.g. every saved ruleset of a host that runs
// libvirt, whose DHCP rule for guests is the common use. Outside the
// mangle table the kernel refuses the xtables target, as for
// iptables-nft.
func (t *ChecksumTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "mangle" {
		return tgRefused("CHECKSUM", 0, 1), nil
	}
	return nil, nil
}

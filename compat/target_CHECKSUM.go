package compat

import "strings"

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
	return tgFcheck("CHECKSUM", tgChecksumOptions, seen, map[int]tgRel{0: {mand: true}})
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

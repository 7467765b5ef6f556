package compat

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/nftables/expr"
)

// CPUMatch is -m cpu: the CPU that handles the packet.
type CPUMatch struct {
	CPU    uint32
	Invert bool
}

var cpuMatchSpec = ExtSpec{
	Name:     "cpu",
	Options:  []OptDef{{Name: "cpu", Arg: RequiredArg, ID: 0, Invert: true, Mandatory: true}},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &CPUMatch{} },
}

var _ = RegisterMatch(&cpuMatchSpec)

func (m *CPUMatch) Name() string { return "cpu" }

func (m *CPUMatch) Parse(p *OptArg) error {
	v, err := x6Uint(p, 0, math.MaxUint32)
	if err != nil {
		return err
	}
	m.CPU = uint32(v)
	if p.Invert {
		m.Invert = true
	}
	return nil
}

func (m *CPUMatch) Final(*Rule, OptSet) error { return nil }

func (m *CPUMatch) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, "%s --cpu %d", invMark(m.Invert), m.CPU)
}

func (m *CPUMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	inv := ""
	if m.Invert {
		inv = "! "
	}
	fmt.Fprintf(b, " cpu %s%d", inv, m.CPU)
}

// NftExprs: "meta cpu" is the same smp_processor_id() xt_cpu reads.
func (m *CPUMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	return []expr.Any{metaLoad(expr.MetaKeyCPU), cmpReg(m.Invert, host32(m.CPU))}, nil
}

package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ECNMatch is -m ecn: the ECN bits of the IP header and the TCP
// ECE/CWR flags.
type ECNMatch struct {
	Operation, Invert uint8 // ecnIP | ecnECE | ecnCWR
	IPECT             uint8
}

const (
	ecnIP  = 0x01
	ecnECE = 0x10
	ecnCWR = 0x20
)

const (
	ecnOptCWR = iota
	ecnOptECE
	ecnOptIPECT
)

var ecnMatchSpec = ExtSpec{
	Name: "ecn",
	Options: []OptDef{
		{Name: "ecn-tcp-cwr", Arg: NoArg, ID: ecnOptCWR, Invert: true},
		{Name: "ecn-tcp-ece", Arg: NoArg, ID: ecnOptECE, Invert: true},
		{Name: "ecn-ip-ect", Arg: RequiredArg, ID: ecnOptIPECT, Invert: true},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &ECNMatch{} },
}

var _ = RegisterMatch(&ecnMatchSpec)

func (m *ECNMatch) Name() string { return "ecn" }

func (m *ECNMatch) Parse(p *OptArg) error {
	var op uint8
	switch p.Def.ID {
	case ecnOptCWR:
		op = ecnCWR
	case ecnOptECE:
		op = ecnECE
	case ecnOptIPECT:
		v, err := x6Uint(p, 0, 3)
		if err != nil {
			return err
		}
		op, m.IPECT = ecnIP, uint8(v)
	}
	m.Operation |= op
	if p.Invert {
		m.Invert |= op
	}
	return nil
}

func (m *ECNMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("ECN match: some option required")
	}
	return nil
}

func (m *ECNMatch) Save(b *strings.Builder, _ *Rule) {
	if m.Operation&ecnECE != 0 {
		b.WriteString(invMark(m.Invert&ecnECE != 0) + " --ecn-tcp-ece")
	}
	if m.Operation&ecnCWR != 0 {
		b.WriteString(invMark(m.Invert&ecnCWR != 0) + " --ecn-tcp-cwr")
	}
	if m.Operation&ecnIP != 0 {
		fmt.Fprintf(b, "%s --ecn-ip-ect %d", invMark(m.Invert&ecnIP != 0), m.IPECT)
	}
}

func (m *ECNMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" ECN match")
	inv := func(bit uint8) string {
		if m.Invert&bit != 0 {
			return "!"
		}
		return ""
	}
	if m.Operation&ecnECE != 0 {
		b.WriteString(" " + inv(ecnECE) + "ECE")
	}
	if m.Operation&ecnCWR != 0 {
		b.WriteString(" " + inv(ecnCWR) + "CWR")
	}
	if m.Operation&ecnIP != 0 {
		fmt.Fprintf(b, " %sECT=%d", inv(ecnIP), m.IPECT)
	}
}

// NftExprs: the xtables match (struct xt_ecn_info). xt_ecn reads the
// TCP flags of every fragment's transport data, which nft's transport
// payload does not; the kernel also refuses the TCP tests without -p
// tcp, as it does iptables-nft's.
func (m *ECNMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u8(m.Operation)
	x.u8(m.Invert)
	x.u8(m.IPECT)
	x.u8(0) // proto.tcp.ect, unused
	return []expr.Any{compatMatch("ecn", 0, x)}, nil
}

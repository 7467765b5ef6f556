package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// TCPMSSTarget is -j TCPMSS: it rewrites the MSS option of SYN packets
// to a fixed value or to the path MTU minus the headers.
type TCPMSSTarget struct {
	MSS uint16 // tgTcpmssClampPMTU for --clamp-mss-to-pmtu
}

const tgTcpmssClampPMTU = 0xffff

const (
	tgTcpmssOptSet = iota
	tgTcpmssOptClamp
)

var tcpmssTargetSpec = ExtSpec{
	Name: "TCPMSS",
	X6:   true,
	Options: []OptDef{
		{Name: "set-mss", Arg: RequiredArg, ID: tgTcpmssOptSet},
		{Name: "clamp-mss-to-pmtu", Arg: NoArg, ID: tgTcpmssOptClamp},
	},
	NewTarget: func(Family) TargetExt { return &TCPMSSTarget{} },
}

var _ = RegisterTarget(&tcpmssTargetSpec)

func (t *TCPMSSTarget) Name() string { return "TCPMSS" }

func (t *TCPMSSTarget) Parse(p *OptArg) error {
	if p.Def.ID == tgTcpmssOptClamp {
		t.MSS = tgTcpmssClampPMTU
		return nil
	}
	// the largest MSS leaves room for the network header
	max := uint64(0xffff - 20)
	if p.Family == IPv6 {
		max = 0xffff - 40
	}
	v, err := tgUint(p, 0, max)
	if err != nil {
		return err
	}
	t.MSS = uint16(v)
	return nil
}

func (t *TCPMSSTarget) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("TCPMSS target: At least one parameter is required")
	}
	return nil
}

func (t *TCPMSSTarget) Save(b *strings.Builder, _ *Rule) {
	if t.MSS == tgTcpmssClampPMTU {
		b.WriteString(" --clamp-mss-to-pmtu")
	} else {
		fmt.Fprintf(b, " --set-mss %d", t.MSS)
	}
}

func (t *TCPMSSTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	if t.MSS == tgTcpmssClampPMTU {
		b.WriteString(" TCPMSS clamp to PMTU")
	} else {
		fmt.Fprintf(b, " TCPMSS set %d", t.MSS)
	}
}

// NftExprs keeps the xtables target: nft's `tcp option maxseg size set`
// neither adds a missing MSS option nor clamps to the reverse path MTU
// as TCPMSS does. TCPMSS has no table restriction.
func (t *TCPMSSTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.u16(t.MSS)
	return []expr.Any{tgXtTarget("TCPMSS", 0, b.b)}, nil
}

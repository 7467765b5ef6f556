package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ClusteripTarget is -j CLUSTERIP (IPv4, revision 0): a node of a
// cluster sharing one address answers the packets whose hash falls to
// it. Linux 6.3 removed the target; iptables 1.8.9 still parses it,
// notes that the kernel lacks it, and the kernel refuses the rule.
// Fields are struct ipt_clusterip_tgt_info.
type ClusteripTarget struct {
	New                  bool
	HashMode             uint32
	MAC                  [6]byte
	TotalNodes, LocalNum uint16
	LocalNode            uint16 // local_nodes[0]
	HashInit             uint32
}

const (
	clusteripOptNew = iota
	clusteripOptHashMode
	clusteripOptMAC
	clusteripOptTotal
	clusteripOptLocal
	clusteripOptHashInit
)

// clusteripMaxNodes is CLUSTERIP_MAX_NODES.
const clusteripMaxNodes = 16

var clusteripHashModes = []string{"sourceip", "sourceip-sourceport", "sourceip-sourceport-destport"}

var clusteripOpts = []OptDef{
	{Name: "new", Arg: NoArg, ID: clusteripOptNew},
	{Name: "hashmode", Arg: RequiredArg, ID: clusteripOptHashMode},
	{Name: "clustermac", Arg: RequiredArg, ID: clusteripOptMAC},
	{Name: "total-nodes", Arg: RequiredArg, ID: clusteripOptTotal},
	{Name: "local-node", Arg: RequiredArg, ID: clusteripOptLocal},
	{Name: "hash-init", Arg: RequiredArg, ID: clusteripOptHashInit},
}

var clusteripTargetSpec = ExtSpec{
	Name:      "CLUSTERIP",
	Family:    IPv4,
	X6:        true,
	Options:   clusteripOpts,
	NewTarget: func(Family) TargetExt { return &ClusteripTarget{} },
}

var _ = RegisterTarget(&clusteripTargetSpec)

func (t *ClusteripTarget) Name() string { return "CLUSTERIP" }

// XtRevision: the revision iptables 1.8.9 loads, asked for in the kernel
// (see xtProber); kernels from 6.3 on answer that they lack it.
func (t *ClusteripTarget) XtRevision() uint32 { return 0 }

func (t *ClusteripTarget) Parse(p *OptArg) error {
	switch p.Def.ID {
	case clusteripOptNew:
		t.New = true
	case clusteripOptHashMode:
		for i, m := range clusteripHashModes {
			if p.Arg == m {
				t.HashMode = uint32(i)
				return nil
			}
		}
		return Paramf("Unknown hashmode \"%s\"", p.Arg)
	case clusteripOptMAC:
		mac, ok := parseMAC(p.Arg)
		if !ok {
			return Paramf("Invalid MAC address specified.")
		}
		t.MAC = mac
		if mac[0]&1 == 0 {
			return Paramf("MAC has to be a multicast ethernet address")
		}
	case clusteripOptTotal:
		v, err := x6Uint(p, 0, clusteripMaxNodes)
		if err != nil {
			return err
		}
		t.TotalNodes = uint16(v)
	case clusteripOptLocal:
		v, err := x6Uint(p, 0, 0xffff)
		if err != nil {
			return err
		}
		t.LocalNode, t.LocalNum = uint16(v), 1
	case clusteripOptHashInit:
		v, err := x6Uint(p, 0, 0xffffffff)
		if err != nil {
			return err
		}
		t.HashInit = uint32(v)
	}
	return nil
}

// clusteripFull are the options a new cluster needs, all of them.
const clusteripFull = 1<<clusteripOptNew | 1<<clusteripOptHashMode | 1<<clusteripOptMAC |
	1<<clusteripOptTotal | 1<<clusteripOptLocal

// Final: no option (join an existing cluster) or all those of a new one
// (--hash-init optional).
func (t *ClusteripTarget) Final(_ *Rule, seen OptSet) error {
	if err := x6Fcheck("CLUSTERIP", clusteripOpts, seen, nil); err != nil {
		return err
	}
	if seen != 0 && seen&clusteripFull != clusteripFull {
		return Paramf("CLUSTERIP target: Invalid parameter combination")
	}
	return nil
}

func (t *ClusteripTarget) mac() string {
	m := t.MAC
	return fmt.Sprintf("%02X:%02X:%02X:%02X:%02X:%02X", m[0], m[1], m[2], m[3], m[4], m[5])
}

func (t *ClusteripTarget) Save(b *strings.Builder, _ *Rule) {
	if !t.New {
		return
	}
	fmt.Fprintf(b, " --new --hashmode %s --clustermac %s --total-nodes %d --local-node %d --hash-init %d",
		clusteripHashModes[t.HashMode], t.mac(), t.TotalNodes, t.LocalNode, t.HashInit)
}

func (t *ClusteripTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	if !t.New {
		b.WriteString(" CLUSTERIP")
		return
	}
	fmt.Fprintf(b, " CLUSTERIP hashmode=%s clustermac=%s total_nodes=%d local_node=%d hash_init=%d",
		clusteripHashModes[t.HashMode], t.mac(), t.TotalNodes, t.LocalNode, t.HashInit)
}

// NftExprs: the xtables target with struct ipt_clusterip_tgt_info, as
// iptables-nft sends it; nftables has no such target (nor do kernels
// from 6.3 on, which refuse the rule with ENOENT as for iptables-nft).
func (t *ClusteripTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var x xtBlob
	var flags uint32
	if t.New {
		flags = 1 // CLUSTERIP_FLAG_NEW
	}
	x.u32(flags)
	x.raw(t.MAC[:], 6)
	x.u16(t.TotalNodes)
	x.u16(t.LocalNum)
	x.u16(t.LocalNode)
	x.raw(nil, 2*(clusteripMaxNodes-1))
	x.align(4)
	x.u32(t.HashMode)
	x.u32(t.HashInit)
	x.align(8)
	x.u64(0) // struct clusterip_config *config
	return []expr.Any{tgXtTarget("CLUSTERIP", 0, x.b)}, nil
}

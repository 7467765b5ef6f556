package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ClusterMatch is -m cluster: the connection's hash (of its original
// source address, with a seed) picks one of TotalNodes nodes; the rule
// matches when that node is in NodeMask. Firewall clusters share one
// address and split the connections this way.
type ClusterMatch struct {
	TotalNodes, NodeMask, HashSeed uint32
	Invert                         bool
}

const (
	clusterOptTotal = iota
	clusterOptNode
	clusterOptMask
	clusterOptSeed
)

var clusterOpts = []OptDef{
	{Name: "cluster-total-nodes", Arg: RequiredArg, ID: clusterOptTotal},
	{Name: "cluster-local-node", Arg: RequiredArg, ID: clusterOptNode, Invert: true},
	{Name: "cluster-local-nodemask", Arg: RequiredArg, ID: clusterOptMask, Invert: true},
	{Name: "cluster-hash-seed", Arg: RequiredArg, ID: clusterOptSeed},
}

var clusterMatchSpec = ExtSpec{
	Name:     "cluster",
	Options:  clusterOpts,
	X6:       true,
	NewMatch: func(Family) MatchExt { return &ClusterMatch{} },
}

var _ = RegisterMatch(&clusterMatchSpec)

func (m *ClusterMatch) Name() string { return "cluster" }

// Parse: libxt_cluster takes node numbers and, oddly, the node mask too
// within 1-32 (XT_CLUSTER_NODES_MAX).
func (m *ClusterMatch) Parse(p *OptArg) error {
	var v uint64
	var err error
	if p.Def.ID == clusterOptSeed {
		v, err = x6Uint(p, 0, 0xffffffff)
	} else {
		v, err = x6Uint(p, 1, 32)
	}
	if err != nil {
		return err
	}
	switch p.Def.ID {
	case clusterOptTotal:
		m.TotalNodes = uint32(v)
	case clusterOptNode:
		m.NodeMask = 1 << (v - 1)
	case clusterOptMask:
		m.NodeMask = uint32(v)
	case clusterOptSeed:
		m.HashSeed = uint32(v)
	}
	if p.Invert {
		m.Invert = true
	}
	return nil
}

// Final: as iptables 1.8.9 orders its checks: a node is required, then
// xtables' mandatory and exclusion checks, then the mask must fit the
// node count.
func (m *ClusterMatch) Final(_ *Rule, seen OptSet) error {
	if !seen.Has(clusterOptNode) && !seen.Has(clusterOptMask) {
		return Paramf("cluster match: `--cluster-local-node' or`--cluster-local-nodemask' is missing")
	}
	if err := x6Fcheck("cluster", clusterOpts, seen, map[int]x6Rel{
		clusterOptTotal: {mand: true},
		clusterOptNode:  {excl: bit(clusterOptMask)},
		clusterOptMask:  {excl: bit(clusterOptNode)},
		clusterOptSeed:  {mand: true},
	}); err != nil {
		return err
	}
	if uint64(m.NodeMask) >= 1<<m.TotalNodes {
		return Paramf("cluster match: `--cluster-local-nodemask' too big for `--cluster-total-nodes'")
	}
	return nil
}

func (m *ClusterMatch) Save(b *strings.Builder, _ *Rule) {
	fmt.Fprintf(b, "%s --cluster-local-nodemask 0x%08x --cluster-total-nodes %d --cluster-hash-seed 0x%08x",
		invMark(m.Invert), m.NodeMask, m.TotalNodes, m.HashSeed)
}

func (m *ClusterMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	inv := ""
	if m.Invert {
		inv = "!"
	}
	fmt.Fprintf(b, " cluster %snode_mask=0x%08x total_nodes=%d hash_seed=0x%08x", inv, m.NodeMask, m.TotalNodes, m.HashSeed)
}

// NftExprs: the xtables match (struct xt_cluster_match_info), as
// iptables-nft sends it. nft's jhash of `ct original saddr` scaled to the
// node count is close, but xt_cluster hashes the master connection of a
// related one (FTP data, ...) and needs a conntrack entry.
func (m *ClusterMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u32(m.TotalNodes)
	x.u32(m.NodeMask)
	x.u32(m.HashSeed)
	x.u32(uint32(xtFlag(m.Invert))) // XT_CLUSTER_F_INV
	return []expr.Any{compatMatch("cluster", 0, x)}, nil
}

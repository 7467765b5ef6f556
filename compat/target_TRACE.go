package compat

import (
	"strings"

	"github.com/google/nftables/expr"
)

// TraceTarget is -j TRACE. iptables-nft expresses it natively as
// "meta nftrace set 1"; it has no options and no -L description.
type TraceTarget struct{}

var traceTargetSpec = ExtSpec{
	Name:      "TRACE",
	X6:        true,
	NewTarget: func(Family) TargetExt { return &TraceTarget{} },
}

var _ = RegisterTarget(&traceTargetSpec)

func (t *TraceTarget) Name() string                       { return "TRACE" }
func (t *TraceTarget) Parse(*OptArg) error                { return nil }
func (t *TraceTarget) Final(*Rule, OptSet) error          { return nil }
func (t *TraceTarget) Save(*strings.Builder, *Rule)       {}
func (t *TraceTarget) List(*strings.Builder, *Rule, bool) {}

// NftExprs is `meta nftrace set 1`: skb->nf_trace, what TRACE sets.
func (t *TraceTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	return []expr.Any{tgImm(1, []byte{1}), tgMetaSet(expr.MetaKeyNFTRACE)}, nil
}

package kernel

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// BoundChain is a jump to a chain that is created with its rule and goes
// away with it (an nftables chain binding, `jump { ... }` in nft's
// language): the batch sends the chain and its rules, under the rule's
// operation, right before the rule. It gives one rule the effect of
// several (e.g. "divert to a socket, or else drop") while iptables' one
// rule = one kernel rule numbering stays. The kernel names the chain
// "__chainN" and hides it from chain listings of nft; ours skip it
// because it has no "TABLE." prefix.
type BoundChain interface {
	expr.Any
	// BoundRules returns the rules of the bound chain.
	BoundRules() [][]expr.Any
}

// IsBoundChainName says whether name is one the kernel gave a bound chain.
func IsBoundChainName(name string) bool {
	return len(name) > 7 && name[:7] == "__chain"
}

const (
	nftaChainID        = 0xb // NFTA_CHAIN_ID
	nftaRuleChainID    = 0xb // NFTA_RULE_CHAIN_ID
	nftaVerdictChainID = 0x3 // NFTA_VERDICT_CHAIN_ID
	nftChainBinding    = 0x4 // NFT_CHAIN_BINDING
)

// boundJump is the jump to a bound chain by its batch ID.
type boundJump struct {
	*expr.Verdict // satisfies expr.Any; never marshalled by the library
	id            uint32
}

func (j boundJump) encode(e *encoder) {
	el := e.nest(unix.NFTA_LIST_ELEM)
	e.str(unix.NFTA_EXPR_NAME, "immediate")
	d := e.nest(unix.NFTA_EXPR_DATA)
	e.u32(unix.NFTA_IMMEDIATE_DREG, unix.NFT_REG_VERDICT)
	id := e.nest(unix.NFTA_IMMEDIATE_DATA)
	v := e.nest(unix.NFTA_DATA_VERDICT)
	code := int32(unix.NFT_JUMP)
	e.u32(unix.NFTA_VERDICT_CODE, uint32(code))
	e.u32(nftaVerdictChainID, j.id)
	e.endNest(v)
	e.endNest(id)
	e.endNest(d)
	e.endNest(el)
}

// boundChain sends the chain of c and its rules for operation idx and
// returns the jump the rule holds in its place.
func (b *Batch) boundChain(idx int, fam Family, c BoundChain) expr.Any {
	b.anonIDs++
	id := anonSetIDBase + b.anonIDs
	off := b.msg(idx, unix.NFT_MSG_NEWCHAIN, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_CHAIN_TABLE, TableName)
	b.e.u32(nftaChainID, id)
	b.e.u32(nftaChainFlags, nftChainBinding)
	b.done(idx, off)
	b.took()
	for _, rule := range c.BoundRules() {
		exprs := b.prepareExprs(idx, fam, rule)
		off := b.msg(idx, unix.NFT_MSG_NEWRULE, unix.NLM_F_CREATE|unix.NLM_F_APPEND, fam)
		b.took()
		b.e.str(unix.NFTA_RULE_TABLE, TableName)
		b.e.u32(nftaRuleChainID, id)
		if err := b.exprList(fam, exprs); err != nil {
			b.e.end(off)
			b.fail(idx, err)
			continue
		}
		b.done(idx, off)
	}
	return boundJump{Verdict: &expr.Verdict{Kind: expr.VerdictJump}, id: id}
}

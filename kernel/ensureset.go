package kernel

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// EnsuredLookup is a lookup in a named set that its rule creates when it
// does not exist: the batch sends the set (NEWSET without NLM_F_EXCL,
// which leaves an existing set of the same definition alone) under the
// rule's operation, right before the rule. The set outlives the rule.
// -m set --return-nomatch uses it: the nomatch set of a net type exists
// only while something needs it.
type EnsuredLookup interface {
	expr.Any
	// EnsuredSet returns the lookup the rule holds and the set's
	// definition.
	EnsuredSet() (*expr.Lookup, *nftables.Set)
}

// ensureSet sends the set of l for operation idx and returns the lookup.
func (b *Batch) ensureSet(idx int, fam Family, l EnsuredLookup) expr.Any {
	lk, s := l.EnsuredSet()
	msgs, err := record(func(cc *nftables.Conn) error { return cc.AddSet(ours(fam, s), nil) })
	if err != nil {
		b.fail(idx, fmt.Errorf("set %s: %w", s.Name, err))
		return lk
	}
	b.appendLibMessages(idx, msgs, 0)
	return lk
}

// nftMsgDestroySet deletes a set without failing when it does not exist
// (NFT_MSG_DESTROYSET, Linux 6.3).
const nftMsgDestroySet = 0x1d

// DroppingDynset is a dynset whose rule, when the batch sends it, also
// destroys named sets under the rule's operation, right before the
// rule: sets that held a copy of what the dynset's set holds, which the
// packet path would leave stale (ipset's shard copies, see ipset/doc.go).
// Sets already gone are no error.
type DroppingDynset interface {
	expr.Any
	// DroppedSets returns the dynset the rule holds and the sets to
	// destroy.
	DroppedSets() (*expr.Dynset, []string)
}

// dropSets sends the destroys of d for operation idx and returns the
// dynset.
func (b *Batch) dropSets(idx int, fam Family, d DroppingDynset) expr.Any {
	dyn, names := d.DroppedSets()
	for _, n := range names {
		off := b.msg(idx, nftMsgDestroySet, 0, fam)
		b.e.str(unix.NFTA_SET_TABLE, TableName)
		b.e.str(unix.NFTA_SET_NAME, n)
		b.done(idx, off)
	}
	return dyn
}

package kernel

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
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

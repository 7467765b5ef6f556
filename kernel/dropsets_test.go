package kernel

import (
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// dropping is a DroppingDynset for the test.
type dropping struct {
	*expr.Dynset
	sets []string
}

func (d dropping) DroppedSets() (*expr.Dynset, []string) { return d.Dynset, d.sets }

// A rule holding a DroppingDynset destroys the named sets (DESTROYSET,
// no error for absent ones) under its own operation, right before the
// rule, and holds the plain dynset.
func TestDroppingDynset(t *testing.T) {
	b := NewBatch()
	d := dropping{&expr.Dynset{SrcRegKey: 1, SetName: "ipset.s", Operation: 0}, []string{"ipset-shard.s.0", "ipset-count.s"}}
	idx := b.AppendRule(IPv4, "filter.INPUT", RuleSpec{Exprs: []expr.Any{d}})
	var types []uint16
	var names []string
	for _, m := range parseBatch(t, b) {
		types = append(types, m.Header.Type&0xff)
		if m.Header.Type&0xff != nftMsgDestroySet {
			continue
		}
		tlv(m.Data[4:], func(typ uint16, v []byte) error {
			if typ == unix.NFTA_SET_NAME {
				names = append(names, string(v[:len(v)-1]))
			}
			return nil
		})
	}
	want := []uint16{nftMsgDestroySet, nftMsgDestroySet, unix.NFT_MSG_NEWRULE}
	if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Fatalf("message types %v, want %v", types, want)
	}
	if len(names) != 2 || names[0] != "ipset-shard.s.0" || names[1] != "ipset-count.s" {
		t.Errorf("destroyed %v", names)
	}
	for i := range b.Messages() {
		if int(b.msgOp[i]) != idx {
			t.Errorf("message %d belongs to operation %d, not the rule's %d", i, b.msgOp[i], idx)
		}
	}
}

package kernel

import (
	"bytes"
	"fmt"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// AnonMap is an expression that maps a register through a constant
// anonymous map created with its rule: the batch sends the map (NEWSET and
// NEWSETELEM, under the rule's operation) right before the rule, and the
// kernel deletes it with the rule. It computes functions of a packet field
// that no nftables expression computes, such as a TTL decrement that stops
// at 0. With no data (data length 0) it is an anonymous set: the lookup
// only tests that the register holds one of the keys.
type AnonMap interface {
	expr.Any
	// AnonMapDef returns the lookup (source and destination registers; its
	// set name and ID are the batch's to fill in) and the map: key and
	// data lengths in bytes and the entries.
	AnonMapDef() (l *expr.Lookup, keyLen, dataLen uint32, keys, values [][]byte)
}

// AnonMapName is the name an anonymous map is created under; the kernel
// replaces %d with a number of its own, so rules read back name it
// "__map0", "__map1", ...
const AnonMapName = "__map%d"

// anonSetIDBase keeps our set IDs apart from those the google/nftables
// library hands out (from 1 up) for sets it marshals into the same batch.
const anonSetIDBase = 0x40000000

// anonMap sends the map of m for operation idx and returns the lookup the
// rule holds in its place.
func (b *Batch) anonMap(idx int, fam Family, m AnonMap) *expr.Lookup {
	l, keyLen, dataLen, keys, values := m.AnonMapDef()
	b.anonIDs++
	id := anonSetIDBase + b.anonIDs
	off := b.msg(idx, unix.NFT_MSG_NEWSET, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_SET_TABLE, TableName)
	b.e.str(unix.NFTA_SET_NAME, AnonMapName)
	flags := uint32(unix.NFT_SET_ANONYMOUS | unix.NFT_SET_CONSTANT)
	if dataLen > 0 {
		flags |= unix.NFT_SET_MAP
	}
	b.e.u32(unix.NFTA_SET_FLAGS, flags)
	b.e.u32(unix.NFTA_SET_KEY_TYPE, nftTypeInteger)
	b.e.u32(unix.NFTA_SET_KEY_LEN, keyLen)
	if dataLen > 0 {
		b.e.u32(unix.NFTA_SET_DATA_TYPE, nftTypeInteger)
		b.e.u32(unix.NFTA_SET_DATA_LEN, dataLen)
	}
	b.e.u32(unix.NFTA_SET_ID, id)
	b.done(idx, off)
	b.took()

	off = b.msg(idx, unix.NFT_MSG_NEWSETELEM, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
	b.e.str(unix.NFTA_SET_ELEM_LIST_SET, AnonMapName)
	b.e.u32(unix.NFTA_SET_ELEM_LIST_SET_ID, id)
	list := b.e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
	for i := range keys {
		if uint32(len(keys[i])) != keyLen || (dataLen > 0 && (i >= len(values) || uint32(len(values[i])) != dataLen)) {
			b.e.fail(fmt.Errorf("anonymous map entry %d: key of %d bytes, want %d/%d", i, len(keys[i]), keyLen, dataLen))
			break
		}
		el := b.e.nest(unix.NFTA_LIST_ELEM)
		k := b.e.nest(unix.NFTA_SET_ELEM_KEY)
		b.e.bytes(unix.NFTA_DATA_VALUE, keys[i])
		b.e.endNest(k)
		if dataLen > 0 {
			d := b.e.nest(unix.NFTA_SET_ELEM_DATA)
			b.e.bytes(unix.NFTA_DATA_VALUE, values[i])
			b.e.endNest(d)
		}
		b.e.endNest(el)
	}
	b.e.endNest(list)
	b.done(idx, off)

	c := *l
	c.SetName, c.SetID = AnonMapName, id
	return &c
}

// nftTypeInteger is nft's "integer" datatype: the kernel does not look at
// set datatypes, nft uses them to print the map.
const nftTypeInteger = 4

// IsAnonMapName says whether name is one the kernel gave an anonymous map.
func IsAnonMapName(name string) bool {
	return len(name) > 5 && name[:5] == "__map"
}

// BindsObjects says whether r, read from the kernel, uses an anonymous map
// or a bound chain. Such a rule cannot be sent back as read (they are bound
// to the rule being replaced): it must be rebuilt with new ones.
func (r *Rule) BindsObjects() bool {
	found := false
	_ = forEachExpr(r.rawExprs, func(name string, data []byte) error {
		if (name == "lookup" && bytes.Contains(data, []byte("__map"))) ||
			(name == "immediate" && bytes.Contains(data, []byte("__chain"))) {
			found = true
		}
		return nil
	})
	return found
}

package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// CtHelper is a `ct helper` object of our table: it names the kernel's
// conntrack helper Helper (e.g. "ftp") for layer 4 protocol L4Proto, in
// the table's family. A rule's `ct helper set` refers to it by Name.
type CtHelper struct {
	Name    string
	Helper  string
	L4Proto uint8
}

// l3proto is the NFTA_CT_HELPER_L3PROTO of a family's helper objects.
func (f Family) l3proto() uint16 {
	if f == IPv6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// AddCtHelper creates the ct helper object o if no object of its name
// exists (an existing one is left as it is). The kernel looks the helper
// up when it creates the object: an unknown helper, or one that does not
// serve o.L4Proto, fails the batch with ENOENT. isNew says the caller
// knows the object does not exist: only then does it take a handle from
// the table (see Handles).
func (b *Batch) AddCtHelper(fam Family, o CtHelper, isNew bool) int {
	idx := b.addOp(Op{Kind: OpObjAdd, Family: fam, Obj: o.Name})
	off := b.msg(idx, unix.NFT_MSG_NEWOBJ, unix.NLM_F_CREATE, fam)
	b.e.str(unix.NFTA_OBJ_TABLE, TableName)
	b.e.str(unix.NFTA_OBJ_NAME, o.Name)
	b.e.u32(unix.NFTA_OBJ_TYPE, unix.NFT_OBJECT_CT_HELPER)
	n := b.e.nest(unix.NFTA_OBJ_DATA)
	b.e.str(unix.NFTA_CT_HELPER_NAME, o.Helper)
	b.e.bytes(unix.NFTA_CT_HELPER_L3PROTO, binary.BigEndian.AppendUint16(nil, fam.l3proto()))
	b.e.bytes(unix.NFTA_CT_HELPER_L4PROTO, []byte{o.L4Proto})
	b.e.endNest(n)
	if isNew {
		b.tookUnseen()
	}
	return b.done(idx, off)
}

// DelCtHelper deletes the ct helper object name: ENOENT when it does not
// exist, EBUSY while a rule refers to it.
func (b *Batch) DelCtHelper(fam Family, name string) int {
	idx := b.addOp(Op{Kind: OpObjDel, Family: fam, Obj: name})
	off := b.msg(idx, unix.NFT_MSG_DELOBJ, 0, fam)
	b.e.str(unix.NFTA_OBJ_TABLE, TableName)
	b.e.str(unix.NFTA_OBJ_NAME, name)
	b.e.u32(unix.NFTA_OBJ_TYPE, unix.NFT_OBJECT_CT_HELPER)
	return b.done(idx, off)
}

// CtHelpers lists the ct helper objects of our table in fam.
func (c *Conn) CtHelpers(fam Family) ([]CtHelper, error) {
	msgs, err := c.request(unix.NFT_MSG_GETOBJ, true, fam, func(e *encoder) {
		e.str(unix.NFTA_OBJ_TABLE, TableName)
		e.u32(unix.NFTA_OBJ_TYPE, unix.NFT_OBJECT_CT_HELPER)
	})
	if err != nil {
		return nil, fmt.Errorf("list ct helpers: %w", err)
	}
	var out []CtHelper
	for _, m := range msgs {
		ad, err := decoder(m)
		if err != nil {
			return nil, err
		}
		var o CtHelper
		var table string
		var typ uint32
		for ad.Next() {
			switch ad.Type() {
			case unix.NFTA_OBJ_TABLE:
				table = ad.String()
			case unix.NFTA_OBJ_NAME:
				o.Name = ad.String()
			case unix.NFTA_OBJ_TYPE:
				typ = ad.Uint32()
			case unix.NFTA_OBJ_DATA:
				ad.Nested(func(nd *netlink.AttributeDecoder) error {
					for nd.Next() {
						switch nd.Type() {
						case unix.NFTA_CT_HELPER_NAME:
							o.Helper = nd.String()
						case unix.NFTA_CT_HELPER_L4PROTO:
							o.L4Proto = nd.Uint8()
						}
					}
					return nil
				})
			}
		}
		if err := ad.Err(); err != nil {
			return nil, err
		}
		if table == TableName && typ == unix.NFT_OBJECT_CT_HELPER && Family(m.Data[0]) == fam {
			out = append(out, o)
		}
	}
	return out, nil
}

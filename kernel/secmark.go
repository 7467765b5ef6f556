package kernel

import (
	"errors"

	"golang.org/x/sys/unix"
)

// nftaSecmarkCtx is NFTA_SECMARK_CTX (linux/netfilter/nf_tables.h), the
// security context of a secmark object.
const nftaSecmarkCtx = 1

// secmarkProbe names the object MapsSecctx asks for; the batch is never
// applied, so it never exists.
const secmarkProbe = "xdptables-secmark-probe"

// MapsSecctx asks the kernel whether its security module maps the
// context ctx to a security id, as xt_SECMARK and nftables secmark
// objects need: the kernel creates a secmark object with ctx in a batch
// that is checked and aborted (Check). Without such a module (no SELinux
// policy loaded) or for an unknown context it answers ENOENT and maps is
// false; other failures (no permission, no nf_tables) are returned.
func (c *Conn) MapsSecctx(fam Family, ctx string) (maps bool, err error) {
	b := NewBatch()
	defer b.Release()
	b.AddTable(fam)
	idx := b.addOp(Op{Kind: OpObjAdd, Family: fam, Obj: secmarkProbe})
	off := b.msg(idx, unix.NFT_MSG_NEWOBJ, unix.NLM_F_CREATE|unix.NLM_F_EXCL, fam)
	b.e.str(unix.NFTA_OBJ_TABLE, TableName)
	b.e.str(unix.NFTA_OBJ_NAME, secmarkProbe)
	b.e.u32(unix.NFTA_OBJ_TYPE, unix.NFT_OBJECT_SECMARK)
	n := b.e.nest(unix.NFTA_OBJ_DATA)
	b.e.str(nftaSecmarkCtx, ctx)
	b.e.endNest(n)
	b.done(idx, off)
	err = c.Check(b)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// ConnmarkTarget is -j CONNMARK (revision 2): it sets the conntrack mark
// ((ctmark & ^CtMask) ^ CtMark), or copies between packet and conntrack
// mark under masks, optionally shifted.
type ConnmarkTarget struct {
	Mode       uint8 // tgConnmarkSet, tgConnmarkSave, tgConnmarkRestore
	CtMark     uint32
	CtMask     uint32
	NfMask     uint32
	ShiftRight bool
	ShiftBits  uint8
}

const (
	tgConnmarkSet = iota
	tgConnmarkSave
	tgConnmarkRestore
)

const (
	tgCmOptSet = iota
	tgCmOptSave
	tgCmOptRestore
	tgCmOptAnd
	tgCmOptOr
	tgCmOptXor
	tgCmOptLShift
	tgCmOptRShift
	tgCmOptSetX
	tgCmOptCtMask
	tgCmOptNfMask
	tgCmOptMask
)

const tgCmAnyOp = 1<<tgCmOptSet | 1<<tgCmOptSave | 1<<tgCmOptRestore | 1<<tgCmOptAnd | 1<<tgCmOptOr | 1<<tgCmOptXor | 1<<tgCmOptSetX

var tgConnmarkOptions = []OptDef{
	{Name: "set-xmark", Arg: RequiredArg, ID: tgCmOptSetX},
	{Name: "set-mark", Arg: RequiredArg, ID: tgCmOptSet},
	{Name: "and-mark", Arg: RequiredArg, ID: tgCmOptAnd},
	{Name: "or-mark", Arg: RequiredArg, ID: tgCmOptOr},
	{Name: "xor-mark", Arg: RequiredArg, ID: tgCmOptXor},
	{Name: "save-mark", Arg: NoArg, ID: tgCmOptSave},
	{Name: "restore-mark", Arg: NoArg, ID: tgCmOptRestore},
	{Name: "left-shift-mark", Arg: RequiredArg, ID: tgCmOptLShift},
	{Name: "right-shift-mark", Arg: RequiredArg, ID: tgCmOptRShift},
	{Name: "ctmask", Arg: RequiredArg, ID: tgCmOptCtMask},
	{Name: "nfmask", Arg: RequiredArg, ID: tgCmOptNfMask},
	{Name: "mask", Arg: RequiredArg, ID: tgCmOptMask},
}

var tgConnmarkRels = map[int]x6Rel{
	tgCmOptSetX: {excl: tgCmAnyOp}, tgCmOptSet: {excl: tgCmAnyOp}, tgCmOptAnd: {excl: tgCmAnyOp},
	tgCmOptOr: {excl: tgCmAnyOp}, tgCmOptXor: {excl: tgCmAnyOp}, tgCmOptSave: {excl: tgCmAnyOp},
	tgCmOptRestore: {excl: tgCmAnyOp},
	tgCmOptCtMask:  {excl: bit(tgCmOptMask)},
	tgCmOptNfMask:  {excl: bit(tgCmOptMask)},
	tgCmOptMask:    {excl: bit(tgCmOptCtMask) | bit(tgCmOptNfMask)},
}

var connmarkTargetSpec = ExtSpec{
	Name:      "CONNMARK",
	X6:        true,
	Options:   tgConnmarkOptions,
	NewTarget: func(Family) TargetExt { return &ConnmarkTarget{CtMask: 0xffffffff, NfMask: 0xffffffff} },
}

var _ = RegisterTarget(&connmarkTargetSpec)

func (t *ConnmarkTarget) Name() string { return "CONNMARK" }

func (t *ConnmarkTarget) Parse(p *OptArg) error {
	switch id := p.Def.ID; id {
	case tgCmOptSetX, tgCmOptSet, tgCmOptAnd, tgCmOptOr, tgCmOptXor:
		v, m, err := tgParseMarkOp(p, id, tgCmOptSetX, tgCmOptSet, tgCmOptAnd, tgCmOptOr, tgCmOptXor)
		if err != nil {
			return err
		}
		t.Mode, t.CtMark, t.CtMask = tgConnmarkSet, v, m
	case tgCmOptSave:
		t.Mode = tgConnmarkSave
	case tgCmOptRestore:
		t.Mode = tgConnmarkRestore
	case tgCmOptLShift, tgCmOptRShift:
		v, err := tgUint(p, 0, 32)
		if err != nil {
			return err
		}
		t.ShiftRight, t.ShiftBits = id == tgCmOptRShift, uint8(v)
	case tgCmOptCtMask, tgCmOptNfMask, tgCmOptMask:
		v, err := tgUint(p, 0, 0xffffffff)
		if err != nil {
			return err
		}
		if id != tgCmOptNfMask {
			t.CtMask = uint32(v)
		}
		if id != tgCmOptCtMask {
			t.NfMask = uint32(v)
		}
	}
	return nil
}

func (t *ConnmarkTarget) Final(_ *Rule, seen OptSet) error {
	if seen&tgCmAnyOp == 0 {
		return Paramf("CONNMARK target: No operation specified")
	}
	return x6Fcheck("CONNMARK", tgConnmarkOptions, seen, tgConnmarkRels)
}

func (t *ConnmarkTarget) shiftName() string {
	if t.ShiftRight {
		return "right-shift-mark"
	}
	return "left-shift-mark"
}

func (t *ConnmarkTarget) Save(b *strings.Builder, _ *Rule) {
	switch t.Mode {
	case tgConnmarkSet:
		fmt.Fprintf(b, " --set-xmark 0x%x/0x%x", t.CtMark, t.CtMask)
	case tgConnmarkSave:
		fmt.Fprintf(b, " --save-mark --nfmask 0x%x --ctmask 0x%x", t.NfMask, t.CtMask)
	case tgConnmarkRestore:
		fmt.Fprintf(b, " --restore-mark --nfmask 0x%x --ctmask 0x%x", t.NfMask, t.CtMask)
	}
	if t.ShiftBits != 0 {
		fmt.Fprintf(b, " --%s %d", t.shiftName(), t.ShiftBits)
	}
}

func (t *ConnmarkTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	switch t.Mode {
	case tgConnmarkSet:
		b.WriteString(" CONNMARK " + tgMarkOpString(t.CtMark, t.CtMask))
	case tgConnmarkSave:
		switch {
		case t.NfMask == 0xffffffff && t.CtMask == 0xffffffff:
			b.WriteString(" CONNMARK save")
		case t.NfMask == t.CtMask:
			fmt.Fprintf(b, " CONNMARK save mask 0x%x", t.NfMask)
		default:
			fmt.Fprintf(b, " CONNMARK save nfmask 0x%x ctmask ~0x%x", t.NfMask, t.CtMask)
		}
	case tgConnmarkRestore:
		switch {
		case t.CtMask == 0xffffffff && t.NfMask == 0xffffffff:
			b.WriteString(" CONNMARK restore")
		case t.CtMask == t.NfMask:
			fmt.Fprintf(b, " CONNMARK restore mask 0x%x", t.CtMask)
		default:
			fmt.Fprintf(b, " CONNMARK restore ctmask 0x%x nfmask ~0x%x", t.CtMask, t.NfMask)
		}
	}
	if t.ShiftBits != 0 {
		fmt.Fprintf(b, " %s %d", t.shiftName(), t.ShiftBits)
	}
}

// NftExprs: three forms are native.
//
//   - --restore-mark with a full nfmask and no shift is `meta mark set ct
//     mark & ctmask`; like xt, it leaves packets without a conntrack alone
//     (the ct load ends the rule). Not in the raw table, where a CT
//     template may sit on the packet: xt ignores it, a ct load would read
//     its zero mark.
//   - --set-xmark V/M (and --set-mark, --and/--or/--xor-mark, which parse
//     to it) is `ct mark set ct mark & ^M ^ V`, or `ct mark set V` for a
//     full mask: xt computes (ctmark & ^ctmask) ^ ctmark-value and writes
//     it (with an IPCT_MARK event) when it changed; nft_ct_set does the
//     same, and both leave packets without a conntrack, or with a
//     template, alone.
//   - --save-mark with full masks and no shift is `ct mark set meta mark`
//     (xt: (ctmark & ^ctmask) ^ (mark & nfmask)).
//
// Everything else (save/restore under masks, shifts) mixes two
// registers and keeps the xtables target (no table restriction).
func (t *ConnmarkTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	ctSet := &expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true}
	switch {
	case t.Mode == tgConnmarkRestore && t.NfMask == 0xffffffff && t.ShiftBits == 0 && ctx.Table != "raw":
		out := []expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1}}
		if t.CtMask != 0xffffffff {
			out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: hostU32(t.CtMask), Xor: hostU32(0)})
		}
		return append(out, tgMetaSet(expr.MetaKeyMARK)), nil
	case t.Mode == tgConnmarkSet && t.ShiftBits == 0:
		return append(tgXsetExprs(&expr.Ct{Key: expr.CtKeyMARK, Register: 1}, t.CtMark, t.CtMask), ctSet), nil
	case t.Mode == tgConnmarkSave && t.NfMask == 0xffffffff && t.CtMask == 0xffffffff && t.ShiftBits == 0:
		return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1}, ctSet}, nil
	}
	nfmask := t.NfMask
	if t.Mode == tgConnmarkSet {
		// unused when setting; the rule text (--set-xmark V/M)
		// re-parses with a full nfmask, so the read-back must too
		nfmask = 0xffffffff
	}
	var b xtBlob
	b.u32(t.CtMark)
	b.u32(t.CtMask)
	b.u32(nfmask)
	dir := uint8(0)
	if t.ShiftRight {
		dir = 1
	}
	b.u8(dir)
	b.u8(t.ShiftBits)
	b.u8(t.Mode)
	return []expr.Any{tgXtTarget("CONNMARK", 2, b.b)}, nil
}

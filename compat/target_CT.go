package compat

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"

	"github.com/google/nftables/expr"
)

// CTTarget is -j CT (revision 2): conntrack settings for new
// connections (helper, timeout policy, events, zone) or no tracking.
type CTTarget struct {
	Flags     uint16 // XT_CT_* bits
	Helper    string
	Timeout   string
	CtEvents  uint32
	ExpEvents uint32
	Zone      uint16
}

// XT_CT_* flags.
const (
	CTNotrack      = 1 << 0
	CTNotrackAlias = 1 << 1
	CTZoneDirOrig  = 1 << 2
	CTZoneDirRepl  = 1 << 3
	CTZoneMark     = 1 << 4
)

const (
	tgCtOptNotrack = iota
	tgCtOptHelper
	tgCtOptTimeout
	tgCtOptCtEvents
	tgCtOptExpEvents
	tgCtOptZone
	tgCtOptZoneOrig
	tgCtOptZoneReply
)

const (
	tgCtHelperSize  = 16
	tgCtTimeoutSize = 32
)

type tgCtEvent struct {
	name string
	bit  uint
}

var tgCtEventNames = []tgCtEvent{
	{"new", 0}, {"related", 1}, {"destroy", 2}, {"reply", 3}, {"assured", 4},
	{"protoinfo", 5}, {"helper", 6}, {"mark", 7}, {"natseqinfo", 8}, {"secmark", 9},
}

var tgCtExpEventNames = []tgCtEvent{{"new", 0}}

var ctTargetSpec = ExtSpec{
	Name: "CT",
	X6:   true,
	Options: []OptDef{
		{Name: "notrack", Arg: NoArg, ID: tgCtOptNotrack},
		{Name: "helper", Arg: RequiredArg, ID: tgCtOptHelper},
		{Name: "timeout", Arg: RequiredArg, ID: tgCtOptTimeout},
		{Name: "ctevents", Arg: RequiredArg, ID: tgCtOptCtEvents},
		{Name: "expevents", Arg: RequiredArg, ID: tgCtOptExpEvents},
		{Name: "zone-orig", Arg: RequiredArg, ID: tgCtOptZoneOrig},
		{Name: "zone-reply", Arg: RequiredArg, ID: tgCtOptZoneReply},
		{Name: "zone", Arg: RequiredArg, ID: tgCtOptZone},
	},
	NewTarget: func(Family) TargetExt { return &CTTarget{} },
}

var _ = RegisterTarget(&ctTargetSpec)

func (t *CTTarget) Name() string {
	if t.Flags&CTNotrackAlias != 0 {
		return "NOTRACK"
	}
	return "CT"
}

func tgCtParseEvents(tbl []tgCtEvent, s string) (uint32, error) {
	var mask uint32
	for _, tok := range strings.Split(s, ",") {
		found := false
		for _, e := range tbl {
			if e.name == tok {
				mask |= 1 << e.bit
				found = true
				break
			}
		}
		if !found {
			return 0, Paramf("Unknown event type \"%s\"", tok)
		}
	}
	return mask, nil
}

func tgTruncString(s string, size int) string {
	if len(s) > size-1 {
		return s[:size-1]
	}
	return s
}

func (t *CTTarget) Parse(p *OptArg) error {
	var err error
	switch id := p.Def.ID; id {
	case tgCtOptNotrack:
		t.Flags |= CTNotrack
	case tgCtOptHelper:
		t.Helper = tgTruncString(p.Arg, tgCtHelperSize)
	case tgCtOptTimeout:
		t.Timeout = tgTruncString(p.Arg, tgCtTimeoutSize)
	case tgCtOptCtEvents:
		t.CtEvents, err = tgCtParseEvents(tgCtEventNames, p.Arg)
	case tgCtOptExpEvents:
		t.ExpEvents, err = tgCtParseEvents(tgCtExpEventNames, p.Arg)
	case tgCtOptZone, tgCtOptZoneOrig, tgCtOptZoneReply:
		if id == tgCtOptZoneOrig {
			t.Flags |= CTZoneDirOrig
		}
		if id == tgCtOptZoneReply {
			t.Flags |= CTZoneDirRepl
		}
		t.Zone = 0
		if strings.EqualFold(p.Arg, "mark") {
			t.Flags |= CTZoneMark
			return nil
		}
		v, _, ok := tgStrtoul(p.Arg, 0, 0xffff, true)
		if !ok {
			return Paramf("Cannot parse %s as a zone ID", p.Arg)
		}
		t.Zone = uint16(v)
	}
	return err
}

func (t *CTTarget) Final(*Rule, OptSet) error { return nil }

func tgCtEventList(tbl []tgCtEvent, mask uint32) string {
	var parts []string
	for _, e := range tbl {
		if mask&(1<<e.bit) != 0 {
			parts = append(parts, e.name)
		}
	}
	return strings.Join(parts, ",")
}

func (t *CTTarget) write(b *strings.Builder, pfx string) {
	if t.Flags&CTNotrack != 0 {
		b.WriteString(" " + pfx + "notrack")
	}
	if t.Helper != "" {
		b.WriteString(" " + pfx + "helper " + t.Helper)
	}
	if t.Timeout != "" {
		b.WriteString(" " + pfx + "timeout " + t.Timeout)
	}
	if t.CtEvents != 0 {
		b.WriteString(" " + pfx + "ctevents " + tgCtEventList(tgCtEventNames, t.CtEvents))
	}
	if t.ExpEvents != 0 {
		b.WriteString(" " + pfx + "expevents " + tgCtEventList(tgCtExpEventNames, t.ExpEvents))
	}
	if t.Flags&CTZoneMark != 0 || t.Zone != 0 {
		b.WriteString(" " + pfx + "zone")
		switch t.Flags & (CTZoneDirOrig | CTZoneDirRepl) {
		case CTZoneDirOrig:
			b.WriteString("-orig")
		case CTZoneDirRepl:
			b.WriteString("-reply")
		}
		if t.Flags&CTZoneMark != 0 {
			b.WriteString(" mark")
		} else {
			fmt.Fprintf(b, " %d", t.Zone)
		}
	}
}

func (t *CTTarget) Save(b *strings.Builder, _ *Rule) {
	if t.Flags&CTNotrackAlias != 0 {
		return
	}
	t.write(b, "--")
}

func (t *CTTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	if t.Flags&CTNotrackAlias != 0 {
		b.WriteString(" NOTRACK")
		return
	}
	b.WriteString(" CT")
	t.write(b, "")
}

// ListName is the -L target column: the kernel target is CT even when
// -S shows the NOTRACK alias.
func (t *CTTarget) ListName() string { return "CT" }

// NftExprs: --notrack (and NOTRACK) is the nft notrack expression.
// A CT target that only sets a zone (--zone N, plain -j CT = zone 0,
// or --zone-orig and --zone-reply together, which the kernel treats as
// both directions) is `ct zone set N`: like xt's CT, it attaches a
// conntrack template with that zone (IPS_CONFIRMED, nothing else) to a
// packet that has no conntrack yet and leaves other packets alone, and
// the kernel allows it in the same hooks (PREROUTING, OUTPUT).
//
// --helper, alone or with such a zone, in raw PREROUTING or OUTPUT or
// a user chain they jump or go to: the zone template (zone 0 without
// --zone) here, and the helper assigned natively after conntrack (see
// translate.CTHelperMirrorTable).
//
// Every other CT form needs the xtables target, which the kernel binds
// to a table named "raw" (not supported, see tgNotInTable): --helper
// with options other than a zone, --timeout (nft would need named ct helper/timeout objects, whose
// template is not the same), --ctevents/--expevents (no nft
// equivalent), a zone in one direction only (the library cannot send
// the direction of a ct zone set) and --zone mark (xt takes the mark
// when conntrack looks the packet up, nft when the rule runs). Outside
// the raw table the kernel refuses CT, and so it does when we hand it
// the xtables target there.
func (t *CTTarget) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.Table != "raw" {
		return tgRefused("CT", 2, 72), nil
	}
	if t.Flags&CTNotrack != 0 {
		return []expr.Any{&expr.Notrack{}}, nil
	}
	dir := t.Flags & (CTZoneDirOrig | CTZoneDirRepl)
	zoneOnly := t.Flags&^(CTZoneDirOrig|CTZoneDirRepl) == 0 && (dir == 0 || dir == CTZoneDirOrig|CTZoneDirRepl) &&
		t.Timeout == "" && t.CtEvents == 0 && t.ExpEvents == 0
	zoneSet := ctZoneSetExprs(t.Zone)
	if t.Helper != "" && zoneOnly {
		// --helper (with a zone or not): the rule attaches the zone
		// template here (zone 0 without --zone), which, as xt's
		// template does, makes later CT and NOTRACK rules leave the
		// packet alone; the helper is assigned after conntrack by the
		// mirror of the built-in chains that reach the rule
		// (translate.CTHelperMirrorTable), which the ruleset writes
		// with the chains, or refuses with NotNative when it would not
		// be exact
		return zoneSet, nil
	}
	if zoneOnly && t.Helper == "" {
		return zoneSet, nil
	}
	if t.Timeout != "" && KernelHasCtTimeout != nil {
		// xt CT looks the policy up as the kernel checks the rule, and
		// fails with ENOENT without one, whatever else the rule holds
		// (a helper it cannot find fails with ENOENT too)
		if has, ok := KernelHasCtTimeout(ctx.Family, t.Timeout); ok && !has {
			return nil, &KernelRefusal{Errno: syscall.ENOENT}
		}
	}
	return nil, tgNotInTable("CT", "raw", t.reason())
}

// KernelHasCtTimeout, set by the binary, asks the running kernel whether
// the conntrack timeout policy name exists (kernel.Conn.HasCtTimeout); ok
// is false when it could not ask.
var KernelHasCtTimeout func(f Family, name string) (has, ok bool)

// ctStateUntracked is NF_CT_STATE_UNTRACKED_BIT, the ct state bit of a
// packet NOTRACK made untracked.
const ctStateUntracked = 1 << 6

// ctZoneSetExprs attaches a conntrack template with zone to a packet
// that has no conntrack yet, as xt's CT does. `ct zone set` alone also
// attaches it to a packet an earlier NOTRACK left untracked (it tests
// for an entry, where xt's CT tests for anything attached), so the
// untracked state ends the rule first, leaving that packet alone.
func ctZoneSetExprs(zone uint16) []expr.Any {
	return []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ctStateUntracked), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: make([]byte, 4)},
		tgImm(1, binary.NativeEndian.AppendUint16(nil, zone)),
		&expr.Ct{Key: expr.CtKeyZONE, Register: 1, SourceRegister: true},
	}
}

// NotNative is the error of a CT rule whose form has no exact native
// translation: for --helper, when the rules of its chain cannot be
// re-evaluated after conntrack exactly (translate.CTHelperExact).
func (t *CTTarget) NotNative() error { return tgNotInTable("CT", "raw", t.reason()) }

// reason says why the form has no native translation.
func (t *CTTarget) reason() string {
	switch {
	case t.Helper != "":
		return "--helper"
	case t.Timeout != "":
		return "--timeout"
	case t.CtEvents != 0 || t.ExpEvents != 0:
		return "--ctevents/--expevents"
	case t.Flags&CTZoneMark != 0:
		return "--zone mark"
	}
	return "a zone in one direction"
}

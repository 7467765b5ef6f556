package compat

import (
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// OwnerMatch is -m owner (revision 1): the socket owner of locally
// generated packets.
type OwnerMatch struct {
	UIDMin, UIDMax uint32
	GIDMin, GIDMax uint32
	Match, Invert  uint8 // ownerUID | ownerGID | ownerSocket | ownerSuppl
}

const (
	ownerUID    = 1
	ownerGID    = 2
	ownerSocket = 4
	ownerSuppl  = 8
)

const (
	ownerOptUID = iota
	ownerOptGID
	ownerOptSocket
	ownerOptSuppl
)

var ownerMatchSpec = ExtSpec{
	Name: "owner",
	Options: []OptDef{
		{Name: "uid-owner", Arg: RequiredArg, ID: ownerOptUID, Invert: true},
		{Name: "gid-owner", Arg: RequiredArg, ID: ownerOptGID, Invert: true},
		{Name: "socket-exists", Arg: NoArg, ID: ownerOptSocket, Invert: true},
		{Name: "suppl-groups", Arg: NoArg, ID: ownerOptSuppl},
	},
	X6:       true,
	NewMatch: func(Family) MatchExt { return &OwnerMatch{} },
}

var _ = RegisterMatch(&ownerMatchSpec)

func (m *OwnerMatch) Name() string { return "owner" }

// ownerRange parses "N", "N-M" or "N:M" (ids up to 2^32-2).
func ownerRange(s, opt string) (uint32, uint32, error) {
	const max = 1<<32 - 2
	from, rest, ok := strtoulPrefix(s)
	if !ok || from > max {
		return 0, 0, badValue("owner", opt, s)
	}
	to := from
	if rest != "" && (rest[0] == '-' || rest[0] == ':') {
		to, rest, ok = strtoulPrefix(rest[1:])
		if !ok || to > max {
			return 0, 0, badValue("owner", opt, s)
		}
	}
	if rest != "" {
		return 0, 0, badValue("owner", opt, s)
	}
	return uint32(from), uint32(to), nil
}

func (m *OwnerMatch) Parse(p *OptArg) error {
	var flag uint8
	switch p.Def.ID {
	case ownerOptUID, ownerOptGID:
		db, opt := passwdDB, "--uid-owner"
		flag = ownerUID
		if p.Def.ID == ownerOptGID {
			db, opt, flag = groupDB, "--gid-owner", ownerGID
		}
		from, ok := db.lookup(p.Arg)
		to := from
		if !ok {
			var err error
			if from, to, err = ownerRange(p.Arg, opt); err != nil {
				return err
			}
		}
		if flag == ownerUID {
			m.UIDMin, m.UIDMax = from, to
		} else {
			m.GIDMin, m.GIDMax = from, to
		}
	case ownerOptSocket:
		flag = ownerSocket
	case ownerOptSuppl:
		if m.Match&ownerGID == 0 {
			return badValue("owner", "--suppl-groups", "you need to use --gid-owner first")
		}
		m.Match |= ownerSuppl
		return nil
	}
	if p.Invert {
		m.Invert |= flag
	}
	m.Match |= flag
	return nil
}

func (m *OwnerMatch) Final(_ *Rule, seen OptSet) error {
	if seen == 0 {
		return Paramf("owner: At least one of --uid-owner, --gid-owner or --socket-exists is required")
	}
	return nil
}

func (m *OwnerMatch) item(b *strings.Builder, label string, flag uint8, numeric bool) {
	if m.Match&flag == 0 {
		return
	}
	b.WriteString(invMark(m.Invert&flag != 0) + " " + label)
	idItem := func(lo, hi uint32, db *idDB) {
		if lo != hi {
			b.WriteString(" " + strconv.FormatUint(uint64(lo), 10) + "-" + strconv.FormatUint(uint64(hi), 10))
			return
		}
		if !numeric {
			if n := db.name(lo); n != "" {
				b.WriteString(" " + n)
				return
			}
		}
		b.WriteString(" " + strconv.FormatUint(uint64(lo), 10))
	}
	switch flag {
	case ownerUID:
		idItem(m.UIDMin, m.UIDMax, passwdDB)
	case ownerGID:
		idItem(m.GIDMin, m.GIDMax, groupDB)
	}
}

func (m *OwnerMatch) Save(b *strings.Builder, _ *Rule) {
	m.item(b, "--socket-exists", ownerSocket, true)
	m.item(b, "--uid-owner", ownerUID, true)
	m.item(b, "--gid-owner", ownerGID, true)
	m.item(b, "--suppl-groups", ownerSuppl, true)
}

func (m *OwnerMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	m.item(b, "owner socket exists", ownerSocket, numeric)
	m.item(b, "owner UID match", ownerUID, numeric)
	m.item(b, "owner GID match", ownerGID, numeric)
	m.item(b, "incl. suppl. groups", ownerSuppl, numeric)
}

// NftExprs: "meta skuid/skgid" fails (the rule does not match) when the
// packet has no socket with a file, which is what xt_owner does for the
// positive single-id tests. "!" (true without a socket), id ranges (an
// ordered compare of host-order data), --suppl-groups and
// --socket-exists keep the xtables match. xt_owner is only allowed in
// OUTPUT and POSTROUTING (elsewhere a packet may carry an early-demuxed
// socket that meta skuid would read): in other chains, user chains
// included, the rule keeps the xtables match so that the kernel refuses
// it (at once, or at a jump from a base chain) as it does iptables-nft's.
func (m *OwnerMatch) NftExprs(ctx *NftContext) ([]expr.Any, error) {
	if ctx.InHooks(hookOut|hookPost) && m.Invert == 0 && m.Match&^(ownerUID|ownerGID) == 0 &&
		m.UIDMin == m.UIDMax && m.GIDMin == m.GIDMax {
		var out []expr.Any
		if m.Match&ownerUID != 0 {
			out = append(out, metaLoad(expr.MetaKeySKUID), cmpReg(false, host32(m.UIDMin)))
		}
		if m.Match&ownerGID != 0 {
			out = append(out, metaLoad(expr.MetaKeySKGID), cmpReg(false, host32(m.GIDMin)))
		}
		return out, nil
	}
	// struct xt_owner_match_info
	x := &xtBlob{}
	x.u32(m.UIDMin)
	x.u32(m.UIDMax)
	x.u32(m.GIDMin)
	x.u32(m.GIDMax)
	x.u8(m.Match)
	x.u8(m.Invert)
	return []expr.Any{compatMatch("owner", 1, x)}, nil
}

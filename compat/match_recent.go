package compat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
)

// RecentMatch is -m recent (revision 1, with --mask).
type RecentMatch struct {
	// Cmd is "set", "rcheck", "update" or "remove".
	Cmd      string
	Invert   bool
	Seconds  uint32
	Reap     bool
	HitCount uint32
	RTTL     bool
	ListName string
	Dest     bool
	Mask     netip.Addr
	// MaskGiven: --mask was written. libxt_recent starts from all ones
	// over the whole address union and --mask writes only the family's
	// part, so the kernel holds another mask for "--mask
	// 255.255.255.255" than for no --mask, though -S prints both alike:
	// -C/-D find a rule only when both spell it the same way.
	MaskGiven bool
}

const (
	recOptSet = iota
	recOptRcheck
	recOptUpdate
	recOptRemove
	recOptSeconds
	recOptReap
	recOptHitcount
	recOptRttl
	recOptName
	recOptRsource
	recOptRdest
	recOptMask
)

var recentOptNames = []string{"set", "rcheck", "update", "remove", "seconds", "reap", "hitcount", "rttl",
	"name", "rsource", "rdest", "mask"}

func init() {
	opts := make([]OptDef, 0, len(recentOptNames))
	for id, n := range recentOptNames {
		arg := NoArg
		switch id {
		case recOptSeconds, recOptHitcount, recOptName, recOptMask:
			arg = RequiredArg
		}
		opts = append(opts, OptDef{Name: n, Arg: arg, ID: id, Invert: id <= recOptRemove})
	}
	RegisterMatch(&ExtSpec{
		Name:    "recent",
		X6:      true,
		Options: opts,
		NewMatch: func(f Family) MatchExt {
			mask := netip.AddrFrom4([4]byte{255, 255, 255, 255})
			if f == IPv6 {
				mask = netip.AddrFrom16([16]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
			}
			return &RecentMatch{ListName: "DEFAULT", Mask: mask}
		},
	})
}

func (m *RecentMatch) Name() string { return "recent" }

func (m *RecentMatch) Parse(p *OptArg) error {
	id := p.Def.ID
	switch id {
	case recOptSet, recOptRcheck, recOptUpdate, recOptRemove:
		m.Cmd, m.Invert = recentOptNames[id], p.Invert
	case recOptSeconds:
		v, ok := xtStrtoui(p.Arg, 1, 0xffffffff)
		if !ok {
			return Paramf("recent: bad value for option \"--seconds\", or out of range (1-4294967295).\n")
		}
		m.Seconds = uint32(v)
	case recOptHitcount:
		v, ok := xtStrtoui(p.Arg, 0, 0xffffffff)
		if !ok {
			return Paramf("recent: bad value for option \"--hitcount\", or out of range (0-4294967295).\n")
		}
		m.HitCount = uint32(v)
	case recOptReap:
		m.Reap = true
	case recOptRttl:
		m.RTTL = true
	case recOptName:
		m.ListName = p.Arg
	case recOptRsource:
		m.Dest = false
	case recOptRdest:
		m.Dest = true
	case recOptMask:
		a, err := lookupHost(p.Arg, p.Family)
		if err != nil {
			return err
		}
		// an IPv6 mask of all ones is the default's bytes
		m.Mask, m.MaskGiven = a, a != netip.AddrFrom16([16]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	}
	return nil
}

func (m *RecentMatch) Final(_ *Rule, seen OptSet) error {
	if m.Cmd == "" {
		return Paramf("recent: you must specify one of `--set', `--rcheck' `--update' or `--remove'")
	}
	if seen.Has(recOptReap) && !seen.Has(recOptSeconds) {
		return Paramf("recent: option \"--reap\" also requires \"--seconds\".\n")
	}
	ids := []int{recOptSet, recOptRcheck, recOptUpdate, recOptRemove, recOptRttl}
	return exclusive("recent", seen, ids, []string{"set", "rcheck", "update", "remove", "rttl"},
		[][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 2}, {1, 3}, {2, 0}, {2, 1}, {2, 3}, {3, 0}, {3, 1}, {3, 2}, {4, 0}, {4, 3}})
}

func (m *RecentMatch) Save(b *strings.Builder, _ *Rule) { m.save(b, false) }

// SaveExact is Save in a form that parses back to the same match:
// iptables prints --seconds as a signed number (2^31 and up come out
// negative, which does not parse) and the list name unquoted.
func (m *RecentMatch) SaveExact(b *strings.Builder, _ *Rule) { m.save(b, true) }

func (m *RecentMatch) save(b *strings.Builder, exact bool) {
	b.WriteString(bang(m.Invert) + " --" + m.Cmd)
	if m.Seconds != 0 {
		if exact {
			fmt.Fprintf(b, " --seconds %d", m.Seconds)
		} else {
			fmt.Fprintf(b, " --seconds %d", int32(m.Seconds))
		}
	}
	if m.Reap {
		b.WriteString(" --reap")
	}
	if m.HitCount != 0 {
		fmt.Fprintf(b, " --hitcount %d", m.HitCount)
	}
	if m.RTTL {
		b.WriteString(" --rttl")
	}
	name := m.ListName
	if exact {
		name = SaveQuote(name)
	}
	b.WriteString(" --name " + name)
	if !exact || m.MaskGiven {
		// the exact form (rule identity, userdata) keeps whether
		// --mask was written
		b.WriteString(" --mask " + m.Mask.String())
	}
	if m.Dest {
		b.WriteString(" --rdest")
	} else {
		b.WriteString(" --rsource")
	}
}

func (m *RecentMatch) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(bang(m.Invert) + " recent: ")
	b.WriteString(map[string]string{"set": "SET", "rcheck": "CHECK", "update": "UPDATE", "remove": "REMOVE"}[m.Cmd])
	if m.Seconds != 0 {
		fmt.Fprintf(b, " seconds: %d", int32(m.Seconds))
	}
	if m.Reap {
		b.WriteString(" reap")
	}
	if m.HitCount != 0 {
		fmt.Fprintf(b, " hit_count: %d", m.HitCount)
	}
	if m.RTTL {
		b.WriteString(" TTL-Match")
	}
	b.WriteString(" name: " + m.ListName)
	if m.Dest {
		b.WriteString(" side: dest")
	} else {
		b.WriteString(" side: source")
	}
	b.WriteString(" mask: " + m.Mask.String())
}

// NftExprs uses the xt recent match, revision 1: the address lists live
// in the kernel module (and /proc/net/xt_recent), nothing in nftables
// keeps per-address hit times and counts. struct xt_recent_mtinfo_v1:
// seconds, hit_count, check_set, invert, name[200], side, then the mask
// (union nf_inet_addr, at offset 212).
func (m *RecentMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	b := make([]byte, 228)
	binary.NativeEndian.PutUint32(b[0:], m.Seconds)
	binary.NativeEndian.PutUint32(b[4:], m.HitCount)
	set := map[string]byte{"rcheck": 1, "set": 2, "update": 4, "remove": 8}[m.Cmd]
	if m.RTTL {
		set |= 16
	}
	if m.Reap {
		set |= 32
	}
	b[8] = set
	if m.Invert {
		b[9] = 1
	}
	// iptables copies the name over its "DEFAULT" initial value; the
	// bytes after the NUL mean nothing but keep the blobs identical.
	copy(b[10:], "DEFAULT")
	copy(b[10:209], m.ListName+"\x00")
	if m.Dest {
		b[210] = 1
	}
	mask := m.Mask.AsSlice()
	if !m.MaskGiven {
		// the default mask, all ones over the whole union
		mask = bytes.Repeat([]byte{0xff}, 16)
	}
	putAddr16(b[212:], mask)
	return []expr.Any{xtMatch("recent", 1, b)}, nil
}

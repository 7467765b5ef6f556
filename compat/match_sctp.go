package compat

import (
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
)

// SCTPMatch is -m sctp (also loaded implicitly by -p sctp): ports and
// chunk types.
type SCTPMatch struct {
	Src, Dst         PortRange
	seenSrc, seenDst bool
	// Chunks is set by --chunk-types: how the chunk types must occur
	// (sctpMatchAny/All/Only), the types and the flag tests.
	Chunks    bool
	ChunksInv bool
	MatchType uint32
	ChunkMap  [64]uint32 // bit per chunk type in the first 8 words; ALL sets all 64, as iptables does
	Flags     []SCTPChunkFlags
}

// SCTPChunkFlags tests the flags of one chunk type: the bits in Mask
// must equal those in Flag.
type SCTPChunkFlags struct {
	Type       uint8 // index in sctpChunkNames, as iptables stores it
	Flag, Mask uint8
}

const (
	sctpOptSport = iota
	sctpOptDport
	sctpOptChunks
)

const (
	sctpMatchAny  = 0x01
	sctpMatchAll  = 0x02
	sctpMatchOnly = 0x04
)

// sctpMaxFlags is XT_NUM_SCTP_FLAGS.
const sctpMaxFlags = 4

// sctpChunkNames are the chunk types iptables knows, with the flag
// letters valid for each, from bit 7 down to bit 0 ('-': none).
var sctpChunkNames = []struct {
	name  string
	typ   uint8
	flags string
}{
	{"DATA", 0, "----IUBE"}, {"INIT", 1, "--------"}, {"INIT_ACK", 2, "--------"},
	{"SACK", 3, "--------"}, {"HEARTBEAT", 4, "--------"}, {"HEARTBEAT_ACK", 5, "--------"},
	{"ABORT", 6, "-------T"}, {"SHUTDOWN", 7, "--------"}, {"SHUTDOWN_ACK", 8, "--------"},
	{"ERROR", 9, "--------"}, {"COOKIE_ECHO", 10, "--------"}, {"COOKIE_ACK", 11, "--------"},
	{"ECN_ECNE", 12, "--------"}, {"ECN_CWR", 13, "--------"}, {"SHUTDOWN_COMPLETE", 14, "-------T"},
	{"ASCONF", 193, "--------"}, {"ASCONF_ACK", 128, "--------"}, {"FORWARD_TSN", 192, "--------"},
}

var sctpMatchSpec = ExtSpec{
	Name: "sctp",
	Options: []OptDef{
		{Name: "source-port", Arg: RequiredArg, ID: sctpOptSport, Invert: true},
		{Name: "sport", Arg: RequiredArg, ID: sctpOptSport, Invert: true},
		{Name: "destination-port", Arg: RequiredArg, ID: sctpOptDport, Invert: true},
		{Name: "dport", Arg: RequiredArg, ID: sctpOptDport, Invert: true},
		{Name: "chunk-types", Arg: RequiredArg, ID: sctpOptChunks, Invert: true},
	},
	NewMatch: func(Family) MatchExt { return &SCTPMatch{Src: AnyPorts, Dst: AnyPorts} },
}

var _ = RegisterMatch(&sctpMatchSpec)

func (m *SCTPMatch) Name() string { return "sctp" }

func (m *SCTPMatch) Parse(p *OptArg) error {
	switch p.Def.ID {
	case sctpOptSport, sctpOptDport:
		which, seen, dst := "source-port", &m.seenSrc, &m.Src
		if p.Def.ID == sctpOptDport {
			which, seen, dst = "destination-port", &m.seenDst, &m.Dst
		}
		if *seen {
			return Paramf("Only one `--%s' allowed", which)
		}
		r, err := ParsePortRange(p.Arg, "sctp")
		if err != nil {
			return err
		}
		r.Invert = p.Invert
		*dst, *seen = r, true
	case sctpOptChunks:
		if m.Chunks {
			return Paramf("Only one `--chunk-types' allowed")
		}
		chunks, ok := p.NextArg()
		if !ok {
			return Paramf("--chunk-types requires two args")
		}
		m.Chunks, m.ChunksInv = true, p.Invert
		switch strings.ToUpper(p.Arg) {
		case "ANY":
			m.MatchType = sctpMatchAny
		case "ALL":
			m.MatchType = sctpMatchAll
		case "ONLY":
			m.MatchType = sctpMatchOnly
		default:
			return Paramf("Match type has to be one of \"ALL\", \"ANY\" or \"ONLY\"")
		}
		return m.parseChunks(chunks)
	}
	return nil
}

func (m *SCTPMatch) parseChunks(s string) error {
	m.ChunkMap = [64]uint32{}
	switch strings.ToUpper(s) {
	case "ALL":
		for i := range m.ChunkMap {
			m.ChunkMap[i] = ^uint32(0)
		}
		return nil
	case "NONE":
		return nil
	}
	for _, tok := range strings.Split(s, ",") {
		if tok == "" {
			continue // strtok skips empty tokens
		}
		name, flags, hasFlags := strings.Cut(tok, ":")
		idx := -1
		for i, c := range sctpChunkNames {
			if strings.EqualFold(c.name, name) {
				idx = i
				break
			}
		}
		if idx < 0 {
			return Paramf("Unknown sctp chunk `%s'", name)
		}
		typ := sctpChunkNames[idx].typ
		m.ChunkMap[typ/32] |= 1 << (typ % 32)
		if !hasFlags {
			continue
		}
		for j := 0; j < len(flags); j++ {
			c := flags[j]
			pos := strings.IndexByte(sctpChunkNames[idx].flags, upperASCII(c))
			if pos < 0 {
				return Paramf("Invalid flags for chunk type %d", idx)
			}
			if err := m.addFlag(uint8(idx), uint8(7-pos), c >= 'A' && c <= 'Z'); err != nil {
				return err
			}
		}
	}
	return nil
}

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func (m *SCTPMatch) addFlag(idx, bit uint8, set bool) error {
	for i := range m.Flags {
		if m.Flags[i].Type == idx {
			m.Flags[i].Mask |= 1 << bit
			if set {
				m.Flags[i].Flag |= 1 << bit
			}
			return nil
		}
	}
	if len(m.Flags) == sctpMaxFlags {
		return Paramf("Number of chunk types with flags exceeds currently allowed limit.Increasing this limit involves changing IPT_NUM_SCTP_FLAGS andrecompiling both the kernel space and user space modules")
	}
	f := SCTPChunkFlags{Type: idx, Mask: 1 << bit}
	if set {
		f.Flag = 1 << bit
	}
	m.Flags = append(m.Flags, f)
	return nil
}

func (m *SCTPMatch) Final(*Rule, OptSet) error { return nil }

// chunksText prints the chunk test as iptables does: match type, then
// NONE, ALL or the types in number order with their flags; numeric
// prints types as 0xNNNN.
func (m *SCTPMatch) chunksText(b *strings.Builder, numeric bool) {
	switch m.MatchType {
	case sctpMatchAny:
		b.WriteString(" any")
	case sctpMatchAll:
		b.WriteString(" all")
	case sctpMatchOnly:
		b.WriteString(" only")
	}
	clear, all := true, true
	for _, w := range m.ChunkMap {
		clear = clear && w == 0
		all = all && w == ^uint32(0)
	}
	if clear {
		b.WriteString(" NONE")
		return
	}
	if all {
		b.WriteString(" ALL")
		return
	}
	sep := " "
	for t := 0; t < 256; t++ {
		if m.ChunkMap[t/32]&(1<<(t%32)) == 0 {
			continue
		}
		b.WriteString(sep)
		sep = ","
		if numeric {
			fmt.Fprintf(b, "0x%04X", t)
		} else {
			for _, c := range sctpChunkNames {
				if int(c.typ) == t {
					b.WriteString(c.name)
				}
			}
		}
		for _, f := range m.Flags {
			if int(f.Type) != t || f.Mask == 0 || t >= len(sctpChunkNames) {
				continue
			}
			b.WriteByte(':')
			for i := 7; i >= 0; i-- {
				if f.Mask&(1<<i) == 0 {
					continue
				}
				c := sctpChunkNames[t].flags[7-i]
				if f.Flag&(1<<i) == 0 && c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				b.WriteByte(c)
			}
		}
	}
}

func (m *SCTPMatch) Save(b *strings.Builder, _ *Rule) {
	for _, x := range []struct {
		seen bool
		opt  string
		r    PortRange
	}{{m.seenSrc, "sport", m.Src}, {m.seenDst, "dport", m.Dst}} {
		if !x.seen {
			continue
		}
		if x.r.Invert {
			b.WriteString(" !")
		}
		b.WriteString(" --" + x.opt + " " + x.r.SaveString())
	}
	if m.Chunks {
		if m.ChunksInv {
			b.WriteString(" !")
		}
		b.WriteString(" --chunk-types")
		m.chunksText(b, false)
	}
}

func (m *SCTPMatch) List(b *strings.Builder, _ *Rule, numeric bool) {
	b.WriteString(" sctp")
	if m.seenSrc {
		ListPorts(b, "spt", m.Src, "sctp", numeric)
	}
	if m.seenDst {
		ListPorts(b, "dpt", m.Dst, "sctp", numeric)
	}
	if m.Chunks {
		if m.ChunksInv {
			b.WriteString(" !")
		}
		m.chunksText(b, numeric)
	}
}

// NftExprs: the xtables match (struct xt_sctp_info). nftables could test
// the ports natively, but the chunk tests need xt_sctp's walk over the
// chunks, and one form for the whole match keeps read-back exact.
func (m *SCTPMatch) NftExprs(*NftContext) ([]expr.Any, error) {
	x := &xtBlob{}
	x.u16(m.Dst.Min)
	x.u16(m.Dst.Max)
	x.u16(m.Src.Min)
	x.u16(m.Src.Max)
	for _, w := range m.ChunkMap {
		x.u32(w)
	}
	x.u32(m.MatchType)
	for i := 0; i < sctpMaxFlags; i++ {
		var f SCTPChunkFlags
		if i < len(m.Flags) {
			f = m.Flags[i]
		}
		x.u8(f.Type)
		x.u8(f.Flag)
		x.u8(f.Mask)
	}
	x.u32(uint32(len(m.Flags)))
	var flags, inv uint32
	for _, c := range []struct {
		seen, inv bool
		bit       uint32
	}{{m.seenSrc, m.Src.Invert, 1}, {m.seenDst, m.Dst.Invert, 2}, {m.Chunks, m.ChunksInv, 4}} {
		if c.seen {
			flags |= c.bit
		}
		if c.seen && c.inv {
			inv |= c.bit
		}
	}
	x.u32(flags)
	x.u32(inv)
	return []expr.Any{compatMatch("sctp", 0, x)}, nil
}

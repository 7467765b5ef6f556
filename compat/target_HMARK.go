package compat

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// HmarkTarget is -j HMARK (revision 0): the packet mark becomes a hash
// of chosen parts of the packet (or of its conntrack tuple), modulo
// --hmark-mod, plus --hmark-offset. Load balancers' dumps carry it.
// The fields are those of struct xt_hmark_info; Flags holds the
// XT_HMARK_* bits, which are also the option ids.
type HmarkTarget struct {
	Family    Family
	SrcMask   [16]byte
	DstMask   [16]byte
	PortMask  [4]byte // p16.src, p16.dst big endian, or v32 (SPI) big endian
	PortSet   [4]byte
	Flags     uint32
	ProtoMask uint16
	Rnd       uint32
	Mod       uint32
	Offset    uint32
	implied   OptSet // options --hmark-tuple counts as given
}

// Option ids: the XT_HMARK_* bit numbers (libxt_HMARK's O_HMARK_*).
const (
	hmarkSAddrMask = iota
	hmarkDAddrMask
	hmarkSPI
	hmarkSPIMask
	hmarkSPort
	hmarkDPort
	hmarkSPortMask
	hmarkDPortMask
	hmarkProtoMask
	hmarkRnd
	hmarkModulus
	hmarkOffset
	hmarkCT
	hmarkTuple
)

// hmarkPktMask: the options that choose packet parts to hash.
const hmarkPktMask = 1<<hmarkSAddrMask | 1<<hmarkDAddrMask | 1<<hmarkSPIMask |
	1<<hmarkSPortMask | 1<<hmarkDPortMask | 1<<hmarkProtoMask |
	1<<hmarkSPort | 1<<hmarkDPort | 1<<hmarkSPI

var hmarkTargetSpec = ExtSpec{
	Name: "HMARK",
	X6:   true,
	Options: []OptDef{
		{Name: "hmark-tuple", Arg: RequiredArg, ID: hmarkTuple},
		{Name: "hmark-src-prefix", Arg: RequiredArg, ID: hmarkSAddrMask},
		{Name: "hmark-dst-prefix", Arg: RequiredArg, ID: hmarkDAddrMask},
		{Name: "hmark-sport-mask", Arg: RequiredArg, ID: hmarkSPortMask},
		{Name: "hmark-dport-mask", Arg: RequiredArg, ID: hmarkDPortMask},
		{Name: "hmark-spi-mask", Arg: RequiredArg, ID: hmarkSPIMask},
		{Name: "hmark-sport", Arg: RequiredArg, ID: hmarkSPort},
		{Name: "hmark-dport", Arg: RequiredArg, ID: hmarkDPort},
		{Name: "hmark-spi", Arg: RequiredArg, ID: hmarkSPI},
		{Name: "hmark-proto-mask", Arg: RequiredArg, ID: hmarkProtoMask},
		{Name: "hmark-rnd", Arg: RequiredArg, ID: hmarkRnd},
		{Name: "hmark-mod", Arg: RequiredArg, ID: hmarkModulus},
		{Name: "hmark-offset", Arg: RequiredArg, ID: hmarkOffset},
	},
	NewTarget: func(f Family) TargetExt { return &HmarkTarget{Family: f} },
}

var _ = RegisterTarget(&hmarkTargetSpec)

func (t *HmarkTarget) Name() string { return "HMARK" }

func (t *HmarkTarget) impliedSeen() OptSet { return t.implied }

func (t *HmarkTarget) set(flag int) { t.Flags |= 1 << uint(flag) }

func (t *HmarkTarget) has(flag int) bool { return t.Flags&(1<<uint(flag)) != 0 }

// hmarkTypes: the --hmark-tuple words in the order libxt_HMARK tries
// them; an abbreviation takes the first word it begins.
var hmarkTypes = []string{"ct", "src", "dst", "sport", "dport", "proto", "spi"}

// tupleType applies one --hmark-tuple word (a case-insensitive prefix
// of a type name): it fills the mask and sets the flag of that part.
func (t *HmarkTarget) tupleType(w string) bool {
	typ := ""
	for _, n := range hmarkTypes {
		if len(w) <= len(n) && strings.EqualFold(w, n[:len(w)]) {
			typ = n
			break
		}
	}
	flag := -1
	switch typ {
	case "ct":
		flag = hmarkCT
	case "src":
		t.SrcMask = allOnes16()
		flag = hmarkSAddrMask
	case "dst":
		t.DstMask = allOnes16()
		flag = hmarkDAddrMask
	case "sport":
		t.PortMask[0], t.PortMask[1] = 0xff, 0xff
		flag = hmarkSPortMask
	case "dport":
		t.PortMask[2], t.PortMask[3] = 0xff, 0xff
		flag = hmarkDPortMask
	case "proto":
		t.ProtoMask = 0xffff
		flag = hmarkProtoMask
	case "spi":
		t.PortMask = [4]byte{0xff, 0xff, 0xff, 0xff}
		flag = hmarkSPIMask
	default:
		return false
	}
	t.set(flag)
	t.implied |= 1 << uint(flag)
	return true
}

func allOnes16() [16]byte {
	var m [16]byte
	for i := range m {
		m[i] = 0xff
	}
	return m
}

func (t *HmarkTarget) parseTuple(s string) error {
	for {
		i := strings.IndexByte(s, ',')
		if i < 0 {
			break
		}
		if i == 0 || !t.tupleType(s[:i]) {
			return Paramf("Bad type \"%s\"", s)
		}
		s = s[i+1:]
	}
	if s == "" {
		return Paramf("\"--hmark-tuple\" requires a list of types with no spaces, e.g. src,dst,sport,dport,proto")
	}
	if !t.tupleType(s) {
		return Paramf("Bad type \"%s\"", s)
	}
	return nil
}

// parsePrefix is XTTYPE_PLENMASK: a prefix length up to the family's
// width, else a numeric address taken as a mask (a non-contiguous one
// fills the whole 16-byte mask).
func (t *HmarkTarget) parsePrefix(p *OptArg) ([16]byte, error) {
	var m [16]byte
	full := 32
	if t.Family == IPv6 {
		full = 128
	}
	n, ok := xtStrtoui(p.Arg, 0, uint64(full))
	if !ok {
		var a netip.Addr
		if t.Family == IPv4 {
			a, ok = inetAton(p.Arg)
		} else {
			var err error
			a, err = netip.ParseAddr(p.Arg)
			ok = err == nil && a.Is6() && a.Zone() == ""
		}
		if !ok {
			return m, Paramf("%s: bad value for option \"--%s\", neither a valid network mask nor valid CIDR (0-%d).\n", p.Ext, p.Def.Name, full)
		}
		b := (Net{Mask: a}).Bits()
		if b < 0 {
			return allOnes16(), nil
		}
		n = uint64(b)
	}
	for i := 0; i < int(n); i++ {
		m[i/8] |= 0x80 >> uint(i%8)
	}
	return m, nil
}

func (t *HmarkTarget) Parse(p *OptArg) error {
	id := p.Def.ID
	var v uint64
	var err error
	switch id {
	case hmarkTuple:
		return t.parseTuple(p.Arg)
	case hmarkSAddrMask, hmarkDAddrMask:
		m, err := t.parsePrefix(p)
		if err != nil {
			return err
		}
		if id == hmarkSAddrMask {
			t.SrcMask = m
		} else {
			t.DstMask = m
		}
	case hmarkSPortMask, hmarkDPortMask, hmarkSPort, hmarkDPort, hmarkProtoMask:
		if v, err = tgUint(p, 0, 0xffff); err != nil {
			return err
		}
		switch id {
		case hmarkSPortMask:
			t.PortMask[0], t.PortMask[1] = byte(v>>8), byte(v)
		case hmarkDPortMask:
			t.PortMask[2], t.PortMask[3] = byte(v>>8), byte(v)
		case hmarkSPort:
			t.PortSet[0], t.PortSet[1] = byte(v>>8), byte(v)
		case hmarkDPort:
			t.PortSet[2], t.PortSet[3] = byte(v>>8), byte(v)
		case hmarkProtoMask:
			t.ProtoMask = uint16(v)
		}
	case hmarkSPIMask, hmarkSPI, hmarkRnd, hmarkOffset:
		if v, err = tgUint(p, 0, 0xffffffff); err != nil {
			return err
		}
		be := [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		switch id {
		case hmarkSPIMask:
			t.PortMask = be
		case hmarkSPI:
			t.PortSet = be
		case hmarkRnd:
			t.Rnd = uint32(v)
		case hmarkOffset:
			t.Offset = uint32(v)
		}
	case hmarkModulus:
		if v, err = tgUint(p, 1, 0xffffffff); err != nil {
			return err
		}
		t.Mod = uint32(v)
	}
	t.set(id)
	return nil
}

// Final is HMARK_check, on the options given and those --hmark-tuple
// counts as given.
func (t *HmarkTarget) Final(_ *Rule, seen OptSet) error {
	switch {
	case !seen.Has(hmarkModulus):
		return Paramf("--hmark-mod is mandatory")
	case !seen.Has(hmarkRnd):
		return Paramf("--hmark-rnd is mandatory")
	case seen.Has(hmarkSPIMask) && (seen.Has(hmarkSPortMask) || seen.Has(hmarkDPortMask)):
		return Paramf("you cannot use --hmark-spi-mask and --hmark-?port-mask,at the same time")
	case seen&hmarkPktMask == 0 && !seen.Has(hmarkCT):
		return Paramf("you have to specify --hmark-tuple at least")
	}
	return nil
}

func hmBE16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

func hmBE32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// prefixLen is the -S prefix length of a mask: the leading ones of the
// first 4 bytes for IPv4, of all 16 for IPv6 (the masks made here are
// contiguous there).
func (t *HmarkTarget) prefixLen(m [16]byte) int {
	if t.Family == IPv4 {
		return bits.LeadingZeros32(^hmBE32(m[:4]))
	}
	n := 0
	for i := 0; i < 16; i += 4 {
		l := bits.LeadingZeros32(^hmBE32(m[i : i+4]))
		n += l
		if l < 32 {
			break
		}
	}
	return n
}

// listPrefix is the -L prefix: ip6tables prints a full IPv6 mask as
// nothing (xtables_ip6mask_to_numeric gives no "/128").
func (t *HmarkTarget) listPrefix(m [16]byte) string {
	n := t.prefixLen(m)
	if t.Family == IPv6 && n == 128 {
		return ""
	}
	return strconv.Itoa(n)
}

// Save is HMARK_ip4_save/HMARK_ip6_save.
func (t *HmarkTarget) Save(b *strings.Builder, _ *Rule) { t.save(b, false) }

// SaveExact also keeps what -S loses: an address mask --hmark-tuple
// filled (all 16 bytes, where --hmark-src-prefix 32 fills 4 for IPv4)
// is written as that tuple word, so the form parses back to the same
// xt_hmark_info.
func (t *HmarkTarget) SaveExact(b *strings.Builder, _ *Rule) { t.save(b, true) }

func (t *HmarkTarget) save(b *strings.Builder, exact bool) {
	var tuple []string
	full := allOnes16()
	srcTuple := exact && t.has(hmarkSAddrMask) && t.SrcMask == full
	dstTuple := exact && t.has(hmarkDAddrMask) && t.DstMask == full
	if exact && t.has(hmarkCT) {
		tuple = append(tuple, "ct")
	}
	if srcTuple {
		tuple = append(tuple, "src")
	}
	if dstTuple {
		tuple = append(tuple, "dst")
	}
	if len(tuple) > 0 {
		b.WriteString(" --hmark-tuple " + strings.Join(tuple, ","))
	}
	if t.has(hmarkSAddrMask) && !srcTuple {
		fmt.Fprintf(b, " --hmark-src-prefix %d", t.prefixLen(t.SrcMask))
	}
	if t.has(hmarkDAddrMask) && !dstTuple {
		fmt.Fprintf(b, " --hmark-dst-prefix %d", t.prefixLen(t.DstMask))
	}
	if t.has(hmarkSPortMask) {
		fmt.Fprintf(b, " --hmark-sport-mask 0x%04x", hmBE16(t.PortMask[:2]))
	}
	if t.has(hmarkDPortMask) {
		fmt.Fprintf(b, " --hmark-dport-mask 0x%04x", hmBE16(t.PortMask[2:]))
	}
	if t.has(hmarkSPIMask) {
		fmt.Fprintf(b, " --hmark-spi-mask 0x%08x", hmBE32(t.PortMask[:]))
	}
	if t.has(hmarkSPort) {
		fmt.Fprintf(b, " --hmark-sport 0x%04x", hmBE16(t.PortSet[:2]))
	}
	if t.has(hmarkDPort) {
		fmt.Fprintf(b, " --hmark-dport 0x%04x", hmBE16(t.PortSet[2:]))
	}
	if t.has(hmarkSPI) {
		fmt.Fprintf(b, " --hmark-spi 0x%08x", hmBE32(t.PortSet[:]))
	}
	if t.has(hmarkProtoMask) {
		fmt.Fprintf(b, " --hmark-proto-mask 0x%02x", t.ProtoMask)
	}
	if t.has(hmarkRnd) {
		fmt.Fprintf(b, " --hmark-rnd 0x%08x", t.Rnd)
	}
	if t.has(hmarkModulus) {
		fmt.Fprintf(b, " --hmark-mod %d", t.Mod)
	}
	if t.has(hmarkOffset) {
		fmt.Fprintf(b, " --hmark-offset %d", t.Offset)
	}
	if t.has(hmarkCT) && !exact {
		b.WriteString(" --hmark-tuple ct")
	}
}

// List is HMARK_ip4_print/HMARK_ip6_print: every item ends in a space.
func (t *HmarkTarget) List(b *strings.Builder, _ *Rule, _ bool) {
	b.WriteString(" HMARK ")
	if t.has(hmarkModulus) {
		fmt.Fprintf(b, "mod %d ", t.Mod)
	}
	if t.has(hmarkOffset) {
		fmt.Fprintf(b, "+ 0x%x ", t.Offset)
	}
	if t.has(hmarkCT) {
		b.WriteString("ct, ")
	}
	if t.has(hmarkSAddrMask) {
		fmt.Fprintf(b, "src-prefix %s ", t.listPrefix(t.SrcMask))
	}
	if t.has(hmarkDAddrMask) {
		fmt.Fprintf(b, "dst-prefix %s ", t.listPrefix(t.DstMask))
	}
	if t.has(hmarkSPortMask) {
		fmt.Fprintf(b, "sport-mask 0x%x ", hmBE16(t.PortMask[:2]))
	}
	if t.has(hmarkDPortMask) {
		fmt.Fprintf(b, "dport-mask 0x%x ", hmBE16(t.PortMask[2:]))
	}
	if t.has(hmarkSPIMask) {
		fmt.Fprintf(b, "spi-mask 0x%x ", hmBE32(t.PortMask[:]))
	}
	if t.has(hmarkSPort) {
		fmt.Fprintf(b, "sport 0x%x ", hmBE16(t.PortSet[:2]))
	}
	if t.has(hmarkDPort) {
		fmt.Fprintf(b, "dport 0x%x ", hmBE16(t.PortSet[2:]))
	}
	if t.has(hmarkSPI) {
		fmt.Fprintf(b, "spi 0x%x ", hmBE32(t.PortSet[:]))
	}
	if t.has(hmarkProtoMask) {
		fmt.Fprintf(b, "proto-mask 0x%x ", t.ProtoMask)
	}
	if t.has(hmarkRnd) {
		fmt.Fprintf(b, "rnd 0x%x ", t.Rnd)
	}
}

// NftExprs is the xtables target with struct xt_hmark_info (src_mask,
// dst_mask, port_mask, port_set, flags, proto_mask, hashrnd, hmodulus,
// hoffset: 60 bytes, sent as 64): nftables' jhash cannot hash the same
// fields (masked ports or SPI, the conntrack tuple of both directions
// ordered as xt_HMARK orders them) with the same seed.
func (t *HmarkTarget) NftExprs(*NftContext) ([]expr.Any, error) {
	var b xtBlob
	b.raw(t.SrcMask[:], 16)
	b.raw(t.DstMask[:], 16)
	b.raw(t.PortMask[:], 4)
	b.raw(t.PortSet[:], 4)
	b.u32(t.Flags)
	b.u16(t.ProtoMask)
	b.u32(t.Rnd)
	b.u32(t.Mod)
	b.u32(t.Offset)
	return []expr.Any{tgXtTarget("HMARK", 0, b.b)}, nil
}

package xdp

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// pkt is a test packet as the reference evaluator sees it.
type pkt struct {
	src, dst     netip.Addr
	proto        uint8
	sport, dport uint16
	flags        uint8
	length       int // bytes from the IP header on
	iface        string
	dstMAC       [6]byte
	fragOff      uint16 // IPv4 frag_off field (host order), MF 0x2000
	truncate     int    // bytes cut from the frame's end
	options      int    // IPv4 option words (ihl 5+options), bytes 0x01 (NOP)… varying
	badCsum      bool   // IPv4 header checksum off by one
}

var testMAC = [6]byte{0x02, 0, 0, 0, 0, 1}

func hasPorts(p uint8) bool {
	return p == 6 || p == 17 || p == 132 || p == 33 || p == 136
}

// frame builds the Ethernet frame of p.
func (p *pkt) frame() []byte {
	l4len := 8
	if p.proto == 6 {
		l4len = 20
	}
	iphl := 20 + 4*p.options
	if p.src.Is6() {
		iphl = 40
	}
	if p.length < iphl+l4len {
		p.length = iphl + l4len
	}
	b := make([]byte, 14+p.length)
	copy(b[0:6], p.dstMAC[:])
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 2})
	ip := b[14:]
	if p.src.Is4() {
		binary.BigEndian.PutUint16(b[12:], 0x0800)
		ip[0] = 0x40 | byte(5+p.options)
		for i := 20; i < iphl; i++ {
			ip[i] = byte(0x01 + 7*i) // any bytes: the sum covers them
		}
		binary.BigEndian.PutUint16(ip[2:], uint16(p.length))
		binary.BigEndian.PutUint16(ip[6:], p.fragOff)
		ip[8] = 64
		ip[9] = p.proto
		s, d := p.src.As4(), p.dst.As4()
		copy(ip[12:], s[:])
		copy(ip[16:], d[:])
		var sum uint32
		for i := 0; i < iphl; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(ip[i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		if p.badCsum {
			sum++
		}
		binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	} else {
		binary.BigEndian.PutUint16(b[12:], 0x86dd)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(p.length-40))
		ip[6] = p.proto
		ip[7] = 64
		s, d := p.src.As16(), p.dst.As16()
		copy(ip[8:], s[:])
		copy(ip[24:], d[:])
	}
	l4 := ip[iphl:]
	if hasPorts(p.proto) {
		binary.BigEndian.PutUint16(l4[0:], p.sport)
		binary.BigEndian.PutUint16(l4[2:], p.dport)
	}
	if p.proto == 6 {
		l4[12] = 0x50
		l4[13] = p.flags
	}
	return b[:len(b)-p.truncate]
}

// verdict is the reference: the first matching rule of iptables'
// documented semantics, evaluated on the AST itself. It returns the
// rule's position, or -1.
func verdict(rules []*compat.Rule, p *pkt) int {
	for i, r := range rules {
		if ruleMatches(r, p) {
			return i
		}
	}
	return -1
}

func ruleMatches(r *compat.Rule, p *pkt) bool {
	fragment := p.fragOff&0x1fff != 0
	addr := func(n compat.Net, inv bool, a netip.Addr) bool {
		if !n.Addr.IsValid() || n.Bits() == 0 {
			return !inv
		}
		pf, _ := n.Prefix()
		return pf.Contains(a) != inv
	}
	if !addr(r.Src, r.SrcInv, p.src) || !addr(r.Dst, r.DstInv, p.dst) {
		return false
	}
	if r.InIface != "" && ifaceMatch(r.InIface, p.iface) == r.InInv {
		return false
	}
	if r.ProtoSet && r.Proto != 0 && (r.Proto == p.proto) == r.ProtoInv {
		return false
	}
	if r.Frag == compat.FragOnly && !fragment || r.Frag == compat.FragNone && fragment {
		return false
	}
	inRange := func(pr compat.PortRange, v uint16) bool { return (pr.Min <= v && v <= pr.Max) != pr.Invert }
	for _, m := range r.Matches {
		switch m := m.(type) {
		case *compat.TCPMatch:
			if fragment || !inRange(m.Src, p.sport) || !inRange(m.Dst, p.dport) {
				return false
			}
			if m.HasFlags && (p.flags&m.FlagMask == m.FlagCmp) == m.FlagsInv {
				return false
			}
		case *compat.UDPMatch:
			if fragment || !inRange(m.Src, p.sport) || !inRange(m.Dst, p.dport) {
				return false
			}
		case *compat.MultiportMatch:
			in := func(v uint16) bool {
				for _, pr := range m.Ports {
					if pr.Min <= v && v <= pr.Max {
						return true
					}
				}
				return false
			}
			var hit bool
			switch m.Dir {
			case "sports":
				hit = in(p.sport)
			case "dports":
				hit = in(p.dport)
			default:
				hit = in(p.sport) || in(p.dport)
			}
			if fragment || hit == m.Invert {
				return false
			}
		case *compat.IPRangeMatch:
			if m.HasSrc && (m.SrcMin.Compare(p.src) <= 0 && p.src.Compare(m.SrcMax) <= 0) == m.SrcInv {
				return false
			}
			if m.HasDst && (m.DstMin.Compare(p.dst) <= 0 && p.dst.Compare(m.DstMax) <= 0) == m.DstInv {
				return false
			}
		case *compat.LengthMatch:
			if (int(m.Min) <= p.length && p.length <= int(m.Max)) == m.Invert {
				return false
			}
		case *compat.CommentMatch:
		default:
			panic("reference: unsupported match " + m.Name())
		}
	}
	return true
}

// parseRules parses iptables rule specifications ("-s 1.2.3.4 -j DROP").
func parseRules(t testing.TB, fam compat.Family, specs ...string) []*compat.Rule {
	t.Helper()
	var out []*compat.Rule
	for _, s := range specs {
		args := append([]string{"-t", "raw", "-A", "PREROUTING"}, strings.Fields(s)...)
		cmd, err := compat.Parse(fam, args, compat.ParseOptions{})
		if err != nil {
			t.Fatalf("parsing %q: %v", s, err)
		}
		out = append(out, cmd.Rules...)
	}
	return out
}

package integration

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/netip"
	"strings"
)

// A seeded generator of counting rules and of raw IPv4/IPv6 packets that
// exercise them, for the packet differential test (pktgen_test.go): the
// same rules go into the reference iptables-nft and into xdptables, the
// same frames are sent to both, and every rule's counters must agree.
// Addresses come from 198.18.0.0/15, 198.51.100.0/24, 203.0.113.0/24 and
// 2001:db8::/32 only, drawn from one small pool for rules and packets
// alike, so that matches both hit and miss.

// The server's addresses and interface name in the generated test: the
// packets are sent to them and the rules name them.
const (
	GenServer4 = "198.18.0.2"
	GenServer6 = "2001:db8::2"
	GenDev     = "pkt0"
)

// genServer is the server's address of the family.
func genServer(v6 bool) netip.Addr {
	if v6 {
		return netip.MustParseAddr(GenServer6)
	}
	return netip.MustParseAddr(GenServer4)
}

// GenMAC is the client's MAC address (n = 1) and others that frames
// come from (n = 2): 02:00:00:00:00:0n.
func GenMAC(n int) string { return fmt.Sprintf("02:00:00:00:00:%02x", n) }

// PktRule is one generated rule: Spec follows `-t Table -A Chain`.
type PktRule struct {
	V6           bool
	Table, Chain string
	Spec         string
	// ReadsL4: a match of the rule reads the transport header (ports,
	// flags, types), which non-first IPv4 fragments do not have.
	ReadsL4 bool
	// Stateful: the rule counts the packets that reach a match (nth),
	// so one packet counted differently moves later results too.
	Stateful bool
	// RefDeviates says why iptables-nft 1.8.9 does not run the rule as
	// iptables documents it ("" when it does).
	RefDeviates string
}

// GenPacket is one datagram: one IP packet, or the fragments of one.
type GenPacket struct {
	V6 bool
	// L2 is the frame's destination: 'u' the server's MAC, 'b' the
	// broadcast address, 'm' the multicast MAC of the IP destination.
	L2 byte
	// SrcMAC is n of the frame's source GenMAC(n).
	SrcMAC int
	// Lost: the kernel drops the frame before PREROUTING ('o' another
	// host's MAC and 'v' an 802.1Q tag in L2 are lost too).
	Lost   bool
	Frames [][]byte // IP packets, from the IP header on
	// NonFirst: a frame is a fragment with a non-zero offset; Whole: the
	// frames are all the fragments of the datagram (a reassembler makes
	// one packet of them), not a lone piece.
	NonFirst, Whole bool
	// Short is the protocol (ICMP, ESP) of a packet too short for the
	// 8-byte header that the protocol's xtables match reads, 0 if none.
	Short byte
	Desc  string
}

// PktCase is a generated ruleset with the packets to send through it.
type PktCase struct {
	Rules   []PktRule
	Packets []GenPacket
	// Conntrack[v6]: the family's rules use conntrack, so the kernel
	// reassembles fragments before the raw table sees them.
	Conntrack [2]bool
	// Lead[v6] is the number of DROP and ACCEPT rules that raw
	// PREROUTING starts with (xdptables runs the leading ones it can
	// evaluate in XDP); the rule counting every packet comes after them.
	Lead [2]int
}

var (
	genAddrs4 = []string{GenServer4, "198.18.0.77", "198.18.3.9", "198.19.200.1", "198.51.100.7", "198.51.100.200", "203.0.113.5", "203.0.113.130"}
	genAddrs6 = []string{GenServer6, "2001:db8::1:7", "2001:db8:0:1::5", "2001:db8:ffff::9", "2001:db8:85a3::8a2e:370:7334", "2001:db8:0:1::ff"}
	genPorts  = []int{0, 1, 22, 53, 80, 443, 1023, 1024, 3868, 8080, 8085, 33434, 65535}
	// strings that the string match looks for and payloads carry
	genWords = []string{"XDPT", "GET /", "xdpt", "\x01\x02\xfe"}
)

type gen struct {
	r *rand.Rand
	// fragID identifies the datagram being built: fragments of two
	// datagrams must never meet in one reassembly queue
	fragID uint32
}

func (g *gen) pick(n int) int          { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool   { return g.r.Float64() < p }
func (g *gen) one(xs ...string) string { return xs[g.pick(len(xs))] }
func (g *gen) one4(xs ...int) int      { return xs[g.pick(len(xs))] }
func (g *gen) byteOf(xs ...byte) byte  { return xs[g.pick(len(xs))] }
func (g *gen) port() int               { return genPorts[g.pick(len(genPorts))] }
func (g *gen) between(lo, hi int) int  { return lo + g.pick(hi-lo+1) }
func (g *gen) word() string            { return genWords[g.pick(len(genWords))] }
func (g *gen) addr(v6 bool) netip.Addr { return netip.MustParseAddr(g.addrText(v6)) }

// not is "! " three times in ten.
func (g *gen) not() string {
	if g.chance(0.3) {
		return "! "
	}
	return ""
}

func (g *gen) addrText(v6 bool) string {
	if v6 {
		return genAddrs6[g.pick(len(genAddrs6))]
	}
	return genAddrs4[g.pick(len(genAddrs4))]
}

// proto is the family's ICMP.
func (g *gen) proto(v6 bool) string {
	if v6 {
		return "ipv6-icmp"
	}
	return "icmp"
}

// GenPacketCase generates nRules rules (besides the fixed ones) and
// nPackets packets from seed.
func GenPacketCase(seed uint64, nRules, nPackets int) *PktCase {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	c := &PktCase{}
	for _, v6 := range []bool{false, true} {
		// first in raw PREROUTING, at times, verdicts for the XDP fast
		// path, then a rule that counts every packet (the test waits on
		// it with them); first in mangle PREROUTING, the marks that the
		// mark matches look for
		if g.chance(0.5) {
			for n := 1 + g.pick(3); n > 0; n-- {
				c.Rules = append(c.Rules, g.verdictRule(v6))
				c.Lead[b2i(v6)]++
			}
		}
		c.Rules = append(c.Rules,
			PktRule{V6: v6, Table: "raw", Chain: "PREROUTING"},
			PktRule{V6: v6, Table: "mangle", Chain: "PREROUTING", Spec: g.markSource(v6) + " -j MARK --set-xmark 0x11/0xff"},
			PktRule{V6: v6, Table: "mangle", Chain: "PREROUTING", Spec: g.markSource(v6) + " -j MARK --or-mark 0x100"})
	}
	fixed := len(c.Rules)
	for i := 0; i < nRules; i++ {
		c.Rules = append(c.Rules, g.rule(g.chance(0.4)))
	}
	// in some tables, a part of the rules goes to the user chain
	// GenChain, jumped to from the built-in chain, with at times a
	// RETURN among them
	for _, v6 := range []bool{false, true} {
		for _, tb := range []string{"raw", "mangle", "filter"} {
			if !g.chance(0.4) {
				continue
			}
			for i := fixed; i < len(c.Rules); i++ {
				if r := &c.Rules[i]; r.V6 == v6 && r.Table == tb && g.chance(0.5) {
					r.Chain = GenChain
				}
			}
			// (a wide jump, so that packets reach the rules there)
			jump := PktRule{V6: v6, Table: tb, Chain: genBuiltin[tb], Spec: g.one("", "", "! -p tcp ", "-p udp ", "-i pkt+ ") + "-j " + GenChain}
			extra := []PktRule{jump}
			if g.chance(0.5) {
				ret := g.verdictIn(v6, tb, GenChain)
				ret.Spec += " -j RETURN"
				extra = append(extra, ret)
			}
			for _, r := range extra {
				at := fixed + g.pick(len(c.Rules)-fixed+1)
				c.Rules = append(c.Rules[:at], append([]PktRule{r}, c.Rules[at:]...)...)
			}
		}
	}
	// a RETURN as the last rule of some chains: it ends the chain for
	// what it matches, and nothing comes after it
	for _, v6 := range []bool{false, true} {
		if g.chance(0.5) {
			r := g.rule(v6)
			r = g.verdictIn(v6, r.Table, r.Chain)
			r.Spec += " -j RETURN"
			c.Rules = append(c.Rules, r)
		}
	}
	c.Conntrack = GenConntrack(c.Rules)
	for i := 0; i < nPackets; i++ {
		g.fragID = uint32(seed)*7919 + uint32(i)
		v6 := g.chance(0.4)
		c.Packets = append(c.Packets, g.packet(v6, c.Conntrack[b2i(v6)]))
	}
	return c
}

// GenConntrack tells, by family, whether rules use conntrack (and so
// the kernel reassembles fragments before the raw table).
func GenConntrack(rules []PktRule) [2]bool {
	var ct [2]bool
	for _, r := range rules {
		if strings.Contains(r.Spec, "-m conntrack") || strings.Contains(r.Spec, "-m state") || strings.Contains(r.Spec, "-m connbytes") {
			ct[b2i(r.V6)] = true
		}
	}
	return ct
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *gen) markSource(v6 bool) string {
	switch g.pick(3) {
	case 0:
		return "-s " + g.prefix(v6)
	case 1:
		return "-p " + g.one("tcp", "udp", g.proto(v6))
	}
	return "-d " + g.prefix(v6)
}

// addrWord is -s or -d (opt) with a prefix, at times inverted (not
// /0: the kernel refuses a rule that can never match).
func (g *gen) addrWord(opt string, v6 bool) string {
	a := g.prefix(v6)
	if strings.HasSuffix(a, "/0") {
		return opt + " " + a
	}
	return g.not() + opt + " " + a
}

// prefix is an address of the pool under a random prefix length, or
// (IPv4) a mask that is not a prefix.
func (g *gen) prefix(v6 bool) string {
	a := g.addrText(v6)
	if !v6 {
		switch g.pick(6) {
		case 0:
			return a
		case 1:
			return a + "/" + g.one("255.255.0.255", "255.0.255.255", "255.255.255.0", "255.255.240.0", "0.0.0.255")
		}
		return fmt.Sprintf("%s/%d", a, g.one4(32, 24, 16, 15, 20, 27, 31, 30, 8, 0))
	}
	switch g.pick(6) {
	case 0:
		return a
	case 1:
		return a + "/" + g.one("ffff:ffff:0:ffff::", "ffff:ffff::ffff", "::ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0")
	}
	return fmt.Sprintf("%s/%d", a, g.one4(128, 64, 48, 32, 61, 127, 120, 112, 97, 0))
}

// verdictRule is a raw PREROUTING rule that drops or accepts what it
// matches: one of addresses, protocol and ports, which XDP evaluates,
// at times with a match it does not.
func (g *gen) verdictRule(v6 bool) PktRule {
	r := PktRule{V6: v6, Table: "raw", Chain: "PREROUTING"}
	// one address test, not too wide, keeps the verdict from taking
	// most packets away from the rules after it
	a := g.prefix(v6)
	for strings.HasSuffix(a, "/0") || strings.HasSuffix(a, "/8") || strings.HasSuffix(a, "::ffff:ffff") {
		a = g.prefix(v6)
	}
	words := []string{g.one("-s ", "-d ") + a}
	proto := g.one("tcp", "udp", "", "")
	if proto != "" {
		w, l4 := g.protoMatch(v6, proto)
		words = append(words, "-p "+proto)
		words = append(words, w...)
		r.ReadsL4 = l4
	}
	for n := g.pick(3); n > 0; n-- {
		var w []string
		switch g.pick(6) {
		case 0, 1, 2:
			w = []string{g.addrWord(g.one("-s", "-d"), v6)}
		case 3:
			_, w = g.genericMatch(v6, false)
		case 4:
			a := g.between(40, 600)
			w = []string{"-m length " + g.not() + fmt.Sprintf("--length %d:%d", a, a+g.between(0, 600))}
		default:
			w = []string{g.not() + "-i " + g.one(GenDev, "pkt+", "lo")}
		}
		if opt := strings.Fields(strings.TrimPrefix(w[0], "! "))[0]; !strings.Contains(" "+strings.Join(words, " ")+" ", " "+opt+" ") {
			words = append(words, w...) // an option given twice is refused
		}
	}
	r.Spec = strings.Join(words, " ") + " -j " + g.one("DROP", "DROP", "ACCEPT")
	if proto != "" && refDeviation(words) != "" || strings.Contains(r.Spec, "-m statistic") || strings.Contains(r.Spec, "-m quota") {
		// a verdict the reference takes otherwise, or that a count
		// left out before makes differ, would change what every later
		// rule sees
		return g.verdictRule(v6)
	}
	return r
}

// verdictIn is a rule of table and chain for a verdict: without a
// match that keeps a count (see verdictRule).
func (g *gen) verdictIn(v6 bool, table, chain string) PktRule {
	r := g.ruleIn(v6, table, chain)
	for r.Stateful || r.RefDeviates != "" {
		r = g.ruleIn(v6, table, chain)
	}
	return r
}

// GenChain is the user chain the generated rules use in each table.
const GenChain = "GEN"

// genBuiltin is the built-in chain of each table that packets meet.
var genBuiltin = map[string]string{"raw": "PREROUTING", "mangle": "PREROUTING", "filter": "INPUT"}

// rule is one counting rule of 1 to 3 matches.
func (g *gen) rule(v6 bool) PktRule {
	switch g.pick(10) {
	case 0, 1, 2, 3:
		return g.ruleIn(v6, "raw", "PREROUTING")
	case 4, 5, 6:
		return g.ruleIn(v6, "mangle", "PREROUTING")
	}
	return g.ruleIn(v6, "filter", "INPUT")
}

// ruleIn is a counting rule of table and chain.
func (g *gen) ruleIn(v6 bool, table, chain string) PktRule {
	r := PktRule{V6: v6, Table: table, Chain: chain}
	ct := r.Table != "raw"
	var words []string
	// a protocol (which the protocol's own matches need) half the time
	proto := ""
	if g.chance(0.6) {
		if v6 {
			proto = g.one("tcp", "udp", "sctp", "ipv6-icmp", "tcp", "udp", "esp")
		} else {
			proto = g.one("tcp", "udp", "sctp", "icmp", "tcp", "udp", "esp", "ah")
		}
	}
	n := 1 + g.pick(3)
	usedProto := false
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		var w []string
		var l4 bool
		var kind string
		if proto != "" && !usedProto && g.chance(0.7) {
			w, l4 = g.protoMatch(v6, proto)
			usedProto, kind = true, "proto"
		} else {
			kind, w = g.genericMatch(v6, ct)
		}
		if seen[kind] {
			continue
		}
		seen[kind] = true
		words = append(words, w...)
		r.ReadsL4 = r.ReadsL4 || l4
		if kind == "statistic" || kind == "quota" {
			r.Stateful = true
		}
		if kind == "proto" && (proto == "tcp" || proto == "udp") {
			r.RefDeviates = refDeviation(w)
		}
	}
	p := ""
	switch {
	case proto != "":
		p = "-p " + g.protoWord(v6, proto) + " "
	case g.chance(0.3):
		if w := g.one("tcp", "udp", "sctp", g.proto(v6), "47", "all"); w == "all" {
			p = "-p all "
		} else {
			p = g.not() + "-p " + g.protoWord(v6, w) + " "
		}
	}
	r.Spec = strings.TrimSpace(p + strings.Join(words, " "))
	return r
}

// refDeviation says how iptables-nft 1.8.9 runs the words of a tcp or
// udp match otherwise than iptables documents ("" when it does not).
func refDeviation(words []string) string {
	switch full, two := portWords(words); {
	case noFlags(words):
		return "iptables-nft leaves out a --tcp-flags test of mask NONE: it matches every packet"
	case full:
		return "iptables-nft leaves out an inverted 0:65535 port range: it matches every packet"
	case two:
		return "iptables-nft compares both inverted ports as one: it matches unless both are equal"
	}
	return ""
}

// noFlags tells whether the words hold a --tcp-flags test of mask NONE
// that is not always true (inverted, or with flags to compare), which
// iptables-nft 1.8.9 leaves out.
func noFlags(words []string) bool {
	for _, w := range words {
		f := strings.Fields(w)
		inv := len(f) > 0 && f[0] == "!"
		if inv {
			f = f[1:]
		}
		if len(f) == 3 && f[0] == "--tcp-flags" && f[1] == "NONE" && (inv || f[2] != "NONE") {
			return true
		}
	}
	return false
}

// portWords tells whether the words of a tcp or udp match hold an
// inverted port range of all ports, and whether they hold an inverted
// single source port and an inverted single destination port, which
// iptables-nft 1.8.9 loads as one 4-byte compare with "!=".
func portWords(words []string) (invertedAll, invertedBoth bool) {
	n := 0
	for _, w := range words {
		f := strings.Fields(w)
		if len(f) != 3 || f[0] != "!" || f[1] != "--sport" && f[1] != "--dport" {
			continue
		}
		switch f[2] {
		case "0:", ":65535", "0:65535":
			invertedAll = true
		}
		if lo, hi, isRange := strings.Cut(f[2], ":"); !isRange || lo == hi {
			n++ // one port ("1024:1024" too)
		}
	}
	return invertedAll, n == 2
}

// protoWord is the protocol by name or by number.
func (g *gen) protoWord(v6 bool, name string) string {
	if g.chance(0.7) {
		return name
	}
	switch name {
	case "tcp":
		return "6"
	case "udp":
		return "17"
	case "sctp":
		return "132"
	case "icmp":
		return "1"
	case "ipv6-icmp":
		return g.one("58", "icmpv6")
	}
	return name
}

func (g *gen) portMatch(opt string) string {
	a, b := g.port(), g.port()
	if a > b {
		a, b = b, a
	}
	var v string
	switch g.pick(5) {
	case 0, 1:
		v = fmt.Sprint(a)
	case 2:
		v = fmt.Sprintf("%d:%d", a, b)
	case 3:
		v = fmt.Sprintf(":%d", b)
	default:
		v = fmt.Sprintf("%d:", a)
	}
	return g.not() + opt + " " + v
}

func (g *gen) tcpFlagList() string {
	fs := []string{"SYN", "ACK", "FIN", "RST", "URG", "PSH"}
	if g.chance(0.15) {
		return g.one("ALL", "NONE")
	}
	var out []string
	for _, f := range fs {
		if g.chance(0.35) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = append(out, fs[g.pick(len(fs))])
	}
	return strings.Join(out, ",")
}

// protoMatch is a match of the protocol's own options (or multiport).
func (g *gen) protoMatch(v6 bool, proto string) ([]string, bool) {
	var w []string
	switch proto {
	case "tcp", "udp", "sctp":
		if g.chance(0.25) {
			var ps []string
			n := 1 + g.pick(4)
			for i := 0; i < n; i++ {
				a, b := g.port(), g.port()
				if a < b && g.chance(0.4) {
					ps = append(ps, fmt.Sprintf("%d:%d", a, b))
				} else {
					ps = append(ps, fmt.Sprint(a))
				}
			}
			return []string{"-m multiport " + g.not() + g.one("--sports", "--dports", "--ports") + " " + strings.Join(ps, ",")}, false
		}
		for _, opt := range []string{"--sport", "--dport"} {
			if g.chance(0.4) {
				w = append(w, g.portMatch(opt))
			}
		}
		switch proto {
		case "tcp":
			switch g.pick(6) {
			case 0:
				w = append(w, g.not()+"--syn")
			case 1, 2:
				w = append(w, g.not()+"--tcp-flags "+g.tcpFlagList()+" "+g.tcpFlagList())
			case 3:
				w = append(w, g.not()+"--tcp-option "+fmt.Sprint(g.one4(2, 3, 4, 8, 30, 1)))
			case 4:
				w = append(w, "-m ecn "+g.not()+g.one("--ecn-tcp-cwr", "--ecn-tcp-ece"))
			}
		case "sctp":
			if g.chance(0.4) {
				w = append(w, g.not()+"--chunk-types "+g.one("any", "all", "only")+" "+g.one("INIT", "DATA", "DATA,SACK", "ABORT", "INIT,DATA", "DATA:E", "ABORT:T"))
			}
		}
		if len(w) == 0 {
			w = append(w, g.portMatch(g.one("--sport", "--dport")))
		}
		return w, proto != "sctp" && refNativeL4(w)
	case "icmp":
		return []string{g.not() + "--icmp-type " + g.one("echo-request", "echo-reply", "8", "0/0", "3", "3/3", "port-unreachable",
			"host-unreachable", "time-exceeded", "11/1", "redirect", "timestamp-request", "any", "65", "parameter-problem")}, false
	case "ipv6-icmp":
		return []string{g.not() + "--icmpv6-type " + g.one("echo-request", "echo-reply", "128", "129/0", "1", "1/3", "port-unreachable",
			"destination-unreachable", "packet-too-big", "time-exceeded", "3/1", "parameter-problem", "neighbour-solicitation", "143")}, false
	case "esp", "ah":
		return []string{"-m " + proto + " " + g.not() + "--" + proto + "spi " + g.one("5", "7", "5:100", "256:4294967295", "0x2000", "0:6")}, false
	}
	return nil, false
}

// refNativeL4 tells whether iptables-nft 1.8.9 loads the words of a tcp
// or udp match as native transport payload tests, which read a
// non-first IPv4 fragment's data as the header (it sends xt_tcp/xt_udp,
// which skip fragments, with --tcp-option or with nothing to test).
func refNativeL4(words []string) bool {
	native := false
	for _, w := range words {
		f := strings.Fields(strings.TrimPrefix(w, "! "))
		switch {
		case f[0] == "--tcp-option":
			return false
		case f[0] == "--syn", f[0] == "--tcp-flags" && f[1] != "NONE":
			native = true
		case (f[0] == "--sport" || f[0] == "--dport") && f[1] != "0:" && f[1] != ":65535" && f[1] != "0:65535":
			native = true
		}
	}
	return native
}

// genericMatch is a match that any packet of the family can meet, with
// a kind that a rule holds once.
func (g *gen) genericMatch(v6, ct bool) (string, []string) {
	for {
		switch g.pick(25) {
		case 0, 1:
			return "-s", []string{g.addrWord("-s", v6)}
		case 2, 3:
			return "-d", []string{g.addrWord("-d", v6)}
		case 4:
			if !v6 {
				return "-f", []string{g.not() + "-f"}
			}
			return "ipv6header", []string{"-m ipv6header " + g.not() + "--header " + g.ipv6Headers() + g.one("", " --soft")}
		case 5:
			a, b := g.between(20, 120), g.between(100, 1300)
			if a > b {
				a, b = b, a
			}
			return "length", []string{"-m length " + g.not() + "--length " + g.one(fmt.Sprintf("%d:%d", a, b), fmt.Sprint(a), fmt.Sprintf("%d:", b), fmt.Sprintf(":%d", a))}
		case 6:
			v := g.one4(1, 2, 63, 64, 128, 255, 10, 100)
			if v6 {
				return "hl", []string{"-m hl " + g.one(g.not()+"--hl-eq", "--hl-lt", "--hl-gt") + " " + fmt.Sprint(v)}
			}
			return "ttl", []string{"-m ttl " + g.one(g.not()+"--ttl-eq", "--ttl-lt", "--ttl-gt") + " " + fmt.Sprint(v)}
		case 7:
			switch g.pick(3) {
			case 0:
				if !v6 {
					return "tos", []string{"-m tos " + g.not() + "--tos " + g.one("0x10", "0x08/0x08", "Minimize-Delay", "0xb8/0xfc", "0x02/0x03", "0", "0x28/0xff", "Normal-Service")}
				}
				fallthrough
			case 1:
				if g.chance(0.5) {
					return "dscp", []string{"-m dscp " + g.not() + "--dscp-class " + g.one("EF", "AF11", "CS0", "BE", "CS1")}
				}
				return "dscp", []string{"-m dscp " + g.not() + "--dscp " + g.one("0", "0x2e", "10", "0x04", "8")}
			}
			return "ecn", []string{"-m ecn " + g.not() + "--ecn-ip-ect " + fmt.Sprint(g.pick(4))}
		case 8:
			a, b := g.addr(v6), g.addr(v6)
			if b.Less(a) != g.chance(0.15) { // at times the wrong way round
				a, b = b, a
			}
			return "iprange", []string{"-m iprange " + g.not() + g.one("--src-range", "--dst-range") + " " + a.String() + "-" + b.String()}
		case 9:
			types := []string{"LOCAL", "UNICAST", "BROADCAST", "MULTICAST"}
			if v6 {
				types = []string{"LOCAL", "UNICAST", "MULTICAST"}
			}
			w := "-m addrtype " + g.not() + g.one("--src-type", "--dst-type") + " " + types[g.pick(len(types))]
			if g.chance(0.2) {
				w += " --limit-iface-in"
			}
			return "addrtype", []string{w}
		case 10:
			return "pkttype", []string{"-m pkttype " + g.not() + "--pkt-type " + g.one("unicast", "broadcast", "multicast")}
		case 11:
			return "u32", []string{"-m u32 " + g.not() + "--u32 " + g.u32(v6)}
		case 12:
			w := "-m string --algo " + g.one("bm", "kmp")
			if g.chance(0.4) {
				a := g.between(0, 60)
				w += fmt.Sprintf(" --from %d --to %d", a, a+g.between(0, 200))
			}
			if g.chance(0.3) {
				w += " --icase"
			}
			word := g.word()
			if strings.ContainsAny(word, "\x01\x02\xfe") || g.chance(0.2) {
				w += " " + g.not() + fmt.Sprintf("--hex-string |%x|", word)
			} else {
				w += " " + g.not() + "--string " + fmt.Sprintf("%q", word)
			}
			return "string", []string{w}
		case 13:
			if !v6 {
				continue
			}
			return "frag", []string{"-m frag " + g.one(g.not()+"--fragid "+g.one("100:200", "7", "0:65535", "4096"), "--fragfirst", "--fragmore", "--fraglast", g.not()+"--fragid 100:3000 --fragmore")}
		case 14:
			if !v6 {
				continue
			}
			m := g.one("hbh", "dst")
			if g.chance(0.5) {
				return m, []string{"-m " + m + " " + g.not() + "--" + m + "-len " + fmt.Sprint(g.pick(2))}
			}
			return m, []string{"-m " + m + " --" + m + "-opts " + g.one("1", "5", "5:2", "1:2,5", "4")}
		case 15:
			if !v6 {
				continue
			}
			return "rt", []string{"-m rt " + g.one(g.not()+"--rt-type "+g.one("0", "2", "4"), "--rt-segsleft "+g.one("0", "1", "0:1", "2:"), g.not()+"--rt-len 2", "--rt-type 0 --rt-segsleft 1")}
		case 16:
			if !ct {
				continue
			}
			if g.chance(0.4) {
				return "state", []string{"-m state " + g.not() + "--state " + g.one("NEW", "ESTABLISHED", "INVALID", "UNTRACKED", "NEW,ESTABLISHED", "RELATED,ESTABLISHED")}
			}
			return "conntrack", []string{"-m conntrack " + g.one(
				g.not()+"--ctstate "+g.one("NEW", "ESTABLISHED", "INVALID", "NEW,INVALID", "RELATED"),
				"--ctproto "+g.one("tcp", "udp", "6", g.proto(v6)),
				g.not()+"--ctorigsrc "+g.prefix(v6),
				"--ctorigdstport "+g.one("80", "22", "1024:65535"),
				"--ctstate NEW --ctdir "+g.one("ORIGINAL", "REPLY"))}
		case 17:
			return "mark", []string{"-m mark " + g.not() + "--mark " + g.one("0", "0x11", "0x111", "0x100/0x100", "0x1/0xf", "0x10/0xf0")}
		case 18:
			return "limit", []string{"-m limit --limit " + g.one("1/sec", "5/min", "100/hour") + " --limit-burst 10000"}
		case 19:
			every := g.between(2, 5)
			return "statistic", []string{"-m statistic --mode nth " + g.not() + fmt.Sprintf("--every %d --packet %d", every, g.pick(every))}
		case 20:
			return "-i", []string{g.not() + "-i " + g.one(GenDev, "pkt+", "p+", "lo", "eth+", "pkt0+")}
		case 21:
			return "comment", []string{"-m comment --comment " + fmt.Sprintf("%q", g.one("gen", "a b"))}
		case 22:
			return "mac", []string{"-m mac " + g.not() + "--mac-source " + g.one(GenMAC(1), GenMAC(2), GenMAC(3))}
		case 23:
			return "quota", []string{"-m quota " + g.not() + "--quota " + g.one("0", "300", "3000", "30000")}
		case 24:
			if !ct {
				continue
			}
			return "connbytes", []string{"-m connbytes " + g.not() + "--connbytes " + g.one("2", "1:1", "2:3", "100:2000", "1000") +
				" --connbytes-dir " + g.one("original", "reply", "both") + " --connbytes-mode " + g.one("packets", "bytes", "avgpkt")}
		}
	}
}

func (g *gen) ipv6Headers() string {
	var hs []string
	for _, h := range []string{"hop", "dst", "route", "frag", "prot", "none"} {
		if g.chance(0.3) {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		hs = []string{g.one("frag", "hop", "prot", "dst")}
	}
	return strings.Join(hs, ",")
}

// u32 is a test of header fields (and, for IPv4, the transport ports
// behind the header length).
func (g *gen) u32(v6 bool) string {
	if v6 {
		return g.one(
			"\"4&0xFF=64\"", "\"4&0xFF=1:100\"", "\"4>>8&0xFF=6\"", "\"4>>8&0xFF=0:43\"",
			"\"8=0x20010db8\"", "\"24=0x20010db8&&36=0x2\"", "\"0>>20&0xFF=0\"", "\"0>>20&0xFC=0xb8\"", "\"4>>16=0:100\"")
	}
	return g.one(
		"\"6&0xFF=6\"", "\"6&0xFF=17\"", "\"0>>22&0x3C@0>>16=80\"", "\"0>>22&0x3C@0&0xFFFF=80:1024\"",
		"\"4&0x1FFF=0\"", "\"4&0x3FFF=0x2000:0x3FFF\"", "\"0&0xFFFF=0x100:0xFFFF\"", "\"12&0xFFFF0000=0xC6120000\"",
		"\"8>>24=64\"", "\"0>>16&0xFF=0x10\"", "\"6&0xFF=1&&0>>22&0x3C@0>>24=8\"", "\"16=0xC6120002\"")
}

// packet builds one datagram from the pool's addresses.
func (g *gen) packet(v6, conntrack bool) GenPacket {
	p := GenPacket{V6: v6, L2: 'u', SrcMAC: 1}
	if g.chance(0.15) {
		p.SrcMAC = 2
	}
	src := g.addr(v6)
	for src.String() == GenServer4 || src.String() == GenServer6 {
		src = g.addr(v6)
	}
	switch k := g.pick(100); {
	case k < 5: // the server's own address (which routing drops later)
		src = genServer(v6)
	case k < 8 && !v6: // the server's subnet broadcast address
		src = netip.MustParseAddr("198.18.0.255")
	case k < 28: // a neighbour of a pool address
		b := src.AsSlice()
		b[len(b)-1] ^= byte(1 << g.pick(8))
		src, _ = netip.AddrFromSlice(b)
		if src.String() == GenServer4 || src.String() == GenServer6 {
			src = g.addr(v6)
		}
	}
	var dst netip.Addr
	switch k := g.pick(10); {
	case k < 6:
		dst = genServer(v6)
	case k < 8:
		dst = g.addr(v6)
	case k < 9:
		if v6 {
			dst, p.L2 = netip.MustParseAddr(g.one("ff02::1", "ff02::1:ff00:2")), 'm'
		} else {
			dst, p.L2 = netip.MustParseAddr(g.one("224.0.0.1", "239.1.2.3")), 'm'
		}
	default:
		if v6 {
			dst, p.L2 = netip.MustParseAddr(GenServer6), 'b'
		} else {
			dst, p.L2 = netip.MustParseAddr(g.one("255.255.255.255", "198.18.0.255", GenServer4)), 'b'
		}
	}
	proto, l4, desc := g.transport(v6)
	if g.chance(0.06) && (proto == 6 || proto == 17 || proto == 1 || proto == 58 || proto == 50) {
		// a transport header cut short (xtables matches drop such a
		// packet, native tests read what is there)
		l4 = l4[:g.between(2, 7)]
		desc += fmt.Sprintf(" cut to %d bytes", len(l4))
		if proto == 1 || proto == 50 {
			p.Short = proto
		}
	}
	fam := "ip"
	if v6 {
		fam = "ip6"
	}
	p.Desc = fmt.Sprintf("%s %s>%s %s", fam, src, dst, desc)
	if v6 {
		g.ipv6(&p, src, dst, proto, l4, conntrack)
	} else {
		g.ipv4(&p, src, dst, proto, l4, conntrack)
	}
	if len(p.Frames) == 1 && g.chance(0.06) {
		g.malform(&p)
	}
	return p
}

// malform spoils a datagram of one frame in a way the kernel checks
// before PREROUTING (an XDP program must pass what it drops), or pads
// the frame past the IP length (the kernel trims it).
func (g *gen) malform(p *GenPacket) {
	f := p.Frames[0]
	k := g.pick(6)
	switch {
	case k == 0:
		f = append(f, 0, 0, 0, 0, 0, 0) // trimmed: arrives
		p.Desc += " padded"
	case k == 1:
		p.L2, p.Lost = 'o', true // for another host
		p.Desc += " to another host's MAC"
	case k == 2:
		p.L2, p.Lost = 'v', true // 802.1Q, and no VLAN device
		p.Desc += " VLAN-tagged"
	case k == 3 && !p.V6:
		f[10] ^= 0x5a // header checksum
		p.Lost = true
		p.Desc += " bad header checksum"
	case !p.V6:
		binary.BigEndian.PutUint16(f[2:], binary.BigEndian.Uint16(f[2:])+8) // longer than the frame
		binary.BigEndian.PutUint16(f[10:], 0)
		binary.BigEndian.PutUint16(f[10:], inetChecksum(f[:int(f[0]&0xf)*4]))
		p.Lost = true
		p.Desc += " IP length past the frame"
	case k == 3:
		binary.BigEndian.PutUint16(f[4:], binary.BigEndian.Uint16(f[4:])+8) // payload length past the frame
		p.Lost = true
		p.Desc += " payload length past the frame"
	default:
		copy(f[24:], netip.MustParseAddr("ff01::1").AsSlice()) // interface-local multicast
		p.L2, p.Lost = 'm', true
		p.Desc += " to ff01::1"
	}
	p.Frames[0] = f
}

// payload is random bytes with, at times, a word the string match
// looks for.
func (g *gen) payload() []byte {
	n := g.one4(0, 4, 16, 40, 100, 200, 600, 1100)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	if n > 8 && g.chance(0.6) {
		w := g.word()
		if g.chance(0.3) {
			w = strings.ToLower(w)
		}
		copy(b[g.pick(n-len(w)):], w)
	}
	return b
}

// transport is the protocol number and the L4 header and data, with a
// zero checksum that ipv4/ipv6 fill in.
func (g *gen) transport(v6 bool) (byte, []byte, string) {
	switch k := g.pick(20); {
	case k < 7:
		sp, dp := g.port(), g.port()
		flags := g.byteOf(0x02, 0x02, 0x12, 0x10, 0x18, 0x11, 0x04, 0x14, 0x01, 0x00, 0x3f, 0x29, 0xc2, 0x20, 0x08)
		var opts []byte
		for _, o := range []byte{2, 3, 4, 8, 30} {
			if g.chance(0.25) {
				switch o {
				case 2:
					opts = append(opts, 2, 4, 0x05, 0xb4)
				case 3:
					opts = append(opts, 1, 3, 3, 7)
				case 4:
					opts = append(opts, 1, 1, 4, 2)
				case 8:
					opts = append(opts, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0)
				case 30:
					opts = append(opts, 30, 4, 0xaa, 0xbb)
				}
			}
		}
		h := make([]byte, 20, 20+len(opts))
		binary.BigEndian.PutUint16(h[0:], uint16(sp))
		binary.BigEndian.PutUint16(h[2:], uint16(dp))
		binary.BigEndian.PutUint32(h[4:], g.r.Uint32())
		if flags&0x10 != 0 {
			binary.BigEndian.PutUint32(h[8:], g.r.Uint32())
		}
		h = append(h, opts...)
		h[12] = byte(len(h)/4) << 4
		h[13] = flags
		binary.BigEndian.PutUint16(h[14:], 65535)
		return 6, append(h, g.payload()...), fmt.Sprintf("tcp %d>%d flags %#x opts %x", sp, dp, flags, opts)
	case k < 12:
		sp, dp := g.port(), g.port()
		d := g.payload()
		h := make([]byte, 8)
		binary.BigEndian.PutUint16(h[0:], uint16(sp))
		binary.BigEndian.PutUint16(h[2:], uint16(dp))
		binary.BigEndian.PutUint16(h[4:], uint16(8+len(d)))
		return 17, append(h, d...), fmt.Sprintf("udp %d>%d len %d", sp, dp, len(d))
	case k < 14:
		sp, dp := g.port(), g.port()
		h := make([]byte, 12)
		binary.BigEndian.PutUint16(h[0:], uint16(sp))
		binary.BigEndian.PutUint16(h[2:], uint16(dp))
		binary.BigEndian.PutUint32(h[4:], g.r.Uint32())
		var types []byte
		for n := 1 + g.pick(2); n > 0; n-- {
			ty := g.byteOf(0, 1, 3, 6, 0, 2)
			fl := byte(g.pick(4))
			types = append(types, ty, fl)
			h = append(h, ty, fl, 0, 16)
			h = append(h, make([]byte, 12)...)
		}
		return 132, h, fmt.Sprintf("sctp %d>%d chunks %x", sp, dp, types)
	case k < 19:
		var ty, code byte
		if v6 {
			tc := [][2]byte{{128, 0}, {129, 0}, {1, 0}, {1, 3}, {1, 4}, {2, 0}, {3, 0}, {3, 1}, {4, 1}, {135, 0}, {143, 0}, {200, 0}}
			c := tc[g.pick(len(tc))]
			ty, code = c[0], c[1]
		} else {
			tc := [][2]byte{{8, 0}, {0, 0}, {0, 1}, {3, 0}, {3, 1}, {3, 3}, {3, 4}, {11, 0}, {11, 1}, {5, 1}, {13, 0}, {12, 0}, {65, 0}, {255, 2}}
			c := tc[g.pick(len(tc))]
			ty, code = c[0], c[1]
		}
		h := []byte{ty, code, 0, 0, 0x12, 0x34, 0, byte(g.pick(256))}
		proto := byte(1)
		if v6 {
			proto = 58
		}
		return proto, append(h, g.payload()...), fmt.Sprintf("icmp %d/%d", ty, code)
	}
	spi := [...]uint32{5, 7, 100, 256, 0x2000}[g.pick(5)]
	switch g.pick(4) {
	case 0, 1: // ESP: SPI, sequence number, data
		h := binary.BigEndian.AppendUint32(nil, spi)
		h = binary.BigEndian.AppendUint32(h, 1)
		return 50, append(h, g.payload()...), fmt.Sprintf("esp spi %d", spi)
	case 2:
		if !v6 { // AH of 24 bytes (an extension header in IPv6)
			h := []byte{59, 4, 0, 0}
			h = binary.BigEndian.AppendUint32(h, spi)
			h = append(binary.BigEndian.AppendUint32(h, 1), make([]byte, 12)...)
			return 51, append(h, g.payload()...), fmt.Sprintf("ah spi %d", spi)
		}
	}
	pr := g.byteOf(47, 253)
	return pr, g.payload(), fmt.Sprintf("proto %d", pr)
}

// inetChecksum is the Internet checksum (RFC 1071) of b.
func inetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// l4Checksum fills in the checksum of the transport header h, with the
// pseudo header of src and dst.
func l4Checksum(proto byte, src, dst netip.Addr, h []byte) {
	if len(h) < 12 {
		return // cut short: no room for a checksum
	}
	switch proto {
	case 132:
		binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(h, crc32.MakeTable(crc32.Castagnoli)))
		return
	case 1:
		binary.BigEndian.PutUint16(h[2:], inetChecksum(h))
		return
	}
	at := map[byte]int{6: 16, 17: 6, 58: 2}[proto]
	if at == 0 {
		return
	}
	ps := append(src.AsSlice(), dst.AsSlice()...)
	if src.Is4() {
		ps = append(ps, 0, proto, byte(len(h)>>8), byte(len(h)))
	} else {
		ps = binary.BigEndian.AppendUint32(ps, uint32(len(h)))
		ps = append(ps, 0, 0, 0, proto)
	}
	s := inetChecksum(append(ps, h...))
	if proto == 17 && s == 0 {
		s = 0xffff
	}
	binary.BigEndian.PutUint16(h[at:], s)
}

func (g *gen) ipv4(p *GenPacket, src, dst netip.Addr, proto byte, l4 []byte, conntrack bool) {
	l4Checksum(proto, src, dst, l4)
	var opts []byte
	if g.chance(0.15) {
		opts = []byte{1, 1, 1, 0}
	}
	tos := g.byteOf(0, 0, 0x10, 0x08, 0xb8, 0x28, 0x01, 0x02, 0x03, 0x12)
	ttl := byte(g.one4(64, 64, 1, 2, 63, 128, 255, 10))
	id := uint16(g.fragID)
	hdr := func(off int, mf bool, data []byte) []byte {
		h := make([]byte, 20, 20+len(opts)+len(data))
		h = append(h, opts...)
		h[0] = 0x40 | byte(len(h)/4)
		h[1] = tos
		binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(data)))
		binary.BigEndian.PutUint16(h[4:], id)
		fo := uint16(off / 8)
		if mf {
			fo |= 0x2000
		}
		binary.BigEndian.PutUint16(h[6:], fo)
		h[8], h[9] = ttl, proto
		copy(h[12:], src.AsSlice())
		copy(h[16:], dst.AsSlice())
		binary.BigEndian.PutUint16(h[10:], inetChecksum(h))
		return append(h, data...)
	}
	if g.chance(0.15) && len(l4) > 24 {
		// fragments: all of them, or (when nothing reassembles) one
		cut := 8 * (1 + g.pick(len(l4)/8-1))
		if cut >= len(l4) {
			cut = 8
		}
		first, rest := hdr(0, true, l4[:cut]), hdr(cut, false, l4[cut:])
		switch {
		case conntrack || g.chance(0.4):
			p.Frames, p.Whole = [][]byte{first, rest}, true
			if g.chance(0.3) {
				p.Frames = [][]byte{rest, first}
			}
		case g.chance(0.5):
			p.Frames = [][]byte{first}
		default:
			p.Frames = [][]byte{rest}
		}
		p.NonFirst = len(p.Frames) == 2 || p.Frames[0][7] != 0 || p.Frames[0][6]&0x1f != 0
		p.Desc += fmt.Sprintf(" frag cut %d frames %d", cut, len(p.Frames))
		return
	}
	f := hdr(0, false, l4)
	if g.chance(0.2) {
		f[6] |= 0x40 // DF
		binary.BigEndian.PutUint16(f[10:], 0)
		binary.BigEndian.PutUint16(f[10:], inetChecksum(f[:len(f)-len(l4)]))
	}
	p.Frames = [][]byte{f}
}

// genExt is an IPv6 extension header: its type and its bytes after
// the next-header byte.
type genExt struct {
	nh   byte
	body []byte
}

// ipv6 builds the packet with a random chain of extension headers, in
// one piece or fragmented.
func (g *gen) ipv6(p *GenPacket, src, dst netip.Addr, proto byte, l4 []byte, conntrack bool) {
	l4Checksum(proto, src, dst, l4)
	tc := g.byteOf(0, 0, 0xb8, 0x28, 0x01, 0x02, 0x03, 0x10)
	hl := byte(g.one4(64, 64, 1, 2, 255, 128, 10))
	var exts []genExt
	var names []string
	if g.chance(0.25) {
		exts = append(exts, genExt{0, g.ipv6Options()})
		names = append(names, "hbh")
	}
	if g.chance(0.2) {
		exts = append(exts, genExt{60, g.ipv6Options()})
		names = append(names, "dst")
	}
	if g.chance(0.15) {
		ty, left := g.byteOf(0, 2, 4), byte(g.pick(2))
		a := g.addr(true).As16()
		exts = append(exts, genExt{43, append([]byte{2, ty, left, 0, 0, 0, 0}, a[:]...)})
		names = append(names, fmt.Sprintf("rt%d/%d", ty, left))
	}
	if !g.chance(0.15) || len(l4) <= 24 {
		p.Frames = [][]byte{ipv6Packet(src, dst, tc, hl, exts, proto, l4)}
		if len(names) > 0 {
			p.Desc += " ext " + strings.Join(names, ",")
		}
		return
	}
	id := g.fragID
	cut := 8 * (1 + g.pick(len(l4)/8-1))
	frag := func(off int, mf bool) []byte {
		fo := uint16(off)
		if mf {
			fo |= 1
		}
		b := binary.BigEndian.AppendUint16([]byte{0}, fo)
		return binary.BigEndian.AppendUint32(b, id)
	}
	first := ipv6Packet(src, dst, tc, hl, append(exts[:len(exts):len(exts)], genExt{44, frag(0, true)}), proto, l4[:cut])
	rest := ipv6Packet(src, dst, tc, hl, append(exts[:len(exts):len(exts)], genExt{44, frag(cut, false)}), proto, l4[cut:])
	switch {
	case conntrack || g.chance(0.4):
		p.Frames, p.Whole, p.NonFirst = [][]byte{first, rest}, true, true
		if g.chance(0.3) {
			p.Frames = [][]byte{rest, first}
		}
	case g.chance(0.5):
		p.Frames = [][]byte{first}
	default:
		p.Frames, p.NonFirst = [][]byte{rest}, true
	}
	names = append(names, fmt.Sprintf("frag id %d cut %d frames %d", id, cut, len(p.Frames)))
	p.Desc += " ext " + strings.Join(names, ",")
}

// ipv6Options is the body of a hop-by-hop or destination options
// header: a router alert, an option to skip (type 0x1e), and the pad
// (Pad1 or PadN) to a multiple of 8 bytes; the kernel refuses more
// than 7 bytes of padding in a row.
func (g *gen) ipv6Options() []byte {
	var o []byte
	if g.chance(0.5) {
		o = append(o, 5, 2, 0, 0) // router alert
	}
	if g.chance(0.4) {
		n := g.one4(1, 2, 8)
		o = append(append(o, 0x1e, byte(n)), make([]byte, n)...)
	}
	total := (len(o) + 2 + 7) / 8 * 8
	switch pad := total - 2 - len(o); {
	case pad == 1:
		o = append(o, 0)
	case pad >= 2:
		o = append(o, 1, byte(pad-2))
		o = append(o, make([]byte, pad-2)...)
	}
	return append([]byte{byte(total/8 - 1)}, o...)
}

// ipv6Packet lays out the header, the extension headers and the data
// of protocol proto.
func ipv6Packet(src, dst netip.Addr, tc, hl byte, exts []genExt, proto byte, data []byte) []byte {
	var rest []byte
	for i, e := range exts {
		nh := proto
		if i+1 < len(exts) {
			nh = exts[i+1].nh
		}
		rest = append(append(rest, nh), e.body...)
	}
	rest = append(rest, data...)
	h := make([]byte, 40, 40+len(rest))
	binary.BigEndian.PutUint32(h, 6<<28|uint32(tc)<<20)
	binary.BigEndian.PutUint16(h[4:], uint16(len(rest)))
	h[6], h[7] = proto, hl
	if len(exts) > 0 {
		h[6] = exts[0].nh
	}
	copy(h[8:], src.AsSlice())
	copy(h[24:], dst.AsSlice())
	return append(h, rest...)
}

package integration

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/xdptables/xdptables/compat"
)

// The rule generator writes iptables/ip6tables rules in the styles real
// rulesets use, from a seed: every table and built-in chain plus user
// chains, the common matches and targets with their option spellings
// (canonical and not), and now and then a rule iptables refuses (bad
// values, an option in the wrong table or chain, a missing -p, an unknown
// match), so that messages and exit codes are compared too. Addresses come
// from the documentation ranges only; no rule needs a name lookup.

// GenRule is one generated rule: the command that adds it is
// `TOOL -t TABLE -A CHAIN SPEC…` (or -I CHAIN POS when Pos > 0).
type GenRule struct {
	Table, Chain string
	Pos          int
	Spec         []string
}

// Args is the command line of the rule with op (-A, -I, -C, -D); -I
// carries the position. -C and -D leave out start counters (-c), which
// iptables refuses with them.
func (r GenRule) Args(op string) []string {
	args := []string{"-t", r.Table, op, r.Chain}
	if op == "-I" && r.Pos > 0 {
		args = append(args, strconv.Itoa(r.Pos))
	}
	for i := 0; i < len(r.Spec); i++ {
		if w := r.Spec[i]; (op == "-C" || op == "-D") && (w == "-c" || w == "--set-counters") && i+2 < len(r.Spec) {
			i += 2
			continue
		}
		args = append(args, r.Spec[i])
	}
	return args
}

// Count is the number of kernel rules the rule makes: one per source
// and destination address pair.
func (r GenRule) Count() int {
	n := 1
	for i := 0; i+1 < len(r.Spec); i++ {
		switch r.Spec[i] {
		case "-s", "--source", "-d", "--destination":
			n *= strings.Count(r.Spec[i+1], ",") + 1
		}
	}
	return n
}

// GenCase is what one seed generates for one family: the commands that
// prepare the rules (ipset create, -N of user chains) and the rules.
type GenCase struct {
	Tool  string // iptables or ip6tables
	Setup []CorpusLine
	Rules []GenRule
}

// genTables are the iptables tables with their built-in chains.
var genTables = []struct {
	name   string
	chains []string
	weight int
}{
	{"filter", []string{"INPUT", "FORWARD", "OUTPUT"}, 35},
	{"nat", []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}, 20},
	{"mangle", []string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}, 20},
	{"raw", []string{"PREROUTING", "OUTPUT"}, 15},
	{"security", []string{"INPUT", "FORWARD", "OUTPUT"}, 10},
}

// genUserChains are the user chains made in every table.
var genUserChains = []string{"gen-in", "GEN_fwd", "x1"}

// ruleGen holds the state of one generation.
type ruleGen struct {
	r    *rand.Rand
	v6   bool
	sets []genSet
	// per rule
	table, chain string
	proto        string // the -p given ("" none), lower case name or number
	protoInv     bool
}

type genSet struct {
	name, typ string
	dims      int
}

// GenerateRules generates n rules for the family of tool (iptables or
// ip6tables) from seed.
func GenerateRules(tool string, seed uint64, n int) GenCase {
	g := &ruleGen{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), v6: tool == "ip6tables"}
	c := GenCase{Tool: tool}
	fam := "inet"
	if g.v6 {
		fam = "inet6"
	}
	g.sets = []genSet{{"gen_net", "hash:net", 1}, {"gen_ipport", "hash:ip,port", 2}}
	for _, s := range g.sets {
		c.Setup = append(c.Setup, CorpusLine{Tool: "ipset", Args: []string{"-exist", "create", s.name + "_" + fam, s.typ, "family", fam}})
	}
	for _, t := range genTables {
		for _, u := range genUserChains {
			c.Setup = append(c.Setup, CorpusLine{Tool: tool, Args: []string{"-t", t.name, "-N", u}})
		}
	}
	for i := 0; i < n; i++ {
		c.Rules = append(c.Rules, g.rule())
	}
	return c
}

func (g *ruleGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *ruleGen) chance(p float64) bool    { return g.r.Float64() < p }

func (g *ruleGen) inv(p float64, args ...string) []string {
	if g.chance(p) {
		return append([]string{"!"}, args...)
	}
	return args
}

func (g *ruleGen) rule() GenRule {
	w := g.r.IntN(100)
	ti := 0
	for ; ti < len(genTables)-1 && w >= genTables[ti].weight; ti++ {
		w -= genTables[ti].weight
	}
	t := genTables[ti]
	g.table = t.name
	if g.chance(0.2) {
		g.chain = g.pick(genUserChains...)
	} else {
		g.chain = g.pick(t.chains...)
	}
	g.proto, g.protoInv = "", false
	var basic [][]string
	if g.chance(0.4) {
		basic = append(basic, g.addrOpt("-s"))
	}
	if g.chance(0.3) {
		basic = append(basic, g.addrOpt("-d"))
	}
	if g.chance(0.3) || !g.chainIn() && g.chance(0.03) {
		if g.chainIn() || g.chance(0.1) {
			basic = append(basic, g.ifaceOpt("-i"))
		}
	}
	if g.chance(0.3) {
		if g.chainOut() || g.chance(0.1) {
			basic = append(basic, g.ifaceOpt("-o"))
		}
	}
	if !g.v6 && g.chance(0.05) {
		basic = append(basic, g.inv(0.5, "-f"))
	}
	g.r.Shuffle(len(basic), func(i, j int) { basic[i], basic[j] = basic[j], basic[i] })
	var spec []string
	for _, b := range basic {
		spec = append(spec, b...)
	}
	if g.chance(0.6) {
		spec = append(spec, g.protoOpt()...)
	}
	nm := g.r.IntN(4)
	for i := 0; i < nm; i++ {
		spec = append(spec, g.match()...)
	}
	if g.chance(0.05) {
		// start counters: -S -v, -L -v and save -c print them
		spec = append(spec, g.pick("-c", "--set-counters"), g.pick("1", "99999", "100000", "123456789", "18446744073709551615"),
			g.pick("60", "1500000", "98765432100", "12345678901234"))
	}
	if !g.chance(0.05) {
		spec = append(spec, g.target()...)
	}
	if g.chance(0.08) {
		spec = g.spoil(spec)
	}
	return GenRule{Table: g.table, Chain: g.chain, Spec: spec}
}

// chainIn tells whether -i is allowed in the chain (user chains: any).
func (g *ruleGen) chainIn() bool {
	switch g.chain {
	case "OUTPUT", "POSTROUTING":
		return false
	}
	return true
}

func (g *ruleGen) chainOut() bool {
	switch g.chain {
	case "INPUT", "PREROUTING":
		return false
	}
	return true
}

var (
	genAddr4 = []string{"198.51.100.7", "198.51.100.0/24", "203.0.113.0/25", "198.18.0.0/15",
		"198.51.100.77/24", "203.0.113.9/32", "198.18.4.0/22", "0.0.0.0/0", "198.51.100.0/255.0.255.0",
		"203.0.113.0/255.255.255.0", "198.19.0.0/255.255.0.255", "203.0.113.128/26", "198.18.0.1/31"}
	genAddr6 = []string{"2001:db8::1", "2001:db8::/32", "2001:db8:1::/48", "2001:db8::5/64",
		"2001:db8:a:b::/64", "::/0", "2001:db8::/ffff:ffff:0:ffff::", "2001:db8::7/128",
		"2001:db8:0:1::/ffff:ffff:ffff:ffff::", "2001:DB8::AB/120"}
)

func (g *ruleGen) addr() string {
	if g.v6 {
		return g.pick(genAddr6...)
	}
	return g.pick(genAddr4...)
}

func (g *ruleGen) addrOpt(opt string) []string {
	if g.chance(0.12) {
		// several addresses: one rule each
		return []string{opt, g.addr() + "," + g.addr()}
	}
	long := map[string]string{"-s": "--source", "-d": "--destination"}[opt]
	if g.chance(0.1) {
		opt = long
	}
	return g.inv(0.2, opt, g.addr())
}

func (g *ruleGen) ifaceOpt(opt string) []string {
	name := g.pick("eth0", "eth+", "veth1", "br-lan", "+", "wg0", "lo", "ens3", "vlan.100", "docker0", "tun+")
	return g.inv(0.2, opt, name)
}

// protoOpt chooses -p; tcp and udp most often, as in real rulesets.
func (g *ruleGen) protoOpt() []string {
	var p string
	switch w := g.r.IntN(100); {
	case w < 40:
		p = g.pick("tcp", "tcp", "tcp", "TCP", "6")
	case w < 65:
		p = g.pick("udp", "udp", "17")
	case w < 75:
		if g.v6 {
			p = g.pick("icmpv6", "ipv6-icmp", "58", "icmp")
		} else {
			p = g.pick("icmp", "1")
		}
	case w < 80:
		p = "sctp"
	default:
		p = g.pick("all", "0", "gre", "47", "esp", "ah", "udplite", "dccp", "igmp", "132", "41")
	}
	g.proto = strings.ToLower(p)
	switch g.proto {
	case "6":
		g.proto = "tcp"
	case "17":
		g.proto = "udp"
	case "1":
		g.proto = "icmp"
	case "58", "ipv6-icmp":
		g.proto = "icmpv6"
	case "132":
		g.proto = "sctp"
	}
	opt := g.pick("-p", "-p", "-p", "--protocol")
	if g.chance(0.1) {
		g.protoInv = true
		return []string{"!", opt, p}
	}
	return []string{opt, p}
}

func (g *ruleGen) port() string {
	return g.pick("22", "80", "443", "53", "8080", "1024", "65535", "0", "ssh", "http", "domain", "ntp", "3128", "51820")
}

func (g *ruleGen) portRange() string {
	switch g.r.IntN(6) {
	case 0:
		return "1024:65535"
	case 1:
		return "1024:"
	case 2:
		return ":1023"
	case 3:
		return "0:65535"
	case 4:
		return g.pick("8000:8080", "5000:5000", "60000:61000", "ftp:ssh", "0:0", ":")
	}
	return g.port()
}

// match is one match with its options, of those that fit the rule so far
// (mostly: now and then one that does not).
func (g *ruleGen) match() []string {
	l4 := !g.protoInv && (g.proto == "tcp" || g.proto == "udp" || g.proto == "sctp")
	var opts []func() []string
	if l4 {
		opts = append(opts, g.l4Ports, g.l4Ports, g.l4Ports, g.multiport, g.multiport)
	}
	if g.proto == "tcp" && !g.protoInv {
		opts = append(opts, g.tcpOnly, g.tcpOnly)
	}
	if g.proto == "icmp" || g.proto == "icmpv6" {
		opts = append(opts, g.icmp, g.icmp)
	}
	opts = append(opts, g.conntrack, g.conntrack, g.mark, g.connmark, g.limit, g.hashlimit, g.comment,
		g.comment, g.iprange, g.addrtype, g.length, g.ttl, g.tos, g.pkttype, g.owner, g.mac, g.recent,
		g.stringMatch, g.statistic, g.timeMatch, g.physdev, g.u32, g.helper, g.set, g.set, g.rarer)
	if g.v6 {
		opts = append(opts, g.v6ext, g.v6ext)
	}
	return opts[g.r.IntN(len(opts))]()
}

func (g *ruleGen) l4Ports() []string {
	var out []string
	if g.chance(0.5) {
		out = append(out, "-m", g.proto)
	}
	if g.chance(0.5) {
		out = append(out, g.inv(0.15, g.pick("--sport", "--source-port"), g.portRange())...)
	}
	if len(out) < 3 || g.chance(0.5) {
		out = append(out, g.inv(0.15, g.pick("--dport", "--dport", "--destination-port"), g.portRange())...)
	}
	if g.proto == "sctp" && g.chance(0.3) {
		out = append(out, g.inv(0.2, "--chunk-types", g.pick("any", "all", "only"), g.pick("INIT", "INIT,SACK", "DATA:B", "ABORT:T"))...)
	}
	return out
}

func (g *ruleGen) tcpOnly() []string {
	var out []string
	if g.chance(0.4) {
		out = append(out, "-m", "tcp")
	}
	switch g.r.IntN(4) {
	case 0:
		return append(out, g.inv(0.2, "--syn")...)
	case 1:
		return append(out, g.inv(0.15, "--tcp-flags", g.pick("SYN,RST,ACK,FIN", "ALL", "SYN,RST", "FIN,SYN,RST,PSH,ACK,URG", "NONE", "ACK"),
			g.pick("SYN", "NONE", "ALL", "ACK,FIN", "FIN,SYN,RST,PSH,ACK,URG", "RST"))...)
	case 2:
		return append(out, g.inv(0.2, "--tcp-option", g.pick("2", "3", "4", "8", "255", "0"))...)
	}
	return append(out, g.inv(0.1, "--dport", g.port())...)
}

func (g *ruleGen) multiport() []string {
	var lists []string
	for i := 1 + g.r.IntN(4); i > 0; i-- {
		if g.chance(0.3) {
			lists = append(lists, g.pick("1000:2000", "8000:8080", "6000:", ":100"))
		} else {
			lists = append(lists, g.port())
		}
	}
	opt := g.pick("--dports", "--dports", "--sports", "--ports", "--destination-ports", "--source-ports")
	return append([]string{"-m", "multiport"}, g.inv(0.15, opt, strings.Join(lists, ","))...)
}

func (g *ruleGen) icmp() []string {
	if g.proto == "icmpv6" {
		m := "icmp6"
		if g.chance(0.5) {
			return g.inv(0.15, "--icmpv6-type", g.pick("echo-request", "128", "1/4", "neighbour-solicitation", "135", "router-advertisement", "destination-unreachable", "packet-too-big", "2", "echo-reply"))
		}
		return append([]string{"-m", m}, g.inv(0.15, "--icmpv6-type", g.pick("echo-request", "129", "1/3", "neighbor-advertisement", "time-exceeded", "parameter-problem", "4/1"))...)
	}
	t := g.pick("echo-request", "8", "3/4", "destination-unreachable", "any", "echo-reply", "port-unreachable", "0", "11", "time-exceeded", "fragmentation-needed", "13", "redirect", "5/1", "255")
	if g.chance(0.5) {
		return append([]string{"-m", "icmp"}, g.inv(0.15, "--icmp-type", t)...)
	}
	return g.inv(0.15, "--icmp-type", t)
}

func (g *ruleGen) conntrack() []string {
	if g.chance(0.3) {
		return append([]string{"-m", "state"}, g.inv(0.1, "--state", g.pick("NEW", "RELATED,ESTABLISHED", "ESTABLISHED,RELATED", "INVALID", "UNTRACKED", "NEW,ESTABLISHED"))...)
	}
	out := []string{"-m", "conntrack"}
	for i := 1 + g.r.IntN(2); i > 0; i-- {
		switch g.r.IntN(7) {
		case 0, 1, 2:
			out = append(out, g.inv(0.15, "--ctstate", g.pick("NEW", "RELATED,ESTABLISHED", "INVALID", "DNAT", "SNAT,DNAT", "ESTABLISHED,RELATED,NEW", "UNTRACKED"))...)
		case 3:
			out = append(out, g.inv(0.2, "--ctproto", g.pick("tcp", "udp", "6", "icmp"))...)
		case 4:
			out = append(out, g.inv(0.2, g.pick("--ctorigsrc", "--ctorigdst", "--ctreplsrc", "--ctrepldst"), g.addr())...)
		case 5:
			out = append(out, g.inv(0.2, "--ctstatus", g.pick("ASSURED", "SEEN_REPLY", "CONFIRMED", "EXPECTED,ASSURED", "NONE"))...)
		default:
			out = append(out, "--ctdir", g.pick("ORIGINAL", "REPLY"))
		}
	}
	return out
}

func (g *ruleGen) markValue() string {
	return g.pick("1", "0x1", "5", "0x10/0xf0", "0xff/0xff", "3/7", "0x80000000", "4294967295", "0/0x1")
}

func (g *ruleGen) mark() []string {
	return append([]string{"-m", "mark"}, g.inv(0.2, "--mark", g.markValue())...)
}

func (g *ruleGen) connmark() []string {
	return append([]string{"-m", "connmark"}, g.inv(0.2, "--mark", g.markValue())...)
}

func (g *ruleGen) rate() string {
	return g.pick("5/min", "1/sec", "100/hour", "3/day", "10/second", "20/minute", "2/s", "1000/sec", "7/m")
}

func (g *ruleGen) limit() []string {
	out := []string{"-m", "limit", "--limit", g.rate()}
	if g.chance(0.5) {
		out = append(out, "--limit-burst", g.pick("5", "10", "1", "100"))
	}
	return out
}

func (g *ruleGen) hashlimit() []string {
	out := []string{"-m", "hashlimit", g.pick("--hashlimit-upto", "--hashlimit-above", "--hashlimit"), g.rate()}
	if g.chance(0.5) {
		out = append(out, "--hashlimit-burst", g.pick("5", "20"))
	}
	if g.chance(0.6) {
		out = append(out, "--hashlimit-mode", g.pick("srcip", "dstip", "srcip,dstport", "srcip,dstip,srcport,dstport"))
	}
	if g.chance(0.3) {
		out = append(out, "--hashlimit-srcmask", g.pick("24", "16", "32"))
	}
	if g.chance(0.3) {
		out = append(out, "--hashlimit-htable-expire", g.pick("10000", "60000"))
	}
	return append(out, "--hashlimit-name", g.pick("hl1", "ssh_rate", "web"))
}

func (g *ruleGen) comment() []string {
	c := g.pick("ssh from lan", "it's", `a "quoted" word`, "allow-web", "tab\there", `back\slash`, "#hash",
		"$HOME and `cmd`", "é ü ∞", "-j DROP", "", "x", strings.Repeat("long comment ", 22), "semi;colon", "a  two  spaces")
	return []string{"-m", "comment", "--comment", c}
}

func (g *ruleGen) iprange() []string {
	var r string
	if g.v6 {
		r = g.pick("2001:db8::1-2001:db8::ff", "2001:db8:1::-2001:db8:2::")
	} else {
		r = g.pick("198.51.100.1-198.51.100.20", "203.0.113.0-203.0.113.255", "198.18.0.5-198.18.0.5")
	}
	return append([]string{"-m", "iprange"}, g.inv(0.2, g.pick("--src-range", "--dst-range"), r)...)
}

func (g *ruleGen) addrtype() []string {
	out := []string{"-m", "addrtype"}
	out = append(out, g.inv(0.2, g.pick("--src-type", "--dst-type"), g.pick("LOCAL", "UNICAST", "BROADCAST", "MULTICAST", "LOCAL,UNICAST", "BLACKHOLE", "UNSPEC"))...)
	if g.chance(0.2) {
		out = append(out, g.pick("--limit-iface-in", "--limit-iface-out"))
	}
	return out
}

func (g *ruleGen) length() []string {
	return append([]string{"-m", "length"}, g.inv(0.2, "--length", g.pick("100:200", "64", "1000:", ":500", "0:65535", "1500"))...)
}

func (g *ruleGen) ttl() []string {
	if g.v6 {
		return append([]string{"-m", "hl"}, g.inv(0.2, g.pick("--hl-eq", "--hl-lt", "--hl-gt"), g.pick("1", "64", "255"))...)
	}
	return append([]string{"-m", "ttl"}, g.inv(0.2, g.pick("--ttl-eq", "--ttl-lt", "--ttl-gt"), g.pick("1", "64", "128", "0"))...)
}

func (g *ruleGen) tos() []string {
	switch g.r.IntN(3) {
	case 0:
		return append([]string{"-m", "tos"}, g.inv(0.2, "--tos", g.pick("0x10", "Minimize-Delay", "0x04/0x0f", "Normal-Service", "8"))...)
	case 1:
		if g.chance(0.5) {
			return append([]string{"-m", "dscp"}, g.inv(0.2, "--dscp", g.pick("46", "0x0a", "0", "63"))...)
		}
		return append([]string{"-m", "dscp"}, g.inv(0.2, "--dscp-class", g.pick("EF", "AF11", "CS1", "BE"))...)
	}
	out := []string{"-m", "ecn"}
	switch g.r.IntN(3) {
	case 0:
		out = append(out, g.inv(0.2, "--ecn-tcp-cwr")...)
	case 1:
		out = append(out, g.inv(0.2, "--ecn-tcp-ece")...)
	default:
		out = append(out, g.inv(0.2, "--ecn-ip-ect", g.pick("0", "1", "2", "3"))...)
	}
	return out
}

func (g *ruleGen) pkttype() []string {
	return append([]string{"-m", "pkttype"}, g.inv(0.2, "--pkt-type", g.pick("unicast", "broadcast", "multicast", "host"))...)
}

func (g *ruleGen) owner() []string {
	if g.chainIn() && g.chance(0.9) {
		return g.pkttype() // (owner is for locally made packets)
	}
	out := []string{"-m", "owner"}
	switch g.r.IntN(4) {
	case 0:
		return append(out, g.inv(0.2, "--uid-owner", g.pick("0", "1000", "0-99", "root", "65534"))...)
	case 1:
		return append(out, g.inv(0.2, "--gid-owner", g.pick("0", "100", "10-20"))...)
	case 2:
		return append(out, g.inv(0.2, "--socket-exists")...)
	}
	return append(out, "--uid-owner", "33", "--gid-owner", "33", "--suppl-groups")
}

func (g *ruleGen) mac() []string {
	if !g.chainIn() && g.chance(0.9) {
		return g.length() // (mac is for packets that came in)
	}
	return append([]string{"-m", "mac"}, g.inv(0.2, "--mac-source", g.pick("00:11:22:33:44:55", "aa:BB:cc:dd:ee:ff", "02:00:00:00:00:01"))...)
}

func (g *ruleGen) recent() []string {
	out := []string{"-m", "recent"}
	if g.chance(0.6) {
		out = append(out, "--name", g.pick("bad", "ssh_brute", "DEFAULT"))
	}
	switch g.r.IntN(4) {
	case 0:
		out = append(out, g.inv(0.1, "--set")...)
	case 1:
		out = append(out, g.inv(0.2, "--rcheck", "--seconds", g.pick("60", "3600"))...)
		if g.chance(0.5) {
			out = append(out, "--hitcount", g.pick("5", "10"))
		}
	case 2:
		out = append(out, "--update", "--seconds", g.pick("30", "60"), "--reap")
	default:
		out = append(out, "--remove")
	}
	if g.chance(0.3) {
		out = append(out, g.pick("--rsource", "--rdest"))
	}
	if g.chance(0.2) && !g.v6 {
		out = append(out, "--mask", "255.255.255.0")
	}
	return out
}

func (g *ruleGen) stringMatch() []string {
	out := []string{"-m", "string"}
	if g.chance(0.6) {
		out = append(out, g.inv(0.2, "--string", g.pick("GET /", "BitTorrent", "x", "a b\"c"))...)
	} else {
		out = append(out, g.inv(0.2, "--hex-string", g.pick("|de ad be ef|", "|00|abc|ff|", "|0d0a|"))...)
	}
	out = append(out, "--algo", g.pick("bm", "kmp"))
	if g.chance(0.3) {
		out = append(out, "--from", "40", "--to", "1500")
	}
	if g.chance(0.2) {
		out = append(out, "--icase")
	}
	return out
}

func (g *ruleGen) statistic() []string {
	if g.chance(0.5) {
		return append([]string{"-m", "statistic", "--mode", "random"}, g.inv(0.2, "--probability", g.pick("0.25", "0.5", "0.0001", "1", "0.33333"))...)
	}
	return append([]string{"-m", "statistic", "--mode", "nth"}, g.inv(0.2, "--every", g.pick("2", "3", "10"), "--packet", g.pick("0", "1"))...)
}

func (g *ruleGen) timeMatch() []string {
	out := []string{"-m", "time"}
	if g.chance(0.6) {
		out = append(out, "--timestart", g.pick("08:00", "8:00:30", "22:00"), "--timestop", g.pick("17:00", "06:00", "23:59:59"))
	}
	if g.chance(0.5) {
		out = append(out, g.inv(0.2, "--weekdays", g.pick("Mon,Tue,Wed", "Sat,Sun", "1,2,3", "Fr"))...)
	}
	if g.chance(0.3) {
		out = append(out, g.inv(0.2, "--monthdays", g.pick("1,15", "31"))...)
	}
	if g.chance(0.3) {
		out = append(out, "--datestart", g.pick("2026-01-01", "2026-01-01T08:00:00"), "--datestop", "2037-12-31T23:59:59")
	}
	if len(out) == 2 || g.chance(0.2) {
		out = append(out, g.pick("--kerneltz", "--contiguous", "--utc"))
	}
	return out
}

func (g *ruleGen) physdev() []string {
	out := []string{"-m", "physdev"}
	switch g.r.IntN(4) {
	case 0:
		out = append(out, g.inv(0.2, "--physdev-in", g.pick("eth0", "veth+", "tap1"))...)
	case 1:
		out = append(out, g.inv(0.2, "--physdev-out", g.pick("eth1", "vnet+"))...)
		if g.chance(0.5) {
			out = append(out, "--physdev-is-bridged")
		}
	case 2:
		out = append(out, g.inv(0.2, "--physdev-is-in")...)
	default:
		out = append(out, g.inv(0.2, "--physdev-is-bridged")...)
	}
	return out
}

func (g *ruleGen) u32() []string {
	return append([]string{"-m", "u32"}, g.inv(0.2, "--u32", g.pick("6&0xFF=1", "0>>22&0x3C@12>>26&0x3C@0=0x10",
		"0&0xFFFF=0x100:0xFFFF", "4&0x1FFF=0", "12=0xc6336400 && 16=0xcb007100", "0>>22&0x3C@0>>16=53"))...)
}

func (g *ruleGen) helper() []string {
	return append([]string{"-m", "helper"}, g.inv(0.2, "--helper", g.pick("ftp", "sip", "irc", "tftp", "ftp-2121"))...)
}

func (g *ruleGen) set() []string {
	s := g.sets[g.r.IntN(len(g.sets))]
	fam := "inet"
	if g.v6 {
		fam = "inet6"
	}
	dirs := []string{"src", "dst"}
	d := dirs[g.r.IntN(2)]
	if s.dims == 2 {
		d += "," + dirs[g.r.IntN(2)]
	}
	out := append([]string{"-m", "set"}, g.inv(0.2, "--match-set", s.name+"_"+fam, d)...)
	switch g.r.IntN(6) {
	case 0:
		out = append(out, "--return-nomatch")
	case 1:
		out = append(out, "!", "--update-counters")
	case 2:
		out = append(out, "--packets-gt", "10")
	}
	return out
}

// rarer are matches some rulesets use: connlimit, quota, connbytes,
// socket, rpfilter, esp/ah, policy, tcpmss, cpu, devgroup.
func (g *ruleGen) rarer() []string {
	switch g.r.IntN(11) {
	case 0:
		out := append([]string{"-m", "connlimit"}, g.pick("--connlimit-above", "--connlimit-upto"), g.pick("10", "1", "100"))
		if g.chance(0.5) {
			out = append(out, "--connlimit-mask", g.pick("24", "32", "64", "0"))
		}
		return append(out, g.pick("--connlimit-saddr", "--connlimit-daddr", "--connlimit-saddr"))
	case 1:
		return append([]string{"-m", "quota"}, g.inv(0.2, "--quota", g.pick("1000000", "0", "18446744073709551615"))...)
	case 2:
		return []string{"-m", "connbytes", "--connbytes", g.pick("10000:", "0:100", "500"), "--connbytes-dir", g.pick("both", "original", "reply"),
			"--connbytes-mode", g.pick("bytes", "packets", "avgpkt")}
	case 3:
		out := []string{"-m", "socket"}
		for _, o := range []string{"--transparent", "--nowildcard", "--restore-skmark"} {
			if g.chance(0.3) {
				out = append(out, o)
			}
		}
		return out
	case 4:
		out := []string{"-m", "rpfilter"}
		for _, o := range []string{"--loose", "--validmark", "--accept-local", "--invert"} {
			if g.chance(0.3) {
				out = append(out, o)
			}
		}
		return out
	case 5:
		return append([]string{"-m", "esp"}, g.inv(0.2, "--espspi", g.pick("100", "100:200", "4294967295"))...)
	case 6:
		return append([]string{"-m", "ah"}, g.inv(0.2, "--ahspi", g.pick("5", "1:65535"))...)
	case 7:
		out := []string{"-m", "policy", "--dir", g.pick("in", "out"), "--pol", g.pick("ipsec", "none")}
		if g.chance(0.4) {
			out = append(out, "--strict", "--reqid", "1", "--proto", g.pick("esp", "ah"), "--mode", g.pick("tunnel", "transport"))
		}
		return out
	case 8:
		return append([]string{"-m", "tcpmss"}, g.inv(0.2, "--mss", g.pick("1400:1500", "536", "0:500"))...)
	case 9:
		return append([]string{"-m", "cpu"}, g.inv(0.2, "--cpu", g.pick("0", "1"))...)
	}
	return append([]string{"-m", "devgroup"}, g.inv(0.2, g.pick("--src-group", "--dst-group"), g.pick("1", "0x10/0xf0"))...)
}

func (g *ruleGen) v6ext() []string {
	switch g.r.IntN(5) {
	case 0:
		out := []string{"-m", "frag"}
		switch g.r.IntN(4) {
		case 0:
			out = append(out, g.inv(0.2, "--fragid", g.pick("5", "1:100", "100:"))...)
		case 1:
			out = append(out, "--fragfirst")
		case 2:
			out = append(out, "--fragmore")
		default:
			out = append(out, "--fraglast")
		}
		return out
	case 1:
		out := append([]string{"-m", "ipv6header"}, g.inv(0.2, "--header", g.pick("frag", "hop,dst", "ipv6-frag", "auth,esp", "none", "44,0"))...)
		if g.chance(0.4) {
			out = append(out, "--soft")
		}
		return out
	case 2:
		out := []string{"-m", "hbh"}
		if g.chance(0.5) {
			out = append(out, g.inv(0.2, "--hbh-len", g.pick("0", "8"))...)
		}
		if g.chance(0.6) || len(out) == 2 {
			out = append(out, "--hbh-opts", g.pick("1:2", "5", "0,1:4"))
		}
		return out
	case 3:
		return append([]string{"-m", "rt"}, g.inv(0.2, "--rt-type", g.pick("0", "2"))...)
	}
	return append([]string{"-m", "dst"}, g.inv(0.2, "--dst-len", "8")...)
}

// target is the -j/-g of the rule: mostly one that fits the table.
func (g *ruleGen) target() []string {
	type tg struct {
		tables string // tables it is meant for ("" any)
		f      func() []string
	}
	j := func(args ...string) func() []string {
		return func() []string { return append([]string{"-j"}, args...) }
	}
	all := []tg{
		{"", j("ACCEPT")}, {"", j("ACCEPT")}, {"", j("DROP")}, {"", j("DROP")}, {"", j("RETURN")},
		{"filter mangle security raw", g.reject}, {"filter mangle security raw", g.reject},
		{"", g.logTarget}, {"", g.nflog}, {"mangle raw filter nat security", g.markTarget},
		{"mangle raw filter nat security", g.connmarkTarget}, {"nat", g.natTarget}, {"nat", g.natTarget},
		{"nat", g.natTarget}, {"mangle", g.tproxy}, {"raw", g.ctTarget}, {"raw", j("NOTRACK")},
		{"mangle filter", g.tcpmss}, {"mangle", g.qosTarget}, {"mangle", g.ttlTarget},
		{"", g.rarerTarget},
		{"mangle", g.classify}, {"mangle security", g.secmark}, {"", g.nfqueue}, {"", g.jump}, {"", g.jump}, {"", g.jump},
	}
	for {
		t := all[g.r.IntN(len(all))]
		if t.tables == "" || strings.Contains(t.tables, g.table) || g.chance(0.1) {
			return t.f()
		}
	}
}

func (g *ruleGen) jump() []string {
	return []string{g.pick("-j", "-j", "-g"), g.pick(genUserChains...)}
}

func (g *ruleGen) reject() []string {
	out := []string{"-j", "REJECT"}
	if g.chance(0.3) {
		return out
	}
	var types []string
	if g.v6 {
		types = []string{"icmp6-no-route", "no-route", "icmp6-adm-prohibited", "adm-prohibited", "icmp6-addr-unreachable",
			"addr-unreach", "icmp6-port-unreachable", "port-unreach", "icmp6-policy-fail", "policy-fail", "icmp6-reject-route", "reject-route", "tcp-reset"}
	} else {
		types = []string{"icmp-net-unreachable", "net-unreach", "icmp-host-unreachable", "host-unreach", "icmp-port-unreachable",
			"port-unreach", "icmp-proto-unreachable", "proto-unreach", "icmp-net-prohibited", "net-prohib", "icmp-host-prohibited",
			"host-prohib", "icmp-admin-prohibited", "admin-prohib", "tcp-reset", "tcp-rst"}
	}
	return append(out, "--reject-with", g.pick(types...))
}

func (g *ruleGen) logTarget() []string {
	out := []string{"-j", "LOG"}
	if g.chance(0.5) {
		out = append(out, "--log-level", g.pick("0", "4", "7", "warning", "debug", "info", "emerg", "alert", "crit", "err", "error", "notice", "warn", "panic"))
	}
	if g.chance(0.7) {
		out = append(out, "--log-prefix", g.pick("in-drop: ", "[FW] ", "x", "\"q\" ", "a very long log prefix that is cut off at 29", "IPT:"))
	}
	for _, f := range []string{"--log-tcp-sequence", "--log-tcp-options", "--log-ip-options", "--log-uid", "--log-macdecode"} {
		if g.chance(0.15) {
			out = append(out, f)
		}
	}
	return out
}

func (g *ruleGen) nflog() []string {
	out := []string{"-j", "NFLOG"}
	if g.chance(0.6) {
		out = append(out, "--nflog-group", g.pick("0", "5", "65535"))
	}
	if g.chance(0.4) {
		out = append(out, "--nflog-prefix", g.pick("drop", "with space", "\"x\""))
	}
	if g.chance(0.3) {
		out = append(out, g.pick("--nflog-range", "--nflog-size"), g.pick("64", "128"))
	}
	if g.chance(0.2) {
		out = append(out, "--nflog-threshold", "3")
	}
	return out
}

func (g *ruleGen) markTarget() []string {
	switch g.r.IntN(6) {
	case 0:
		return []string{"-j", "MARK", "--set-mark", g.markValue()}
	case 1:
		return []string{"-j", "MARK", "--set-xmark", g.markValue()}
	case 2:
		return []string{"-j", "MARK", "--and-mark", g.pick("0xf", "0xffff0000")}
	case 3:
		return []string{"-j", "MARK", "--or-mark", g.pick("0x10", "4")}
	case 4:
		return []string{"-j", "MARK", "--xor-mark", g.pick("1", "0x100")}
	}
	return []string{"-j", "MARK", "--set-mark", g.pick("1", "0x2")}
}

func (g *ruleGen) connmarkTarget() []string {
	out := []string{"-j", "CONNMARK"}
	switch g.r.IntN(7) {
	case 0:
		return append(out, "--set-mark", g.markValue())
	case 1:
		return append(out, "--set-xmark", g.markValue())
	case 2:
		out = append(out, "--save-mark")
		if g.chance(0.5) {
			out = append(out, "--nfmask", "0xff", "--ctmask", "0xff")
		} else if g.chance(0.5) {
			out = append(out, "--mask", "0xffff")
		}
		return out
	case 3:
		out = append(out, "--restore-mark")
		if g.chance(0.5) {
			out = append(out, "--mask", "0xff")
		}
		return out
	case 4:
		return append(out, "--and-mark", "0xf")
	case 5:
		return append(out, "--or-mark", "0x10")
	}
	return append(out, "--xor-mark", "0x3")
}

func (g *ruleGen) natAddr() string {
	if g.v6 {
		return g.pick("2001:db8::5", "2001:db8::5-2001:db8::9", "[2001:db8::5]", "[2001:db8::5]:8080", "[2001:db8::5]-[2001:db8::9]:1000-2000", "[2001:db8::1]:80")
	}
	return g.pick("198.51.100.5", "198.51.100.5:8080", "198.51.100.5-198.51.100.9", "198.51.100.5-198.51.100.9:1000-2000", "203.0.113.1:80", ":443", "198.18.0.1:1024-65535")
}

func (g *ruleGen) natFlags(out []string) []string {
	if g.chance(0.2) {
		out = append(out, "--random")
	}
	if g.chance(0.15) {
		out = append(out, "--persistent")
	}
	if g.chance(0.1) {
		out = append(out, "--random-fully")
	}
	return out
}

func (g *ruleGen) natTarget() []string {
	ports := g.pick("1024-65535", "3128", "8000-8010", "80")
	switch g.r.IntN(6) {
	case 0:
		return g.natFlags([]string{"-j", "DNAT", "--to-destination", g.natAddr()})
	case 1:
		return g.natFlags([]string{"-j", "SNAT", "--to-source", g.natAddr()})
	case 2:
		out := []string{"-j", "MASQUERADE"}
		if g.chance(0.4) {
			out = append(out, "--to-ports", ports)
		}
		return g.natFlags(out)
	case 3:
		out := []string{"-j", "REDIRECT"}
		if g.chance(0.6) {
			out = append(out, "--to-ports", ports)
		}
		return g.natFlags(out)
	case 4:
		if g.v6 {
			return []string{"-j", "NETMAP", "--to", g.pick("2001:db8:1::/48", "2001:db8::/64")}
		}
		return []string{"-j", "NETMAP", "--to", g.pick("198.51.100.0/24", "203.0.113.0/25")}
	}
	return []string{"-j", "DNAT", "--to-destination", g.natAddr()}
}

func (g *ruleGen) tproxy() []string {
	out := []string{"-j", "TPROXY", "--on-port", g.pick("3129", "0", "8080")}
	if g.chance(0.5) {
		if g.v6 {
			out = append(out, "--on-ip", "2001:db8::1")
		} else {
			out = append(out, "--on-ip", "198.51.100.1")
		}
	}
	if g.chance(0.6) {
		out = append(out, "--tproxy-mark", g.pick("0x1/0x1", "1", "0x80000000/0xffffffff"))
	}
	return out
}

func (g *ruleGen) ctTarget() []string {
	switch g.r.IntN(5) {
	case 0:
		return []string{"-j", "CT", "--notrack"}
	case 1:
		return []string{"-j", "CT", "--zone", g.pick("1", "65535", "0")}
	case 2:
		return []string{"-j", "CT", g.pick("--zone-orig", "--zone-reply"), "3"}
	case 3:
		return []string{"-j", "CT", "--helper", g.pick("ftp", "tftp", "sip", "nosuchhelper")}
	}
	return []string{"-j", "CT", "--ctevents", g.pick("new,related", "destroy"), "--expevents", "new"}
}

func (g *ruleGen) tcpmss() []string {
	if g.chance(0.5) {
		return []string{"-j", "TCPMSS", "--clamp-mss-to-pmtu"}
	}
	return []string{"-j", "TCPMSS", "--set-mss", g.pick("1400", "1360", "536")}
}

func (g *ruleGen) qosTarget() []string {
	switch g.r.IntN(6) {
	case 0:
		return []string{"-j", "DSCP", "--set-dscp", g.pick("0x2e", "46", "0")}
	case 1:
		return []string{"-j", "DSCP", "--set-dscp-class", g.pick("EF", "AF41", "cs1")}
	case 2:
		return []string{"-j", "TOS", "--set-tos", g.pick("0x10", "Minimize-Delay", "0x04/0x0f", "Maximize-Throughput")}
	case 3:
		return []string{"-j", "TOS", "--and-tos", "0x0f"}
	case 4:
		return []string{"-j", "TOS", "--or-tos", "0x08"}
	}
	return []string{"-j", "TOS", "--xor-tos", "0x1"}
}

func (g *ruleGen) ttlTarget() []string {
	if g.v6 {
		return []string{"-j", "HL", g.pick("--hl-set", "--hl-dec", "--hl-inc"), g.pick("64", "1")}
	}
	return []string{"-j", "TTL", g.pick("--ttl-set", "--ttl-dec", "--ttl-inc"), g.pick("64", "1", "0")}
}

func (g *ruleGen) classify() []string {
	return []string{"-j", "CLASSIFY", "--set-class", g.pick("1:10", "ffff:ffff", "0:0", "1:")}
}

func (g *ruleGen) secmark() []string {
	if g.chance(0.5) {
		return []string{"-j", "CONNSECMARK", g.pick("--save", "--restore")}
	}
	return []string{"-j", "SECMARK", "--selctx", "system_u:object_r:ssh_packet_t:s0"}
}

// rarerTarget are targets some rulesets use: AUDIT, TRACE, CHECKSUM,
// ECN, SET, TEE, HMARK, SYNPROXY, IDLETIMER.
func (g *ruleGen) rarerTarget() []string {
	fam := "inet"
	if g.v6 {
		fam = "inet6"
	}
	switch g.r.IntN(9) {
	case 0:
		return []string{"-j", "AUDIT", "--type", g.pick("accept", "drop", "reject")}
	case 1:
		return []string{"-j", "TRACE"}
	case 2:
		return []string{"-j", "CHECKSUM", "--checksum-fill"}
	case 3:
		return []string{"-j", "ECN", "--ecn-tcp-remove"}
	case 4:
		out := []string{"-j", "SET", g.pick("--add-set", "--del-set"), g.sets[1].name + "_" + fam, g.pick("src,dst", "dst,dst")}
		if g.chance(0.2) {
			out = []string{"-j", "SET", "--add-set", g.sets[0].name + "_" + fam, "src"}
		}
		if g.chance(0.4) {
			out = append(out, "--exist", "--timeout", "60")
		}
		return out
	case 5:
		if g.v6 {
			return []string{"-j", "TEE", "--gateway", "2001:db8::99"}
		}
		return []string{"-j", "TEE", "--gateway", "198.51.100.99"}
	case 6:
		return []string{"-j", "HMARK", "--hmark-tuple", g.pick("src,dst", "src,dst,sport,dport,proto"), "--hmark-mod", "10", "--hmark-offset", "1"}
	case 7:
		return []string{"-j", "SYNPROXY", "--sack-perm", "--timestamp", "--wscale", "7", "--mss", "1460"}
	}
	return []string{"-j", "IDLETIMER", "--timeout", "60", "--label", g.pick("idle1", "x")}
}

func (g *ruleGen) nfqueue() []string {
	out := []string{"-j", "NFQUEUE"}
	switch g.r.IntN(3) {
	case 0:
		out = append(out, "--queue-num", g.pick("0", "5", "65535"))
	case 1:
		out = append(out, "--queue-balance", g.pick("0:3", "2:2"))
		if g.chance(0.4) {
			out = append(out, "--queue-cpu-fanout")
		}
	}
	if g.chance(0.4) {
		out = append(out, "--queue-bypass")
	}
	return out
}

// spoil turns a rule into one iptables refuses (or that tests the edge
// of what it accepts).
func (g *ruleGen) spoil(spec []string) []string {
	switch g.r.IntN(20) {
	case 9:
		return append([]string{"!", "-s", g.addr() + "," + g.addr()}, spec...)
	case 10:
		return append([]string{"-m", "set", "--match-set", "nosuchset", "src"}, spec...)
	case 11:
		return append([]string{"-m", "set", "--match-set", g.sets[0].name + "_" + map[bool]string{false: "inet", true: "inet6"}[g.v6], "foo"}, spec...)
	case 12:
		return append(spec, "-j", g.pick("NOSUCHTARGET", "nosuchchain", "accept"))
	case 13:
		return append([]string{"-p", g.pick("nosuchproto", "256", "-1", "TCP6")}, spec...)
	case 14:
		return append([]string{"-m", "multiport", "--dports", "80,443"}, spec...)
	case 15:
		return append([]string{"-p", "tcp", "--tcp-flags", "SYN,BOGUS", "SYN"}, spec...)
	case 16:
		return append(spec, "-j", "LOG", "--log-level", g.pick("9", "loud", "-1"))
	case 17:
		return append(spec, "-j", g.pick("MARK", "DNAT", "SNAT", "CONNMARK", "TPROXY", "CLASSIFY"))
	case 18:
		return append([]string{"-m", "state", "--state", "BOGUS"}, spec...)
	case 19:
		return append(spec, "-j", "REJECT", "--reject-with", g.pick("bogus", "tcp-reset", "icmp6-no-route", "icmp-net-unreachable"))
	case 0:
		return append([]string{"--dport", "22"}, spec...)
	case 1:
		return append([]string{"-m", "nosuchmatch"}, spec...)
	case 2:
		return append(spec, "--bogus")
	case 3:
		if g.v6 {
			return append([]string{"-s", "2001:db8::/129"}, spec...)
		}
		return append([]string{"-s", g.pick("198.51.100.400", "198.51.100.0/33", "198.51.100.0/255.0.255.300")}, spec...)
	case 4:
		return append([]string{"-p", "tcp", "--dport", g.pick("70000", "30:20", "abc", "-1")}, spec...)
	case 5:
		return append(spec, "extra")
	case 6:
		return append([]string{"-m", "limit", "--limit", "5/fortnight"}, spec...)
	case 7:
		return append([]string{"-m", "conntrack", "--ctstate", "FOO"}, spec...)
	}
	return append([]string{"-i", "an-interface-name-too-long"}, spec...)
}

// RestoreFile writes rules as an iptables-restore file: one section per
// table, the user chains declared, each rule as the -A or -I it was
// given with. Words are quoted as iptables-save quotes them when they
// need it.
func RestoreFile(rules []GenRule) string {
	var b strings.Builder
	for _, t := range genTables {
		var lines []string
		for _, r := range rules {
			if r.Table != t.name {
				continue
			}
			op := "-A"
			if r.Pos > 0 {
				op = "-I"
			}
			words := r.Args(op)[2:]
			for i, w := range words {
				if w == "" || strings.ContainsAny(w, " \t\"'\\#") {
					words[i] = compat.SaveQuote(w)
				}
			}
			lines = append(lines, strings.Join(words, " "))
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "*%s\n", t.name)
		for _, u := range genUserChains {
			fmt.Fprintf(&b, ":%s - [0:0]\n", u)
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}

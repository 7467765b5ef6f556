package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// A seeded generator of ipset command sequences and restore files, for
// the differential test against the reference ipset
// (TestGeneratedIpsetDiff). It keeps a rough model of the sets it has
// created so that most commands name a set of the right type with
// elements that fit, and mixes in what ipset must refuse: invalid
// elements and options, missing arguments, unknown words, full sets,
// restore files with an error at a random line.

// IpsetGenFile and IpsetGenOut stand for file names in generated
// commands: the file a restore -f reads (holding Stdin) and the file
// list/save -f writes; the test puts a path of its own in their place.
const (
	IpsetGenFile = "@IN"
	IpsetGenOut  = "@OUT"
)

// IpsetGenInitvals are the initval values generated creates give; an
// initval outside them was drawn at random by the kernel.
var IpsetGenInitvals = []string{"0x0badcafe", "0x12345678", "0x7f000001", "0xdeadbeef"}

// IpsetGenTypes lists every ipset type the generator knows.
var IpsetGenTypes = []string{
	"hash:ip", "hash:net", "hash:ip,port", "hash:net,port", "hash:ip,port,ip", "hash:ip,port,net",
	"hash:net,iface", "hash:mac", "hash:ip,mac", "hash:net,net", "hash:net,port,net", "hash:ip,mark",
	"bitmap:ip", "bitmap:ip,mac", "bitmap:port", "list:set",
}

// IpsetGenCommand is one generated ipset invocation.
type IpsetGenCommand struct {
	Args  []string
	Stdin string // input of restore (or of the file -f names)
}

// String is the command as a shell line, with its input after it.
func (c IpsetGenCommand) String() string {
	var b strings.Builder
	b.WriteString("ipset")
	for _, a := range c.Args {
		b.WriteByte(' ')
		b.WriteString(quoteWord(a))
	}
	if c.Stdin != "" {
		b.WriteString(" <<EOF\n" + c.Stdin + "EOF")
	}
	return b.String()
}

func quoteWord(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t'\"\\$`!*?;&|<>()#") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// ipsetGenSet is what the generator believes about one set.
type ipsetGenSet struct {
	name    string
	typ     string
	inet6   bool
	timeout bool
	counter bool
	comment bool
	skbinfo bool
	// bitmap range: first address's last octet base or port range
	lo, hi int
}

type ipsetGen struct {
	r     *rand.Rand
	types []string
	sets  []*ipsetGenSet
}

// GenIpsetCommands returns n commands for seed over the given types
// (those the reference kernel has).
func GenIpsetCommands(seed uint64, n int, types []string) []IpsetGenCommand {
	g := &ipsetGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), types: types}
	var out []IpsetGenCommand
	for len(out) < n {
		out = append(out, g.command())
	}
	return out
}

func (g *ipsetGen) pct(p int) bool { return g.r.IntN(100) < p }

func (g *ipsetGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

var genNames = []string{"a", "b", "c", "d", "e", "set-1", "Set_2", "l"}

func (g *ipsetGen) newName() string {
	switch {
	case g.pct(2):
		return strings.Repeat("n", 31+g.r.IntN(2)) // 31 fits, 32 does not
	case g.pct(2):
		// (not "": ipset saves a set of that name as a line its
		// restore cannot read)
		return g.pick("-", "1", "a.b", "x%y")
	}
	return g.pick(genNames...)
}

// set is a known set (or, now and then, a name that is none).
func (g *ipsetGen) set() *ipsetGenSet {
	if len(g.sets) == 0 || g.pct(5) {
		return &ipsetGenSet{name: g.newName(), typ: g.pick(g.types...)}
	}
	return g.sets[g.r.IntN(len(g.sets))]
}

func (g *ipsetGen) find(name string) *ipsetGenSet {
	for _, s := range g.sets {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (g *ipsetGen) forget(name string) {
	g.sets = slices.DeleteFunc(g.sets, func(s *ipsetGenSet) bool { return s.name == name })
}

// command draws one invocation with global options around it.
func (g *ipsetGen) command() IpsetGenCommand {
	var words []string
	var stdin string
	listing := false
	switch k := g.r.IntN(100); {
	case k < 14 || len(g.sets) == 0 && k < 60:
		words = g.create()
	case k < 44:
		words = g.elemCommand(g.pick("add", "add", "add", "del", "test"))
	case k < 54:
		words = g.elemCommand(g.pick("add", "del", "test"))
	case k < 66:
		words, listing = g.listing(), true
	case k < 69:
		words = g.flushDestroy("flush")
	case k < 73:
		words = g.flushDestroy("destroy")
	case k < 77:
		words = g.swapRename()
	case k < 90:
		stdin = g.restoreFile()
		words = []string{"restore"}
	case k < 93:
		words = g.help()
	case k < 95:
		words = g.bad()
	default:
		words = g.elemCommand("add")
	}
	args := g.globals(words, listing)
	if words[0] == "restore" && g.pct(20) {
		f := IpsetGenFile
		if g.pct(10) {
			f = "/nonexistent/h49-restore"
		}
		args = append(args, "-f", f)
	}
	return IpsetGenCommand{Args: args, Stdin: stdin}
}

// globals puts global options before or after the command's words.
func (g *ipsetGen) globals(words []string, listing bool) []string {
	var opts [][]string
	add := func(o ...string) { opts = append(opts, o) }
	if g.pct(15) {
		add(g.pick("-exist", "-!", "--exist", "-exist"))
	}
	if g.pct(8) {
		add(g.pick("-q", "-quiet"))
	}
	if listing {
		if g.pct(30) {
			add(g.pick("-o", "-output"), g.pick("plain", "save", "xml", "xml", "json"))
		}
		if g.pct(20) {
			add(g.pick("-t", "-terse"))
		}
		if g.pct(12) {
			add(g.pick("-n", "-name"))
		}
		if g.pct(30) {
			add(g.pick("-s", "-sorted"))
		}
		if g.pct(8) {
			add("-f", IpsetGenOut)
		}
	} else if g.pct(3) {
		add(g.pick("-t", "-n", "-s", "-o"))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	var flat []string
	for _, o := range opts {
		flat = append(flat, o...)
	}
	if g.pct(50) {
		return append(flat, words...)
	}
	return append(words, flat...)
}

func (g *ipsetGen) listing() []string {
	cmd := g.pick("list", "list", "save")
	if g.pct(40) {
		return []string{cmd}
	}
	return []string{cmd, g.set().name}
}

func (g *ipsetGen) flushDestroy(cmd string) []string {
	if g.pct(15) {
		if cmd == "destroy" {
			// destroy of all sets fails while list:set members hold
			// references: flush first now and then
			g.sets = nil
		}
		return []string{cmd}
	}
	s := g.set()
	if cmd == "destroy" {
		g.forget(s.name)
	}
	return []string{cmd, s.name}
}

func (g *ipsetGen) swapRename() []string {
	a, b := g.set(), g.set()
	if g.pct(50) {
		to := b.name
		if g.pct(60) {
			to = g.newName()
		}
		if g.find(to) == nil {
			a.name = to
		}
		return []string{"rename", a.name, to}
	}
	if g.pct(5) {
		return []string{"swap", a.name}
	}
	if a != b && g.find(a.name) != nil && g.find(b.name) != nil && a.typ == b.typ && a.inet6 == b.inet6 {
		a.name, b.name = b.name, a.name
	}
	return []string{"swap", a.name, b.name}
}

func (g *ipsetGen) help() []string {
	switch g.r.IntN(5) {
	case 0:
		return []string{g.pick("version", "-v", "-V", "--version")}
	case 1:
		return []string{"help", g.pick(g.types...)}
	case 2:
		return []string{"help", g.pick("hash:foo", "iphash", "hash:ip,port,", "list:set")}
	case 3:
		return []string{g.pick("-h", "--help", "help")}
	}
	return []string{"version"}
}

func (g *ipsetGen) bad() []string {
	switch g.r.IntN(6) {
	case 0:
		return []string{g.pick("bogus", "-X", "--bogus", "add", "create", "del", "test", "rename", "swap")}
	case 1:
		return []string{"create", g.newName(), g.pick("hash:foo", "foo", "hash:ip,port,", "hash", "")}
	case 2:
		return []string{"list", "-o"}
	case 3:
		return []string{"test", g.set().name}
	case 4:
		return []string{"create", g.newName(), "hash:ip", g.pick("-6", "-4", "family", "inet7")}
	}
	return []string{"add", g.set().name, g.elem(g.set()), "extra", "words"}
}

// create draws a create command and records the set it makes.
func (g *ipsetGen) create() []string {
	typ := g.pick(g.types...)
	s := &ipsetGenSet{name: g.newName(), typ: typ}
	if old := g.find(s.name); old != nil && g.pct(50) {
		// the same set again (passes with -exist) or its name with a
		// different type
		s = &ipsetGenSet{name: old.name, typ: old.typ, inet6: old.inet6}
		typ = s.typ
	}
	var opts [][]string
	o := func(w ...string) { opts = append(opts, w) }
	hash := strings.HasPrefix(typ, "hash:")
	if hash && typ != "hash:mac" {
		if g.pct(40) {
			s.inet6 = g.pct(50)
			o("family", map[bool]string{false: "inet", true: "inet6"}[s.inet6])
		} else if g.pct(4) {
			o("family", g.pick("inet7", "ipv6", ""))
		}
	}
	if hash {
		if g.pct(20) {
			o("hashsize", g.pick("64", "128", "100", "0", "1024", "4294967295", "abc"))
		}
		if g.pct(35) {
			o("maxelem", strconv.Itoa(1+g.r.IntN(8)))
		} else if g.pct(5) {
			o("maxelem", g.pick("0", "65536", "-1"))
		}
		if g.pct(10) {
			o("bucketsize", g.pick("2", "4", "12", "1", "13", "256"))
		}
		if g.pct(80) {
			o("initval", g.pick(IpsetGenInitvals...))
		} else if g.pct(10) {
			o("initval", g.pick("5", "0x1", "xyz"))
		}
		if g.pct(8) {
			o("forceadd")
		}
		// (netmask of other types is refused, as ipset refuses it where
		// its kernel lacks it; hash:ip,port's, which this kernel has,
		// is not supported)
		if (typ == "hash:ip" || g.pct(5) && typ != "hash:ip,port") && g.pct(20) {
			if s.inet6 {
				o("netmask", g.pick("64", "120", "128", "129"))
			} else {
				o("netmask", g.pick("24", "30", "32", "0", "33"))
			}
		}
	}
	switch typ {
	case "bitmap:ip", "bitmap:ip,mac":
		base := g.r.IntN(4) * 16
		s.lo, s.hi = base, base+15
		switch g.r.IntN(10) {
		case 0:
			o("range", fmt.Sprintf("198.51.100.%d/28", base))
		case 1:
			o("range", g.pick("198.51.100.0/8", "198.51.100.9-198.51.100.1", "10.0.0.0/15", "1.1.1.300-1.1.1.301"))
		case 2:
			// mandatory range missing
		default:
			o("range", fmt.Sprintf("198.51.100.%d-198.51.100.%d", base, base+15))
		}
		if typ == "bitmap:ip" && g.pct(10) {
			o("netmask", g.pick("30", "31", "32", "8"))
		}
	case "bitmap:port":
		s.lo = g.r.IntN(100)
		s.hi = s.lo + 20
		switch g.r.IntN(10) {
		case 0:
			o("range", g.pick("0-65535", "100-1", "1-70000", "abc", "http-https"))
		case 1:
		default:
			o("range", fmt.Sprintf("%d-%d", s.lo, s.hi))
		}
	case "list:set":
		if g.pct(40) {
			o("size", g.pick("1", "2", "4", "8", "0", "abc"))
		}
	}
	if g.pct(25) {
		s.timeout = true
		o("timeout", g.pick("600", "1000", "3600", "0", "2147484", "-1"))
	}
	if g.pct(25) {
		s.counter = true
		o("counters")
	}
	if g.pct(25) {
		s.comment = true
		o("comment")
	}
	if g.pct(15) {
		s.skbinfo = true
		o("skbinfo")
	}
	if g.pct(4) {
		o(g.pick("nomatch", "foo", "range", "size", "--hashsize", "timeout"))
	}
	if g.pct(3) && len(opts) > 0 {
		opts = append(opts, opts[0]) // an option twice
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	words := []string{"create", s.name, typ}
	if g.pct(3) {
		words[2] = map[string]string{"hash:ip": "iphash", "hash:net": "nethash", "bitmap:port": "portmap", "list:set": "setlist"}[typ]
		if words[2] == "" {
			words[2] = typ
		}
	}
	for _, w := range opts {
		words = append(words, w...)
	}
	if g.find(s.name) == nil {
		g.sets = append(g.sets, s)
	}
	return words
}

// elemCommand is add/del/test of an element of a known set.
func (g *ipsetGen) elemCommand(cmd string) []string {
	s := g.set()
	words := []string{cmd, s.name, g.elem(s)}
	if s.typ == "list:set" && g.pct(25) {
		words = append(words, g.pick("before", "after", "before", "in"), g.set().name)
	}
	if cmd == "add" || g.pct(10) {
		words = append(words, g.elemOptions(s)...)
	}
	if cmd == "test" && g.pct(5) {
		words = append(words, "nomatch")
	}
	if g.pct(3) {
		words = words[:2] // element missing
	}
	return words
}

func (g *ipsetGen) elemOptions(s *ipsetGenSet) []string {
	var opts [][]string
	o := func(w ...string) { opts = append(opts, w) }
	if (s.timeout && g.pct(40)) || g.pct(3) {
		o("timeout", g.pick("0", "100", "500", "2000", "-5", "abc", "2147484"))
	}
	if (s.counter && g.pct(40)) || g.pct(3) {
		o("packets", g.pick("0", "1", "42", "18446744073709551615", "x"))
	}
	if (s.counter && g.pct(30)) || g.pct(2) {
		o("bytes", g.pick("0", "100", "65536"))
	}
	if (s.comment && g.pct(40)) || g.pct(3) {
		o("comment", g.pick("c", "two words", "", `quote"in`, "x,y", strings.Repeat("z", 40)))
	}
	if (s.skbinfo && g.pct(40)) || g.pct(2) {
		switch g.r.IntN(3) {
		case 0:
			o("skbmark", g.pick("0x1", "0x10/0xff", "1", "0x100000000", "0x1/"))
		case 1:
			o("skbprio", g.pick("1:1", "10:2", "1", "x:y"))
		default:
			o("skbqueue", g.pick("0", "2", "65535", "65536"))
		}
	}
	if isNetType(s.typ) && g.pct(15) || g.pct(2) {
		o("nomatch")
	}
	if g.pct(2) {
		o(g.pick("foo", "timeout", "comment", "--timeout"))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	var out []string
	for _, w := range opts {
		out = append(out, w...)
	}
	return out
}

func isNetType(typ string) bool {
	return strings.HasPrefix(typ, "hash:") && strings.Contains(typ, "net")
}

// elem draws an element of s's type: mostly valid, now and then not.
func (g *ipsetGen) elem(s *ipsetGenSet) string {
	if g.pct(3) {
		return g.pick("", ",", "abc", "198.51.100.1,", ",80", "1.2.3.4 5")
	}
	switch s.typ {
	case "list:set":
		m := g.set().name
		if g.pct(10) {
			// the old spelling of a position
			return m + "," + g.pick("before", "after", "in") + "," + g.set().name
		}
		return m
	case "bitmap:ip":
		return g.bitmapIP(s)
	case "bitmap:ip,mac":
		if g.pct(25) {
			return g.bitmapIP(s)
		}
		return g.bitmapIP(s) + "," + g.mac()
	case "bitmap:port":
		if g.pct(10) {
			return g.pick("tcp:"+strconv.Itoa(s.lo+1), "udp:5", "http", "70000", "0")
		}
		a := s.lo + g.r.IntN(30)
		if g.pct(15) {
			return fmt.Sprintf("%d-%d", a, a+g.r.IntN(4))
		}
		return strconv.Itoa(a)
	case "hash:mac":
		return g.mac()
	}
	dims := strings.Split(strings.TrimPrefix(s.typ, "hash:"), ",")
	parts := make([]string, len(dims))
	for i, d := range dims {
		switch d {
		case "ip":
			parts[i] = g.ipDim(s.inet6)
		case "net":
			parts[i] = g.netDim(s.inet6)
		case "port":
			parts[i] = g.port(s.inet6)
		case "iface":
			parts[i] = g.iface()
		case "mac":
			parts[i] = g.mac()
		case "mark":
			parts[i] = g.pick("0x10", "16", "0", "0xffffffff", "0x100000000", "abc")
		}
	}
	if len(parts) > 1 && g.pct(3) {
		parts = parts[:len(parts)-1] // second element missing
	}
	return strings.Join(parts, ",")
}

func (g *ipsetGen) bitmapIP(s *ipsetGenSet) string {
	a := s.lo + g.r.IntN(20)
	switch g.r.IntN(10) {
	case 0:
		return fmt.Sprintf("198.51.100.%d-198.51.100.%d", a, a+g.r.IntN(4))
	case 1:
		return fmt.Sprintf("198.51.100.%d/%d", a, g.pick32(28, 30, 31, 32))
	case 2:
		return g.pick("0.0.0.0", "198.51.100.255", "203.0.113.1", "2001:db8::1")
	}
	return fmt.Sprintf("198.51.100.%d", a)
}

func (g *ipsetGen) pick32(xs ...int) int { return xs[g.r.IntN(len(xs))] }

func (g *ipsetGen) addr(inet6 bool) string {
	if g.pct(3) {
		if inet6 {
			return g.pick("::", "2001:db8:::1", "2001:db8::g", "198.51.100.1", "::ffff:198.51.100.1")
		}
		return g.pick("0.0.0.0", "255.255.255.255", "1.1.1.300", "198.51.100", "2001:db8::1", "abc")
	}
	if inet6 {
		return fmt.Sprintf("2001:db8:%x::%x", g.r.IntN(3), g.r.IntN(12))
	}
	return fmt.Sprintf("%s.%d", g.pick("198.51.100", "203.0.113", "198.18.0"), g.r.IntN(12))
}

// ipDim is an ip dimension: an address, a small CIDR or range (which
// hash types expand).
func (g *ipsetGen) ipDim(inet6 bool) string {
	a := g.addr(inet6)
	switch g.r.IntN(10) {
	case 0:
		if inet6 {
			return a + "/" + g.pick("126", "127", "128", "129", "64")
		}
		return a + "/" + g.pick("29", "30", "31", "32", "33", "0")
	case 1:
		return g.addrRange(a, inet6, -1, 5)
	case 2:
		if !inet6 && g.pct(10) {
			// enough addresses to fill a small set or grow its
			// hash table
			return a + "/" + g.pick("24", "26")
		}
	}
	return a
}

func (g *ipsetGen) netDim(inet6 bool) string {
	a := g.addr(inet6)
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		if inet6 {
			return a + "/" + g.pick("0", "1", "32", "48", "64", "127", "128", "129")
		}
		return a + "/" + g.pick("0", "1", "8", "16", "24", "25", "30", "31", "32", "33")
	case 4:
		return g.addrRange(a, inet6, 0, 20)
	}
	return a
}

// addrRange is a range from a: for IPv4 to an address in the same /24
// from off to off+span-1 past a (one before a reverses it).
func (g *ipsetGen) addrRange(a string, inet6 bool, off, span int) string {
	if inet6 {
		return a + "-" + g.addr(true)
	}
	i := strings.LastIndexByte(a, '.')
	if i < 0 {
		return a
	}
	n, _ := strconv.Atoi(a[i+1:])
	return fmt.Sprintf("%s-%s%d", a, a[:i+1], n+off+g.r.IntN(span))
}

func (g *ipsetGen) port(inet6 bool) string {
	switch g.r.IntN(16) {
	case 0:
		return g.pick("http", "https", "domain", "ssh", "nosuchservice")
	case 1:
		return "udp:" + g.pick("53", "0", "1-3", "65535")
	case 2:
		return g.pick("sctp:9", "udplite:7", "47:0", "gre:0", "0", "tcp:0")
	case 3:
		if inet6 {
			return "icmpv6:" + g.pick("echo-request", "128/0", "1/3", "bogus", "ping")
		}
		return "icmp:" + g.pick("ping", "echo-request", "8/0", "3/3", "bogus", "256/0")
	case 4:
		return g.pick("99999", "tcp:99999", "foo:1", "tcp:", "icmp:ping", "icmpv6:ping", "-1")
	case 5:
		a := 80 + g.r.IntN(4)
		return fmt.Sprintf("%s%d-%d", g.pick("", "tcp:", "udp:"), a, a+g.r.IntN(3))
	}
	return fmt.Sprintf("%s%d", g.pick("", "tcp:", "tcp:", "udp:"), 80+g.r.IntN(4))
}

func (g *ipsetGen) iface() string {
	switch g.r.IntN(8) {
	case 0:
		return "physdev:" + g.pick("eth0", "veth1")
	case 1:
		return g.pick(strings.Repeat("i", 15), strings.Repeat("i", 16), "", "physdev:")
	}
	return g.pick("eth0", "eth1", "lo", "veth-h49", "br0")
}

func (g *ipsetGen) mac() string {
	if g.pct(5) {
		return g.pick("00:11:22:33:44", "zz:11:22:33:44:55", "00:00:00:00:00:00", "00-11-22-33-44-55")
	}
	return fmt.Sprintf("0%d:11:22:33:44:%02X", g.r.IntN(3), g.r.IntN(4))
}

// restoreFile draws a restore input: creates, adds, dels and the other
// commands restore takes, with comments and blank lines, and now and
// then a line with an error.
func (g *ipsetGen) restoreFile() string {
	var b strings.Builder
	n := 1 + g.r.IntN(10)
	for i := 0; i < n; i++ {
		var words []string
		switch k := g.r.IntN(100); {
		case k < 20 || len(g.sets) == 0:
			words = g.create()
		case k < 70:
			words = g.elemCommand(g.pick("add", "add", "add", "del"))
		case k < 74:
			words = g.flushDestroy("flush")
		case k < 77:
			words = g.flushDestroy("destroy")
		case k < 80:
			words = g.swapRename()
		case k < 83:
			words = g.elemCommand("test")
		case k < 86:
			b.WriteString(g.pick("# a comment", "", "  ", "COMMIT") + "\n")
			continue
		case k < 88:
			words = g.bad()
		case k < 90:
			words = []string{g.pick("list", "save", "version")}
		default:
			words = g.elemCommand("add")
		}
		line := make([]string, len(words))
		for j, w := range words {
			line[j] = restoreQuote(w)
		}
		if g.pct(2) {
			line = append(line, "# trailing")
		}
		if g.pct(3) {
			b.WriteString(" ")
		}
		b.WriteString(strings.Join(line, " ") + "\n")
	}
	return b.String()
}

// restoreQuote writes a word as a restore line needs it: blanks and
// quotes inside double quotes.
func restoreQuote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\"") {
		return w
	}
	return `"` + w + `"`
}

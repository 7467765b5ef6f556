package compat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Name databases iptables consults through libc: /etc/protocols and
// /etc/services. They are read once per process.

type protoEntry struct {
	name string
	num  uint8
}

// chainProtos is xtables' built-in protocol table. iptables 1.8.9 looks
// a name or number up there before /etc/protocols, both when it parses -p
// and when it prints it: `-p tcp` is 6 and 6 prints as "tcp" even where
// /etc/protocols says otherwise, and a command with -p tcp does not read
// the file at all.
var chainProtos = []protoEntry{
	{"tcp", 6}, {"sctp", 132}, {"udp", 17}, {"udplite", 136}, {"icmp", 1},
	{"ipv6-icmp", 58}, {"icmpv6", 58}, {"esp", 50}, {"ah", 51},
	{"mobility-header", 135}, {"ipv6-mh", 135}, {"mh", 135}, {"all", 0},
}

// readNameDB calls fn with the fields of every line of a name database
// in /etc (protocols, services, hosts) that has at least two fields,
// comments removed. A missing file is an empty database.
func readNameDB(path string, fn func(fields []string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if fields := strings.Fields(line); len(fields) >= 2 {
			fn(fields)
		}
	}
}

var (
	protoOnce   sync.Once
	protoByName map[string]uint8
	protoByNum  map[uint8]string
	// protocolsDB is the file loadProtocols reads (a test's own)
	protocolsDB = "/etc/protocols"
)

func loadProtocols() {
	protoByName = map[string]uint8{}
	protoByNum = map[uint8]string{}
	readNameDB(protocolsDB, func(fields []string) {
		n, err := strconv.ParseUint(fields[1], 10, 8)
		if err != nil {
			return
		}
		if _, ok := protoByNum[uint8(n)]; !ok {
			protoByNum[uint8(n)] = fields[0]
		}
		for _, name := range append([]string{fields[0]}, fields[2:]...) {
			if _, ok := protoByName[name]; !ok {
				protoByName[name] = uint8(n)
			}
		}
	})
}

// ParseProtocol parses a -p argument as xtables_parse_protocol does
// (the caller lower-cases it first).
func ParseProtocol(s string) (uint8, error) {
	if v, ok := strtoui(s, 0, 255); ok {
		return uint8(v), nil
	}
	for _, p := range chainProtos {
		if p.name == s {
			return p.num, nil
		}
	}
	protoOnce.Do(loadProtocols)
	if n, ok := protoByName[s]; ok {
		return n, nil
	}
	return 0, Paramf("unknown protocol \"%s\" specified", s)
}

// protoParsesAs says whether ParseProtocol reads name, a name
// /etc/protocols gives p, as p. It does not where the file gives p the
// name of another protocol of the built-in table, which ParseProtocol
// looks at first: the exact form of a rule (ExactSpec) then keeps the
// number, while -S prints the name as iptables does.
func protoParsesAs(name string, p uint8) bool {
	for _, e := range chainProtos {
		if e.name == name {
			return e.num == p
		}
	}
	return true
}

// ProtoName returns the name iptables prints for protocol p, or "" when
// it has none. numeric skips /etc/protocols, as -n does.
func ProtoName(p uint8, numeric bool) string {
	for _, e := range chainProtos {
		if e.num == p {
			return e.name
		}
	}
	if p != 0 && !numeric {
		protoOnce.Do(loadProtocols)
		return protoByNum[p]
	}
	return ""
}

var (
	servOnce   sync.Once
	servByName map[string]uint16 // "name/proto"
	servByPort map[string]string // "port/proto"
)

func loadServices() {
	servByName = map[string]uint16{}
	servByPort = map[string]string{}
	readNameDB("/etc/services", func(fields []string) {
		portStr, proto, ok := strings.Cut(fields[1], "/")
		if !ok {
			return
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return
		}
		k := portStr + "/" + proto
		if _, ok := servByPort[k]; !ok {
			servByPort[k] = fields[0]
		}
		for _, name := range append([]string{fields[0]}, fields[2:]...) {
			if _, ok := servByName[name+"/"+proto]; !ok {
				servByName[name+"/"+proto] = uint16(port)
			}
		}
	})
}

// ServicePort looks a service name up for proto ("tcp", "udp", ...);
// an empty proto tries tcp, then udp, as getservbyname(name, NULL) does.
func ServicePort(name, proto string) (uint16, bool) {
	servOnce.Do(loadServices)
	if proto == "" {
		if p, ok := servByName[name+"/tcp"]; ok {
			return p, true
		}
		p, ok := servByName[name+"/udp"]
		return p, ok
	}
	p, ok := servByName[name+"/"+proto]
	return p, ok
}

// ServiceName returns the service name for port/proto, or "".
func ServiceName(port uint16, proto string) string {
	servOnce.Do(loadServices)
	return servByPort[strconv.Itoa(int(port))+"/"+proto]
}

// strtoui parses like xtables_strtoui: base 0 (decimal, 0x hex, 0
// octal), the whole string, within [min, max].
func strtoui(s string, min, max uint64) (uint64, bool) {
	// white space first, as strtoumax skips it (iptables-nft takes
	// --dport " 80" and -s "1. 2.3.4")
	s = trimCSpace(s)
	if s == "" || s[0] == '-' || s[0] == '+' && len(s) == 1 {
		return 0, false
	}
	t := strings.TrimPrefix(s, "+")
	if t == "" || t[0] < '0' || t[0] > '9' {
		return 0, false // a name (ParseUint would fail, with an error to allocate)
	}
	v, err := strconv.ParseUint(t, 0, 64)
	if err != nil || strings.Contains(t, "_") || strings.HasPrefix(t, "0b") || strings.HasPrefix(t, "0o") ||
		strings.HasPrefix(t, "0B") || strings.HasPrefix(t, "0O") {
		return 0, false
	}
	return v, v >= min && v <= max
}

// ParseUint is xtables_strtoui for extensions: whole string, base 0.
func ParseUint(s string, min, max uint64) (uint64, bool) { return strtoui(s, min, max) }

// ParsePort parses a port number or service name for proto, as
// xtables_parse_port does; the error names the bad value.
func ParsePort(s, proto string) (uint16, error) {
	if v, ok := strtoui(s, 0, 65535); ok {
		return uint16(v), nil
	}
	if p, ok := ServicePort(s, proto); ok {
		return p, nil
	}
	return 0, Paramf("invalid port/service `%s' specified", s)
}

package ipset

import (
	"fmt"
	"strings"
	"testing"
)

// The ipset 4 syntax that old scripts and saved files carry (Shorewall,
// init scripts, ipsets.save of old hosts), as ipset 7.17 takes it:
// option words with two leading dashes, the options it ignores with a
// warning, and bitmap ranges given by from/to or network. Expected
// strings measured with ipset 7.17 (testdata/ipset/ipset4-syntax.txt
// runs the same lines against it).
func TestIpset4Syntax(t *testing.T) {
	const usage = "\nTry `ipset help' for more information.\n"
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create o1 hash:ip --hashsize 64 --maxelem 100 --timeout 5 --family inet", "", ""},
		{"create o2 hash:ip -hashsize 64", "", "ipset v7.17: Unknown argument: `-hashsize'" + usage},
		{"create o3 hash:ip ---hashsize 64", "", "ipset v7.17: Unknown argument: `---hashsize'" + usage},
		{"create o4 hash:ip --hashsize 64 hashsize 128", "", "ipset v7.17: Syntax error: hashsize already specified\n"},
		{"create o5 hash:ip --hashsize", "", "ipset v7.17: Missing mandatory argument of option `hashsize'" + usage},
		{"create o6 hash:ip -- 1", "", "ipset v7.17: Unknown argument: `--'" + usage},
		{"add o1 198.18.0.1 --timeout 3", "", ""},
		{"add o1 198.18.0.2 --timeout 3 --timeout 4", "", "ipset v7.17: Syntax error: timeout already specified\n"},
		{"add o1 198.18.0.2 --timeout", "", "ipset v7.17: Missing mandatory argument of option `timeout'" + usage},
		{"add o1 198.18.0.2 --bogus", "", "ipset v7.17: Unknown argument: `--bogus'" + usage},
		{"create o9 hash:ip counters --comment", "", ""},
		{"add o9 198.18.0.3 --packets 1 --bytes 2 --comment x", "", ""},
		{"create o10 hash:net", "", ""},
		{"add o10 198.18.0.0/24 --nomatch", "", ""},
		{"test o10 198.18.0.1 --nomatch", "Warning: 198.18.0.1 is in set o10.\n", ""},
		{"create L list:set --size 5", "", ""},
		{"add L o9", "", ""},
		{"add L o10 --before o9", "", ""},
		{"test L o10 --before o9", "Warning: o10 after o9 is in set L.\n", ""},

		// ignored options: warned of once each, on the types that had them
		{"create p1 hash:ip probes 8", "Warning: Option '--probes 8' is ignored. Please upgrade your syntax.\n", ""},
		{"create p3 hash:ip probes 1 resize 2 gc 3 probes 4 maxelem 5 resize 6", "Warning: Option '--probes 1' is ignored. Please upgrade your syntax.\n" +
			"Option '--resize 2' is ignored. Please upgrade your syntax.\nOption '--gc 3' is ignored. Please upgrade your syntax.\n", ""},
		{"create p4 hash:ip --probes x", "Warning: Option '--probes x' is ignored. Please upgrade your syntax.\n", ""},
		{"create p5 hash:ip probes", "", "ipset v7.17: Missing mandatory argument of option `probes'" + usage},
		{"create p6 hash:ip probes 1 hashsize x", "", "ipset v7.17: Syntax error: 'x' is invalid as number\n"},
		{"create p1 hash:ip probes 1", "", "ipset v7.17: Set cannot be created: set with the same name already exists\n"},
		{"-exist create p1 hash:ip probes 1", "Warning: Option '--probes 1' is ignored. Please upgrade your syntax.\n", ""},
		{"create p9 hash:net probes 1 resize 2", "Warning: Option '--probes 1' is ignored. Please upgrade your syntax.\nOption '--resize 2' is ignored. Please upgrade your syntax.\n", ""},
		{"create p10 hash:net gc 1", "", "ipset v7.17: Unknown argument: `gc'" + usage},
		{"create p12 hash:ip,port gc 3", "", "ipset v7.17: Unknown argument: `gc'" + usage},
		{"create p14 hash:ip,port,net resize 1", "Warning: Option '--resize 1' is ignored. Please upgrade your syntax.\n", ""},
		{"create p15 hash:net,port probes 1", "", "ipset v7.17: Unknown argument: `probes'" + usage},
		{"create p17 bitmap:ip range 198.18.8.0/24 probes 1", "", "ipset v7.17: Unknown argument: `probes'" + usage},

		// bitmap ranges
		{"create b1 bitmap:ip --network 198.18.3.0/24", "", ""},
		{"create b3 bitmap:ip from 198.18.5.0 to 198.18.5.7", "", ""},
		{"create b4 bitmap:port --from 1 --to 1024", "", ""},
		{"create b5 bitmap:ip,mac --network 198.18.6.0/24", "", ""},
		{"create b6 bitmap:ip --from 198.18.7.0 --to 198.18.7.255 --netmask 30", "", ""},
		{"create b7 bitmap:ip range 198.18.0.0/24 from 198.18.0.0", "", "ipset v7.17: Syntax error: from already specified\n"},
		{"create b8 bitmap:ip from 198.18.0.0", "", "ipset v7.17: Mandatory option `to' is missing" + usage},
		{"create b9 bitmap:ip to 198.18.0.9", "", "ipset v7.17: Mandatory option `range' is missing" + usage},
		{"create b10 bitmap:ip --from 198.18.0.9 --to 198.18.0.1", "", ""},
		{"create b11 bitmap:ip network 198.18.0.0/24 network 198.18.1.0/24", "", "ipset v7.17: Syntax error: network already specified\n"},
		{"create b12 bitmap:ip --network 198.18.0.0/24 --to 198.18.0.9", "", ""},
		{"create b14 bitmap:port --from 1 --to 1024 --network 198.18.0.0/24", "", "ipset v7.17: Unknown argument: `--network'" + usage},
		{"create b16 bitmap:ip --from 198.18.0.0/24 --to 198.18.0.3", "", "ipset v7.17: Syntax error: plain IP address must be supplied: 198.18.0.0/24\n"},
		{"create b18 bitmap:ip --network 198.18.0.5", "", "ipset v7.17: Syntax error: IP/netblock must be supplied: 198.18.0.5\n"},
		{"create b19 bitmap:ip --network 198.18.0.0-198.18.0.5", "", "ipset v7.17: Syntax error: IP/netblock must be supplied: 198.18.0.0-198.18.0.5\n"},
		{"create b20 bitmap:port from http to https", "", ""},
		{"create b21 bitmap:ip from 198.18.0.0 to 198.18.0.3 to 198.18.0.5", "", "ipset v7.17: Syntax error: to already specified\n"},
		{"create b22 bitmap:ip --from", "", "ipset v7.17: Missing mandatory argument of option `from'" + usage},
		{"create b23 bitmap:port range 5", "", "ipset v7.17: Mandatory option `to' is missing" + usage},
		{"create b25 bitmap:ip range 198.18.0.0/24 to 198.18.0.9", "", ""},
		{"create b26 bitmap:ip range 198.18.0.0-198.18.0.7 to 198.18.0.9", "", "ipset v7.17: Syntax error: to already specified\n"},
		{"create b27 bitmap:ip from 198.18.0.0 range 198.18.0.0/24", "", "ipset v7.17: Syntax error: range already specified\n"},
		{"create b29 bitmap:ip from 198.18.0.0 to 198.19.0.0", "", "ipset v7.17: The range you specified exceeds the size limit of the set type\n"},
		{"create b34 bitmap:ip network 198.18.0.1/24 netmask 26", "", ""},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	var b strings.Builder
	for _, name := range []string{"o1", "o9", "o10", "p3", "b1", "b3", "b4", "b5", "b6", "b10", "b12", "b20", "b25", "b34"} {
		s := st.Find(name)
		if s == nil {
			t.Fatalf("no set %s", name)
		}
		fmt.Fprintf(&b, "%s %s\n", name, strings.Join(s.headerOptions(false, nil), " "))
	}
	want := "o1 family inet hashsize 64 maxelem 100 timeout 5 bucketsize 12\n" +
		"o9 family inet hashsize 1024 maxelem 65536 counters comment bucketsize 12\n" +
		"o10 family inet hashsize 1024 maxelem 65536 bucketsize 12\n" +
		"p3 family inet hashsize 1024 maxelem 5 bucketsize 12\n" +
		"b1 range 198.18.3.0-198.18.3.255\n" +
		"b3 range 198.18.5.0-198.18.5.7\n" +
		"b4 range 1-1024\n" +
		"b5 range 198.18.6.0-198.18.6.255\n" +
		"b6 range 198.18.7.0-198.18.7.255 netmask 30\n" +
		"b10 range 198.18.0.1-198.18.0.9\n" +
		"b12 range 198.18.0.0-198.18.0.9\n" +
		"b20 range 80-443\n" +
		"b25 range 198.18.0.0-198.18.0.9\n" +
		"b34 range 198.18.0.0-198.18.0.255 netmask 26\n"
	if got := b.String(); got != want {
		t.Errorf("headers:\n%s\nwant:\n%s", got, want)
	}
	if out, _ := run(t, st, "save o9"); !strings.Contains(out, "add o9 198.18.0.3 packets 1 bytes 2 comment \"x\"\n") {
		t.Errorf("save o9: %q", out)
	}
	if out, _ := run(t, st, "save o10"); !strings.Contains(out, "add o10 198.18.0.0/24 nomatch\n") {
		t.Errorf("save o10: %q", out)
	}
	if out, _ := run(t, st, "list L"); !strings.HasSuffix(out, "Members:\no10\no9\n") {
		t.Errorf("list L: %q", out)
	}
}

// A restore line's word that is empty without its quotes is no word:
// ipset 7.17 answers `add s 1.2.3.4 comment ""` in a restore with
// "Missing mandatory argument of option `comment'".
func TestSplitLineEmptyQuoted(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`add c 198.18.0.1 comment ""`, "[add c 198.18.0.1 comment]"},
		{`add c 198.18.0.2 comment "" packets 5`, "[add c 198.18.0.2 comment packets 5]"},
		{`add c 198.18.0.3 comment a""b`, "[add c 198.18.0.3 comment ab]"},
		{`add c 198.18.0.5 comment x"a b"y`, "[add c 198.18.0.5 comment xa by]"},
		{`"add" c 198.18.0.6`, "[add c 198.18.0.6]"},
		{`add c "" 198.18.0.7`, "[add c 198.18.0.7]"},
		{`add c 198.18.0.8 comment " "`, "[add c 198.18.0.8 comment  ]"},
	} {
		if got := fmt.Sprint(SplitLine(tc.line)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.line, got, tc.want)
		}
	}
	_, err := ParseRestore("create c hash:ip comment\nadd c 198.18.0.1 comment \"\"\n")
	if err != nil {
		t.Fatal(err) // (the argument is missing when the line runs)
	}
	st := &State{}
	run(t, st, "create c hash:ip comment")
	cmds, _ := ParseRestore("add c 198.18.0.1 comment \"\"\n")
	if _, e := st.Exec(cmds[0]); Format(e) != "ipset v7.17: Missing mandatory argument of option `comment'\nTry `ipset help' for more information.\n" {
		t.Errorf("got %q", Format(e))
	}
}

// Words after a list:set element that are no option are refused before
// the members are looked at, as ipset parses every word first.
func TestListSetExtraWords(t *testing.T) {
	const usage = "\nTry `ipset help' for more information.\n"
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create a hash:ip", "", ""},
		{"create L list:set", "", ""},
		{"add L a", "", ""},
		{"del L a foo", "", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"test L a foo", "", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"test L a before a foo", "", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"del L a #x", "", "ipset v7.17: Unknown argument: `#x'" + usage},
		{"add L nope foo", "", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"del L nope foo", "", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"test L a", "Warning: a is in set L.\n", ""},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// Found by random command lines against ipset 7.17: ipset 4's from, to
// and network are ignored options of the hash:ip,port types (network
// warns as from, once with it); list:set takes no forceadd; a prefix
// length is read before its address; test's range refusal names no
// restore line; an unknown word is echoed as given.
func TestIpsetRandomFindings(t *testing.T) {
	const usage = "\nTry `ipset help' for more information.\n"
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create ipp hash:ip,port from 198.51.100.1 to 198.51.100.9 network 198.51.100.0/24", "Warning: Option '--from 198.51.100.1' is ignored. Please upgrade your syntax.\nOption '--to 198.51.100.9' is ignored. Please upgrade your syntax.\n", ""},
		{"create ipp2 hash:ip,port,ip network x from y", "Warning: Option '--from x' is ignored. Please upgrade your syntax.\n", ""},
		{"create ipp3 hash:ip,port,net --to 1 --to 2 probes 1", "Warning: Option '--to 1' is ignored. Please upgrade your syntax.\nOption '--probes 1' is ignored. Please upgrade your syntax.\n", ""},
		{"create ipp4 hash:ip,port from", "", "ipset v7.17: Missing mandatory argument of option `from'" + usage},
		{"create ipp5 hash:ip,port,net hashsize 1 to 20 hashsize 1000", "", "ipset v7.17: Syntax error: hashsize already specified\n"},
		{"create h hash:ip from 198.51.100.1", "", "ipset v7.17: Unknown argument: `from'" + usage},
		{"create np hash:net,port network 198.51.100.0/24", "", "ipset v7.17: Unknown argument: `network'" + usage},
		{"create L list:set forceadd", "", "ipset v7.17: Unknown argument: `forceadd'" + usage},
		{"create n hash:net", "", ""},
		{"create n6 hash:net family inet6", "", ""},
		{"add n 2001:db8::/64", "", "ipset v7.17: Syntax error: '64' is out of range 0-32\n"},
		{"add n foo/33", "", "ipset v7.17: Syntax error: '33' is out of range 0-32\n"},
		{"add n6 198.51.100.0/129", "", "ipset v7.17: Syntax error: '129' is out of range 0-128\n"},
		{"add ipp 198.51.100.1,80 nomatch", "", "ipset v7.17: Unknown argument: `nomatch'" + usage},
		{"add ipp 198.51.100.1,80 --nomatch", "", "ipset v7.17: Unknown argument: `--nomatch'" + usage},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	cmds, perr := ParseRestore("create bp bitmap:port range 1-100\nadd bp 5\ntest bp 1-2\n")
	if perr != nil {
		t.Fatal(perr)
	}
	var last *Error
	for _, c := range cmds {
		if _, e := st.Exec(c); e != nil {
			e.Line = c.Line // as the engine names it
			last = e
		}
	}
	if got := Format(last); got != "ipset v7.17: FROM-TO port range is not allowed in command test with set type bitmap:port and family unspec\n" {
		t.Errorf("test of a range in a restore: %q", got)
	}
}

// The order of ipset 7.17's answers when a command has several faults:
// its parser's (the element's syntax, unknown words, option values)
// before the kernel's, and of the kernel's, options the set lacks
// before a refused element (/0 of an address, null element, a list
// member that does not exist). Found by random command lines.
func TestErrorOrder(t *testing.T) {
	const usage = "\nTry `ipset help' for more information.\n"
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create n hash:net timeout 0", "", ""},
		{"create h hash:ip timeout 8", "", ""},
		{"create ipn hash:ip,port,net", "", ""},
		{"create L list:set", "", ""},
		{"create b bitmap:ip range 198.51.100.0/28", "", ""},
		{"add n 198.51.100.0/0 skbmark 0x10", "", "ipset v7.17: Skbinfo mapping cannot be used: set was created without skbinfo support\n"},
		{"add n 198.51.100.0/0", "", "ipset v7.17: The value of the CIDR parameter of the IP address is invalid\n"},
		{"test h 0.0.0.0 timeout 2147484", "", "ipset v7.17: Unknown argument: `timeout'" + usage},
		{"del h 0.0.0.0 nomatch skbqueue 70000", "", "ipset v7.17: Unknown argument: `nomatch'" + usage},
		{"test h 999.1.1.1 timeout 5", "", "ipset v7.17: Syntax error: cannot parse 999.1.1.1: resolving to IPv4 address failed\n"},
		{"add -exist ipn 198.51.100.0/0,tcp:80,198.51.100.0/24", "", "ipset v7.17: The value of the CIDR parameter of the IP address is invalid\n"},
		{"add h 198.51.100.0/0", "", "ipset v7.17: The value of the CIDR parameter of the IP address is invalid\n"},
		{"add b 198.51.100.0/0", "", "ipset v7.17: The value of the CIDR parameter of the IP address is invalid\n"},
		{"add b 10.0.0.0/0", "", "ipset v7.17: Element is out of the range of the set\n"},
		{"test b 198.51.100.0/0", "", "ipset v7.17: IP/CIDR range is not allowed in command test with set type bitmap:ip and family inet\n"},
		{"add -exist L nope,before,n packets 5", "", "ipset v7.17: Packet/byte counters cannot be used: set was created without counter support\n"},
		{"create b4 bitmap:ip range 198.51.100.0-198.51.100.15 -4", "", "ipset v7.17: Unknown argument: `-4'" + usage},
		{"create l6 list:set -6 -6", "", "ipset v7.17: Unknown argument: `-6'" + usage},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// More of ipset 7.17's answers found by random command lines: an
// address in brackets in either family (and its message without them),
// family any, a test the kernel refuses (null element, /0) is "not in
// the set", and hash:ip tests the address as written of a range or a
// prefix, whatever its size.
func TestRandomFindings2(t *testing.T) {
	const usage = "\nTry `ipset help' for more information.\n"
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create h hash:ip", "", ""},
		{"create hp hash:ip,port", "", ""},
		{"create n hash:net", "", ""},
		{"add h [198.51.100.1]", "", ""},
		{"add h [198.51.100.2", "", "ipset v7.17: Syntax error: cannot find closing escape character ']' in [198.51.100.2\n"},
		{"add h [2001:db8::1]", "", "ipset v7.17: Syntax error: cannot parse 2001:db8::1: resolving to IPv4 address failed\n"},
		{"add n [198.51.100.0]/24", "", ""},
		{"add n [198.51.100.0/24]", "", "ipset v7.17: Syntax error: '24]' is invalid as number\n"},
		{"add hp [198.51.100.3],80", "", ""},
		{"create f1 hash:ip family any", "", "ipset v7.17: Protocol family not supported by the set type\n"},
		{"create f3 hash:ip family any foo", "", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"create f4 hash:ip family unspec maxelem x", "", "ipset v7.17: Syntax error: 'x' is invalid as number\n"},
		{"test h 0.0.0.0", "", "ipset v7.17: 0.0.0.0 is NOT in set h.\n"},
		{"test hp 0.0.0.0,80", "", "ipset v7.17: 0.0.0.0,tcp:80 is NOT in set hp.\n"},
		{"del h 0.0.0.0", "", "ipset v7.17: Null-valued element, cannot be stored in a hash type of set\n"},
		{"test n 0.0.0.0/0", "", "ipset v7.17: 0.0.0.0/0 is NOT in set n.\n"},
		{"add h 10.0.0.0", "", ""},
		{"test h 10.0.0.0/8", "Warning: 10.0.0.0/8 is in set h.\n", ""},
		{"test h 10.0.0.0-10.255.255.255", "Warning: 10.0.0.0-10.255.255.255 is in set h.\n", ""},
		{"test h 10.0.0.1/8", "", "ipset v7.17: 10.0.0.1/8 is NOT in set h.\n"},
		{"test h 10.0.0.0/40", "", "ipset v7.17: Syntax error: '40' is out of range 0-32\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	if out, _ := run(t, st, "save h"); !strings.Contains(out, "add h 198.51.100.1\n") {
		t.Errorf("save h: %q", out)
	}
}

// The kernel's refusal of one dimension of an element (a /0) waits for
// the parse of the others and of the options, in the command and in
// the bulk restore alike.
func TestElemErrorDeferred(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create ipi hash:ip,port,ip", "", ""},
		{"create hp hash:ip,port", "", ""},
		{"test ipi 198.51.100.0/0,80,2001:db8::/64", "", "ipset v7.17: Syntax error: plain IP address must be supplied: 2001:db8::/64\n"},
		{"test ipi 198.51.100.0/0,icmp:echo-request,198.51.100.2-198.51.100.4 packets 5", "", "ipset v7.17: Syntax error: plain IP address must be supplied: 198.51.100.2-198.51.100.4\n"},
		{"add hp 198.51.100.0/0,gre:0 timeout 5", "", "ipset v7.17: Timeout cannot be used: set was created without timeout support\n"},
		{"add hp 198.51.100.0/0,gre:0", "", "ipset v7.17: The value of the CIDR parameter of the IP address is invalid\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	b := NewBulk(st.Find("hp"))
	if err, _ := b.Add(strings.Fields("hp 198.51.100.0/0,gre:0 timeout 5"), false); err == nil || err.Msg != MsgNoTimeout {
		t.Errorf("bulk add: %v", err)
	}
}

// create checks every word against the type's options before it parses
// any value (ipset 7.17 picks the kernel revision from them first).
func TestCreateUnknownFirst(t *testing.T) {
	const usage = "\nTry `ipset help' for more information.\n"
	st := &State{}
	for _, tc := range []struct{ line, err string }{
		{"create e hash:ip timeout 1 timeout 2 foo", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"create d hash:ip timeout x foo", "ipset v7.17: Unknown argument: `foo'" + usage},
		{"create a hash:ip timeout x maxelem y", "ipset v7.17: Syntax error: 'x' is invalid as number\n"},
		{"create b hash:ip timeout 1 timeout 2", "ipset v7.17: Syntax error: timeout already specified\n"},
		{"create s52 bitmap:ip range 198.51.100.0/28 timeout 300 --timeout 2147483 -4", "ipset v7.17: Unknown argument: `-4'" + usage},
		{"create f hash:ip timeout 1 timeout", "ipset v7.17: Missing mandatory argument of option `timeout'" + usage},
		{"create g2 hash:ip timeout foo", "ipset v7.17: Syntax error: 'foo' is invalid as number\n"},
		{"create m hash:ip maxelem 1 maxelem y", "ipset v7.17: Syntax error: maxelem already specified\n"},
		{"create bp bitmap:port range 1-100 timeout x forceadd", "ipset v7.17: Unknown argument: `forceadd'" + usage},
		{"create d2 hash:ip counters counters", ""},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s:\n got %q\nwant %q", tc.line, err, tc.err)
		}
	}
}

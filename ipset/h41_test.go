package ipset

import (
	"bufio"
	"strings"
	"testing"
)

// Real-world inputs of issue 4 (sshguard, MAC lists, service ports):
// expected strings measured with ipset 7.17.
func TestRealWorldElemSyntax(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		// sshguard adds ADDR/128 to a hash:ip of family inet6: a host
		// prefix is a plain address; anything else is not
		{"create sshguard6 hash:ip family inet6", "", ""},
		{"add sshguard6 2001:db8::5/128", "", ""},
		{"add sshguard6 2001:db8::5/128", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add sshguard6 2001:db8::6/0128", "", "ipset v7.17: Syntax error: plain IP address must be supplied: 2001:db8::6/0128\n"},
		{"add sshguard6 2001:db8:1::/64", "", "ipset v7.17: Syntax error: plain IP address must be supplied: 2001:db8:1::/64\n"},
		{"test sshguard6 2001:db8::5/128", "Warning: 2001:db8::5 is in set sshguard6.\n", ""},
		{"del sshguard6 2001:db8::5/128", "", ""},
		{"create p6 hash:ip,port family inet6", "", ""},
		{"add p6 2001:db8::1/128,80", "", ""},
		{"test p6 2001:db8::1/128,80", "", "ipset v7.17: IP/CIDR range is not allowed in command test with set type hash:ip,port and family inet6\n"},
		// MACs are read with strtol: signs, blanks, 0x, 3 digits and
		// empty fields pass; more than 17 bytes do not
		{"create bm bitmap:ip,mac range 198.51.100.0/28", "", ""},
		{"add bm 198.51.100.1,+2:42:ac:11:00:05", "", ""},
		{"add bm 198.51.100.2,+2:+42:ac:11:0:5", "", ""},
		{"add bm 198.51.100.3,0x2:-0:ac:11:0:", "", ""},
		{"add bm 198.51.100.4,002::ac:11:0:5", "", ""},
		{"add bm 198.51.100.5,-2:42:ac:11:00:05", "", "ipset v7.17: Syntax error: cannot parse '-2:42:ac:11:00:05' as ethernet address\n"},
		{"add bm 198.51.100.5,00:11:22:33:44:55:", "", "ipset v7.17: Syntax error: cannot parse '00:11:22:33:44:55:' as ethernet address\n"},
		{"add bm 198.51.100.5,0x:42:ac:11:00:05", "", "ipset v7.17: Syntax error: cannot parse '0x:42:ac:11:00:05' as ethernet address\n"},
		{"save bm", "create bm bitmap:ip,mac range 198.51.100.0-198.51.100.15\nadd bm 198.51.100.1,02:42:AC:11:00:05\nadd bm 198.51.100.2,02:42:AC:11:00:05\n" +
			"add bm 198.51.100.3,02:00:AC:11:00:00\nadd bm 198.51.100.4,02:00:AC:11:00:05\n", ""},
		// ICMP names hold dashes but are no port range; what does not
		// parse as ICMP is the parser's error, in test too
		{"create p hash:ip,port", "", ""},
		{"add p 198.51.100.1,icmp:echo-request", "", ""},
		{"test p 198.51.100.1,icmp:echo-request", "Warning: 198.51.100.1,icmp:echo-request is in set p.\n", ""},
		{"test p 198.51.100.1,1:echo-request", "Warning: 198.51.100.1,icmp:echo-request is in set p.\n", ""},
		{"test p 198.51.100.1,icmp:0-8", "", "ipset v7.17: Cannot parse 0-8 as an ICMP type/code.\n"},
		{"test p 198.51.100.1,1:2048", "", "ipset v7.17: Cannot parse 2048 as an ICMP type/code.\n"},
		{"test p 198.51.100.1,tcp:80-81", "", "ipset v7.17: FROM-TO port range is not allowed in command test with set type hash:ip,port and family inet\n"},
		{"add p 198.51.100.1,icmp:8/0-1", "", "ipset v7.17: Syntax error: '0-1' is invalid as number\n"},
		{"add p 198.51.100.1,icmp:8/", "", "ipset v7.17: Cannot parse 8/ as an ICMP type/code.\n"},
		{"add p 198.51.100.1,icmp:+3/+3", "", ""},
		// the protocol ends at the first ':', and a ':' at either end
		// makes the whole a TCP port
		{"add p 198.51.100.1,:80", "", "ipset v7.17: Syntax error: ':80' is invalid as number\nSyntax error: 'tcp' is invalid as number\ncannot parse ':80' as a tcp port\n"},
		{"add p 198.51.100.1,udp:tcp:80", "", "ipset v7.17: Syntax error: 'tcp:80' is invalid as number\nSyntax error: 'udp' is invalid as number\ncannot parse 'tcp:80' as a udp port\n"},
		{"add p 198.51.100.1,icmp:8:0", "", "ipset v7.17: Cannot parse 8:0 as an ICMP type/code.\n"},
		{"add p 198.51.100.1,tcp:80:", "", "ipset v7.17: Syntax error: 'tcp:80:' is invalid as number\nSyntax error: 'tcp' is invalid as number\ncannot parse 'tcp:80:' as a tcp port\n"},
		// a port outside a bitmap's range is echoed by number
		{"create bp bitmap:port range 20-22", "", ""},
		{"test bp www", "", "ipset v7.17: 80 is NOT in set bp.\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// ipset takes the start of a command's name, with or without two
// dashes, in the order of its command table; glued letters are unknown.
func TestCommandAbbreviations(t *testing.T) {
	for _, tc := range []struct {
		arg string
		op  Op
		err string
	}{
		{"lis", OpList, ""}, {"l", OpList, ""}, {"--lis", OpList, ""}, {"s", OpSave, ""}, {"sw", OpSwap, ""},
		{"d", OpDel, ""}, {"des", OpDestroy, ""}, {"r", OpRestore, ""}, {"ren", OpRename, ""}, {"c", OpCreate, ""},
		{"--c", OpCreate, ""}, {"v", OpVersion, ""}, {"--vers", OpVersion, ""}, {"h", OpHelp, ""}, {"q", OpQuit, ""},
		{"-cre", "", "No command specified: unknown argument -cre"},
		{"-Nx", "", "No command specified: unknown argument -Nx"},
		{"listx", "", "No command specified: unknown argument listx"},
		{"---list", "", "No command specified: unknown argument ---list"},
	} {
		c, err := ParseArgs([]string{tc.arg})
		switch {
		case tc.err != "" && (err == nil || err.Msg != tc.err):
			t.Errorf("%s: got %v, want %q", tc.arg, err, tc.err)
		case tc.err == "" && (c == nil || c.Op != tc.op):
			t.Errorf("%s: got %+v %v, want %s", tc.arg, c, err, tc.op)
		}
	}
}

// "ipset -q help [TYPE]" prints the common part only (what "ipset help
// bogus" prints before its error), with status 0.
func TestQuietHelp(t *testing.T) {
	text, err := TypeHelp("bogus")
	if err == nil {
		t.Fatal("help bogus: no error")
	}
	if q := QuietHelp(); q != text || !strings.HasSuffix(q, "of standard output (list/save).\n") || strings.Contains(q, "Supported set types") {
		t.Errorf("quiet help:\n%q", q)
	}
}

// bitmap:ip,mac reads "ADDR/32" as a plain address and then refuses the
// prefix for every command, after the parse of the element and options
// and before the set's own refusal of an option.
func TestBitmapIPMacHostPrefix(t *testing.T) {
	st := &State{}
	msg := func(op string) string {
		return "ipset v7.17: IP/CIDR range is not allowed in command " + op + " with set type bitmap:ip,mac and family inet\n"
	}
	for _, tc := range []struct{ line, out, err string }{
		{"create bm bitmap:ip,mac range 198.51.100.0/28", "", ""},
		{"add bm 198.51.100.1/32,02:42:ac:11:00:02", "", msg("add")},
		{"add bm 198.51.100.1/32", "", msg("add")},
		{"add bm 198.51.100.99/32", "", msg("add")},
		{"add bm 198.51.100.1/32 timeout 5", "", msg("add")},
		{"add bm 198.51.100.1/32 foo", "", "ipset v7.17: Unknown argument: `foo'\nTry `ipset help' for more information.\n"},
		{"add bm 198.51.100.1/32,zz", "", "ipset v7.17: Syntax error: cannot parse 'zz' as ethernet address\n"},
		{"add bm 198.51.100.1/31", "", "ipset v7.17: Syntax error: plain IP address must be supplied: 198.51.100.1/31\n"},
		{"test bm 198.51.100.1/32", "", msg("test")},
		{"del bm 198.51.100.1/32", "", msg("del")},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	// in a restore: no line number
	cmds, perr := ParseRestore("add bm 198.51.100.2\nadd bm 198.51.100.1/32,02:42:ac:11:00:02\n")
	if perr != nil {
		t.Fatal(perr)
	}
	if _, err := st.Exec(cmds[1]); err == nil {
		t.Errorf("restore line: no error")
	} else if err.Line = cmds[1].Line; Format(err) != msg("add") {
		t.Errorf("restore line: %q", Format(err))
	}
}

// ipset's resolver reads IPv4 parts in decimal and octal, not hex.
func TestIPv4Parts(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, err string }{
		{"create s4 hash:ip", ""},
		{"add s4 0306.063.0144.03", ""},
		{"add s4 198.51.100", ""},
		{"add s4 3325256705", ""},
		{"add s4 0xc6.51.100.6", "ipset v7.17: Syntax error: cannot parse 0xc6.51.100.6: resolving to IPv4 address failed\n"},
		{"add s4 198.51.100.0X2", "ipset v7.17: Syntax error: cannot parse 198.51.100.0X2: resolving to IPv4 address failed\n"},
		{"add s4 0xC6336402", "ipset v7.17: Syntax error: cannot parse 0xC6336402: resolving to IPv4 address failed\n"},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s: got %q, want %q", tc.line, err, tc.err)
		}
	}
}

// ipset's line reader: 1023 bytes at a time, at most 30 words a line.
func TestRestoreLineLimits(t *testing.T) {
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
	cmds, err := ParseRestore(pad("add c 198.51.100.1", 1023) + "x\nadd c 198.51.100.2\n")
	if err != nil || len(cmds) != 3 || cmds[1].Op != OpDestroy || cmds[1].Line != 2 || cmds[2].Line != 3 {
		t.Errorf("1024-byte line: %v %+v", err, cmds)
	}
	if cmds, err := ParseRestore(pad("add c 198.51.100.1", 1022) + "x\n"); err != nil || len(cmds) != 1 {
		t.Errorf("1023-byte line: %v %+v", err, cmds)
	}
	words := "add c 198.51.100.1" + strings.Repeat(" -exist", 27)
	if _, err := ParseRestore(words + "\n"); err != nil {
		t.Errorf("30 words: %v", err)
	}
	if _, err := ParseRestore("create c hash:ip\n" + words + " -exist\n"); err == nil || Format(err) != "ipset v7.17: Line is too long to parse.\nTry `ipset help' for more information.\n" {
		t.Errorf("31 words: %v", err)
	}
	br := bufio.NewReader(strings.NewReader(pad("a", 1023) + "b\nc"))
	var got []string
	for {
		l, ok := ReadLine(br)
		if !ok {
			break
		}
		got = append(got, strings.TrimSpace(l))
	}
	if strings.Join(got, "|") != "a|b|c" {
		t.Errorf("ReadLine: %q", got)
	}
}

// Found by random command lines against ipset 7.17: bitmap:port takes
// TCP and UDP ports only; a protocol named for number 0 is refused by
// the parser, the number 0 with a port other than 0 too; the complaint
// about a host prefix in a later address comes before the set's
// refusal of an option, and test and del word it otherwise; a hash:ip
// test with a comma after a range is the separator's error.
func TestRandomLineAnswers(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create d bitmap:port range 0-1000", "", ""},
		{"add d sctp:9", "", "ipset v7.17: Syntax error: Only protocols TCP and UDP are valid\n"},
		{"add d gre:0", "", "ipset v7.17: Syntax error: Only protocols TCP and UDP are valid\n"},
		{"add d sctp:9 foo", "", "ipset v7.17: Syntax error: Only protocols TCP and UDP are valid\n"},
		{"add d gre:5", "", "ipset v7.17: Syntax error: Protocol gre can be used with pseudo port value 0 only.\n"},
		{"add d 0:9", "", "ipset v7.17: Syntax error: Protocol 0 can be used with pseudo port value 0 only.\n"},
		{"add d ip:9", "", "ipset v7.17: Syntax error: Unsupported protocol 'ip'\n"},
		{"test d sctp:9", "", "ipset v7.17: Syntax error: Only protocols TCP and UDP are valid\n"},
		{"add d udp:10", "", ""},
		{"create p hash:ip,port", "", ""},
		{"add p 198.51.100.1,ip:0", "", "ipset v7.17: Syntax error: Unsupported protocol 'ip'\n"},
		{"add p 198.51.100.1,0:9", "", "ipset v7.17: Syntax error: Protocol 0 can be used with pseudo port value 0 only.\n"},
		{"add p 198.51.100.1,0:0", "", "ipset v7.17: Invalid protocol specified\n"},
		{"create c hash:ip,port,ip", "", ""},
		{"add c 203.0.113.7,tcp:80,198.51.100.1/32 skbprio 1:2", "", "ipset v7.17: There are not allowed options (28) but can't resolve them. It's a bug, please report the problem.\n"},
		{"test c 203.0.113.7,tcp:80,198.51.100.1/32", "", "ipset v7.17: There are not allowed options (28) but option list is empty. It's a bug, please report the problem.\n"},
		{"del c 203.0.113.7,tcp:80,198.51.100.1/32", "", "ipset v7.17: There are not allowed options (28) but option list is empty. It's a bug, please report the problem.\n"},
		{"create a hash:ip", "", ""},
		{"test a 198.51.100.1-198.51.100.4,physdev:eth1", "", "ipset v7.17: Syntax error: Elem separator in 198.51.100.1-198.51.100.4,physdev:eth1, but settype hash:ip supports none.\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// A list:set refuses a list:set member in del too (-exist or not),
// before it looks at before/after; test answers "NOT in set".
func TestListSetDelListMember(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create a list:set", "", ""},
		{"create b list:set", "", ""},
		{"create h hash:ip", "", ""},
		{"del a b", "", "ipset v7.17: Sets with list:set type cannot be added to the set.\n"},
		{"-! del a b", "", "ipset v7.17: Sets with list:set type cannot be added to the set.\n"},
		{"del a b before h", "", "ipset v7.17: Sets with list:set type cannot be added to the set.\n"},
		{"test a b", "", "ipset v7.17: b is NOT in set a.\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// The kernel's answers come after ipset parsed every option: a hash
// too big to allocate after a bad timeout; bitmap:port's range before
// an option the set lacks.
func TestKernelAnswerOrder(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create x hash:ip hashsize 3000000000 timeout 4294967", "", "ipset v7.17: Syntax error: '4294967' is out of range 0-2147483\n"},
		{"create x hash:ip hashsize 3000000000", "", "ipset v7.17: Kernel error received: Cannot allocate memory\n"},
		{"create bp bitmap:port range 1-100", "", ""},
		{"add bp 0 timeout 5", "", "ipset v7.17: Element is out of the range of the set\n"},
		{"add bp 0 comment a", "", "ipset v7.17: Element is out of the range of the set\n"},
		// the end of a range is checked after the options the set lacks
		{"add bp 50-200 packets 1", "", "ipset v7.17: Packet/byte counters cannot be used: set was created without counter support\n"},
		{"add bp 200-50 packets 1", "", "ipset v7.17: Element is out of the range of the set\n"},
		{"add bp 50-200", "", "ipset v7.17: Element is out of the range of the set\n"},
		{"add bp 0 timeout x", "", "ipset v7.17: Syntax error: 'x' is invalid as number\n"},
		{"create bi bitmap:ip range 198.51.100.0/28", "", ""},
		{"add bi 198.51.100.99 comment a", "", "ipset v7.17: Comment cannot be used: set was created without comment support\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// An ICMP protocol of the other family: ipset's parser goes on, so a
// later dimension's syntax error follows its message; without one, test
// fails with an error, not "NOT in set".
func TestICMPOtherFamily(t *testing.T) {
	st := &State{}
	const icmp6 = "ipset v7.17: Syntax error: Protocol ICMPv6 can be used with family inet6 only\n"
	const icmp4 = "ipset v7.17: Syntax error: Protocol ICMP can be used with family inet only\n"
	for _, tc := range []struct{ line, out, err string }{
		{"create c hash:ip,port,ip", "", ""},
		{"create n hash:ip,port,net", "", ""},
		{"create p6 hash:ip,port family inet6", "", ""},
		{"add c 203.0.113.7,icmpv6:echo-request,198.51.100.0/24", "", icmp6 + "Syntax error: plain IP address must be supplied: 198.51.100.0/24\n"},
		{"test n 203.0.113.7,icmpv6:echo-request,198.51.100.0/33", "", icmp6 + "Syntax error: '33' is out of range 0-32\n"},
		{"add c 203.0.113.7,icmpv6:echo-request,198.51.100.1", "", icmp6 + "Invalid add command: missing setname\n"},
		{"test n 203.0.113.7,icmpv6:echo-request,198.51.100.1", "", icmp6 + "Invalid test command: missing setname\n"},
		{"test c 203.0.113.7,icmpv6:echo-request,198.51.100.1", "", "ipset v7.17: There are missing mandatory flags but can't check them. It's a bug, please report the problem.\n"},
		{"test p6 2001:db8::1,icmp:echo-request", "", "ipset v7.17: There are missing mandatory flags but can't check them. It's a bug, please report the problem.\n"},
		// after the options' parse, before test's check of a prefix
		{"add c 203.0.113.7,icmpv6:echo-request,198.51.100.1 foo", "", "ipset v7.17: Unknown argument: `foo'\nTry `ipset help' for more information.\n"},
		{"test p6 2001:db8::1/128,icmp:echo-request", "", "ipset v7.17: There are missing mandatory flags but can't check them. It's a bug, please report the problem.\n"},
		// the later dimensions are read as IPv4, whatever the family
		{"create c6 hash:ip,port,ip family inet6", "", ""},
		{"create n6 hash:ip,port,net family inet6", "", ""},
		{"add c6 2001:db8::1,icmp:ping,2001:db8::2", "", icmp4 + "Syntax error: cannot parse 2001:db8::2: resolving to IPv4 address failed\n"},
		{"add c6 2001:db8::1,icmp:ping,198.51.100.2", "", icmp4 + "Invalid add command: missing setname\n"},
		{"test n6 2001:db8::1,icmp:ping,2001:db8::/64", "", icmp4 + "Syntax error: '64' is out of range 0-32\n"},
		{"add c 203.0.113.7,icmpv6:echo-request,2001:db8::1", "", icmp6 + "Syntax error: cannot parse 2001:db8::1: resolving to IPv4 address failed\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// rename: the kernel refuses a set in use before it looks at the new
// name.
func TestRenameBusyFirst(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create a hash:ip", "", ""},
		{"create b hash:ip", "", ""},
		{"create l list:set", "", ""},
		{"add l a", "", ""},
		{"rename a b", "", "ipset v7.17: Set cannot be renamed: it is in use by another system\n"},
		{"rename l a", "", "ipset v7.17: Set cannot be renamed: a set with the new name already exists\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// list:set: a comma at either end of a member separates nothing; add
// looks for the member referred to (among the others) before it looks
// whether the member is there.
func TestListSetPositionEdges(t *testing.T) {
	st := &State{}
	const notAdded = "ipset v7.17: The set to which you referred with 'before' or 'after' is not added to the set.\n"
	for _, tc := range []struct{ line, out, err string }{
		{"create l list:set", "", ""},
		{"create a hash:ip", "", ""},
		{"create b hash:ip", "", ""},
		{"create c hash:ip", "", ""},
		{"add l a,", "", "ipset v7.17: Set to be added/deleted/tested as element does not exist.\n"},
		{"add l a, nomatch", "", "ipset v7.17: Unknown argument: `nomatch'\nTry `ipset help' for more information.\n"},
		{"test l a,", "", "ipset v7.17: a, is NOT in set l.\n"},
		{"add l a", "", ""},
		{"add l b", "", ""},
		{"add l a,after,b", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add l a,after,c", "", notAdded},
		{"-! add l a,after,c", "", notAdded},
		{"add l a,after,a", "", notAdded},
		{"add l c,after,c", "", notAdded},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// list:set: -exist del does not ignore a position that does not hold;
// -exist add of a member sets its timeout again.
func TestListSetExist(t *testing.T) {
	st := &State{}
	const notAdded = "ipset v7.17: The set to which you referred with 'before' or 'after' is not added to the set.\n"
	for _, tc := range []struct{ line, out, err string }{
		{"create l list:set timeout 5", "", ""},
		{"create a hash:ip", "", ""},
		{"create b hash:ip", "", ""},
		{"create c hash:ip", "", ""},
		{"add l a", "", ""},
		{"add l b", "", ""},
		{"-exist del l a,after,b", "", notAdded},
		{"-exist del l c,after,a", "", notAdded},
		{"-exist del l c", "", ""},
		{"add l c timeout 0", "", ""},
		{"-exist add l c timeout 7", "", ""},
		{"save l", "create l list:set size 8 timeout 5\nadd l a timeout 5\nadd l b timeout 5\nadd l c timeout 7\n", ""},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

// In a restore, ipset's report of an error replaces what it reported
// before for the line: of several messages the last is printed after
// the line number; checks of its command parser print no line.
func TestRestoreLastMessage(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"create s hash:ip netmask 33\n", "ipset v7.17: Error in line 1: Syntax error: netmask is out of the inclusive range of 1-32\n"},
		{"create p hash:ip,port family inet6\nadd p 2001:db8::1,icmp:ping\n", "ipset v7.17: Error in line 2: Invalid add command: missing setname\n"},
		{"create p hash:ip,port family inet6\ntest p 2001:db8::1,icmp:ping\n", "ipset v7.17: There are missing mandatory flags but can't check them. It's a bug, please report the problem.\n"},
		{"create p hash:ip,port\nadd p 198.51.100.1,99999\n", "ipset v7.17: Syntax error: '99999' is out of range 0-65535\nSyntax error: 'tcp' is invalid as number\ncannot parse '99999' as a tcp port\n"},
	} {
		st := &State{}
		got := ""
		for _, c := range RestoreCommands(tc.file) {
			if _, err := st.Exec(c); err != nil {
				err.Line = c.Line
				got = Format(err)
				break
			}
		}
		if got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.file, got, tc.want)
		}
	}
}

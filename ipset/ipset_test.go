package ipset

import (
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// run applies a command line to st and returns stdout and the error as
// ipset prints it (expected strings measured with ipset 7.17).
func run(t *testing.T, st *State, line string) (string, string) {
	t.Helper()
	c, err := ParseArgs(SplitLine(line))
	if err != nil {
		return "", Format(err)
	}
	var b strings.Builder
	if c.Op == OpList || c.Op == OpSave {
		sets, err := st.Select(c)
		if err != nil {
			return "", Format(err)
		}
		st.Write(&b, c, sets)
		return b.String(), ""
	}
	out, e := st.Exec(c)
	if e != nil {
		return out, Format(e)
	}
	return out, ""
}

func TestMessages(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create a hash:ip", "", ""},
		{"add a 10.0.0.1", "", ""},
		{"add a 10.0.0.1", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add a 1.1.1.300", "", "ipset v7.17: Syntax error: cannot parse 1.1.1.300: resolving to IPv4 address failed\n"},
		{"del a 9.9.9.9", "", "ipset v7.17: Element cannot be deleted from the set: it's not added\n"},
		{"test a 10.0.0.1", "Warning: 10.0.0.1 is in set a.\n", ""},
		{"create n hash:net", "", ""},
		{"add n 10.0.0.0/33", "", "ipset v7.17: Syntax error: '33' is out of range 0-32\n"},
		{"add n 10.0.0.0/0", "", "ipset v7.17: The value of the CIDR parameter of the IP address is invalid\n"},
		{"create p hash:ip,port", "", ""},
		{"add p 10.0.0.1", "", "ipset v7.17: Syntax error: Second element is missing from 10.0.0.1.\n"},
		{"add p 10.0.0.1,99999", "", "ipset v7.17: Syntax error: '99999' is out of range 0-65535\nSyntax error: 'tcp' is invalid as number\ncannot parse '99999' as a tcp port\n"},
		{"add p 10.0.0.1,icmp:8", "", "ipset v7.17: Cannot parse 8 as an ICMP type/code.\n"},
		{"add p 1.1.1.1,47:5", "", "ipset v7.17: Syntax error: Protocol 47 can be used with pseudo port value 0 only.\n"},
		{"create bi bitmap:ip", "", "ipset v7.17: Mandatory option `range' is missing\nTry `ipset help' for more information.\n"},
		{"create x hash:foo", "", "ipset v7.17: Syntax error: typename 'hash:foo' is unknown\n"},
		{"bogus", "", "ipset v7.17: No command specified: unknown argument bogus\nTry `ipset help' for more information.\n"},
		{"add", "", "ipset v7.17: Missing mandatory argument to command add\nTry `ipset help' for more information.\n"},
		{"-o json list", "", "ipset v7.17: Syntax error: unknown output mode 'json'\n"},
		{"add a 1.2.3.4 timeout 5", "", "ipset v7.17: Timeout cannot be used: set was created without timeout support\n"},
		{"add a 1.2.3.5 nomatch", "", "ipset v7.17: Unknown argument: `nomatch'\nTry `ipset help' for more information.\n"},
		{"swap a n", "", "ipset v7.17: The sets cannot be swapped: their type does not match\n"},
		// the kernel compares what the elements hold, not the type
		{"create bm bitmap:ip range 10.0.0.0/28", "", ""},
		{"swap a bm", "", ""},
		{"test bm 10.0.0.1", "Warning: 10.0.0.1 is in set bm.\n", ""},
		{"swap a bm", "", ""},
		{"create a6 hash:ip family inet6", "", ""},
		{"swap a6 bm", "", "ipset v7.17: The sets cannot be swapped: their type does not match\n"},
		{"create pm bitmap:port range 1-10", "", ""},
		{"swap pm p", "", "ipset v7.17: The sets cannot be swapped: their type does not match\n"},
		{"create ipn hash:ip,port,net", "", ""},
		{"create npn hash:net,port,net", "", ""},
		{"swap ipn npn", "", ""},
		{"swap ipn p", "", "ipset v7.17: The sets cannot be swapped: their type does not match\n"},
		{"create ipm hash:ip,mac", "", ""},
		{"create bim bitmap:ip,mac range 10.0.0.0/28", "", ""},
		{"swap ipm bim", "", ""},
		{"destroy nope", "", "ipset v7.17: The set with the given name does not exist\n"},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s: got %q %q, want %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

func TestSaveAndNomatch(t *testing.T) {
	st := &State{}
	for _, l := range []string{
		"create n hash:net counters comment timeout 0 initval 0xf9e26858",
		"add n 10.0.0.5/24",
		`add n 10.1.0.0-10.1.2.255 comment "x y"`,
		"add n 10.2.0.0/16 nomatch",
		"add n 10.2.3.0/24",
		"create p hash:ip,port initval 1",
		"add p 10.0.0.1,http",
		"add p 10.0.0.1,icmp:ping",
		"add p 10.0.0.1,47:0",
		"create bp bitmap:port range 1-1024",
		"add bp tcp:22",
	} {
		if _, err := run(t, st, l); err != "" {
			t.Fatalf("%s: %s", l, err)
		}
	}
	got, _ := run(t, st, "-s save")
	want := `create n hash:net family inet hashsize 1024 maxelem 65536 timeout 0 counters comment bucketsize 12 initval 0xf9e26858
add n 10.0.0.0/24 timeout 0 packets 0 bytes 0
add n 10.1.0.0/23 timeout 0 packets 0 bytes 0 comment "x y"
add n 10.1.2.0/24 timeout 0 packets 0 bytes 0 comment "x y"
add n 10.2.0.0/16 timeout 0 nomatch packets 0 bytes 0
add n 10.2.3.0/24 timeout 0 packets 0 bytes 0
create p hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x00000001
add p 10.0.0.1,gre:0
add p 10.0.0.1,tcp:80
add p 10.0.0.1,icmp:echo-request
create bp bitmap:port range 1-1024
add bp 22
`
	if got != want {
		t.Errorf("save:\n%s\nwant:\n%s", got, want)
	}
	for addr, in := range map[string]bool{"10.2.1.1": false, "10.2.3.1": true, "10.0.0.9": true, "10.9.0.1": false} {
		_, err := run(t, st, "test n "+addr)
		if (err == "") != in {
			t.Errorf("test %s: %q", addr, err)
		}
	}
	// The lookup set leaves out what nomatch excludes: 10.2.0.0/16 minus
	// 10.2.3.0/24 gives nothing, 10.2.3.0/24 is one piece.
	n := st.Find("n")
	ps := n.piecesOf(true, false, nil)
	if len(ps) != 4 {
		t.Errorf("pieces: %d, want 4 (10.0.0.0/24, 10.1.0.0/23, 10.1.2.0/24, 10.2.3.0/24)", len(ps))
	}
}

// TestNomatchPieces: the nomatch set holds the addresses whose most
// specific entry is a nomatch entry, per group of the other dimensions.
func TestNomatchPieces(t *testing.T) {
	pieces := func(ns NftSet) []string {
		var out []string
		for _, e := range ns.Elems {
			var b strings.Builder
			for _, p := range e.Parts {
				a, _ := netip.AddrFromSlice(p.Key)
				if p.IntervalEnd {
					b.WriteString("-")
				} else if b.Len() > 0 {
					b.WriteString(" ")
				}
				b.WriteString(a.String())
				if p.KeyEnd != nil {
					b.WriteString(fmt.Sprintf("..%x", p.KeyEnd))
				}
			}
			out = append(out, b.String())
		}
		return out
	}
	for _, tc := range []struct {
		lines         []string
		look, nomatch []string
	}{
		{[]string{"create n hash:net", "add n 10.0.0.0/8", "add n 10.1.0.0/16 nomatch", "add n 10.1.2.0/24", "add n 10.1.2.128/25 nomatch"},
			[]string{"10.0.0.0-10.1.0.0", "10.1.2.0-10.1.2.128", "10.2.0.0-11.0.0.0"},
			[]string{"10.1.0.0-10.1.2.0", "10.1.2.128-10.1.3.0", "10.1.3.0-10.2.0.0"}},
		// a nomatch entry without an enclosing one; one at the end of
		// the address space (no end element)
		{[]string{"create n hash:net", "add n 198.51.100.0/24 nomatch", "add n 255.255.255.0/24 nomatch", "add n 255.255.255.255"},
			[]string{"255.255.255.255"},
			[]string{"198.51.100.0-198.51.101.0", "255.255.255.0-255.255.255.255"}},
		{[]string{"create n hash:net", "add n 10.0.0.0/8"}, []string{"10.0.0.0-11.0.0.0"}, nil},
	} {
		st := &State{}
		for _, l := range tc.lines {
			if _, err := run(t, st, l); err != "" {
				t.Fatalf("%s: %s", l, err)
			}
		}
		s := st.Find("n")
		if got := pieces(s.NftSets()[0]); !reflect.DeepEqual(got, tc.look) {
			t.Errorf("%v: lookup pieces %q, want %q", tc.lines, got, tc.look)
		}
		if got := pieces(s.Nomatch(false)); !reflect.DeepEqual(got, tc.nomatch) {
			t.Errorf("%v: nomatch pieces %q, want %q", tc.lines, got, tc.nomatch)
		}
		if ns := s.Nomatch(false).Set; !ns.Interval || ns.Counter || ns.Name != "ipset-nomatch.n" {
			t.Errorf("nomatch set %+v", ns)
		}
	}
	// Concatenations: per group of the other dimensions.
	st := &State{}
	for _, l := range []string{"create np hash:net,port", "add np 10.0.0.0/8,tcp:80", "add np 10.1.0.0/16,tcp:80 nomatch", "add np 10.1.0.0/16,udp:53 nomatch"} {
		if _, err := run(t, st, l); err != "" {
			t.Fatalf("%s: %s", l, err)
		}
	}
	nm := st.Find("np").Nomatch(false)
	if len(nm.Elems) != 2 || !nm.Set.Concatenation || !nm.Set.Interval {
		t.Errorf("hash:net,port nomatch set: %+v", nm)
	}
	for _, e := range nm.Elems {
		if len(e.Parts) != 1 || e.Parts[0].KeyEnd == nil {
			t.Errorf("concatenated piece %+v: want one element with a key end", e.Parts)
		}
	}
}

func TestRestoreParse(t *testing.T) {
	// A word that starts with '#' is a word like another (ipset 7.17): a
	// trailing "# c" is an unknown argument where options are parsed, a
	// comment "#tag" is a comment, a set name "#x" a name.
	cmds, err := ParseRestore("create a hash:ip comment\nadd a 1.1.1.1 # c\nadd a 1.1.1.2 comment \"#tag\"\nadd a 1.1.1.3 comment #x\ndel a 1.1.1.2 #x\n")
	if err != nil {
		t.Fatal(err)
	}
	st := &State{}
	for i, want := range []string{"", "ipset v7.17: Unknown argument: `#'\nTry `ipset help' for more information.\n", "", "",
		"ipset v7.17: Unknown argument: `#x'\nTry `ipset help' for more information.\n"} {
		got := ""
		if _, e := st.Exec(cmds[i]); e != nil {
			got = Format(e)
		}
		if got != want {
			t.Errorf("line %d: got %q, want %q", i+1, got, want)
		}
	}
	if got := st.Find("a").Lookup(Elem{{Addr: netip.MustParseAddr("1.1.1.2")}}); got == nil || got.Comment != "#tag" {
		t.Errorf("comment \"#tag\": %+v", got)
	}
	_, err = ParseRestore("flush a #x\n")
	if got := Format(err); got != "ipset v7.17: Unknown argument #x\nTry `ipset help' for more information.\n" {
		t.Errorf("got %q", got)
	}
	_, err = ParseRestore("create zz hash:ip\nadd zz\n")
	if got := Format(err); got != "ipset v7.17: Missing second mandatory argument to command add\nTry `ipset help' for more information.\n" {
		t.Errorf("got %q", got)
	}
}

// A line ipset refuses as it reads it is the last command, run after
// the lines before it: their errors come first (ipset 7.17 runs a
// restore line by line).
func TestRestoreCommandsRefusedLine(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // Format of each command's error, in order
	}{
		{"add nosuch 198.51.100.1\nbogus\n", []string{
			"ipset v7.17: Error in line 1: The set with the given name does not exist\n",
			"ipset v7.17: No command specified: unknown argument bogus\nTry `ipset help' for more information.\n"}},
		{"create a hash:ip\n\ncreate a hash:ip\ndel a\n", []string{
			"",
			"ipset v7.17: Error in line 3: Set cannot be created: set with the same name already exists\n",
			"ipset v7.17: Missing second mandatory argument to command del\nTry `ipset help' for more information.\n"}},
		{"create a hash:ip\nlist -o json\n", []string{
			"",
			"ipset v7.17: Error in line 2: Syntax error: unknown output mode 'json'\n"}},
		{"create a hash:ip\nversion\nadd a 198.51.100.1\n", []string{
			"",
			"ipset v7.17: Command `version' is invalid in restore mode.\nTry `ipset help' for more information.\n"}},
	} {
		cmds := RestoreCommands(tc.file)
		if len(cmds) != len(tc.want) {
			t.Errorf("%q: %d commands, want %d", tc.file, len(cmds), len(tc.want))
			continue
		}
		st := &State{}
		for i, c := range cmds {
			got := ""
			if _, e := st.Exec(c); e != nil {
				if e.Status != StatusUsage {
					e.Line = c.Line
				}
				got = Format(e)
			}
			if got != tc.want[i] {
				t.Errorf("%q command %d: got %q, want %q", tc.file, i, got, tc.want[i])
			}
		}
		// ParseRestore stops with the refusal
		if _, err := ParseRestore(tc.file); err == nil || Format(err) != Format(cmds[len(cmds)-1].Err) {
			t.Errorf("%q: ParseRestore: %v", tc.file, err)
		}
	}
}

// ipset takes the global options first, wherever they are, then the
// command and its arguments.
func TestParseArgsOptionsFirst(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus", "-o", "json"}, "ipset v7.17: Syntax error: unknown output mode 'json'\n"},
		{[]string{"bogus", "-f"}, "ipset v7.17: Missing mandatory argument to option -f\nTry `ipset help' for more information.\n"},
		{[]string{"-f", "a", "bogus", "-f", "b"}, "ipset v7.17: -file option cannot be used when full io is activated\nTry `ipset help' for more information.\n"},
		{[]string{"-f", "a", "-file", "b", "restore"}, "ipset v7.17: -file option cannot be used when full io is activated\nTry `ipset help' for more information.\n"},
		{[]string{"-q", "bogus"}, "ipset v7.17: No command specified: unknown argument bogus\nTry `ipset help' for more information.\n"},
	} {
		c, err := ParseArgs(tc.args)
		if err == nil || Format(err) != tc.want || c != nil {
			t.Errorf("%q: got %v %v, want %q", tc.args, c, err, tc.want)
		}
	}
	// the names a command takes are read before a word too many
	N := strings.Repeat("n", 32)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"flush", N, "x"}, "ipset v7.17: Syntax error: setname '" + N + "' is longer than 31 characters\n"},
		{[]string{"swap", N, "b", "c"}, "ipset v7.17: Syntax error: setname '" + N + "' is longer than 31 characters\n"},
		{[]string{"destroy", "a", N}, "ipset v7.17: Unknown argument " + N + "\nTry `ipset help' for more information.\n"},
	} {
		if _, err := ParseArgs(tc.args); err == nil || Format(err) != tc.want {
			t.Errorf("%q: %v", tc.args, err)
		}
	}
	// an error in the arguments comes with the command (list and save
	// open their file first)
	c, err := ParseArgs([]string{"list", "a", "b", "-f", "out"})
	if err == nil || c == nil || c.Op != OpList || c.Opts.File != "out" {
		t.Errorf("list a b -f out: %+v %v", c, err)
	}
}

// create checks every word and that each option that takes a value has
// one, and parses the family options, before it parses the others.
func TestCreateOptionPasses(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, err string }{
		{"create x hash:ip timeout abc hashsize", "ipset v7.17: Missing mandatory argument of option `hashsize'\nTry `ipset help' for more information.\n"},
		{"create x hash:ip initval 0x1 initval 0x1 hashsize", "ipset v7.17: Missing mandatory argument of option `hashsize'\nTry `ipset help' for more information.\n"},
		{"create x hash:ip timeout abc family inet7", "ipset v7.17: Syntax error: unknown inet family inet7\n"},
		{"create x hash:ip family inet family inet6 timeout", "ipset v7.17: Syntax error: family already specified\n"},
		{"create x hash:ip timeout abc family inet6 -6", "ipset v7.17: Syntax error: -6 already specified\n"},
		{"create x hash:ip timeout abc -6", "ipset v7.17: Syntax error: 'abc' is invalid as number\n"},
		{"create x hash:ip foo hashsize", "ipset v7.17: Unknown argument: `foo'\nTry `ipset help' for more information.\n"},
		{"create x hash:ip initval 0x1 initval 0x1", "ipset v7.17: Syntax error: initval already specified\n"},
		// netmask is parsed in its place (the family is known by then)
		{"create y hash:ip netmask 33 timeout abc", "ipset v7.17: Syntax error: '33' is out of range 1-32\nSyntax error: netmask is out of the inclusive range of 1-32\n"},
		{"create y hash:ip netmask 33 netmask 33", "ipset v7.17: Syntax error: '33' is out of range 1-32\nSyntax error: netmask is out of the inclusive range of 1-32\n"},
		{"create y bitmap:ip netmask 33", "ipset v7.17: Syntax error: '33' is out of range 1-32\nSyntax error: netmask is out of the inclusive range of 1-32\n"},
		{"create y hash:ip netmask 120 -6", ""},
		{"create x hash:ip hashsize 64 -6 timeout 5", ""},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s:\n got %q\nwant %q", tc.line, err, tc.err)
		}
	}
	if s := st.Find("x"); s == nil || s.Family != Inet6 || s.Timeout != 5 {
		t.Errorf("x: %+v", s)
	}
}

// Findings of the generated differential test (TestGeneratedIpsetDiff).
func TestGeneratedFindings(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		// "physdev:" alone is an interface: the empty name
		{"create ni hash:net,iface", "", ""},
		{"add ni 198.51.100.0/24,physdev:", "", ""},
		{"test ni 198.51.100.1,physdev:", "Warning: 198.51.100.1, is in set ni.\n", ""},
		{"add ni 198.51.100.0/24,physdev: bytes 1", "", "ipset v7.17: Packet/byte counters cannot be used: set was created without counter support\n"},
		// a bitmap range without '-' or '/' is refused whatever it is
		{"create br bitmap:ip range comment", "", "ipset v7.17: Syntax error: IP/cidr or IP-IP range must be specified: comment\n"},
		{"create br bitmap:ip,mac range 2001:db8::1", "", "ipset v7.17: Syntax error: IP/cidr or IP-IP range must be specified: 2001:db8::1\n"},
		// an option's missing value comes before its repetition
		{"add ni 198.51.100.0/25,eth0 comment x comment", "", "ipset v7.17: Missing mandatory argument of option `comment'\nTry `ipset help' for more information.\n"},
		{"add ni 198.51.100.0/25,eth0 timeout abc timeout", "", "ipset v7.17: Syntax error: 'abc' is invalid as number\n"},
		{"save ni", "create ni hash:net,iface family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x811c9dc5\nadd ni 198.51.100.0/24,physdev:\n", ""},
	} {
		out, err := run(t, st, tc.line)
		if tc.line == "save ni" {
			out = regexp.MustCompile(`initval 0x[0-9a-f]+`).ReplaceAllString(out, "initval 0x811c9dc5")
		}
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	// a bitmap:ip,mac entry without MAC in a set with timeout is taken
	// for expired by add and del
	for _, tc := range []struct{ line, err string }{
		{"create bm bitmap:ip,mac range 198.51.100.0/28 timeout 100", ""},
		{"add bm 198.51.100.1", ""},
		{"add bm 198.51.100.1", ""},
		{"del bm 198.51.100.1", "ipset v7.17: Element cannot be deleted from the set: it's not added\n"},
		{"del bm 198.51.100.1", "ipset v7.17: Element cannot be deleted from the set: it's not added\n"},
		{"add bm 198.51.100.2 timeout 0", ""},
		{"add bm 198.51.100.2", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add bm 198.51.100.3,00:11:22:33:44:55", ""},
		{"add bm 198.51.100.3", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s:\n got %q\nwant %q", tc.line, err, tc.err)
		}
	}
	if n := len(st.Find("bm").Entries); n != 2 {
		t.Errorf("bm: %d entries, want 2", n)
	}
	// save's members come with -terse too, without their heading
	for _, tc := range []struct{ line, out string }{
		{"save -o plain -t ni", "Name: ni\nType: hash:net,iface\nRevision: 8\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x811c9dc5\nSize in memory: 488\nReferences: 0\nNumber of entries: 1\n198.51.100.0/24,physdev:\n"},
		{"save -o xml -t ni", "<ipsets>\n<ipset name=\"ni\">\n<type>hash:net,iface</type>\n<revision>8</revision>\n<header><family>inet</family><hashsize>1024</hashsize><maxelem>65536</maxelem><bucketsize>12</bucketsize><initval>0x811c9dc5</initval>\n<memsize>488</memsize>\n<references>0</references>\n<numentries>1</numentries>\n</header>\n<member><elem>198.51.100.0/24,physdev:</elem></member>\n</ipset>\n</ipsets>\n"},
		{"list -o plain -t ni", "Name: ni\nType: hash:net,iface\nRevision: 8\nHeader: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x811c9dc5\nSize in memory: 488\nReferences: 0\nNumber of entries: 1\n"},
	} {
		out, _ := run(t, st, tc.line)
		out = regexp.MustCompile(`initval( |>)0x[0-9a-f]+`).ReplaceAllString(out, "initval${1}0x811c9dc5")
		out = regexp.MustCompile(`(Size in memory: |<memsize>)\d+`).ReplaceAllString(out, "${1}488")
		if out != tc.out {
			t.Errorf("%s:\n got %q\nwant %q", tc.line, out, tc.out)
		}
	}
	// a /0 is echoed as written, the other dimensions as parsed
	np := NewSet("np", LookupType("hash:net,port"))
	if got := EchoElem(np, "198.51.100.1/0,81"); got != "198.51.100.1/0,tcp:81" {
		t.Errorf("echo of a /0: %q", got)
	}
	// a COMMIT line is marked on the command after it
	if cmds := RestoreCommands("create a hash:ip\nCOMMIT\n\nadd a 198.51.100.1\nadd a 198.51.100.2\n"); len(cmds) != 3 || cmds[0].AfterCommit || !cmds[1].AfterCommit || cmds[2].AfterCommit {
		t.Errorf("COMMIT: %+v", cmds)
	}
	// an unknown output mode is printed even with -q
	if _, err := ParseArgs([]string{"-q", "-o", "json", "list"}); err == nil || !err.Loud {
		t.Errorf("-o json: %+v", err)
	}
	if _, err := ParseArgs([]string{"-q", "list", "-o"}); err == nil || !err.Loud {
		t.Errorf("-o: %+v", err)
	}
	if _, err := ParseArgs([]string{"-q", "list", "-f"}); err == nil || err.Loud {
		t.Errorf("-f: %+v", err)
	}
	// -f takes no word that looks like an option as its file; the
	// message names the option by its short name
	for _, args := range [][]string{{"list", "-f", "-t"}, {"list", "--file"}} {
		if _, err := ParseArgs(args); err == nil || Format(err) != "ipset v7.17: Missing mandatory argument to option -f\nTry `ipset help' for more information.\n" {
			t.Errorf("%q: %v", args, err)
		}
	}
	if c, err := ParseArgs([]string{"list", "-f", "-"}); err != nil || c.Opts.File != "-" {
		t.Errorf("list -f -: %+v %v", c, err)
	}
	// a list:set member with a comma but no position is refused by
	// ipset's parser: before a later line's lookup of a missing set
	file := "create l list:set\nadd l 198.51.100.1,80\nadd nosuch 198.51.100.1\n"
	cmds := RestoreCommands(file)
	st = &State{}
	st.Exec(cmds[0])
	if _, err := st.Exec(cmds[1]); err == nil || !ParseError(err) {
		t.Errorf("%q: %+v", file, err)
	}
}

// A set created takes the first free slot, and listings go by slot
// (list:set sets last) even for sets created since the state was read.
func TestListingBySlot(t *testing.T) {
	st := &State{}
	for _, l := range []string{"create d hash:ip", "create a hash:ip", "create c list:set", "create e list:set", "destroy c", "destroy d", "create c list:set", "create x hash:ip"} {
		if _, err := run(t, st, l); err != "" {
			t.Fatalf("%s: %s", l, err)
		}
	}
	if out, _ := run(t, st, "list -n"); out != "a\nx\nc\ne\n" {
		t.Errorf("list -n: %q", out)
	}
}

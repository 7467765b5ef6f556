package ipset

import (
	"strings"
	"testing"
	"time"
)

// Expected strings below were measured with ipset 7.17.

// bitmap:ip,mac takes entries without MAC, one entry per address.
func TestBitmapIPMacWithoutMAC(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create bmm bitmap:ip,mac range 198.51.100.0/24", "", ""},
		{"add bmm 198.51.100.9", "", ""},
		{"add bmm 198.51.100.2", "", ""},
		{"add bmm 198.51.100.2,00:11:22:33:44:55", "", ""}, // fills the MAC
		{"add bmm 198.51.100.3,00:11:22:33:44:55", "", ""},
		{"add bmm 198.51.100.3,00:11:22:33:44:66", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"add bmm 198.51.100.9", "", "ipset v7.17: Element cannot be added to the set: it's already added\n"},
		{"test bmm 198.51.100.3", "Warning: 198.51.100.3 is in set bmm.\n", ""},
		{"test bmm 198.51.100.3,00:11:22:33:44:66", "", "ipset v7.17: 198.51.100.3,00:11:22:33:44:66 is NOT in set bmm.\n"},
		{"add bmm 198.51.100.4,00:00:00:00:00:00", "", ""},
		{"list bmm", "Name: bmm\nType: bitmap:ip,mac\nRevision: 3\nHeader: range 198.51.100.0-198.51.100.255\nSize in memory: 2160\nReferences: 0\nNumber of entries: 4\nMembers:\n" +
			"198.51.100.2,00:11:22:33:44:55\n198.51.100.3,00:11:22:33:44:55\n198.51.100.4,00:00:00:00:00:00\n198.51.100.9\n", ""},
		{"del bmm 198.51.100.3,00:11:22:33:44:77", "", ""}, // by address
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
	// The nftables form does not panic and reads back without MAC.
	s := st.Find("bmm")
	for _, ns := range s.NftSets() {
		for _, el := range ns.Elems {
			en, ok := s.DecodeEntry(el.Parts[0])
			if !ok {
				t.Fatalf("decode %v", el)
			}
			if en.Elem[0].Addr.String() == "198.51.100.9" && en.Elem[1].HasMAC {
				t.Errorf("198.51.100.9 read back with a MAC")
			}
		}
	}
}

// Counters and skbinfo given at add are kept with the element.
func TestCountersSkbinfoStored(t *testing.T) {
	st := &State{}
	run(t, st, "create sk hash:ip skbinfo counters comment")
	if _, err := run(t, st, `add sk 198.51.100.1 skbmark 0x1/0xff skbprio 1:10 skbqueue 3 packets 10 bytes 1000 comment "a b"`); err != "" {
		t.Fatal(err)
	}
	s := st.Find("sk")
	ns := s.NftSets()[0]
	el := ns.Elems[0].Parts[0]
	if el.Counter == nil || el.Counter.Packets != 10 || el.Counter.Bytes != 1000 {
		t.Errorf("counter %+v", el.Counter)
	}
	en, ok := s.DecodeEntry(el)
	if !ok {
		t.Fatal("decode")
	}
	var b strings.Builder
	WriteMember(&b, &Command{Op: OpList}, s, en)
	if want := "198.51.100.1 packets 10 bytes 1000 comment \"a b\" skbmark 0x1/0xff skbprio 1:10 skbqueue 3\n"; b.String() != want {
		t.Errorf("got %q want %q", b.String(), want)
	}
	// Zero values are not printed.
	run(t, st, "add sk 198.51.100.3 skbmark 0xffffffff/0xffffffff skbprio 0:0 skbqueue 0")
	en = st.Find("sk").Lookup(Elem{{Addr: en.Elem[0].Addr.Next().Next(), Bits: 32}})
	if got := strings.Join(s.EntryOptions(en), " "); got != "packets 0 bytes 0 skbmark 0xffffffff" {
		t.Errorf("options %q", got)
	}
	for _, tc := range []struct{ line, err string }{
		{"add sk 198.51.100.6 skbmark 5", "ipset v7.17: Syntax error: Invalid skbmark format, it should be:  MARK/MASK or MARK (see manpage)\n"},
		{"add sk 198.51.100.6 skbprio 1", "ipset v7.17: Syntax error: Invalid skbprio format, it should be:MAJOR:MINOR (see manpage)\n"},
		{"add sk 198.51.100.6 skbqueue 65536", "ipset v7.17: Syntax error: '65536' is out of range 0-65535\n"},
		{"add sk 198.51.100.6 packets -1", "ipset v7.17: Syntax error: '-1' is out of range 0-18446744073709551614\n"},
		{"add sk 198.51.100.6 packets 18446744073709551616", "ipset v7.17: Syntax error: '18446744073709551616' is out of range 0-18446744073709551614\n"},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s: got %q want %q", tc.line, err, tc.err)
		}
	}
}

func TestNumericMessages(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, err string }{
		{"create b hash:ip timeout -1", "ipset v7.17: Syntax error: '-1' is out of range 0-2147483\n"},
		{"create b hash:ip timeout 2147484", "ipset v7.17: Syntax error: '2147484' is out of range 0-2147483\n"},
		{"create b hash:ip timeout 1e3", "ipset v7.17: Syntax error: '1e3' is invalid as number\n"},
		{"create b hash:ip timeout 0b1", "ipset v7.17: Syntax error: '0b1' is invalid as number\n"},
		{"create b hash:ip timeout 1_0", "ipset v7.17: Syntax error: '1_0' is invalid as number\n"},
		{"create b hash:ip hashsize -1", "ipset v7.17: Syntax error: '-1' is out of range 0-4294967295\n"},
		{"create b hash:ip maxelem 4294967296", "ipset v7.17: Syntax error: '4294967296' is out of range 0-4294967295\n"},
		{"create b hash:ip bucketsize 256", "ipset v7.17: Syntax error: '256' is out of range 0-255\n"},
		{"create b hash:ip initval 0x1ffffffff", "ipset v7.17: Syntax error: '0x1ffffffff' is out of range 0-4294967295\n"},
		{"create b hash:ip netmask 33", "ipset v7.17: Syntax error: '33' is out of range 1-32\nSyntax error: netmask is out of the inclusive range of 1-32\n"},
		{"create b hash:ip netmask -1", "ipset v7.17: Syntax error: '-1' is out of range 0-255\nSyntax error: netmask is out of the inclusive range of 1-32\n"},
		{"create b hash:ip family inet6 netmask 129", "ipset v7.17: Syntax error: '129' is out of range 1-128\nSyntax error: netmask is out of the inclusive range of 1-128\n"},
		{"create b hash:ip timeout 0x10", ""},
		{"create c hash:ip timeout 010", ""},
		{"create d hash:ip timeout +5", ""},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s: got %q want %q", tc.line, err, tc.err)
		}
	}
	if got := st.Find("b").Timeout; got != 16 {
		t.Errorf("timeout 0x10 = %d", got)
	}
	if got := st.Find("c").Timeout; got != 8 {
		t.Errorf("timeout 010 = %d", got)
	}
}

func TestTestEchoesParsedElement(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create p hash:ip,port", "", ""},
		{"add p 198.51.100.1,http", "", ""},
		{"test p 198.51.100.1,80", "Warning: 198.51.100.1,tcp:80 is in set p.\n", ""},
		{"test p 198.51.100.1,6:80", "Warning: 198.51.100.1,tcp:80 is in set p.\n", ""},
		{"test p 198.51.100.1,icmp:8/0", "", "ipset v7.17: 198.51.100.1,icmp:echo-request is NOT in set p.\n"},
		{"test p 198.51.100.1,80-81", "", "ipset v7.17: FROM-TO port range is not allowed in command test with set type hash:ip,port and family inet\n"},
		{"create h hash:ip", "", ""},
		{"add h 198.51.100.1", "", ""},
		{"test h 198.51.100.1-198.51.100.2", "Warning: 198.51.100.1-198.51.100.2 is in set h.\n", ""},
		{"test h 198.51.100.0/30", "", "ipset v7.17: 198.51.100.0/30 is NOT in set h.\n"},
		{"create n hash:net", "", ""},
		{"add n 10.0.0.0/8", "", ""},
		{"test n 10.0.0.5/8", "Warning: 10.0.0.5/8 is in set n.\n", ""},
		{"create six hash:net family inet6", "", ""},
		{"add six 2001:db8::/32", "", ""},
		{"test six 2001:0db8::1", "Warning: 2001:db8::1 is in set six.\n", ""},
		{"create bp bitmap:port range 0-100", "", ""},
		{"add bp 22", "", ""},
		{"test bp ssh", "Warning: 22 is in set bp.\n", ""},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

func TestHelpText(t *testing.T) {
	h := Help()
	for _, want := range []string{"\nrestore \n        Restore a saved state\n", "\nversion \n", "\nSupported set types:\n    list:set\t\t3\tskbinfo support\n"} {
		if !strings.Contains(h, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	th, err := TypeHelp("iphash")
	if err != nil || !strings.HasPrefix(th, h[:strings.Index(h, "Supported set types:")]) || !strings.HasSuffix(th, "\nType hash:ip supports inet and inet6.\n") {
		t.Errorf("help iphash: %v\n%s", err, th)
	}
	if th, err := TypeHelp("foo"); err == nil || Format(err) != "ipset v7.17: Unknown settype: `foo'\nTry `ipset help' for more information.\n" || strings.HasSuffix(th, "\n\n") {
		t.Errorf("help foo: %v", err)
	}
}

func TestBitmapMembersInOrder(t *testing.T) {
	st := &State{}
	for _, l := range []string{"create bp bitmap:port range 0-1024", "add bp 90", "add bp 22", "add bp 80-82", "create b bitmap:ip range 198.51.100.0/24", "add b 198.51.100.20", "add b 198.51.100.3"} {
		run(t, st, l)
	}
	out, _ := run(t, st, "save")
	want := "create bp bitmap:port range 0-1024\nadd bp 22\nadd bp 80\nadd bp 81\nadd bp 82\nadd bp 90\n" +
		"create b bitmap:ip range 198.51.100.0-198.51.100.255\nadd b 198.51.100.3\nadd b 198.51.100.20\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// Sets keep their slot: create takes the first free one, rename and swap
// keep each name in its place, and the slot survives the stored header.
func TestSetSlots(t *testing.T) {
	st := &State{}
	for _, l := range []string{"create a hash:ip", "create b hash:ip family inet6", "create c hash:net",
		"create d hash:ip family inet6", "destroy a", "create e hash:ip", "rename c c2", "swap b d"} {
		if _, err := run(t, st, l); err != "" {
			t.Fatalf("%s: %s", l, err)
		}
	}
	var names []string
	for _, s := range st.Sets {
		h, ok := ParseHeader(LookupSetName(s.Name), s.Header())
		if !ok || h.Slot != s.Slot {
			t.Fatalf("%s: header %q does not keep slot %d", s.Name, s.Header(), s.Slot)
		}
		names = append(names, s.Name)
	}
	// A backend reads sets family by family.
	re := &State{}
	for _, fam := range []Family{Inet, Inet6} {
		for _, s := range st.Sets {
			if s.Family == fam {
				re.Sets = append(re.Sets, s)
			}
		}
	}
	re.SortBySlot()
	var got []string
	for _, s := range re.Sets {
		got = append(got, s.Name)
	}
	if strings.Join(got, " ") != "e b c2 d" {
		t.Errorf("order %v (created %v)", got, names)
	}
	if st.Find("b").Family != Inet6 || st.Find("b").Slot != 2 {
		t.Errorf("swap moved b: %+v", st.Find("b"))
	}
}

// A run of adds (dels) to one set in a restore file takes the first
// line's -exist; options may stand anywhere on a line.
func TestRestoreLineOptions(t *testing.T) {
	cmds, err := ParseRestore("create e hash:ip\nadd e 1.2.3.4\nadd -exist e 1.2.3.4\n-! add f 1.2.3.4\nadd f 1.2.3.5\ndel e 1.2.3.4 -exist\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, c := range cmds {
		got = append(got, c.Opts.Exist)
		if len(c.Args) > 0 && strings.HasPrefix(c.Args[0], "-") {
			t.Errorf("line %d: option left in args %v", c.Line, c.Args)
		}
	}
	if want := []bool{false, false, false, true, true, true}; fmtBools(got) != fmtBools(want) {
		t.Errorf("exist flags %v, want %v", got, want)
	}
	if w := SplitLine(`add x 1.2.3.4 comment "unterminated`); len(w) != 4 {
		t.Errorf("unterminated quote: %q", w)
	}
}

func fmtBools(b []bool) string {
	var s []string
	for _, v := range b {
		if v {
			s = append(s, "T")
		} else {
			s = append(s, "F")
		}
	}
	return strings.Join(s, " ")
}

func TestListSetPositions(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, out, err string }{
		{"create a hash:ip", "", ""},
		{"create b hash:ip", "", ""},
		{"create c hash:ip", "", ""},
		{"create l list:set", "", ""},
		{"add l a", "", ""},
		{"add l c before b", "", "ipset v7.17: The set to which you referred with 'before' or 'after' is not added to the set.\n"},
		{"add l c before nope", "", "ipset v7.17: The set to which you referred with 'before' or 'after' does not exist.\n"},
		{"add l c after a", "", ""},
		{"test l c after a", "Warning: c after a is in set l.\n", ""},
		{"test l a before c", "Warning: a after c is in set l.\n", ""}, // ipset echoes "after"
		{"test l c before a", "", "ipset v7.17: c after a is NOT in set l.\n"},
		{"test l c after nope", "", "ipset v7.17: c after nope is NOT in set l.\n"},
		{"del l c after b", "", "ipset v7.17: The set to which you referred with 'before' or 'after' is not added to the set.\n"},
		{"del l c after a", "", ""},
	} {
		out, err := run(t, st, tc.line)
		if out != tc.out || err != tc.err {
			t.Errorf("%s:\n got %q %q\nwant %q %q", tc.line, out, err, tc.out, tc.err)
		}
	}
}

func TestCreateExistSameSet(t *testing.T) {
	st := &State{}
	for _, tc := range []struct{ line, err string }{
		{"create x hash:ip timeout 10", ""},
		{"create -exist x hash:ip timeout 10 hashsize 4096", ""},
		{"create -exist x hash:ip family inet6 timeout 10", ""},
		{"create -exist x hash:ip timeout 10 counters", "ipset v7.17: Set cannot be created: set with the same name already exists\n"},
		{"create -exist x hash:ip timeout 20", "ipset v7.17: Set cannot be created: set with the same name already exists\n"},
		{"create -exist x hash:ip timeout 10 maxelem 5", "ipset v7.17: Set cannot be created: set with the same name already exists\n"},
	} {
		if _, err := run(t, st, tc.line); err != tc.err {
			t.Errorf("%s: got %q want %q", tc.line, err, tc.err)
		}
	}
}

// -sorted orders hash members as ipset does (measured with ipset 7.17).
func TestSortedOrder(t *testing.T) {
	st := &State{}
	for _, l := range []string{"create n hash:net", "add n 198.51.100.0/24", "add n 198.51.100.0/25 nomatch",
		"add n 10.0.0.0/8", "add n 198.51.100.7", "add n 198.51.100.10",
		"create p hash:ip,port", "add p 198.51.100.1,udplite:80", "add p 198.51.100.1,sctp:80", "add p 198.51.100.1,udp:80",
		"add p 198.51.100.1,tcp:8080", "add p 198.51.100.1,tcp:80"} {
		if _, err := run(t, st, l); err != "" {
			t.Fatal(err)
		}
	}
	out, _ := run(t, st, "-s save")
	want := "create n hash:net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x%s\n" +
		"add n 10.0.0.0/8\nadd n 198.51.100.0/25 nomatch\nadd n 198.51.100.0/24\nadd n 198.51.100.7\nadd n 198.51.100.10\n" +
		"create p hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x%s\n" +
		"add p 198.51.100.1,tcp:80\nadd p 198.51.100.1,tcp:8080\nadd p 198.51.100.1,udp:80\nadd p 198.51.100.1,sctp:80\nadd p 198.51.100.1,udplite:80\n"
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "initval 0x"); i >= 0 {
			l = l[:i] + "initval 0x%s"
		}
		got = append(got, l)
	}
	if g := strings.Join(got, "\n"); g != want {
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}
}

// An element in its last second of a timeout lists with timeout 1, as
// ipset (the kernel never reports 0 for an element that times out: 0
// says permanent, and a save restored would keep it for ever).
func TestLastSecondTimeout(t *testing.T) {
	st := &State{}
	run(t, st, "create t hash:ip timeout 600")
	run(t, st, "add t 198.51.100.1 timeout 5")
	s := st.Find("t")
	el := s.NftSets()[0].Elems[0].Parts[0]
	for _, tc := range []struct {
		left time.Duration
		want uint32
	}{{500 * time.Millisecond, 1}, {999 * time.Millisecond, 1}, {time.Second, 1}, {2500 * time.Millisecond, 2}} {
		el.Timeout, el.Expires = 5*time.Second, tc.left
		en, ok := s.DecodeEntry(el)
		if !ok || en.Timeout != tc.want {
			t.Errorf("%v left: timeout %d, want %d", tc.left, en.Timeout, tc.want)
		}
	}
}

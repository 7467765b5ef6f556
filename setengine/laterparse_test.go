package setengine

import (
	"net/netip"
	"testing"

	"github.com/xdptables/xdptables/ipset"
)

// A restore's run of adds to one set is sent once the line after it is
// parsed: a parse error in the run or in that line is ipset 7.17's
// answer instead of the kernel's refusal of the run's first line.
func TestLaterParseError(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"add bt 198.51.100.1\nadd bt 198.51.100.2\nadd bt 198.51.100.300\n",
			"ipset v7.17: Error in line 4: Syntax error: cannot parse 198.51.100.300: resolving to IPv4 address failed\n"},
		{"add bt 198.51.100.1\ntest bt 198.51.100.999\n",
			"ipset v7.17: Error in line 3: Syntax error: cannot parse 198.51.100.999: resolving to IPv4 address failed\n"},
		{"add bt 198.51.100.1\nadd bt 198.51.100.4 bogus\n",
			"ipset v7.17: Unknown argument: `bogus'\nTry `ipset help' for more information.\n"},
		// a line ipset refuses as it reads it ends the run unsent
		{"add bt 198.51.100.1\nbogus\n",
			"ipset v7.17: No command specified: unknown argument bogus\nTry `ipset help' for more information.\n"},
		{"add bt 198.51.100.1\nadd bt\n",
			"ipset v7.17: Missing second mandatory argument to command add\nTry `ipset help' for more information.\n"},
		// a COMMIT line sends the run
		{"add bt 198.51.100.1\nCOMMIT\nadd bt 198.51.100.300\n", ""},
		{"add bt 198.51.100.1\nCOMMIT\nadd nosuch 198.51.100.3\n", ""},
		// the run was sent by a line that parsed: the kernel's answer
		{"add bt 198.51.100.1\nflush bt\nadd bt 198.51.100.999\n", ""},
		{"add bt 198.51.100.1\n", ""},
	} {
		cmds := ipset.RestoreCommands("create bt hash:ip\n" + tc.file)
		st := &ipset.State{}
		if _, err := st.Exec(cmds[0]); err != nil {
			t.Fatal(err)
		}
		st.Find("bt").Insert(&ipset.Entry{Elem: ipset.Elem{{Addr: netip.MustParseAddr("198.51.100.1"), Bits: 32}}})
		if _, err := st.Exec(cmds[1]); err == nil || err.Msg != ipset.MsgElemExists {
			t.Fatalf("%q: first add: %v", tc.file, err)
		}
		got := ""
		if err := laterParseError(st, cmds[2:], cmds[1]); err != nil {
			got = ipset.Format(err)
		}
		if got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.file, got, tc.want)
		}
	}
}

// ipset's checks after the parse of a line are its own, not the
// kernel's: they end the run unsent, and a later line's error does not
// come before them.
func TestLaterUserspaceCheck(t *testing.T) {
	const notAllowed = "ipset v7.17: There are not allowed options (28) but can't resolve them. It's a bug, please report the problem.\n"
	for _, tc := range []struct{ file, want string }{
		{"add c 198.51.100.1,80,198.51.100.2\nadd c 198.51.100.1,80,198.51.100.2/32\n", notAllowed},
		{"add c 198.51.100.1,80,198.51.100.2/32\nadd nosuch 198.51.100.1\n", notAllowed},
	} {
		cmds := ipset.RestoreCommands("create c hash:ip,port,ip\nadd c 198.51.100.1,80,198.51.100.2\n" + tc.file)
		st := &ipset.State{}
		for _, c := range cmds[:2] {
			if _, err := st.Exec(c); err != nil {
				t.Fatal(err)
			}
		}
		var err *ipset.Error
		i := 2
		for ; i < len(cmds); i++ {
			if _, err = st.Exec(cmds[i]); err != nil {
				break
			}
		}
		if err == nil {
			t.Fatalf("%q: no error", tc.file)
		}
		err.Line = cmds[i].Line
		if !ipset.FromUserspace(err) && !lookupErr(cmds[i], err) {
			if perr := laterParseError(st, cmds[i+1:], cmds[i]); perr != nil {
				err = perr
			}
		}
		if got := ipset.Format(err); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.file, got, tc.want)
		}
	}
}

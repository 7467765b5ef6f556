package setengine

import (
	"testing"

	"github.com/xdptables/xdptables/ipset"
)

// ipset looks up the set of an add, del or test line as it parses the
// line: a later line's missing set is answered before the kernel's
// refusal of the batch before it, and a line's own missing set is no
// batch refusal that a later parse error could overtake.
func TestLaterLookupError(t *testing.T) {
	st := &ipset.State{}
	cmds, perr := ipset.ParseRestore("create a hash:ip,port\nadd a 198.51.100.1,tcp:80 packets 1\nadd c 198.51.100.1\n")
	if perr != nil {
		t.Fatal(perr)
	}
	if _, err := st.Exec(cmds[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Exec(cmds[1]); err == nil || err.Msg != ipset.MsgNoCounters {
		t.Fatalf("add with packets: %v", err)
	}
	err := laterParseError(st, cmds[2:], cmds[1])
	if err == nil || err.Msg != ipset.MsgNoSet || err.Line != 3 {
		t.Errorf("later lookup: %+v", err)
	}
	if !lookupErr(cmds[2], &ipset.Error{Msg: ipset.MsgNoSet}) || lookupErr(cmds[0], &ipset.Error{Msg: ipset.MsgNoSet}) {
		t.Errorf("lookupErr")
	}
}

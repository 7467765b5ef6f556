package compat

import (
	"strings"
	"testing"
)

// With --counters iptables-restore reads the [p:b] of built-in chains
// only, as sscanf("[%llu:%llu]") (measured with iptables-nft 1.8.9).
func TestRestoreChainCounters(t *testing.T) {
	for _, c := range []struct {
		line, err string
		want      Counters
	}{
		{":INPUT DROP [+7:-1]", "", Counters{Packets: 7, Bytes: 1<<64 - 1}},
		{":INPUT ACCEPT [1:2]x", "", Counters{Packets: 1, Bytes: 2}},
		{":INPUT - [3:4:5]", "", Counters{Packets: 3, Bytes: 4}},
		{":u1 ACCEPT 1:2", "", Counters{}},
		{":u1 - [1:x]", "", Counters{}},
		{":OUTPUT - 1:2", "invalid policy counters for chain 'OUTPUT'", Counters{}},
		{":INPUT ACCEPT [0x10:2]", "invalid policy counters for chain 'INPUT'", Counters{}},
		{":INPUT ACCEPT [1]", "invalid policy counters for chain 'INPUT'", Counters{}},
		// a user chain's name is checked whatever its policy
		{":ACCEPT DROP [0:0]", "chain name may not clash with target name", Counters{}},
		{": ACCEPT [0:0]", "chain name may not clash with target name", Counters{}},
		{":-x", "chain name not allowed to start with `-'", Counters{}},
	} {
		ts, err := ParseRestore(strings.NewReader("*filter\n"+c.line+"\nCOMMIT\n"), RestoreOptions{Counters: true, Prog: "iptables-restore"})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if got := ts[0].Chains[0].Counters; got != c.want {
			t.Errorf("%s: counters %+v, want %+v", c.line, got, c.want)
		}
	}
}

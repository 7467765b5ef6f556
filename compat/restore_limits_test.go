package compat

import (
	"strings"
	"testing"
)

// limitLine is "-A INPUT" followed by "-m comment --comment c" groups
// and single "-f"/"-i lo"/"-s ADDR" options so that the line has exactly
// n words, ending in "-j ACCEPT".
func limitLine(n int) string {
	words := []string{"-A", "INPUT"}
	for len(words)+4+2 <= n {
		words = append(words, "-m", "comment", "--comment", "c")
	}
	pad := n - len(words) - 2
	if pad%2 == 1 {
		words = append(words, "-f")
		pad--
	}
	pairs := [][]string{{"-i", "lo"}, {"-s", "198.51.100.1"}}
	for i := 0; i < pad/2; i++ {
		words = append(words, pairs[i]...)
	}
	return strings.Join(append(words, "-j", "ACCEPT"), " ")
}

// TestRestoreLineLimits: iptables-restore refuses a line of more than
// 251 words (248 when -c applies the line's [p:b] counters) with "Parser
// cannot handle more arguments", and a word of 1024 bytes or more with
// "Parameter too long!", both parameter problems at that line.
func TestRestoreLineLimits(t *testing.T) {
	long := func(n int) string { return `-A INPUT -m comment --comment "` + strings.Repeat("x", n) + `" -j ACCEPT` }
	for _, tc := range []struct {
		name     string
		line     string
		counters bool
		want     string // "" = accepted
	}{
		{"251 words", limitLine(251), false, ""},
		{"252 words", limitLine(252), false, "Parser cannot handle more arguments"},
		{"251 words, counters not applied", "[1:2] " + limitLine(251), false, ""},
		{"248 words, counters applied", "[1:2] " + limitLine(248), true, ""},
		{"249 words, counters applied", "[1:2] " + limitLine(249), true, "Parser cannot handle more arguments"},
		{"249 words, -c without counters on the line", limitLine(249), true, ""},
		{"1023-byte word", long(1023), false, ""},
		{"1024-byte word", long(1024), false, "Parameter too long!"},
		{"1024-byte unquoted word", "-A INPUT -m comment --comment " + strings.Repeat("y", 1024) + " -j ACCEPT", false, "Parameter too long!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := "*filter\n" + tc.line + "\nCOMMIT\n"
			_, err := ParseRestore(strings.NewReader(file), RestoreOptions{Family: IPv4, Prog: "iptables-restore", Counters: tc.counters})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			got := FormatRestore(err, "iptables-restore")
			want := "iptables-restore v1.8.9 (nf_tables): " + tc.want + "\nError occurred at line: 2\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n"
			if got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

package compat

import (
	"strings"
	"testing"
)

// TestSetDeprecatedOption: libxt_set still reads the old --set option as
// --match-set, and prints "--set option deprecated, please use
// --match-set" on stderr as it reads it (before any later error), for
// every command; the rule prints as --match-set.
func TestSetDeprecatedOption(t *testing.T) {
	const warning = "--set option deprecated, please use --match-set\n"
	for _, c := range []struct {
		args      string
		warnings  int
		wantErr   string
		wantPrint string
	}{
		{"-A INPUT -m set --set s1 src -j DROP", 1, "", "-A INPUT -m set --match-set s1 src -j DROP"},
		{"-C INPUT -m set ! --set s1 src,dst -j DROP", 1, "", "-A INPUT -m set ! --match-set s1 src,dst -j DROP"},
		{"-A INPUT -m set --set s1 -j DROP", 1, "--match-set requires two args.", ""},
		{"-A INPUT -m set --set s1 src --set s1 dst", 2, "--match-set can be specified only once", ""},
		{"-A INPUT -m set --match-set s1 src -j DROP", 0, "", "-A INPUT -m set --match-set s1 src -j DROP"},
	} {
		var warn strings.Builder
		cmd, err := Parse(IPv4, strings.Fields(c.args), ParseOptions{Warn: func(s string) { warn.WriteString(s) }})
		if got := strings.Count(warn.String(), warning); got != c.warnings || warn.Len() != got*len(warning) {
			t.Errorf("%s: warnings %q, want %d of %q", c.args, warn.String(), c.warnings, warning)
		}
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: error %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if got := SaveRule(cmd.Chain, cmd.Rules[0], false); got != c.wantPrint {
			t.Errorf("%s: prints %q, want %q", c.args, got, c.wantPrint)
		}
	}
}

package compat

import (
	"strings"
	"testing"
)

func TestKeptHashlimitSizes(t *testing.T) {
	for _, tc := range []struct{ opts, want string }{
		{"--hashlimit-htable-max 999999999", "--hashlimit-htable-max 1048576"},
		{"--hashlimit-htable-size 1048577 --hashlimit-htable-max 10", "--hashlimit-htable-size 1048576 --hashlimit-htable-max 10"},
		{"--hashlimit-htable-size 1048576", "--hashlimit-htable-size 1048576"},
	} {
		args := append([]string{"-A", "INPUT", "-m", "hashlimit", "--hashlimit-upto", "1/sec", "--hashlimit-name", "X"}, strings.Fields(tc.opts)...)
		cmd, err := Parse(IPv4, args, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := cmd.Rules[0]
		given := ExactSpec(r)
		k := Kept(r)
		if got := ExactSpec(k); !strings.Contains(got, tc.want) {
			t.Errorf("%s: kept as %q, want %q in it", tc.opts, got, tc.want)
		}
		if ExactSpec(r) != given {
			t.Errorf("%s: Kept changed the rule given: %q", tc.opts, ExactSpec(r))
		}
		if (k == r) != (tc.opts == tc.want) {
			t.Errorf("%s: copied %v", tc.opts, k != r)
		}
	}
}

package compat_test

import (
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// TestMatchDPrint checks -S and -L -n rows of the extensions of
// matches_d.txt whose rules the corpus cannot add on the reference in a
// fresh namespace (an nfacct object must exist first; DNPT/SNPT are
// and CONNSECMARK are refused by xdptables, so TestListDiff skips them): the texts are what
// iptables-nft 1.8.9 printed for the same rules.
func TestMatchDPrint(t *testing.T) {
	tests := []struct {
		fam     compat.Family
		args    []string
		save    string
		numeric string
	}{
		{compat.IPv4, []string{"-A", "INPUT", "-m", "nfacct", "--nfacct-name", "http", "-j", "ACCEPT"},
			"-A INPUT -m nfacct --nfacct-name  http -j ACCEPT",
			"ACCEPT     0    --  0.0.0.0/0            0.0.0.0/0            nfacct-name  http\n"},
		{compat.IPv4, []string{"-A", "INPUT", "-m", "nfacct", "--nfacct-name", "a b", "-j", "ACCEPT"},
			"-A INPUT -m nfacct --nfacct-name  \"a b\" -j ACCEPT",
			"ACCEPT     0    --  0.0.0.0/0            0.0.0.0/0            nfacct-name  \"a b\"\n"},
		{compat.IPv6, []string{"-t", "mangle", "-A", "PREROUTING", "-i", "eth0", "-d", "2001:db8:1::/64", "-j", "DNPT", "--src-pfx", "2001:db8:1::/64", "--dst-pfx", "fd00::/64"},
			"-A PREROUTING -d 2001:db8:1::/64 -i eth0 -j DNPT --src-pfx 2001:db8:1::/64 --dst-pfx fd00::/64",
			"DNPT       0    --  ::/0                 2001:db8:1::/64      DNPT src-pfx 2001:db8:1::/64 dst-pfx fd00::/64\n"},
		{compat.IPv6, []string{"-t", "mangle", "-A", "POSTROUTING", "-s", "fd00::/64", "-j", "SNPT", "--src-pfx", "fd00::/64", "--dst-pfx", "2001:db8:1::/64"},
			"-A POSTROUTING -s fd00::/64 -j SNPT --src-pfx fd00::/64 --dst-pfx 2001:db8:1::/64",
			"SNPT       0    --  fd00::/64            ::/0                 SNPT src-pfx fd00::/64 dst-pfx 2001:db8:1::/64\n"},
		{compat.IPv4, []string{"-t", "mangle", "-A", "INPUT", "-j", "CONNSECMARK", "--save"},
			"-A INPUT -j CONNSECMARK --save",
			"CONNSECMARK  0    --  0.0.0.0/0            0.0.0.0/0            CONNSECMARK save\n"},
		{compat.IPv4, []string{"-t", "mangle", "-A", "INPUT", "-j", "CONNSECMARK", "--restore"},
			"-A INPUT -j CONNSECMARK --restore",
			"CONNSECMARK  0    --  0.0.0.0/0            0.0.0.0/0            CONNSECMARK restore\n"},
	}
	for _, tc := range tests {
		cmd, err := compat.Parse(tc.fam, tc.args, compat.ParseOptions{})
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := compat.SaveRule(cmd.Chain, cmd.Rules[0], false); got != tc.save {
			t.Errorf("%v -S:\n got %q\nwant %q", tc.args, got, tc.save)
		}
		if got := (compat.ListFormat{Numeric: true}).ListRule(cmd.Rules[0], 1); got != tc.numeric {
			t.Errorf("%v -L -n:\n got %q\nwant %q", tc.args, got, tc.numeric)
		}
	}
}

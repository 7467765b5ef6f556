package compat

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// TestRateest: -S, the -L -n target text and the blob are what
// iptables-nft 1.8.9 printed and put in the kernel (read back through
// the nftables library) for the same options.
func TestRateest(t *testing.T) {
	tests := []struct{ opts, save, list, blob string }{
		{"--rateest-name eth0 --rateest-interval 250ms --rateest-ewmalog 0.5s",
			"--rateest-name eth0 --rateest-interval 250.0ms --rateest-ewmalog 500.0ms",
			"name eth0 interval 250.0ms ewmalog 500.0ms",
			"65746830000000000000000000000000fe010000000000000000000000000000"},
		{"--rateest-name eth0 --rateest-interval 1s --rateest-ewmalog 8s",
			"--rateest-name eth0 --rateest-interval 1.0s --rateest-ewmalog 8.0s",
			"name eth0 interval 1.0s ewmalog 8.0s",
			"6574683000000000000000000000000000030000000000000000000000000000"},
		{"--rateest-name x --rateest-interval 4s --rateest-ewmalog 16s",
			"--rateest-name x --rateest-interval 4.0s --rateest-ewmalog 16.0s",
			"name x interval 4.0s ewmalog 16.0s",
			"7800000000000000000000000000000002020000000000000000000000000000"},
		{"--rateest-name 0123456789abcdefg --rateest-interval 1s --rateest-ewmalog 2s",
			"--rateest-name 0123456789abcde --rateest-interval 1.0s --rateest-ewmalog 2.0s",
			"name 0123456789abcde interval 1.0s ewmalog 2.0s",
			"3031323334353637383961626364650000010000000000000000000000000000"},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "INPUT", "-j", "RATEEST"}, strings.Fields(tc.opts)...)
		cmd, err := Parse(IPv4, args, ParseOptions{})
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		if got, want := SaveRule(cmd.Chain, cmd.Rules[0], false), "-A INPUT -j RATEEST "+tc.save; got != want {
			t.Errorf("%v -S:\n got %q\nwant %q", args, got, want)
		}
		row := (ListFormat{Numeric: true}).ListRule(cmd.Rules[0], 1)
		if !strings.HasPrefix(row, "RATEEST ") || !strings.HasSuffix(row, "            "+tc.list+"\n") {
			t.Errorf("%v -L -n:\n got %q\nwant suffix %q", args, row, tc.list)
		}
		tg := cmd.Rules[0].Target.(*RateestTarget)
		// the -S form parses back to the same estimator
		back, err := Parse(IPv4, append([]string{"-A", "INPUT", "-j", "RATEEST"}, strings.Fields(tc.save)...), ParseOptions{})
		if err != nil {
			t.Errorf("%q: %v", tc.save, err)
		} else if bt := back.Rules[0].Target.(*RateestTarget); bt.EstName != tg.EstName || bt.Interval != tg.Interval || bt.EwmaLog != tg.EwmaLog {
			t.Errorf("%q parses back to %+v, not %+v", tc.save, *bt, *tg)
		}
		es, err := tg.NftExprs(nil)
		if err != nil {
			t.Fatal(err)
		}
		x := es[0].(*expr.Target)
		if got := hex.EncodeToString(*x.Info.(*xt.Unknown)); x.Name != "RATEEST" || x.Rev != 0 || got != tc.blob {
			t.Errorf("%v blob %s %d\n got %s\nwant %s", args, x.Name, x.Rev, got, tc.blob)
		}
	}
}

// TestRateestErrors: the messages iptables-nft 1.8.9 gave.
func TestRateestErrors(t *testing.T) {
	tests := []struct{ opts, msg string }{
		{"--rateest-name x --rateest-interval 250000us --rateest-ewmalog 1", "RATEEST: ewmalog value is out of range\n"},
		{"--rateest-name x --rateest-interval 3s --rateest-ewmalog 1s", "RATEEST: ewmalog value is out of range\n"},
		{"--rateest-name x --rateest-interval 8s --rateest-ewmalog 1s", "RATEEST: ewmalog value is out of range\n"},
		{"--rateest-name x --rateest-interval 1s", "RATEEST: ewmalog value is out of range\n"},
		{"--rateest-name x", "RATEEST: ewmalog value is out of range\n"},
		{"--rateest-interval 1s --rateest-ewmalog 2s", "RATEEST: option \"--rateest-name\" must be specified\n\n"},
		{"--rateest-name x --rateest-interval abc --rateest-ewmalog 2s", "RATEEST: bad interval value \"abc\"\n"},
		{"--rateest-name x --rateest-interval 1s --rateest-ewmalog 2x", "RATEEST: bad ewmalog value \"2x\"\n"},
		{"--rateest-name x --rateest-interval 9s --rateest-ewmalog 20s", "RATEEST: interval value is too large\n"},
		{"--rateest-name x --rateest-name y --rateest-interval 1s --rateest-ewmalog 2s", "RATEEST: option \"--rateest-name\" can only be used once.\n\n"},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "INPUT", "-j", "RATEEST"}, strings.Fields(tc.opts)...)
		_, err := Parse(IPv4, args, ParseOptions{})
		if err == nil {
			t.Errorf("%v: accepted", args)
			continue
		}
		if got := Format(err, "iptables", -1); !strings.Contains(got, "(nf_tables): "+tc.msg+"Try") || StatusOf(err) != 2 {
			t.Errorf("%v:\n got (rc %d) %q\nwant %q", args, StatusOf(err), got, tc.msg)
		}
	}
}

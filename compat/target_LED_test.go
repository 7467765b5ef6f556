package compat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// TestLedPrint: the -L texts are what iptables-nft 1.8.9 printed
// (iptables -v -A) for the same options; the kernel here has no xt_LED,
// so the reference lists no such rule and -S follows LED_save.
func TestLedPrint(t *testing.T) {
	tests := []struct {
		args       []string
		save, list string
	}{
		{[]string{"--led-trigger-id", "foo"}, `--led-trigger-id "foo"`, `led-trigger-id:"foo" led-delay:0ms`},
		{[]string{"--led-trigger-id", `a"b\c`, "--led-delay", "inf", "--led-always-blink"},
			`--led-trigger-id "a\"b\\c" --led-delay inf --led-always-blink`, `led-trigger-id:"a\"b\\c" led-delay:inf led-always-blink`},
		{[]string{"--led-trigger-id", "x", "--led-delay", "100"}, `--led-trigger-id "x" --led-delay 100`, `led-trigger-id:"x" led-delay:100ms`},
		{[]string{"--led-trigger-id", "x", "--led-delay", "4294967295"}, `--led-trigger-id "x" --led-delay inf`, `led-trigger-id:"x" led-delay:inf`},
		{[]string{"--led-trigger-id", "x", "--led-delay", "2147483648"}, `--led-trigger-id "x" --led-delay -2147483648`, `led-trigger-id:"x" led-delay:-2147483648ms`},
		{[]string{"--led-trigger-id", "x", "--led-delay", "infinity"}, `--led-trigger-id "x" --led-delay inf`, `led-trigger-id:"x" led-delay:inf`},
		{[]string{"--led-trigger-id", "x", "--led-delay", "INF"}, `--led-trigger-id "x" --led-delay inf`, `led-trigger-id:"x" led-delay:inf`},
		{[]string{"--led-trigger-id", "0123456789abcdef"}, `--led-trigger-id "0123456789abcdef"`, `led-trigger-id:"0123456789abcdef" led-delay:0ms`},
		{[]string{"--led-trigger-id", "x", "--led-delay", "0x10"}, `--led-trigger-id "x" --led-delay 16`, `led-trigger-id:"x" led-delay:16ms`},
		{[]string{"--led-trigger-id", ""}, `--led-trigger-id ""`, `led-trigger-id:"" led-delay:0ms`},
		{[]string{"--led-trigger-id", "a b"}, `--led-trigger-id "a b"`, `led-trigger-id:"a b" led-delay:0ms`},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "INPUT", "-j", "LED"}, tc.args...)
		cmd, err := Parse(IPv4, args, ParseOptions{})
		if err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if got, want := SaveRule(cmd.Chain, cmd.Rules[0], false), "-A INPUT -j LED "+tc.save; got != want {
			t.Errorf("%q -S:\n got %q\nwant %q", args, got, want)
		}
		row := (ListFormat{Numeric: true}).ListRule(cmd.Rules[0], 1)
		if !strings.HasPrefix(row, "LED  ") || !strings.HasSuffix(row, "   "+tc.list+"\n") {
			t.Errorf("%q -L -n:\n got %q\nwant suffix %q", args, row, tc.list)
		}
		// the exact form parses back to the same target
		var b strings.Builder
		cmd.Rules[0].Target.(*LedTarget).SaveExact(&b, cmd.Rules[0])
		back, err := Parse(IPv4, append([]string{"-A", "INPUT", "-j", "LED"}, RestoreWords(b.String())...), ParseOptions{})
		if err != nil || *back.Rules[0].Target.(*LedTarget) != *cmd.Rules[0].Target.(*LedTarget) {
			t.Errorf("%q: exact form %q does not parse back (%v)", args, b.String(), err)
		}
	}
}

// TestLedErrors: the messages iptables-nft 1.8.9 gave.
func TestLedErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--led-trigger-id", "x", "--led-delay", "4294967296"}, "Delay value must be within range 0..4294967295\n"},
		{[]string{"--led-trigger-id", "x", "--led-delay", "abc"}, "Delay value must be within range 0..4294967295\n"},
		{[]string{"--led-trigger-id", "x", "--led-delay", "-1"}, "Delay value must be within range 0..4294967295\n"},
		{[]string{"--led-trigger-id", "0123456789abcdefg"}, "Argument must have a maximum length of 16 characters\n\n"},
		{[]string{"--led-delay", "5"}, "LED: option \"--led-trigger-id\" must be specified\n\n"},
		{[]string{}, "LED: option \"--led-trigger-id\" must be specified\n\n"},
		{[]string{"--led-trigger-id", "x", "--led-trigger-id", "y"}, "LED: option \"--led-trigger-id\" can only be used once.\n\n"},
		{[]string{"--led-trigger-id", "x", "!", "--led-always-blink"}, "LED: option \"--led-always-blink\" cannot be inverted.\n\n"},
	}
	for _, tc := range tests {
		args := append([]string{"-A", "INPUT", "-j", "LED"}, tc.args...)
		_, err := Parse(IPv4, args, ParseOptions{})
		if err == nil {
			t.Errorf("%q: accepted", args)
			continue
		}
		got := Format(err, "iptables", -1)
		if !strings.Contains(got, "(nf_tables): "+tc.msg+"Try") || StatusOf(err) != 2 {
			t.Errorf("%q:\n got (rc %d) %q\nwant %q", args, StatusOf(err), got, tc.msg)
		}
	}
}

// TestLedBlob: struct xt_led_info as the kernel lays it out (40 bytes).
func TestLedBlob(t *testing.T) {
	cmd, err := Parse(IPv4, []string{"-A", "INPUT", "-j", "LED", "--led-trigger-id", "ssh", "--led-delay", "0x01020304", "--led-always-blink"}, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	es, err := cmd.Rules[0].Target.(*LedTarget).NftExprs(nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, ok := es[0].(*expr.Target)
	if !ok || tg.Name != "LED" || tg.Rev != 0 {
		t.Fatalf("got %#v", es[0])
	}
	want := make([]byte, 40)
	copy(want, "netfilter-ssh")
	want[27] = 1
	copy(want[28:], []byte{4, 3, 2, 1}) // delay, host order (x86_64)
	if got := []byte(*tg.Info.(*xt.Unknown)); !bytes.Equal(got, want) {
		t.Errorf("blob\n got %x\nwant %x", got, want)
	}
}

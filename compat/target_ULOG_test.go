package compat

import (
	"strings"
	"testing"
)

// TestUlogTarget: iptables 1.8.9 still parses -j ULOG (IPv4) and notes
// once per process that the kernel lacks the module; the rule then goes
// to the kernel, which refuses it (integration covers that part).
func TestUlogTarget(t *testing.T) {
	loadWarned.Delete("ULOG")
	var warns []string
	o := ParseOptions{Warn: func(s string) { warns = append(warns, s) }}
	cmd, err := Parse(IPv4, strings.Fields("-A INPUT -j ULOG --ulog-nlgroup 3 --ulog-prefix drop: --ulog-cprange 100 --ulog-qthreshold 50"), o)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := cmd.Rules[0].Target.(*UlogTarget)
	if !ok || u.NlGroup != 4 || u.Prefix != "drop:" || u.CopyRange != 100 || u.QThreshold != 50 {
		t.Fatalf("got %#v", cmd.Rules[0].Target)
	}
	var b strings.Builder
	u.Save(&b, nil)
	if got := b.String(); got != ` --ulog-prefix "drop:" --ulog-nlgroup 3 --ulog-cprange 100 --ulog-qthreshold 50` {
		t.Errorf("save %q", got)
	}
	es, err := u.NftExprs(&NftContext{Family: IPv4})
	if err != nil || len(es) != 1 {
		t.Fatalf("nft %v %v", es, err)
	}
	if _, err := Parse(IPv4, strings.Fields("-A INPUT -j ULOG"), o); err != nil {
		t.Fatal(err)
	}
	want := "Warning: Extension ULOG revision 0 not supported, missing kernel module?\n"
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q, want one %q", warns, want)
	}
	for args, msg := range map[string]string{
		"-A INPUT -j ULOG --ulog-nlgroup 0":     `ULOG: bad value for option "--ulog-nlgroup", or out of range (1-32).` + "\n",
		"-A INPUT -j ULOG --ulog-qthreshold 51": `ULOG: bad value for option "--ulog-qthreshold", or out of range (1-50).` + "\n",
		"-A INPUT -j ULOG --bogus":              `unknown option "--bogus"`,
	} {
		_, err := Parse(IPv4, strings.Fields(args), o)
		if err == nil || err.Error() != msg {
			t.Errorf("%s: got %v, want %q", args, err, msg)
		}
	}
	// ip6tables has no ULOG: a jump to a chain of that name
	cmd, err = Parse(IPv6, strings.Fields("-A INPUT -j ULOG"), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cmd.Rules[0].Target.(*ChainTarget); !ok {
		t.Errorf("ip6tables -j ULOG: got %#v", cmd.Rules[0].Target)
	}
}

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

// TestTranslateCTHelper: a raw CT --helper rule translates to what
// xdptables' restore loads: the zone template in the raw chain, the ct
// helper object and the chain after conntrack that assigns it.
func TestTranslateCTHelper(t *testing.T) {
	name := filepath.Join(t.TempDir(), "rules")
	rules := "*raw\n-A PREROUTING -p tcp --dport 21 -j CT --helper ftp\n-A OUTPUT -p udp --dport 69 -j CT --helper tftp\nCOMMIT\n"
	if err := os.WriteFile(name, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	if rc := translateRestore(w, compat.IPv6, "ip6tables-restore", []string{name}); rc != 0 {
		t.Fatalf("status %d", rc)
	}
	w.Flush()
	out := b.String()
	for _, want := range []string{
		"\tct helper ct-helper.PREROUTING.ftp.6 {\n\t\ttype \"ftp\" protocol tcp\n\t\tl3proto ip6\n\t}\n",
		"\tct helper ct-helper.OUTPUT.tftp.17 {\n\t\ttype \"tftp\" protocol udp\n\t\tl3proto ip6\n\t}\n",
		"\tchain ct-helper.PREROUTING {\n\t\ttype filter hook prerouting priority -199; policy accept;\n\t}\n",
		"\tchain ct-helper.OUTPUT {\n\t\ttype filter hook output priority -199; policy accept;\n\t}\n",
		"th dport 21 counter ct state & 0x00000040 == 0x00000000 ct zone set 0\n",
		"th dport 21 ct helper set \"ct-helper.PREROUTING.ftp.6\" accept\n",
		"th dport 69 ct helper set \"ct-helper.OUTPUT.tftp.17\" accept\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("translation lacks %q:\n%s", want, out)
		}
	}
}

// TestTranslateCTHelperUserChain: a CT --helper rule in a user chain
// that PREROUTING goes to translates with the copy of that chain in the
// mirror, declared before the rules that go to it.
func TestTranslateCTHelperUserChain(t *testing.T) {
	name := filepath.Join(t.TempDir(), "rules")
	rules := "*raw\n:ZONE - [0:0]\n-A PREROUTING -i veth0 -g ZONE\n-A ZONE -s 198.51.100.7 -j RETURN\n-A ZONE -p tcp --dport 21 -j CT --helper ftp\nCOMMIT\n"
	if err := os.WriteFile(name, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	if rc := translateRestore(w, compat.IPv4, "iptables-restore", []string{name}); rc != 0 {
		t.Fatalf("status %d", rc)
	}
	w.Flush()
	out := b.String()
	decl := strings.Index(out, "\tchain ct-helper.PREROUTING/ZONE {\n\t}\n")
	use := strings.Index(out, "iifname \"veth0\" goto ct-helper.PREROUTING/ZONE\n")
	if decl < 0 || use < 0 || decl > use {
		t.Errorf("the copy of ZONE is not declared before the goto to it:\n%s", out)
	}
	for _, want := range []string{
		"\tct helper ct-helper.PREROUTING.ftp.6 {\n",
		"\t\t# -A ZONE -s 198.51.100.7/32 -j RETURN, after conntrack\n\t\tip saddr 198.51.100.7 return\n",
		"\t\t# -A ZONE -p tcp -m tcp --dport 21 -j CT --helper ftp, after conntrack\n",
		"th dport 21 ct helper set \"ct-helper.PREROUTING.ftp.6\" accept\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("translation lacks %q:\n%s", want, out)
		}
	}
}

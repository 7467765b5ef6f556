package compat

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// useProtocolsDB makes loadProtocols read text instead of /etc/protocols
// for the rest of the test.
func useProtocolsDB(t *testing.T, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "protocols")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	reset := func(p string) {
		protocolsDB = p
		protoOnce = sync.Once{}
		protoByName, protoByNum = nil, nil
	}
	old := protocolsDB
	reset(path)
	t.Cleanup(func() { reset(old) })
}

// TestProtocolLookupOrder: iptables-nft 1.8.9 looks a protocol up in its
// built-in table before /etc/protocols, when it parses -p and when it
// prints it. With a protocols file that moves tcp to 99, `-p tcp` still
// adds protocol 6 and 6 still prints as tcp; names and numbers the table
// does not have come from the file (checked against iptables-nft with
// such a file bind-mounted over /etc/protocols).
func TestProtocolLookupOrder(t *testing.T) {
	useProtocolsDB(t, "tcp 99 TCP\nudp 17 UDP tcpx\ngre 48 GRE\ntcpalias 6 TCPALIAS\n")
	for _, c := range []struct {
		in   string
		want uint8
	}{
		{"tcp", 6}, {"udp", 17}, {"all", 0}, {"ipv6-icmp", 58}, {"mh", 135},
		{"gre", 48}, {"tcpalias", 6}, {"tcpx", 17}, {"99", 99},
	} {
		got, err := ParseProtocol(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseProtocol(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := ParseProtocol("nosuchproto"); err == nil {
		t.Errorf("ParseProtocol(nosuchproto) succeeded")
	}
	for _, c := range []struct {
		p       uint8
		numeric bool
		want    string
	}{
		{6, false, "tcp"}, {17, false, "udp"}, {58, false, "ipv6-icmp"}, {135, false, "mobility-header"},
		{0, false, "all"}, {99, false, "tcp"}, {48, false, "gre"}, {255, false, ""},
		{6, true, "tcp"}, {48, true, ""},
	} {
		if got := ProtoName(c.p, c.numeric); got != c.want {
			t.Errorf("ProtoName(%d, %v) = %q, want %q", c.p, c.numeric, got, c.want)
		}
	}
}

// TestProtocolTableNoFile: a protocol of the built-in table is parsed
// and printed without reading /etc/protocols (one open and read of the
// file less for most commands).
func TestProtocolTableNoFile(t *testing.T) {
	useProtocolsDB(t, "")
	for _, s := range []string{"tcp", "udp", "icmp", "all", "6"} {
		if _, err := ParseProtocol(s); err != nil {
			t.Fatal(err)
		}
	}
	ProtoName(6, false)
	if protoByName != nil {
		t.Errorf("the protocols file was read for a protocol of the built-in table")
	}
}

// TestProtocolExactSpec: where /etc/protocols names a protocol after
// another one of the built-in table (99 "tcp"), -S prints that name as
// iptables does, and the exact text the rule keeps holds the number, so
// that it reads back as the same protocol.
func TestProtocolExactSpec(t *testing.T) {
	useProtocolsDB(t, "tcp 99 TCP\ngre 48 GRE\n")
	for _, c := range []struct {
		p           uint8
		save, exact string
	}{
		{99, " -p tcp -j ACCEPT", " -p 99 -j ACCEPT"},
		{6, " -p tcp -j ACCEPT", " -p tcp -j ACCEPT"},
		{48, " -p gre -j ACCEPT", " -p gre -j ACCEPT"},
	} {
		r := &Rule{Proto: c.p, ProtoSet: true, Target: &ChainTarget{Chain: VerdictAccept}}
		var b strings.Builder
		WriteRuleSpec(&b, r, false)
		if got := b.String(); got != c.save {
			t.Errorf("proto %d: -S %q, want %q", c.p, got, c.save)
		}
		exact := ExactSpec(r)
		if exact != c.exact {
			t.Errorf("proto %d: exact %q, want %q", c.p, exact, c.exact)
		}
		if ExactIsCanonical(r) != (exact == c.save) {
			t.Errorf("proto %d: ExactIsCanonical %v", c.p, ExactIsCanonical(r))
		}
		cmd, err := Parse(IPv4, append([]string{"-A", "INPUT"}, strings.Fields(exact)...), ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := cmd.Rules[0].Proto; got != c.p {
			t.Errorf("proto %d: exact text parses back as %d", c.p, got)
		}
	}
}

// TestPolicyProtoExact: -m policy prints --proto with /etc/protocols'
// name, as libxt_policy does; its exact text keeps the number where that
// name reads back as another protocol.
func TestPolicyProtoExact(t *testing.T) {
	useProtocolsDB(t, "tcp 50 ESP\nipcomp 108 IPCOMP\n")
	for _, c := range []struct {
		proto       string
		save, exact string
	}{
		{"50", "--proto tcp", "--proto 50"},
		{"ipcomp", "--proto ipcomp", "--proto ipcomp"},
	} {
		args := []string{"-A", "INPUT", "-m", "policy", "--dir", "in", "--pol", "ipsec", "--proto", c.proto, "-j", "ACCEPT"}
		cmd, err := Parse(IPv4, args, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := cmd.Rules[0]
		if got := SaveRule("INPUT", r, false); !strings.Contains(got, c.save) {
			t.Errorf("--proto %s: -S %q, want %q in it", c.proto, got, c.save)
		}
		exact := ExactSpec(r)
		if !strings.Contains(exact, c.exact) {
			t.Errorf("--proto %s: exact %q, want %q in it", c.proto, exact, c.exact)
		}
		back, err := Parse(IPv4, append([]string{"-A", "INPUT"}, strings.Fields(exact)...), ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ExactSpec(back.Rules[0]) != exact {
			t.Errorf("--proto %s: exact %q reads back as %q", c.proto, exact, ExactSpec(back.Rules[0]))
		}
	}
}

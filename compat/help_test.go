package compat

import (
	"strings"
	"testing"
)

// TestHelpExts checks which extensions -h shows, as iptables-nft 1.8.9
// picks them: the target, then the matches in order, or, with no match,
// the one the -p argument names as written; options after -h are not
// read.
func TestHelpExts(t *testing.T) {
	for _, c := range []struct {
		f    Family
		args string
		want string
	}{
		{IPv4, "-p icmp -h", "icmp"},
		{IPv4, "-p ICMP --help", "icmp"},
		{IPv4, "-p 1 -h", ""},
		{IPv4, "-h -p icmp", ""},
		{IPv4, "-p icmp -m comment -h", "comment"},
		{IPv4, "-m comment -m tcp -h", "comment tcp"},
		{IPv4, "-m tcp -m comment -h", "tcp comment"},
		{IPv4, "-p tcp --help -m comment", "tcp"},
		{IPv4, "-p tcp --dport 22 -j LOG -h", "LOG tcp"},
		{IPv4, "-p icmpv6 -h", ""},
		{IPv6, "-p ipv6-icmp -h", "icmp6"},
		{IPv6, "-p icmpv6 -h", "icmp6"},
		{IPv6, "-p icmp -h", ""},
		{IPv4, "-h", ""},
	} {
		cmd, err := Parse(c.f, strings.Fields(c.args), ParseOptions{})
		if err != ErrHelp {
			t.Errorf("%s: error %v, want ErrHelp", c.args, err)
			continue
		}
		var names []string
		for _, s := range cmd.HelpExts {
			names = append(names, s.Name)
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("%v %s: help of %q, want %q", c.f, c.args, got, c.want)
		}
	}
}

// TestExtHelpICMPTypes checks the type lists of the ICMP matches' help,
// which firewalld parses (after "Valid ICMP Types:" or "Valid ICMPv6
// Types:", every word of a line, parentheses taken off) to learn the
// types it may use: a type, its aliases in parentheses, its codes
// indented under it.
func TestExtHelpICMPTypes(t *testing.T) {
	v4 := ExtHelp([]*ExtSpec{FindMatch("icmp", IPv4)})
	for _, want := range []string{
		"\nicmp match options:\n[!] --icmp-type value\nValid ICMP Types:\nany\necho-reply (pong)\ndestination-unreachable\n   network-unreachable\n",
		"\n   TOS-host-redirect\necho-request (ping)\nrouter-advertisement\n",
		"\ntime-exceeded (ttl-exceeded)\n   ttl-zero-during-transit\n",
		"\naddress-mask-reply\n",
	} {
		if !strings.Contains(v4, want) {
			t.Errorf("icmp help lacks %q:\n%s", want, v4)
		}
	}
	v6 := ExtHelp([]*ExtSpec{FindMatch("icmp6", IPv6)})
	for _, want := range []string{
		"\nicmpv6 match options:\n[!] --icmpv6-type value\nValid ICMPv6 Types:\ndestination-unreachable\n   no-route\n",
		"\necho-request (ping)\necho-reply (pong)\n",
		"\nneighbour-solicitation (neighbor-solicitation)\nneighbour-advertisement (neighbor-advertisement)\nredirect\n",
	} {
		if !strings.Contains(v6, want) {
			t.Errorf("icmpv6 help lacks %q:\n%s", want, v6)
		}
	}
	// every name of the tables is offered, each once
	for _, c := range []struct {
		text  string
		names []icmpName
	}{{v4, icmpNames}, {v6, icmp6Names}} {
		_, list, _ := strings.Cut(c.text, "Types:\n")
		words := strings.Fields(strings.NewReplacer("(", "", ")", "").Replace(list))
		if len(words) != len(c.names) {
			t.Errorf("%d names listed, the table has %d:\n%s", len(words), len(c.names), list)
		}
		for i := range min(len(words), len(c.names)) {
			if words[i] != c.names[i].name {
				t.Errorf("name %d listed as %q, want %q", i, words[i], c.names[i].name)
			}
		}
	}
}

// TestExtHelpTarget checks the title of a target's section.
func TestExtHelpTarget(t *testing.T) {
	got := ExtHelp([]*ExtSpec{FindTarget("LOG", IPv4)})
	if !strings.HasPrefix(got, "\nLOG target options:\n") || !strings.Contains(got, "--log-prefix value\n") {
		t.Errorf("LOG help:\n%s", got)
	}
}

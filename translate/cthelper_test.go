package translate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
)

func TestCTHelperExact(t *testing.T) {
	for _, c := range []struct {
		name  string
		fam   compat.Family
		rules []string
		want  string // "" = exact, else a substring of the error
	}{
		{"no helper rule", compat.IPv4, []string{"-m state --state NEW -j MARK --set-mark 1", "-j CT --notrack"}, ""},
		{"plain", compat.IPv4, []string{"-p tcp --dport 21 -j CT --helper ftp"}, ""},
		{"arno-like", compat.IPv4, []string{"-p tcp --dport 21 -j CT --helper ftp", "-p udp --dport 69 -j CT --helper tftp", "-p tcp --dport 6667 -j CT --helper irc"}, ""},
		{"notrack, accept, drop, log before", compat.IPv4, []string{
			"-s 198.51.100.0/24 -j CT --notrack", "-i lo -j ACCEPT", "-s 203.0.113.9 -j DROP",
			"-p tcp -m multiport --dports 21,2121 -j LOG", "-p tcp -m multiport --dports 21,2121 -j CT --helper ftp"}, ""},
		{"stateful match after the last helper rule", compat.IPv4, []string{
			"-p tcp --dport 21 -j CT --helper ftp", "-m limit --limit 1/s -j LOG", "-m conntrack --ctstate INVALID -j DROP"}, ""},
		{"ipv6", compat.IPv6, []string{"-p udp -m hl --hl-eq 1 -j RETURN", "-p udp --dport 69 -j CT --helper tftp"}, ""},
		{"conntrack match before", compat.IPv4, []string{"-m conntrack --ctstate NEW -j ACCEPT", "-p tcp --dport 21 -j CT --helper ftp"}, "rule 1 (-m conntrack)"},
		{"conntrack match in the helper rule", compat.IPv4, []string{"-p tcp --dport 21 -m state --state NEW -j CT --helper ftp"}, "rule 1 (-m state)"},
		{"random match before", compat.IPv4, []string{"-m statistic --mode random --probability 0.5 -j CT --notrack", "-p tcp --dport 21 -j CT --helper ftp"}, "rule 1 (-m statistic)"},
		{"limit before", compat.IPv4, []string{"-m limit --limit 1/s -j ACCEPT", "-p tcp --dport 21 -j CT --helper ftp"}, "rule 1 (-m limit)"},
		{"mark after", compat.IPv4, []string{"-p tcp --dport 21 -j CT --helper ftp", "-j MARK --set-mark 1"}, "rule 2 (-j MARK)"},
		{"jump before", compat.IPv4, []string{"-N X", "-j X", "-p tcp --dport 21 -j CT --helper ftp"}, "rule 1 (-j X)"},
		{"nfqueue", compat.IPv4, []string{"-p tcp --dport 21 -j CT --helper ftp", "-j NFQUEUE"}, "rule 2 (-j NFQUEUE)"},
	} {
		var rules []*compat.Rule
		for _, s := range c.rules {
			args := strings.Fields(s)
			if args[0] == "-N" {
				continue
			}
			cmd, err := compat.Parse(c.fam, append([]string{"-t", "raw", "-A", "PREROUTING"}, args...), compat.ParseOptions{})
			if err != nil {
				t.Fatalf("%s: %s: %s", c.name, s, compat.Format(err, "iptables", -1))
			}
			rules = append(rules, cmd.Rules[0])
		}
		err := CTHelperExact(rules)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: got %v, want exact", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCTHelperMirror(t *testing.T) {
	const expected = "[ ct load status => reg 1 ]\n[ bitwise reg 1 = ( reg 1 & 0x01000000 ) ^ 0x00000000 ]\n[ cmp neq reg 1 0x00000000 ]\n[ immediate reg 0 accept ]\n"
	const tcp21 = "[ meta load l4proto => reg 1 ]\n[ cmp eq reg 1 0x06 ]\n" + firstFrag + "[ payload load 2b @ transport header + 2 => reg 1 ]\n[ cmp eq reg 1 0x0015 ]\n"
	for _, c := range []struct {
		name  string
		rules []string
		want  []string
		objs  []CTHelperObj
	}{
		{"no helper rule", []string{"-p tcp --dport 21 -j CT --notrack"}, nil, nil},
		{"one", []string{"-p tcp --dport 21 -j CT --helper ftp"},
			[]string{expected, tcp21 + "[ objref type 3 name ct-helper.PREROUTING.ftp.6 ]\n[ immediate reg 0 accept ]\n"},
			[]CTHelperObj{{"PREROUTING", "ftp", 6}}},
		{"order, drops and logs left out, rules after the last left out", []string{
			"-s 198.51.100.1 -j DROP", "-i lo -j ACCEPT", "-j LOG", "-p tcp --dport 21 -j CT --notrack",
			"-p tcp --dport 21 -j CT --helper ftp", "-p tcp --dport 21 -j CT --helper ftp", "-j CT --zone 3"},
			[]string{expected,
				"[ meta load iifname => reg 1 ]\n[ cmp eq reg 1 0x6c6f00 ]\n[ immediate reg 0 accept ]\n",
				tcp21 + "[ immediate reg 0 accept ]\n",
				tcp21 + "[ objref type 3 name ct-helper.PREROUTING.ftp.6 ]\n[ immediate reg 0 accept ]\n",
				tcp21 + "[ objref type 3 name ct-helper.PREROUTING.ftp.6 ]\n[ immediate reg 0 accept ]\n"},
			[]CTHelperObj{{"PREROUTING", "ftp", 6}}},
		{"no protocol, negated protocol", []string{"-j CT --helper ftp", "! -p tcp -j CT --helper ftp"},
			[]string{expected,
				"[ objref type 3 name ct-helper.PREROUTING.ftp.0 ]\n[ immediate reg 0 accept ]\n",
				"[ meta load l4proto => reg 1 ]\n[ cmp neq reg 1 0x06 ]\n[ objref type 3 name ct-helper.PREROUTING.ftp.0 ]\n[ immediate reg 0 accept ]\n"},
			[]CTHelperObj{{"PREROUTING", "ftp", 0}}},
		{"notrack with a helper assigns none", []string{"-j CT --notrack --helper ftp"}, nil, nil},
		{"not exact", []string{"-p tcp --dport 21 -j CT --helper ftp", "-j MARK --set-mark 1"}, nil, nil},
	} {
		var rules []*compat.Rule
		for _, s := range c.rules {
			cmd, err := compat.Parse(compat.IPv4, append([]string{"-t", "raw", "-A", "PREROUTING"}, strings.Fields(s)...), compat.ParseOptions{})
			if err != nil {
				t.Fatalf("%s: %s: %s", c.name, s, compat.Format(err, "iptables", -1))
			}
			rules = append(rules, cmd.Rules[0])
		}
		got, objs, err := CTHelperMirror(compat.IPv4, "PREROUTING", rules)
		if c.name == "not exact" {
			if err == nil {
				t.Errorf("%s: no error", c.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var gs []string
		for i, mr := range got {
			if (mr.From == nil) != (i == 0) {
				t.Errorf("%s: rule %d: From %v", c.name, i, mr.From)
			}
			gs = append(gs, Debug(mr.Exprs))
		}
		if strings.Join(gs, "--\n") != strings.Join(c.want, "--\n") {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", c.name, strings.Join(gs, "--\n"), strings.Join(c.want, "--\n"))
		}
		if fmt.Sprint(objs) != fmt.Sprint(c.objs) {
			t.Errorf("%s: objects %v, want %v", c.name, objs, c.objs)
		}
	}
}

// TestCTHelperMirrorTable: the mirror of a built-in chain that reaches
// CT --helper rules through user chains copies those chains (jumps and
// gotos to the copies, RETURN as return, DROP and LOG left out), and
// refuses what it could not re-evaluate exactly there.
func TestCTHelperMirrorTable(t *testing.T) {
	parse := func(chain string, rules ...string) []*compat.Rule {
		var out []*compat.Rule
		for _, s := range rules {
			cmd, err := compat.Parse(compat.IPv4, append([]string{"-t", "raw", "-A", chain}, strings.Fields(s)...), compat.ParseOptions{})
			if err != nil {
				t.Fatalf("%s: %s", s, compat.Format(err, "iptables", -1))
			}
			out = append(out, cmd.Rules[0])
		}
		return out
	}
	verdicts := func(rules []CTMirrorRule) string {
		var vs []string
		for _, r := range rules {
			d := Debug(r.Exprs)
			lines := strings.Split(strings.TrimSpace(d), "\n")
			v := lines[len(lines)-1]
			if len(lines) > 1 && strings.Contains(lines[len(lines)-2], "objref") {
				v = lines[len(lines)-2] + " " + v
			}
			vs = append(vs, v)
		}
		return strings.Join(vs, "\n")
	}
	user := map[string][]*compat.Rule{
		"ZONES":     parse("ZONES", "-i veth0 -g Z", "-j LOG", "-m limit --limit 1/s -j DROP"),
		"Z":         parse("Z", "-j Z_allow", "-s 198.51.100.1 -j RETURN", "-j ACCEPT"),
		"Z_allow":   parse("Z_allow", "-p tcp --dport 21 -j CT --helper ftp"),
		"UNREACHED": parse("UNREACHED", "-p tcp --dport 6667 -j CT --helper irc"),
	}
	base, copies, objs, err := CTHelperMirrorTable(compat.IPv4, "PREROUTING", parse("PREROUTING", "-m rpfilter --invert -j DROP", "-j ZONES", "-p udp -j CT --helper tftp", "-m limit --limit 1/s -j ACCEPT"), user)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := verdicts(base), "[ immediate reg 0 accept ]\n[ immediate reg 0 jump -> ct-helper.PREROUTING/ZONES ]\n[ objref type 3 name ct-helper.PREROUTING.tftp.17 ] [ immediate reg 0 accept ]"; got != want {
		t.Errorf("base chain:\n%s\nwant\n%s", got, want)
	}
	var names []string
	for _, c := range copies {
		names = append(names, c.Name+":\n"+verdicts(c.Rules))
	}
	if got, want := strings.Join(names, "\n"), "ct-helper.PREROUTING/ZONES:\n[ immediate reg 0 goto -> ct-helper.PREROUTING/Z ]\n"+
		"ct-helper.PREROUTING/Z:\n[ immediate reg 0 jump -> ct-helper.PREROUTING/Z_allow ]\n[ immediate reg 0 return ]\n[ immediate reg 0 accept ]\n"+
		"ct-helper.PREROUTING/Z_allow:\n[ objref type 3 name ct-helper.PREROUTING.ftp.6 ] [ immediate reg 0 accept ]"; got != want {
		t.Errorf("copies:\n%s\nwant\n%s", got, want)
	}
	if fmt.Sprint(objs) != fmt.Sprint([]CTHelperObj{{"PREROUTING", "tftp", 17}, {"PREROUTING", "ftp", 6}}) {
		t.Errorf("objects %v", objs)
	}
	// a chain that reaches no helper has no mirror
	if base, copies, _, err := CTHelperMirrorTable(compat.IPv4, "OUTPUT", parse("OUTPUT", "-j MARK --set-mark 1", "-j Z2"), map[string][]*compat.Rule{"Z2": parse("Z2", "-j ACCEPT")}); err != nil || base != nil || copies != nil {
		t.Errorf("no helper: %v %v %v", base, copies, err)
	}
	for _, c := range []struct {
		name string
		user map[string][]*compat.Rule
		want string
	}{
		{"set match before the helper", map[string][]*compat.Rule{"U": parse("U", "-m set --match-set s src -g V"), "V": parse("V", "-p tcp -j CT --helper ftp")}, "rule 1 of chain U (-m set)"},
		{"mark in a copied chain", map[string][]*compat.Rule{"U": parse("U", "-p tcp -j CT --helper ftp", "-j MARK --set-mark 1")}, "rule 2 of chain U (-j MARK)"},
	} {
		_, _, _, err := CTHelperMirrorTable(compat.IPv4, "PREROUTING", parse("PREROUTING", "-j U"), c.user)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestCTHelperMirrorSetMatch: -m set is re-evaluated after conntrack
// only on a set that keeps no counters (a lookup counts the packet).
func TestCTHelperMirrorSetMatch(t *testing.T) {
	defer func(f func(string) (compat.SetInfo, bool)) { compat.LookupIPSet = f }(compat.LookupIPSet)
	compat.LookupIPSet = func(name string) (compat.SetInfo, bool) {
		switch name {
		case "plain":
			return compat.SetInfo{NftName: "ipset.plain", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}}, true
		case "counted":
			return compat.SetInfo{NftName: "ipset.counted", Family: compat.IPv4, Dims: []compat.SetDim{compat.SetDimAddr}, Counters: true}, true
		}
		return compat.SetInfo{}, false
	}
	for _, c := range []struct {
		match, want string
	}{
		{"-m set --match-set plain src", ""},
		{"-m set --match-set counted src", "(-m set)"},
		{"-m set --match-set missing src", "(-m set)"},
	} {
		cmd, err := compat.Parse(compat.IPv4, append([]string{"-t", "raw", "-A", "PREROUTING"}, strings.Fields(c.match+" -p tcp -j CT --helper ftp")...), compat.ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %s", c.match, compat.Format(err, "iptables", -1))
		}
		err = CTHelperExact(cmd.Rules)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want exact", c.match, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.match, err, c.want)
		}
	}
}

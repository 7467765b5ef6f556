package compat

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary command lines to the parser: it must never
// panic, and whatever it accepts must print back to a rule that parses
// again to the same text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"-A INPUT -p tcp --dport 22 -j ACCEPT",
		"-A INPUT ! -s 10.0.0.0/8 -i eth+ -j DROP",
		"-I FORWARD 3 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
		"-t nat -A POSTROUTING -o eth0 -j MASQUERADE",
		"-A INPUT -m comment --comment \"a b\" -m multiport --dports 80,443 -j ACCEPT",
		"-L -n -v --line-numbers",
		"-D INPUT 3",
		"-A INPUT -p tcp --tcp-flags ALL NONE -j DROP",
		"-A INPUT -m u32 --u32 \"0>>22&0x3C@8=0x12345678&&6&0xFF=1,2:3\"",
		"-A INPUT -p sctp -m sctp ! --dport 80:90 --chunk-types any DATA:Be,ABORT:T",
		"-A INPUT -m time --timestart 08:00 --timestop 17:00 --weekdays Mon,Tue --kerneltz",
		"-A INPUT -p tcp --syn -m connlimit --connlimit-above 20 --connlimit-mask 24 -j REJECT",
		"-A INPUT -m policy --dir in --pol ipsec --reqid 1 --proto esp -j ACCEPT",
		"-t mangle -A PREROUTING -p tcp -j TPROXY --on-port 1 --on-ip 198.51.100.1 --tproxy-mark 0x1/0x1",
		"-t mangle -A FORWARD -j TTL --ttl-dec 3",
		"-A INPUT -p tcp -m conntrack --ctstate INVALID,UNTRACKED -j SYNPROXY --sack-perm --timestamp --wscale 7 --mss 1460",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words := RestoreWords(line)
		cmd, err := Parse(IPv4, words, ParseOptions{})
		if err != nil {
			_ = Format(err, "iptables", -1)
			return
		}
		if cmd.Op != OpAppend {
			return
		}
		for _, r := range cmd.Rules {
			// iptables prints interface names raw: one with blanks or
			// quotes (or a newline, a word separator too) does not read back,
			// in the reference either
			if strings.ContainsAny(r.InIface+r.OutIface, " \t\n\"\\") {
				continue
			}
			// the chain name is taken as given; the rule text must round-trip
			text := SaveRule("X", r, false)
			again, err := Parse(IPv4, RestoreWords(text), ParseOptions{})
			if err != nil {
				t.Fatalf("printed rule does not parse: %q -> %q: %v", line, text, Format(err, "iptables", -1))
			}
			if len(again.Rules) != 1 {
				t.Fatalf("printed rule expands: %q", text)
			}
			if text2 := SaveRule(again.Chain, again.Rules[0], false); text2 != text {
				t.Fatalf("print is not stable:\n%q\n%q", text, text2)
			}
		}
	})
}

// FuzzRestore feeds arbitrary files to the restore parser: no panics,
// and every error names a line inside the file (or just past it).
func FuzzRestore(f *testing.F) {
	f.Add("*filter\n:INPUT DROP [0:0]\n-A INPUT -i lo -j ACCEPT\nCOMMIT\n")
	f.Add("*nat\n:PREROUTING ACCEPT [0:0]\n[1:2] -A PREROUTING -p tcp --dport 80 -j ACCEPT\nCOMMIT\n")
	f.Add("*filter\n-A INPUT -m comment --comment \"x\\\" y\" -j ACCEPT\nCOMMIT\n")
	f.Fuzz(func(t *testing.T, file string) {
		_, err := ParseRestore(strings.NewReader(file), RestoreOptions{Family: IPv4, Prog: "iptables-restore", Counters: true})
		if err == nil {
			return
		}
		re, ok := err.(*RestoreError)
		if !ok {
			t.Fatalf("error without line: %v", err)
		}
		lines := strings.Count(file, "\n") + 2
		if re.Line < 1 || re.Line > lines {
			t.Fatalf("line %d outside the file (%d lines)", re.Line, lines)
		}
		_ = FormatRestore(err, "iptables-restore")
	})
}

package compat

import "strings"

// Help returns the text `iptables -h` prints.
func Help(f Family) string {
	prog := f.Prog()
	var b strings.Builder
	b.WriteString(prog + " v" + Version + " (nf_tables)\n\n")
	b.WriteString("Usage: " + prog + " -[ACD] chain rule-specification [options]\n")
	b.WriteString("       " + prog + " -I chain [rulenum] rule-specification [options]\n")
	b.WriteString("       " + prog + " -R chain rulenum rule-specification [options]\n")
	b.WriteString("       " + prog + " -D chain rulenum [options]\n")
	b.WriteString("       " + prog + " -[LS] [chain [rulenum]] [options]\n")
	b.WriteString("       " + prog + " -[FZ] [chain] [options]\n")
	b.WriteString("       " + prog + " -[NX] chain\n")
	b.WriteString("       " + prog + " -E old-chain-name new-chain-name\n")
	b.WriteString("       " + prog + " -P chain target [options]\n")
	b.WriteString("       " + prog + " -h (print this help information)\n\n")
	b.WriteString(`Commands:
  --append  -A chain            append a rule to the chain
  --check   -C chain            check whether a matching rule is in the chain
  --delete  -D chain            delete the rule(s) matching the specification
  --delete  -D chain rulenum    delete the rule at that position (1 = first)
  --insert  -I chain [rulenum]  insert at that position (default 1 = first)
  --replace -R chain rulenum    replace the rule at that position
  --list    -L [chain [rulenum]]
                                list the rules of a chain or of all chains
  --list-rules -S [chain [rulenum]]
                                print the rules in iptables-save form
  --flush   -F [chain]          delete every rule of a chain or of all chains
  --zero    -Z [chain [rulenum]]
                                zero the counters of a chain or of all chains
  --new-chain -N chain          create a user chain
  --delete-chain -X [chain]     delete a user chain (all empty ones if none given)
  --policy  -P chain target     set the policy of a built-in chain
  --rename-chain -E old new     rename a chain

Options:
  --ipv4 -4 / --ipv6 -6         the rule is for that family only (restore files)
[!] --protocol -p proto         protocol by number or name, e.g. tcp
[!] --source -s address[/mask][,...]
                                source address(es)
[!] --destination -d address[/mask][,...]
                                destination address(es)
[!] --in-interface -i name[+]   input interface (+ is a wildcard)
 --jump -j target               what to do when the rule matches
 --goto -g chain                continue in chain without returning
 --match -m match               use the named match extension
 --numeric -n                   print addresses and ports as numbers
 --table -t table               table to work on (default filter)
[!] --out-interface -o name[+]  output interface (+ is a wildcard)
 --verbose -v                   verbose listing
 --wait -w [seconds]            accepted; changes are transactional, no lock is taken
 --line-numbers                 print rule numbers in listings
 --exact -x                     print exact counter values
[!] --fragment -f               match second and later fragments only
 --modprobe=<command>           accepted and ignored
 --set-counters -c PKTS BYTES   set the counters of the rule
 --version -V                   print the version
`)
	return b.String()
}

// ExtHelp returns what `iptables ... -h` prints after Help for the
// extensions of exts (Command.HelpExts): for each, a blank line, the
// title "NAME match options:" or "NAME target options:" (the lines
// clients look for), its options, and what HelpMore adds. The ICMP
// matches add their type names under "Valid ICMP Types:" or "Valid
// ICMPv6 Types:", as firewalld reads them to learn which types the
// kernel and the tool support.
func ExtHelp(exts []*ExtSpec) string {
	var b strings.Builder
	for _, spec := range exts {
		title, kind := spec.Name, "match"
		if spec.HelpTitle != "" {
			title = spec.HelpTitle
		}
		if spec.NewTarget != nil {
			kind = "target"
		}
		b.WriteString("\n" + title + " " + kind + " options:\n")
		for _, o := range spec.Options {
			if o.Invert {
				b.WriteString("[!] ")
			}
			b.WriteString("--" + o.Name)
			switch o.Arg {
			case RequiredArg:
				b.WriteString(" value")
			case OptionalArg:
				b.WriteString(" [value]")
			}
			b.WriteString("\n")
		}
		if spec.HelpMore != nil {
			b.WriteString(spec.HelpMore())
		}
	}
	return b.String()
}

// icmpTypeHelp lists the names of an ICMP type table under title, one
// type or code per line: a name that stands for the same types and codes
// as the line's first follows it in parentheses, and the names of single
// codes of a type are indented under it.
func icmpTypeHelp(title string, names []icmpName) string {
	var b strings.Builder
	b.WriteString(title + "\n")
	for i, n := range names {
		if i > 0 {
			prev := names[i-1]
			if n.typ == prev.typ && n.min == prev.min && n.max == prev.max {
				b.WriteString(" (" + n.name + ")")
				continue
			}
			b.WriteString("\n")
		}
		if n.typ != 0xff && n.min == n.max {
			b.WriteString("   ")
		}
		b.WriteString(n.name)
	}
	b.WriteString("\n")
	return b.String()
}

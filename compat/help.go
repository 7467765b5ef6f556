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

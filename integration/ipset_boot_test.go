package integration

import "testing"

// TestIpsetBootReload: the boot and reload sequences of real hosts, in
// netfilter-persistent's order (sets, then the rules that use them),
// compared with ipset + iptables-nft-restore: a saved sets file with a
// list:set of country sets, a CSF-style timeout set and an ipset 4 line;
// the reload while the rules hold the sets (the plain restore fails at
// its first create, "-exist" takes the file, a flush first keeps
// nothing stale); the rules file restored again on sets that changed;
// and the shutdown that cannot destroy sets in use until the rules go.
func TestIpsetBootReload(t *testing.T) {
	p := newIpsetPair(t, "isb")
	sets := "create geo-zz hash:net family inet hashsize 1024 maxelem 65536\n" +
		"add geo-zz 198.51.100.0/25\nadd geo-zz 198.51.100.128/26\n" +
		"create geo-yy hash:net family inet hashsize 1024 maxelem 65536\n" +
		"add geo-yy 203.0.113.0/24\nadd geo-yy 203.0.113.64/26 nomatch\n" +
		"create geo list:set size 8\nadd geo geo-zz\nadd geo geo-yy\n" +
		"create chain_DENYTEMP hash:net family inet hashsize 1024 maxelem 65536 timeout 0\n" +
		"add chain_DENYTEMP 198.18.7.0/24 timeout 3000\nadd chain_DENYTEMP 198.18.8.8 timeout 0\n" +
		"create ssh_ports bitmap:port range 1-1024\nadd ssh_ports 22\n"
	rules := "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" +
		"-A INPUT -m set --match-set chain_DENYTEMP src -j DROP\n" +
		"-A INPUT -p tcp -m set --match-set geo src -m set --match-set ssh_ports dst -j REJECT --reject-with tcp-reset\n" +
		"-A FORWARD -m set ! --match-set geo dst -j ACCEPT\n" +
		"COMMIT\n"
	p.run(sets, "ipset restore")
	p.run(rules, "iptables-restore")
	p.run("", "iptables-save")
	p.run("", "ipset -t list")
	// reload: plain restore (fails at line 1), -exist, flush + -exist
	p.run(sets, "ipset restore")
	p.run(sets, "ipset -exist restore")
	p.run("", "ipset -s save")
	p.run("", "ipset flush geo-zz")
	p.run("", "ipset flush geo-yy")
	p.run("create geo-zz hash:net family inet hashsize 1024 maxelem 65536\nadd geo-zz 198.51.100.0/24\n", "ipset -exist restore")
	p.run("", "ipset -s save geo-zz")
	p.run("", "ipset -s save geo-yy")
	// the sets file of another day: geo-yy gone from the list, a set
	// created with ipset 4 options (the restore stops after its warning)
	p.run("create geo-xx hash:net --hashsize 64 --probes 8\nadd geo-xx 198.51.100.200\n", "ipset restore")
	p.run("", "ipset -s save geo-xx")
	p.run("", "ipset del geo geo-yy")
	p.run("", "ipset add geo geo-xx before geo-zz")
	p.run(rules, "iptables-restore")
	p.run("", "iptables-save")
	p.run("", "ipset -t list")
	// shutdown: the sets in use stay until the rules are flushed
	p.run("", "ipset destroy")
	p.run("", "ipset list -n")
	p.run("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n", "iptables-restore")
	p.run("", "ipset flush geo")
	p.run("", "ipset destroy")
	p.run("", "ipset list -n")
}

# kube-rules.awk — a kube-proxy-like filter table of about n rules, in
# iptables-restore format (awk -v n=N -f bench/kube-rules.awk).
#
# Per service: 1 rule in KUBE-SERVICES, a KUBE-SVC chain with one jump
# per endpoint (3), per endpoint a KUBE-SEP chain with 2 rules → 10 rules
# and 4 chains per service. Used by bench/iptables.sh and
# bench/commitcost.sh.
#
# -v table=nat puts them into the nat table instead (jumps from
# PREROUTING and OUTPUT, as kube-proxy's service rules are) and adds a
# filter table with one rule in INPUT.
BEGIN {
	svcs = int(n / 10)
	if (table == "") table = "filter"
	if (table == "nat") {
		split("PREROUTING INPUT OUTPUT POSTROUTING", builtin, " ")
		split("PREROUTING OUTPUT", entry, " ")
	} else {
		split("INPUT FORWARD OUTPUT", builtin, " ")
		split("INPUT FORWARD", entry, " ")
	}
	print "*" table
	for (i = 1; i in builtin; i++) printf ":%s ACCEPT [0:0]\n", builtin[i]
	print ":KUBE-SERVICES - [0:0]"
	print ":KUBE-MARK-MASQ - [0:0]"
	for (s = 0; s < svcs; s++) {
		printf ":KUBE-SVC-%08X - [0:0]\n", s
		for (e = 0; e < 3; e++) printf ":KUBE-SEP-%08X%d - [0:0]\n", s, e
	}
	for (i = 1; i in entry; i++) printf "-A %s -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n", entry[i]
	print "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000"
	for (s = 0; s < svcs; s++) {
		ip = sprintf("10.%d.%d.%d", 96 + int(s / 65536), int(s / 256) % 256, s % 256)
		proto = (s % 4 == 3) ? "udp" : "tcp"
		name = sprintf("ns%d/svc-%d:port", s % 17, s)
		printf "-A KUBE-SERVICES -d %s/32 -p %s -m comment --comment \"%s cluster IP\" -m %s --dport %d -j KUBE-SVC-%08X\n", ip, proto, name, proto, 80 + s % 1000, s
		for (e = 0; e < 3; e++) {
			ep = sprintf("10.%d.%d.%d", 128 + int(s / 65536), int(s / 256) % 256, (s * 3 + e) % 250 + 1)
			stat = ""
			if (e == 0) stat = " -m statistic --mode random --probability 0.33333333349"
			if (e == 1) stat = " -m statistic --mode random --probability 0.50000000000"
			printf "-A KUBE-SVC-%08X -m comment --comment \"%s -> %s:8080\"%s -j KUBE-SEP-%08X%d\n", s, name, ep, stat, s, e
			printf "-A KUBE-SEP-%08X%d -s %s/32 -m comment --comment \"%s\" -j KUBE-MARK-MASQ\n", s, e, ep, name
			printf "-A KUBE-SEP-%08X%d -d %s/32 -p %s -m comment --comment \"%s\" -m %s --dport 8080 -j ACCEPT\n", s, e, ep, proto, name, proto
		}
	}
	print "COMMIT"
	if (table == "nat") {
		print "*filter"
		print ":INPUT ACCEPT [0:0]"
		print "-A INPUT -s 198.51.100.1/32 -j ACCEPT"
		print "COMMIT"
	}
}

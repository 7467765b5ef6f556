#!/bin/sh
# Shorewall on a two-interface firewall (etc/shorewall: swnet to the
# internet, swloc to the local net, veth ends in the test's namespace),
# driven through its CLI as an administrator does. Shorewall probes what
# iptables can do (show capabilities, and again when it compiles), then
# loads its compiled ruleset with iptables-restore and ipset.
. "${0%/*}/../lib.sh"
# no IPv6 traffic on the veths (router solicitations would move counters)
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip link set lo up
ip link add swnet type veth peer name swnet-p
ip link add swloc type veth peer name swloc-p
ip addr add 198.51.100.1/24 dev swnet
ip addr add 203.0.113.1/24 dev swloc
for l in swnet swnet-p swloc swloc-p; do ip link set $l up; done
ip route add default via 198.51.100.254 dev swnet
# the blacklist set the rules use (net:+xdpt-bl)
ipset create xdpt-bl hash:net
ipset add xdpt-bl 198.51.100.200
step shorewall version
step shorewall show capabilities
step shorewall check
step shorewall compile $W/compiled
step shorewall start
dump started
step shorewall drop 198.51.100.77
step shorewall blacklist 198.51.100.78
step shorewall reject 198.51.100.79
dump blacklisted
step shorewall allow 198.51.100.77
step shorewall show blacklists
step shorewall restart
dump restarted
step shorewall reload
step shorewall show zones
step shorewall show policies
step shorewall show nat
step shorewall status
step shorewall reset
step shorewall show filter
step shorewall show mangle
step shorewall show raw
step shorewall show accounting
step shorewall save
step shorewall clear
dump cleared
# SAVE_IPSETS=Yes: save kept the sets (ipset save); restore loads them
step ls /var/lib/shorewall
step ipset destroy
step shorewall restore
dump restored
step shorewall stop
dump stopped
step shorewall clear
dump cleared-again

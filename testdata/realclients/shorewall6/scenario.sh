#!/bin/sh
# Shorewall6 on a two-interface IPv6 firewall (etc/shorewall6), as
# shorewall/scenario.sh for IPv4: capability probes with ip6tables, then
# its ruleset through ip6tables-restore and ipset.
. "${0%/*}/../lib.sh"
sysctl -qw net.ipv6.conf.default.accept_ra=0 net.ipv6.conf.default.router_solicitations=0
ip link set lo up
ip link add swnet type veth peer name swnet-p
ip link add swloc type veth peer name swloc-p
ip addr add 2001:db8:1::1/64 dev swnet nodad
ip addr add 2001:db8:2::1/64 dev swloc nodad
for l in swnet swnet-p swloc swloc-p; do ip link set $l up; done
ip -6 route add default via 2001:db8:1::fe dev swnet
# the blacklist set the rules use (net:+xdpt-bl6)
ipset create xdpt-bl6 hash:net family inet6
ipset add xdpt-bl6 2001:db8:1::200/124
step shorewall6 version
step shorewall6 show capabilities
step shorewall6 check
step shorewall6 compile $W/compiled
step shorewall6 start
dump started
step shorewall6 drop 2001:db8:1::77
step shorewall6 reject 2001:db8:1::78 2001:db8:1::79
step shorewall6 logdrop 2001:db8:5::/48
step shorewall6 drop 2001:db8:1::77
step shorewall6 blacklist 2001:db8:1::80
dump blacklisted
step shorewall6 allow 2001:db8:1::78
step shorewall6 allow 2001:db8:1::99
step shorewall6 show dynamic
step shorewall6 show blacklists
step shorewall6 restart
dump restarted
step shorewall6 show zones
step shorewall6 show policies
step shorewall6 status
step shorewall6 save
step shorewall6 clear
dump cleared
step shorewall6 restore
dump restored
step shorewall6 stop
dump stopped
step shorewall6 clear
dump cleared-again

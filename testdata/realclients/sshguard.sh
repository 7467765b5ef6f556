#!/bin/sh
# sshguard's firewall backends (sshg-fw-iptables, sshg-fw-ipset) as
# sshguard runs them: commands on stdin, one line per attack or release.
FW=$TOOLS/usr/libexec/sshguard
. "${0%/*}/lib.sh"
input='block 203.0.113.7 4 32
block 198.51.100.0 4 24
block 2001:db8::5 6 128
block 2001:db8:1:: 6 64
release 203.0.113.7 4 32
release 203.0.113.99 4 32
block 203.0.113.8 4 32
release 2001:db8:2::1 6 128'
# the iptables backend expects the sshguard chains to exist
iptables -N sshguard && ip6tables -N sshguard
iptables -A INPUT -j sshguard && ip6tables -A INPUT -j sshguard
echo "### iptables backend"
printf '%s\n' "$input" | sh $FW/sshg-fw-iptables 2>&1; echo "rc=$?"
dump iptables
echo "### iptables backend, flushonexit"
printf '%s\nflushonexit\n' "$input" | sh $FW/sshg-fw-iptables 2>&1; echo "rc=$?"
dump flushed
echo "### iptables backend, bad command"
printf 'block 203.0.113.9 4 32\nbogus\n' | sh $FW/sshg-fw-iptables 2>&1; echo "rc=$?"
echo "### ipset backend"
printf '%s\n' "$input" | sh $FW/sshg-fw-ipset 2>&1; echo "rc=$?"
dump ipset
step iptables -I INPUT -m set --match-set sshguard4 src -j DROP
step ip6tables -I INPUT -m set --match-set sshguard6 src -j DROP
step ip6tables -I INPUT -m set --match-set sshguard4 src -j DROP
echo "### ipset backend again, flushonexit"
printf 'block 203.0.113.50 4 32\nrelease 2001:db8::5 6 128\nflushonexit\n' | sh $FW/sshg-fw-ipset 2>&1; echo "rc=$?"
dump ipset-flushed
step ipset destroy sshguard4
step iptables -D INPUT -m set --match-set sshguard4 src -j DROP
step ipset destroy sshguard4
dump end

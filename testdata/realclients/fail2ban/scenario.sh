#!/bin/sh
# fail2ban's server with the jails of jail.local; its configuration is the
# package's /etc/fail2ban, copied to $W/conf.
export PYTHONPATH=$TOOLS/usr/lib/python3/dist-packages
cp -a $TOOLS/etc/fail2ban $W/conf
rm -f $W/conf/jail.d/*
sed "s#@W@#$W#" $DATA/fail2ban/jail.local >$W/conf/jail.local
cp $DATA/fail2ban/xdpt-dummy.conf $W/conf/filter.d/
printf '[Definition]\nloglevel = INFO\nlogtarget = %s/f2b.log\ndbfile = :memory:\nallowipv6 = auto\n' $W >$W/conf/fail2ban.local
touch $W/dummy.log
C="/usr/bin/python3 $TOOLS/usr/bin/fail2ban-client -c $W/conf -s $W/sock -p $W/pid"
dump() {
	echo "### state: $1"
	iptables-save | grep -v '^#'
	ip6tables-save | grep -v '^#'
	ipset save
	for f in /proc/net/xt_recent/*; do
		[ -e "$f" ] && { echo "recent $f:"; sed 's/ last_seen: .*//' "$f"; }
	done
}
# the client names its socket and configuration: print the command only
step() { echo "### $*"; $C "$@" 2>&1; echo "rc=$?"; }
/usr/bin/python3 $TOOLS/usr/bin/fail2ban-server -c $W/conf -s $W/sock -p $W/pid -f -x >$W/server.out 2>&1 &
i=0
while [ $i -lt 300 ] && ! [ -S $W/sock ]; do sleep 0.1; i=$((i+1)); done
step ping
dump started
jails=$($C status | sed -n 's/.*Jail list:[[:space:]]*//p' | tr -d ,)
for j in $jails; do
	step set $j banip 203.0.113.10 198.51.100.20
	step set $j banip 2001:db8::10
done
dump banned
for j in $jails; do
	step set $j unbanip 203.0.113.10 2001:db8::10
done
dump unbanned
# remove ipt's chain behind fail2ban's back: the next ban fails, fail2ban
# runs actioncheck, restarts the action (actionstop, actionstart) and bans
echo "### remove f2b-ipt"
iptables -w -D INPUT -p tcp --dport 22 -j f2b-ipt 2>&1
iptables -w -F f2b-ipt 2>&1
iptables -w -X f2b-ipt 2>&1
step set ipt banip 203.0.113.11
dump repaired
step reload --restart mport
dump reloaded
# every jail's actionflush (iptables -F, ipset flush). Its answer, the
# number of tickets it unbanned, is left out: it counts the bans the jail
# restarted above restores in a thread of its own, which may not all be
# back yet (CI saw 11 and 10 on the same side's code); the dumps before
# and after compare the state in full
echo "### unban --all"
$C unban --all >/dev/null 2>&1
echo "rc=$?"
dump flushed
step stop
i=0
while [ $i -lt 300 ] && [ -e $W/sock ]; do sleep 0.1; i=$((i+1)); done
wait
dump stopped
# what fail2ban logged about the actions it ran (commands that failed,
# their stderr and status), without time stamps, thread ids and object
# addresses; threads log in any order, so the lines are sorted
echo "### log"
sed -e 's/^[0-9-]* [0-9:,]* //' -e 's/\[[0-9]*\]//' -e 's/0x[0-9a-f]\{6,\}/0xX/g' \
	-e 's/ [0-9a-f]\{8,\} -- / ID -- /' $W/f2b.log |
	grep -E 'ERROR|WARN|CRIT|NOTICE' | sort

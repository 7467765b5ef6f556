#!/usr/bin/env bash
# bench/scale.sh — how time and peak memory grow with the ruleset (issue 7).
#
# Usage: bench/scale.sh [BIN]   (BIN defaults to bin/xdptables; run as root)
#   RULES="1000 10000 100000"      rule counts
#   ELEMS="1000 10000 100000 1000000"   ipset element counts ("" to skip)
#   SETS="100 1000"                numbers of sets (half hash:ip, half
#                                  hash:net, three entries each; "" to skip)
#   SETSMAXELEM=65536              their maxelem (Calico: 1048576)
#   REFIPSET=ipset                 the reference ipset, measured side by
#                                  side on the same set files ("" to skip)
#   TAG=name                       put into the network namespaces' names
#
# For each size, in a fresh network namespace: restore, -S, -L -n, save,
# a single -A and -D on the loaded ruleset; for sets (a hash:ip of
# maxelem size + 10: shard copies from 65537 on): ipset restore, list,
# save, add, del, each also with the reference ipset in a namespace of
# its own; for many small sets (Calico, kube-router, per-country lists):
# restore, list -n, save, list, and one add and one create with the sets
# loaded, side by side the same way. Each line: operation, size, seconds, peak RSS (MB), and the
# time per item, which stays flat when nothing is superlinear; set lines
# add the reference's seconds and RSS and the time ratio.
set -euo pipefail

BIN=${1:-bin/xdptables}
RULES=${RULES:-"1000 10000 100000"}
ELEMS=${ELEMS-"1000 10000 100000 1000000"}
SETS=${SETS-"100 1000"}
SETSMAXELEM=${SETSMAXELEM:-65536}
REFIPSET=${REFIPSET-ipset}
if [ -n "$REFIPSET" ] && ! command -v "$REFIPSET" >/dev/null; then
	echo "reference $REFIPSET not found: sets measured without it" >&2
	REFIPSET=""
fi

[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/xdpt-scale.XXXXXX)
NS=""
REFNS=""
cleanup() {
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null || true
	[ -n "$REFNS" ] && ip netns del "$REFNS" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
"$BIN" links "$WORK" >/dev/null

# run OP N CMD... : time CMD in the namespace, print a result line
run() {
	local op=$1 n=$2
	shift 2
	if ! /usr/bin/time -f "%e %M" -o "$WORK/t" ip netns exec "$NS" "$@" >"$WORK/out" 2>"$WORK/err"; then
		echo "FAILED: $op $n: $(head -c 300 "$WORK/err")" >&2
	fi
	read -r secs kb <"$WORK/t"
	awk -v op="$op" -v n="$n" -v s="$secs" -v kb="$kb" \
		'BEGIN { printf "| %-14s | %8d | %7.2f | %6.1f | %7.2f |\n", op, n, s, kb/1024, s*1e6/n }'
}

# both OP N ARGS... : ipset ARGS with ours in $NS and the reference in
# $REFNS, one line with both
both() {
	local op=$1 n=$2
	shift 2
	local secs kb rsecs rkb
	if ! /usr/bin/time -f "%e %M" -o "$WORK/t" ip netns exec "$NS" "$WORK/ipset" "$@" >"$WORK/out" 2>"$WORK/err"; then
		echo "FAILED: $op $n: $(head -c 300 "$WORK/err")" >&2
	fi
	read -r secs kb <"$WORK/t"
	rsecs=0 rkb=0
	if [ -n "$REFIPSET" ]; then
		if ! /usr/bin/time -f "%e %M" -o "$WORK/t" ip netns exec "$REFNS" "$REFIPSET" "$@" >"$WORK/out" 2>"$WORK/err"; then
			echo "FAILED (reference): $op $n: $(head -c 300 "$WORK/err")" >&2
		fi
		read -r rsecs rkb <"$WORK/t"
	fi
	awk -v op="$op" -v n="$n" -v s="$secs" -v kb="$kb" -v rs="$rsecs" -v rkb="$rkb" \
		'BEGIN { printf "| %-14s | %8d | %7.2f | %6.1f | %7.2f | %7.2f | %6.1f | %6s |\n", op, n, s, kb/1024, s*1e6/n, rs, rkb/1024, (rs > 0 ? sprintf("%.2f×", s/rs) : "") }'
}

newns() {
	[ -n "$NS" ] && ip netns del "$NS"
	NS=xdpt-scale${TAG:+-$TAG}-$$-$1
	ip netns add "$NS"
}

echo "| operation      |     size |    secs | RSS MB | µs/item |"
echo "|----------------|---------:|--------:|-------:|--------:|"
for n in $RULES; do
	# rules spread over chains of 100, as large real rulesets are
	awk -v n="$n" 'BEGIN {
		print "*filter"; print ":INPUT ACCEPT [0:0]"; print ":FORWARD ACCEPT [0:0]"; print ":OUTPUT ACCEPT [0:0]"
		c = int((n + 99) / 100)
		for (i = 0; i < c; i++) printf ":C%d - [0:0]\n", i
		for (i = 0; i < c; i++) printf "-A INPUT -s 198.18.%d.0/24 -j C%d\n", i % 256, i
		for (i = 0; i < n - c; i++)
			printf "-A C%d -s 198.19.%d.%d/32 -p tcp -m tcp --dport %d -m comment --comment \"rule %d\" -j ACCEPT\n", i % c, int(i / 256) % 256, i % 256, 1 + i % 60000, i
		print "COMMIT" }' >"$WORK/rules"
	newns "$n"
	run restore "$n" "$WORK/iptables-restore" "$WORK/rules"
	run "-S" "$n" "$WORK/iptables" -S
	run "-L -n" "$n" "$WORK/iptables" -L -n
	run save "$n" "$WORK/iptables-save"
	run "-A (loaded)" "$n" "$WORK/iptables" -A C0 -s 203.0.113.1 -j DROP
	run "-D (loaded)" "$n" "$WORK/iptables" -D C0 -s 203.0.113.1 -j DROP
	run "restore again" "$n" "$WORK/iptables-restore" "$WORK/rules"
done
[ -n "$ELEMS" ] && {
	echo
	echo "| operation      |     size |    secs | RSS MB | µs/item | ipset s | ipset MB |  ratio |"
	echo "|----------------|---------:|--------:|-------:|--------:|--------:|---------:|-------:|"
}
for n in $ELEMS; do
	awk -v n="$n" 'BEGIN {
		print "create big hash:ip family inet hashsize 65536 maxelem " (n + 10)
		for (i = 0; i < n; i++) printf "add big 10.%d.%d.%d\n", int(i / 65536) % 256, int(i / 256) % 256, i % 256 }' >"$WORK/set"
	newns "set$n"
	[ -n "$REFNS" ] && ip netns del "$REFNS"
	REFNS=""
	if [ -n "$REFIPSET" ]; then
		REFNS=xdpt-scale${TAG:+-$TAG}-$$-ref$n
		ip netns add "$REFNS"
	fi
	both "ipset restore" "$n" restore -f "$WORK/set"
	both "ipset list" "$n" list big
	both "ipset save" "$n" save
	both "ipset add" "$n" add big 203.0.113.1
	both "ipset del" "$n" del big 203.0.113.1
done
[ -n "$SETS" ] && {
	echo
	echo "| operation      |     sets |    secs | RSS MB |  µs/set | ipset s | ipset MB |  ratio |"
	echo "|----------------|---------:|--------:|-------:|--------:|--------:|---------:|-------:|"
}
for n in $SETS; do
	awk -v n="$n" -v m="$SETSMAXELEM" 'BEGIN {
		for (i = 0; i < n; i++) {
			t = i % 2 ? "hash:net" : "hash:ip"
			printf "create s%06d %s family inet hashsize 1024 maxelem %d\n", i, t, m
			for (j = 0; j < 3; j++) {
				a = i * 4 + j
				printf "add s%06d 198.%d.%d.%d%s\n", i, 18 + int(a / 65536) % 2, int(a / 256) % 256, a % 256, (i % 2 ? "/32" : "")
			}
		} }' >"$WORK/sets"
	newns "sets$n"
	[ -n "$REFNS" ] && ip netns del "$REFNS"
	REFNS=""
	if [ -n "$REFIPSET" ]; then
		REFNS=xdpt-scale${TAG:+-$TAG}-$$-refsets$n
		ip netns add "$REFNS"
	fi
	both "restore sets" "$n" restore -f "$WORK/sets"
	both "list -n" "$n" list -n
	both "save" "$n" save
	both "list" "$n" list
	both "add (loaded)" "$n" add s000000 203.0.113.1
	both "create (loaded)" "$n" create new hash:ip
done

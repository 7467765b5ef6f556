#!/usr/bin/env bash
# bench/partcost.sh — what a lookup set split into parts by address range
# (ipset/parts.go) would cost and save, measured with nft alone (no
# xdptables code): the kernel's commit of one add and one del in the
# interval set of a 1M hash:net (the top-level layout: about 100k
# intervals) against the same in one of 16 parts, and the cost per
# packet of the ways one rule can look an address up in 16 parts.
#
# Usage: bench/partcost.sh   (root; needs nft, strace, cc, python3)
#   N=100000     intervals (disjoint /24s spread over IPv4, none in
#                the test range 198.18.0.0/15)
#   REPS=9       commits per figure (median)
#   PKTS=200000  packets per send loop (best of 5 loops per figure)
#   ROUNDS=3     rounds of the packet variants, interleaved
#   TAG=partcost netns name part
#
# Commit: the time of the sendmsg that carries nft's batch (the kernel
# processes and commits a batch inside that call; nft's own cache reads
# are other calls). Sets are made as setengine makes the lookup set of a
# set without timeouts (interval, timeout flag, 49-day GC: ipset.LongGC).
#
# Packets: UDP to 198.19.1.1 sent from the namespace (the sender thread's
# CPU time, in which the output hook runs: robust to a shared machine), a rule in an
# output chain looks the destination up (not in the set: every variant
# does its whole test; the address is in part 12, 13th of 16):
#   none     no rule
#   one      ip daddr @big counter drop                (one 100k set)
#   vmap16   ip daddr vmap { RANGE_i : jump c_i }, c_i: ip daddr @p_i counter drop
#   unless16 jump { ip daddr RANGE_i ip daddr != @p_i return (x16); counter drop }
#   padded16 jump { ip daddr != @q_i return (x16); counter drop },
#            q_i = p_i plus the complement of RANGE_i
# vmap16 needs a named chain per part and rule (the kernel refuses a
# chain binding as the verdict of a set element), reached by jump: a
# packet that a goto'd part chain does not match returns to the caller
# of the rule's chain, past the chain's later rules (the last table
# shows it). unless16 is what the list:set machinery
# (compat.SetMatch.NftListExprs) builds.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
N=${N:-100000}
REPS=${REPS:-9}
PKTS=${PKTS:-200000}
ROUNDS=${ROUNDS:-3}
TAG=${TAG:-partcost}
NS="xdpt-$TAG"
[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in nft strace cc python3; do
	command -v $t >/dev/null || { echo "needs $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/xdpt-partcost.XXXXXX)
cleanup() {
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

python3 - "$WORK" "$N" <<'EOF'
import random, sys
work, n = sys.argv[1], int(sys.argv[2])
random.seed(4)
nets = set()
while len(nets) < n:
    x = random.getrandbits(24)
    if x >> 9 == (198 << 7 | 18 >> 1):  # 198.18.0.0/15
        continue
    nets.add(x)
nets = sorted(nets)
def s(x): return "%d.%d.%d.0/24" % (x >> 16, (x >> 8) & 255, x & 255)
flags = "type ipv4_addr; flags interval,timeout; gc-interval 49d;"
with open(work + "/sets.nft", "w") as f:
    f.write("table ip t {\n")
    f.write(" set big { %s elements = { %s } }\n" % (flags, ", ".join(s(x) for x in nets)))
    f.write(" set tiny { %s elements = { 1.0.0.0/24, 2.0.0.0/24 } }\n" % flags)
    for p in range(16):
        el = [s(x) for x in nets if x >> 20 == p]
        pad = []
        if p > 0: pad.append("0.0.0.0-%d.255.255.255" % (p * 16 - 1))
        if p < 15: pad.append("%d.0.0.0-255.255.255.255" % (p * 16 + 16))
        f.write(" set p%d { %s elements = { %s } }\n" % (p, flags, ", ".join(el)))
        f.write(" set q%d { %s elements = { %s } }\n" % (p, flags, ", ".join(pad + el)))
    f.write("}\n")
EOF

cc -O2 -o "$WORK/send" "$BENCH/udpsend.c"

ip netns del "$NS" 2>/dev/null || true
ip netns add "$NS"
X="ip netns exec $NS"
$X ip link set lo up
$X ip link add pc0 type veth peer name pc1
$X ip link set pc0 up
$X ip link set pc1 up
$X ip addr add 198.18.0.1/15 dev pc0
$X ip neigh add 198.19.1.1 lladdr 02:00:00:00:00:01 dev pc0
$X nft -f "$WORK/sets.nft"

# commit SET OP → ms of the kernel's batch for OP (add/delete) of one /24
commit() {
	$X strace -T -e trace=sendmsg nft "$2" element ip t "$1" '{ 198.51.100.0/24 }' 2>&1 >/dev/null |
		sed -n 's/.*<\([0-9.]*\)>$/\1/p' | sort -n | tail -1
}
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] * 1000 }'; }

echo "machine: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Kernel commit of one /24, median of $REPS (ms):"
echo
echo "| set | intervals | add | del |"
echo "|---|---:|---:|---:|"
for s in big p12 tiny; do
	: >"$WORK/a"
	: >"$WORK/d"
	for _ in $(seq "$REPS"); do
		commit $s add >>"$WORK/a"
		commit $s delete >>"$WORK/d"
	done
	n=$($X nft list set ip t $s | grep -o '/24' | wc -l)
	echo "| $s | $n | $(median <"$WORK/a") | $(median <"$WORK/d") |"
done

$X nft add chain ip t out '{ type filter hook output priority 0; }'
R="" V="" P=""
for i in $(seq 0 15); do
	$X nft add chain ip t c$i
	$X nft add rule ip t c$i ip daddr @p$i counter drop
	r="$((i * 16)).0.0.0-$((i * 16 + 15)).255.255.255"
	R="$R ip daddr $r ip daddr != @p$i return;"
	V="$V $r : jump c$i,"
	P="$P ip daddr != @q$i return;"
done
rule() {
	$X nft flush chain ip t out
	[ $# = 0 ] || $X nft add rule ip t out udp dport 9 "$@"
	$X "$WORK/send" "$PKTS" 198.19.1.1
}
echo
echo "CPU ns per packet (the sender thread's CPU time per sendto of a 16-byte UDP datagram, best of 5 loops of $PKTS), $ROUNDS rounds:"
echo
echo "| round | none | one | vmap16 | unless16 | padded16 |"
echo "|---|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
	a=$(rule)
	b=$(rule ip daddr @big counter drop)
	c=$(rule ip daddr vmap "{ ${V%,} }")
	d=$(rule jump "{ $R counter drop; }")
	e=$(rule jump "{ $P counter drop; }")
	echo "| $r | $a | $b (+$((b - a))) | $c (+$((c - a))) | $d (+$((d - a))) | $e (+$((e - a))) |"
done

# goto vs jump from the verdict map, for a packet the part does not hold:
# the rule after the one with the map counts the packets that reach it.
$X nft flush chain ip t out
$X nft add rule ip t out udp dport 9 ip daddr vmap "{ 192.0.0.0-207.255.255.255 : goto c12 }"
$X nft add rule ip t out udp dport 9 counter
$X "$WORK/send" 10 198.19.1.1 >/dev/null
g=$($X nft list chain ip t out | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
$X nft flush chain ip t out
$X nft add rule ip t out udp dport 9 ip daddr vmap "{ 192.0.0.0-207.255.255.255 : jump c12 }"
$X nft add rule ip t out udp dport 9 counter
$X "$WORK/send" 10 198.19.1.1 >/dev/null
j=$($X nft list chain ip t out | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
echo
echo "50 packets not in part 12 (send: 5 loops of 10): the next rule counts $g after goto c12, $j after jump c12"

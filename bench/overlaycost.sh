#!/usr/bin/env bash
# bench/overlaycost.sh — issue 4's add/del in a 1M hash:net: can one rule
# look an address up in the big interval set OR a small overlay of recent
# changes, so that a change commits only the small set? Measured with nft
# and bench/overlayproto (no xdptables code).
#
# The kernel (6.18) rebuilds an interval set's lookup array from its whole
# tree in every commit that changes it (bench/RESULTS.md, "Where one
# add/del in the 1M hash:net set goes"), so the changes must go to another
# set; a rule is an AND of its expressions, so the OR needs registers:
#   big   interval map address → mark, catch-all element → 0 (the set of
#         today, with a value: 1 for a member)
#   over  set of mark . address intervals: "1 . R" for each range R
#         that the overlay leaves to big, "0 . R" and "1 . R" for each
#         range it says is a member (ranges it says are not: absent)
#   rule  ip daddr → reg 9; big[reg 9] → reg 8; lookup reg 8 . reg 9 in over
#
# Usage: bench/overlaycost.sh   (root; needs nft, strace, cc, python3, go)
#   N=100000   disjoint /24s in big (the 1M bench set's ~100k intervals)
#   REPS=7     commits per figure (median)
#   PKTS=200000 packets per send loop (best of 5)
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
N=${N:-100000}
REPS=${REPS:-7}
PKTS=${PKTS:-200000}
NS="xdpt-overlay-$$"
[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in nft strace cc python3 go; do
	command -v $t >/dev/null || { echo "needs $t" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/xdpt-overlay.XXXXXX)
cleanup() {
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
cd "$(dirname "$0")/.."
go build -o "$WORK/overlayproto" ./bench/overlayproto

python3 - "$WORK" "$N" <<'EOF'
import random, sys
work, n = sys.argv[1], int(sys.argv[2])
random.seed(4)
nets = set()
while len(nets) < n:
    x = random.getrandbits(24)
    if x >> 9 == (198 << 7 | 18 >> 1) or x >> 8 == (198 << 8 | 51) or x == (203 << 16 | 113):
        continue  # 198.18.0.0/15, 198.51.0.0/16, 203.0.113.0/24
    nets.add(x)
nets.pop()
nets.add(203 << 16 | 113)  # the member the packets test (N stays N)
nets = sorted(nets)
def s(x): return "%d.%d.%d.0/24" % (x >> 16, (x >> 8) & 255, x & 255)
with open(work + "/sets.nft", "w") as f:
    f.write("table ip t {\n")
    f.write(" set bigset { type ipv4_addr; flags interval; elements = { %s } }\n" % ", ".join(s(x) for x in nets))
    f.write(" map big { type ipv4_addr : mark; flags interval; elements = { %s, * : 0 } }\n" % ", ".join(s(x) + " : 0x01000000" for x in nets))
    f.write(" set over { type mark . ipv4_addr; flags interval; elements = { 1 . 0.0.0.0-255.255.255.255 } }\n")
    f.write(" chain out { type filter hook output priority 0; }\n")
    f.write("}\n")
EOF
M=203.0.113

cc -O2 -o "$WORK/send" "$BENCH/udpsend.c"

ip netns add "$NS"
X="ip netns exec $NS"
$X ip link set lo up
$X ip link add oc0 type veth peer name oc1
$X ip link set oc0 up
$X ip link set oc1 up
$X ip addr add 198.18.0.1/15 dev oc0
for d in 198.51.100.7 198.19.1.1 "$M.7"; do
	$X ip route add "$d/32" dev oc0
	$X ip neigh add "$d" lladdr 02:00:00:00:00:01 dev oc0
done
$X nft -f "$WORK/sets.nft"

# batch FILE → ms of the sendmsg that carries nft's batch for FILE
batch() {
	$X strace -T -e trace=sendmsg nft -f "$1" 2>&1 >/dev/null |
		sed -n 's/.*<\([0-9.]*\)>$/\1/p' | sort -n | tail -1
}
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] * 1000 }'; }
# the overlay adds 198.51.100.0/24 (a member) and takes $M.0/24 out
# (the /24 before $M.0/24 ends at $M.0 - 1: written as a range below)
python3 - "$WORK" "$M" <<'EOF'
import sys
work, m = sys.argv[1], sys.argv[2]
a, b, c = map(int, m.split("."))
x = (a << 16 | b << 8 | c)
def ip(v): return "%d.%d.%d.%d" % (v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255)
lo, hi = x << 8, (x << 8) | 255
els = ["1 . 0.0.0.0-198.51.99.255", "0 . 198.51.100.0/24", "1 . 198.51.100.0/24",
       "1 . 198.51.101.0-%s" % ip(lo - 1), "1 . %s-255.255.255.255" % ip(hi + 1)]
open(work + "/over-on", "w").write("delete element ip t over { 1 . 0.0.0.0-255.255.255.255 }\nadd element ip t over { %s }\n" % ", ".join(els))
open(work + "/over-off", "w").write("delete element ip t over { %s }\nadd element ip t over { 1 . 0.0.0.0-255.255.255.255 }\n" % ", ".join(els))
EOF
echo "add element ip t bigset { 198.51.100.0/24 }" >"$WORK/big-add"
echo "delete element ip t bigset { 198.51.100.0/24 }" >"$WORK/big-del"

echo "machine: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); big: $N intervals"
echo
echo "Kernel commit (the sendmsg of nft's batch), median of $REPS, ms:"
echo
echo "| change | ms |"
echo "|---|---:|"
: >"$WORK/a"; : >"$WORK/d"; : >"$WORK/o"; : >"$WORK/f"
for _ in $(seq "$REPS"); do
	batch "$WORK/big-add" >>"$WORK/a"
	batch "$WORK/big-del" >>"$WORK/d"
	batch "$WORK/over-on" >>"$WORK/o"
	batch "$WORK/over-off" >>"$WORK/f"
done
echo "| add one /24 to the $N-interval set (today) | $(median <"$WORK/a") |"
echo "| delete it again | $(median <"$WORK/d") |"
echo "| overlay: add 198.51.100.0/24 and take $M.0/24 out (over rewritten) | $(median <"$WORK/o") |"
echo "| overlay: back to empty | $(median <"$WORK/f") |"

$X "$WORK/overlayproto" t out big over
rc=0
$X nft list chain ip t out >/dev/null 2>"$WORK/nfterr" || rc=$?
echo
echo "\`nft list chain ip t out\` with the overlay rule: exit $rc, $(tr '\n' ' ' <"$WORK/nfterr")"
echo "(and so does \`nft list ruleset\`, for every table of the machine)"

# verdicts: a packet the rule drops never reaches the interface, so its
# TX packet count tells (nft cannot list the rule's counter)
sent() { $X ip -s link show oc0 | awk '/TX:/ { getline; print $2 }'; }
verdicts() {
	local out="" d b a
	for d in "$M.7" 198.51.100.7 198.19.1.1; do
		b=$(sent)
		$X "$WORK/send" 2 "$d" >/dev/null 2>&1 || true
		a=$(sent)
		if [ "$((a - b))" = 0 ]; then out="$out $d dropped;"; else out="$out $d passed;"; fi
	done
	echo "$out"
}
echo
echo "Verdicts of the overlay rule ($M.0/24 is in big, 198.51.100.0/24 is not):"
echo "- overlay empty:$(verdicts)"
$X nft -f "$WORK/over-on"
echo "- overlay adds 198.51.100.0/24, takes $M.0/24 out:$(verdicts)"
$X nft -f "$WORK/over-off"

rule() {
	$X nft flush chain ip t out
	if [ "$1" = overlay ]; then
		$X "$WORK/overlayproto" t out big over
	elif [ "$1" != none ]; then
		$X nft add rule ip t out meta l4proto udp "$@"
	fi
	$X "$WORK/send" "$PKTS" 198.19.1.1
}
echo
echo "CPU ns per packet to 198.19.1.1 (not a member), sender thread, best of 5 loops of $PKTS:"
echo
echo "| round | no rule | ip daddr @bigset (today) | overlay rule |"
echo "|---|---:|---:|---:|"
for r in 1 2 3; do
	a=$(rule none)
	b=$(rule ip daddr @bigset counter drop)
	c=$(rule overlay)
	echo "| $r | $a | $b (+$((b - a))) | $c (+$((c - a))) |"
done

#!/usr/bin/env bash
# bench/setlayout.sh — kernel cost of candidate nftables layouts for one
# large ipset set (issue: list/save of a 1M hash:ip set is quadratic).
# Not xdptables against ipset: plain nft sets built with nft, to decide
# how a large set should be stored before changing xdptables.
#
# Usage: bench/setlayout.sh   (run as root)
#   N=1000000      elements (random IPv4 host addresses, fixed seed)
#   K=128          shards of the sharded layouts
#   ENC="plain timeout counter"   element encodings dumped as one set
#   FRAMES=1000000 frames per packet-path measurement (0: skip it)
#   ROUNDS=3       rounds of the packet-path measurement
#   TAG=name       put into the network namespaces' names
#
# 1. Dump: one set of N elements in each encoding (plain; every element
#    with a timeout; a counter on every element), then the same N plain
#    elements in K sets of N/K, read with bench/setdump as ipset list
#    does. The kernel walks a set from its start for every 32 KiB
#    datagram of a dump, so one set costs time quadratic in N and K sets
#    about 1/K of that; the encoding sets how many elements a datagram
#    holds.
# 2. Load: nft -f of the one-set and the K-set layout (process time of
#    nft: its parsing is the same for both, the difference is the kernel's
#    inserts).
# 3. Packet path: frames from 4096 sources (198.18.0.0/20, all members)
#    dropped in prerouting by (one) `ip saddr @set counter drop` on the
#    one set, (jhash) `jhash ip saddr mod K vmap { i : jump cI }` with
#    `ip saddr @sI counter drop` in chain cI, (bits) the same dispatched
#    on `ip saddr & 0.0.0.(K-1)`. The sources are put in every shard, so
#    the figures are the dispatch's cost, whatever hash places members.
#    Thread CPU per frame of the generator (bench/xdpgen; the receive
#    path runs in its softirq), best of ROUNDS: on a shared machine other
#    jobs only slow a measurement down.
set -euo pipefail

N=${N:-1000000}
K=${K:-128}
ENC=${ENC-"plain timeout counter"}
FRAMES=${FRAMES:-1000000}
ROUNDS=${ROUNDS:-3}
TAG=${TAG:-}

[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in ip nft python3 go /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
[ $((K & (K - 1))) = 0 ] && [ "$K" -le 256 ] || { echo "K must be a power of two up to 256" >&2; exit 1; }

WORK=$(mktemp -d /tmp/xdpt-setlayout.XXXXXX)
PFX=xdpt-sl${TAG:+-$TAG}-$$
created=()
cleanup() {
	for ns in "${created[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
newns() { ip netns add "$1"; created+=("$1"); }

go build -o "$WORK/setdump" ./bench/setdump
go build -o "$WORK/xdpgen" ./bench/xdpgen

python3 - "$WORK" "$N" "$K" <<'EOF'
import random, sys
work, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(4)
hits = ["198.18.%d.%d" % (i >> 8, i & 255) for i in range(4096)]
seen = set()
while len(seen) < n - len(hits):
    a = rnd.getrandbits(32) | 0x01000000
    if a >> 17 != 0xc612 >> 1:  # 198.18.0.0/15: the sources only
        seen.add(a)
others = ["%d.%d.%d.%d" % (a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255) for a in seen]
def adds(f, name, elems, suffix=""):
    for i in range(0, len(elems), 10000):
        f.write("add element ip xdptables %s { %s }\n" % (name, ", ".join(e + suffix for e in elems[i:i + 10000])))
flags = {"plain": "flags dynamic;", "timeout": "flags dynamic,timeout;", "counter": "flags dynamic; counter;"}
for enc, fl in flags.items():
    with open("%s/one-%s.nft" % (work, enc), "w") as f:
        f.write("table ip xdptables {\n set one { type ipv4_addr; size %d; %s }\n}\n" % (n + 16, fl))
        adds(f, "one", hits + others, " timeout 1h" if enc == "timeout" else "")
shards = [[] for _ in range(k)]
for i, a in enumerate(others):
    shards[i % k].append(a)
with open(work + "/shards.nft", "w") as f:
    f.write("table ip xdptables {\n")
    for i in range(k):
        f.write(" set s%d { type ipv4_addr; flags dynamic; }\n" % i)
    f.write("}\n")
    for i in range(k):
        adds(f, "s%d" % i, shards[i] + (hits if i == 0 else []))
# packet path: sources in every shard
with open(work + "/pkt-shards.nft", "w") as f:
    for i in range(k):
        adds(f, "s%d" % i, hits)
def dispatch(sel, key):
    with open("%s/pkt-%s.nft" % (work, sel), "w") as f:
        f.write("table ip xdptables {\n")
        for i in range(k):
            f.write(" chain c%d { ip saddr @s%d counter drop; }\n" % (i, i))
        f.write(" chain pre { type filter hook prerouting priority -300; %s vmap { %s }; }\n}\n"
                % (sel == "jhash" and "jhash ip saddr mod %d seed 0x0" % k or "ip saddr & 0.0.0.%d" % (k - 1),
                   ", ".join("%s : jump c%d" % (key(i), i) for i in range(k))))
dispatch("jhash", str)
dispatch("bits", lambda i: "0.0.0.%d" % i)
with open(work + "/pkt-one.nft", "w") as f:
    f.write("table ip xdptables {\n chain pre { type filter hook prerouting priority -300; ip saddr @one counter drop; }\n}\n")
EOF

# load NS FILE LABEL: nft -f in NS, process time
load() {
	/usr/bin/time -f "%e %U %S %M" -o "$WORK/t" ip netns exec "$1" nft -f "$2"
	read -r w u s m <"$WORK/t"
	echo "load $3: wall=${w}s user=${u}s sys=${s}s"
}

echo "== $(uname -srm), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); N=$N K=$K"
for enc in $ENC; do
	newns "$PFX-$enc"
	load "$PFX-$enc" "$WORK/one-$enc.nft" "one set ($enc)"
	echo -n "dump one set ($enc): "
	ip netns exec "$PFX-$enc" "$WORK/setdump" one | tail -1
done
newns "$PFX-shards"
load "$PFX-shards" "$WORK/shards.nft" "$K sets (plain)"
echo -n "dump $K sets (plain): "
ip netns exec "$PFX-shards" "$WORK/setdump" $(seq -f "s%g" 0 $((K - 1))) | tail -1

[ "$FRAMES" -gt 0 ] || exit 0
# packet path, in the namespaces of the plain one-set and K-set layouts
pair() { # CASE RXNS
	local tx=$PFX-$1-tx
	newns "$tx"
	ip link add veth0 netns "$2" type veth peer name "veth-$1" netns "$tx"
	ip -n "$2" link set veth0 name "rx-$1"
	ip -n "$2" addr add "198.51.100.$3/32" dev "rx-$1"
	ip -n "$tx" link set lo up
	ip -n "$2" link set "rx-$1" up
	ip -n "$tx" link set "veth-$1" up
	ip netns exec "$2" "$WORK/xdpgen" gro -iface "rx-$1"
}
case_ns() { case $1 in one) echo "$PFX-plain" ;; *) echo "$PFX-$1" ;; esac; }
[[ " $ENC " == *" plain "* ]] || { echo "packet path needs ENC with plain" >&2; exit 1; }
ip netns exec "$PFX-plain" nft -f "$WORK/pkt-one.nft"
ip netns exec "$PFX-shards" nft -f "$WORK/pkt-shards.nft"
i=1
for c in jhash bits; do
	newns "$PFX-$c"
	ip netns exec "$PFX-$c" nft -f "$WORK/shards.nft"
	ip netns exec "$PFX-$c" nft -f "$WORK/pkt-shards.nft"
	ip netns exec "$PFX-$c" nft -f "$WORK/pkt-$c.nft"
done
for c in one jhash bits; do
	pair "$c" "$(case_ns "$c")" "$i"
	i=$((i + 1))
done
for r in $(seq "$ROUNDS"); do
	for c in one jhash bits; do
		rx=$(case_ns "$c")
		mac=$(ip netns exec "$rx" cat "/sys/class/net/rx-$c/address")
		out=$(ip netns exec "$PFX-$c-tx" timeout 120 "$WORK/xdpgen" send -iface "veth-$c" -dst-mac "$mac" \
			-sources 4096 -n "$FRAMES" -cpu 0 -max-time 5s)
		echo "$c $out" >>"$WORK/pkt"
	done
done
python3 - "$WORK/pkt" <<'EOF'
import re, sys
best = {}
for line in open(sys.argv[1]):
    c = line.split()[0]
    f = int(re.search(r"frames=(\d+)", line).group(1))
    cpu = int(re.search(r"cpu=(\d+)", line).group(1))
    best[c] = min(best.get(c, 1e18), cpu / f)
for c in ("one", "jhash", "bits"):
    if c in best:
        print("packet path %-5s: %.0f ns/frame thread CPU (best), +%.0f ns over one" % (c, best[c], best[c] - best["one"]))
EOF

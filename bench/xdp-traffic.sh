#!/bin/bash
# XDP fast path under traffic (root): 64-byte UDP/IPv4 frames from
# SOURCES sources flood a veth pair between two namespaces; we count
# what the receiving side drops per second for:
#   drop-all        a trivial XDP program that drops everything (ceiling)
#   xdpt-*          xdptables' XDP path (native; one generic row)
#   xdpt-*-nft      the same xdptables rules with XDP not attached
#   ref-*           iptables-nft 1.8.9 (and ipset 7.17) in raw PREROUTING
#   xdp-filter      xdp-tools' xdp-filter (port mode: its IP mode takes
#                   exact addresses only), against xdpt-port, same rule
# Rule sets: "1" = -s 198.18.0.0/16 -j DROP; "10k" = RULES-1 rules that
# never match, then that rule (the hit rule last: the worst case for a
# linear search); "set" = -m set --match-set bl src -j DROP on a hash:net
# set of SET entries (SET-1 /30s in 10.0.0.0/8, never sent to, and
# 198.18.0.0/16). Every case gets its own pair of namespaces, set up once;
# then ROUNDS rounds measure every case in turn. The table shows the
# best round of each case (on a shared machine other jobs only ever slow
# a measurement down) and the median; ratios are of the best rounds.
#
# The generator (bench/xdpgen) runs XDP in live-frame mode on the sending
# veth, pinned to CPU; veth delivers into the peer's NAPI, whose softirq
# runs on the same CPU, so a frame's time is generator + receiver: the
# "ns/frame" column includes the generator's fixed share, and "above
# drop-all" is the receiving side's cost beyond the ceiling program.
# "thread CPU" is the generator thread's CPU time per frame: it includes
# the receive softirq work done on the way out of its syscalls, not work
# deferred to ksoftirqd (so it is a lower bound). It is the steadier
# measure on a shared machine: other jobs stretch the wall time, not it.
# GRO is on for the receiving veth (without a native XDP program, a veth
# takes redirected frames only with GRO on).
#
# Environment: N frames per measurement (1000000; fewer when MAXTIME,
# 3s, is reached first: the reference with 10k rules), ROUNDS (5), RULES
# (10000), SET (1000000; 0 skips the set cases), SOURCES (65536), CPU (0),
# TAG (netns name tag, "xb"), CASES (space-separated subset).
set -euo pipefail
BIN=$(realpath "${1:-bin/xdptables}")
if [ "$(id -u)" != 0 ]; then
	echo "xdp-traffic.sh needs root (namespaces, XDP)" >&2
	exit 1
fi
# Run in a private mount namespace: the bpffs that holds xdptables' pins
# (at its fallback path, as `ip netns exec` hides /sys/fs/bpf) is then
# ours alone, and nothing another job mounts or unmounts there reaches
# it. It goes away with the script.
if [ -z "${XDPT_TRAFFIC_PRIVATE:-}" ]; then
	XDPT_TRAFFIC_PRIVATE=1 exec unshare -m --propagation private bash "$(realpath "$0")" "$BIN"
fi
cd "$(dirname "$0")/.."
N=${N:-1000000}
ROUNDS=${ROUNDS:-5}
RULES=${RULES:-10000}
SET=${SET:-1000000}
SOURCES=${SOURCES:-65536}
CPU=${CPU:-0}
MAXTIME=${MAXTIME:-3s}
TAG=${TAG:-xb}
ALL="drop-all xdpt-1 xdpt-10k xdpt-set xdpt-1-generic xdpt-10k-nft ref-1 ref-10k ref-set xdpt-port xdp-filter"
[ "$SET" = 0 ] && ALL=$(echo "$ALL" | sed 's/ xdpt-set\| ref-set//g')
CASES=${CASES:-$ALL}

for t in iptables-nft iptables-nft-restore ipset python3; do
	command -v $t >/dev/null || { echo "xdp-traffic.sh: $t not installed" >&2; exit 1; }
done
if ! command -v xdp-filter >/dev/null; then
	echo "xdp-traffic.sh: xdp-filter (xdp-tools) not installed: skipping its case" >&2
	CASES=$(echo " $CASES " | sed 's/ xdp-filter / /')
fi

work=$(mktemp -d /tmp/xdpt-traffic.XXXXXX)
pfx="xdpt-$TAG-$$"
created=()
cleanup() {
	set +e
	for c in $CASES; do
		rx="$pfx-$c-rx"
		ip netns exec "$rx" true 2>/dev/null || continue
		case $c in
		xdpt-*) ip netns exec "$rx" timeout 120 "$BIN" xdp detach veth0 >/dev/null 2>&1 ;;
		xdp-filter) LIBXDP_BPFFS=$work/bpf ip netns exec "$rx" timeout 60 xdp-filter unload veth0 >/dev/null 2>&1 ;;
		esac
	done
	rm -f "$work"/bpf/link-* 2>/dev/null
	for ns in "${created[@]}"; do ip netns del "$ns" 2>/dev/null; done
	umount "$work/bpf" 2>/dev/null
	umount /run/xdptables/bpffs 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bpffs: one for our own pins and xdp-filter's (libxdp), one at
# xdptables' fallback path; both in this mount namespace only.
mkdir -p "$work/bpf" /run/xdptables/bpffs
mount -t bpf bpf "$work/bpf"
mount -t bpf bpf /run/xdptables/bpffs

go build -o "$work/xdpgen" ./bench/xdpgen
gen=$work/xdpgen

# Rule and set files.
{
	echo "*raw"
	awk -v n="$RULES" 'BEGIN { for (i = 0; i < n - 1; i++) printf "-A PREROUTING -s 198.19.%d.%d/32 -j DROP\n", int(i / 256) % 256, i % 256 }'
	echo "-A PREROUTING -s 198.18.0.0/16 -j DROP"
	echo "COMMIT"
} >"$work/rules10k"
if [ "$SET" != 0 ]; then
	{
		echo "create bl hash:net maxelem $((SET + 16))"
		echo "add bl 198.18.0.0/16"
		awk -v n="$SET" 'BEGIN { for (i = 0; i < n - 1; i++) printf "add bl 10.%d.%d.%d/30\n", int(i / 16384) % 256, int(i / 64) % 256, (i % 64) * 4 }'
	} >"$work/set"
fi

T() { timeout "${2:-300}" bash -c "$1"; }
R() { ip netns exec "$rx" "$@"; }

setup() { # case
	local c=$1
	rx="$pfx-$c-rx" tx="$pfx-$c-tx"
	ip netns add "$rx"; created+=("$rx")
	ip netns add "$tx"; created+=("$tx")
	ip link add veth0 netns "$rx" type veth peer name veth1 netns "$tx"
	ip -n "$rx" addr add 198.51.100.1/24 dev veth0
	ip -n "$tx" addr add 198.51.100.2/24 dev veth1
	ip -n "$rx" link set lo up; ip -n "$rx" link set veth0 up
	ip -n "$tx" link set lo up; ip -n "$tx" link set veth1 up
	R "$gen" gro -iface veth0
	case $c in
	drop-all) R "$gen" attach -iface veth0 -prog drop -pin "$work/bpf/link-$c" ;;
	xdpt-1 | xdpt-1-generic) R "$BIN" iptables -t raw -A PREROUTING -s 198.18.0.0/16 -j DROP ;;
	xdpt-10k | xdpt-10k-nft) R timeout 300 "$BIN" iptables-restore "$work/rules10k" ;;
	xdpt-set)
		R timeout 600 "$BIN" ipset restore -f "$work/set"
		R "$BIN" iptables -t raw -A PREROUTING -m set --match-set bl src -j DROP ;;
	xdpt-port) R "$BIN" iptables -t raw -A PREROUTING -p udp --dport 9 -j DROP ;;
	ref-1) R iptables-nft -t raw -A PREROUTING -s 198.18.0.0/16 -j DROP ;;
	ref-10k) R timeout 300 iptables-nft-restore "$work/rules10k" ;;
	ref-set)
		R timeout 600 ipset restore -f "$work/set"
		R iptables-nft -t raw -A PREROUTING -m set --match-set bl src -j DROP ;;
	xdp-filter)
		LIBXDP_BPFFS=$work/bpf R timeout 60 xdp-filter load -m native -f udp veth0
		LIBXDP_BPFFS=$work/bpf R timeout 60 xdp-filter port -m dst -p udp 9 ;;
	*) echo "unknown case $c" >&2; return 1 ;;
	esac
	case $c in
	xdpt-1-generic) R timeout 600 "$BIN" xdp attach veth0 --mode generic >/dev/null ;;
	xdpt-*-nft) ;;
	xdpt-*) R timeout 600 "$BIN" xdp attach veth0 --mode native >/dev/null ;;
	esac
}

# What reached the UDP layer (passed every filter).
udp_in() { R awk '/^Udp:/ { if (n++) print $2 + $3 + $4 }' /proc/net/snmp; }
stat_of() { R cat "/sys/class/net/veth0/statistics/$1"; }

measure() { # case round
	local c=$1
	rx="$pfx-$c-rx" tx="$pfx-$c-tx"
	local mode
	mode=$(ip -n "$rx" -d link show veth0 | grep -o 'xdpgeneric\|xdp ' | head -1 || true)
	case $c in
	*-nft | ref-*) want="" ;;
	*-generic) want="xdpgeneric" ;;
	*) want="xdp " ;;
	esac
	if [ "$mode" != "$want" ]; then
		echo "$c: XDP attachment is '${mode}', expected '${want}': skipped" >&2
		return 0
	fi
	local mac rx0 rx1 d0 d1 u0 u1 out
	mac=$(R cat /sys/class/net/veth0/address)
	rx0=$(stat_of rx_packets) d0=$(stat_of rx_dropped) u0=$(udp_in)
	if ! out=$(ip netns exec "$tx" timeout 120 "$gen" send -iface veth1 -dst-mac "$mac" -sources "$SOURCES" -n "$N" -cpu "$CPU" -max-time "$MAXTIME"); then
		echo "$c: the generator failed (live-frame mode needs Linux 5.18)" >&2
		return 0
	fi
	rx1=$(stat_of rx_packets) d1=$(stat_of rx_dropped) u1=$(udp_in)
	echo "$c $out rx=$((rx1 - rx0)) ringdrop=$((d1 - d0)) passed=$((u1 - u0))" | tee -a "$work/raw" >&2
}

echo "== setting up: $CASES" >&2
for c in $CASES; do
	s=$(date +%s.%N)
	setup "$c"
	echo "$c set up in $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" >&2
done
for r in $(seq "$ROUNDS"); do
	echo "== round $r" >&2
	for c in $CASES; do measure "$c"; done
done

echo "- machine: $(uname -srm), $(nproc) CPUs; up to $N frames (or $MAXTIME) of 64 bytes per measurement from $SOURCES sources, $ROUNDS rounds; generator and receive softirq on CPU $CPU"
echo "- rule sets: 1 rule; $RULES rules (hit rule last); hash:net set of $SET entries; xdp-filter: port 9/udp, xdpt-port: -p udp --dport 9 -j DROP"
echo
python3 - "$work/raw" "$CASES" <<'EOF'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=") for x in f[1:])
    frames, ns, cpu = int(kv["frames"]), int(kv["ns"]), int(kv["cpu"])
    dropped = int(kv["rx"]) - int(kv["passed"])
    rows.setdefault(f[0], []).append((dropped / ns * 1e3, ns / frames, cpu / frames, int(kv["passed"]), int(kv["ringdrop"])))
# best of the rounds: the machine is shared, and other jobs only ever
# make a measurement slower
res = {c: dict(mpps=max(r[0] for r in v), med=statistics.median(r[0] for r in v),
               nsf=min(r[1] for r in v), cpu=min(r[2] for r in v),
               passed=max(r[3] for r in v), ring=max(r[4] for r in v)) for c, v in rows.items()}
ref = {"xdpt-1": "ref-1", "xdpt-10k": "ref-10k", "xdpt-set": "ref-set", "xdpt-1-generic": "ref-1",
       "xdpt-10k-nft": "ref-10k", "xdpt-port": "xdp-filter"}
base = res.get("drop-all")
print("| case | dropped Mpps (best) | median | ns/frame | above drop-all (ns) | pps × drop-all | pps × reference | thread CPU ns/frame | CPU / drop-all's | reference's CPU / this | reference | passed / ring-dropped |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
for c in sys.argv[2].split():
    if c not in res:
        print(f"| {c} | – | | | | | | | | | | (not measured) |")
        continue
    x = res[c]
    vb = f"{x['mpps'] / base['mpps']:.2f}" if base else ""
    ab = f"{x['nsf'] - base['nsf']:.0f}" if base else ""
    r = ref.get(c)
    vr = f"{x['mpps'] / res[r]['mpps']:.2f}" if r in res else ""
    cb = f"{x['cpu'] / base['cpu']:.2f}" if base else ""
    cr = f"{res[r]['cpu'] / x['cpu']:.2f}" if r in res else ""
    print(f"| {c} | {x['mpps']:.2f} | {x['med']:.2f} | {x['nsf']:.0f} | {ab} | {vb} | {vr} | {x['cpu']:.0f} | {cb} | {cr} | {r if r in res else ''} | {x['passed']} / {x['ring']} |")
EOF

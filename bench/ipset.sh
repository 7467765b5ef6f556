#!/usr/bin/env bash
# bench/ipset.sh — xdptables' ipset vs the reference ipset, side by side.
#
# Usage: bench/ipset.sh [BIN]   (BIN defaults to bin/xdptables; run as root)
#   BIG=1000000     elements of the big hash:net set
#   SMALL=100000    elements of the hash:ip and hash:net restores
#   REPS=20         repetitions of add/test/del (mean per command)
#   BIGIP=0         elements of a big hash:ip set whose restore, list and
#                   save are measured too (0: not measured)
#   NSTAG=          inserted into the names of the namespaces
#   OUT=bench/RESULTS.md   the table goes to $OUT.ipset.run ("-": stdout only)
#
# Each tool runs in its own network namespace. Restore, list and save are
# timed with /usr/bin/time around `ip netns exec` (wall time, peak RSS);
# CPU is user + system time of the process (kernel work done in its
# system calls included), less sensitive to a loaded machine than wall
# time. Single commands are timed inside the namespace (REPS runs of one
# command in a loop, no ip netns exec in the figure), each element added
# and then deleted again: in the big set (an address range the set does
# not cover, and a /28 nested in one of its entries), in an empty set and
# in the hash:ip set.
set -euo pipefail

BIN=${1:-bin/xdptables}
BIG=${BIG:-1000000}
SMALL=${SMALL:-100000}
REPS=${REPS:-20}
BIGIP=${BIGIP:-0}
NSTAG=${NSTAG:-}
OUT=${OUT:-bench/RESULTS.md}

[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in ip ipset python3 /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/xdpt-ipbench.XXXXXX)
NSREF=xdpt-ipb$NSTAG-ref-$$
NSOURS=xdpt-ipb$NSTAG-ours-$$
cleanup() {
	ip netns del "$NSREF" 2>/dev/null || true
	ip netns del "$NSOURS" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$NSREF"
ip netns add "$NSOURS"
mkdir "$WORK/ours"
ln -s "$(readlink -f "$BIN")" "$WORK/ours/ipset"

# Inputs: random addresses and prefixes from a fixed seed (blocklist-like:
# hosts and /16../31 networks, a few of them nested).
python3 - "$WORK" "$SMALL" "$BIG" "$BIGIP" <<'EOF'
import random, sys
work, small, big, bigip = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(4)
def ips(n):
    seen = set()
    while len(seen) < n:
        seen.add(rnd.getrandbits(32) | 0x01000000)
    return ["%d.%d.%d.%d" % (a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255) for a in seen]
def nets(n):
    seen = set()
    while len(seen) < n:
        bits = rnd.choice([32] * 4 + [24] * 4 + list(range(16, 32)))
        a = (rnd.getrandbits(32) | 0x01000000) & (0xffffffff << (32 - bits)) & 0xffffffff
        if a >> 17 == 0xc612 >> 1:
            continue  # 198.18.0.0/15 is kept free for the single commands
        seen.add((a, bits))
    return ["%d.%d.%d.%d/%d" % (a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255, b) for a, b in seen]
def write(path, name, typ, elems):
    with open(path, "w") as f:
        f.write("create %s %s maxelem %d\n" % (name, typ, max(65536, 2 * len(elems))))
        for e in elems:
            f.write("add %s %s\n" % (name, e))
write(work + "/ip.txt", "bip", "hash:ip", ips(small))
if bigip:
    write(work + "/bigip.txt", "bigip", "hash:ip", ips(bigip))
write(work + "/net.txt", "bnet", "hash:net", nets(small))
bignets = nets(big)
write(work + "/big.txt", "big", "hash:net", bignets)
# a /28 nested in one of the big set's /16 entries
outer = next(e for e in bignets if e.endswith("/16"))
with open(work + "/nested", "w") as f:
    f.write(outer.split("/")[0].rsplit(".", 2)[0] + ".77.16/28\n")
EOF

# timed KIND ARGS... → "seconds rssKB cpuseconds" of `ip netns exec NS ipset ARGS`
timed() {
	local kind=$1
	shift
	local ns=$NSREF cmd=ipset
	if [ "$kind" = ours ]; then ns=$NSOURS cmd=$WORK/ours/ipset; fi
	/usr/bin/time -f "%e %M %U %S" -o "$WORK/time" ip netns exec "$ns" "$cmd" "$@" >/dev/null
	tail -1 "$WORK/time" | awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }'
}

# percmd KIND SET ELEM [REPS] → mean ms of add, test, del of ELEM in SET
percmd() {
	local kind=$1 set=$2 el=$3 reps=${4:-$REPS}
	local ns=$NSREF cmd=ipset
	if [ "$kind" = ours ]; then ns=$NSOURS cmd=$WORK/ours/ipset; fi
	ip netns exec "$ns" bash -c '
		cmd=$1 set=$2 el=$3 reps=$4
		a=0 t=0 d=0
		for i in $(seq "$reps"); do
			s=$(date +%s%N); "$cmd" add "$set" "$el"; e=$(date +%s%N); a=$((a + e - s))
			s=$(date +%s%N); "$cmd" test "$set" "$el" 2>/dev/null; e=$(date +%s%N); t=$((t + e - s))
			s=$(date +%s%N); "$cmd" del "$set" "$el"; e=$(date +%s%N); d=$((d + e - s))
		done
		echo "$a $t $d" | awk -v r="$reps" "{ printf \"%.2f %.2f %.2f\n\", \$1/r/1e6, \$2/r/1e6, \$3/r/1e6 }"
	' _ "$cmd" "$set" "$el" "$reps"
}

ROWS=()
row() { # name ref(t m cpu) ours(t m cpu)
	ROWS+=("$(awk -v n="$1" -v rt="$2" -v rm="$3" -v rc="$4" -v ot="$5" -v om="$6" -v oc="$7" 'BEGIN {
		printf "| %s | %.2f s | %.2f s | %.1f MB | %.2f s | %.2f s | %.1f MB | %.2f× | %.2f× | %.2f× |", n, rt, rc, rm/1024, ot, oc, om/1024, ot/rt, oc/rc, om/rm }')")
}

for k in ref ours; do
	r=$(timed "$k" restore -f "$WORK/ip.txt")
	eval "ip_$k=(\$r)"
	r=$(timed "$k" restore -f "$WORK/net.txt")
	eval "net_$k=(\$r)"
	r=$(timed "$k" restore -f "$WORK/big.txt")
	eval "big_$k=(\$r)"
	r=$(timed "$k" list big)
	eval "list_$k=(\$r)"
	r=$(timed "$k" save big)
	eval "save_$k=(\$r)"
	r=$(timed "$k" -o xml list big)
	eval "xml_$k=(\$r)"
	if [ "$BIGIP" != 0 ]; then
		r=$(timed "$k" restore -f "$WORK/bigip.txt")
		eval "bigip_$k=(\$r)"
		r=$(timed "$k" list bigip)
		eval "listip_$k=(\$r)"
		r=$(timed "$k" save bigip)
		eval "saveip_$k=(\$r)"
	fi
	ip netns exec "$([ $k = ref ] && echo $NSREF || echo $NSOURS)" \
		"$([ $k = ref ] && echo ipset || echo $WORK/ours/ipset)" create empty hash:net
	r=$(percmd "$k" big 198.18.7.0/24)
	eval "one_$k=(\$r)"
	r=$(percmd "$k" empty 198.18.7.0/24)
	eval "oneempty_$k=(\$r)"
	r=$(percmd "$k" bip 198.18.7.7)
	eval "oneip_$k=(\$r)"
	r=$(percmd "$k" big "$(cat "$WORK/nested")" 2)
	eval "nested_$k=(\$r)"
done
row "restore $SMALL hash:ip" "${ip_ref[@]}" "${ip_ours[@]}"
row "restore $SMALL hash:net" "${net_ref[@]}" "${net_ours[@]}"
row "restore $BIG hash:net" "${big_ref[@]}" "${big_ours[@]}"
row "list $BIG set" "${list_ref[@]}" "${list_ours[@]}"
row "save $BIG set" "${save_ref[@]}" "${save_ours[@]}"
row "list -o xml $BIG set" "${xml_ref[@]}" "${xml_ours[@]}"
if [ "$BIGIP" != 0 ]; then
	row "restore $BIGIP hash:ip" "${bigip_ref[@]}" "${bigip_ours[@]}"
	row "list $BIGIP hash:ip set" "${listip_ref[@]}" "${listip_ours[@]}"
	row "save $BIGIP hash:ip set" "${saveip_ref[@]}" "${saveip_ours[@]}"
fi

{
	echo "## ipset: run of $(date -u '+%Y-%m-%d %H:%M') UTC"
	echo
	echo "- machine: $(uname -srm), $(nproc) CPUs; reference: $(ipset -v | head -1)"
	echo
	echo "| operation | ipset time | ipset CPU | ipset peak RSS | xdptables time | xdptables CPU | xdptables peak RSS | time ratio | CPU ratio | RSS ratio |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "Single commands, mean of $REPS (ms, inside the namespace, process start included):"
	echo
	echo "| command | ipset | xdptables | ratio |"
	echo "|---|---|---|---|"
	i=0
	for what in add test del; do
		awk -v w="$what" -v r1="${one_ref[$i]}" -v o1="${one_ours[$i]}" -v r0="${oneempty_ref[$i]}" -v o0="${oneempty_ours[$i]}" \
			-v ri="${oneip_ref[$i]}" -v oi="${oneip_ours[$i]}" -v rn="${nested_ref[$i]}" -v on="${nested_ours[$i]}" \
			-v big="$BIG" -v small="$SMALL" 'BEGIN {
			printf "| %s in the %d hash:net set | %.2f | %.2f | %.2f× |\n", w, big, r1, o1, o1/r1
			printf "| %s in an empty hash:net set | %.2f | %.2f | %.2f× |\n", w, r0, o0, o0/r0
			printf "| %s in the %d hash:ip set | %.2f | %.2f | %.2f× |\n", w, small, ri, oi, oi/ri
			printf "| %s of a /28 nested in an entry of the %d set (mean of 2) | %.2f | %.2f | %.2f× |\n", w, big, rn, on, on/rn
			printf "| %s: big set / empty set | %.2f× | %.2f× | |\n", w, r1/r0, o1/o0 }'
		i=$((i + 1))
	done
} >"$WORK/report"
cat "$WORK/report"
if [ "$OUT" != - ]; then
	cp "$WORK/report" "$OUT.ipset.run"
	echo "(table written to $OUT.ipset.run)"
fi

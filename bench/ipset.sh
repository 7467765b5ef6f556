#!/usr/bin/env bash
# bench/ipset.sh — xdptables' ipset vs the reference ipset, side by side.
#
# Usage: bench/ipset.sh [BIN]   (BIN defaults to bin/xdptables; run as root)
#   BIG=1000000     elements of the big hash:net set
#   SMALL=100000    elements of the hash:ip and hash:net restores
#   REPS=20         repetitions of add/test/del (mean per command)
#   BIGIP=1000000   elements of a big hash:ip set (maxelem 2*BIGIP: shard
#                   copies) whose restore, list and save are measured too
#                   (0: not measured)
#   NSTAG=          inserted into the names of the namespaces
#   OLD=            a second xdptables binary (e.g. the previous commit's),
#                   measured in a third namespace: "before" columns
#   SPACED=5        add/del pairs in the big set with 1.1 s between
#                   commands (a single change after a quiet second, the
#                   fail2ban pattern; 0: not measured)
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
BIGIP=${BIGIP:-1000000}
NSTAG=${NSTAG:-}
OLD=${OLD:-}
SPACED=${SPACED:-5}
OUT=${OUT:-bench/RESULTS.md}

[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in ip ipset python3 /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/xdpt-ipbench.XXXXXX)
NSREF=xdpt-ipb$NSTAG-ref-$$
NSOURS=xdpt-ipb$NSTAG-ours-$$
NSOLD=xdpt-ipb$NSTAG-old-$$
cleanup() {
	ip netns del "$NSREF" 2>/dev/null || true
	ip netns del "$NSOURS" 2>/dev/null || true
	ip netns del "$NSOLD" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$NSREF"
ip netns add "$NSOURS"
mkdir "$WORK/ours"
ln -s "$(readlink -f "$BIN")" "$WORK/ours/ipset"
KINDS="ref ours"
if [ -n "$OLD" ]; then
	ip netns add "$NSOLD"
	mkdir "$WORK/old"
	ln -s "$(readlink -f "$OLD")" "$WORK/old/ipset"
	KINDS="ref ours old"
fi
# nscmd KIND → "NS CMD" of that tool
nscmd() {
	case $1 in
	ref) echo "$NSREF ipset" ;;
	ours) echo "$NSOURS $WORK/ours/ipset" ;;
	old) echo "$NSOLD $WORK/old/ipset" ;;
	esac
}

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
	local ns cmd
	read -r ns cmd <<<"$(nscmd "$kind")"
	/usr/bin/time -f "%e %M %U %S" -o "$WORK/time" ip netns exec "$ns" "$cmd" "$@" >/dev/null
	tail -1 "$WORK/time" | awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }'
}

# percmd KIND SET ELEM [REPS] → mean ms of add, test, del of ELEM in SET
percmd() {
	local kind=$1 set=$2 el=$3 reps=${4:-$REPS}
	local ns cmd
	read -r ns cmd <<<"$(nscmd "$kind")"
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

# spaced KIND SET ELEM N → median ms of add and of del of ELEM in SET, each
# command 1.1 s after the one before
spaced() {
	local kind=$1 set=$2 el=$3 n=$4
	local ns cmd
	read -r ns cmd <<<"$(nscmd "$kind")"
	ip netns exec "$ns" bash -c '
		cmd=$1 set=$2 el=$3 n=$4
		for i in $(seq "$n"); do
			sleep 1.1; s=$(date +%s%N); "$cmd" add "$set" "$el"; e=$(date +%s%N)
			sleep 1.1; f=$(date +%s%N); "$cmd" del "$set" "$el"; g=$(date +%s%N)
			echo "$((e - s)) $((g - f))"
		done
	' _ "$cmd" "$set" "$el" "$n" >"$WORK/spaced"
	local a d
	a=$(cut -d" " -f1 "$WORK/spaced" | sort -n | awk "{ v[NR] = \$1 } END { printf \"%.2f\", v[int((NR + 1) / 2)] / 1e6 }")
	d=$(cut -d" " -f2 "$WORK/spaced" | sort -n | awk "{ v[NR] = \$1 } END { printf \"%.2f\", v[int((NR + 1) / 2)] / 1e6 }")
	echo "$a $d"
}

ROWS=()
row() { # name ref(t m cpu) ours(t m cpu)
	ROWS+=("$(awk -v n="$1" -v rt="$2" -v rm="$3" -v rc="$4" -v ot="$5" -v om="$6" -v oc="$7" 'BEGIN {
		printf "| %s | %.2f s | %.2f s | %.1f MB | %.2f s | %.2f s | %.1f MB | %.2f× | %.2f× | %.2f× |", n, rt, rc, rm/1024, ot, oc, om/1024, ot/rt, oc/rc, om/rm }')")
}

for k in $KINDS; do
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
	read -r kns kcmd <<<"$(nscmd "$k")"
	ip netns exec "$kns" "$kcmd" create empty hash:net
	if [ "$SPACED" != 0 ]; then
		r=$(spaced "$k" big 198.18.7.0/24 "$SPACED")
		eval "spaced_$k=(\$r)"
	fi
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
if [ -n "$OLD" ]; then
	row "restore $SMALL hash:ip (before)" "${ip_ref[@]}" "${ip_old[@]}"
	row "restore $SMALL hash:net (before)" "${net_ref[@]}" "${net_old[@]}"
	row "restore $BIG hash:net (before)" "${big_ref[@]}" "${big_old[@]}"
	row "list $BIG set (before)" "${list_ref[@]}" "${list_old[@]}"
	row "save $BIG set (before)" "${save_ref[@]}" "${save_old[@]}"
	row "list -o xml $BIG set (before)" "${xml_ref[@]}" "${xml_old[@]}"
	if [ "$BIGIP" != 0 ]; then
		row "restore $BIGIP hash:ip (before)" "${bigip_ref[@]}" "${bigip_old[@]}"
		row "list $BIGIP hash:ip set (before)" "${listip_ref[@]}" "${listip_old[@]}"
		row "save $BIGIP hash:ip set (before)" "${saveip_ref[@]}" "${saveip_old[@]}"
	fi
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
	if [ -n "$OLD" ]; then
		echo "| command | ipset | xdptables | ratio | before | before ratio |"
		echo "|---|---|---|---|---|---|"
	else
		echo "| command | ipset | xdptables | ratio |"
		echo "|---|---|---|---|"
	fi
	i=0
	for what in add test del; do
		awk -v w="$what" -v r1="${one_ref[$i]}" -v o1="${one_ours[$i]}" -v r0="${oneempty_ref[$i]}" -v o0="${oneempty_ours[$i]}" \
			-v ri="${oneip_ref[$i]}" -v oi="${oneip_ours[$i]}" -v rn="${nested_ref[$i]}" -v on="${nested_ours[$i]}" \
			-v old="$OLD" -v b1="${one_old[$i]:-0}" -v b0="${oneempty_old[$i]:-0}" -v bi="${oneip_old[$i]:-0}" -v bn="${nested_old[$i]:-0}" \
			-v big="$BIG" -v small="$SMALL" '
			function cell(r, o, b) {
				if (old == "") return sprintf("| %.2f | %.2f | %.2f× |", r, o, o/r)
				return sprintf("| %.2f | %.2f | %.2f× | %.2f | %.2f× |", r, o, o/r, b, b/r)
			}
			BEGIN {
			printf "| %s in the %d hash:net set %s\n", w, big, cell(r1, o1, b1)
			printf "| %s in an empty hash:net set %s\n", w, cell(r0, o0, b0)
			printf "| %s in the %d hash:ip set %s\n", w, small, cell(ri, oi, bi)
			printf "| %s of a /28 nested in an entry of the %d set (mean of 2) %s\n", w, big, cell(rn, on, bn)
			if (old == "") printf "| %s: big set / empty set | %.2f× | %.2f× | |\n", w, r1/r0, o1/o0
			else printf "| %s: big set / empty set | %.2f× | %.2f× | | %.2f× | |\n", w, r1/r0, o1/o0, b1/b0 }'
		i=$((i + 1))
	done
	if [ "$SPACED" != 0 ]; then
		echo
		echo "Single add/del in the $BIG hash:net set, each 1.1 s after the previous command, median of $SPACED (ms):"
		echo
		if [ -n "$OLD" ]; then
			echo "| command | ipset | xdptables | ratio | before | before ratio |"
			echo "|---|---|---|---|---|---|"
		else
			echo "| command | ipset | xdptables | ratio |"
			echo "|---|---|---|---|"
		fi
		for j in 0 1; do
			what=add
			[ $j = 1 ] && what=del
			awk -v w="$what" -v r="${spaced_ref[$j]}" -v o="${spaced_ours[$j]}" -v old="$OLD" -v b="${spaced_old[$j]:-0}" 'BEGIN {
				if (old == "") printf "| %s, spaced | %.2f | %.2f | %.2f× |\n", w, r, o, o/r
				else printf "| %s, spaced | %.2f | %.2f | %.2f× | %.2f | %.2f× |\n", w, r, o, o/r, b, b/r }'
		done
	fi
} >"$WORK/report"
cat "$WORK/report"
if [ "$OUT" != - ]; then
	cp "$WORK/report" "$OUT.ipset.run"
	echo "(table written to $OUT.ipset.run)"
fi

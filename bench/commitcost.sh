#!/usr/bin/env bash
# bench/commitcost.sh — where a small command's time goes with a big
# ruleset loaded: xdptables and iptables-nft side by side, and nft itself.
#
# Usage: bench/commitcost.sh [BIN]   (BIN defaults to bin/xdptables; root)
#   LOADED=50000   kube-proxy-like rules (bench/kube-rules.awk)
#   REPS=5         runs of each command (medians)
#   TAG=name       put into the network namespaces' names
#
# Each command runs under `perf record -g` (the command and its children
# only, 20 kHz). Columns are on-CPU milliseconds counted from the samples
# (perf slows the commands down a little, both tools alike):
#   total     all samples of the command (after `ip netns exec`'s own)
#   commit    samples under nf_tables_commit (the kernel applying the batch)
#   validate  samples under nf_tables_validate: the kernel's check of the
#             table's whole jump graph, which it runs at commit when the
#             batch added a rule holding any expression with a validate
#             operation (immediate verdicts, meta, lookups, compat, nat…)
#
# Two layouts: the rules in filter (the command changes the big table), and
# in nat (the command changes a one-rule filter table). iptables-nft keeps
# each iptables table in its own nftables table; xdptables keeps them all in
# one table per family (DESIGN.md), so the kernel validates nat's graph too.
set -euo pipefail

BIN=${1:-bin/xdptables}
BENCHDIR=$(cd "$(dirname "$0")" && pwd)
LOADED=${LOADED:-50000}
REPS=${REPS:-5}

[ "$(id -u)" = 0 ] || { echo "commitcost needs root (network namespaces, perf)" >&2; exit 1; }
for t in ip iptables-nft iptables-nft-restore nft perf; do
	command -v "$t" >/dev/null || { echo "missing $t (apt-get install iproute2 iptables nftables linux-perf)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/xdpt-commitcost.XXXXXX)
NSLIST=()
cleanup() {
	for ns in "${NSLIST[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir "$WORK/bin"
"$BIN" links "$WORK/bin" >/dev/null

nsn=0
newns() {
	nsn=$((nsn + 1))
	NS="xdpt-cc${TAG:+-$TAG}-$$-$nsn"
	ip netns add "$NS"
	NSLIST+=("$NS")
}

# sample NS CMD... (stdin from $STDIN): "TOTAL COMMIT VALIDATE" in ms
sample() {
	local ns=$1
	shift
	if ! perf record -q -F 20000 -g -o "$WORK/perf.data" -- ip netns exec "$ns" "$@" \
		<"${STDIN:-/dev/null}" >/dev/null 2>"$WORK/err"; then
		echo "FAILED: $* ($(cat "$WORK/err"))" >&2
		exit 1
	fi
	perf script -i "$WORK/perf.data" -F comm,ip,sym 2>/dev/null | awk '
		function flush() {
			if (comm != "ip") {
				tot++
				if (st ~ / nf_tables_commit /) c++
				if (st ~ / nf_tables_validate /) v++
			}
			n = 0
		}
		/^[^ \t]/ { if (n) flush(); n = 1; comm = $1; st = " "; next }
		/^$/ { if (n) flush(); next }
		{ st = st $2 " " }
		END { if (n) flush(); printf "%.1f %.1f %.1f\n", tot / 20, c / 20, v / 20 }'
}

# median of each column
median() {
	awk '{ for (i = 1; i <= NF; i++) v[i, NR] = $i; nf = NF }
	END {
		for (i = 1; i <= nf; i++) {
			m = 0
			for (j = 1; j <= NR; j++) a[j] = v[i, j]
			for (j = 2; j <= NR; j++) for (k = j; k > 1 && a[k - 1] > a[k]; k--) { t = a[k]; a[k] = a[k - 1]; a[k - 1] = t }
			printf "%s%s", a[int((NR + 1) / 2)], (i < nf ? " " : "\n")
		}
	}'
}

ROWS=()
# row LAYOUT COMMAND TOOL "TOTAL COMMIT VALIDATE"
row() {
	local m
	read -r -a m <<<"$4"
	ROWS+=("$(awk -v l="$1" -v c="$2" -v k="$3" -v t="${m[0]}" -v co="${m[1]}" -v va="${m[2]}" 'BEGIN {
		s = "-"; if (t > 0) s = sprintf("%.0f%%", 100 * va / t)
		printf "| %s | %s | %s | %.1f | %.1f | %.1f | %s |", l, c, k, t, co, va, s }')")
	echo "${ROWS[-1]}"
}

for layout in filter nat; do
	awk -v n="$LOADED" -v table="$layout" -f "$BENCHDIR/kube-rules.awk" >"$WORK/rules"
	if [ "$layout" = filter ]; then chain=KUBE-SERVICES; else chain=INPUT; fi
	rule="-d 198.51.100.7/32 -p tcp -m tcp --dport 9999 -j ACCEPT"
	printf '*filter\n-A %s -d 198.51.100.8/32 -p udp -m udp --dport 53 -j ACCEPT\nCOMMIT\n' "$chain" >"$WORK/one"
	declare -A L=()
	for k in ref ours; do
		newns
		L[$k]=$NS
		if [ $k = ref ]; then rst=iptables-nft-restore; else rst=$WORK/bin/iptables-restore; fi
		ip netns exec "$NS" "$rst" <"$WORK/rules"
	done
	echo "== $LOADED rules in $layout, commands on filter $chain"
	for k in ref ours; do
		ns=${L[$k]}
		if [ $k = ref ]; then ipt=iptables-nft rst=iptables-nft-restore; else ipt=$WORK/bin/iptables rst=$WORK/bin/iptables-restore; fi
		: >"$WORK/a" && : >"$WORK/d" && : >"$WORK/n"
		for i in $(seq "$REPS"); do
			# shellcheck disable=SC2086 # the rule is split into words on purpose
			sample "$ns" $ipt -A "$chain" $rule >>"$WORK/a"
			# shellcheck disable=SC2086
			sample "$ns" $ipt -D "$chain" $rule >>"$WORK/d"
			STDIN=$WORK/one sample "$ns" "$rst" --noflush >>"$WORK/n"
			ip netns exec "$ns" "$ipt" -D "$chain" -d 198.51.100.8/32 -p udp -m udp --dport 53 -j ACCEPT
		done
		row "$layout" "-A $chain" "$k" "$(median <"$WORK/a")"
		row "$layout" "restore --noflush of 1 rule" "$k" "$(median <"$WORK/n")"
		row "$layout" "-D $chain by spec" "$k" "$(median <"$WORK/d")"
	done
	# nft itself adding one rule to our table (last: a change made behind
	# xdptables' back makes its rule index stale until the next restore)
	: >"$WORK/x"
	for i in $(seq "$REPS"); do
		sample "${L[ours]}" nft add rule ip xdptables "filter.$chain" ip daddr 198.51.100.9 tcp dport 9999 counter accept >>"$WORK/x"
	done
	row "$layout" "nft add rule (xdptables' table)" nft "$(median <"$WORK/x")"
	for k in ref ours; do ip netns del "${L[$k]}"; done
	unset L
done

echo
echo "## commitcost run of $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "- machine: $(uname -srm), $(nproc) CPUs; LOADED=$LOADED REPS=$REPS (medians); on-CPU ms from perf samples"
echo "- reference: $(iptables-nft --version); ours: $BIN ($(git -C "$BENCHDIR" describe --always --dirty 2>/dev/null || echo unknown))"
echo
echo "| rules in | command | tool | total ms | commit ms | validate ms | validate/total |"
echo "|---|---|---|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"

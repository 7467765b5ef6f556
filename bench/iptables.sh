#!/usr/bin/env bash
# bench/iptables.sh — xdptables vs the reference iptables-nft, side by side.
#
# Usage: bench/iptables.sh [BIN]   (BIN defaults to bin/xdptables; run as root)
#   SIZES="10000 50000 100000"  restore sizes
#   LOADED=50000                ruleset size for the single-command timings
#   ONECHAIN=10000              rules in one chain for -C/-D
#   REPS=5                      repetitions of each small command (median)
#   RESTORE_REPS=1              repetitions of each restore (median; ref and
#                               ours alternate, each in a fresh namespace)
#   ONLY=restore                only the restore rows
#   OUT=bench/RESULTS.md        where the table goes ("-" = stdout only)
#   TAG=name                    put into the network namespaces' names
#
# Every measurement runs in its own fresh network namespace per tool.
# Rules are kube-proxy-like: thousands of small chains, comments,
# statistic, MARK, tcp/udp ports, jumps.
set -euo pipefail

BIN=${1:-bin/xdptables}
BENCHDIR=$(cd "$(dirname "$0")" && pwd)
SIZES=${SIZES:-"10000 50000 100000"}
LOADED=${LOADED:-50000}
ONECHAIN=${ONECHAIN:-10000}
REPS=${REPS:-5}
RESTORE_REPS=${RESTORE_REPS:-1}
ONLY=${ONLY:-}
OUT=${OUT:-bench/RESULTS.md}

[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in ip iptables-nft-restore /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "missing $t (apt-get install iproute2 iptables time)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/xdpt-bench.XXXXXX)
NSLIST=()
cleanup() {
	for ns in "${NSLIST[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
"$BIN" links "$WORK" >/dev/null
OURS=$WORK

# tool KIND NAME → the command for kind ref|ours
tool() {
	if [ "$1" = ref ]; then
		case $2 in
		iptables) echo iptables-nft ;;
		iptables-restore) echo iptables-nft-restore ;;
		iptables-save) echo iptables-nft-save ;;
		esac
	else
		echo "$OURS/$2"
	fi
}

nsn=0
newns() {
	nsn=$((nsn + 1))
	local ns="xdpt-bench${TAG:+-$TAG}-$$-$nsn"
	ip netns add "$ns"
	NSLIST+=("$ns")
	NS=$ns
}
delns() { ip netns del "$1"; }

# gen N FILE: kube-proxy-like filter table with about N rules. Per
# service: 1 rule in KUBE-SERVICES, a KUBE-SVC chain with one jump per
# endpoint (3), per endpoint a KUBE-SEP chain with 2 rules → 10 rules and
# 4 chains per service.
gen() {
	awk -v n="$1" -f "$BENCHDIR/kube-rules.awk" >"$2"
}

# onechain N FILE: N rules in chain BIG.
onechain() {
	awk -v n="$1" 'BEGIN {
		print "*filter"
		print ":BIG - [0:0]"
		for (i = 0; i < n; i++)
			printf "-A BIG -s 10.%d.%d.%d/32 -p tcp -m tcp --dport %d -j ACCEPT\n", int(i / 65536), int(i / 256) % 256, i % 256, 1 + i % 60000
		print "COMMIT"
	}' >"$2"
}

# run NS CMD... : prints "SECONDS MAXRSS_KB CPU_SECONDS" (CPU: user +
# system, less disturbed by other load on the machine than the wall
# clock); fails loudly on rc != 0. The clock starts and stops inside the
# namespace, so the cost of `ip netns exec` itself (the same for both
# tools, and larger than a small command) is not counted.
run() {
	local ns=$1
	shift
	if ! W=$WORK ip netns exec "$ns" bash -c '
		t0=$EPOCHREALTIME
		/usr/bin/time -f "%M %U %S" -o "$W/time" "$@" >/dev/null 2>"$W/err"
		rc=$?
		t1=$EPOCHREALTIME
		echo "$t0 $t1" >"$W/clock"
		exit $rc' _ "$@" <"${STDIN:-/dev/null}"; then
		echo "FAILED: $* ($(cat "$WORK/err"))" >&2
		exit 1
	fi
	read -r t0 t1 <"$WORK/clock"
	read -r rss user sys < <(tail -1 "$WORK/time")
	awk -v a="$t0" -v b="$t1" -v r="$rss" -v c="$user" -v d="$sys" 'BEGIN { printf "%.4f %d %.2f\n", b - a, r, c + d }'
}

# median of the first column, max of the second, median of the third
median() {
	local in
	in=$(cat)
	printf '%s\n' "$in" | sort -n -k1,1 | awk '{ t[NR] = $1; if ($2 > m) m = $2 } END { printf "%.4f %d ", t[int((NR + 1) / 2)], m }'
	printf '%s\n' "$in" | sort -n -k3,3 | awk '{ c[NR] = $3 } END { printf "%.2f\n", c[int((NR + 1) / 2)] }'
}

ROWS=()
# row NAME "REFSECS REFRSS REFCPU" "OURSECS OURRSS OURCPU"
row() {
	local r o
	r=($2) o=($3)
	ROWS+=("$(awk -v n="$1" -v rt="${r[0]}" -v rm="${r[1]}" -v rc="${r[2]}" -v ot="${o[0]}" -v om="${o[1]}" -v oc="${o[2]}" 'BEGIN {
		cr = "-"; if (rc > 0) cr = sprintf("%.2f", oc / rc)
		printf "| %s | %.3f | %.3f | **%.2f** | %d | %d | **%.2f** | %.2f | %.2f | %s |", n, rt, ot, ot / rt, rm / 1024, om / 1024, om / rm, rc, oc, cr }')")
	echo "${ROWS[-1]}"
}

echo "== restore"
for n in $SIZES; do
	gen "$n" "$WORK/rules-$n"
	declare -A res=()
	for k in ref ours; do : >"$WORK/res-$k"; done
	for i in $(seq "$RESTORE_REPS"); do
		for k in ref ours; do
			newns
			STDIN="$WORK/rules-$n" run "$NS" "$(tool $k iptables-restore)" >>"$WORK/res-$k"
			got=$(ip netns exec "$NS" "$(tool $k iptables-save)" | grep -c '^-A')
			[ "$got" -ge "$n" ] || { echo "$k: only $got rules after restore of $n" >&2; exit 1; }
			delns "$NS"
		done
	done
	for k in ref ours; do res[$k]=$(median <"$WORK/res-$k"); done
	row "restore $(grep -c '^-A' "$WORK/rules-$n") rules ($(grep -c '^:KUBE' "$WORK/rules-$n") chains)" "${res[ref]}" "${res[ours]}"
done

if [ "$ONLY" != restore ]; then
# loaded-state commands: one namespace per tool, holding $LOADED rules
gen "$LOADED" "$WORK/loaded"
NEWRULE="-d 10.250.1.1/32 -p tcp -m tcp --dport 9999 -j ACCEPT"
# the rule text holds a quoted comment: split it as the shell would
eval "CHECKRULE=($(grep '^-A KUBE-SERVICES' "$WORK/loaded" | tail -1 | cut -d' ' -f3-))"
printf '*filter\n-A KUBE-SERVICES %s\nCOMMIT\n' "-d 10.250.2.2/32 -p udp -m udp --dport 53 -j ACCEPT" >"$WORK/one"
declare -A L=()
for k in ref ours; do
	newns
	L[$k]=$NS
	STDIN="$WORK/loaded" run "$NS" "$(tool $k iptables-restore)" >/dev/null
done
measure() { # NAME REFCMD OURSCMD as functions taking ns+tool kind
	local name=$1 fn=$2 k
	declare -A m=()
	for k in ref ours; do
		m[$k]=$(for i in $(seq "$REPS"); do $fn "$k" "${L[$k]}"; done | median)
	done
	row "$name" "${m[ref]}" "${m[ours]}"
}
op_append() { run "$2" $(tool $1 iptables) -A KUBE-SERVICES $NEWRULE; ip netns exec "$2" $(tool $1 iptables) -D KUBE-SERVICES $NEWRULE; }
op_delete() { ip netns exec "$2" $(tool $1 iptables) -A KUBE-SERVICES $NEWRULE; run "$2" $(tool $1 iptables) -D KUBE-SERVICES $NEWRULE; }
op_noflush() { STDIN="$WORK/one" run "$2" $(tool $1 iptables-restore) --noflush; ip netns exec "$2" $(tool $1 iptables) -D KUBE-SERVICES -d 10.250.2.2/32 -p udp -m udp --dport 53 -j ACCEPT; }
op_check() { run "$2" $(tool $1 iptables) -C KUBE-SERVICES "${CHECKRULE[@]}"; }
op_list() { run "$2" $(tool $1 iptables) -L KUBE-SERVICES -n; }
op_listrules() { run "$2" $(tool $1 iptables) -S KUBE-SERVICES; }
op_save() { run "$2" $(tool $1 iptables-save); }
echo "== with $LOADED rules loaded"
measure "-A (${LOADED} loaded)" op_append
measure "restore --noflush of 1 rule (${LOADED} loaded)" op_noflush
measure "-D by spec (${LOADED} loaded)" op_delete
measure "-C, last rule of KUBE-SERVICES (${LOADED} loaded)" op_check
measure "-L KUBE-SERVICES -n (${LOADED} loaded)" op_list
measure "-S KUBE-SERVICES (${LOADED} loaded)" op_listrules
measure "iptables-save (${LOADED} loaded)" op_save
for k in ref ours; do delns "${L[$k]}"; done

onechain "$ONECHAIN" "$WORK/big"
LAST=$(tail -2 "$WORK/big" | head -1 | cut -d' ' -f3-)
for k in ref ours; do
	newns
	L[$k]=$NS
	STDIN="$WORK/big" run "$NS" "$(tool $k iptables-restore)" >/dev/null
done
op_check1() { run "$2" $(tool $1 iptables) -C BIG $LAST; }
op_delete1() { run "$2" $(tool $1 iptables) -D BIG $LAST; ip netns exec "$2" $(tool $1 iptables) -A BIG $LAST; }
echo "== $ONECHAIN rules in one chain"
measure "-C last rule ($ONECHAIN in one chain)" op_check1
measure "-D last rule by spec ($ONECHAIN in one chain)" op_delete1
for k in ref ours; do delns "${L[$k]}"; done

fi # ONLY

# report
{
	echo "## Run of $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "- machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "- reference: $(iptables-nft --version) (iptables-nft-restore, iptables-nft, iptables-nft-save)"
	echo "- ours: $("$BIN" iptables --version 2>/dev/null | head -1), $BIN ($(git describe --always --dirty 2>/dev/null || echo unknown))"
	echo "- command: \`$0 $*\` with SIZES=\"$SIZES\" LOADED=$LOADED ONECHAIN=$ONECHAIN REPS=$REPS RESTORE_REPS=$RESTORE_REPS${ONLY:+ ONLY=$ONLY}"
	echo
	echo "| measurement | ref s | ours s | time ours/ref | ref MiB | ours MiB | RSS ours/ref | ref CPU s | ours CPU s | CPU ours/ref |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${ROWS[@]}"
} >"$WORK/report"
cat "$WORK/report"
if [ "$OUT" != - ]; then
	cp "$WORK/report" "$OUT.run"
	echo "(table written to $OUT.run; bench/RESULTS.md keeps the commented history)"
fi

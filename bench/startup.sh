#!/usr/bin/env bash
# bench/startup.sh — the cost of starting one command: xdptables against
# the reference tools (iptables-nft 1.8.9, ipset 7.17) and a static Go
# hello-world (the floor of any Go program), side by side.
#
# Usage: bench/startup.sh [BIN]   (BIN defaults to bin/xdptables; run as root)
#   N=100      runs of each command per round (perf stat -r N)
#   ROUNDS=5   rounds; a round measures every tool once, one after the
#              other, and each figure is the median over the rounds (a
#              machine whose load changes shifts all tools alike)
#   OLD=       a second xdptables binary (e.g. the previous commit's): an
#              "old" column
#   NSTAG=     inserted into the names of the namespaces
#
# perf stat runs each command N times inside a namespace of its own tool
# (ip netns exec is not in the figure) and gives the mean wall time, CPU
# time (task-clock, all threads) and page faults. The commands:
#   version     `ipset version` / `iptables -V`: start and exit, no kernel
#   -C          `iptables -C INPUT` of the last of 5 rules (present: exit 0)
#   test        `ipset test` of an address in an empty hash:net (exit 1)
#   -! add      `ipset -! add` of an element the hash:net holds already
# Ratios are ours / reference; the hello-world row is the Go floor.
set -euo pipefail

BIN=${1:-bin/xdptables}
N=${N:-100}
ROUNDS=${ROUNDS:-5}
OLD=${OLD:-}
NSTAG=${NSTAG:-}

[ "$(id -u)" = 0 ] || { echo "bench needs root (network namespaces)" >&2; exit 1; }
for t in ip perf iptables-nft ipset; do
	command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/xdpt-startup.XXXXXX)
KINDS="ref ours"
[ -n "$OLD" ] && KINDS="ref ours old"
cleanup() {
	for k in $KINDS; do ip netns del "xdpt-st$NSTAG-$k-$$" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

# each tool's command names, in a directory of its own
mkdir "$WORK/ref"
ln -s "$(command -v iptables-nft)" "$WORK/ref/iptables"
ln -s "$(command -v ipset)" "$WORK/ref/ipset"
for k in ours old; do
	b=$BIN
	[ $k = old ] && b=$OLD
	[ -n "$b" ] || continue
	mkdir "$WORK/$k"
	for c in iptables ipset; do ln -s "$(readlink -f "$b")" "$WORK/$k/$c"; done
done

# the hello-world floor, when a Go toolchain is around
HELLO=
GO=$(command -v go || echo /usr/local/go/bin/go)
if [ -x "$GO" ]; then
	mkdir "$WORK/hello"
	# (the go line of our go.mod: the same GODEBUG defaults)
	{ echo "module hello"; grep '^go ' "$(dirname "$0")/../go.mod"; } >"$WORK/hello/go.mod"
	printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("") }\n' >"$WORK/hello/main.go"
	if (cd "$WORK/hello" && CGO_ENABLED=0 GOFLAGS= "$GO" build -o hello . 2>/dev/null); then
		HELLO=$WORK/hello/hello
	fi
fi

for k in $KINDS; do
	ns=xdpt-st$NSTAG-$k-$$
	ip netns add "$ns"
	ip netns exec "$ns" bash -e -c '
		d=$1
		for i in 1 2 3 4 5; do
			"$d/iptables" -A INPUT -s 198.51.100.$i -p tcp --dport $((1000 + i)) -j ACCEPT
		done
		"$d/ipset" create empty hash:net
		"$d/ipset" create one hash:net
		"$d/ipset" add one 198.18.0.0/24
	' _ "$WORK/$k"
done

# measure NS CMD... → "wall_ms cpu_ms faults"
measure() {
	local ns=$1
	shift
	local out
	if [ -n "$ns" ]; then
		out=$(LC_ALL=C ip netns exec "$ns" perf stat -r "$N" -e task-clock,page-faults -- "$@" 2>&1 >/dev/null) || true
	else
		out=$(LC_ALL=C perf stat -r "$N" -e task-clock,page-faults -- "$@" 2>&1 >/dev/null) || true
	fi
	awk '
		/task-clock/ { cpu = $1 }
		/page-faults/ { gsub(",", "", $1); pf = $1 }
		/seconds time elapsed/ { wall = $1 * 1000 }
		END { if (wall == "") { print "? ? ?" } else { printf "%.3f %.3f %d\n", wall, cpu, pf } }
	' <<<"$out"
}

printf '%-14s' command
for k in $KINDS; do printf ' | %-24s' "$k ms / cpu ms / faults"; done
printf ' | ours/ref wall | ours/ref cpu'
[ -n "$OLD" ] && printf ' | ours/old wall | ours/old cpu'
printf '\n'
if [ -n "$HELLO" ]; then
	read -r w c p < <(measure "" "$HELLO")
	printf '%-14s | %-24s\n' hello-world "$w / $c / $p"
fi
# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
row() {
	local name=$1
	shift
	local k r w c p rw= rc= ow= oc= lw= lc=
	declare -A ws cs ps
	for r in $(seq "$ROUNDS"); do
		for k in $KINDS; do
			# (the command's first word names the tool in $WORK/KIND)
			read -r w c p < <(measure "xdpt-st$NSTAG-$k-$$" "$WORK/$k/$1" "${@:2}")
			ws[$k]+="$w " cs[$k]+="$c " ps[$k]+="$p "
		done
	done
	printf '%-14s' "$name"
	for k in $KINDS; do
		w=$(tr ' ' '\n' <<<"${ws[$k]}" | grep . | median)
		c=$(tr ' ' '\n' <<<"${cs[$k]}" | grep . | median)
		p=$(tr ' ' '\n' <<<"${ps[$k]}" | grep . | median)
		printf ' | %-24s' "$w / $c / $p"
		case $k in
		ref) rw=$w rc=$c ;;
		ours) ow=$w oc=$c ;;
		old) lw=$w lc=$c ;;
		esac
	done
	ratio "$ow" "$rw"
	ratio "$oc" "$rc"
	if [ -n "$OLD" ]; then
		ratio "$ow" "$lw"
		ratio "$oc" "$lc"
	fi
	printf '\n'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf " | %.2f", a / b; else printf " | ?" }'; }
row "ipset version" ipset version
row "iptables -V" iptables -V
row "iptables -C" iptables -C INPUT -s 198.51.100.5 -p tcp --dport 1005 -j ACCEPT
row "ipset test" ipset test empty 198.18.9.1
row "ipset -! add" ipset -! add one 198.18.0.0/24

#!/bin/bash
# XDP classifier cost per packet with BPF_PROG_TEST_RUN (root): 1, 1k and
# 10k "-s NET -j DROP" rules (one field: the precomputed first rule) and
# "-p udp -s NET -j DROP" rules (two fields, folded into one table),
# ip6tables "-s NET -j DROP" rules (1, 1k, 10k: per-length hash tables),
# "-p udp -s NET --dport 9 -j DROP" rules (three fields, folded into two
# tables), "-p udp -s NET --sport 1 --dport 9 -j DROP" (the bit-vector
# search), a
# port rule, address fields and sets of up to a million entries as
# DIR-16-8-8 tables and as LPM tries, IPv6 sets and sets with timeouts
# of a million entries (per-length tables), against a program that drops
# everything. Prints ns/packet medians of COUNT runs and ratios. The
# same program under veth traffic: bench/xdp-traffic.sh.
#
# BASE=REV (a git revision) also measures the benchmarks of REV's tree,
# the two test binaries run alternately COUNT times, and prints both
# side by side (before/after in the same session). BENCH=REGEXP runs
# only the benchmarks it matches (BenchmarkDropAll, the ratios' base,
# always runs).
set -euo pipefail
COUNT=${COUNT:-5}
BENCH=${BENCH:-.}
N=${N:-2000000}
BASE=${BASE:-}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/now.test" ./xdp/
if [ -n "$BASE" ]; then
	mkdir "$tmp/base"
	git archive "$BASE" | tar -x -C "$tmp/base"
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./xdp/)
fi
for i in $(seq "$COUNT"); do
	for t in base now; do
		[ -x "$tmp/$t.test" ] || continue
		(cd xdp && "$tmp/$t.test" -test.run '^$' -test.bench "DropAll|$BENCH" -test.benchtime "${N}x") |
			sed "s/^/$t /" >>"$tmp/out"
	done
done
python3 - "$tmp/out" "$BASE" <<'EOF'
import sys, statistics, re
v = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) (Benchmark\S+?)(-\d+)?\s+\d+\s+\S+ ns/op\s+(\S+) ns/pkt", line)
    if m:
        v.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(float(m.group(4)))
now = v["now"]
base = v.get("base")
med = lambda xs: statistics.median(xs)
if base is None:
    d = med(now["BenchmarkDropAll"])
    print("| case | ns/packet (median) | ratio to drop-all |")
    print("|---|---|---|")
    for k in sorted(now):
        print(f"| {k} | {med(now[k]):.0f} | {med(now[k])/d:.1f} |")
    sys.exit()
bd, nd = med(base["BenchmarkDropAll"]), med(now["BenchmarkDropAll"])
print(f"| case | before ({sys.argv[2]}) ns | × drop-all | now ns | × drop-all | now / before |")
print("|---|---:|---:|---:|---:|---:|")
for k in sorted(set(now) | set(base)):
    b = f"{med(base[k]):.0f} | {med(base[k])/bd:.1f}" if k in base else "– | –"
    n = f"{med(now[k]):.0f} | {med(now[k])/nd:.1f}" if k in now else "– | –"
    r = f"{med(now[k])/med(base[k]):.2f}" if k in base and k in now else ""
    print(f"| {k} | {b} | {n} | {r} |")
EOF

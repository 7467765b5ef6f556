#!/bin/bash
# XDP classifier cost per packet with BPF_PROG_TEST_RUN (root): 1, 1k and
# 10k "-s NET -j DROP" rules (one field: the precomputed first rule) and
# "-p udp -s NET -j DROP" rules (two fields: the bit-vector search), a
# port rule, a million trie entries and a set of a million entries,
# against a program that drops everything. Prints ns/packet medians of
# COUNT runs and ratios. The same program under veth traffic:
# bench/xdp-traffic.sh.
set -euo pipefail
COUNT=${COUNT:-5}
N=${N:-2000000}
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchtime "${N}x" -count "$COUNT" ./xdp/ |
python3 -c '
import sys, statistics, re
v = {}
for line in sys.stdin:
    m = re.match(r"(Benchmark\S+?)(-\d+)?\s+\d+\s+\S+ ns/op\s+(\S+) ns/pkt", line)
    if m:
        v.setdefault(m.group(1), []).append(float(m.group(3)))
base = statistics.median(v["BenchmarkDropAll"])
print("| case | ns/packet (median) | ratio to drop-all |")
print("|---|---|---|")
for k in sorted(v):
    med = statistics.median(v[k])
    print(f"| {k} | {med:.0f} | {med/base:.1f} |")
'

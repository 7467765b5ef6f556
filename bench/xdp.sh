#!/bin/bash
# XDP classifier cost per packet with BPF_PROG_TEST_RUN (root): 1, 1k and
# 10k rules, and a million trie entries, against a program that drops
# everything. Prints ns/packet medians of COUNT runs and ratios.
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

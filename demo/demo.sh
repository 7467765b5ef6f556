#!/usr/bin/env bash
# Parses the built-in example ruleset with xdptables and prints every
# rule in canonical iptables -S form.
set -euo pipefail
bin=${1:-bin/xdptables}
here=$(cd "$(dirname "$0")" && pwd)
echo "== example ruleset: $here/example.rules"
"$bin" iptables-restore --test "$here/example.rules"
echo "== parsed and printed back by xdptables:"
"$bin" lint "$here/example.rules"

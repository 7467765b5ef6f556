#!/usr/bin/env bash
# The built-in example: check a ruleset file the way iptables-restore
# --test does, then print it in the canonical form iptables-save uses.
set -euo pipefail
bin=${1:-bin/xdptables}
here=$(cd "$(dirname "$0")" && pwd)
echo "== $here/example.rules, checked with: xdptables iptables-restore --test"
"$bin" iptables-restore --test "$here/example.rules" && echo "ok"
echo
echo "== the same ruleset as iptables-save prints it (xdptables canon):"
"$bin" canon "$here/example.rules"

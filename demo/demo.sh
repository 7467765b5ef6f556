#!/usr/bin/env bash
# The built-in example: a host firewall loaded with xdptables into a
# throwaway network namespace, listed the iptables way and the nftables
# way, then exercised with packets over a veth pair so counters move.
set -euo pipefail
bin=$(cd "$(dirname "${1:-bin/xdptables}")" && pwd)/$(basename "${1:-bin/xdptables}")
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "make demo needs root (it creates network namespaces)." >&2
  echo "Without root, here is the ruleset checked and printed in canonical form:" >&2
  "$bin" iptables-restore --test "$here/example.rules"
  "$bin" canon "$here/example.rules"
  exit 0
fi
srv=xdpt-demo-srv-$$ cli=xdpt-demo-cli-$$
cleanup() { ip netns del "$srv" 2>/dev/null || true; ip netns del "$cli" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$srv"; ip netns add "$cli"
ip link add veth0 netns "$srv" type veth peer name veth1 netns "$cli"
ip -n "$srv" addr add 198.51.100.1/24 dev veth0; ip -n "$srv" link set veth0 up; ip -n "$srv" link set lo up
ip -n "$cli" addr add 198.51.100.2/24 dev veth1; ip -n "$cli" link set veth1 up; ip -n "$cli" link set lo up
S() { ip netns exec "$srv" "$@"; }

echo "== loading $here/example.rules with: xdptables iptables-restore"
S "$bin" iptables-restore "$here/example.rules"
echo
echo "== traffic from the client: 3 pings (accepted), 2 to port 22 (accepted), 2 to port 25 (dropped)"
ip netns exec "$cli" ping -c 3 -i 0.2 -W 1 198.51.100.1 >/dev/null || true
for port in 22 22 25 25; do
  ip netns exec "$cli" timeout 1 bash -c "exec 3<>/dev/tcp/198.51.100.1/$port" 2>/dev/null || true
done
echo
echo "== xdptables iptables -L -n -v"
S "$bin" iptables -L -n -v
echo
echo "== xdptables iptables-save -c"
S "$bin" iptables-save -c
echo
echo "== nft list table ip xdptables (what the kernel holds)"
if command -v nft >/dev/null; then S nft list table ip xdptables; else echo "(nft not installed)"; fi

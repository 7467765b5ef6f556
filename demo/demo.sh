#!/usr/bin/env bash
# The built-in example: a host firewall loaded with xdptables into a
# throwaway network namespace, listed the iptables way and the nftables
# way, then exercised with packets over a veth pair so counters move.
set -euo pipefail
bin=$(cd "$(dirname "${1:-bin/xdptables}")" && pwd)/$(basename "${1:-bin/xdptables}")
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "make demo needs root (it creates network namespaces)." >&2
  echo "Without root, here is the ruleset parsed and printed in canonical form:" >&2
  "$bin" canon "$here/example.rules"
  exit 0
fi
srv=xdpt-demo-srv-$$ cli=xdpt-demo-cli-$$
cleanup() {
  ip netns exec "$srv" "$bin" xdp detach veth0 >/dev/null 2>&1 || true
  ip netns del "$srv" 2>/dev/null || true; ip netns del "$cli" 2>/dev/null || true
  if [ -n "${bpfmounted:-}" ]; then umount "$bpfmounted" 2>/dev/null || true; fi
}
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

echo
echo "== XDP fast path: a 100k-network blocklist loaded with ipset restore, dropped in XDP"
# `ip netns exec` gives its child a fresh /sys, so the pins live in a
# bpffs mounted from here, at xdptables' fallback path.
bpffs=/run/xdptables/bpffs
if [ "$(stat -f -c %T "$bpffs" 2>/dev/null)" != bpf_fs ]; then
  if mkdir -p "$bpffs" && mount -t bpf bpf "$bpffs" 2>/dev/null; then bpfmounted=$bpffs; fi
fi
if [ "$(stat -f -c %T "$bpffs" 2>/dev/null)" != bpf_fs ]; then
  echo "(bpffs cannot be mounted here: no XDP part; nftables alone enforces every rule)"
  exit 0
fi
{
  echo "create blocklist hash:net maxelem 200000"
  awk 'BEGIN { for (i = 0; i < 99999; i++) printf "add blocklist 198.%d.%d.%d\n", 18 + int(i / 65536), int(i / 256) % 256, i % 256 }'
  echo "add blocklist 198.51.100.2"
} | S "$bin" ipset restore
S "$bin" iptables -t raw -A PREROUTING -m set --match-set blocklist src -j DROP
S "$bin" xdp attach veth0 --mode generic
echo "attached in generic mode on veth0; the client (198.51.100.2, in the blocklist) sends 5 pings"
ip netns exec "$cli" ping -c 5 -i 0.2 -W 1 198.51.100.1 >/dev/null || true
echo
echo "== xdptables iptables -t raw -L -n -v (nftables counter + XDP counter)"
S "$bin" iptables -t raw -L -n -v
echo
echo "== xdptables xdp status"
S "$bin" xdp status

package integration

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// VPN and port-knocking clients nobody here wrote, from their Debian
// packages, run with the machinery of realclients_daemons_test.go (a side
// per tool set, tracing wrappers first in PATH, every step compared on
// exit status, output, the iptables/ipset calls and the saved state):
//
//   - wg-quick (wireguard-tools) with wireguard-go, the userspace
//     WireGuard it falls back to when the kernel has no wireguard module:
//     full tunnels (its raw PREROUTING drops and mangle CONNMARK rules,
//     written with iptables-restore -n and removed by reading
//     iptables-save), road-warrior PostUp/PostDown rules, failures;
//   - strongSwan's updown script (_updown, strongswan-libcharon):
//     up-client, down-client, up-host, down-host for IPv4 and IPv6, with
//     its -m policy --dir in --pol ipsec --reqid N --proto esp rules
//     inserted and deleted by exact spec.
//
// The packages come from Debian's mirrors into vpnCache; nothing is
// installed and no service starts.

const vpnCache = "/var/cache/xdptables-test/vpnclients"

var vpnPackages = []string{"wireguard-tools", "wireguard-go", "strongswan-libcharon"}

// WireGuard keys of the test (any 32 bytes are a private key; the peers'
// public keys need no private key here: no handshake is made)
const (
	wgKeyA  = "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8="
	wgKeyB  = "/+7dzLuqmYh3ZlVEMyIRAP/u3cy7qpmId2ZVRDMiEQA="
	wgPeerA = "qrvM3e7/ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJk="
	wgPeerB = "mZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZk="
)

// wgLinkLocal is the link-local address the kernel gives wireguard-go's
// tun device, random in each run: wg-quick writes a raw drop for it.
var wgLinkLocal = regexp.MustCompile(`fe80::[0-9a-f:]+`)

// TestRealWgQuick runs wg-quick 1.0.20210914 (bash) with wireguard-go
// 0.0.20220316: the kernel here has no WireGuard, and wg-quick then
// starts the userspace implementation, as it does on such hosts; the
// firewall part is the same. nft is hidden from wg-quick (an overlay
// whiteout on /usr/sbin), as on a host with iptables-nft and without
// the nftables package: with nft it writes a table of its own and no
// iptables rule. wireguard-go lives as long as the step (the step's PID
// namespace ends with it), so each step brings its interfaces up and
// down.
func TestRealWgQuick(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, vpnCache, vpnPackages)
	sides := newDMSides(t, "wgq")
	dmRunMountpoints(t, "/run/wireguard")
	// a full tunnel (the default route of both families into the
	// tunnel: wg-quick's firewall rules), a road-warrior server with the
	// PostUp/PostDown of the guides, a v4-only full tunnel with its own
	// fwmark, and one whose PostUp fails (wg-quick takes it all down)
	confs := map[string]string{
		"wgx0.conf": `[Interface]
PrivateKey = ` + wgKeyA + `
Address = 198.18.60.2/32, 2001:db8:60::2/128
ListenPort = 51820

[Peer]
PublicKey = ` + wgPeerA + `
AllowedIPs = 0.0.0.0/0, ::/0
Endpoint = 198.18.50.2:51820
PersistentKeepalive = 25
`,
		"wgs0.conf": `[Interface]
PrivateKey = ` + wgKeyB + `
Address = 198.18.61.1/24, 2001:db8:61::1/64
ListenPort = 51821
PostUp = iptables -A FORWARD -i %i -j ACCEPT; iptables -A FORWARD -o %i -j ACCEPT; iptables -t nat -A POSTROUTING -o wgv0 -j MASQUERADE
PostUp = ip6tables -A FORWARD -i %i -j ACCEPT; ip6tables -t nat -A POSTROUTING -s 2001:db8:61::/64 -o wgv0 -j MASQUERADE
PostUp = iptables -I INPUT -p udp --dport 51821 -j ACCEPT; iptables -t mangle -A FORWARD -o %i -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu
PostDown = iptables -D FORWARD -i %i -j ACCEPT; iptables -D FORWARD -o %i -j ACCEPT; iptables -t nat -D POSTROUTING -o wgv0 -j MASQUERADE
PostDown = ip6tables -D FORWARD -i %i -j ACCEPT; ip6tables -t nat -D POSTROUTING -s 2001:db8:61::/64 -o wgv0 -j MASQUERADE
PostDown = iptables -D INPUT -p udp --dport 51821 -j ACCEPT; iptables -t mangle -D FORWARD -o %i -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu

[Peer]
PublicKey = ` + wgPeerA + `
AllowedIPs = 198.18.61.2/32, 2001:db8:61::2/128

[Peer]
PublicKey = ` + wgPeerB + `
AllowedIPs = 198.18.61.3/32, 2001:db8:61::3/128
`,
		"wgm0.conf": `[Interface]
PrivateKey = ` + wgKeyB + `
Address = 198.19.62.2/24
FwMark = 0x1234

[Peer]
PublicKey = ` + wgPeerB + `
AllowedIPs = 0.0.0.0/0
Endpoint = 198.18.50.2:51822
`,
		"wgf0.conf": `[Interface]
PrivateKey = ` + wgKeyA + `
Address = 198.18.63.2/32
PostUp = iptables -A FORWARD -i %i -j ACCEPT
PostUp = iptables -A xdpt-nochain -i %i -j ACCEPT

[Peer]
PublicKey = ` + wgPeerA + `
AllowedIPs = 0.0.0.0/0
Endpoint = 198.18.50.2:51823
`,
	}
	for _, s := range sides {
		if err := writeFiles(filepath.Join(s.dir, "wg"), 0o600, confs); err != nil {
			t.Fatal(err)
		}
		// the tunnel's endpoint is on a veth of the namespace
		sideSh(t, s, `set -e
ip link add wgv0 type veth peer name wgv1
ip link set wgv0 up && ip link set wgv1 up
ip addr add 198.18.50.1/24 dev wgv0`)
	}
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`D=%[1]s
mkdir -p $D/white $D/runwg || exit 99
[ -e $D/white/nft ] || mknod $D/white/nft c 0 0 || exit 99
mount -t overlay overlay -o lowerdir=$D/white:/usr/sbin /usr/sbin || exit 99
mount --bind $D/runwg /run/wireguard || exit 99
export PATH=/usr/local/sbin:%[2]s/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin
if type -p nft >/dev/null; then echo "nft is still in PATH"; exit 99; fi
list() {
	echo "--- listed"
	iptables-save | grep -v '^#'; ip6tables-save | grep -v '^#'
	iptables -t raw -L PREROUTING -n -v --line-numbers; ip6tables -t mangle -S
	wg show all allowed-ips; ip rule show; ip -6 rule show
}
`, s.dir, root)
	}
	steps := []moreStep{
		{name: "full tunnel: up, list, down", script: `wg-quick up $D/wg/wgx0.conf; echo "up rc=$?"; list
wg-quick down $D/wg/wgx0.conf; echo "down rc=$?"`},
		{name: "road-warrior server with PostUp/PostDown: up, list, down", script: `wg-quick up $D/wg/wgs0.conf; echo "up rc=$?"; list
iptables -L FORWARD -n -v; iptables -t nat -L POSTROUTING -n --line-numbers
wg-quick down $D/wg/wgs0.conf; echo "down rc=$?"`},
		{name: "two tunnels, one with its own fwmark; up twice; down in turn", script: `wg-quick up $D/wg/wgx0.conf; echo "up rc=$?"
wg-quick up $D/wg/wgm0.conf; echo "up rc=$?"
wg-quick up $D/wg/wgm0.conf; echo "up again rc=$?"; list
wg-quick down $D/wg/wgx0.conf; echo "down rc=$?"; list
wg-quick down $D/wg/wgm0.conf; echo "down rc=$?"
wg-quick down $D/wg/wgm0.conf; echo "down again rc=$?"`},
		{name: "a PostUp that fails", script: `wg-quick up $D/wg/wgf0.conf; echo "up rc=$?"; list`},
	}
	norm := func(_ *dmSide, text string) string {
		return wgLinkLocal.ReplaceAllString(text, "fe80::LL")
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, norm, steps,
		"Falling back to slow userspace implementation",
		`-A PREROUTING -d 198.18.60.2/32 ! -i wgx0 -m addrtype ! --src-type LOCAL -m comment --comment "wg-quick(8) rule for wgx0" -j DROP`,
		`-A PREROUTING -d 2001:db8:60::2/128 ! -i wgx0 -m addrtype ! --src-type LOCAL -m comment --comment "wg-quick(8) rule for wgx0" -j DROP`,
		`-A POSTROUTING -p udp -m mark --mark 0xca6c -m comment --comment "wg-quick(8) rule for wgx0" -j CONNMARK --save-mark --nfmask 0xffffffff --ctmask 0xffffffff`,
		`-A POSTROUTING -p udp -m mark --mark 0x1234 -m comment --comment "wg-quick(8) rule for wgm0" -j CONNMARK --save-mark --nfmask 0xffffffff --ctmask 0xffffffff`,
		"-A FORWARD -o wgs0 -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu",
		"-A POSTROUTING -s 2001:db8:61::/64 -o wgv0 -j MASQUERADE",
		"`wgm0' already exists", "`wgm0' is not a WireGuard interface",
		"[#] iptables-restore -n")
}

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// VPN, port-knocking and intrusion-detection clients nobody here wrote,
// from their Debian packages, run with the machinery of
// realclients_daemons_test.go (a side per tool set, tracing wrappers
// first in PATH, every step compared on exit status, output, the
// iptables/ipset calls and the saved state):
//
//   - wg-quick (wireguard-tools) with wireguard-go, the userspace
//     WireGuard it falls back to when the kernel has no wireguard module:
//     full tunnels (its raw PREROUTING drops and mangle CONNMARK rules,
//     written with iptables-restore -n and removed by reading
//     iptables-save), road-warrior PostUp/PostDown rules, failures;
//   - strongSwan's updown script (_updown, strongswan-libcharon):
//     up-client, down-client, up-host, down-host for IPv4 and IPv6, with
//     its -m policy --dir in --pol ipsec --reqid N --proto esp rules
//     inserted and deleted by exact spec;
//   - fwknopd (fwknop-server) with its client: single packet
//     authorization requests that open ports and forward with DNAT for
//     ten seconds, the rules' expiry (found by parsing iptables -L
//     --line-numbers), a replayed request, --fw-list, --fw-flush;
//   - psad (Perl, with IPTables::ChainMgr and IPTables::Parse, which
//     parse iptables -nL output): the analysis of a log of scans with
//     auto-blocking and the blocks' timeout, --fw-list-auto,
//     --fw-analyze, -F, -F -X;
//   - fwsnort (Perl), Snort rules as iptables string-match rules: its
//     probes of iptables' capabilities, the restore file it splices
//     into iptables-save's policy, apply, list, flush, revert, IPv6;
//   - knockd with the package's knockd.conf: port-knock sequences from
//     another namespace run its iptables commands and its helper
//     knock_helper_ipt.sh, which finds duplicates by reading the source
//     column of iptables -n -L.
//
// The packages come from Debian's mirrors into vpnCache; nothing is
// installed and no service starts.

const vpnCache = "/var/cache/xdptables-test/vpnclients"

var vpnPackages = []string{"wireguard-tools", "wireguard-go", "strongswan-libcharon",
	// fwknopd and its client, with the libraries they load (from
	// LD_LIBRARY_PATH: nothing is installed)
	"fwknop-server", "fwknop-client", "libfko3", "libgpgme11", "libassuan0", "libpcap0.8",
	// psad and the Perl modules it loads (from PERL5LIB)
	"psad", "libiptables-chainmgr-perl", "libiptables-parse-perl", "libnetaddr-ip-perl", "libdate-calc-perl",
	"libbit-vector-perl", "libcarp-clan-perl", "libnet-ip-perl", "libunix-syslog-perl", "whois",
	// fwsnort (with IPTables::Parse and NetAddr::IP above)
	"fwsnort", "libnet-rawip-perl",
	// knockd, its client knock and its iptables helper
	"knockd"}

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
	# (wireguard-go lists the peers of an interface in map order)
	wg show all allowed-ips | sort; ip rule show; ip -6 rule show
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

// TestRealStrongswanUpdown runs strongSwan 5.9.8's updown script
// (/usr/lib/ipsec/_updown, sh, which charon runs as "_updown iptables"
// for leftfirewall=yes) with the PLUTO_* environment charon gives it:
// site-to-site tunnels with host access and IPComp (up-client,
// down-client), a road warrior's virtual IP, two tunnels between the same
// subnets told apart by their reqid only, hosts with a protocol, a port
// and an ICMP type and code (up-host, down-host), and the same for IPv6;
// a down for a tunnel that is no longer up. The script sets its own PATH
// (/sbin:/bin:/usr/sbin:/usr/bin): the tracing wrappers and a logger that
// prints what it would log are laid over /usr/sbin.
func TestRealStrongswanUpdown(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, vpnCache, vpnPackages)
	sides := newDMSides(t, "swan")
	for _, s := range sides {
		logger := "#!/bin/sh\necho \"logger $*\"\n"
		if err := writeFiles(s.wrap, 0o755, map[string]string{"logger": logger}); err != nil {
			t.Fatal(err)
		}
	}
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`mount -t overlay overlay -o lowerdir=%[1]s:/usr/sbin /usr/sbin || exit 99
U=%[2]s/usr/lib/ipsec/_updown
# what charon gives every call (PATH is the script's own)
export PLUTO_VERSION=1.1 PLUTO_PROTO=esp PLUTO_MY_PORT=0 PLUTO_PEER_PORT=0 PLUTO_MY_PROTOCOL=0 PLUTO_PEER_PROTOCOL=0
site4() { env PLUTO_CONNECTION=site PLUTO_INTERFACE=swext PLUTO_UNIQUEID=1 PLUTO_ME=203.0.113.1 PLUTO_MY_ID=gw1.example \
	PLUTO_MY_CLIENT=198.18.70.0/24 PLUTO_PEER=203.0.113.2 PLUTO_PEER_ID=gw2.example PLUTO_PEER_CLIENT=198.18.71.0/24 "$@" $U iptables; echo "rc=$?"; }
site6() { env PLUTO_CONNECTION=site6 PLUTO_INTERFACE=swext PLUTO_UNIQUEID=5 PLUTO_ME=2001:db8:1::1 PLUTO_MY_ID=gw1.example \
	PLUTO_MY_CLIENT=2001:db8:70::/48 PLUTO_PEER=2001:db8:1::2 PLUTO_PEER_ID=gw2.example PLUTO_PEER_CLIENT=2001:db8:71::/48 "$@" $U iptables; echo "rc=$?"; }
host4() { env PLUTO_CONNECTION=host PLUTO_INTERFACE=swext PLUTO_UNIQUEID=3 PLUTO_ME=203.0.113.1 PLUTO_MY_ID=gw1.example \
	PLUTO_MY_CLIENT=203.0.113.1/32 PLUTO_PEER=203.0.113.9 PLUTO_PEER_ID=h9.example PLUTO_PEER_CLIENT=203.0.113.9/32 "$@" $U iptables; echo "rc=$?"; }
host6() { env PLUTO_CONNECTION=host6 PLUTO_INTERFACE=swext PLUTO_UNIQUEID=7 PLUTO_ME=2001:db8:1::1 PLUTO_MY_ID=gw1.example \
	PLUTO_MY_CLIENT=2001:db8:1::1/128 PLUTO_PEER=2001:db8:1::9 PLUTO_PEER_ID=h9.example PLUTO_PEER_CLIENT=2001:db8:1::9/128 "$@" $U iptables; echo "rc=$?"; }
rw4() { env PLUTO_CONNECTION=rw PLUTO_INTERFACE=swext PLUTO_UNIQUEID=4 PLUTO_ME=198.51.100.20 PLUTO_MY_ID=laptop@example \
	PLUTO_MY_SOURCEIP=198.18.72.5 PLUTO_MY_CLIENT=198.18.72.5/32 PLUTO_PEER=203.0.113.1 PLUTO_PEER_ID=gw1.example PLUTO_PEER_CLIENT=0.0.0.0/0 "$@" $U iptables; echo "rc=$?"; }
`, s.wrap, root)
	}
	steps := []moreStep{
		{name: "site-to-site up with host access and IPComp", script: "site4 PLUTO_VERB=up-client PLUTO_REQID=1 PLUTO_HOST_ACCESS=1 PLUTO_IPCOMP=1"},
		{name: "a second tunnel between the same subnets, another reqid", script: "site4 PLUTO_VERB=up-client PLUTO_REQID=2 PLUTO_UNIQUEID=2"},
		{name: "road warrior's virtual IP", script: "rw4 PLUTO_VERB=up-client PLUTO_REQID=4"},
		{name: "hosts: tcp port, icmp type and code, udp both ports, ah", script: `host4 PLUTO_VERB=up-host PLUTO_REQID=3 PLUTO_MY_PROTOCOL=6 PLUTO_PEER_PROTOCOL=6 PLUTO_MY_PORT=22
host4 PLUTO_VERB=up-host PLUTO_REQID=5 PLUTO_MY_PROTOCOL=1 PLUTO_PEER_PROTOCOL=1 PLUTO_MY_PORT=3 PLUTO_PEER_PORT=4
host4 PLUTO_VERB=up-host PLUTO_REQID=6 PLUTO_PROTO=ah PLUTO_MY_PROTOCOL=17 PLUTO_PEER_PROTOCOL=17 PLUTO_MY_PORT=500 PLUTO_PEER_PORT=4500`},
		{name: "IPv6 site with host access and IPComp, hosts with icmpv6 and tcp", script: `site6 PLUTO_VERB=up-client-v6 PLUTO_REQID=11 PLUTO_HOST_ACCESS=1 PLUTO_IPCOMP=1
host6 PLUTO_VERB=up-host-v6 PLUTO_REQID=12 PLUTO_MY_PROTOCOL=58 PLUTO_PEER_PROTOCOL=58 PLUTO_MY_PORT=128
host6 PLUTO_VERB=up-host-v6 PLUTO_REQID=13 PLUTO_MY_PROTOCOL=6 PLUTO_PEER_PROTOCOL=6 PLUTO_PEER_PORT=443`},
		{name: "listed", script: "iptables -S; iptables -L -n -v --line-numbers; ip6tables -S; ip6tables -L -n --line-numbers"},
		{name: "the first site tunnel down (the second stays)", script: "site4 PLUTO_VERB=down-client PLUTO_REQID=1 PLUTO_HOST_ACCESS=1 PLUTO_IPCOMP=1; iptables -S FORWARD"},
		{name: "down again: no such rules", script: "site4 PLUTO_VERB=down-client PLUTO_REQID=1 PLUTO_HOST_ACCESS=1 PLUTO_IPCOMP=1"},
		{name: "the rest down", script: `site4 PLUTO_VERB=down-client PLUTO_REQID=2 PLUTO_UNIQUEID=2
rw4 PLUTO_VERB=down-client PLUTO_REQID=4
host4 PLUTO_VERB=down-host PLUTO_REQID=3 PLUTO_MY_PROTOCOL=6 PLUTO_PEER_PROTOCOL=6 PLUTO_MY_PORT=22
host4 PLUTO_VERB=down-host PLUTO_REQID=5 PLUTO_MY_PROTOCOL=1 PLUTO_PEER_PROTOCOL=1 PLUTO_MY_PORT=3 PLUTO_PEER_PORT=4
host4 PLUTO_VERB=down-host PLUTO_REQID=6 PLUTO_PROTO=ah PLUTO_MY_PROTOCOL=17 PLUTO_PEER_PROTOCOL=17 PLUTO_MY_PORT=500 PLUTO_PEER_PORT=4500
site6 PLUTO_VERB=down-client-v6 PLUTO_REQID=11 PLUTO_HOST_ACCESS=1 PLUTO_IPCOMP=1
host6 PLUTO_VERB=down-host-v6 PLUTO_REQID=12 PLUTO_MY_PROTOCOL=58 PLUTO_PEER_PROTOCOL=58 PLUTO_MY_PORT=128
host6 PLUTO_VERB=down-host-v6 PLUTO_REQID=13 PLUTO_MY_PROTOCOL=6 PLUTO_PEER_PROTOCOL=6 PLUTO_PEER_PORT=443`},
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, nil, steps,
		"-A FORWARD -s 198.18.71.0/24 -d 198.18.70.0/24 -i swext -m policy --dir in --pol ipsec --reqid 1 --proto esp -j ACCEPT",
		"-A FORWARD -s 198.18.70.0/24 -d 198.18.71.0/24 -o swext -m policy --dir out --pol ipsec --reqid 2 --proto esp -j ACCEPT",
		"-A INPUT -s 203.0.113.2/32 -d 203.0.113.1/32 -i swext -p ipencap -m policy --dir in --pol ipsec --reqid 1 --proto esp -j ACCEPT",
		"--icmp-type 3/4", "--icmpv6-type 128", "-p ipv6 -m policy --dir in --pol ipsec --reqid 11 --proto esp -j ACCEPT",
		"--reqid 6 --proto ah", "logger -t vpn -p local0.notice -- - gw2.example 198.18.71.0/24 == 203.0.113.2 -- 203.0.113.1 == 198.18.70.0/24",
		"Bad rule (does a matching rule exist in that chain?)")
}

// fwknop's keys in the test (the server's access.conf and the client's
// options)
const (
	fwknopKey  = "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8="
	fwknopHMAC = "/+7dzLuqmYh3ZlVEMyIRAP/u3cy7qpmId2ZVRDMiEQA="
)

// fwknopEpoch is a time in seconds since 1970 (the expiry fwknopd puts
// in its rules' comments and logs), fwknopPid a process id in its
// messages, fwknopDate the time of a request in a replay's message.
var (
	fwknopEpoch = regexp.MustCompile(`(_exp_|expires at |expire time of )1\d{9}\b`)
	fwknopPid   = regexp.MustCompile(`\(pid=\d+\)|\(\d+\)`)
	fwknopDate  = regexp.MustCompile(`Entry created: \d\d/\d\d/\d\d \d\d:\d\d:\d\d`)
)

// TestRealFwknopd runs fwknopd 2.6.10 (C; fwknop-server) in UDP server
// mode with forwarding and local NAT on, and its client fwknop: at start
// it tests iptables -C and the comment match, makes its chains and jump
// rules; a client's request opens tcp/22 for an address, another
// forwards a port with DNAT, each with an _exp_TIME comment; after
// FW_ACCESS_TIMEOUT it deletes them by the number it finds in iptables
// -L CHAIN --line-numbers -n; a replayed request is refused; SIGTERM
// (fwknopd -K) removes its chains. Then --fw-list, --fw-list-all and
// --fw-flush on chains left over with rules of their own. fwknopd runs
// /usr/sbin/iptables (compiled in): the tracing wrappers are laid over
// /usr/sbin.
func TestRealFwknopd(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, vpnCache, vpnPackages)
	sides := newDMSides(t, "fwk")
	for _, s := range sides {
		conf := map[string]string{
			"fwknopd.conf": "FWKNOP_RUN_DIR " + filepath.Join(s.dir, "run") + ";\nENABLE_IPT_FORWARDING Y;\nENABLE_IPT_LOCAL_NAT Y;\n",
			"access.conf": "SOURCE ANY\nKEY_BASE64 " + fwknopKey + "\nHMAC_KEY_BASE64 " + fwknopHMAC +
				"\nFW_ACCESS_TIMEOUT 10\nOPEN_PORTS tcp/22, udp/53, tcp/2222\n",
		}
		if err := writeFiles(filepath.Join(s.dir, "fwknop"), 0o600, conf); err != nil {
			t.Fatal(err)
		}
		sideSh(t, s, `set -e
ip link add fwk0 type veth peer name fwk1
ip link set fwk0 up && ip link set fwk1 up
ip addr add 198.18.80.1/24 dev fwk0
ip addr add 198.18.81.1/24 dev fwk1`)
	}
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`mount -t overlay overlay -o lowerdir=%[1]s:/usr/sbin /usr/sbin || exit 99
D=%[2]s R=%[3]s
mkdir -p $D/run $D/home || exit 99
export HOME=$D/home LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu
FWD="$R/usr/sbin/fwknopd -c $D/fwknop/fwknopd.conf -a $D/fwknop/access.conf"
spa() { $R/usr/bin/fwknop -D 198.18.80.1 --use-hmac --key-base64-rijndael %[4]s --key-base64-hmac %[5]s "$@"; echo "client rc=$?"; }
# until the log has N lines matching PATTERN (bounded: 40 s)
waitlog() { i=0; while [ $(grep -c "$2" $D/fwknopd.log) -lt $1 ] && [ $i -lt 400 ]; do sleep 0.1; i=$((i+1)); done; }
`, s.wrap, s.dir, root, fwknopKey, fwknopHMAC)
	}
	steps := []moreStep{
		{name: "fwknopd: start, requests, expiry, replay, stop", script: `$FWD -f -U >$D/fwknopd.log 2>&1 &
# until it listens on udp/62201
i=0; while ! grep -q ':F2F9 ' /proc/net/udp && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
iptables-save | grep -v '^#'
spa -A tcp/22 -a 198.18.80.5 --save-packet $D/spa.pkt
spa -A tcp/2222 -a 198.18.80.6 -N 198.18.81.7:22
waitlog 3 'expires at'
$FWD --fw-list; echo "fw-list rc=$?"
iptables-save | grep -v '^#'
waitlog 3 'Removed rule'
$FWD --fw-list; echo "fw-list rc=$?"
# the first request again, as sent
bash -c 'printf %s "$(cat "$0")" >/dev/udp/198.18.80.1/62201' $D/spa.pkt
waitlog 1 'Replay'
$FWD -K; echo "kill rc=$?"
wait
echo "--- fwknopd's log"; cat $D/fwknopd.log`},
		{name: "left-over chains: --fw-list, --fw-list-all, --fw-flush", script: `iptables -N FWKNOP_INPUT && iptables -I INPUT -j FWKNOP_INPUT
iptables -A FWKNOP_INPUT -s 198.51.100.9/32 -p tcp -m tcp --dport 22 -m comment --comment _exp_1700000000 -j ACCEPT
iptables -A FWKNOP_INPUT -s 198.51.100.10/32 -p udp -m udp --dport 53 -j ACCEPT
iptables -t nat -N FWKNOP_PREROUTING
$FWD --fw-list; echo "fw-list rc=$?"
$FWD --fw-list-all; echo "fw-list-all rc=$?"
$FWD --fw-flush; echo "fw-flush rc=$?"
$FWD --fw-list; echo "fw-list rc=$?"`},
	}
	norm := func(_ *dmSide, text string) string {
		text = fwknopEpoch.ReplaceAllString(text, "${1}EPOCH")
		text = fwknopDate.ReplaceAllString(text, "Entry created: DATE")
		return fwknopPid.ReplaceAllString(text, "(PID)")
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, norm, steps,
		"-A FWKNOP_INPUT -s 198.18.80.5/32 -p tcp -m tcp --dport 22 -m comment --comment _exp_EPOCH -j ACCEPT",
		"--to-destination 198.18.81.7:22", "iptables -t filter -C INPUT -s 127.0.0.2 -p udp -j ACCEPT",
		"Removed rule", "Replay", "-A FWKNOP_INPUT -s 198.51.100.10/32 -p udp -m udp --dport 53 -j ACCEPT", "fw-flush rc=0")
}

// psadTime is what differs in psad's output from run to run: clock
// times, and the start time of a block in auto_blocked_iptables; and
// psadPid the daemon's process id.
var (
	psadTime = regexp.MustCompile(`(^|\s)((Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d\d:\d\d:\d\d|1\d{9})\b`)
	psadPid  = regexp.MustCompile(`pid: \d+`)
)

// TestRealPsad runs psad 2.4.6 (Perl; its iptables work is done by
// IPTables::ChainMgr, which runs iptables and reads what it needs from
// iptables -nL --line-numbers with IPTables::Parse) with the package's
// psad.conf, changed to keep its files in the side's directory, to
// auto-block at danger level 1 for 15 seconds (time enough to list the
// blocks under load), and to send no mail and no syslog: the analysis
// of a log of scans (testdata/realclients/psad/messages) with
// --analysis-auto-block, which blocks the scanners and, after the
// timeout, unblocks them (the test lists the rules in between); then
// blocks left behind: --fw-list-auto, --fw-analyze (whether the policy
// logs what it drops) without and with LOG rules, -F, -F -X. The daemon
// is not run: it lists the chains on a timer, and what those listings
// print depends on when they come (--fw-block-ip without it only says
// so).
func TestRealPsad(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, vpnCache, vpnPackages)
	sides := newDMSides(t, "psad")
	data, err := filepath.Abs("../testdata/realclients/psad")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(root, "etc/psad/psad.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sides {
		ir := filepath.Join(s.dir, "psad")
		if err := os.CopyFS(filepath.Join(ir, "etc/psad"), os.DirFS(filepath.Join(root, "etc/psad"))); err != nil {
			t.Fatal(err)
		}
		set := map[string]string{
			"INSTALL_ROOT":           ir,
			"HOSTNAME":               "xdpt-test",
			"ENABLE_AUTO_IDS":        "Y",
			"AUTO_IDS_DANGER_LEVEL":  "1",
			"AUTO_BLOCK_TIMEOUT":     "15",
			"ALERTING_METHODS":       "noemail,nosyslog",
			"ENABLE_WHOIS_LOOKUPS":   "N",
			"ENABLE_DNS_LOOKUPS":     "N",
			"AUTO_DETECT_JOURNALCTL": "N",
			"IPT_SYSLOG_FILE":        filepath.Join(s.dir, "messages"),
			"CHECK_INTERVAL":         "1",
		}
		var out []string
		for _, l := range strings.Split(string(conf), "\n") {
			if k, _, ok := strings.Cut(l, " "); ok {
				if v, ok := set[k]; ok {
					l = fmt.Sprintf("%-27s %s;", k, v)
					delete(set, k)
				}
			}
			out = append(out, l)
		}
		if len(set) > 0 {
			t.Fatalf("the package's psad.conf lacks %v", set)
		}
		if err := os.WriteFile(filepath.Join(ir, "etc/psad/psad.conf"), []byte(strings.Join(out, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"var/log/psad", "var/run/psad", "var/lib/psad", "usr/lib/psad", "usr/sbin", "usr/bin"} {
			if err := os.MkdirAll(filepath.Join(ir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// psad finds its own programs under INSTALL_ROOT, and whois
		// (never run: lookups are off) as usr/bin/whois_psad there
		links := map[string]string{"usr/bin/whois_psad": "usr/bin/whois"}
		for _, f := range []string{"psad", "psadwatchd", "kmsgsd", "fwcheck_psad"} {
			links["usr/sbin/"+f] = "usr/sbin/" + f
		}
		for link, target := range links {
			if err := os.Symlink(filepath.Join(root, target), filepath.Join(ir, link)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(s.dir, "messages"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`mount -t overlay overlay -o lowerdir=%[1]s:/usr/sbin /usr/sbin || exit 99
D=%[2]s R=%[3]s M=%[4]s/messages
export PERL5LIB=$R/usr/share/perl5:$(echo $R/usr/lib/x86_64-linux-gnu/perl5/5.*)
# psad prints hashes in their order: the same in every run
export PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0
PSAD="perl $R/usr/sbin/psad -c $D/psad/etc/psad/psad.conf"
L=$D/psad/var/log/psad
# until the shell test $1 holds (bounded: 20 s)
waitfor() { i=0; while ! eval "$1" && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; }
`, s.wrap, s.dir, root, data)
	}
	steps := []moreStep{
		{name: "analysis with auto-blocking, the blocks' timeout", script: `$PSAD -A --messages-file $M --analysis-auto-block >$D/analysis.out 2>&1 &
B=$L/ipt_analysis/auto_blocked_iptables
waitfor "grep -q 198.51.100.60 $B 2>/dev/null && grep -q 203.0.113.50 $B"
iptables-save | grep -v '^#'
$PSAD --fw-list-auto; echo "fw-list-auto rc=$?"
wait $!; echo "analysis rc=$?"
cat $D/analysis.out; echo "--- auto_blocked_iptables"; cat $B`},
		{name: "blocks left by a psad that was killed: --fw-list-auto, --fw-analyze, -F, -F -X", script: `iptables -I PSAD_BLOCK_INPUT 1 -s 198.51.100.78 -j DROP
iptables -I PSAD_BLOCK_OUTPUT 1 -d 198.51.100.78 -j DROP
iptables -A PSAD_BLOCK_FORWARD -s 198.51.100.78 -j DROP && iptables -A PSAD_BLOCK_FORWARD -d 198.51.100.78 -j DROP
$PSAD --fw-block-ip 198.51.100.79; echo "block rc=$?"
$PSAD --fw-list-auto; echo "fw-list-auto rc=$?"
$PSAD --fw-analyze; echo "fw-analyze rc=$?"; cat $L/fw_check
iptables -A INPUT -j LOG --log-prefix "DROP " && iptables -A INPUT -j DROP
$PSAD --fw-analyze; echo "fw-analyze rc=$?"; cat $L/fw_check
$PSAD -F; echo "flush rc=$?"; iptables -S
$PSAD -F -X; echo "flush rc=$?"`},
	}
	norm := func(_ *dmSide, text string) string {
		text = psadTime.ReplaceAllString(text, "${1}TIME")
		return psadPid.ReplaceAllString(text, "pid: PID")
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, norm, steps,
		"-A PSAD_BLOCK_INPUT -s 203.0.113.50/32 -j DROP", "-A PSAD_BLOCK_FORWARD -d 198.51.100.60/32 -j DROP")
}

// TestRealFwsnort runs fwsnort 1.6.8 (Perl, with IPTables::Parse), which
// turns Snort rules (testdata/realclients/fwsnort/xdpt.rules: payload
// strings in text and hex, offsets and depths, nocase, flow, dsize, ttl,
// tcp flags, icmp types) into iptables rules with the string, length,
// ttl, conntrack, comment and LOG extensions: first it probes what the
// iptables it runs supports by adding and deleting test rules, then
// writes a restore file that splices its chains into the policy it read
// with iptables-save, and applies it (--ipt-apply, iptables-restore);
// --ipt-list, --ipt-flush, --ipt-revert (the policy saved before), and
// the same for ip6tables (-6), first with the IPv4 address of the
// whitelist that fwsnort copies into its ip6tables file, then (without
// the probes, which take long) with an IPv6 one. It runs /sbin/iptables and the others by
// path (fwsnort.conf): the tracing wrappers are laid over /usr/sbin.
func TestRealFwsnort(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, vpnCache, vpnPackages)
	sides := newDMSides(t, "fwsnort")
	data, err := filepath.Abs("../testdata/realclients/fwsnort")
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(root, "etc/fwsnort/fwsnort.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sides {
		ir := filepath.Join(s.dir, "fwsnort")
		set := map[string]string{"INSTALL_ROOT": ir, "WHITELIST": "198.51.100.1, 2001:db8:1::1"}
		var out []string
		for _, l := range strings.Split(string(conf), "\n") {
			if k, _, ok := strings.Cut(l, " "); ok {
				if v, ok := set[k]; ok {
					l = fmt.Sprintf("%-23s %s;", k, v)
					delete(set, k)
				}
			}
			out = append(out, l)
		}
		if len(set) > 0 {
			t.Fatalf("the package's fwsnort.conf lacks %v", set)
		}
		rules, err := os.ReadFile(filepath.Join(data, "xdpt.rules"))
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"etc/fwsnort/fwsnort.conf": strings.Join(out, "\n"), "etc/fwsnort/snort_rules/xdpt.rules": string(rules)}
		if err := writeFiles(ir, 0o644, files); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"var/log/fwsnort", "var/lib/fwsnort", "usr/lib/fwsnort"} {
			if err := os.MkdirAll(filepath.Join(ir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`mount -t overlay overlay -o lowerdir=%[1]s:/usr/sbin /usr/sbin || exit 99
D=%[2]s R=%[3]s
export PERL5LIB=$R/usr/share/perl5:$(echo $R/usr/lib/x86_64-linux-gnu/perl5/5.*)
export PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0
F="perl $R/usr/sbin/fwsnort --config $D/fwsnort/etc/fwsnort/fwsnort.conf"
S=$D/fwsnort/var/lib/fwsnort
`, s.wrap, s.dir, root)
	}
	steps := []moreStep{
		{name: "a policy of the administrator's", script: `iptables -A INPUT -s 198.51.100.9 -j DROP && iptables -N web && iptables -A web -p tcp --dport 80 -j ACCEPT && iptables -A INPUT -j web
ip6tables -A INPUT -s 2001:db8:9::/48 -j DROP`},
		{name: "translate, the restore file", script: `$F --no-addresses; echo "rc=$?"; cat $S/fwsnort.save; cat $S/fwsnort_iptcmds.sh`},
		{name: "apply", script: `$F --ipt-apply; echo "rc=$?"`},
		{name: "list", script: `$F --ipt-list; echo "rc=$?"`},
		{name: "flush", script: `$F --ipt-flush; echo "rc=$?"`},
		{name: "revert", script: `$F --ipt-revert; echo "rc=$?"`},
		// fwsnort keeps the whitelist's IPv4 address in its ip6tables
		// file: ip6tables-restore refuses it
		{name: "ip6tables: translate, apply with an IPv4 address in the whitelist", script: `$F -6 --no-addresses; echo "rc=$?"; cat $S/fwsnort.save; $F -6 --ipt-apply; echo "rc=$?"`},
		{name: "ip6tables: translate, apply with an IPv6 whitelist", before: func(s *dmSide) error {
			p := filepath.Join(s.dir, "fwsnort/etc/fwsnort/fwsnort.conf")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			c := strings.Replace(string(b), "198.51.100.1, 2001:db8:1::1;", "2001:db8:1::1;", 1)
			if c == string(b) {
				return fmt.Errorf("%s: no WHITELIST to change", p)
			}
			return os.WriteFile(p, []byte(c), 0o644)
		}, script: `$F -6 --no-addresses --no-ipt-test; echo "rc=$?"; $F -6 --ipt-apply; echo "rc=$?"`},
		{name: "ip6tables: list and flush", script: `$F -6 --ipt-list; echo "rc=$?"; $F -6 --ipt-flush; echo "rc=$?"`},
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, nil, steps,
		`-A FWSNORT_INPUT_ESTAB -p tcp -m tcp --dport 80 -m string --string "cmd.exe" --algo bm --icase -m comment --comment "sid:9000001; msg:XDPT web cmd.exe; classtype:web-application-attack; rev:1; FWS:1.6.8;" -j LOG --log-prefix "[1] SID9000001 ESTAB " --log-tcp-options --log-ip-options`,
		`-m string --hex-string "|0776657273696f6e0462696e64|" --algo bm --from 54 --icase`,
		"-m length --length 828:1528", "--tcp-flags FIN,SYN,RST,PSH,ACK,URG SYN -m ttl --ttl-lt 5",
		"Generated iptables rules for 6 out of 6 signatures", "-A FWSNORT_INPUT -s 198.51.100.1/32 -j RETURN",
		"host/network `198.51.100.1' not found", "Generated ip6tables rules for 4 out of 6 signatures", "Splicing fwsnort 4 rules")
}

// knockdLogTime is the time stamp of knockd's log lines.
var knockdLogTime = regexp.MustCompile(`\[\d{4}-\d\d-\d\d \d\d:\d\d\]`)

// TestRealKnockd runs knockd 0.8 (C, libpcap) with the package's
// knockd.conf (its log to a file instead of syslog, and its openHTTPS
// helper under the name the package ships it, knock_helper_ipt.sh, run
// with bash: it is written for bash, and sh runs its "iptables -L CHAIN
// &> /dev/null" in the background, printing at any time) on a
// veth whose peer is in a client namespace, where the package's knock
// sends the sequences: openHTTPS runs the helper (iptables -L, then -n
// -L INPUT parsed with grep and awk for the addresses already let in,
// then -I; the second time it finds the address and adds nothing),
// openSSH iptables -A, closeSSH iptables -D; a knock over IPv6 gives
// iptables an IPv6 address. The helper also runs by hand: append,
// a duplicate it must find in the listing, insert with a comment,
// delete, verbose. knockd lives as long as its step.
func TestRealKnockd(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, vpnCache, vpnPackages)
	sides := newDMSides(t, "knock")
	pkgConf, err := os.ReadFile(filepath.Join(root, "etc/knockd.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cli := map[*dmSide]*netns.NS{}
	for _, s := range sides {
		conf := string(pkgConf)
		for old, new := range map[string]string{
			"UseSyslog":                  "LogFile = " + filepath.Join(s.dir, "knockd.log"),
			"/usr/local/sbin/knock_add ": "/bin/bash " + filepath.Join(root, "usr/sbin/knock_helper_ipt.sh") + " ",
		} {
			if !strings.Contains(conf, old) {
				t.Fatalf("the package's knockd.conf has no %q", old)
			}
			conf = strings.Replace(conf, old, new, 1)
		}
		if err := writeFiles(s.dir, 0o644, map[string]string{"knockd.conf": conf, "knockd.log": ""}); err != nil {
			t.Fatal(err)
		}
		c := netns.New(t, "knock-cli-"+s.name)
		cli[s] = c
		sideSh(t, s, fmt.Sprintf(`set -e
ip link add kn0 type veth peer name kn1
ip link set kn1 netns %[1]s
ip link set kn0 up && ip addr add 198.18.95.1/24 dev kn0 && ip addr add 2001:db8:95::1/64 dev kn0 nodad
ip netns exec %[1]s sh -c 'ip link set lo up && ip link set kn1 up && ip addr add 198.18.95.2/24 dev kn1 && ip addr add 2001:db8:95::2/64 dev kn1 nodad'`, c.Name))
	}
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`mount -t overlay overlay -o lowerdir=%[1]s:/usr/sbin /usr/sbin || exit 99
D=%[2]s R=%[3]s CLI=%[4]s
H="bash $R/usr/sbin/knock_helper_ipt.sh"
knock() { ip netns exec $CLI $R/usr/bin/knock "$@"; echo "knock rc=$?"; }
# until knockd's log has N lines matching PATTERN, or the tracing
# wrappers N finished calls starting with PATTERN (bounded: 20 s)
waitlog() { i=0; while [ $(grep -c "$2" $D/knockd.log) -lt $1 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; }
waittrace() { i=0; while [ $(grep -c "^$2" %[5]s) -lt $1 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; }
`, s.wrap, s.dir, root, cli[s].Name, s.trace)
	}
	steps := []moreStep{
		{name: "the helper by hand", script: `$H -a -f 198.51.100.20 -d 22; echo "rc=$?"
$H -a -f 198.51.100.20 -d 22 -v; echo "rc=$?"
$H -i -f 198.51.100.21 -d 443 -p tcp -m'let in'; echo "rc=$?"
$H -a -c nochain -f 198.51.100.22 -d 80; echo "rc=$?"
$H -x -f 198.51.100.21 -d 443; echo "rc=$?"
$H -i -t -v -f 198.51.100.23 -d 25 -m; echo "rc=$?"
iptables -S INPUT; iptables -F INPUT`},
		{name: "knockd: sequences over IPv4 and IPv6", script: `$R/usr/sbin/knockd -i kn0 -c $D/knockd.conf >$D/knockd.out 2>&1 &
KPID=$!
waitlog 1 'listening on kn0'
knock 198.18.95.1 12345 54321 24680 13579
waittrace 1 'iptables -I INPUT -s 198.18.95.2 '
iptables -S INPUT
knock 198.18.95.1 12345 54321 24680 13579
waittrace 2 'iptables -n -L INPUT '
knock 198.18.95.1 7000 8000 9000
waittrace 1 'iptables -A INPUT -s 198.18.95.2 '
iptables -S INPUT
knock 198.18.95.1 9000 8000 7000
waittrace 1 'iptables -D INPUT -s 198.18.95.2 '
knock -6 2001:db8:95::1 7000 8000 9000
waittrace 1 'iptables -A INPUT -s 2001:db8:95::2 '
kill $KPID; wait
echo "--- knockd's log"; cat $D/knockd.log; cat $D/knockd.out`},
	}
	norm := func(_ *dmSide, text string) string {
		return knockdLogTime.ReplaceAllString(text, "[TIME]")
	}
	runMoreSteps(t, sides, false, 2*time.Minute, prologue, norm, steps,
		`-A INPUT -s 198.51.100.20/32 -p tcp -m tcp --dport 22 -m comment --comment "Append " -j ACCEPT`, `--comment "Insert let in"`,
		"Seen: 1", "nochain is not a valid NetFilter chain", `-A INPUT -s 198.18.95.2/32 -p tcp -m tcp --dport 443 -m comment --comment "Insert " -j ACCEPT`,
		"-A INPUT -s 198.18.95.2/32 -p tcp -m tcp --dport 22 -j ACCEPT", "closeSSH: running command", "host/network `2001:db8:95::2' not found")
}

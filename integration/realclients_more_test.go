package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// More real clients nobody here wrote, from their Debian packages, run
// with the machinery of realclients_daemons_test.go (a side per tool set,
// tracing wrappers first in PATH, every step compared on exit status,
// output, the iptables/ipset calls and the saved state):
//
//   - arno-iptables-firewall: a router (external and internal veths,
//     NAT, port forwards, open, denied and rejected ports, blocked
//     hosts, IPv6, ipset blocklists) started, reloaded, restarted and
//     stopped;
//   - the CNI plugins bridge, portmap and firewall (go-iptables): ADD,
//     CHECK and DEL of containers;
//   - netavark, Podman's network backend: setup and teardown;
//   - lxc-net, LXC's bridge script, in its iptables mode.
//
// wg-quick is in realclients_vpn_test.go (with wireguard-go, since the
// kernel may have no WireGuard); the rules it writes are also in
// testdata/scripts/wireguard.txt and testdata/scripts/realworld/wg-quick-*.rules.
//
// The packages come from Debian's mirrors into moreCache, as for the
// other real clients; nothing is installed and no service starts.

const moreCache = "/var/cache/xdptables-test/moreclients"

var morePackages = []string{"arno-iptables-firewall", "containernetworking-plugins", "netavark", "lxc"}

// moreStep is a step of a client run on both sides: a shell script run
// in the side's namespaces after the test's prologue.
type moreStep struct {
	name, script string
	// before, when not nil, changes the side's files first
	before func(s *dmSide) error
	// stdin, when not nil, gives the step's standard input
	stdin func(s *dmSide) string
	// after, when not nil, sees the step's result
	after func(s *dmSide, r netns.Result)
}

// runMoreSteps runs steps on both sides, side by side, each after
// prologue(side) in the same shell, and compares them. The reference's
// outputs and states together must hold each of want, so that a client
// that fails the same way on both sides does not pass unnoticed.
//
// norm, when not nil, removes from a side's outputs, calls and states
// what differs from run to run besides what dmNorm removes.
func runMoreSteps(t *testing.T, sides [2]*dmSide, withSets bool, limit time.Duration, prologue func(s *dmSide) string, norm func(s *dmSide, text string) string, steps []moreStep, want ...string) {
	t.Helper()
	var got [2][]dmStep
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, st := range steps {
				if st.before != nil {
					if err := st.before(s); err != nil {
						t.Errorf("%s: step %q: %v", s.name, st.name, err)
						return
					}
				}
				stdin := ""
				if st.stdin != nil {
					stdin = st.stdin(s)
				}
				start := time.Now()
				r := s.shFor(limit, stdin, prologue(s)+st.script)
				t.Logf("%s: step %q took %.1fs", s.name, st.name, time.Since(start).Seconds())
				if st.after != nil {
					st.after(s, r)
				}
				calls := s.takeTrace()
				if norm != nil {
					r.Stdout, r.Stderr = norm(s, r.Stdout), norm(s, r.Stderr)
					for j := range calls {
						calls[j] = norm(s, calls[j])
					}
				}
				state := s.state(withSets)
				if norm != nil {
					state = norm(s, state)
				}
				got[i] = append(got[i], dmStep{name: st.name, result: r, calls: calls, state: state})
			}
		}()
	}
	wg.Wait()
	var ref strings.Builder
	for _, st := range got[0] {
		if st.result.RC == 99 {
			t.Fatalf("step %q: the test's prologue failed:\n%s%s", st.name, st.result.Stdout, st.result.Stderr)
		}
		fmt.Fprintf(&ref, "%s\n%s\n%s\n%s\n", st.result.Stdout, st.result.Stderr, strings.Join(st.calls, "\n"), st.state)
	}
	for _, w := range want {
		if !strings.Contains(ref.String(), w) {
			t.Errorf("the reference run lacks %q: the client did not get as far as it should", w)
		}
	}
	dmCompare(t, sides, got[0], got[1])
}

// writeFiles writes files (path under dir → content) with mode.
func writeFiles(dir string, mode os.FileMode, files map[string]string) error {
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			return err
		}
	}
	return nil
}

// sideSh runs a setup command in the side's network namespace and fails
// the test when it fails.
func sideSh(t *testing.T, s *dmSide, script string) {
	t.Helper()
	if r := s.ns.Run("", "sh", "-c", script); r.RC != 0 {
		t.Fatalf("%s: %s: %s%s", s.name, script, r.Stdout, r.Stderr)
	}
}

// netnsSysctl is a sysctl for clients that set kernel parameters: it
// writes only keys under net., which the kernel keeps per network
// namespace, and refuses the others (the host's own) with an error; it
// runs the real sysctl, bound on DIR/sysctl.real by the prologue.
func netnsSysctl(dir string) string {
	return `#!/bin/sh
for a; do
	case $a in
	net.*=*) ;;
	*=*) echo "sysctl: $a: the test keeps to its network namespace's keys (net.*)" >&2; exit 1 ;;
	esac
done
exec ` + dir + `/sysctl.real "$@"
`
}

// noModprobe loads nothing: the kernel loads the modules the rules need
// on its own, and the host's modules are not the test's to change.
const noModprobe = "#!/bin/sh\nexit 0\n"

// quietLogger keeps the clients' logs out of the host's syslog.
const quietLogger = "#!/bin/sh\ncat >/dev/null\nexit 0\n"

// TestRealArnoIptablesFirewall runs arno-iptables-firewall 2.1.1 (bash,
// its main script with its environment and plugins) on a router
// configuration (testdata/realclients/arno/xdpt.conf) with its ipset
// blocklists and three plugins: start, status, force-reload of a changed
// blocklist, stop-block, stop. (Restart, and rule by rule with
// DISABLE_IPTABLES_BATCH, write the same rules again: each as long
// again, left out to keep the test's time.)
func TestRealArnoIptablesFirewall(t *testing.T) {
	netns.RequireRoot(t)
	for _, tool := range []string{"sysctl", "awk"} {
		if !netns.Have(tool) {
			t.Fatalf("arno-iptables-firewall needs %s (procps, mawk), which is not installed", tool)
		}
	}
	root := debsRoot(t, moreCache, morePackages)
	sides := newDMSides(t, "arno")
	conf := dmTestdata(t, "arno/xdpt.conf")
	for _, s := range sides {
		up := filepath.Join(s.dir, "etc-up")
		if err := os.CopyFS(filepath.Join(up, "arno-iptables-firewall"), os.DirFS(filepath.Join(root, "etc/arno-iptables-firewall"))); err != nil {
			t.Fatal(err)
		}
		// three of its plugins: SSH brute force protection (-m recent
		// with hit counts), NAT loopback (which rewrites its rules with
		// -R from iptables-save on status) and the MAC address filter
		plugins := map[string]string{
			"arno-iptables-firewall/conf.d/xdpt.conf":                        conf,
			"arno-iptables-firewall/plugins/ssh-brute-force-protection.conf": "ENABLED=1\nSSH_BFP_PORTS=\"22 2222\"\nSSH_BFP_TRUSTED_HOSTS=\"198.51.100.5 2001:db8:5::/48\"\nSSH_BFP_MAX_RATE1=\"4\"\nSSH_BFP_MAX_TIME1=\"60\"\nSSH_BFP_MAX_RATE2=\"10\"\nSSH_BFP_MAX_TIME2=\"1800\"\nSSH_BFP_IPV6_ENABLE=1\n",
			"arno-iptables-firewall/plugins/nat-loopback.conf":               "ENABLED=1\nNAT_LOOPBACK_NET=\"198.18.10.0/24\"\nNAT_LOOPBACK_FORWARD=1\nNAT_LOOPBACK_UPDATE_ON_STATUS=1\n",
			"arno-iptables-firewall/plugins/mac-address-filter.conf":         "ENABLED=1\nMAC_ADDRESS_IF=\"$INT_IF\"\nMAC_ADDRESS_LOG=1\nMAC_ADDRESS_FILE=\"/etc/arno-iptables-firewall/mac-addresses\"\n",
			"arno-iptables-firewall/mac-addresses":                           "# allowed on the internal net\n02:00:00:00:10:05 198.18.10.5\n02:00:00:00:10:06\n",
		}
		if err := writeFiles(up, 0o644, plugins); err != nil {
			t.Fatal(err)
		}
		if err := writeFiles(s.dir, 0o755, map[string]string{"sysctl": netnsSysctl(s.dir)}); err != nil {
			t.Fatal(err)
		}
		if err := writeFiles(s.wrap, 0o755, map[string]string{"logger": quietLogger, "modprobe": noModprobe}); err != nil {
			t.Fatal(err)
		}
		sideSh(t, s, `set -e
ip link add aext type veth peer name aextp
ip link add aint type veth peer name aintp
for l in aext aextp aint aintp; do ip link set $l up; done
ip addr add 203.0.113.1/26 dev aext
ip addr add 2001:db8:1::1/64 dev aext nodad
ip addr add 198.18.10.1/24 dev aint
ip addr add 2001:db8:10::1/64 dev aint nodad
ip route add default via 203.0.113.2`)
	}
	// the package's files where an installed package has them, the
	// side's own /var/tmp (batch files, the active plugins) and
	// /run/lock, and the sysctl above (modprobe and logger are found
	// in PATH)
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`D=%[1]s
mount -t overlay overlay -o lowerdir=%[2]s/usr/share:/usr/share /usr/share || exit 99
mkdir -p $D/vartmp $D/lock && touch $D/sysctl.real || exit 99
mount --bind $D/vartmp /var/tmp && mount --bind $D/lock /run/lock || exit 99
mount --bind /usr/sbin/sysctl $D/sysctl.real && mount --bind $D/sysctl /usr/sbin/sysctl || exit 99
AIF=%[2]s/usr/sbin/arno-iptables-firewall
`, s.dir, root)
	}
	confd := func(name, text string) func(s *dmSide) error {
		return func(s *dmSide) error {
			return writeFiles(filepath.Join(s.dir, "etc-up/arno-iptables-firewall/conf.d"), 0o644, map[string]string{name: text})
		}
	}
	netsets := func(s *dmSide) error {
		return writeFiles(filepath.Join(s.dir, "etc-up/arno-iptables-firewall/blocklists"), 0o644, map[string]string{
			"drop.netset":   "# a blocklist\n198.51.100.128/25\n203.0.113.200 comment\n",
			"dropv6.netset": "2001:db8:bad::/48\n",
		})
	}
	// one full start (a restart runs as long again and writes the same
	// rules): the time the test may take (20 s on a quiet machine)
	steps := []moreStep{
		{name: "start with ipset blocklists", before: func(s *dmSide) error {
			if err := netsets(s); err != nil {
				return err
			}
			return confd("zz-ipset.conf", "IPTABLES_IPSET=1\nBLOCK_NETSET_DIR=/etc/arno-iptables-firewall/blocklists\n")(s)
		}, script: "$AIF start"},
		{name: "status", script: "$AIF status"},
		{name: "force-reload with more blocked hosts", before: confd("zz-block.conf", `BLOCK_HOSTS="$BLOCK_HOSTS 198.51.100.67 2001:db8:67::1"`+"\n"),
			script: "$AIF force-reload"},
		{name: "stop-block", script: "$AIF stop-block"},
		{name: "stop", script: "$AIF stop"},
	}
	// IPv6 on the veths sends neighbour discovery and MLD of its own:
	// the counters arno's status lists and the policies' counters move
	// with it
	counters := func(_ *dmSide, text string) string {
		text = arnoListCounters.ReplaceAllString(text, "${1}P B ")
		text = arnoPolicyCounters.ReplaceAllString(text, "(policy $1 P packets, B bytes)")
		return rcPolicyCnt.ReplaceAllString(text, ":$1 $2 [P:B]")
	}
	// start takes 20 s on a quiet machine, 90-320 s at load 15 on two cores
	runMoreSteps(t, sides, true, 2*dmStepLimit, prologue, counters, steps,
		"IPv4/IPv6 mixed mode selected", "add aif_blocklistv6 2001:db8:67::1",
		"-A PREROUTING -i aext -p tcp -m tcp --dport 8080 -j DNAT --to-destination 198.18.10.5:80",
		"add dropv6 2001:db8:bad::/48", "All firewall rules applied.", "FIREWALL DISABLED & BLOCKING ALL INTERNET TRAFFIC!",
		"-A SSH_CHK -m recent --update --seconds 60 --hitcount 4 --name sshchk --mask 255.255.255.255 --rsource -j SSH_LOG_DROP", "-A NAT_LOOPBACK_DNAT -s 198.18.10.0/24", "-m mac --mac-source 02:00:00:00:10:05")
}

// cniSide is what the CNI test keeps of a side: its containers'
// namespaces and the results of their last ADD, by container.
type cniSide struct {
	ctr    map[string]*netns.NS
	result map[string]json.RawMessage
}

// TestRealCNIPlugins runs the reference CNI plugins 1.1.1 (Debian's
// containernetworking-plugins, Go, github.com/coreos/go-iptables) the
// way a runtime runs a network configuration list: bridge (with ipMasq,
// IPv4 and IPv6, host-local addresses), then portmap (ports published
// with SNAT for hairpin traffic, on all addresses and on one) and
// firewall (its iptables backend, with the same-bridge ingress policy's
// isolation chains), each with the previous plugin's
// result. Two containers are added, checked (CHECK compares the rules
// with the result) and deleted in reverse order, as the runtimes do;
// the containers' namespaces are the test's own.
func TestRealCNIPlugins(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, moreCache, morePackages)
	sides := newDMSides(t, "cni")
	state := map[*dmSide]*cniSide{}
	for _, s := range sides {
		c := &cniSide{ctr: map[string]*netns.NS{}, result: map[string]json.RawMessage{}}
		for _, id := range []string{"ctr1", "ctr2"} {
			c.ctr[id] = netns.New(t, "cni-"+id+"-"+s.name)
		}
		state[s] = c
	}
	plugins := filepath.Join(root, "usr/lib/cni")
	ports := map[string]string{
		"ctr1": `[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"198.18.20.1"},{"hostPort":8443,"containerPort":443,"protocol":"tcp","hostIP":"2001:db8:20::1"}]`,
		"ctr2": `[{"hostPort":9090,"containerPort":90,"protocol":"tcp"},{"hostPort":9091,"containerPort":91,"protocol":"sctp"}]`,
	}
	// conf is the plugin's configuration in the list, with the result
	// of the plugin before it
	conf := func(s *dmSide, plugin, id string, prev bool) string {
		var c string
		switch plugin {
		case "bridge":
			c = fmt.Sprintf(`"type":"bridge","bridge":"xcni0","isGateway":true,"ipMasq":true,"hairpinMode":true,
"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"198.18.20.0/24"}],[{"subnet":"2001:db8:20::/64"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"}]}`,
				filepath.Join(s.dir, "ipam"))
		case "portmap":
			c = `"type":"portmap","snat":true,"capabilities":{"portMappings":true},"runtimeConfig":{"portMappings":` + ports[id] + `}`
		case "firewall":
			c = `"type":"firewall","backend":"iptables","ingressPolicy":"same-bridge"`
		}
		if r := state[s].result[id]; prev && r != nil {
			c += `,"prevResult":` + string(r)
		}
		return `{"cniVersion":"1.0.0","name":"xdptnet",` + c + "}"
	}
	// run is a step running plugin with command for container id;
	// ADD keeps the result for the next plugin
	run := func(command, plugin, id string) moreStep {
		return moreStep{
			name: command + " " + plugin + " " + id,
			stdin: func(s *dmSide) string {
				// the first plugin of an ADD has no previous result
				return conf(s, plugin, id, command != "ADD" || plugin != "bridge")
			},
			script: fmt.Sprintf("CNI_COMMAND=%s CNI_CONTAINERID=%s CNI_IFNAME=eth0 CNI_PATH=%s CNI_NETNS=/run/netns/$CTR_%s %s/%s",
				command, id, plugins, id, plugins, plugin),
			after: func(s *dmSide, r netns.Result) {
				if command == "ADD" && r.RC == 0 {
					state[s].result[id] = json.RawMessage(strings.TrimSpace(r.Stdout))
				}
			},
		}
	}
	var steps []moreStep
	for _, id := range []string{"ctr1", "ctr2"} {
		for _, p := range []string{"bridge", "portmap", "firewall"} {
			steps = append(steps, run("ADD", p, id))
		}
	}
	for _, p := range []string{"bridge", "portmap", "firewall"} {
		steps = append(steps, run("CHECK", p, "ctr1"))
	}
	// an administrator's rule in the firewall plugin's own chain
	steps = append(steps, moreStep{name: "a rule in CNI-ADMIN", script: "iptables -A CNI-ADMIN -s 198.51.100.0/24 -j DROP"})
	for _, id := range []string{"ctr1", "ctr2"} {
		for _, p := range []string{"firewall", "portmap", "bridge"} {
			steps = append(steps, run("DEL", p, id))
		}
	}
	// DEL again: a runtime retries, and the plugins must not fail
	steps = append(steps, run("DEL", "portmap", "ctr1"), run("DEL", "bridge", "ctr1"))
	prologue := func(s *dmSide) string {
		return fmt.Sprintf("CTR_ctr1=%s\nCTR_ctr2=%s\n", state[s].ctr["ctr1"].Name, state[s].ctr["ctr2"].Name)
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, func(s *dmSide, text string) string {
		for id, ns := range state[s].ctr {
			text = strings.ReplaceAll(text, ns.Name, "NETNS-"+id)
		}
		text = cniMAC.ReplaceAllString(text, "MAC")
		return cniVeth.ReplaceAllString(text, "vethX")
	}, steps,
		"-A POSTROUTING -s 198.18.20.2/32 -m comment --comment \"name: \\\"xdptnet\\\" id: \\\"ctr1\\\"\" -j CNI-",
		"-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"xdptnet\\\" id: \\\"ctr1\\\"\" -m multiport --dports 8080,8443 -j CNI-DN-",
		"-A CNI-FORWARD -d 2001:db8:20::2/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
		"-A CNI-DN-", "-p sctp -m sctp --dport 9091 -j DNAT --to-destination 198.18.20.3:91", "-A CNI-ISOLATION-STAGE-2 -o xcni0 -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" -j DROP")
}

var (
	arnoListCounters   = regexp.MustCompile(`(?m)^((?:  > )?) *\d+ +\d+ `)
	arnoPolicyCounters = regexp.MustCompile(`\(policy (\w+) \d+ packets, \d+ bytes\)`)
	cniMAC             = regexp.MustCompile(`\b[0-9a-f]{2}(:[0-9a-f]{2}){5}\b`)
	cniVeth            = regexp.MustCompile(`\bveth[0-9a-f]{8}\b`)
)

// TestRealNetavark runs netavark 1.4 (Podman's network backend, Rust,
// which runs iptables and ip6tables through the iptables crate) with its
// iptables firewall driver: setup of containers on a dual-stack bridge
// network with published ports (single, on one address, a range, UDP),
// on an isolated network (NETAVARK_ISOLATION chains) and with one port;
// then teardown, in the containers' namespaces of the test's
// own. A port range is a DNAT shifted port map (ADDR:MIN-MAX/BASE).
func TestRealNetavark(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, moreCache, morePackages)
	sides := newDMSides(t, "netavark")
	ctrs := []string{"c1", "c2", "c3"}
	ctrNS := map[*dmSide]map[string]*netns.NS{}
	for _, s := range sides {
		ctrNS[s] = map[string]*netns.NS{}
		for _, c := range ctrs {
			ctrNS[s][c] = netns.New(t, "nv-"+c+"-"+s.name)
		}
	}
	nets := map[string]string{
		"podman": `{"name":"podman","id":"` + strings.Repeat("a1", 32) + `","driver":"bridge","network_interface":"xnv0","ipv6_enabled":true,"internal":false,"dns_enabled":false,
"subnets":[{"subnet":"198.18.30.0/24","gateway":"198.18.30.1"},{"subnet":"2001:db8:30::/64","gateway":"2001:db8:30::1"}]}`,
		"inside": `{"name":"inside","id":"` + strings.Repeat("b2", 32) + `","driver":"bridge","network_interface":"xnv1","ipv6_enabled":false,"internal":false,"dns_enabled":false,"options":{"isolate":"true"},
"subnets":[{"subnet":"198.18.31.0/24","gateway":"198.18.31.1"}]}`,
	}
	type ctr struct{ net, ips, ports string }
	spec := map[string]ctr{
		"c1": {"podman", `["198.18.30.2","2001:db8:30::2"]`, `[{"host_ip":"","container_port":80,"host_port":8080,"range":1,"protocol":"tcp"},
{"host_ip":"198.18.30.1","container_port":53,"host_port":5353,"range":1,"protocol":"udp"},
{"host_ip":"","container_port":9000,"host_port":19000,"range":3,"protocol":"tcp"},
{"host_ip":"2001:db8:30::1","container_port":443,"host_port":8443,"range":1,"protocol":"tcp"}]`},
		"c2": {"inside", `["198.18.31.2"]`, `[]`},
		"c3": {"podman", `["198.18.30.3","2001:db8:30::3"]`, `[{"host_ip":"","container_port":22,"host_port":2222,"range":1,"protocol":"tcp"}]`},
	}
	opts := func(c string) string {
		sp := spec[c]
		return fmt.Sprintf(`{"container_id":%q,"container_name":%q,"networks":{%q:{"interface_name":"eth0","static_ips":%s}},"network_info":{%q:%s},"port_mappings":%s}`,
			strings.Repeat(c, 32), c, sp.net, sp.ips, sp.net, nets[sp.net], sp.ports)
	}
	bin := filepath.Join(root, "usr/lib/podman/netavark")
	step := func(cmd, c string) moreStep {
		return moreStep{name: cmd + " " + c, stdin: func(*dmSide) string { return opts(c) },
			script: fmt.Sprintf("NETAVARK_FW=iptables %s --config $D/netavark %s /run/netns/$CTR_%s", bin, cmd, c)}
	}
	steps := []moreStep{
		step("setup", "c1"), step("setup", "c2"), step("setup", "c3"),
		{name: "the rules after setup, listed", script: "iptables -t nat -S && iptables -S && ip6tables -t nat -S"},
		step("teardown", "c1"), step("teardown", "c3"), step("teardown", "c2"),
	}
	prologue := func(s *dmSide) string {
		p := "D=" + s.dir + "\nmkdir -p $D/netavark\n"
		for _, c := range ctrs {
			p += fmt.Sprintf("CTR_%s=%s\n", c, ctrNS[s][c].Name)
		}
		return p
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, func(s *dmSide, text string) string {
		for c, ns := range ctrNS[s] {
			text = strings.ReplaceAll(text, ns.Name, "NETNS-"+c)
		}
		text = cniMAC.ReplaceAllString(text, "MAC")
		return cniVeth.ReplaceAllString(text, "vethX")
	}, steps,
		"-A NETAVARK-DN-1D8721804F16F -d 198.18.30.1/32 -p udp -m udp --dport 5353 -j DNAT --to-destination 198.18.30.2:53",
		"-A NETAVARK-DN-1D8721804F16F -p tcp -m tcp --dport 19000:19002 -j DNAT --to-destination 198.18.30.2:9000-9002/19000",
		"-A NETAVARK-DN-1D8721804F16F -d 2001:db8:30::1/128 -p tcp -m tcp --dport 8443 -j DNAT --to-destination [2001:db8:30::2]:443",
		"-A NETAVARK_ISOLATION_2 -o xnv1 -j DROP",
		"-A NETAVARK-HOSTPORT-MASQ -m comment --comment \"netavark portfw masq mark\" -m mark --mark 0x2000/0x2000 -j MASQUERADE")
}

// TestRealLXCNet runs lxc-net (LXC 5.0's bridge script, sh) with
// LXC_USE_NFT=false, so that it calls iptables and ip6tables: start
// (bridge, DHCP and DNS ports open, forwarding, masquerade, the DHCP
// checksum fix), a second start that finds it running, restart, stop,
// a stop that finds it stopped; then with IPv6 and its NAT. dnsmasq is
// a stub that does nothing: the test is about the firewall.
func TestRealLXCNet(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, moreCache, morePackages)
	sides := newDMSides(t, "lxcnet")
	dmRunMountpoints(t, "/run/lxc")
	defaults := `# lxc-net's settings in the test (the package's file has the first)
USE_LXC_BRIDGE="true"
LXC_BRIDGE="xlxcbr0"
LXC_ADDR="198.18.40.1"
LXC_NETMASK="255.255.255.0"
LXC_NETWORK="198.18.40.0/24"
LXC_DHCP_RANGE="198.18.40.2,198.18.40.254"
LXC_USE_NFT="false"
`
	for _, s := range sides {
		// the package's /etc/default/lxc (which reads lxc-net) and ours
		def, err := os.ReadFile(filepath.Join(root, "etc/default/lxc"))
		if err != nil {
			t.Fatal(err)
		}
		if err := writeFiles(filepath.Join(s.dir, "etc-up/default"), 0o644, map[string]string{"lxc": string(def), "lxc-net": defaults}); err != nil {
			t.Fatal(err)
		}
		if err := writeFiles(s.wrap, 0o755, map[string]string{"dnsmasq": "#!/bin/sh\nexit 0\n"}); err != nil {
			t.Fatal(err)
		}
	}
	// the namespace's own /sys/class/net, and /run/lxc (where lxc-net
	// notes that it runs) of the side's own
	prologue := func(s *dmSide) string {
		return fmt.Sprintf(`D=%s
mkdir -p $D/runlxc && mount -t sysfs sysfs /sys && mount --bind $D/runlxc /run/lxc || exit 99
NET=%s
`, s.dir, filepath.Join(root, "usr/libexec/lxc/lxc-net"))
	}
	v6 := func(s *dmSide) error {
		return writeFiles(filepath.Join(s.dir, "etc-up/default"), 0o644, map[string]string{"lxc-net": defaults +
			"LXC_IPV6_ADDR=\"2001:db8:40::1\"\nLXC_IPV6_MASK=\"64\"\nLXC_IPV6_NETWORK=\"2001:db8:40::/64\"\nLXC_IPV6_NAT=\"true\"\n"})
	}
	steps := []moreStep{
		{name: "start", script: "$NET start"},
		{name: "start again", script: "$NET start"},
		{name: "restart", script: "$NET restart"},
		{name: "stop", script: "$NET stop"},
		{name: "stop again", script: "$NET stop"},
		{name: "start with IPv6 NAT", before: v6, script: "$NET start"},
		{name: "stop with IPv6 NAT", script: "$NET stop"},
	}
	runMoreSteps(t, sides, false, dmStepLimit, prologue, nil, steps,
		"-A POSTROUTING -o xlxcbr0 -p udp -m udp --dport 68 -j CHECKSUM --checksum-fill",
		"-A POSTROUTING -s 198.18.40.0/24 ! -d 198.18.40.0/24 -j MASQUERADE",
		"-A POSTROUTING -s 2001:db8:40::/64 ! -d 2001:db8:40::/64 -j MASQUERADE",
		"lxc-net is already running", "lxc-net isn't running")
}

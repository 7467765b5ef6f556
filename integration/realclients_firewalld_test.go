package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// firewalld (1.3, Debian's firewalld and python3-firewall) with
// FirewallBackend=iptables, as a real client run with the machinery of
// realclients_daemons_test.go: each side has its own D-Bus system bus (a
// dbus-daemon with a configuration of the test's, its socket in the
// side's directory), and firewalld runs in the side's network namespace
// and a private mount namespace where the tools it calls by their full
// paths (/usr/sbin/iptables, ip6tables, their -restore and -save, ipset)
// are the tracing wrappers, laid over /usr/sbin. Its system
// configuration is a directory of the side's, its default configuration
// the package's /usr/lib/firewalld, its log a file there. firewall-cmd
// talks to it over the side's bus. ebtables, which firewalld also finds,
// is the host's ebtables-nft on both sides and is not compared.
//
// The packages come from Debian's mirrors into fwCache, as for the other
// real clients; nothing is installed and no service starts on the host.
// firewalld and firewall-cmd need the host's python3 with its gi and
// dbus modules (python3-gi, python3-dbus) and dbus-daemon: make deps
// installs them.

const fwCache = "/var/cache/xdptables-test/firewalld"

var fwPackages = []string{"firewalld", "python3-firewall", "python3-nftables"}

// fwBusConf is the side's system bus: root owns and calls everything
// (firewalld authorises by the caller's uid when polkit is not on the
// bus).
const fwBusConf = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="root"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// fwSide is a side's bus and firewalld.
type fwSide struct {
	*dmSide
	root    string
	bus     *exec.Cmd
	fw      *exec.Cmd
	fwDone  chan error
	wrapDir string // the wrappers laid over /usr/sbin
	client  *netns.NS
}

// env is what firewalld and firewall-cmd need: the side's bus, the
// packages' modules, and a fixed hash seed (firewalld keeps some of a
// zone's settings in sets and dicts: with a seed per process, the order
// of rich rules it writes changes from run to run).
func (s *fwSide) env() string {
	return fmt.Sprintf("export DBUS_SYSTEM_BUS_ADDRESS=unix:path=%s/bus PYTHONPATH=%s/usr/lib/python3/dist-packages PYTHONHASHSEED=0\n", s.dir, s.root)
}

// startBus starts the side's dbus-daemon and waits for its socket.
func (s *fwSide) startBus(t *testing.T) {
	t.Helper()
	conf := filepath.Join(s.dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(fwBusConf, s.dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(s.dir, "bus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	s.bus = exec.Command("nsenter", "--net=/run/netns/"+s.ns.Name, "dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile")
	s.bus.Stdout, s.bus.Stderr = log, log
	s.bus.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.bus.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.bus.Process.Signal(syscall.SIGTERM)
		_ = s.bus.Wait()
	})
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(s.dir, "bus")); err == nil {
			return
		}
	}
	t.Fatalf("%s: dbus-daemon made no socket:\n%s", s.name, readFile(filepath.Join(s.dir, "bus.log")))
}

// startFirewalld starts firewalld and waits until firewall-cmd --state
// says it runs. The side's ipset is bound on DIR/ipset.real first: the
// wrappers laid over /usr/sbin cover the reference's own.
func (s *fwSide) startFirewalld() error {
	script := "D=" + s.dir + "\n" + s.mountSetupEtc("etc-fw") + `set -e
mount -t tmpfs tmpfs /run/firewalld
touch $D/ipset.real
mount --bind ` + s.tools["ipset"] + ` $D/ipset.real
mount -t overlay overlay -o lowerdir=` + s.wrapDir + `:/usr/sbin /usr/sbin
` + s.env() + `exec /usr/bin/python3 ` + s.root + `/usr/sbin/firewalld --nofork --nopid --default-config ` + s.root +
		`/usr/lib/firewalld --system-config $D/fwetc --log-target file --log-file $D/firewalld.log
`
	out, err := os.Create(filepath.Join(s.dir, "firewalld.out"))
	if err != nil {
		return err
	}
	defer out.Close()
	s.fw = exec.Command("nsenter", "--net=/run/netns/"+s.ns.Name, "unshare", "-m", "sh", "-c", script)
	s.fw.Stdout, s.fw.Stderr = out, out
	s.fw.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.fw.Start(); err != nil {
		return err
	}
	s.fwDone = make(chan error, 1)
	go func() { s.fwDone <- s.fw.Wait() }()
	for deadline := time.Now().Add(dmDaemonWait); time.Now().Before(deadline); {
		select {
		case err := <-s.fwDone:
			s.fw = nil
			return fmt.Errorf("firewalld exited (%v):\n%s%s", err, readFile(filepath.Join(s.dir, "firewalld.out")),
				dmTail(readFile(filepath.Join(s.dir, "firewalld.log")), 20))
		case <-time.After(300 * time.Millisecond):
		}
		cmd := exec.Command("sh", "-c", s.env()+"exec "+s.root+"/usr/bin/firewall-cmd --state")
		if o, err := cmd.Output(); err == nil && strings.TrimSpace(string(o)) == "running" {
			return nil
		}
	}
	s.stopFirewalld()
	return fmt.Errorf("firewalld did not run within %v:\n%s", dmDaemonWait, dmTail(readFile(filepath.Join(s.dir, "firewalld.log")), 20))
}

// stopFirewalld ends firewalld as its service does (SIGTERM: with
// CleanupOnExit it removes its rules and sets) and writes its exit
// status to firewalld.exit; SIGKILL for a firewalld that hangs.
func (s *fwSide) stopFirewalld() {
	if s.fw == nil {
		return
	}
	_ = s.fw.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-s.fwDone:
	case <-time.After(dmDaemonWait):
		_ = syscall.Kill(-s.fw.Process.Pid, syscall.SIGKILL)
		err = <-s.fwDone
	}
	s.fw = nil
	_ = os.WriteFile(filepath.Join(s.dir, "firewalld.exit"), []byte(fmt.Sprintf("firewalld exit: %v\n", err)), 0o644)
}

var (
	fwLogStamp = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d `)
	fwHelpCall = regexp.MustCompile(`^\S+ .*(-h|--help)( |$)`)
	fwHelpKeep = regexp.MustCompile(`^  > (\S+ (match|target) options:|Valid ICMP(v6)? Types:)$`)
	fwTimeout  = regexp.MustCompile(`(?m)^((?:  > )?(?:add )?[^ >\n][^\n]* timeout )[0-9]+$`)
)

// fwNorm removes what differs by design or from run to run besides what
// dmNorm removes: the remaining time of set members (firewalld's sets
// with a timeout, in ipset save and in the members of ipset list;
// a set's own timeout is not at the end of its line), policy counters, and the text of iptables' help.
// firewalld runs `iptables -p icmp --help` and reads the ICMP types
// listed after "Valid ICMP Types:"; xdptables' help says the general
// part and the options in words of its own, so of a help call only the
// titles of the extensions' sections and the type lists are compared.
func fwNorm(_ *dmSide, text string) string {
	text = fwTimeout.ReplaceAllString(text, "${1}T")
	text = rcPolicyCnt.ReplaceAllString(text, ":$1 $2 [P:B]")
	lines := strings.Split(text, "\n")
	if !fwHelpCall.MatchString(lines[0]) {
		return text
	}
	out := lines[:1]
	types := false
	for _, l := range lines[1:] {
		switch {
		case fwHelpKeep.MatchString(l):
			types = strings.Contains(l, "Types:")
		case types && strings.HasPrefix(l, "  > ") && strings.TrimSpace(l[4:]) != "":
		default:
			types = false
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestRealFirewalld runs firewalld with its iptables backend: start
// (public as the default zone, its chains and rules for every zone),
// then with firewall-cmd: zones with services, ports, protocols, source
// ports, interfaces, address and MAC sources, masquerading, forward
// ports, ICMP blocks and inversion; rich rules (log with limits, audit,
// nflog, marks, MSS clamping, priorities, ICMP types and blocks, reject
// with ICMP types and tcp-reset, drop, forward ports, masquerading, IPv4
// and IPv6 sources and destinations, bad ones); direct rules, chains, a
// passthrough rule, passthrough listings and checks; permanent ipsets
// (hash:ip, hash:net of IPv6, hash:ip,port with a timeout,
// hash:net,iface, hash:ip,port,ip, hash:net,port, hash:ip,port,net)
// with entries, rich rules and zone sources on them; policies (zone to
// zone, HOST to ANY with masquerading, priorities, targets), denied
// packets logged; reload, runtime-to-permanent, panic mode on and off; a
// complete reload; more changes, removals and a reload for another
// log-denied mode; stop. A connection from a client namespace to the
// public zone's ftp service checks the rules with a packet. After each
// step both sides must agree on
// firewall-cmd's output and exit statuses, on every iptables/ipset call
// firewalld made, and on iptables-save, ip6tables-save and ipset save;
// at the end also on firewalld's log and exit status.
//
// Services with a conntrack helper (ftp, tftp, samba-client's
// netbios-ns in the home zone) put -j CT --helper rules in user chains
// of raw, which zones reach by interface, address and ipset.
//
// Then firewalld starts again from its default configuration with
// IndividualCalls=yes (an iptables call per rule instead of restores),
// takes a few changes that way and stops. Reloads are left out in that
// mode: a reload of the configuration above makes some 1400 calls, which
// takes longer under load than firewall-cmd waits for its answer
// (D-Bus's 25 s), so that the calls of one step would land in the next.
//
// Left out: the ipset types this kernel's ipset lacks (hash:mac,
// hash:ip,mark, hash:net,net, hash:net,port,net), which xdptables
// supports: the reference fails there.
func TestRealFirewalld(t *testing.T) {
	netns.RequireRoot(t)
	if out, err := exec.Command("/usr/bin/python3", "-c", "import gi, dbus").CombinedOutput(); err != nil {
		t.Fatalf("firewalld needs python3 with gi and dbus (make deps installs python3-gi and python3-dbus): %v %s", err, out)
	}
	if !netns.Have("dbus-daemon") {
		t.Fatal("firewalld needs a D-Bus system bus: dbus-daemon is not installed (make deps installs it)")
	}
	root := debsRoot(t, fwCache, fwPackages)
	dmRunMountpoints(t, "/run/firewalld")
	dsides := newDMSides(t, "fwd")
	var sides [2]*fwSide
	for i, d := range dsides {
		s := &fwSide{dmSide: d, root: root, wrapDir: filepath.Join(d.dir, "fwwrap")}
		sides[i] = s
		// the wrappers firewalld finds in /usr/sbin: the reference's
		// ipset is there too, so its wrapper runs it from where the
		// mount namespace binds it
		w := *d
		w.wrap, w.tools = s.wrapDir, map[string]string{}
		for k, v := range d.tools {
			w.tools[k] = v
		}
		if d.name == "ref" {
			w.tools["ipset"] = filepath.Join(d.dir, "ipset.real")
		}
		w.writeWrappers(t)
		if err := writeFiles(s.wrapDir, 0o755, map[string]string{"modprobe": noModprobe}); err != nil {
			t.Fatal(err)
		}
		conf := readFile(filepath.Join(root, "etc/firewalld/firewalld.conf"))
		if !strings.Contains(conf, "\nFirewallBackend=nftables\n") {
			t.Fatalf("the package's firewalld.conf has no FirewallBackend=nftables line to change:\n%s", conf)
		}
		conf = strings.Replace(conf, "\nFirewallBackend=nftables\n", "\nFirewallBackend=iptables\n", 1)
		if err := writeFiles(filepath.Join(s.dir, "fwetc"), 0o644, map[string]string{"firewalld.conf": conf}); err != nil {
			t.Fatal(err)
		}
		sideSh(t, d, `set -e
ip link add fw-ext type veth peer name fw-extp
ip link add fw-dmz type veth peer name fw-dmzp
ip link set fw-ext up
ip link set fw-dmz up
ip addr add 198.51.100.1/24 dev fw-ext
ip addr add 2001:db8:1::1/64 dev fw-ext nodad
ip addr add 203.0.113.1/24 dev fw-dmz`)
		// a client behind fw-ext, for a connection through the rules
		s.client = netns.New(t, "fwc-"+d.name)
		sideSh(t, d, "ip link set fw-extp netns "+s.client.Name)
		sideSh(t, &dmSide{ns: s.client}, `set -e
ip link set lo up
sysctl -qw net.ipv6.conf.fw-extp.disable_ipv6=1
ip addr add 198.51.100.2/24 dev fw-extp
ip link set fw-extp up`)
		s.startBus(t)
		t.Cleanup(s.stopFirewalld)
	}
	bySide := map[*dmSide]*fwSide{sides[0].dmSide: sides[0], sides[1].dmSide: sides[1]}
	prologue := func(d *dmSide) string {
		return bySide[d].env() + "fc() { echo \"### firewall-cmd $*\"; " + root + "/usr/bin/firewall-cmd \"$@\" 2>&1; echo \"rc=$?\"; }\n"
	}
	steps := []moreStep{
		{name: "start", before: func(d *dmSide) error { return bySide[d].startFirewalld() },
			script: "fc --state\nfc --get-default-zone\nfc --get-active-zones"},
		{name: "zones, services, ports, interfaces", script: `fc --set-default-zone=external
fc --zone=public --add-service=http
fc --zone=public --add-port=8080/tcp --add-port=5000-5010/udp
fc --zone=public --add-protocol=gre
fc --zone=public --add-source-port=53/udp
fc --zone=public --add-interface=fw-ext
fc --zone=dmz --add-interface=fw-dmz
fc --zone=public --add-service=ftp
fc --zone=home --add-source=198.51.100.128/25
fc --zone=home --add-service=tftp
fc --get-active-zones`},
		{name: "masquerade, forward ports, icmp blocks", script: `fc --zone=public --add-masquerade
fc --zone=public --add-forward-port=port=2222:proto=tcp:toport=22:toaddr=198.51.100.20
fc --zone=public --add-forward-port=port=8443:proto=tcp:toport=443
fc --zone=dmz --add-icmp-block=echo-request
fc --zone=dmz --add-icmp-block=timestamp-request
fc --zone=dmz --add-icmp-block-inversion
fc --zone=dmz --add-icmp-block=no-such-type`},
		{name: "rich rules", script: `fc --zone=public --add-rich-rule='rule family="ipv4" source address="198.51.100.0/28" service name="ssh" log prefix="ssh4 " level="info" limit value="3/m" accept'
fc --zone=public --add-rich-rule='rule family="ipv6" source address="2001:db8:2::/48" port port="9000" protocol="tcp" reject type="icmp6-adm-prohibited"'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="203.0.113.7" reject type="icmp-host-prohibited"'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="203.0.113.8" drop'
fc --zone=public --add-rich-rule='rule service name="https" audit limit value="5/s" accept'
fc --zone=public --add-rich-rule='rule family="ipv6" source address="2001:db8:3::1" log prefix="v6 " level="warning" drop'
fc --zone=dmz --add-rich-rule='rule family="ipv4" forward-port port="80" protocol="tcp" to-port="8080" to-addr="203.0.113.50"'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="198.51.100.0/24" masquerade'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="203.0.113.9" reject type="no-such-type"'
fc --zone=public --add-rich-rule='rule family="ipv4" icmp-type name="echo-request" log level="debug" drop'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="198.51.100.77" icmp-block name="echo-reply"'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="198.51.100.0/24" mark set="0x5/0xff"'
fc --zone=public --add-rich-rule='rule family="ipv4" source address="198.51.100.0/24" nflog group="5" prefix="nf" queue-size="10" accept'
fc --zone=public --add-rich-rule='rule family="ipv6" protocol value="sctp" accept'
fc --zone=public --add-rich-rule='rule tcp-mss-clamp value="pmtu"'
fc --zone=public --add-rich-rule='rule family="ipv4" destination not address="203.0.113.0/24" port port="53" protocol="udp" reject type="tcp-reset"'
fc --zone=public --add-rich-rule='rule priority="-5" family="ipv4" source address="198.51.100.78" drop'
fc --zone=public --add-rich-rule='rule priority="5" family="ipv6" source address="2001:db8::5" log prefix="p5" limit value="1/h" reject'
fc --zone=public --add-rich-rule='rule family="ipv4" source-port port="1000-2000" protocol="tcp" accept'
fc --zone=drop --add-source=02:00:00:00:00:01
fc --zone=block --add-source=198.51.100.200
fc --zone=public --list-rich-rules`},
		{name: "direct rules", script: `fc --direct --add-rule ipv4 filter INPUT 0 -s 198.51.100.99 -p tcp --dport 25 -j DROP
fc --direct --add-rule ipv6 filter FORWARD 1 -d 2001:db8:9::/64 -m conntrack --ctstate NEW -j REJECT --reject-with icmp6-adm-prohibited
fc --direct --add-chain ipv4 filter fwchain
fc --direct --add-rule ipv4 filter fwchain 0 -m limit --limit 2/s -j LOG --log-prefix "fw: "
fc --direct --add-rule ipv4 mangle PREROUTING 0 -i fw-ext -j MARK --set-mark 0x10
fc --direct --add-passthrough ipv4 -t nat -A POSTROUTING -o fw-dmz -s 198.51.100.0/24 -j SNAT --to-source 203.0.113.1
fc --direct --add-rule ipv4 filter INPUT 0 -m nosuchmatch -j DROP
fc --direct --get-all-rules
fc --direct --get-all-chains
fc --direct --get-all-passthroughs
fc --direct --passthrough ipv4 -t filter -L -n -v
fc --direct --passthrough ipv4 -t nat -L -n -v --line-numbers
fc --direct --passthrough ipv4 -t raw -S
fc --direct --passthrough ipv6 -t filter -L -n
fc --direct --passthrough ipv6 -t raw -L IN_public_allow
fc --direct --passthrough ipv4 -t filter -C IN_public_allow -p tcp --dport 8080 -j ACCEPT
fc --direct --passthrough ipv4 -t filter -C IN_public_allow -p tcp --dport 8081 -j ACCEPT
fc --direct --passthrough ipv4 -t filter -L nosuch`},
		{name: "ipsets", script: `fc --permanent --new-ipset=fwip --type=hash:ip
fc --permanent --new-ipset=fwnet6 --type=hash:net --option=family=inet6 --option=maxelem=1000
fc --permanent --new-ipset=fwport --type=hash:ip,port --option=timeout=600
fc --permanent --new-ipset=fwnif --type=hash:net,iface
fc --permanent --new-ipset=fwipi --type=hash:ip,port,ip
fc --permanent --new-ipset=fwnp --type=hash:net,port
fc --permanent --new-ipset=fwipn --type=hash:ip,port,net
fc --permanent --ipset=fwip --add-entry=198.51.100.5
fc --permanent --new-policy=fwpol
fc --permanent --policy=fwpol --add-ingress-zone=public
fc --permanent --policy=fwpol --add-egress-zone=dmz
fc --permanent --policy=fwpol --set-target=ACCEPT
fc --permanent --policy=fwpol --add-service=http
fc --permanent --policy=fwpol --add-rich-rule='rule family="ipv4" destination address="203.0.113.0/25" service name="https" reject'
fc --permanent --new-policy=fwhost
fc --permanent --policy=fwhost --add-ingress-zone=HOST
fc --permanent --policy=fwhost --add-egress-zone=ANY
fc --permanent --policy=fwhost --set-target=REJECT
fc --permanent --policy=fwhost --set-priority=-10
fc --permanent --policy=fwhost --add-masquerade
fc --permanent --zone=dmz --set-target=DROP
fc --permanent --zone=public --add-service=ftp
fc --permanent --zone=home --add-source=198.51.100.128/25
fc --reload
fc --set-log-denied=all
fc --zone=dmz --add-forward
fc --ipset=fwnif --add-entry=198.51.100.0/24,fw-ext
fc --ipset=fwipi --add-entry=198.51.100.1,udp:53,203.0.113.1
fc --ipset=fwnp --add-entry=198.51.100.0/25,sctp:99
fc --ipset=fwipn --add-entry=198.51.100.3,tcp:443,203.0.113.0/28
fc --zone=work --add-source=ipset:fwnp
fc --ipset=fwip --add-entry=198.51.100.6
fc --ipset=fwip --add-entry=198.51.100.7
fc --ipset=fwnet6 --add-entry=2001:db8:7::/48
fc --ipset=fwport --add-entry=198.51.100.9,tcp:80
fc --ipset=fwip --remove-entry=198.51.100.7
fc --ipset=fwip --query-entry=198.51.100.6
fc --ipset=fwip --get-entries
fc --zone=public --add-rich-rule='rule source ipset="fwip" drop'
fc --zone=public --add-rich-rule='rule family="ipv6" source ipset="fwnet6" log prefix="net6 " accept'
fc --zone=trusted --add-source=ipset:fwip
fc --zone=dmz --add-source=203.0.113.128/25
fc --get-ipsets
fc --info-ipset=fwport`},
		{name: "runtime to permanent, reload", script: `fc --zone=public --add-service=http
fc --zone=public --add-interface=fw-ext
fc --zone=public --add-rich-rule='rule family="ipv4" source address="203.0.113.8" drop'
fc --direct --add-rule ipv4 filter INPUT 0 -s 198.51.100.99 -p tcp --dport 25 -j DROP
fc --runtime-to-permanent
fc --reload
fc --zone=public --list-all
fc --list-all-zones`},
		// a connection from the client to the public zone's ftp service:
		// the rules let it in and conntrack gives it the ftp helper
		{name: "ftp connection", script: `python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.51.100.1", 21))
s.listen(1)
s.settimeout(10)
c, _ = s.accept()
c.close()' &
sleep 1
ip netns exec $CLIENT python3 -c '
import socket
socket.create_connection(("198.51.100.1", 21), 5).close()'
echo "connect: $?"
wait
conntrack -L -p tcp --dport 21 2>/dev/null | sed -n "s/.*dst=198.51.100.1 .*dport=21 .*\(\[ASSURED\]\).*\(helper=[a-z0-9-]*\).*/\1 \2/p"`},
		{name: "panic on", script: "fc --panic-on\nfc --query-panic"},
		{name: "panic off", script: "fc --panic-off\nfc --query-panic"},
		{name: "complete reload", script: "fc --complete-reload\nfc --state\nfc --get-active-zones"},
		{name: "remove", script: `fc --zone=public --remove-service=http
fc --zone=public --remove-interface=fw-ext
fc --zone=public --remove-rich-rule='rule family="ipv4" source address="203.0.113.8" drop'
fc --zone=trusted --remove-source=ipset:fwip
fc --zone=public --add-port=7000/tcp
fc --zone=public --add-rich-rule='rule family="ipv6" source address="2001:db8:4::/64" service name="ssh" log prefix="in6 " limit value="2/m" accept'
fc --direct --add-rule ipv6 filter INPUT 3 -s 2001:db8:4::1 -j DROP
fc --direct --remove-rule ipv6 filter INPUT 3 -s 2001:db8:4::1 -j DROP
fc --panic-on
fc --panic-off
fc --set-log-denied=unicast`},
		{name: "stop", script: "fc --state", after: func(d *dmSide, _ netns.Result) { bySide[d].stopFirewalld() }},
		{name: "stopped", script: `fc --state
cat "$D/firewalld.exit"
sed 's/^[0-9-]* [0-9:]* //' "$D/firewalld.log"`},
		// firewalld again from its default configuration, with one
		// iptables call per rule (-N, -A, -I, -D, -F, -X, -P...) instead
		// of restores
		{name: "start, individual calls", before: func(d *dmSide) error {
			s := bySide[d]
			dir := filepath.Join(d.dir, "fwetc")
			conf := readFile(filepath.Join(dir, "firewalld.conf"))
			if !strings.Contains(conf, "\nIndividualCalls=no\n") {
				return fmt.Errorf("firewalld.conf has no IndividualCalls=no line to change")
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			conf = strings.Replace(conf, "\nIndividualCalls=no\n", "\nIndividualCalls=yes\n", 1)
			if err := writeFiles(dir, 0o644, map[string]string{"firewalld.conf": conf}); err != nil {
				return err
			}
			return s.startFirewalld()
		}, script: "fc --state\nfc --get-active-zones"},
		{name: "changes, individual calls", script: `fc --zone=public --add-service=http
fc --zone=public --add-port=8080/tcp
fc --zone=public --add-interface=fw-ext
fc --zone=public --add-rich-rule='rule family="ipv4" source address="198.51.100.0/28" service name="ssh" log prefix="ssh4 " limit value="3/m" accept'
fc --zone=public --add-forward-port=port=2222:proto=tcp:toport=22:toaddr=198.51.100.20
fc --zone=public --add-service=ftp
fc --direct --add-rule ipv4 filter INPUT 0 -s 198.51.100.99 -p tcp --dport 25 -j DROP
fc --direct --add-rule ipv4 filter INPUT 0 -s 198.51.100.99 -p tcp --dport 25 -j DROP
fc --direct --remove-rule ipv4 filter INPUT 0 -s 198.51.100.99 -p tcp --dport 25 -j DROP
fc --direct --remove-rule ipv4 filter INPUT 0 -s 198.51.100.99 -p tcp --dport 25 -j DROP
fc --zone=public --remove-port=8080/tcp
fc --zone=public --remove-interface=fw-ext
fc --zone=public --add-rich-rule='rule family="ipv4" source address="203.0.113.9" reject type="icmp-host-prohibited"'
fc --zone=public --remove-rich-rule='rule family="ipv4" source address="203.0.113.9" reject type="icmp-host-prohibited"'`},
		{name: "stop, individual calls", script: "fc --state", after: func(d *dmSide, _ netns.Result) { bySide[d].stopFirewalld() }},
	}
	prologueD := func(d *dmSide) string {
		return "D=" + d.dir + "\nCLIENT=" + bySide[d].client.Name + "\n" + prologue(d)
	}
	runMoreSteps(t, dsides, true, dmStepLimit, prologueD, fwNorm, steps,
		"### firewall-cmd --state\nrunning\nrc=0",
		"-A IN_public_allow -p tcp -m tcp --dport 8080 -j ACCEPT",
		"-A IN_public_log -s 198.51.100.0/28 -p tcp -m tcp --dport 22 -m limit --limit 3/min -j LOG --log-prefix \"ssh4 \" --log-level 6",
		"-A PRE_public_allow -p tcp -m tcp --dport 2222 -j DNAT --to-destination 198.51.100.20:22",
		"-A PRE_public_allow -p tcp -m tcp --dport 21 -j CT --helper ftp",
		"-A PRE_home_allow -p udp -m udp --dport 137 -j CT --helper netbios-ns",
		"-A IN_public_deny -m set --match-set fwip src -j DROP",
		"add fwnet6 2001:db8:7::/48", "add fwport 198.51.100.9,tcp:80 timeout T",
		"-A INPUT_direct -s 198.51.100.99/32 -p tcp -m tcp --dport 25 -j DROP",
		"-A POSTROUTING -s 198.51.100.0/24 -o fw-dmz -j SNAT --to-source 203.0.113.1",
		"Valid ICMP Types:\n  > any", "Valid ICMPv6 Types:\n  > destination-unreachable",
		"-A IN_public_log -s 198.51.100.0/24 -j NFLOG --nflog-prefix nf --nflog-group 5 --nflog-threshold 10",
		"-A PREROUTING_ZONES -m mac --mac-source 02:00:00:00:00:01 -g PRE_drop",
		"-A FWD_fwpol_allow -p tcp -m tcp --dport 80 -j ACCEPT", "add fwipn 198.51.100.3,tcp:443,203.0.113.0/28",
		"connect: 0\n", "helper=ftp",
		":INPUT DROP [P:B]", "### firewall-cmd --query-panic\nno", "not running")
}

package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/translate"
	"golang.org/x/sys/unix"
)

// Tests of the connlimit, policy, rpfilter, time, tos, ecn, connbytes
// and devgroup matches against the reference iptables-nft: what the
// kernel accepts and lists, the xtables info blobs, and packets.

// kernelDiffCKnown are corpus lines where xdptables deliberately
// differs from the reference once the rule reaches the kernel.
var kernelDiffCKnown = map[string]string{
	// xt_rpfilter cannot run in the xdptables table and fib has no
	// form of --accept-local: refused (docs/extensions.md)
	"-t raw -A PREROUTING -m rpfilter --accept-local --accept-local": "accept-local",
}

// TestKernelDiffC runs every -A line of matches_c.txt with the
// reference and with xdptables, each in its own namespace: the exit
// code and message, and then -S, -L -n and -L of the chain must be the
// same, and nft must be able to list our table. Where the reference
// rule holds an xtables match and ours does too, the info blobs must
// be equal (same name, revision and bytes).
func TestKernelDiffC(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Skip("reference iptables-nft is not installed")
	}
	lines, err := ReadCorpus("../testdata/corpus/matches_c.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := LinkDir(t)
	refNS, ourNS := netns.New(t, "h5kr"), netns.New(t, "h5ko")
	fd, err := os.Open("/run/netns/" + refNS.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	conn, err := nftables.New(nftables.WithNetNSFd(int(fd.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	compared, blobs := 0, 0
	for _, l := range lines {
		f, fam, ref := compat.IPv4, nftables.TableFamilyIPv4, "iptables-nft"
		ours := filepath.Join(dir, "iptables")
		if l.Tool == "ip6tables" {
			f, fam, ref = compat.IPv6, nftables.TableFamilyIPv6, "ip6tables-nft"
			ours = filepath.Join(dir, "ip6tables")
		}
		cmd, err := compat.Parse(f, l.Args, compat.ParseOptions{})
		if err != nil || cmd.Op != compat.OpAppend {
			continue
		}
		if kernelDiffCKnown[strings.Join(l.Args, " ")] != "" {
			continue
		}
		for _, tb := range []string{"filter", "raw", "mangle"} {
			refNS.Run("", ref, "-t", tb, "-F")
			ourNS.Run("", ours, "-t", tb, "-F")
		}
		a := refNS.Run("", append([]string{ref}, l.Args...)...)
		b := ourNS.Run("", append([]string{ours}, l.Args...)...)
		if a.RC != b.RC || a.Stderr != b.Stderr {
			t.Errorf("line %d %v:\nref  rc %d %q\nours rc %d %q", l.Line, l.Args, a.RC, a.Stderr, b.RC, b.Stderr)
			continue
		}
		if a.RC != 0 {
			continue
		}
		for _, view := range [][]string{{"-S", cmd.Chain}, {"-L", cmd.Chain, "-n"}, {"-L", cmd.Chain}, {"-L", cmd.Chain, "-n", "-v", "-x"}} {
			args := append([]string{"-t", cmd.Table}, view...)
			x, y := refNS.Run("", append([]string{ref}, args...)...), ourNS.Run("", append([]string{ours}, args...)...)
			if x.Stdout != y.Stdout || x.RC != y.RC {
				t.Errorf("line %d %v: %v differs:\nref:\n%s%s\nours:\n%s%s", l.Line, l.Args, view, x.Stdout, x.Stderr, y.Stdout, y.Stderr)
			}
		}
		compared++
		// nft must still list what we made
		nftFam := "ip"
		if f == compat.IPv6 {
			nftFam = "ip6"
		}
		if r := ourNS.Run("", "nft", "list", "table", nftFam, "xdptables"); r.RC != 0 {
			t.Errorf("line %d %v: nft list table: rc %d %s", l.Line, l.Args, r.RC, r.Stderr)
		}
		// the blobs
		es, err := translate.ExprsIn(cmd.Table, cmd.Chain, cmd.Rules[0])
		if err != nil {
			t.Errorf("line %d: %v", l.Line, err)
			continue
		}
		rules, err := conn.GetRules(&nftables.Table{Name: cmd.Table, Family: fam}, &nftables.Chain{Name: cmd.Chain})
		if err != nil || len(rules) != 1 {
			t.Errorf("line %d: reading the reference rule: %v (%d rules)", l.Line, err, len(rules))
			continue
		}
		refMatches := map[string]*expr.Match{}
		for _, e := range rules[0].Exprs {
			if m, ok := e.(*expr.Match); ok {
				refMatches[m.Name] = m
			}
		}
		for _, e := range es {
			m, ok := e.(*expr.Match)
			if !ok {
				continue
			}
			r := refMatches[m.Name]
			if r == nil {
				t.Errorf("line %d: reference has no match %q", l.Line, m.Name)
				continue
			}
			x, y := infoBytes(t, f, m), infoBytes(t, f, r)
			if m.Rev != r.Rev || !bytes.Equal(x, y) {
				t.Errorf("line %d %v: match %s rev %d\n ours %x\n ref  %x (rev %d)", l.Line, l.Args, m.Name, m.Rev, x, y, r.Rev)
			}
			blobs++
		}
	}
	t.Logf("%d rules compared, %d xtables blobs", compared, blobs)
	if compared < 100 {
		t.Errorf("only %d rules compared", compared)
	}
}

// holdTCP starts a listener in ns that keeps every accepted connection
// open until the test ends (closed connections stop counting for
// connlimit).
func holdTCP(t *testing.T, ns *netns.NS, port int) {
	t.Helper()
	var l net.Listener
	inNS(t, ns, func() {
		var err error
		l, err = net.Listen("tcp4", net.JoinHostPort(pktServer, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
	})
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
}

// TestPacketsConnlimit: 3 connections are allowed, the 4th and 5th are
// rejected while the first 3 stay open; the same with the reference.
func TestPacketsConnlimit(t *testing.T) {
	tools := pktTools(t)
	rules := []struct {
		rule string
		want uint64
	}{
		{"-p tcp --syn --dport 80 -m connlimit --connlimit-upto 3", 3},
		{"-p tcp --syn --dport 80 -m connlimit --connlimit-above 3 --connlimit-mask 24 --connlimit-daddr", 2},
		{"-p tcp --syn --dport 80 -m connlimit --connlimit-above 5", 0},
		{"-p tcp --syn --dport 80 -m connlimit --connlimit-above 3 --connlimit-mask 32 -j REJECT --reject-with tcp-reset", 2},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "h5cl"+label[:1])
		for _, r := range rules {
			args, err := ShellWords(r.rule)
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, args...)...)
		}
		holdTCP(t, p.server, 80)
		var conns []net.Conn
		refused := 0
		for i := 0; i < 5; i++ {
			inNS(t, p.client, func() {
				c, err := net.DialTimeout("tcp4", net.JoinHostPort(pktServer, "80"), 2*time.Second)
				if err != nil {
					refused++
					return
				}
				conns = append(conns, c)
			})
		}
		got[label] = ruleCounters(t, p.server, tool, "filter", "INPUT")
		for _, c := range conns {
			c.Close()
		}
		if refused != 2 {
			t.Errorf("%s: %d of 5 connections refused, want 2", label, refused)
		}
	}
	for i, r := range rules {
		if got["ref"][i] != got["ours"][i] || got["ours"][i] != r.want {
			t.Errorf("%s: reference %d, xdptables %d, want %d", r.rule, got["ref"][i], got["ours"][i], r.want)
		}
	}
}

// sendUDPFrom writes one IPv4 UDP packet from src to the server through
// a raw socket (a spoofed source when src is not the client's).
func sendUDPFrom(t *testing.T, src string) { sendRawUDP(t, src, pktServer, "") }

// sendRawUDP writes one IPv4 UDP packet from src to dst through a raw
// socket, out of interface dev when it is not "" (for broadcasts).
func sendRawUDP(t *testing.T, src, dst, dev string) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if dev != "" {
		if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, dev); err != nil {
			t.Fatal(err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1); err != nil {
			t.Fatal(err)
		}
	}
	pkt := make([]byte, 20+8+4)
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8], pkt[9] = 64, unix.IPPROTO_UDP
	copy(pkt[12:], net.ParseIP(src).To4())
	copy(pkt[16:], net.ParseIP(dst).To4())
	binary.BigEndian.PutUint16(pkt[20:], 40000)
	binary.BigEndian.PutUint16(pkt[22:], 9)
	binary.BigEndian.PutUint16(pkt[24:], 8+4)
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], net.ParseIP(dst).To4())
	if err := unix.Sendto(fd, pkt, 0, sa); err != nil {
		t.Fatal(err)
	}
}

// TestPacketsRpfilter: the server has a route to 198.51.100.0/24 on a
// second interface and none to 203.0.113.0/24. From the client it gets
// 3 pings, 2 packets from 203.0.113.5 (no route back: both strict and
// loose fail), 2 from 198.51.100.7 (route back via another interface:
// strict fails, loose passes) and 2 broadcasts from 0.0.0.0 (a DHCP
// client: both pass). A source that is the broadcast address of a
// local subnet is left out: xt_rpfilter fails it, fib passes it
// (docs/extensions.md). Rules in raw PREROUTING only
// count, except the last, which drops what fails.
func TestPacketsRpfilter(t *testing.T) {
	tools := pktTools(t)
	rules := []struct {
		rule string
		want uint64
	}{
		{"-m rpfilter", 5},
		{"-m rpfilter --invert", 4},
		{"-m rpfilter --loose", 7},
		{"-m rpfilter --loose --invert", 2},
		{"-m rpfilter --validmark", 5},
		{"-m rpfilter --invert -j DROP", 4},
		{"", 5}, // what passed the DROP
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "h5rp"+label[:1])
		// a second interface: a veth pair inside the server namespace
		side := fmt.Sprintf("xd%d%s", os.Getpid()%100000, "h5"+label[:1])
		mustRun(t, p.server, "ip", "link", "add", side, "type", "veth", "peer", "name", side+"p")
		mustRun(t, p.server, "ip", "addr", "add", "198.51.100.1/24", "dev", side)
		mustRun(t, p.server, "ip", "link", "set", side, "up")
		mustRun(t, p.server, "ip", "link", "set", side+"p", "up")
		for _, r := range rules {
			args, err := ShellWords(r.rule)
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, p.server, append([]string{tool, "-t", "raw", "-A", "PREROUTING"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		inNS(t, p.client, func() {
			for i := 0; i < 2; i++ {
				sendUDPFrom(t, "203.0.113.5")
				sendUDPFrom(t, "198.51.100.7")
			}
			// 0.0.0.0 to 255.255.255.255 (DHCP): passes without lookup
			for i := 0; i < 2; i++ {
				sendRawUDP(t, "0.0.0.0", "255.255.255.255", fmt.Sprintf("xa%d%s", os.Getpid()%100000, "h5rp"+label[:1]))
			}
		})
		time.Sleep(200 * time.Millisecond)
		got[label] = ruleCounters(t, p.server, tool, "raw", "PREROUTING")
	}
	for i, r := range rules {
		if got["ref"][i] != got["ours"][i] || got["ours"][i] != r.want {
			t.Errorf("%q: reference %d, xdptables %d, want %d", r.rule, got["ref"][i], got["ours"][i], r.want)
		}
	}
}

// TestPacketsTime: rules that match now (today's weekday and day of the
// month, a date range around now) count the 3 pings, rules that do not
// (another weekday or day, an end date in the past) count none.
func TestPacketsTime(t *testing.T) {
	tools := pktTools(t)
	// The rules are built from the current hour and day; a run that
	// the hour's end could cross waits for the next hour (no skip: a
	// skipped kernel test fails make test as root), and a run the hour
	// changed under anyway (a very slow machine) is done again.
	for attempt := 0; ; attempt++ {
		if now := time.Now().UTC(); now.Minute() >= 57 {
			next := now.Truncate(time.Hour).Add(time.Hour + 5*time.Second)
			t.Logf("waiting %v for the next hour", next.Sub(now).Round(time.Second))
			time.Sleep(next.Sub(now))
		}
		rules, got, hour := timeRulesRun(t, tools)
		if time.Now().UTC().Hour() != hour {
			if attempt == 0 {
				t.Log("the hour changed during the run: again")
				continue
			}
			t.Fatal("the hour changed during two runs")
		}
		for i, r := range rules {
			if got["ref"][i] != got["ours"][i] || got["ours"][i] != r.want {
				t.Errorf("%s: reference %d, xdptables %d, want %d", r.rule, got["ref"][i], got["ours"][i], r.want)
			}
		}
		return
	}
}

// timeRulesRun loads the -m time rules of the current hour and day into
// the reference and into xdptables, pings, and returns the rules with
// their counters per tool and the hour they were built for.
func timeRulesRun(t *testing.T, tools map[string]string) ([]timeRule, map[string][]uint64, int) {
	now := time.Now().UTC()
	wd := int(now.Weekday()+6)%7 + 1 // Mon=1 .. Sun=7
	other := wd%7 + 1
	day := now.Day()
	otherDay := day%28 + 1
	hour := now.Hour()
	// a contiguous range that wraps past midnight (iptables refuses
	// --contiguous otherwise) and leaves out the current hour
	wrapStart, wrapStop := fmt.Sprintf("%02d:00", (hour+1)%24), fmt.Sprintf("%02d:00", hour)
	if hour == 23 {
		wrapStart, wrapStop = "23:59:59", "22:00"
	}
	rules := []timeRule{
		{fmt.Sprintf("-p icmp -m time --weekdays %d", wd), 3},
		{fmt.Sprintf("-p icmp -m time --weekdays %d", other), 0},
		{fmt.Sprintf("-p icmp -m time ! --weekdays %d", wd), 0},
		{fmt.Sprintf("-p icmp -m time --monthdays %d", day), 3},
		{fmt.Sprintf("-p icmp -m time --monthdays %d", otherDay), 0},
		{"-p icmp -m time --datestart 2020-01-01 --datestop 2037-12-31", 3},
		{"-p icmp -m time --datestop 2020-01-01", 0},
		{fmt.Sprintf("-p icmp -m time --timestart %02d:00 --timestop %02d:59:59", hour, hour), 3},
		{fmt.Sprintf("-p icmp -m time --timestart %s --timestop %s --contiguous", wrapStart, wrapStop), 0},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		p := newPktPair(t, "h5tm"+label[:1])
		for _, r := range rules {
			args, err := ShellWords(r.rule)
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", pktServer)
		got[label] = ruleCounters(t, p.server, tool, "filter", "INPUT")
	}
	return rules, got, hour
}

// timeRule is a -m time rule and the pings it should count.
type timeRule struct {
	rule string
	want uint64
}

// TestPacketsDevgroupTOS: devgroup (native where xt_devgroup is allowed)
// and tos (native) count the same pings as the reference. The server's
// veth is in device group 5, the client's in the default group 0; the
// client sends 3 pings with TOS 0x10 and 2 with TOS 0x08.
func TestPacketsDevgroupTOS(t *testing.T) {
	tools := pktTools(t)
	serverRules := []struct {
		rule string
		want uint64
	}{
		{"-p icmp --icmp-type 8 -m devgroup --src-group 5", 5},
		{"-p icmp --icmp-type 8 -m devgroup --src-group 4", 0},
		{"-p icmp --icmp-type 8 -m devgroup ! --src-group 5", 0},
		{"-p icmp --icmp-type 8 -m devgroup --src-group 0x4/0x4", 5},
		{"-p icmp --icmp-type 8 -m devgroup ! --src-group 0x1/0x2", 0},
		{"-p icmp --icmp-type 8 -m devgroup ! --src-group 0x2/0x2", 5},
		{"-p icmp --icmp-type 8 -m tos --tos 0x10", 3},
		{"-p icmp --icmp-type 8 -m tos --tos Maximize-Throughput", 2},
		{"-p icmp --icmp-type 8 -m tos ! --tos 0x10", 2},
		{"-p icmp --icmp-type 8 -m tos --tos 0x18/0x18", 0},
		{"-p icmp --icmp-type 8 -m tos --tos 0x00/0x08", 3},
	}
	clientRules := []struct {
		rule string
		want uint64
	}{
		{"-p icmp --icmp-type 8 -m devgroup --dst-group 0", 5},
		{"-p icmp --icmp-type 8 -m devgroup --dst-group default", 5},
		{"-p icmp --icmp-type 8 -m devgroup ! --dst-group 0", 0},
	}
	got := map[string][2][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		tag := "h5dg" + label[:1]
		p := newPktPair(t, tag)
		mustRun(t, p.server, "ip", "link", "set", fmt.Sprintf("xb%d%s", os.Getpid()%100000, tag), "group", "5")
		for _, r := range serverRules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, args...)...)
		}
		for _, r := range clientRules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.client, append([]string{tool, "-A", "OUTPUT"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-Q", "0x10", pktServer)
		mustRun(t, p.client, "ping", "-c", "2", "-i", "0.2", "-W", "2", "-Q", "0x08", pktServer)
		got[label] = [2][]uint64{ruleCounters(t, p.server, tool, "filter", "INPUT"), ruleCounters(t, p.client, tool, "filter", "OUTPUT")}
	}
	for i, r := range serverRules {
		if got["ref"][0][i] != got["ours"][0][i] || got["ours"][0][i] != r.want {
			t.Errorf("server %s: reference %d, xdptables %d, want %d", r.rule, got["ref"][0][i], got["ours"][0][i], r.want)
		}
	}
	for i, r := range clientRules {
		if got["ref"][1][i] != got["ours"][1][i] || got["ours"][1][i] != r.want {
			t.Errorf("client %s: reference %d, xdptables %d, want %d", r.rule, got["ref"][1][i], got["ours"][1][i], r.want)
		}
	}
}

// TestPacketsRpfilter6: the IPv6 reverse-path test against
// ip6t_rpfilter. The server has 2001:db8::/64 towards the client and
// 2001:db8:1::/64 on a second interface. The client pings it twice
// from 2001:db8::1 (passes), twice from 2001:db8:1::7 (route back via
// the other interface: strict fails, loose passes) and twice from
// 2001:db8:ffff::5 (no route back: fails), then adds an address with
// duplicate address detection (a neighbour solicitation from ::).
// Echo-request rules must count exactly; the rules that also see
// neighbour discovery must count the same as the reference.
func TestPacketsRpfilter6(t *testing.T) {
	tools := pktTools(t)
	echo := "-p ipv6-icmp --icmpv6-type echo-request "
	rules := []struct {
		rule string
		want int64 // -1: as the reference
	}{
		{echo + "-m rpfilter", 2},
		{echo + "-m rpfilter --invert", 4},
		{echo + "-m rpfilter --loose", 4},
		{echo + "-m rpfilter --loose --invert", 2},
		{echo + "-m rpfilter --validmark", 2},
		{"-p ipv6-icmp --icmpv6-type neighbour-solicitation -m rpfilter", -1},
		{"-p ipv6-icmp --icmpv6-type neighbour-solicitation -m rpfilter --invert", -1},
		{"-p ipv6-icmp --icmpv6-type neighbour-advertisement -m rpfilter --invert", -1},
		{"-m rpfilter --invert", -1},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := tools[label]
		if label == "ref" {
			tool = "ip6tables-nft"
		} else {
			tool = filepath.Join(filepath.Dir(tool), "ip6tables")
		}
		tag := "h5r6" + label[:1]
		p := newPktPair(t, tag)
		ca, sb := fmt.Sprintf("xa%d%s", os.Getpid()%100000, tag), fmt.Sprintf("xb%d%s", os.Getpid()%100000, tag)
		mustRun(t, p.client, "ip", "addr", "add", "2001:db8::1/64", "dev", ca, "nodad")
		mustRun(t, p.client, "ip", "addr", "add", "2001:db8:1::7/128", "dev", ca, "nodad")
		mustRun(t, p.client, "ip", "addr", "add", "2001:db8:ffff::5/128", "dev", ca, "nodad")
		mustRun(t, p.server, "ip", "addr", "add", "2001:db8::2/64", "dev", sb, "nodad")
		side := fmt.Sprintf("xd%d%s", os.Getpid()%100000, tag)
		mustRun(t, p.server, "ip", "link", "add", side, "type", "veth", "peer", "name", side+"p")
		mustRun(t, p.server, "ip", "addr", "add", "2001:db8:1::1/64", "dev", side, "nodad")
		mustRun(t, p.server, "ip", "link", "set", side, "up")
		mustRun(t, p.server, "ip", "link", "set", side+"p", "up")
		for _, r := range rules {
			args, err := ShellWords(r.rule)
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, p.server, append([]string{tool, "-t", "raw", "-A", "PREROUTING"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "2001:db8::2")
		for _, src := range []string{"2001:db8:1::7", "2001:db8:ffff::5"} {
			// no reply comes back: the exit code does not matter
			p.client.Run("", "ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "-I", src, "2001:db8::2")
		}
		mustRun(t, p.client, "ip", "addr", "add", "2001:db8::99/64", "dev", ca)
		time.Sleep(2 * time.Second) // DAD waits up to a second before it solicits
		got[label] = ruleCounters(t, p.server, tool, "raw", "PREROUTING")
	}
	for i, r := range rules {
		ref, ours := got["ref"][i], got["ours"][i]
		if r.want < 0 && (ref == 0) != (ours == 0) || r.want >= 0 && ref != ours {
			t.Errorf("%s: reference counted %d, xdptables %d", r.rule, ref, ours)
		}
		if r.want >= 0 && ours != uint64(r.want) {
			t.Errorf("%s: counted %d, want %d", r.rule, ours, r.want)
		}
		t.Logf("%s: reference %d, xdptables %d", r.rule, ref, ours)
	}
}

// TestPacketsTOSMatch6: the native tos match on the IPv6 traffic class; the
// client pings 3 times with class 0x10 and 2 times with 0xb8.
func TestPacketsTOSMatch6(t *testing.T) {
	tools := pktTools(t)
	echo := "-p ipv6-icmp --icmpv6-type echo-request "
	rules := []struct {
		rule string
		want uint64
	}{
		{echo + "-m tos --tos 0x10", 3},
		{echo + "-m tos --tos Minimize-Delay", 3},
		{echo + "-m tos ! --tos 0x10", 2},
		{echo + "-m tos --tos 0xb8", 2},
		{echo + "-m tos --tos 0xa0/0xe0", 2},
		{echo + "-m tos --tos 0x00/0x03", 5},
		{echo + "-m tos ! --tos 0x10/0x10", 0},
		{echo + "-m tos ! --tos 0x08/0x08", 3},
	}
	got := map[string][]uint64{}
	for _, label := range []string{"ref", "ours"} {
		tool := "ip6tables-nft"
		if label == "ours" {
			tool = filepath.Join(filepath.Dir(tools[label]), "ip6tables")
		}
		tag := "h5t6" + label[:1]
		p := newPktPair(t, tag)
		mustRun(t, p.client, "ip", "addr", "add", "2001:db8::1/64", "dev", fmt.Sprintf("xa%d%s", os.Getpid()%100000, tag), "nodad")
		mustRun(t, p.server, "ip", "addr", "add", "2001:db8::2/64", "dev", fmt.Sprintf("xb%d%s", os.Getpid()%100000, tag), "nodad")
		for _, r := range rules {
			args, _ := ShellWords(r.rule)
			mustRun(t, p.server, append([]string{tool, "-A", "INPUT"}, args...)...)
		}
		mustRun(t, p.client, "ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "-Q", "0x10", "2001:db8::2")
		mustRun(t, p.client, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", "-Q", "0xb8", "2001:db8::2")
		got[label] = ruleCounters(t, p.server, tool, "filter", "INPUT")
	}
	for i, r := range rules {
		if got["ref"][i] != got["ours"][i] || got["ours"][i] != r.want {
			t.Errorf("%s: reference %d, xdptables %d, want %d", r.rule, got["ref"][i], got["ours"][i], r.want)
		}
	}
}

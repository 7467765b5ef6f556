package integration

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables/expr"
	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/kernel"
	"github.com/xdptables/xdptables/translate"
)

// loadCTHelperMirror puts the rules of the raw chain (PREROUTING or
// OUTPUT) into ns the way the
// native emulation of CT --helper does: the raw chain at -300 with each
// CT --helper rule reduced to its matches, counter and zone template
// (NOTRACK, zone templates, ACCEPT and DROP act there), and translate.CTHelperMirror's
// chain at -199 with the ct helper objects it uses.
func loadCTHelperMirror(t *testing.T, ns *netns.NS, chain string, rules []string) {
	t.Helper()
	var parsed []*compat.Rule
	b := kernel.NewBatch()
	b.AddTable(kernel.IPv4)
	raw, _ := kernel.BuiltinChain("raw", chain)
	b.AddChain(kernel.IPv4, "raw."+chain, kernel.ChainSpec{Base: &raw})
	for _, s := range rules {
		cmd, err := compat.Parse(compat.IPv4, append([]string{"-t", "raw", "-A", chain}, strings.Fields(s)...), compat.ParseOptions{})
		if err != nil {
			t.Fatalf("%s: %s", s, compat.Format(err, "iptables", -1))
		}
		r := cmd.Rules[0]
		parsed = append(parsed, r)
		es, err := translate.ExprsIn("raw", chain, r)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		spec := kernel.RuleSpec{Exprs: es}
		for _, e := range es {
			if _, ok := e.(*expr.Match); ok {
				spec.Compat = &kernel.RuleCompat{Proto: uint32(r.Proto)}
			}
		}
		b.AppendRule(kernel.IPv4, "raw."+chain, spec)
	}
	mirror, objs, err := translate.CTHelperMirror(compat.IPv4, chain, parsed)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		b.AddCtHelper(kernel.IPv4, kernel.CtHelper{Name: o.Name(), Helper: o.Helper, L4Proto: o.Proto}, true)
	}
	b.AddChain(kernel.IPv4, translate.CTHelperChain(chain), kernel.ChainSpec{Base: &kernel.BaseChain{Hook: raw.Hook, Priority: translate.CTHelperPriority, Type: raw.Type}})
	for _, mr := range mirror {
		spec := kernel.RuleSpec{Exprs: mr.Exprs}
		for _, e := range mr.Exprs {
			if _, ok := e.(*expr.Match); ok {
				spec.Compat = &kernel.RuleCompat{Proto: uint32(mr.From.Proto)}
			}
		}
		b.AppendRule(kernel.IPv4, translate.CTHelperChain(chain), spec)
	}
	c := digestConn(t, ns)
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(b, gen); err != nil {
		var oe *kernel.OpError
		errors.As(err, &oe)
		t.Fatalf("commit: %v (op %d)", err, oe.Index)
	}
}

var ctLine = regexp.MustCompile(`^tcp\s+6\s+\d+ [A-Z_]+ src=` + regexp.QuoteMeta(pktClient) + ` dst=` + regexp.QuoteMeta(pktServer) + ` sport=\d+ dport=(\d+) .*?(helper=(\S+))?\s+use=`)

// ctHelpers returns, per original destination port of the TCP entries in
// ns's conntrack table that the client opened, the helper of the entry
// ("" for none). (A late packet of the server can open an entry the
// other way round after the client's is gone.)
func ctHelpers(t *testing.T, ns *netns.NS) map[int]string {
	t.Helper()
	return ctHelpersOut(t, mustRun(t, ns, "conntrack", "-L", "-p", "tcp"))
}

func ctHelpersOut(t *testing.T, list string) map[int]string {
	t.Helper()
	out := map[int]string{}
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		m := ctLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		out[p] = m[3]
	}
	return out
}

// TestCTHelperMirrorPackets: the helpers conntrack gives new connections
// under translate.CTHelperMirror's emulation are those the reference's
// xtables CT target gives them: the first CT rule that matches decides,
// NOTRACK and earlier ACCEPTs and zone templates keep the helper off, and
// an expected (FTP data) connection gets none from a CT --helper rule
// that matches it.
func TestCTHelperMirrorPackets(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") || !netns.Have("conntrack") {
		t.Skip("reference iptables-nft or conntrack is not installed")
	}
	rules := []string{
		"-p tcp --dport 2124 -j CT --notrack",
		"-s 198.18.0.1 -p tcp --dport 2125 -j ACCEPT",
		"-p tcp --dport 2126 -j CT",
		"-p tcp -m multiport --dports 21,2124:2127 -j CT --helper ftp",
		"-p tcp --dport 2127 -j CT --helper irc",
		"-p tcp --dport 2128 -j CT --helper irc",
		"-p tcp -m multiport --dports 2130,5001 -j CT --helper ftp",
	}
	want := map[int]string{21: "ftp", 2125: "", 2126: "", 2127: "ftp", 2128: "irc", 2129: "", 2130: "ftp", 5001: ""}
	got := map[string]map[int]string{}
	for _, side := range []string{"ref", "ours"} {
		p := newPktPair(t, "cth"+side[:1])
		if side == "ref" {
			for _, r := range rules {
				mustRun(t, p.server, append([]string{"iptables-nft", "-t", "raw", "-A", "PREROUTING"}, strings.Fields(r)...)...)
			}
		} else {
			loadCTHelperMirror(t, p.server, "PREROUTING", rules)
		}
		for _, port := range []int{21, 2124, 2125, 2126, 2127, 2128, 2129} {
			listenTCP(t, p.server, port)
			dialTCP(t, p.client, port, 1)
		}
		ftpData(t, p)
		got[side] = ctHelpers(t, p.server)
		if _, ok := got[side][2124]; ok {
			t.Errorf("%s: the NOTRACK'd connection is in the conntrack table", side)
		}
		delete(got[side], 2124)
	}
	for port, w := range want {
		for _, side := range []string{"ref", "ours"} {
			if h, ok := got[side][port]; !ok || h != w {
				t.Errorf("%s: port %d: helper %q (entry %v), want %q", side, port, h, ok, w)
			}
		}
	}
	if len(got["ref"]) != len(got["ours"]) {
		t.Errorf("entries differ: ref %v, ours %v", got["ref"], got["ours"])
	}
}

// ftpData opens an FTP control connection to port 2130 of the server,
// whose reply to PASV announces port 5001, then the data connection
// there: the ftp helper of the control connection expects it.
func ftpData(t *testing.T, p *pktPair) {
	t.Helper()
	var ctl, data net.Listener
	inNS(t, p.server, func() {
		var err error
		if ctl, err = net.Listen("tcp4", pktServer+":2130"); err != nil {
			t.Fatal(err)
		}
		if data, err = net.Listen("tcp4", pktServer+":5001"); err != nil {
			t.Fatal(err)
		}
	})
	acceptAndClose(t, data)
	t.Cleanup(func() { ctl.Close() })
	go func() {
		c, err := ctl.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("220 ready\r\n"))
		buf := make([]byte, 64)
		c.Read(buf)
		c.Write([]byte("227 Entering Passive Mode (198,18,0,2,19,137).\r\n"))
		c.Read(buf)
	}()
	inNS(t, p.client, func() {
		c, err := net.DialTimeout("tcp4", pktServer+":2130", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("PASV\r\n"))
		if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "227 ") {
			t.Fatalf("PASV: %q %v", l, err)
		}
		d, err := net.DialTimeout("tcp4", pktServer+":5001", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	})
	// the data connection is expected: conntrack says so
	if out := mustRun(t, p.server, "conntrack", "-L", "-p", "tcp", "--dport", "5001", "--status", "SEEN_REPLY"); !strings.Contains(out, "dport=5001") {
		t.Errorf("no data connection in conntrack: %q", out)
	}
}

// TestCTHelperMirrorOutput: the same in raw OUTPUT, for connections the
// client opens (conntrack runs at -200 in OUTPUT too).
func TestCTHelperMirrorOutput(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") || !netns.Have("conntrack") {
		t.Skip("reference iptables-nft or conntrack is not installed")
	}
	rules := []string{
		"-p tcp --dport 2124 -j CT --notrack",
		"-p tcp -m multiport --dports 21,2124 -j CT --helper ftp",
		"-p tcp --dport 2125 -j CT --helper irc",
	}
	want := map[int]string{21: "ftp", 2125: "irc", 2126: ""}
	for _, side := range []string{"ref", "ours"} {
		p := newPktPair(t, "cto"+side[:1])
		if side == "ref" {
			for _, r := range rules {
				mustRun(t, p.client, append([]string{"iptables-nft", "-t", "raw", "-A", "OUTPUT"}, strings.Fields(r)...)...)
			}
		} else {
			loadCTHelperMirror(t, p.client, "OUTPUT", rules)
		}
		for _, port := range []int{21, 2124, 2125, 2126} {
			listenTCP(t, p.server, port)
			dialTCP(t, p.client, port, 1)
		}
		got := ctHelpers(t, p.client)
		if len(got) != len(want) {
			t.Errorf("%s: entries %v, want %v", side, got, want)
		}
		for port, w := range want {
			if h, ok := got[port]; !ok || h != w {
				t.Errorf("%s: port %d: helper %q (entry %v), want %q", side, port, h, ok, w)
			}
		}
	}
}

// TestCTHelperCommands: iptables commands and restores with -j CT
// --helper in raw give what iptables-nft gives (exit status, messages,
// -S, -L, -save), and the helpers conntrack then assigns are the same;
// the mirror chains and helper objects go away with the last CT --helper
// rule.
func TestCTHelperCommands(t *testing.T) {
	tools := pktTools(t)
	if !netns.Have("conntrack") {
		t.Skip("conntrack is not installed")
	}
	cmds := []string{
		"-t raw -A PREROUTING -p tcp --dport 2124 -j CT --notrack",
		"-t raw -A PREROUTING -s 198.18.0.1 -p tcp --dport 2125 -j ACCEPT",
		"-t raw -A PREROUTING -p tcp -m multiport --dports 21,2124,2125,2127 -j CT --helper ftp",
		"-t raw -I PREROUTING 3 -p tcp --dport 2127 -j CT --helper irc",
		"-t raw -A OUTPUT -p udp --dport 69 -j CT --helper tftp",
		"-t raw -A PREROUTING -p tcp --dport 22 -j CT --helper nosuch",
		"-t raw -A PREROUTING -j CT --helper ftp",
		"-t raw -I PREROUTING -p udp -j CT --helper ftp",
		"-t raw -A PREROUTING ! -p tcp -j CT --helper ftp",
		"-t raw -C PREROUTING -p tcp --dport 2127 -j CT --helper irc",
		"-t raw -C PREROUTING -p tcp --dport 2127 -j CT --helper ftp",
		"-t raw -A PREROUTING -p tcp --dport 2128 -j CT --helper ftp",
		"-t raw -D PREROUTING -p tcp --dport 2128 -j CT --helper ftp",
		"-t raw -A PREROUTING -p tcp --dport 2128 -j CT --helper ftp",
		"-t raw -R PREROUTING 5 -p tcp --dport 2129 -j CT --helper ftp",
		"-t raw -S",
		"-t raw -L -n -v",
		"-t raw -L -n --line-numbers",
	}
	want := map[int]string{21: "ftp", 2125: "", 2127: "irc", 2129: "", 2130: ""}
	type result struct {
		out     []string
		helpers map[int]string
	}
	res := map[string]*result{}
	for _, side := range []string{"ref", "ours"} {
		tool := tools[side]
		p := newPktPair(t, "ctc"+side[:1])
		r := &result{}
		res[side] = r
		for _, c := range cmds {
			x := p.server.Run("", append([]string{tool}, strings.Fields(c)...)...)
			r.out = append(r.out, fmt.Sprintf("%s: rc %d\n%s%s", c, x.RC, x.Stdout, x.Stderr))
		}
		// a change without CT --helper rewrites the mirror too: 2129's
		// helper rule comes after this ACCEPT now
		x := p.server.Run("*raw\n-I PREROUTING 1 -p tcp --dport 2129 -j ACCEPT\nCOMMIT\n", tool+"-restore", "--noflush")
		r.out = append(r.out, fmt.Sprintf("restore --noflush -I: rc %d %s", x.RC, x.Stderr))
		save := p.server.Run("", tool+"-save", "-t", "raw")
		r.out = append(r.out, "save: "+strings.Replace(normalizeSave(save.Stdout), "iptables-nft-save", "iptables-save", 1)+save.Stderr)
		for _, port := range []int{21, 2124, 2125, 2127, 2129, 2130} {
			listenTCP(t, p.server, port)
			dialTCP(t, p.client, port, 1)
		}
		r.helpers = ctHelpers(t, p.server)
		// a restore of what -save printed keeps the helpers; without
		// CT --helper rules left, no mirror remains
		x = p.server.Run(save.Stdout, tool+"-restore")
		r.out = append(r.out, fmt.Sprintf("restore: rc %d %s", x.RC, x.Stderr))
		x = p.server.Run("", tool, "-t", "raw", "-S")
		r.out = append(r.out, "after restore:\n"+x.Stdout+x.Stderr)
		x = p.server.Run("*raw\n-A OUTPUT -p tcp --dport 6667 -j CT --helper irc\nCOMMIT\n", tool+"-restore", "--noflush")
		r.out = append(r.out, fmt.Sprintf("restore --noflush: rc %d %s", x.RC, x.Stderr))
		for _, c := range []string{"-t raw -F PREROUTING", "-t raw -D OUTPUT 1", "-t raw -S"} {
			x := p.server.Run("", append([]string{tool}, strings.Fields(c)...)...)
			r.out = append(r.out, fmt.Sprintf("%s: rc %d\n%s%s", c, x.RC, x.Stdout, x.Stderr))
		}
		if side == "ours" {
			out := mustRun(t, p.server, "nft", "list", "table", "ip", "xdptables")
			if !strings.Contains(out, "ct-helper.OUTPUT") || strings.Contains(out, "ct-helper.PREROUTING") {
				t.Errorf("after -F PREROUTING, the mirror of OUTPUT stays and that of PREROUTING goes:\n%s", out)
			}
			x := p.server.Run("", tool, "-t", "raw", "-F")
			if out := mustRun(t, p.server, "nft", "list", "table", "ip", "xdptables"); x.RC != 0 || strings.Contains(out, "ct-helper") {
				t.Errorf("after -F (rc %d %s), mirrors or helper objects remain:\n%s", x.RC, x.Stderr, out)
			}
		}
	}
	for i := range res["ref"].out {
		if res["ref"].out[i] != res["ours"].out[i] {
			t.Errorf("reference:\n%s\nours:\n%s", res["ref"].out[i], res["ours"].out[i])
		}
	}
	for port, w := range want {
		for _, side := range []string{"ref", "ours"} {
			if h, ok := res[side].helpers[port]; !ok || h != w {
				t.Errorf("%s: port %d: helper %q (entry %v), want %q", side, port, h, ok, w)
			}
		}
	}
	if _, ok := res["ours"].helpers[2124]; ok {
		t.Errorf("ours: the NOTRACK'd connection is in the conntrack table")
	}
}

// TestCTHelperNotExact: a change to a raw chain that reaches CT --helper
// rules after which their helpers could not be assigned exactly after
// conntrack fails and changes nothing, and so does a CT --helper rule
// added to such a chain, or a jump that makes such a chain reach one
// (the reference takes them all).
func TestCTHelperNotExact(t *testing.T) {
	tools := pktTools(t)
	ns := netns.New(t, "ctx")
	ipt := tools["ours"]
	mustRun(t, ns, ipt, "-t", "raw", "-A", "PREROUTING", "-p", "tcp", "--dport", "21", "-j", "CT", "--helper", "ftp")
	before := mustRun(t, ns, "nft", "list", "ruleset")
	for _, c := range []struct{ args, msg string }{
		{"-t raw -A PREROUTING -j MARK --set-mark 1", "chain PREROUTING of table raw reaches CT --helper rules, whose helpers are assigned after conntrack: after this change, rule 2 (-j MARK) may change the packet"},
		{"-t raw -I PREROUTING -m conntrack --ctstate NEW -j ACCEPT", "after this change, rule 1 (-m conntrack) may match differently"},
	} {
		x := ns.Run("", append([]string{ipt}, strings.Fields(c.args)...)...)
		if x.RC != 1 || !strings.Contains(x.Stderr, c.msg) {
			t.Errorf("%s: rc %d %q, want 1 and %q", c.args, x.RC, x.Stderr, c.msg)
		}
	}
	if after := mustRun(t, ns, "nft", "list", "ruleset"); after != before {
		t.Errorf("the ruleset changed:\n%s\nwas\n%s", after, before)
	}
	// CT --helper where the mirror would not be exact has the CT
	// target's message; in a user chain that no built-in chain reaches
	// it needs no mirror, and a jump that would make a chain whose
	// mirror cannot be exact reach it fails
	mustRun(t, ns, ipt, "-t", "raw", "-A", "OUTPUT", "-j", "MARK", "--set-mark", "1")
	mustRun(t, ns, ipt, "-t", "raw", "-N", "HELPERS")
	x := ns.Run("", ipt, "-t", "raw", "-A", "OUTPUT", "-p", "tcp", "-j", "CT", "--helper", "ftp")
	if x.RC != 1 || !strings.Contains(x.Stderr, `target "CT": cannot run in the xdptables table`) {
		t.Errorf("CT --helper after MARK: rc %d %q", x.RC, x.Stderr)
	}
	mustRun(t, ns, ipt, "-t", "raw", "-A", "HELPERS", "-p", "tcp", "-j", "CT", "--helper", "ftp")
	x = ns.Run("", ipt, "-t", "raw", "-A", "OUTPUT", "-j", "HELPERS")
	if msg := "chain OUTPUT of table raw reaches CT --helper rules, whose helpers are assigned after conntrack: after this change, rule 1 (-j MARK) may change the packet"; x.RC != 1 || !strings.Contains(x.Stderr, msg) {
		t.Errorf("jump to HELPERS after MARK: rc %d %q, want 1 and %q", x.RC, x.Stderr, msg)
	}
	if out := mustRun(t, ns, ipt, "-t", "raw", "-S"); out != "-P PREROUTING ACCEPT\n-P OUTPUT ACCEPT\n-N HELPERS\n-A PREROUTING -p tcp -m tcp --dport 21 -j CT --helper ftp\n-A OUTPUT -j MARK --set-xmark 0x1/0xffffffff\n-A HELPERS -p tcp -j CT --helper ftp\n" {
		t.Errorf("-S:\n%s", out)
	}
}

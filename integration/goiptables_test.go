package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coreos/go-iptables/iptables"
	"github.com/xdptables/xdptables/integration/netns"
)

// TestGoIptables drives github.com/coreos/go-iptables, a real client
// library (used by CNI plugins, flannel, kube tools), once against the
// reference iptables-nft and once against xdptables, each in its own
// namespace. go-iptables runs the binary it is given as a subprocess; a
// wrapper script named iptables/ip6tables enters the namespace and execs
// the real binary. Every call's result (values, error exit status and
// message) must be the same for both.

// nsWrapper writes DIR/name, a script that runs real inside ns.
func nsWrapper(t *testing.T, ns *netns.NS, name, real string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", ns.Name, real)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// goIptablesVersion is go-iptables' own version pattern (unexported
// there): the fourth group is the mode it detects.
var goIptablesVersion = regexp.MustCompile(`v([0-9]+)\.([0-9]+)\.([0-9]+)(?:\s+\((\w+))?`)

// errText reduces a go-iptables error to what does not depend on the
// binary's path: exit status and stderr.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(*iptables.Error); ok {
		msg := e.Error()
		if i := strings.Index(msg, "exit status "); i >= 0 {
			msg = msg[i:]
		}
		return fmt.Sprintf("err(%d, notexist=%v): %s", e.ExitStatus(), e.IsNotExist(), msg)
	}
	return "error: " + err.Error()
}

// goIptablesScenario runs the client calls and returns their transcript.
func goIptablesScenario(t *testing.T, ipt *iptables.IPTables, v6 bool) []string {
	var log []string
	rec := func(what string, v any, err error) {
		log = append(log, fmt.Sprintf("%s => %v | %s", what, v, errText(err)))
	}
	do := func(what string, err error) { rec(what, nil, err) }
	src, dst := "10.1.2.3/32", "192.168.0.0/16"
	if v6 {
		src, dst = "2001:db8::1/128", "fd00::/8"
	}
	v1, v2, v3 := ipt.GetIptablesVersion()
	log = append(log, fmt.Sprintf("version %d.%d.%d check/wait via New", v1, v2, v3))

	do("NewChain KUBE-TEST", ipt.NewChain("filter", "KUBE-TEST"))
	do("NewChain KUBE-TEST again", ipt.NewChain("filter", "KUBE-TEST"))
	do("NewChain nat KUBE-SVC", ipt.NewChain("nat", "KUBE-SVC"))
	do("Append 1", ipt.Append("filter", "KUBE-TEST", "-s", src, "-p", "tcp", "--dport", "80", "-j", "ACCEPT"))
	do("Append 2", ipt.Append("filter", "KUBE-TEST", "-d", dst, "-p", "udp", "--sport", "53", "-j", "DROP"))
	do("Append 3", ipt.Append("filter", "KUBE-TEST", "-i", "eth0", "-j", "RETURN"))
	do("Insert 1", ipt.Insert("filter", "KUBE-TEST", 1, "-o", "lo", "-j", "ACCEPT"))
	do("Insert 3", ipt.Insert("filter", "KUBE-TEST", 3, "-p", "tcp", "--dport", "443", "-j", "ACCEPT"))
	do("Insert 99", ipt.Insert("filter", "KUBE-TEST", 99, "-j", "ACCEPT"))
	do("Append INPUT jump", ipt.Append("filter", "INPUT", "-j", "KUBE-TEST"))
	do("Append missing chain", ipt.Append("filter", "NOPE", "-j", "ACCEPT"))
	do("Append jump to missing", ipt.Append("filter", "INPUT", "-j", "NOPE"))
	do("AppendUnique dup", ipt.AppendUnique("filter", "KUBE-TEST", "-i", "eth0", "-j", "RETURN"))
	do("AppendUnique new", ipt.AppendUnique("filter", "KUBE-TEST", "-i", "eth1", "-j", "RETURN"))
	do("InsertUnique dup", ipt.InsertUnique("filter", "KUBE-TEST", 1, "-o", "lo", "-j", "ACCEPT"))
	do("Append nat", ipt.Append("nat", "KUBE-SVC", "-p", "tcp", "-d", dst, "--dport", "8080", "-j", "RETURN"))

	for _, spec := range [][]string{
		{"-s", src, "-p", "tcp", "--dport", "80", "-j", "ACCEPT"},
		{"-s", src, "-p", "tcp", "--dport", "81", "-j", "ACCEPT"},
		{"-p", "udp", "-d", dst, "--sport", "53", "-j", "DROP"}, // other order
		{"-i", "eth0", "-j", "RETURN"},
		{"-i", "eth9", "-j", "RETURN"},
	} {
		ok, err := ipt.Exists("filter", "KUBE-TEST", spec...)
		rec("Exists "+strings.Join(spec, " "), ok, err)
	}
	ok, err := ipt.Exists("filter", "NOPE", "-j", "ACCEPT")
	rec("Exists in missing chain", ok, err)
	ok, err = ipt.ChainExists("filter", "KUBE-TEST")
	rec("ChainExists KUBE-TEST", ok, err)
	ok, err = ipt.ChainExists("filter", "NOPE")
	rec("ChainExists NOPE", ok, err)

	list := func(table, chain string) {
		l, err := ipt.List(table, chain)
		rec("List "+table+" "+chain, strings.Join(l, "\n"), err)
		l, err = ipt.ListWithCounters(table, chain)
		rec("ListWithCounters "+table+" "+chain, strings.Join(l, "\n"), err)
	}
	// List(table, "") would run `-S ''`: iptables-nft then fails with
	// "chain `' in table `filter' is incompatible"; clients list by chain
	listAll := func() {
		cs, err := ipt.ListChains("filter")
		rec("ListChains filter", cs, err)
		for _, c := range cs {
			list("filter", c)
		}
	}
	list("filter", "KUBE-TEST")
	list("filter", "INPUT")
	list("nat", "KUBE-SVC")
	l, err := ipt.List("filter", "NOPE")
	rec("List NOPE", l, err)
	s, err := ipt.ListById("filter", "KUBE-TEST", 2)
	rec("ListById 2", s, err)
	for _, tb := range []string{"filter", "nat", "mangle", "raw"} {
		cs, err := ipt.ListChains(tb)
		rec("ListChains "+tb, cs, err)
	}
	stats := func(chain string) {
		st, err := ipt.Stats("filter", chain)
		rec("Stats "+chain, st, err)
		ss, err := ipt.StructuredStats("filter", chain)
		var b strings.Builder
		for _, x := range ss {
			fmt.Fprintf(&b, "{%d %d %s %s %q %s %s %v %v %q} ", x.Packets, x.Bytes, x.Target, x.Protocol, x.Opt, x.Input, x.Output, x.Source, x.Destination, x.Options)
		}
		rec("StructuredStats "+chain, b.String(), err)
	}
	stats("KUBE-TEST")
	stats("INPUT")

	do("Delete 2", ipt.Delete("filter", "KUBE-TEST", "-d", dst, "-p", "udp", "--sport", "53", "-j", "DROP"))
	do("Delete again", ipt.Delete("filter", "KUBE-TEST", "-d", dst, "-p", "udp", "--sport", "53", "-j", "DROP"))
	do("DeleteIfExists gone", ipt.DeleteIfExists("filter", "KUBE-TEST", "-d", dst, "-p", "udp", "--sport", "53", "-j", "DROP"))
	do("DeleteById 1", ipt.DeleteById("filter", "KUBE-TEST", 1))
	do("DeleteById 99", ipt.DeleteById("filter", "KUBE-TEST", 99))
	do("Replace 1", ipt.Replace("filter", "KUBE-TEST", 1, "-p", "tcp", "--dport", "22", "-j", "DROP"))
	list("filter", "KUBE-TEST")

	do("ChangePolicy FORWARD DROP", ipt.ChangePolicy("filter", "FORWARD", "DROP"))
	do("ChangePolicy user chain", ipt.ChangePolicy("filter", "KUBE-TEST", "DROP"))
	do("ChangePolicy bad", ipt.ChangePolicy("filter", "OUTPUT", "BOGUS"))
	listAll()

	do("RenameChain", ipt.RenameChain("filter", "KUBE-TEST", "KUBE-NEW"))
	do("RenameChain missing", ipt.RenameChain("filter", "KUBE-TEST", "KUBE-X"))
	do("NewChain KUBE-TARGET", ipt.NewChain("filter", "KUBE-TARGET"))
	do("RenameChain onto existing", ipt.RenameChain("filter", "KUBE-NEW", "KUBE-TARGET"))
	listAll()

	do("DeleteChain referenced", ipt.DeleteChain("filter", "KUBE-NEW"))
	do("ClearChain existing", ipt.ClearChain("filter", "KUBE-NEW"))
	do("ClearChain new", ipt.ClearChain("filter", "KUBE-FRESH"))
	do("Delete jump", ipt.Delete("filter", "INPUT", "-j", "KUBE-NEW"))
	do("DeleteChain KUBE-NEW", ipt.DeleteChain("filter", "KUBE-NEW"))
	do("DeleteChain missing", ipt.DeleteChain("filter", "KUBE-NEW"))
	do("Append for ClearAndDelete", ipt.Append("filter", "KUBE-FRESH", "-j", "ACCEPT"))
	do("ClearAndDeleteChain", ipt.ClearAndDeleteChain("filter", "KUBE-FRESH"))
	do("ClearAndDeleteChain missing", ipt.ClearAndDeleteChain("filter", "KUBE-FRESH"))
	listAll()
	for _, tb := range []string{"filter", "nat"} {
		cs, err := ipt.ListChains(tb)
		rec("ListChains "+tb, cs, err)
	}
	do("ClearAll", ipt.ClearAll())
	do("DeleteAll", ipt.DeleteAll())
	listAll()
	return log
}

func TestGoIptables(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") {
		t.Fatal("reference iptables-nft is not installed")
	}
	dir := LinkDir(t)
	for _, v6 := range []bool{false, true} {
		for _, timeout := range []int{0, 5} {
			name, ref := "iptables", "iptables-nft"
			proto := iptables.ProtocolIPv4
			if v6 {
				name, ref, proto = "ip6tables", "ip6tables-nft", iptables.ProtocolIPv6
			}
			t.Run(fmt.Sprintf("%s/wait%d", name, timeout), func(t *testing.T) {
				refPath, err := exec.LookPath(ref)
				if err != nil {
					t.Fatal(err)
				}
				var logs [2][]string
				for i, real := range []string{refPath, filepath.Join(dir, name)} {
					ns := netns.New(t, "goipt")
					w := nsWrapper(t, ns, name, real)
					// version string: go-iptables must see nf_tables mode
					out := ns.Run("", real, "--version")
					m := goIptablesVersion.FindStringSubmatch(out.Stdout)
					if m == nil || m[4] != "nf_tables" {
						t.Fatalf("%s --version = %q: go-iptables would not detect nf_tables mode", real, out.Stdout)
					}
					ipt, err := iptables.New(iptables.IPFamily(proto), iptables.Path(w), iptables.Timeout(timeout))
					if err != nil {
						t.Fatalf("iptables.New with %s: %v", real, err)
					}
					if ipt.Proto() != proto {
						t.Fatalf("proto %v", ipt.Proto())
					}
					logs[i] = goIptablesScenario(t, ipt, v6)
				}
				if len(logs[0]) != len(logs[1]) {
					t.Fatalf("transcripts differ in length: %d vs %d", len(logs[0]), len(logs[1]))
				}
				fails := 0
				for i := range logs[0] {
					if logs[0][i] != logs[1][i] {
						fails++
						if fails <= 15 {
							t.Errorf("step %d differs\nreference: %s\nxdptables: %s", i, logs[0][i], logs[1][i])
						}
					}
				}
				if testing.Verbose() && fails == 0 {
					t.Logf("%d go-iptables calls gave the same results", len(logs[0]))
				}
			})
		}
	}
}

package integration

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// ipsetPair runs the same commands with the reference tools and ours,
// each in its own namespace, and compares output and exit status.
type ipsetPair struct {
	t       *testing.T
	ref, me *netns.NS
	ours    map[string]string // tool → our binary
	compare func(string) string
}

func newIpsetPair(t *testing.T, tag string) *ipsetPair {
	netns.RequireRoot(t)
	for _, tool := range []string{"ipset", "iptables-nft", "iptables-nft-restore", "iptables-nft-save"} {
		if !netns.Have(tool) {
			t.Skipf("reference %s not installed", tool)
		}
	}
	dir := LinkDir(t)
	return &ipsetPair{
		t: t, ref: netns.New(t, tag+"r"), me: netns.New(t, tag+"m"),
		ours: map[string]string{
			"ipset": filepath.Join(dir, "ipset"), "iptables": filepath.Join(dir, "iptables"),
			"iptables-restore": filepath.Join(dir, "iptables-restore"), "iptables-save": filepath.Join(dir, "iptables-save"),
		},
		compare: func(s string) string {
			return normIpset(regexp.MustCompile(`<memsize>\d+</memsize>`).ReplaceAllString(s, "<memsize>N</memsize>"))
		},
	}
}

var refTool = map[string]string{"ipset": "ipset", "iptables": "iptables-nft",
	"iptables-restore": "iptables-nft-restore", "iptables-save": "iptables-nft-save"}

// run runs "TOOL ARGS…" (stdin optional) in both namespaces.
func (p *ipsetPair) run(stdin, line string) {
	p.t.Helper()
	args := strings.Fields(line)
	r := p.ref.Run(stdin, append([]string{refTool[args[0]]}, args[1:]...)...)
	m := p.me.Run(stdin, append([]string{p.ours[args[0]]}, args[1:]...)...)
	// The program name differs in iptables messages; save's comment
	// lines carry the time.
	rerr := strings.ReplaceAll(r.Stderr, "iptables-nft-restore", "iptables-restore")
	if p.compare(dropComments(r.Stdout)) != p.compare(dropComments(m.Stdout)) || rerr != m.Stderr || r.RC != m.RC {
		p.t.Errorf("%s:\nreference rc=%d\n%s%s\nours rc=%d\n%s%s", line, r.RC, r.Stdout, r.Stderr, m.RC, m.Stdout, m.Stderr)
	}
}

func dropComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "# ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Single add/del/test on hash:net take targeted paths that ask the
// kernel instead of reading the set; nested, adjacent and enclosing
// prefixes (which send them to the general path) must give ipset's
// answers all the same.
func TestIpsetTargetedNet(t *testing.T) {
	p := newIpsetPair(t, "ist")
	for _, l := range []string{
		"ipset create n hash:net", "ipset create h hash:ip timeout 100",
		"ipset add n 10.0.0.0/24", "ipset add n 10.0.0.0/24", "ipset add n 10.0.1.0/24",
		"ipset add n 10.0.0.128/25", "ipset add n 10.0.0.0/16", "ipset test n 10.0.0.5", "ipset test n 10.0.9.9",
		"ipset test n 10.0.0.0/16", "ipset test n 10.0.0.0/17", "ipset del n 10.0.0.0/24", "ipset del n 10.0.0.0/24",
		"ipset test n 10.0.0.5", "ipset -exist del n 10.0.0.0/24", "ipset del n 10.0.0.0/16", "ipset test n 10.0.0.5",
		"ipset del n 10.0.1.0/24", "ipset test n 10.0.1.1", "ipset del n 10.0.0.128/25", "ipset test n 10.0.0.200",
		"ipset -exist add n 10.9.0.0/16", "ipset -exist add n 10.9.0.0/16", "ipset add n 10.9.1.0/24 nomatch",
		"ipset test n 10.9.1.1", "ipset test n 10.9.2.1", "ipset del n 10.9.0.0/16", "ipset test n 10.9.1.1",
		"ipset add n 0.0.0.0/0", "ipset add n 10.0.0.0/33", "ipset test nope 1.1.1.1", "ipset add nope 1.1.1.1",
		"ipset add h 10.0.0.1", "ipset add h 10.0.0.1", "ipset -exist add h 10.0.0.1 timeout 50", "ipset test h 10.0.0.1",
		"ipset del h 10.0.0.1", "ipset del h 10.0.0.1", "ipset -exist del h 10.0.0.1", "ipset add h 10.0.0.0/30",
		"ipset test h 10.0.0.3", "ipset del h 10.0.0.2-10.0.0.3", "ipset -s save",
	} {
		p.run("", l)
	}
}

// swap (alone and in a restore file: the blocklist update) works on a
// set a rule uses; rename and destroy of such a set fail.
func TestIpsetSwapInUse(t *testing.T) {
	p := newIpsetPair(t, "isw")
	for _, l := range []string{
		"ipset create bl hash:net", "ipset add bl 198.51.100.0/24",
		"iptables -A INPUT -m set --match-set bl src -j DROP",
		"ipset create new hash:net", "ipset add new 203.0.113.0/24",
		"ipset swap new bl", "ipset -s save", "iptables -S INPUT",
		"ipset rename bl other", "ipset destroy bl", "ipset destroy new", "ipset -t list bl",
	} {
		p.run("", l)
	}
	p.run("create tmp hash:net\nadd tmp 198.18.0.0/16\nadd tmp 198.19.0.0/16\nswap tmp bl\ndestroy tmp\n", "ipset restore")
	p.run("", "ipset -s save")
	p.run("", "iptables -S INPUT")
	p.run("", "ipset create ipp hash:ip,port")
	p.run("", "ipset swap ipp bl")
}

// -m set with a set that does not exist: the reference's message and
// status, and nothing is committed (also from a restore file).
func TestIpsetMatchMissingSet(t *testing.T) {
	p := newIpsetPair(t, "ism")
	p.run("", "iptables -A INPUT -m set --match-set X src -j DROP")
	p.run("*filter\n-A INPUT -j ACCEPT\n-A INPUT -m set --match-set X src -j DROP\nCOMMIT\n", "iptables-restore")
	p.run("", "iptables -S")
}

// Combined restore in netfilter-persistent's order: sets first (ipset
// restore), then the iptables-restore file whose rules use them;
// iptables-save shows the -m set rules.
func TestIpsetCombinedRestore(t *testing.T) {
	p := newIpsetPair(t, "isc")
	sets := "create allow hash:net family inet hashsize 1024 maxelem 65536\n" +
		"add allow 198.51.100.0/24\nadd allow 203.0.113.0/24\n" +
		"create svc hash:ip,port family inet\nadd svc 198.18.0.2,tcp:22\nadd svc 198.18.0.2,udp:53\n" +
		"create blk hash:ip timeout 300\nadd blk 198.18.9.9 timeout 200\n"
	rules := "*filter\n:INPUT DROP [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" +
		"-A INPUT -m set --match-set blk src -j DROP\n" +
		"-A INPUT -m set --match-set allow src -m set --match-set svc dst,dst -j ACCEPT\n" +
		"-A INPUT -m set ! --match-set allow src -j LOG\n" +
		"COMMIT\n"
	p.run(sets, "ipset restore")
	p.run(rules, "iptables-restore")
	p.run("", "iptables-save")
	p.run("", "iptables -S")
	p.run("", "ipset -t list")
	p.run("", "ipset destroy allow")
}

// list:set sets are stored in the kernel: they survive between commands
// and keep their member order; members in a list cannot be destroyed.
func TestIpsetListSet(t *testing.T) {
	p := newIpsetPair(t, "isl")
	for _, l := range []string{
		"ipset create a hash:ip", "ipset create b hash:net", "ipset create c hash:ip,port",
		"ipset create l list:set", "ipset add l a", "ipset add l b before a", "ipset add l c after b",
		"ipset add l a", "ipset -exist add l a", "ipset add l nope", "ipset add l l",
		"ipset test l a", "ipset test l nope", "ipset list l", "ipset save",
		"ipset del l c", "ipset del l c", "ipset -exist del l c", "ipset destroy a", "ipset destroy c",
		"ipset create l2 list:set size 4 timeout 100 comment", "ipset add l2 b timeout 50 comment x",
		"ipset -o xml list l2", "ipset -n list", "ipset -t list", "ipset flush l", "ipset save l",
		"ipset destroy l", "ipset destroy l2", "ipset destroy a", "ipset list -n",
	} {
		p.run("", l)
	}
}

// TestIpsetSwapInUseOtherHeader: the blocklist update with a new set of
// another size (maxelem, hashsize) while rules use the old one: the rules
// stay where they were, with their counters, and match the new members.
func TestIpsetSwapInUseOtherHeader(t *testing.T) {
	p := newIpsetPair(t, "iso")
	for _, l := range []string{
		"ipset create bl hash:net hashsize 1024", "ipset add bl 198.51.100.0/24",
		"iptables -A INPUT -p tcp -m multiport --dports 22,80 -j ACCEPT",
		"iptables -A INPUT -m set --match-set bl src -j DROP",
		"iptables -A INPUT -p tcp -m set --match-set bl dst -m multiport --dports 1,2 -j REJECT",
		"iptables -A INPUT -j ACCEPT",
		"ipset create bl2 hash:net hashsize 4096 maxelem 200000", "ipset add bl2 203.0.113.0/24",
		"ipset swap bl2 bl", "ipset -t list bl", "ipset destroy bl2", "iptables -S INPUT",
		"iptables -C INPUT -m set --match-set bl src -j DROP", "ipset test bl 203.0.113.7",
	} {
		p.run("", l)
	}
	p.run("create tmp hash:net maxelem 300000\nadd tmp 198.18.0.0/16\nswap tmp bl\ndestroy tmp\n", "ipset restore")
	p.run("", "ipset -t list bl")
	p.run("", "iptables -S INPUT")
	p.run("", "ipset test bl 198.18.1.1")
	// counters stay with the rules
	p.run("*filter\n:INPUT ACCEPT [0:0]\n[7:700] -A INPUT -m set --match-set bl src -j DROP\n[3:300] -A INPUT -j ACCEPT\nCOMMIT\n", "iptables-restore -c")
	p.run("create tmp2 hash:net maxelem 400000\nadd tmp2 198.51.100.0/24\nswap tmp2 bl\ndestroy tmp2\n", "ipset restore")
	p.run("", "iptables -S INPUT -v")
}

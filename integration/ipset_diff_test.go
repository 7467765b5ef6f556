package integration

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// normIpset removes what differs between two kernels by design: hash
// seeds, memory sizes, remaining timeouts, and the unsorted member order.
func normIpset(s string) string {
	s = regexp.MustCompile(`initval 0x[0-9a-f]+`).ReplaceAllString(s, "initval X")
	s = regexp.MustCompile(`Size in memory: \d+`).ReplaceAllString(s, "Size in memory: N")
	s = regexp.MustCompile(`timeout (\d+) (packets|nomatch|comment)`).ReplaceAllString(s, "timeout T $2")
	// an element's seconds left at the end of its line too (a set's
	// default timeout, on create and Header: lines, stays)
	s = regexp.MustCompile(`(?m)^((?:add \S+ )?[^ \n]+) timeout \d+$`).ReplaceAllString(s, "$1 timeout T")
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestIpsetDifferential(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ours := filepath.Join(LinkDir(t), "ipset")
	script := []string{
		"create a hash:ip", "add a 10.0.0.1", "add a 10.0.0.1", "add a 10.0.1.1-10.0.1.2",
		"add a 1.1.1.300", "del a 9.9.9.9", "test a 10.0.0.1", "test a 10.9.9.9",
		"create n hash:net counters comment", "add n 10.0.0.5/24", "add n 10.0.0.0/33", "add n 10.0.0.0/0",
		"add n 10.2.0.0/16 nomatch", "add n 10.2.3.0/24", "test n 10.2.1.1", "test n 10.2.3.1",
		"create p hash:ip,port", "add p 10.0.0.1,80", "add p 10.0.0.1,udp:53", "add p 10.0.0.1,http",
		"add p 10.0.0.1,icmp:ping", "add p 10.0.0.1", "add p 10.0.0.1,99999",
		"create i hash:net,iface", "add i 10.0.0.0/8,eth0",
		"create s6 hash:net family inet6", "add s6 2001:db8::1/64",
		"create x hash:foo", "bogus", "swap a n", "destroy nope",
		"-s save", "-s list", "-t list n", "-n list",
	}
	ref, me := netns.New(t, "ipsref"), netns.New(t, "ipsme")
	for _, l := range script {
		args := strings.Fields(l)
		r := ref.Run("", append([]string{"ipset"}, args...)...)
		m := me.Run("", append([]string{ours}, args...)...)
		if normIpset(r.Stdout) != normIpset(m.Stdout) || r.Stderr != m.Stderr || r.RC != m.RC {
			t.Errorf("ipset %s:\nreference rc=%d\n%s%s\nours rc=%d\n%s%s", l, r.RC, r.Stdout, r.Stderr, m.RC, m.Stdout, m.Stderr)
		}
	}
}

// A restore file with an error changes nothing here (ipset itself keeps
// what came before the failing line) and names the line as ipset does.
func TestIpsetRestoreAtomic(t *testing.T) {
	netns.RequireRoot(t)
	ours := filepath.Join(LinkDir(t), "ipset")
	ns := netns.New(t, "ipsrest")
	file := "create a hash:ip\nadd a 10.0.0.1\nadd a 10.0.0.2\ncreate b hash:net\nadd b 10.0.0.0/8\nadd b 10.0.0.0/33\n"
	r := ns.Run(file, ours, "restore")
	if r.RC != 1 || r.Stderr != "ipset v7.17: Error in line 6: Syntax error: '33' is out of range 0-32\n" {
		t.Errorf("restore: rc=%d %q", r.RC, r.Stderr)
	}
	if l := ns.Run("", ours, "list", "-n"); l.Stdout != "" {
		t.Errorf("after failed restore: %q", l.Stdout)
	}
	good := "create a hash:ip\nadd a 10.0.0.1\ncreate b hash:net\nadd b 10.0.0.0/8\nadd b 10.1.0.0/16 nomatch\n"
	if r := ns.Run(good, ours, "restore"); r.RC != 0 {
		t.Fatalf("restore: %+v", r)
	}
	s := ns.Run("", ours, "-s", "save")
	want := "create a hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\nadd a 10.0.0.1\n" +
		"create b hash:net family inet hashsize 1024 maxelem 65536 bucketsize 12 initval X\nadd b 10.0.0.0/8\nadd b 10.1.0.0/16 nomatch\n"
	if got := regexp.MustCompile(`initval 0x[0-9a-f]+`).ReplaceAllString(s.Stdout, "initval X"); got != want {
		t.Errorf("save:\n%s\nwant:\n%s", got, want)
	}
}

package integration

import (
	"fmt"
	"os"
	"path/filepath"
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
//     hosts, IPv6) started, restarted, reloaded and stopped, in batch
//     mode (iptables-restore) and rule by rule with its ipset blocklists.
//
// The packages come from Debian's mirrors into moreCache, as for the
// other real clients; nothing is installed and no service starts.

const moreCache = "/var/cache/xdptables-test/moreclients"

var morePackages = []string{"arno-iptables-firewall"}

// moreStep is a step of a client run on both sides: a shell script run
// in the side's namespaces after the test's prologue.
type moreStep struct {
	name, script string
	// before, when not nil, changes the side's files first
	before func(s *dmSide) error
}

// runMoreSteps runs steps on both sides, side by side, each after
// prologue(side) in the same shell, and compares them. The reference's
// outputs and states together must hold each of want, so that a client
// that fails the same way on both sides does not pass unnoticed.
func runMoreSteps(t *testing.T, sides [2]*dmSide, withSets bool, limit time.Duration, prologue func(s *dmSide) string, steps []moreStep, want ...string) {
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
				start := time.Now()
				r := s.shFor(limit, "", prologue(s)+st.script)
				t.Logf("%s: step %q took %.1fs", s.name, st.name, time.Since(start).Seconds())
				got[i] = append(got[i], dmStep{name: st.name, result: r, calls: s.takeTrace(), state: s.state(withSets)})
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
// configuration (testdata/realclients/arno/xdpt.conf): start, status,
// force-reload of a changed blocklist, restart with its ipset
// blocklists, stop-block, stop. (Rule by rule, DISABLE_IPTABLES_BATCH,
// it makes the same rules with a thousand calls: half a minute more.)
func TestRealArnoIptablesFirewall(t *testing.T) {
	netns.RequireRoot(t)
	root := debsRoot(t, moreCache, morePackages)
	sides := newDMSides(t, "arno")
	conf := dmTestdata(t, "arno/xdpt.conf")
	for _, s := range sides {
		up := filepath.Join(s.dir, "etc-up")
		if err := os.CopyFS(filepath.Join(up, "arno-iptables-firewall"), os.DirFS(filepath.Join(root, "etc/arno-iptables-firewall"))); err != nil {
			t.Fatal(err)
		}
		if err := writeFiles(up, 0o644, map[string]string{"arno-iptables-firewall/conf.d/xdpt.conf": conf}); err != nil {
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
	steps := []moreStep{
		{name: "start", script: "$AIF start"},
		{name: "status", script: "$AIF status"},
		{name: "force-reload with more blocked hosts", before: confd("zz-block.conf", `BLOCK_HOSTS="$BLOCK_HOSTS 198.51.100.67 2001:db8:67::1"`+"\n"),
			script: "$AIF force-reload"},
		{name: "restart with ipset blocklists", before: func(s *dmSide) error {
			if err := netsets(s); err != nil {
				return err
			}
			return confd("zz-ipset.conf", "IPTABLES_IPSET=1\nBLOCK_NETSET_DIR=/etc/arno-iptables-firewall/blocklists\n")(s)
		}, script: "$AIF restart"},
		{name: "stop-block", script: "$AIF stop-block"},
		{name: "stop", script: "$AIF stop"},
	}
	runMoreSteps(t, sides, true, 150*time.Second, prologue, steps,
		"IPv4/IPv6 mixed mode selected", "-A HOST_BLOCK_SRC -s 2001:db8:66::/48 -j HOST_BLOCK_SRC_DROP",
		"-A PREROUTING -i aext -p tcp -m tcp --dport 8080 -j DNAT --to-destination 198.18.10.5:80",
		"add dropv6 2001:db8:bad::/48", "All firewall rules applied.", "FIREWALL DISABLED & BLOCKING ALL INTERNET TRAFFIC!")
}

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// headerSets is a restore file of sets of every hash type the reference
// kernel has, both families, with 0 to 50000 members, extensions,
// nomatch entries and mixed prefix lengths, all with an explicit
// initval, and bitmaps and list:sets.
func headerSets() string {
	var b strings.Builder
	v4 := func(i, stride int) string {
		a := 0xc6120000 + uint32(i*stride)
		return fmt.Sprintf("%d.%d.%d.%d", a>>24, a>>16&255, a>>8&255, a&255)
	}
	v6 := func(i, stride int) string { return fmt.Sprintf("2001:db8::%x:%x", i*stride>>16, i*stride&0xffff) }
	types := []string{"hash:ip", "hash:net", "hash:ip,port", "hash:net,port", "hash:ip,port,ip", "hash:ip,port,net", "hash:net,iface"}
	k := 0
	for _, typ := range types {
		for _, fam := range []string{"inet", "inet6"} {
			sizes := []int{0, 1, 10, 1000, 5000}
			if typ == "hash:net" || typ == "hash:ip" {
				sizes = append(sizes, 50000)
			}
			for _, n := range sizes {
				for _, opts := range []string{"", "timeout 600 counters comment skbinfo"} {
					if opts != "" && n > 1000 {
						continue
					}
					k++
					name := fmt.Sprintf("s%d", k)
					fmt.Fprintf(&b, "create %s %s family %s initval 0x%08x %s\n", name, typ, fam, 0x9e3779b9*uint32(k), opts)
					addr, host, net := v4, 32, 24
					if fam == "inet6" {
						addr, host, net = v6, 128, 120
					}
					for i := 1; i <= n; i++ {
						nb := net
						if i%3 == 0 {
							nb = host
						}
						nw := fmt.Sprintf("%s/%d", addr(i, 256), nb)
						port := fmt.Sprintf("%s:%d", []string{"tcp", "udp", "tcp"}[i%3], 1+i%999)
						e := map[string]string{
							"hash:ip": addr(i, 1), "hash:net": nw, "hash:ip,port": addr(i, 1) + "," + port,
							"hash:net,port": nw + "," + port, "hash:ip,port,ip": addr(i, 1) + "," + port + "," + addr(i%77, 5),
							"hash:ip,port,net": addr(i, 1) + "," + port + "," + nw,
							"hash:net,iface":   nw + "," + []string{"eth0", "physdev:br0", "veth1"}[i%3],
						}[typ]
						if strings.Contains(typ, "net") && i%5 == 0 {
							e += " nomatch"
						}
						if opts != "" {
							e += fmt.Sprintf(" timeout %d packets %d bytes %d skbmark 0x%x", 300+i%7, i, 64*i, i)
							if i%4 != 0 {
								e += fmt.Sprintf(" comment \"n%s\"", strings.Repeat("c", i%31))
							}
						}
						fmt.Fprintf(&b, "add %s %s\n", name, e)
					}
				}
			}
		}
	}
	b.WriteString("create b1 bitmap:ip range 198.51.100.0/24 counters\nadd b1 198.51.100.7\n" +
		"create b2 bitmap:ip,mac range 198.51.100.0/28 timeout 600 comment\nadd b2 198.51.100.1,02:00:00:00:00:01 comment \"mac\"\n" +
		"create b3 bitmap:port range 1000-3000 skbinfo\nadd b3 1234\n" +
		"create b4 bitmap:ip range 198.18.0.0/16 netmask 22\n" +
		"create l1 list:set\nadd l1 s1\nadd l1 s2\ncreate l2 list:set counters comment size 4\nadd l2 b1 comment \"first\"\n")
	return b.String()
}

// list -t and the create lines of save print, byte for byte, the
// headers ipset prints for the same sets: the hashsize its hash table
// grew to and Size in memory included.
func TestIpsetHeaderDifferential(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("ipset") {
		t.Skip("reference ipset not installed")
	}
	ours := filepath.Join(LinkDir(t), "ipset")
	ref, me := netns.New(t, "ipshdrref"), netns.New(t, "ipshdrme")
	sets := headerSets()
	if r := ref.RunTimeout(300, sets, "ipset", "restore"); r.RC != 0 {
		t.Fatalf("reference restore: %+v", r)
	}
	if m := me.RunTimeout(300, sets, ours, "restore"); m.RC != 0 {
		t.Fatalf("restore: rc=%d %s", m.RC, m.Stderr)
	}
	creates := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "create ") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	for _, args := range [][]string{{"list", "-t"}, {"save"}, {"list", "-t", "-o", "xml"}} {
		r := ref.RunTimeout(120, "", append([]string{"ipset"}, args...)...)
		m := me.RunTimeout(120, "", append([]string{ours}, args...)...)
		want, got := r.Stdout, m.Stdout
		if args[0] == "save" {
			want, got = creates(want), creates(got)
		}
		if got != want || m.RC != r.RC {
			wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
			for i := range min(len(wl), len(gl)) {
				if wl[i] != gl[i] {
					t.Errorf("ipset %s: line %d\nreference %s\nours      %s", strings.Join(args, " "), i+1, wl[i], gl[i])
					break
				}
			}
			if len(wl) != len(gl) {
				t.Errorf("ipset %s: %d lines, reference %d", strings.Join(args, " "), len(gl), len(wl))
			}
		}
	}
}

package integration

import (
	"bufio"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
)

// ctEntry matches a TCP entry the client opened, for its destination
// port, helper and zone.
var ctEntry = regexp.MustCompile(`^tcp\s+6\s+\d+ [A-Z_]+ src=` + regexp.QuoteMeta(pktClient) + ` dst=` + regexp.QuoteMeta(pktServer) + ` sport=\d+ dport=(\d+) `)

var (
	ctEntryHelper = regexp.MustCompile(` helper=(\S+)`)
	ctEntryZone   = regexp.MustCompile(` zone=(\d+)`)
)

// TestCTHelperZonePackets: CT templates in raw PREROUTING, loaded with
// the reference and with xdptables (its binary), give new connections
// the same helper and zone: --helper with --zone, a CT --zone or
// NOTRACK rule after a --helper rule (the first CT rule that matches
// decides, as its template is attached first), and a CT --zone rule
// after NOTRACK (the packet stays untracked).
func TestCTHelperZonePackets(t *testing.T) {
	netns.RequireRoot(t)
	if !netns.Have("iptables-nft") || !netns.Have("conntrack") {
		t.Skip("reference iptables-nft or conntrack is not installed")
	}
	rules := []string{
		"-p tcp --dport 2131 -j CT --helper ftp --zone 5",
		"-p tcp --dport 2132 -j CT --helper ftp",
		"-p tcp --dport 2132 -j CT --zone 6",
		"-p tcp --dport 2133 -j CT --helper ftp --zone-orig 7 --zone-reply 7",
		"-p tcp --dport 2133 -j CT --notrack",
		"-p tcp --dport 2134 -j CT --notrack",
		"-p tcp --dport 2134 -j CT --zone 8",
		"-p tcp --dport 2134 -j CT --helper ftp",
		"-p tcp --dport 2135 -j CT --zone 9",
		"-p tcp --dport 2135 -j CT --helper ftp --zone 10",
	}
	// port: "helper/zone"; 2134 untracked: no entry
	want := map[int]string{2131: "ftp/5", 2132: "ftp/0", 2133: "ftp/7", 2135: "/9"}
	tools := map[string]string{"ref": "iptables-nft", "ours": filepath.Join(LinkDir(t), "iptables")}
	got := map[string]map[int]string{}
	for _, side := range []string{"ref", "ours"} {
		p := newPktPair(t, "ctz"+side[:1])
		for _, r := range rules {
			mustRun(t, p.server, append([]string{tools[side], "-t", "raw", "-A", "PREROUTING"}, strings.Fields(r)...)...)
		}
		for port := 2131; port <= 2135; port++ {
			listenTCP(t, p.server, port)
			dialTCP(t, p.client, port, 1)
		}
		got[side] = map[int]string{}
		sc := bufio.NewScanner(strings.NewReader(mustRun(t, p.server, "conntrack", "-L", "-p", "tcp")))
		for sc.Scan() {
			l := sc.Text()
			m := ctEntry.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			port, _ := strconv.Atoi(m[1])
			helper, zone := "", "0"
			if h := ctEntryHelper.FindStringSubmatch(l); h != nil {
				helper = h[1]
			}
			if z := ctEntryZone.FindStringSubmatch(l); z != nil {
				zone = z[1]
			}
			got[side][port] = helper + "/" + zone
		}
	}
	for _, side := range []string{"ref", "ours"} {
		if fmt.Sprint(got[side]) != fmt.Sprint(want) {
			t.Errorf("%s: entries %v, want %v", side, got[side], want)
		}
	}
}

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdptables/xdptables/integration/netns"
)

// Tests of `xdptables translate`: its script, loaded with `nft -f` into a
// fresh namespace, must give the ruleset xdptables itself creates from
// the same file (compared as `nft -j list ruleset`, without comments,
// handles and the rules that need xtables extensions, which a script
// cannot hold), and the same packet verdicts.

func translateOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(LinkDir(t), "xdptables"), append([]string{"translate"}, args...)...)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	rc := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		rc = ee.ExitCode()
	}
	return so.String(), se.String(), rc
}

// nftRules lists the rules and chains of a namespace's ruleset as
// comparable JSON values: without handles and comments; dropCompat
// leaves out rules with nft_compat expressions.
func nftRules(t *testing.T, ns *netns.NS, dropCompat bool) []string {
	t.Helper()
	out := mustRun(t, ns, "nft", "-j", "list", "ruleset")
	var doc struct {
		Nftables []map[string]map[string]any `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("nft -j: %v", err)
	}
	// the order of chains (and of tables' creation) is the restore's
	// business; the order of rules within a chain is compared
	var res []string
	nth := map[string]int{}
	for _, obj := range doc.Nftables {
		for kind, v := range obj {
			if kind == "metainfo" {
				continue
			}
			delete(v, "handle")
			delete(v, "comment")
			if name, _ := v["name"].(string); kind == "map" && strings.HasPrefix(name, "rule-index") {
				continue // the rule index (ruleset/index.go): bookkeeping, not rules
			}
			if kind == "rule" {
				b, _ := json.Marshal(v["expr"])
				if dropCompat && strings.Contains(string(b), `{"xt":`) {
					continue
				}
				v["expr"] = normalizeExprs(v["expr"])
				chain, _ := v["chain"].(string)
				kind = fmt.Sprintf("rule %s %04d", chain, nth[chain])
				nth[chain]++
			}
			b, _ := json.Marshal(v)
			res = append(res, kind+" "+string(b))
		}
	}
	sort.Strings(res)
	return res
}

// normalizeExprs maps the one listing nft prints differently for the
// same test: statistic's "numgen ... < k" compares only the low byte of
// the register (listed as a prefix "k/8"); nft's text language has no
// such compare, so the script compares the whole register, which
// decides the same for modulus <= 256.
func normalizeExprs(v any) any {
	es, _ := v.([]any)
	for _, e := range es {
		m, _ := e.(map[string]any)
		match, _ := m["match"].(map[string]any)
		if match == nil {
			continue
		}
		left, _ := match["left"].(map[string]any)
		right, _ := match["right"].(map[string]any)
		if _, ok := left["numgen"]; ok && right != nil {
			if p, ok := right["prefix"].(map[string]any); ok {
				match["right"] = p["addr"]
			}
		}
	}
	return v
}

func TestTranslateLoads(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	var files []string
	for _, g := range []string{"../testdata/realworld/*.rules", "../testdata/scripts/restore/*.rules"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no restore files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			script, stderr, rc := translateOut(t, "iptables-restore", f)
			ours := netns.New(t, "trx")
			restored := ours.Run("", filepath.Join(dir, "iptables-restore"), f)
			if rc != 0 {
				// translate refuses what restore refuses, with its message
				if restored.RC == 0 {
					t.Fatalf("translate failed (rc %d: %s) where restore succeeded", rc, stderr)
				}
				t.Logf("translate: %s; restore: %s", strings.TrimSpace(stderr), strings.TrimSpace(restored.Stderr))
				return
			}
			nf := netns.New(t, "trn")
			if r := nf.Run(script, "nft", "-f", "-"); r.RC != 0 {
				if restored.RC != 0 && strings.Contains(r.Stderr, "Could not process rule") {
					// the kernel refuses a rule of the file (a native
					// nat target where its hook cannot run) as it
					// refused our restore of it
					t.Logf("both refused: restore: %s; nft -f: %s", strings.TrimSpace(restored.Stderr), strings.TrimSpace(r.Stderr))
					return
				}
				t.Fatalf("nft -f of the translation: rc %d: %s\n%s", r.RC, r.Stderr, script)
			}
			if restored.RC != 0 {
				// the kernel refuses a rule of the file (an xtables
				// target where it cannot run): only loading is checked
				t.Logf("xdptables restore fails (%s); translation loads", strings.TrimSpace(restored.Stderr))
				if !strings.Contains(script, "# uses xtables extensions") {
					t.Errorf("restore fails but the translation has no commented-out compat rule")
				}
				return
			}
			want, got := nftRules(t, ours, true), nftRules(t, nf, false)
			if !reflect.DeepEqual(want, got) {
				t.Errorf("rulesets differ\nxdptables:\n%s\ntranslation:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
			}
		})
	}
}

// translatePacketRules are checked with packets: tcp verdicts per port
// (accept, drop, reset, a set with a nomatch entry) and ping by length.
const translatePacketRules = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -s 198.18.0.1/32 -p tcp -m tcp --dport 7001 -j ACCEPT
-A INPUT -p tcp -m tcp --dport 7002 -j DROP
-A INPUT -p tcp -m tcp --dport 7003 -j REJECT --reject-with tcp-reset
-A INPUT -p tcp -m tcp --dport 7004 -m set --match-set trblk src -j DROP
-A INPUT -p tcp -m tcp --dport 7005 -m set --match-set trnet src -j DROP
-A INPUT -p tcp -m tcp --dport 7006 -m set --match-set trnet src --return-nomatch -j DROP
-A INPUT -p tcp -m tcp --dport 7007 -m set --match-set trwide src --return-nomatch -j DROP
-A INPUT -p icmp -m icmp --icmp-type 8 -m length --length 100:200 -j DROP
COMMIT
`

// trnet holds the client's /24 but the client itself is "nomatch": it
// does not match (but with --return-nomatch it does). trblk holds the
// client. trwide holds it without nomatch entries (--return-nomatch:
// no match).
const translatePacketSets = `create trblk hash:ip family inet hashsize 1024 maxelem 65536
add trblk 198.18.0.1
create trnet hash:net family inet hashsize 1024 maxelem 65536
add trnet 198.18.0.0/24
add trnet 198.18.0.1 nomatch
create trwide hash:net family inet hashsize 1024 maxelem 65536
add trwide 198.18.0.0/24
`

func TestTranslatePackets(t *testing.T) {
	netns.RequireRoot(t)
	dir := LinkDir(t)
	tmp := t.TempDir()
	rules, sets := filepath.Join(tmp, "rules"), filepath.Join(tmp, "sets")
	if err := os.WriteFile(rules, []byte(translatePacketRules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sets, []byte(translatePacketSets), 0o644); err != nil {
		t.Fatal(err)
	}
	script, stderr, rc := translateOut(t, "--ipsets", sets, "iptables-restore", rules)
	if rc != 0 {
		t.Fatalf("translate: rc %d: %s", rc, stderr)
	}
	if strings.Contains(script, "# uses xtables") || strings.Contains(script, "not translated") {
		t.Fatalf("every rule should translate natively:\n%s", script)
	}
	ours, theirs := newPktPair(t, "tx"), newPktPair(t, "tn")
	mustRun(t, ours.server, filepath.Join(dir, "ipset"), "restore", "-f", sets)
	mustRun(t, ours.server, filepath.Join(dir, "iptables-restore"), rules)
	if r := theirs.server.Run(script, "nft", "-f", "-"); r.RC != 0 {
		t.Fatalf("nft -f: %s\n%s", r.Stderr, script)
	}
	if a, b := nftRules(t, ours.server, false), nftRules(t, theirs.server, false); !reflect.DeepEqual(a, b) {
		t.Errorf("rulesets with sets differ\nxdptables:\n%s\ntranslation:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	ports := []int{7001, 7002, 7003, 7004, 7005, 7006, 7007}
	want := map[int]string{7001: "open", 7002: "timeout", 7003: "refused", 7004: "timeout", 7005: "open", 7006: "timeout", 7007: "open"}
	for _, p := range []*pktPair{ours, theirs} {
		for _, port := range ports {
			listenTCP(t, p.server, port)
		}
	}
	for _, port := range ports {
		a, b := tcpVerdict(t, ours.client, port), tcpVerdict(t, theirs.client, port)
		if a != b || a != want[port] {
			t.Errorf("port %d: xdptables %s, translation %s, want %s", port, a, b, want[port])
		}
	}
	for _, size := range []int{20, 120} {
		a := ours.client.Run("", "ping", "-c", "1", "-W", "1", "-s", strconv.Itoa(size), pktServer).RC == 0
		b := theirs.client.Run("", "ping", "-c", "1", "-W", "1", "-s", strconv.Itoa(size), pktServer).RC == 0
		if a != b || a != (size == 20) {
			t.Errorf("ping -s %d: xdptables answered %v, translation answered %v", size, a, b)
		}
	}
}

// tcpVerdict connects once: "open", "refused" or "timeout".
func tcpVerdict(t *testing.T, ns *netns.NS, port int) string {
	t.Helper()
	res := ""
	inNS(t, ns, func() {
		c, err := net.DialTimeout("tcp4", net.JoinHostPort(pktServer, strconv.Itoa(port)), time.Second)
		switch {
		case err == nil:
			c.Close()
			res = "open"
		case strings.Contains(err.Error(), "refused"):
			res = "refused"
		default:
			res = "timeout"
		}
	})
	return res
}

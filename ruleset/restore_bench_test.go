package ruleset

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/kernel"
)

// kubeRestore is a kube-proxy-like restore file of about n rules, the
// shape bench/iptables.sh restores.
func kubeRestore(n int) []byte {
	var b bytes.Buffer
	svcs := n / 10
	b.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n")
	for s := 0; s < svcs; s++ {
		fmt.Fprintf(&b, ":KUBE-SVC-%08X - [0:0]\n", s)
		for e := 0; e < 3; e++ {
			fmt.Fprintf(&b, ":KUBE-SEP-%08X%d - [0:0]\n", s, e)
		}
	}
	b.WriteString("-A INPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n")
	b.WriteString("-A FORWARD -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n")
	b.WriteString("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n")
	for s := 0; s < svcs; s++ {
		ip := fmt.Sprintf("10.%d.%d.%d", 96+s/65536, s/256%256, s%256)
		proto := "tcp"
		if s%4 == 3 {
			proto = "udp"
		}
		name := fmt.Sprintf("ns%d/svc-%d:port", s%17, s)
		fmt.Fprintf(&b, "-A KUBE-SERVICES -d %s/32 -p %s -m comment --comment \"%s cluster IP\" -m %s --dport %d -j KUBE-SVC-%08X\n", ip, proto, name, proto, 80+s%1000, s)
		for e := 0; e < 3; e++ {
			ep := fmt.Sprintf("10.%d.%d.%d", 128+s/65536, s/256%256, (s*3+e)%250+1)
			stat := ""
			if e == 0 {
				stat = " -m statistic --mode random --probability 0.33333333349"
			}
			if e == 1 {
				stat = " -m statistic --mode random --probability 0.50000000000"
			}
			fmt.Fprintf(&b, "-A KUBE-SVC-%08X -m comment --comment \"%s -> %s:8080\"%s -j KUBE-SEP-%08X%d\n", s, name, ep, stat, s, e)
			fmt.Fprintf(&b, "-A KUBE-SEP-%08X%d -s %s/32 -m comment --comment \"%s\" -j KUBE-MARK-MASQ\n", s, e, ep, name)
			fmt.Fprintf(&b, "-A KUBE-SEP-%08X%d -d %s/32 -p %s -m comment --comment \"%s\" -m %s --dport 8080 -j ACCEPT\n", s, e, ep, proto, name, proto)
		}
	}
	b.WriteString("COMMIT\n")
	return b.Bytes()
}

// benchHandler does, without a kernel, what a streamed restore does per
// rule: translate it and append it to the batch.
type benchHandler struct {
	bl    *builder
	rules int
	room  [1]preparedRule
}

func (h *benchHandler) Table(*compat.RestoreTable) error { return nil }
func (h *benchHandler) Chain(t *compat.RestoreTable, d compat.ChainDecl) error {
	h.bl.b.AddChain(h.bl.fam, t.Name+"."+d.Name, kernel.ChainSpec{Exclusive: true})
	return nil
}
func (h *benchHandler) Command(t *compat.RestoreTable, rc compat.RestoreCmd) error {
	// as restoreHandler.prepare and appendRule do
	pre := prepareRules(t.Name, rc.Cmd, rc.Line, h.room[:0])
	for i, r := range rc.Cmd.Rules {
		p := &pre[i]
		if p.err != nil {
			return p.err
		}
		h.bl.note(h.bl.b.AppendRule(h.bl.fam, t.Name+"."+rc.Cmd.Chain, p.spec), rc.Cmd.Chain, rc.Line)
		p.putEncoded()
		if strings.HasPrefix(rc.Cmd.Chain, "KUBE-SERVICES") {
			indexKey(rc.Cmd.Chain, ruleKeyTextExact(r, p.exact))
		}
		h.rules++
	}
	return nil
}
func (h *benchHandler) Commit(*compat.RestoreTable) error { return nil }

// BenchmarkRestorePipeline measures a restore's userspace work per rule
// (parse, translate, userdata and digest, batch encoding).
func BenchmarkRestorePipeline(b *testing.B) {
	in := kubeRestore(10000)
	b.ReportAllocs()
	rules := 0
	for b.Loop() {
		h := &benchHandler{bl: &builder{b: kernel.NewBatch(), fam: kernel.IPv4, family: compat.IPv4}}
		h.bl.b.Grow(len(in)*6, 20000)
		if err := compat.ParseRestoreFunc(bytes.NewReader(in), compat.RestoreOptions{Family: compat.IPv4, Prog: "iptables-restore"}, h); err != nil {
			b.Fatal(err)
		}
		rules = h.rules
		h.bl.b.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rules), "ns/rule")
}

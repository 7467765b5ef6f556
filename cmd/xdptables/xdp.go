package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/xdptables/xdptables/compat"
	"github.com/xdptables/xdptables/xdp"
)

// xdpConfig is the attach policy file. Format, one directive a line,
// '#' starts a comment:
//
//	attach IFACE [native|generic|auto]
//
// `xdptables xdp apply` attaches every listed interface not yet attached
// (mode auto when none is given).
const xdpConfig = "/etc/xdptables/xdptables.conf"

const xdpUsage = `Usage: xdptables xdp COMMAND
  attach IFACE [--mode native|generic|auto]  run the raw PREROUTING fast path on IFACE
  detach IFACE                               remove it from IFACE
  apply [--config FILE]                      attach the interfaces the config file lists
  sync                                       recompile from the current rules
  status                                     interfaces, rules in XDP, counters
`

func xdpMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, xdpUsage)
		return 2
	}
	fs := pflag.NewFlagSet("xdp", pflag.ContinueOnError)
	mode := fs.String("mode", "auto", "attach mode: native, generic or auto")
	config := fs.String("config", xdpConfig, "attach policy file")
	fs.Usage = func() { fmt.Fprint(os.Stderr, xdpUsage) }
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	m, err := xdp.Open()
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	defer m.Close()
	m.CollectDeparted()
	switch args[0] {
	case "attach":
		if fs.NArg() != 1 {
			fs.Usage()
			return 2
		}
		return xdpAttach(m, fs.Arg(0), xdp.Mode(*mode))
	case "detach":
		if fs.NArg() != 1 {
			fs.Usage()
			return 2
		}
		if err := m.Detach(fs.Arg(0)); err != nil {
			errorf("xdptables: %v\n", err)
			return 1
		}
		return 0
	case "apply":
		return xdpApply(m, *config)
	case "sync":
		_, _, in, err := rawPrerouting()
		if err == nil {
			err = m.Update(in)
		}
		if err != nil {
			errorf("xdptables: %v\n", err)
			return 1
		}
		return 0
	case "status":
		return xdpStatus(m)
	}
	fs.Usage()
	return 2
}

// rawPrerouting reads the raw PREROUTING rules of both families (with
// their nftables counters only) and the input of a generation, through
// the socket that main releases at exit.
func rawPrerouting() (v4, v6 []*compat.Rule, in *xdp.Input, err error) {
	conn, err := lookupConn()
	if err != nil {
		return nil, nil, nil, compat.Errorf(compat.StatusResource, "Could not fetch rule set generation id: Permission denied (you must be root)")
	}
	in, err = xdpInput(conn, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return in.V4, in.V6, in, nil
}

func xdpAttach(m *xdp.Manager, ifname string, mode xdp.Mode) int {
	_, _, in, err := rawPrerouting()
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	used, err := m.Attach(ifname, mode, in)
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	if mode == xdp.ModeAuto && used == xdp.ModeGeneric {
		errorf("xdptables: %s: native XDP unavailable, fell back to generic mode\n", ifname)
	}
	return 0
}

func xdpApply(m *xdp.Manager, path string) int {
	f, err := os.Open(path)
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	defer f.Close()
	st, err := m.State()
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	attached := map[string]bool{}
	for _, l := range st.Links {
		attached[l.Name] = true
	}
	rc := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		if w[0] != "attach" || len(w) < 2 || len(w) > 3 {
			errorf("xdptables: %s:%d: expected \"attach IFACE [MODE]\"\n", path, n)
			return 2
		}
		if attached[w[1]] {
			continue
		}
		mode := xdp.ModeAuto
		if len(w) == 3 {
			mode = xdp.Mode(w[2])
		}
		if r := xdpAttach(m, w[1], mode); r != 0 {
			rc = r
		}
	}
	return rc
}

func xdpStatus(m *xdp.Manager) int {
	st, err := m.State()
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	if len(st.Links) == 0 {
		fmt.Println("XDP fast path: not attached (nftables alone protects every interface)")
		return 0
	}
	for _, l := range st.SortedLinks() {
		fmt.Printf("interface %s (ifindex %d): %s\n", l.Name, l.Ifindex, l.Mode)
	}
	if len(st.Sets) > 0 {
		fmt.Printf("ipset sets mirrored in XDP maps: %s\n", strings.Join(st.Sets, ", "))
	}
	v4, v6, _, err := rawPrerouting()
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	counts, err := m.SlotCounters(st)
	if err != nil {
		errorf("xdptables: %v\n", err)
		return 1
	}
	for _, f := range []struct {
		fam   compat.Family
		run   int
		rules []*compat.Rule
		stop  *xdp.Stop
	}{{compat.IPv4, st.Run4, v4, st.Stop4}, {compat.IPv6, st.Run6, v6, st.Stop6}} {
		fmt.Printf("%s raw PREROUTING: %d of %d rules in XDP\n", f.fam.Prog(), f.run, len(f.rules))
		if f.stop != nil {
			fmt.Printf("  run ends at rule %d: %s\n", f.stop.Pos+1, f.stop.Reason)
		}
		fmt.Printf("  %-4s %10s %12s %10s %12s  %s\n", "num", "xdp-pkts", "xdp-bytes", "nft-pkts", "nft-bytes", "rule")
		for _, r := range st.Rules {
			if r.Family != f.fam {
				continue
			}
			c := counts[r.Slot]
			var nft compat.Counters
			if r.Pos < len(f.rules) && f.rules[r.Pos].Counters != nil {
				nft = *f.rules[r.Pos].Counters
			}
			fmt.Printf("  %-4d %10d %12d %10d %12d  %s\n", r.Pos+1, c.Packets, c.Bytes, nft.Packets, nft.Bytes, r.Spec)
		}
	}
	if st.Paused {
		if by := xdp.PausedBy(st); len(by) > 0 {
			errorf("xdptables: XDP fast path paused: process %d is committing a change of the rules; every packet passes to nftables until it has updated XDP\n", by[0].PID)
			return 1
		}
		errorf("xdptables: XDP fast path paused: a command that changed the rules did not finish; every packet passes to nftables until the next update (`xdptables xdp sync`)\n")
		return 1
	}
	if msg := outOfStep(st, v4, v6); msg != "" {
		errorf("xdptables: %s\n", msg)
		return 1
	}
	return 0
}

// outOfStep compares the run compiled into XDP with the raw PREROUTING
// rules nftables holds now. Our own commands keep them in step; a change
// by another tool (`nft flush ruleset`, `nft delete table ...`) leaves XDP
// dropping for rules that nftables no longer has, which is what it says.
func outOfStep(st *xdp.State, v4, v6 []*compat.Rule) string {
	for _, r := range st.Rules {
		rules := v4
		if r.Family == compat.IPv6 {
			rules = v6
		}
		if r.Pos >= len(rules) || strings.TrimSpace(compat.ExactSpec(rules[r.Pos])) != r.Spec {
			return fmt.Sprintf("XDP is out of step with nftables: it runs %q as %s raw PREROUTING rule %d, which nftables no longer has "+
				"(changed by another tool, e.g. `nft flush ruleset`?); `xdptables xdp sync` recompiles XDP from the current rules, "+
				"restoring the saved ruleset repairs both", r.Spec, r.Family.Prog(), r.Pos+1)
		}
	}
	return ""
}

package ipset

import (
	"strings"
	"testing"
)

// run executes parsed commands against a fresh State as setengine does
// (minus the kernel), printing list/save and building the nftables sets.
func fuzzRun(t *testing.T, cmds []*Command) {
	st := &State{}
	for _, c := range cmds {
		var b strings.Builder
		switch c.Op {
		case OpList, OpSave:
			if sets, err := st.Select(c); err == nil {
				st.Write(&b, c, sets)
			}
		default:
			if _, err := st.Exec(c); err != nil {
				if err.Msg == "" {
					t.Fatalf("empty error message for %v %q", c.Op, c.Args)
				}
			}
		}
	}
	for _, s := range st.Sets {
		if s.Supported() != nil {
			continue
		}
		for _, ns := range s.NftSets() {
			for _, el := range ns.Elems {
				for _, p := range el.Parts {
					if d, ok := s.DecodeEntry(p); ok && d == nil {
						t.Fatal("nil entry")
					}
				}
			}
		}
		if _, ok := ParseHeader(LookupSetName(s.Name), s.Header()); !ok {
			t.Fatalf("header of %s does not read back: %q", s.Name, s.Header())
		}
	}
}

func FuzzIpsetRestore(f *testing.F) {
	for _, s := range []string{
		"create a hash:ip\nadd a 10.0.0.1\nadd a 10.0.1.1-10.0.1.9\n",
		"create n hash:net counters comment\nadd n 10.0.0.0/8\nadd n 10.1.0.0/16 nomatch\nadd n 10.1.2.0/24 comment \"x y\"\n",
		"create p hash:ip,port timeout 100\nadd p 10.0.0.1,tcp:80-90 timeout 5\nadd p 10.0.0.1,icmp:ping\n",
		"create i hash:net,iface\nadd i 10.0.0.0/8,physdev:eth0\ncreate s6 hash:net family inet6\nadd s6 2001:db8::/64\n",
		"create b bitmap:ip range 10.0.0.0/24\nadd b 10.0.0.5\ncreate bp bitmap:port range 1-1024\nadd bp 22\n",
		"create l list:set\ncreate x hash:ip\nadd l x\nswap x x\nrename x y\ndestroy\n",
		"create pn hash:ip,port,net\nadd pn 10.0.0.1,udp:53,10.0.0.0/24 nomatch\ntest pn 10.0.0.1,udp:53,10.0.0.9\nlist\nsave\n",
		"# comment\n\nCOMMIT\ncreate m hash:mac\nadd m 00:11:22:33:44:55\nflush m\n",
		"create w hash:net,iface\nadd w 10.0.0.0/8,eth0 nomatch\nadd w 10.0.0.0/8,eth wildcard\nadd w 10.0.0.0/16,physdev: wildcard\ndel w 10.0.0.0/8,eth1\nsave\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		cmds, err := ParseRestore(text)
		if err != nil {
			_ = Format(err)
			return
		}
		fuzzRun(t, cmds)
	})
}

func FuzzIpsetCommand(f *testing.F) {
	for _, s := range []string{
		"create a hash:ip family inet6 hashsize 100 maxelem 5 timeout 0",
		"-exist add a 10.0.0.0/30 timeout 10 comment c",
		"-o xml -t list a",
		"-! del a 1.1.1.300",
		"test n 10.0.0.0/33",
		"create b bitmap:ip,mac range 10.0.0.0-10.0.0.255",
		"add p 10.0.0.1,99999",
		"-q -s -r -n list",
		"help hash:ip",
		"-f",
	} {
		f.Add("create a hash:ip\ncreate n hash:net\ncreate p hash:ip,port", s)
	}
	f.Fuzz(func(t *testing.T, setup, line string) {
		if len(setup) > 2048 || len(line) > 512 {
			return
		}
		var cmds []*Command
		if pre, err := ParseRestore(setup); err == nil {
			cmds = pre
		}
		c, err := ParseArgs(strings.Fields(line))
		if err != nil {
			_ = Format(err)
			return
		}
		if c.Op == OpRestore || c.Op == OpVersion || c.Op == OpHelp || c.Op == OpQuit || c.Op == OpInteractive {
			if c.Op == OpHelp {
				_ = Help()
			}
			return
		}
		fuzzRun(t, append(cmds, c))
	})
}

package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestPacketsU32: -m u32 reads the UDP payload's first word through the
// header length ("0>>22&0x3C@8") and the protocol byte; the counters
// agree with the reference.
func TestPacketsU32(t *testing.T) {
	tools := pktTools(t)
	rules := []string{
		`-A INPUT -p udp -m u32 --u32 "0>>22&0x3C@8=0x12345678"`,
		`-A INPUT -p udp -m u32 ! --u32 "0>>22&0x3C@8=0x12345678"`,
		`-A INPUT -m u32 --u32 "6&0xFF=17&&0>>22&0x3C@0&0xFFFF=9"`,
		`-A INPUT -m u32 --u32 "0>>22&0x3C@8=0x1000000:0x12345677"`,
	}
	got := map[string]string{}
	for _, label := range []string{"ref", "ours"} {
		p := newPktPair(t, "u3"+label[:1])
		loadRules(t, p.server, tools[label], rules)
		mustRun(t, p.client, "bash", "-c", `printf '\x12\x34\x56\x78' > /dev/udp/`+pktServer+`/9; printf '\x12\x34\x56\x77' > /dev/udp/`+pktServer+`/9; printf 'abcd' > /dev/udp/`+pktServer+`/10`)
		time.Sleep(100 * time.Millisecond)
		got[label] = fmt.Sprint(ruleCounters(t, p.server, tools[label], "filter", "INPUT"))
	}
	if got["ref"] != got["ours"] {
		t.Errorf("counters: reference %s, xdptables %s", got["ref"], got["ours"])
	}
	if want := "[1 2 2 1]"; got["ours"] != want {
		t.Errorf("counters %s, want %s", got["ours"], want)
	}
}

package ruleset

import "testing"

func TestStreamableSections(t *testing.T) {
	input := []byte("# x\n*raw\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j DROP\nCOMMIT\n" +
		"*filter\n:INPUT ACCEPT [0:0]\n[1:2] -A INPUT -j ACCEPT\n-N web\n-I INPUT -j web\nCOMMIT\n" +
		"*nat\n-A POSTROUTING -j ACCEPT\nCOMMIT\n*nat\n-A POSTROUTING -j RETURN\nCOMMIT\n" +
		"*mangle\n--append PREROUTING -j ACCEPT\n[3:4]-A PREROUTING -j ACCEPT\nCOMMIT\n")
	got := streamableSections(input, RestoreOptions{})
	want := map[int]bool{2: true, 18: true} // raw and mangle; filter has -I, nat comes twice
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for l := range want {
		if !got[l] {
			t.Errorf("section at line %d should stream: %v", l, got)
		}
	}
	if len(streamableSections(input, RestoreOptions{Noflush: true})) != 0 {
		t.Error("--noflush sections must not stream")
	}
}

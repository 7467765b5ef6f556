package compat

import (
	"strings"
	"testing"
)

// TestProbeLoad: an extension that always runs as its xtables match or
// target is asked for in the kernel once per process and family; a
// kernel without it gets xtables' notice before any parse error, one
// that has it (or a kernel that cannot be asked) none.
func TestProbeLoad(t *testing.T) {
	old := KernelHasXt
	defer func() { KernelHasXt = old }()
	type ask struct {
		f      Family
		name   string
		target bool
	}
	var asked []ask
	KernelHasXt = func(f Family, name string, rev uint32, target bool) (bool, bool) {
		asked = append(asked, ask{f, name, target})
		switch name {
		case "ipvs", "LED":
			return false, true
		}
		return false, false
	}
	for _, k := range []string{"ipvs/2", "ipvs/10", "LED/2", "LED/10"} {
		loadWarned.Delete(k)
	}
	var warns []string
	o := ParseOptions{Warn: func(s string) { warns = append(warns, s) }}
	_, err := Parse(IPv4, strings.Fields("-A INPUT -m ipvs --bogus"), o)
	if err == nil || !strings.Contains(err.Error(), `unknown option "--bogus"`) {
		t.Fatalf("err %v", err)
	}
	for _, args := range []string{"-A INPUT -m ipvs --ipvs -m ipvs ! --ipvs", "-C INPUT -j LED --led-trigger-id x", "-A INPUT -j LED --led-trigger-id y"} {
		if _, err := Parse(IPv4, strings.Fields(args), o); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
	}
	if _, err := Parse(IPv6, strings.Fields("-A INPUT -m ipvs --ipvs"), o); err != nil {
		t.Fatal(err)
	}
	// not xt-only: never asked
	if _, err := Parse(IPv4, strings.Fields("-A INPUT -p tcp --dport 22 -j ACCEPT"), o); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Warning: Extension ipvs revision 0 not supported, missing kernel module?\n",
		"Warning: Extension LED revision 0 not supported, missing kernel module?\n",
		"Warning: Extension ipvs revision 0 not supported, missing kernel module?\n",
	}
	if strings.Join(warns, "") != strings.Join(want, "") {
		t.Errorf("warnings %q, want %q", warns, want)
	}
	wantAsked := []ask{{IPv4, "ipvs", false}, {IPv4, "LED", true}, {IPv6, "ipvs", false}}
	if len(asked) != len(wantAsked) {
		t.Fatalf("asked %v, want %v", asked, wantAsked)
	}
	for i := range asked {
		if asked[i] != wantAsked[i] {
			t.Errorf("asked %v, want %v", asked, wantAsked)
		}
	}
}

package kernel

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCtHelperObjects(t *testing.T) {
	c, ns := newNS(t)
	ftp := CtHelper{Name: "ct-helper.ftp.6", Helper: "ftp", L4Proto: unix.IPPROTO_TCP}
	b := NewBatch()
	b.AddTable(IPv4)
	b.AddCtHelper(IPv4, ftp, true)
	commit(t, c, b)
	if got, err := c.CtHelpers(IPv4); err != nil || len(got) != 1 || got[0] != ftp {
		t.Fatalf("CtHelpers: %v %v, want [%v]", got, err, ftp)
	}
	if got, err := c.CtHelpers(IPv6); err != nil || len(got) != 0 {
		t.Fatalf("CtHelpers(IPv6): %v %v, want none", got, err)
	}
	out := nft(t, ns, "list", "ruleset")
	if !strings.Contains(out, "ct helper ct-helper.ftp.6 {") || !strings.Contains(out, `type "ftp" protocol tcp`) || !strings.Contains(out, "l3proto ip") {
		t.Errorf("nft shows:\n%s", out)
	}
	// adding it again leaves it alone
	b = NewBatch()
	b.AddCtHelper(IPv4, ftp, false)
	commit(t, c, b)
	// helpers the kernel does not have for the protocol fail with ENOENT
	for _, o := range []CtHelper{
		{Name: "ct-helper.nosuch.6", Helper: "nosuch", L4Proto: unix.IPPROTO_TCP},
		{Name: "ct-helper.ftp.17", Helper: "ftp", L4Proto: unix.IPPROTO_UDP},
		{Name: "ct-helper.ftp.0", Helper: "ftp", L4Proto: 0},
	} {
		gen, err := c.GenID()
		if err != nil {
			t.Fatal(err)
		}
		b = NewBatch()
		b.AddTable(IPv4)
		idx := b.AddCtHelper(IPv4, o, true)
		err = c.Commit(b, gen)
		var oe *OpError
		if !errors.As(err, &oe) || oe.Index != idx || oe.Errno != unix.ENOENT || oe.Op.Kind != OpObjAdd || oe.Op.Obj != o.Name {
			t.Errorf("%v: got %v, want ENOENT at OBJ_ADD %d", o, err, idx)
		}
	}
	b = NewBatch()
	b.DelCtHelper(IPv4, ftp.Name)
	commit(t, c, b)
	if got, err := c.CtHelpers(IPv4); err != nil || len(got) != 0 {
		t.Fatalf("CtHelpers after delete: %v %v", got, err)
	}
	gen, err := c.GenID()
	if err != nil {
		t.Fatal(err)
	}
	b = NewBatch()
	b.DelCtHelper(IPv4, ftp.Name)
	if err := c.Commit(b, gen); !errors.Is(err, unix.ENOENT) {
		t.Errorf("deleting a missing object: %v, want ENOENT", err)
	}
}

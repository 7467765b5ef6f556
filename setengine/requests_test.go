package setengine

import (
	"os"
	"testing"

	"github.com/xdptables/xdptables/integration/netns"
	"github.com/xdptables/xdptables/ipset"
	"github.com/xdptables/xdptables/kernel"
)

// TestSingleCommandRequests: the round trips a single add, del or test
// takes on a set of a few elements. A test only reads: the set's header
// and the element, no generation.
func TestSingleCommandRequests(t *testing.T) {
	ns := netns.New(t, "setreq")
	f, err := os.Open("/run/netns/" + ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := kernel.Open(kernel.WithNetNS(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &Engine{Conn: c}
	run := func(args ...string) {
		t.Helper()
		cmd, perr := ipset.ParseArgs(args)
		if perr != nil {
			t.Fatal(perr)
		}
		if _, err := e.Run([]*ipset.Command{cmd}); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	run("create", "nets", "hash:net")
	run("create", "hosts", "hash:ip")
	run("add", "nets", "198.18.0.0/24")
	run("add", "hosts", "198.51.100.1")
	for _, c0 := range []struct {
		args []string
		want int
	}{
		{[]string{"test", "nets", "198.18.0.1"}, 2},
		{[]string{"test", "hosts", "198.51.100.1"}, 2},
	} {
		before := c.Requests()
		run(c0.args...)
		if got := c.Requests() - before; got != c0.want {
			t.Errorf("%v: %d requests, want %d", c0.args, got, c0.want)
		}
	}
}

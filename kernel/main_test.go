package kernel

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain lets this test binary stand in for the keeper startKeeper
// starts (it runs /proc/self/exe): it writes the numbers of its open
// descriptors to its descriptor 3 and exits.
func TestMain(m *testing.M) {
	if IsReleaseKeeper(os.Args) {
		ents, _ := os.ReadDir("/proc/self/fd")
		var open []string
		for _, e := range ents {
			open = append(open, e.Name())
		}
		unix.Write(3, []byte(strings.Join(open, " ")))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The keeper gets the descriptors it is to keep and none of those this
// process inherited open across exec: a caller reading such a pipe to EOF
// waited for the keeper, that is for a whole loop of commands.
func TestKeeperGetsOnlyItsSockets(t *testing.T) {
	var p, q [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	if err := unix.Pipe2(q[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(q[0])
	// q's write end as a caller's pipe inherited at a high number
	const inherited = 200
	if err := unix.Dup2(q[1], inherited); err != nil {
		t.Fatal(err)
	}
	unix.Close(q[1])
	startKeeper([]int{p[1]})
	unix.Close(p[1])
	unix.Close(inherited)
	buf := make([]byte, 4096)
	n, err := unix.Read(p[0], buf)
	if err != nil || n == 0 {
		t.Fatalf("no report from the keeper (%d bytes, %v)", n, err)
	}
	fds := " " + string(buf[:n]) + " "
	if !strings.Contains(fds, " 3 ") {
		t.Errorf("keeper's descriptors %q: no 3", fds)
	}
	if strings.Contains(fds, " "+strconv.Itoa(inherited)+" ") {
		t.Errorf("keeper's descriptors %q: has the inherited %d", fds, inherited)
	}
	// the caller's pipe ends when this process closes its end
	if n, err := unix.Read(q[0], buf); n != 0 || err != nil {
		t.Errorf("caller's pipe: read %d, %v; want EOF", n, err)
	}
}

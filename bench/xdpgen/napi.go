package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The netdev generic netlink family (include/uapi/linux/netdev.h).
const (
	netdevCmdNapiGet = 11
	napiAttrIfindex  = 1
	napiAttrID       = 2
	napiAttrPID      = 4
)

// napi turns on threaded NAPI for -iface (so its receive work runs in
// kernel threads "napi/DEV-ID" instead of the softirq of the CPU that
// queued the frames) and pins each of its NAPI threads to -cpu. It
// prints "pids=P[,P...]": the threads whose CPU time is the receive
// path's cost.
func napi(args []string) error {
	fs := flag.NewFlagSet("napi", flag.ExitOnError)
	ifname := fs.String("iface", "", "device")
	cpu := fs.Int("cpu", 1, "CPU to pin the NAPI threads to")
	fs.Parse(args)
	ifc, err := net.InterfaceByName(*ifname)
	if err != nil {
		return err
	}
	if err := os.WriteFile("/sys/class/net/"+ifc.Name+"/threaded", []byte("1"), 0); err != nil {
		return fmt.Errorf("threaded NAPI on %s: %w", ifc.Name, err)
	}
	threads, err := napiThreads(ifc.Index)
	if err != nil {
		return err
	}
	if len(threads) == 0 {
		return fmt.Errorf("%s has no NAPI thread (is its NAPI on: native XDP or GRO?)", ifc.Name)
	}
	var set unix.CPUSet
	set.Set(*cpu)
	var pids []string
	for id, pid := range threads {
		// the thread must be one the kernel named after this device
		// (the NAPI id in its name is the one it was started for: a
		// NAPI instance added again keeps its thread)
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(string(comm)); !strings.HasPrefix(got, "napi/"+ifc.Name+"-") {
			return fmt.Errorf("NAPI %d of %s: thread %d is %q, not a NAPI thread of %s", id, ifc.Name, pid, got, ifc.Name)
		}
		if err := unix.SchedSetaffinity(int(pid), &set); err != nil {
			return fmt.Errorf("pinning NAPI thread %d to CPU %d: %w", pid, *cpu, err)
		}
		pids = append(pids, strconv.Itoa(int(pid)))
	}
	fmt.Printf("pids=%s\n", strings.Join(pids, ","))
	return nil
}

// napiThreads maps the NAPI instances of ifindex to their threads' pids
// (netdev family, NAPI_GET dump).
func napiThreads(ifindex int) (map[uint32]uint32, error) {
	c, err := netlink.Dial(unix.NETLINK_GENERIC, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	family, err := genlFamily(c, "netdev")
	if err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(napiAttrIfindex, uint32(ifindex))
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(family), Flags: netlink.Request | netlink.Dump},
		Data:   append([]byte{netdevCmdNapiGet, 1, 0, 0}, attrs...),
	})
	if err != nil {
		return nil, fmt.Errorf("netdev NAPI_GET: %w", err)
	}
	threads := map[uint32]uint32{}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return nil, err
		}
		var idx, id, pid uint32
		for ad.Next() {
			switch ad.Type() {
			case napiAttrIfindex:
				idx = ad.Uint32()
			case napiAttrID:
				id = ad.Uint32()
			case napiAttrPID:
				pid = ad.Uint32()
			}
		}
		if err := ad.Err(); err != nil {
			return nil, err
		}
		if int(idx) == ifindex && pid != 0 {
			threads[id] = pid
		}
	}
	return threads, nil
}

// genlFamily resolves a generic netlink family name to its id.
func genlFamily(c *netlink.Conn, name string) (uint16, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, name)
	attrs, err := ae.Encode()
	if err != nil {
		return 0, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.GENL_ID_CTRL, Flags: netlink.Request},
		Data:   append([]byte{unix.CTRL_CMD_GETFAMILY, 1, 0, 0}, attrs...),
	})
	if err != nil {
		return 0, fmt.Errorf("generic netlink family %s: %w", name, err)
	}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		attrs, err := netlink.UnmarshalAttributes(m.Data[4:])
		if err != nil {
			return 0, err
		}
		for _, a := range attrs {
			if a.Type == unix.CTRL_ATTR_FAMILY_ID && len(a.Data) >= 2 {
				return binary.NativeEndian.Uint16(a.Data), nil
			}
		}
	}
	return 0, fmt.Errorf("generic netlink family %s not found", name)
}

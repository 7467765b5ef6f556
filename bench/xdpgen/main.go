// Command xdpgen is the traffic side of bench/xdp-traffic.sh (root): it
// floods a veth pair with 64-byte UDP/IPv4 frames from many sources, and
// attaches the trivial XDP programs the benchmark compares against.
//
//	xdpgen send -iface veth1 -dst-mac MAC -src 198.18.0.0 -sources 65536 -dst 198.51.100.1 -n 4000000
//	xdpgen attach -iface veth0 -prog drop|read|pass -mode native|generic -pin FILE
//	xdpgen gro -iface veth0
//	xdpgen napi -iface veth0 -cpu 1
//
// send runs a small XDP program in live-frame mode (BPF_PROG_RUN with
// BPF_F_TEST_XDP_LIVE_FRAMES): each run rewrites the source address
// (cycling through -sources addresses) and the IPv4 header checksum, and
// redirects the frame out of -iface, so it arrives on the veth peer as
// if received. No kernel module (pktgen) is needed. It prints
// "frames=N ns=ELAPSED" for the frames handed to the device.
//
// A veth receives redirected frames only while its NAPI is on: with an
// XDP program attached in native mode, or with GRO enabled; gro turns
// GRO on (ETHTOOL_SGRO) for the cases without a native program.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2:])
	case "attach":
		err = attach(os.Args[2:])
	case "gro":
		err = gro(os.Args[2:])
	case "napi":
		err = napi(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "xdpgen:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: xdpgen send|attach|gro|napi [flags] (see the source)")
	os.Exit(2)
}

// frame is a 60-byte Ethernet frame (64 with the FCS): IPv4, UDP, 18
// bytes of payload, UDP checksum 0 (none).
func frame(dstMAC, srcMAC net.HardwareAddr, src, dst netip.Addr, sport, dport uint16) []byte {
	f := make([]byte, 60)
	copy(f[0:6], dstMAC)
	copy(f[6:12], srcMAC)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 46)
	ip[6] = 0x40 // DF
	ip[8] = 64
	ip[9] = 17
	s, d := src.As4(), dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum16(ip)))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], 26)
	return f
}

func sum16(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	return s
}

func fold(s uint32) uint16 {
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}

// genProg rewrites the low 16 bits of the source address to the next
// value of a counter masked with mask, fixes the header checksum
// (base: the header's 16-bit sum without checksum and that word) and
// redirects to ifindex.
func genProg(counter *ebpf.Map, mask uint32, base uint32, ifindex int) (*ebpf.Program, error) {
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R8, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 34),
		asm.JGT.Reg(asm.R2, asm.R8, "abort"),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, counter.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "abort"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.Add.Imm(asm.R2, 1),
		asm.StoreMem(asm.R0, 0, asm.R2, asm.Word),
		asm.And.Imm(asm.R1, int32(mask)),
		// checksum: ~fold(base + x)
		asm.Mov.Imm(asm.R3, int32(base)),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.Mov.Reg(asm.R4, asm.R3),
		asm.RSh.Imm(asm.R4, 16),
		asm.And.Imm(asm.R3, 0xffff),
		asm.Add.Reg(asm.R3, asm.R4),
		asm.Mov.Reg(asm.R4, asm.R3),
		asm.RSh.Imm(asm.R4, 16),
		asm.And.Imm(asm.R3, 0xffff),
		asm.Add.Reg(asm.R3, asm.R4),
		asm.Xor.Imm(asm.R3, 0xffff),
		asm.HostTo(asm.BE, asm.R3, asm.Half),
		asm.StoreMem(asm.R7, 14+10, asm.R3, asm.Half),
		asm.HostTo(asm.BE, asm.R1, asm.Half),
		asm.StoreMem(asm.R7, 14+14, asm.R1, asm.Half),
		asm.Mov.Imm(asm.R1, int32(ifindex)),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("abort"), // XDP_ABORTED
		asm.Return(),
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: insns})
}

func pinCPU(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	ifname := fs.String("iface", "", "device to send from (its veth peer receives)")
	dstMAC := fs.String("dst-mac", "", "destination MAC (the receiving device's)")
	srcS := fs.String("src", "198.18.0.0", "first source address (low 16 bits zero)")
	sources := fs.Int("sources", 65536, "number of sources, a power of two up to 65536")
	dstS := fs.String("dst", "198.51.100.1", "destination address")
	dport := fs.Uint("dport", 9, "UDP destination port")
	n := fs.Uint64("n", 1_000_000, "frames to send")
	cpu := fs.Int("cpu", 0, "CPU to run on (the receiver's softirq work runs there too)")
	maxTime := fs.Duration("max-time", 5*time.Second, "stop after about this long")
	first := fs.Uint64("chunk", 4096, "frames in the first run (later runs grow)")
	fs.Parse(args)
	ifc, err := net.InterfaceByName(*ifname)
	if err != nil {
		return err
	}
	dm, err := net.ParseMAC(*dstMAC)
	if err != nil {
		return err
	}
	src, err := netip.ParseAddr(*srcS)
	if err != nil || !src.Is4() || src.As4()[2] != 0 || src.As4()[3] != 0 {
		return fmt.Errorf("bad -src %q: need an IPv4 address with the low 16 bits zero", *srcS)
	}
	dst, err := netip.ParseAddr(*dstS)
	if err != nil || !dst.Is4() {
		return fmt.Errorf("bad -dst %q", *dstS)
	}
	if *sources < 1 || *sources > 65536 || *sources&(*sources-1) != 0 {
		return fmt.Errorf("-sources must be a power of two up to 65536")
	}
	f := frame(dm, ifc.HardwareAddr, src, dst, 1024, uint16(*dport))
	hdr := append([]byte(nil), f[14:34]...)
	binary.BigEndian.PutUint16(hdr[10:], 0)
	binary.BigEndian.PutUint16(hdr[14:], 0)
	counter, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return err
	}
	defer counter.Close()
	prog, err := genProg(counter, uint32(*sources-1), sum16(hdr), ifc.Index)
	if err != nil {
		return fmt.Errorf("loading the generator: %w", err)
	}
	defer prog.Close()
	if err := pinCPU(*cpu); err != nil {
		return err
	}
	// Chunks grow from -chunk frames (small: a slow receiver on this
	// CPU then stops the run close to -max-time) while one takes under
	// 250 ms: every run sets up and tears down the live-frame page pool,
	// and the teardown waits for an RCU grace period (up to ~100 ms on
	// the benchmark VM, the thread sleeping, the receiver idle), which
	// small chunks would pay again and again.
	chunk := max(*first, 1)
	var sent uint64
	cpu0, err := threadCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(*maxTime)
	for sent < *n && time.Now().Before(deadline) {
		k := min(*n-sent, chunk)
		t := time.Now()
		_, err := prog.Run(&ebpf.RunOptions{Data: f, Repeat: uint32(k), Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
		if err != nil {
			return fmt.Errorf("live-frame run: %w", err)
		}
		sent += k
		if time.Since(t) < 250*time.Millisecond && chunk < 1<<24 {
			chunk *= 4
		}
	}
	elapsed := time.Since(start)
	cpu1, err := threadCPU()
	if err != nil {
		return err
	}
	fmt.Printf("frames=%d ns=%d cpu=%d\n", sent, elapsed.Nanoseconds(), cpu1-cpu0)
	return nil
}

// threadCPU is the CPU time of the calling thread in ns: the live-frame
// runs and, when the kernel charges softirq time to the task it
// interrupts (no CONFIG_IRQ_TIME_ACCOUNTING), the receiver's work done
// on the way out of the syscall.
func threadCPU() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

func attach(args []string) error {
	fs := flag.NewFlagSet("attach", flag.ExitOnError)
	ifname := fs.String("iface", "", "device")
	which := fs.String("prog", "drop", "drop or pass")
	mode := fs.String("mode", "native", "native or generic")
	pin := fs.String("pin", "", "bpffs path to pin the link at (remove it to detach)")
	fs.Parse(args)
	ifc, err := net.InterfaceByName(*ifname)
	if err != nil {
		return err
	}
	var insns asm.Instructions
	switch *which {
	case "drop":
		insns = asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}
	case "pass":
		insns = asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}
	case "read":
		// reads the EtherType and the IPv4 source address, then
		// drops: the least an IPv4 filter reads (the frame's first
		// cache lines, written on another CPU)
		insns = asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 34),
			asm.Mov.Imm(asm.R0, 2),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
			asm.LoadMem(asm.R5, asm.R2, 26, asm.Word),
			asm.Mov.Imm(asm.R0, 1),
			asm.Return().WithSymbol("out"),
		}
	default:
		return fmt.Errorf("-prog: drop, read or pass")
	}
	flags := link.XDPDriverMode
	if *mode == "generic" {
		flags = link.XDPGenericMode
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: insns})
	if err != nil {
		return err
	}
	defer prog.Close()
	lk, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: flags})
	if err != nil {
		return err
	}
	defer lk.Close()
	return lk.Pin(*pin)
}

func gro(args []string) error {
	fs := flag.NewFlagSet("gro", flag.ExitOnError)
	ifname := fs.String("iface", "", "device")
	fs.Parse(args)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	val := struct{ cmd, data uint32 }{cmd: 0x2c /* ETHTOOL_SGRO */, data: 1}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], *ifname)
	ifr.data = uintptr(unsafe.Pointer(&val))
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return fmt.Errorf("ETHTOOL_SGRO on %s: %w", *ifname, e)
	}
	runtime.KeepAlive(&val)
	return nil
}

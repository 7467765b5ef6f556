// Package xdp owns the XDP fast path of raw PREROUTING: the BPF program
// (bpf/classifier.c, compiled with bpf2go; `make generate`), the
// classifier compiler that turns the leading DROP/ACCEPT run of rules into
// map contents (compile.go, pure), and the loader that pins, attaches and
// atomically swaps generations while keeping per-CPU counters (load.go,
// manager.go). IPv4 address fields and address-only IPv4 set mirrors are
// DIR-16-8-8 tables (dir.go), each the one value of an array map that the
// program reads in place as a global, within a memory budget (a set over
// it is split by prefix length: its /32s in a hash, its prefixes of /24
// or shorter in a bitmap of the /24s, the others in the table:
// sethash.go). IPv6 address fields and the other set mirrors (IPv6 sets,
// sets with ports or timeouts) are per-prefix-length hash tables read in
// place the same way (lenhash.go), the longest length probed first; an
// entry with a timeout carries its expiry, 2.15 s before the kernel's
// (sets.go expiryMargin). LPM tries remain for more than 8 prefix
// lengths. Runs decided by one address field or one set table load a
// program made for that (xdptables_fast_*) instead of the general
// bit-vector search; so do runs
// of the protocol and one more field, or the protocol, a port and an
// address field (folded tables: xdptables_fast_port, _psrc, _ppsrc...).
// sets.go keeps the set mirrors in step with ipset add/del in place. It
// decides no iptables semantics of its own: rules come as compat ASTs,
// and a rule it cannot evaluate exactly ends the run.
package xdp

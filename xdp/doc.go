// Package xdp owns the XDP fast path of raw PREROUTING: the BPF program
// (bpf/classifier.c, compiled with bpf2go; `make generate`), the
// classifier compiler that turns the leading DROP/ACCEPT run of rules into
// map contents (compile.go, pure), and the loader that pins, attaches and
// atomically swaps generations while keeping per-CPU counters (load.go,
// manager.go). It decides no iptables semantics of its own: rules come as
// compat ASTs, and a rule it cannot evaluate exactly ends the run.
package xdp

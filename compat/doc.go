// Package compat owns the iptables command language: the argv parser, the
// iptables-save/iptables-restore file format, iptables' messages and exit
// codes, the typed rule AST and its canonical printers (-S / save and -L).
//
// Every match and target lives in one file (match_*.go, target_*.go) that
// knows its options, how it parses and how it prints. The package does no
// I/O beyond resolving names the way iptables does (/etc/protocols,
// /etc/services, host names) and never touches the kernel.
package compat

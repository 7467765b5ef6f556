// Package persist owns the files a host keeps its firewall in across
// reboots: where they live (the paths netfilter-persistent and
// ipset-persistent use on Debian, and the RHEL iptables-services paths),
// which of them a boot restore uses, and the order of a restore (every
// file is checked with --test before any is applied, sets before rules)
// and of a save (each file replaced atomically).
//
// It runs the tools through a Runner and does no parsing of its own, so
// that the same code drives the real binary and a fake in tests.
package persist

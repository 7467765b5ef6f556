// Package ruleset carries out iptables commands and restores against
// the nftables state of one family.
//
// A command works on a View: the chains of one iptables table as read
// from the kernel (only those it needs). Commands change the view with
// iptables' semantics and error messages; the changes then become one
// kernel batch, committed against the generation the view was read at
// and rebuilt from scratch when another process committed in between.
// The View is pure, so the semantics are tested without root.
package ruleset

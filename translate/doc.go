// Package translate turns the iptables rule AST into nftables
// expressions and back. It is pure: no netlink, no files.
//
// A rule becomes, in iptables-nft's order: interface, l4proto, address
// and fragment tests, then each match in command-line order, one
// counter, and the verdict or target. Extensions translate themselves
// (compat.NftExpresser). The canonical rule text goes into the rule's
// userdata so that listing reads back exactly what was written, with a
// digest of the text and of the expressions as the kernel will list them
// (kernel.AppendListed). Reading back compares the digest with the
// kernel's listing (ReadRule); a rule without one, or whose listing does
// not match it, is re-translated from its text and compared expression
// by expression (FromKernel), so a rule changed behind our back is
// reported instead of being misread.
package translate

// Package translate turns the iptables rule AST into nftables
// expressions and back. It is pure: no netlink, no files.
//
// A rule becomes, in iptables-nft's order: interface, l4proto, address
// and fragment tests, then each match in command-line order, one
// counter, and the verdict or target. Extensions translate themselves
// (compat.NftExpresser). The canonical rule text goes into the rule's
// userdata so that listing reads back exactly what was written; reading
// back re-translates that text and compares it with the kernel's
// expressions, so a rule changed behind our back is reported instead of
// being misread.
package translate

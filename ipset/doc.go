// Package ipset owns the ipset language: commands and global options,
// set types with their create and element options, element parsing
// (CIDRs, ranges, protocols and ports, interfaces, MACs), ipset's exact
// messages and exit statuses, the save/list/xml printers, the restore
// format, an in-memory model (State) with ipset's semantics, and the
// mapping of a set onto nftables sets. It does no I/O; setengine carries
// the model to and from the kernel.
//
// # Mapping to nftables
//
// A set of family inet lives in `table ip xdptables`, one of family inet6
// (and every bitmap type, which is IPv4 only) in `table ip6 xdptables`
// or `table ip xdptables` respectively, so that every iptables table can
// look it up.
//
//   - "ipset.NAME" is the set rules look up (`-m set --match-set NAME`).
//     Its key is the concatenation of the dimensions: ipv4_addr/ipv6_addr
//     for ip and net, inet_proto . inet_service for a port (inet_service
//     alone for bitmap:port), ifname, ether_addr, mark. Its comment holds
//     the ipset header: "ipset TYPE OPTIONS…" in save order (family,
//     hashsize, maxelem, netmask, timeout, counters, comment, skbinfo,
//     bucketsize, initval, range, size); save and list print it back.
//     maxelem is the nftables set size (the kernel then refuses the
//     element past it: "Hash is full"). timeout makes a timeout set with
//     no default; every element gets its own timeout (ipset's default is
//     applied when it is added), 0 means permanent. counters adds a
//     counter expression to the set, so every element counts packets;
//     comment is the element comment (element userdata).
//   - Net types (hash:net, hash:net,port, hash:ip,port,net,
//     hash:net,iface, hash:net,net, hash:net,port,net) need ipset's
//     semantics for overlapping prefixes and nomatch: the most specific
//     entry covering an address decides, and a nomatch entry excludes.
//     An nftables interval set cannot hold overlapping intervals, so two
//     sets keep such a set: "ipset-entries.NAME", a plain hash set whose
//     key is the dimensions plus a 32-bit field with the prefix lengths
//     and the nomatch flag, holds the entries exactly as written (what
//     save and list print, with their timeouts and comments), and
//     "ipset.NAME" is an interval set holding the flattened, disjoint
//     pieces: within each group of entries that agree on the other
//     dimensions, the prefix tree is walked and every address range is
//     given to its most specific entry; pieces owned by nomatch entries
//     are left out. A piece carries the timeout and comment of its owner.
//     Both sets change in the same transaction.
//
// Fields without an nftables equivalent: "Size in memory" is an
// estimate in ipset's layout; hashsize, bucketsize, initval and forceadd
// are kept in the header only. References counts rules whose lookups use
// the set plus list:set memberships.
//
// Known departures: elements appear in nftables' dump order (use -s for
// a stable order; -s sorts by address, then port, then protocol, which
// differs from ipset for mixed protocols); packet/byte values given on
// add start at zero (the counter expression cannot be preset through
// the library used); skbinfo values are not kept; counters of net types
// read back as zero; a rename re-creates the sets, so the renamed set
// moves to the end of the listing; list:set is kept in memory only
// (not stored in the kernel yet); when an overlapping more specific net
// entry expires before its parent, the parent does not take its range
// back until the next change of the set.
package ipset

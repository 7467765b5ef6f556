// Package setengine runs ipset commands against the kernel: it reads the
// ipset sets held as nftables sets in xdptables' tables into an
// ipset.State, applies the commands to it in memory (so that messages and
// exit statuses are ipset's), and commits the difference as one nftables
// transaction checked against the ruleset generation it was read at,
// retrying from the read when another writer came first.
//
// Paths that do not read whole sets, for commands whose cost would
// otherwise grow with the set:
//   - single add, del and test ask the kernel about the element
//     (fast.go), and single add and del of a prefix in a hash:net change
//     the lookup set's pieces locally (net.go), or in a set of the
//     top-level layout the one interval of the prefix's tree (top.go);
//   - restore files that create sets, add to them (new or existing),
//     flush them, or swap a new set with an existing one fill the sets
//     as ipset.Bulk values and encode their elements into the batch one
//     at a time (restore.go);
//   - list and save stream the members as the kernel dumps them
//     (list.go); the entries of a net type with a large maxelem, and
//     the copies a plain hash type of a large maxelem keeps of its
//     lookup set, are dumped shard by shard (shard.go).
//
// Everything else goes through the in-memory model (Run).
package setengine

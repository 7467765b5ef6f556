// Package setengine runs ipset commands against the kernel: it reads the
// ipset sets held as nftables sets in xdptables' tables into an
// ipset.State, applies the commands to it in memory (so that messages and
// exit statuses are ipset's), and commits the difference as one nftables
// transaction checked against the ruleset generation it was read at,
// retrying from the read when another writer came first.
package setengine

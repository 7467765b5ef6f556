// Package kernel is xdptables' only door to nf_tables.
//
// It owns three things and nothing more:
//
//   - the kernel layout: our table per family (`table ip xdptables`,
//     `table ip6 xdptables`), the naming of iptables chains inside it
//     ("filter.INPUT", "nat.DOCKER") and the hooks, types and priorities
//     that built-in chains get (the same as iptables-nft's);
//   - targeted reads of that state over netlink: the generation id, the
//     chains of our table, the rules of one chain (or of the whole table),
//     foreign tables, with expressions decoded into github.com/google/nftables
//     expr values;
//   - writes: a Batch of operations sent as one netlink batch, that is one
//     nf_tables transaction, guarded by the generation id read before it
//     (NFNL_BATCH_GENID). A stale batch fails with ErrGenerationChanged and
//     nothing changes; a refused operation fails with an *OpError that names
//     the operation by its index in the batch and carries the errno.
//
// It makes no iptables policy decisions: what to read, what to put into a
// batch, how to retry and what message to print belong to the callers.
package kernel

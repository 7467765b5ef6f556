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
// NAME below is the ipset name with '%' written as "\p" and '\' as "\\"
// (NftNamePart): the kernel fills a '%' of a new nftables set name in
// with a number.
//
//   - "ipset.NAME" is the set rules look up (`-m set --match-set NAME`).
//     Its key is the concatenation of the dimensions: ipv4_addr/ipv6_addr
//     for ip and net, inet_proto . inet_service for a port (inet_service
//     alone for bitmap:port), ifname, ether_addr, mark. Its comment holds
//     the ipset header: "ipset TYPE OPTIONS…" in save order (family,
//     hashsize, maxelem, netmask, timeout, counters, comment, skbinfo,
//     bucketsize, initval, range, size) and last "slot N", the set's
//     place in listings (ipset lists sets in kernel index order across
//     families: create takes the first free slot, rename and swap keep
//     each name's); save and list print it back.
//     maxelem is the nftables set size (the kernel then refuses the
//     element past it: "Hash is full"). timeout makes a timeout set with
//     no default; every element gets its own timeout (ipset's default is
//     applied when it is added), 0 means permanent. counters adds a
//     counter expression to the set, so every element counts packets
//     (packets and bytes given on add are the element counter's initial
//     values); comment is the element comment (element userdata). What
//     an entry has beyond that (skbinfo values, a bitmap:ip,mac entry
//     still without MAC) is kept before the comment between "\x1e"
//     marks; the userdata holds 251 bytes in all.
//   - Net types (hash:net, hash:net,port, hash:ip,port,net,
//     hash:net,iface, hash:net,net, hash:net,port,net) need ipset's
//     semantics for overlapping prefixes and nomatch: the most specific
//     entry covering an address decides, and a nomatch entry excludes.
//     An nftables interval set cannot hold overlapping intervals, so two
//     sets keep such a set: "ipset-entries.NAME", a plain hash set whose
//     key is the dimensions plus a 32-bit field with the prefix lengths
//     and the nomatch flag (and hash:net,iface's physdev and wildcard
//     flags), holds the entries exactly as written (what
//     save and list print, with their timeouts and comments), and
//     "ipset.NAME" is an interval set holding the flattened, disjoint
//     pieces: within each group of entries that agree on the other
//     dimensions, the prefix tree is walked and every address range is
//     given to its most specific entry; pieces owned by nomatch entries
//     are left out. The interfaces of a hash:net,iface are one group, as
//     ipset looks for the most specific network holding the address
//     among the entries of every interface and only that network's
//     entries can match: a range is given to each entry of its most
//     specific network. Its physdev entries are left out: ipset looks
//     a packet's interface up without the physdev flag, so they match
//     no packet (ipset test, which can ask with it, reads the entries).
//     An entry with the wildcard flag holds every interface whose name
//     starts with its own: in the key it is a range of names, the name
//     padded with 0x00 to the name padded with 0xff (meta iifname and
//     oifname load the name NUL padded to 16 bytes, compared byte by
//     byte). Such ranges nest; where several entries of the deciding
//     network hold a name, the one with the longest name decides (see
//     Set.Find), so a range is split around the names of the entries
//     nested in it that answer otherwise (nomatch, a timeout, another
//     comment or counters). The kernel keeps a range of a concatenated
//     interval set as the prefixes that cover it, and its adds take
//     time in the number of them already held: a split costs up to
//     about 16 (a restore of 6000 networks, each with eth wildcard,
//     eth1 and eth0 nomatch, takes 2.1 s, ipset's 0.1 s; without eth0
//     nomatch, 0.2 s).
//     The second prefixes of a type with two (hash:net,net,
//     hash:net,port,net) share the tree of the first too: ipset takes
//     the most specific first prefix with an entry holding the pair,
//     then of its entries the most specific second prefix, so a piece
//     of the first address is split into ranges of the second, each
//     given to the entry that decides there. A piece carries the timeout and comment of its owner.
//     Both sets change in the same transaction.
//     A hash:net whose entries carry nothing a piece must (no timeout,
//     counters, comment or skbinfo) is created with the top-level
//     layout instead (header word "top", Set.TopLayout): a prefix tree
//     without nomatch entries is one interval, its top-level entry's
//     range, whose start element's comment counts the entries nested in
//     it; a tree with a nomatch entry keeps its pieces. An add or del
//     of a nested entry then changes one element's count, not a split
//     of the tree's pieces: the kernel's commit of an interval set grows
//     with the number of intervals (1M random prefixes are 1.7M pieces
//     but about 100k trees). Sets stored without the word keep pieces.
//     A set of the top-level layout large enough to be sharded keeps
//     the counts apart instead (header word "nested" after "top",
//     Set.NestedSet): "ipset-nested.NAME" is a hash set with one element
//     per tree that has nested entries, keyed by the tree's first
//     address, its comment the count, made with its first element. An
//     add or del of a nested entry then leaves the lookup set alone: the
//     kernel (6.18) rebuilds an interval set's lookup array from the
//     whole set in every commit that changes it, about 20 ms for 100k
//     intervals, while a hash set's change costs the same at any size.
//     A new top-level entry still changes the lookup set (see
//     bench/RESULTS.md, "An overlay for recent changes").
//   - "ipset-nomatch.NAME" is an interval set keyed like the lookup set
//     that holds the pieces owned by nomatch entries: the keys for which
//     ipset's lookup finds a nomatch entry, which `-m set
//     --return-nomatch` matches. It exists only while the set holds
//     nomatch entries or a rule looks it up (such a rule creates it, and
//     the kernel keeps it while the rule exists; it goes with the next
//     change of the set after the rule went), and changes in the same
//     transaction as the other two. Sets without nomatch entries cost
//     nothing more. Without it, every address an entry covers is in
//     some piece, so the kernel's own answers decide single commands
//     without reading the set (see setengine/fast.go): an exclusive add
//     of the new prefix's piece that the kernel accepts without an
//     interval overlap means the prefix overlaps no entry; a piece next
//     to an entry's range means an enclosing entry may exist. Whatever
//     these checks cannot decide takes the general path, which reads
//     the set (O(n)).
//   - A net type created with maxelem above 65536 keeps its entries in
//     Shards sets "ipset-shard.NAME.I" instead of "ipset-entries.NAME"
//     (about 8192 entries each when the set is full, at most 1024 sets;
//     "shards K" in the header), an entry's set chosen by a hash of its
//     key: the kernel resumes a set dump by walking the set from its
//     start for every 32 KiB datagram, so that one large set dumps in
//     time quadratic in its size, and list and save of 1M entries took
//     seconds. A shard is created with a size of half as many entries
//     again as it gets (Set.ShardSize; none when it gets none, or for
//     sets with timeouts or counters): the kernel then makes its hash
//     table large enough at once, instead of growing it about a dozen
//     times in the transaction that fills it, each insert meanwhile
//     looking its key up in every table of the growing chain (the
//     kernel moves elements to a larger table only after the
//     transaction; a fifth of the CPU time of a 100k restore). The size is
//     no limit of the set: when the kernel refuses an add because a
//     shard is full, setengine re-creates that shard without a size,
//     with its elements, in a transaction of its own, and retries.
//     (Builds before sized shards answer "Hash is full" instead when a
//     shard of a set restored by a later build fills up.)
//     A shard is made when it first gets an entry (the change that adds
//     it creates it, not exclusively where it is not known to exist) and
//     stays when emptied; readers take a shard that does not exist as
//     empty. The kernel looks every set up by name through all the sets
//     of the table (a create, an add and each dump walk that list): a
//     set of a large maxelem with few entries is then the lookup set,
//     the count and a shard or two instead of Shards+2 sets (Calico
//     creates every set with maxelem 1048576: 130 sets each, and 100 of
//     them took 9 s to restore and 16 s to save). Builds before this
//     one fail to list such a set (a shard they expect is missing).
//     "ipset-count.NAME" holds one element, the number of
//     entries, which every change rewrites in the same transaction:
//     single adds check maxelem against it, and list prints it as the
//     number of entries before streaming the members (in a set with
//     timeouts it may stay above the number of live entries after some
//     expire: there list counts the members first, and an add the count
//     refuses takes the general path, which counts). A set stored
//     without "shards" in its header keeps the single entries set;
//     builds before shards do not see sharded sets (their header has
//     a word those builds do not know).
//   - Shard copies: a plain hash type (hash:ip, hash:ip,port,
//     hash:ip,port,ip, hash:ip,mark, hash:ip,mac, hash:mac) created with
//     maxelem above 262144 keeps its entries in the lookup set, which
//     the kernel sizes to maxelem ("Hash is full" past it), and a copy
//     of them in Shards sets "ipset-shard.NAME.I" (keyed like the lookup
//     set, the shard chosen by a hash of the key) with "ipset-count.NAME"
//     ("shards K" in the header), for the same reason as above: list and
//     save read the shards, and 1M members dump in about the time ipset
//     takes instead of 10-20 s. Every change writes both in the same
//     transaction (restore, single add and del, the general path, flush,
//     swap, rename, destroy). Below that maxelem one set dumps fast
//     enough, and a restore writes each entry once. The copies would go
//     stale where something else changes the lookup set, so:
//     sets with timeout (entries expire there) or counters (packets
//     count there) never get them; a -j SET rule that adds to or
//     deletes from a set with copies destroys the shards and the count
//     set in the rule's own transaction (the lookup set already holds
//     every entry). A set whose header names shards but whose count set
//     is missing is read as one lookup set from then on (ShardCopies
//     false); so is a set stored without "shards" (earlier builds). The
//     copies stay with the name on swap (a name a -j SET rule writes to
//     has none; one that gets a set with timeout or counters loses
//     them), so a swap of two sets alike moves elements only. Builds
//     before shard copies do not see such sets (a header word they do
//     not know).
//   - The interval lookup sets (rbtree; pipapo for concatenations) of
//     sets without timeouts are created with the timeout flag and the
//     longest GC interval (49 days; LongGC): their elements have no
//     timeout and never expire, and the kernel does not scan the whole
//     set for expired elements in the first commit that changes it after
//     each quiet second. What remains of a single change is the kernel's
//     own: since 6.18 an rbtree set publishes a sorted array of its
//     intervals to the packet path, rebuilt (a walk of the tree into a
//     freshly zeroed array) in every commit that changes the set, so an
//     add or del in an interval set costs time linear in the set's size
//     (about 0.1-0.3 s at 1M pieces). Only a lookup set split into
//     several kernel sets, which rules would look up together, avoids it.
//   - list:set: "ipset.NAME" holds one element per member, its key the
//     member's position (so the order survives), its comment the
//     member's name (then "\x1f" and the entry's own comment).
//   - Plain (non-interval) lookup sets are created "dynamic" (rhash
//     backend) so that -j SET --add-set/--del-set can be nft dynset
//     add/update/delete on them. So is "ipset-entries.NAME": with a
//     size (maxelem) and no timeout the kernel would choose its
//     fixed-size hash, whose buckets for maxelem entries are allocated
//     at once and walked whole by every dump (1 MiB and 128k buckets at
//     the default 65536, for a set of three entries).
//
// initval: ipset draws it at random; here a set created without one gets
// a value derived from its name, which is not stored, so that two sets
// created alike have identical headers and swap moves only elements:
// the nftables sets keep their names, which rules point at, and the
// elements of both change in one transaction (atomic for packets). A
// set whose header differs from its swap partner's (maxelem, timeout,
// counters, …) is re-created, which fails while a rule uses it.
//
// Not matched natively: -j SET on net types (below), refused with a
// message naming the set.
//
// -m set on a list:set: ipset tries the members in list order, each
// with the rule's directions on its own dimensions (a member with more
// dimensions than directions, or of the other family, does not match; a
// nomatch entry makes its member not match, or with --return-nomatch
// match). An nftables rule is a conjunction, so the OR of the members
// takes more than one rule; carrying the answer from a hidden chain to
// the next rule in a register does not work (a 6.18 kernel refuses a
// rule that loads a register it did not store itself, ENODATA). The
// rule stays one kernel rule: its matches up to the list match, then a
// jump to a chain bound to it that holds "return" where the list does
// not match (no member matches, the members' keys and inverted lookups
// in list order; with !, one rule per member that matches) and then the
// rule's remaining matches, its counter and its target, which so run
// once, after the members' tests (compat.SetMatch.NftListExprs). Its
// counter is read from the bound chain. A change of a list's members
// (add, del, flush, swap, restore, a member made again) translates the
// rules that match it again in the same transaction, with their
// counters (setengine/listrules.go). A member with counters is counted
// where it is the first member that matches (an inverted lookup counts
// nothing), as the list's own element of it for a list with counters,
// not with ! --update-counters or ! --update-subcounters, except (the
// member's lookup counts it) with ! --match-set, and with !
// --update-subcounters on a list with counters. References of a list
// counts the rules that name it; the members' lookups in its rules
// count for none. Refused, with a message naming the set: -j RETURN and
// -g in such a rule (from the bound chain they would return to the
// rule's chain, not from it), a list:set with timeout (its rules would
// have to change as members expire), more than four bitmap:port members
// (each doubles the return rules), another list:set match or a target
// that needs a chain of its own (TPROXY, ECN, SET: the kernel takes no
// chain bound in a bound chain) in the rule. Known departures: a change
// of a list starts the state of its rules' native stateful matches
// afresh (limit, quota, statistic --mode nth: the rule is a new kernel
// rule; counters are carried over, packets counted between the read and
// the commit are lost); xtables matches after the list match run
// without the rule's protocol (NFTA_RULE_COMPAT is per rule): those
// that need one are refused by the kernel.
//
// -j SET on net types: their lookup set is an
// interval set: the kernel refuses dynset add/update on rbtree and
// pipapo sets with EOPNOTSUPP; ipset's packet path adds the address
// masked to the most specific prefix length the set holds, /32 or /128
// when it is empty, so -m set would have to match the interval set or
// a plain set of added keys, an OR that one rule cannot express either.
//
// Fields without an nftables equivalent: initval and forceadd are kept
// in the header only (forceadd as a word ipset's list and save do not
// print, as ipset prints it nowhere). An add to a full forceadd set
// replaces a member where ipset's kernel would: when the new element's
// bucket (below) holds one, the first of them in the set's order goes;
// when it holds none the add fails with "Hash is full", as ipset's does.
// (ipset replaces the member in the bucket's first slot, which follows
// the order of its adds and dels: a bucket of several members may lose
// another one.) hashsize, "Size in memory" and (hash:net,iface)
// bucketsize are what ipset's kernel (Linux 6.x, ip_set_hash_gen.h)
// reports for the same members with the same initval (Footprint):
//   - A member's bucket is the kernel's jhash2 of its element struct as
//     the kernel lays it out (addresses in network order, port, protocol,
//     prefix length, less one where the type packs it with nomatch;
//     nomatch itself clear; hash:net,iface hashes the net, not the
//     interface), its 32-bit words read little endian (x86, arm64),
//     seeded with initval and masked to the table's bits.
//   - An add that finds its bucket holding bucketsize members doubles the
//     table (every member moves, again while a bucket would overflow)
//     and is tried again. The hashsize printed is therefore the smallest
//     power of two from the created one at which no bucket holds more
//     than bucketsize members, whatever the order of the adds; only
//     hash:net,iface depends on it: there a full bucket whose members all
//     have the new member's net grows bucketsize by 2 (up to 64, past
//     which ipset refuses the member). The members are taken in the
//     order they come (list and save: the kernel's dump order).
//   - Size in memory of a hash type is the empty set's (struct htype,
//     struct htable and one region lock: 216 for hash:ip, 456 for
//     hash:net, 1240 for hash:net family inet6, …, measured where the
//     reference kernel has the type, from the kernel's structs for
//     hash:net,net, hash:net,port,net, hash:ip,mark, hash:ip,mac and
//     hash:mac), plus 24 per further region lock (one per 1024
//     buckets), plus for each bucket one allocation of 32 + 2 × slot
//     size per two members (AHASH_INIT_SIZE), plus 17 + length per
//     comment. A slot is the element struct, then as the set has them a
//     counter (16), timeout (8), skbinfo (16) and comment pointer (8),
//     each at its alignment. Bitmaps: the bitmap struct (bitmap:ip 88,
//     bitmap:ip,mac 80, bitmap:port 72), the bitmap in 8-byte words and
//     a slot per element of the range (bitmap:ip,mac's slot starts with
//     8 bytes of MAC); list:set: 80 plus a slot of 48 and the
//     extensions per member, plus its comments.
//   - Departure: ipset never shrinks its table (a flush keeps it too:
//     hashsize 2048 and 240 bytes for a flushed hash:ip that had grown
//     once), and after deletions and expiries it gives a bucket's slots
//     back only in steps (two when two are free, all when its last
//     member goes, in some orders), so its numbers depend on the
//     history of the set; here they are those of the present members
//     added afresh to the set as created, which is what ipset prints
//     after save and restore. Members ipset would have refused (its
//     per-region maxelem, a 65th hash:net,iface member of one net) are
//     counted.
//   - Cost: the header comes first and needs every member, so a streamed
//     listing (setengine) keeps a set's keys (one address dimension) or
//     up to 8 MiB of its printed text until the header is written (a
//     larger set is read a second time after the header), and list -t
//     reads the members as well. 1M hash:net: 28 ms of hashing, about
//     35 MB peak; 1M hash:ip,port: two dumps, 34 MB; list -t of either
//     about 0.6 s of CPU where ipset, whose kernel keeps the numbers,
//     takes 0.1 s.
//
// References counts rules whose lookups use the set (or its nomatch set)
// plus list:set memberships.
//
// ipset 4 syntax, as ipset 7.17 still takes it: option words with two
// leading dashes (OptionName), the ignored create options probes,
// resize and gc (each warned of once; a restore ends after the line
// that warns, with status 0, as ipset exits there), and bitmap ranges
// given as from/to or network.
//
// bitmask (hash:ip, hash:ip,port) and netmask on hash:ip,port, as
// ipset 7.17 takes them where the kernel has them: the address written
// first is ANDed with the mask, and a range or prefix steps from there
// one address at a time, each kept as it is (the kernel's way: only
// the first is masked); a packet's address is ANDed with the mask before
// the lookup. Sets with them are not mirrored in XDP. markmask
// (hash:ip,mark) likewise ANDs the marks of entries and packets; listed
// always, as the kernel reports it.
//
// The wildcard flag of hash:net,iface entries (add only, as ipset 7.17
// takes it): ipset's kernel compares a stored wildcard entry's name as a
// prefix of the name it is given, so such an entry stands for every
// name that starts with it in add (already added), del (deleted) and
// test, and an add -exist that finds it keeps its name and flag and
// sets only nomatch and the extensions. Of several entries of one network that
// hold a name, ipset takes the first in its bucket: the earliest added,
// which is the one with the longest name (a later add that an entry
// holds is refused), and that is the rule here (Set.Find). Known
// departure: ipset gives a bucket slot that a del freed to a later add,
// whose entry it then finds before older ones; here the longest name
// still decides. (add 198.51.100.0/24,ppp0, add 198.51.100.0/24,eth0,
// del 198.51.100.0/24,ppp0, add 198.51.100.0/24,eth wildcard nomatch:
// ipset finds the wildcard entry for eth0, in test, del and packets,
// this finds the eth0 entry.) ipset lists the entries of a network in
// the order they were added, so its save restores; the kernel's dump
// order here is another, and list and save print the wildcard entries
// last, the longest names first (Set.ListOrder), which restores too.
//
// Not supported (refused as an unknown word, as an ipset without it
// refuses it): bitmask on hash:net,net, which ipset 7.17 takes where the
// kernel has it.
//
// Known departures: hash members appear in nftables' dump order (ipset's
// is its bucket order; -s sorts as ipset does, bitmaps are listed in
// order); counters of net types read back as given on add (packets
// count in the lookup set's pieces); comments are cut at 251 bytes
// (ipset keeps 255); a restore is applied whole or not at all (ipset
// keeps the lines before an error; the error it reports is the one
// ipset would, line by line: a line it refuses as it reads it comes
// after the lines before it, a run of adds to one set is refused by
// the kernel only once the next line, or a COMMIT line, was read, and
// a list or save line of a restore read from a file (-f) writes into
// that file and ends the restore); an address range of more than 2^20
// elements is refused whole (ipset adds up to maxelem); when an overlapping more
// specific net entry (or a hash:net,iface name nested in a wildcard
// entry) expires before its parent, the parent does not take its range
// back until the next change of the set. Entries of
// bitmap:ip,mac without MAC match no packet (ipset fills the MAC from
// the first one). A host name that resolves to several addresses takes
// the first without ipset's warning. Interactive mode ("ipset -") runs
// each line as ipset does but without the quirks of its session (ipset
// 7.17 answers some commands after an error with "Internal protocol
// error"; of those only test's NOT-in-set under -q is reproduced); a "-" line in a restore file is refused (ipset switches to
// interactive mode there). -sorted orders IPv6 members whose text has
// an empty group right before the prefix length ("2001:db8::/64") by
// that text; ipset leaves them in its kernel order.
package ipset

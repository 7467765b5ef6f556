// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdptables classifier: the leading DROP/ACCEPT run of raw PREROUTING,
 * evaluated with a linear bit-vector search (bpf-iptables, Miano et al.
 * 2019). Every header field is looked up once and names an equivalence
 * class; each class owns a bit vector of the rules that field lets
 * through. The first set bit of the AND of all vectors is the first
 * matching rule. A summary level (one bit per 64-rule word) skips empty
 * words, so a packet that matches no rule, or a rule early in the run,
 * costs the same whatever the number of rules or map entries.
 *
 * Anything the program cannot classify exactly as nftables would is
 * passed: the same rules run again in nftables.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_WORDS 256 /* 16384 rules */
#define MAX_SUMMARY (MAX_WORDS / 64)

/* Set by the loader for each compiled classifier. The verifier knows
 * their values, so the branches on them that cannot be taken are
 * removed before the program is JIT-compiled: fields no rule of the run
 * looks at cost nothing. */
volatile const __u32 nwords = 1;
volatile const __u32 nsummary = 1;

#define F_SRC (1 << 0)
#define F_DST (1 << 1)
#define F_PROTO (1 << 2)
#define F_FLAGS (1 << 3)
#define F_SPORT (1 << 4)
#define F_DPORT (1 << 5)
#define F_LEN (1 << 6)
#define F_IFACE (1 << 7)
volatile const __u32 fields = 0xff;
/* families with rules in the run: 1 IPv4, 2 IPv6 */
volatile const __u32 fams = 3;
/* per family, the class of the rules of that family (used when no
 * address field is looked up) */
volatile const __u32 fam_cls[2];

/* Set when the search has one vector (one field or set lookup, or only
 * the family's): the first rule of each class is then the answer, and
 * the class values in the maps and constants are not classes but that
 * answer (SINGLE_*): no vector is read. */
volatile const __u32 single = 0;
/* Set when some rule tests ports or TCP flags, or a set lookup ports. */
volatile const __u32 need_l4 = 1;
/* Set when some field or lookup besides the addresses is in use. */
volatile const __u32 more = 1;
#define NO_RULE 0xffffffff

/* Mirrored ipset sets (-m set --match-set): up to MAX_SETS lookups. */
#define MAX_SETS 4
#define SET_ADDR_DST (1 << 0)
#define SET_PORT_SRC (1 << 1)
#define SET_PORT_DST (1 << 2)
#define SET_V6 (1 << 3)
/* The set is an IPv4 address-only set mirrored as a DIR-16-8-8 table in
 * setN_tab (values 1: match, 0: no match; set_slots[N] entries), laid
 * out as the address fields' tables, instead of its trie. */
#define SET_DIR (1 << 4)
/* The set is split by prefix length (xdp/sethash.go): a hash of its
 * /32 entries that match, 2^set_hbits[N] buckets of HASH_WAYS
 * addresses from setN_tab[set_hbase[N]]; a bitmap of the /24s for its
 * entries of /24 or shorter, from setN_tab[set_bitmap[N]] (bit b % 32
 * of word b / 32 for the /24 b); and the table for the others, which
 * gives SET_BITMAP where the bitmap decides. */
#define SET_HASH (1 << 5)
#define SET_BITMAP 2
/* The set is a per-prefix-length hash table (xdp/lenhash.go, IPv6 sets,
 * sets with ports or timeouts) in setN_tab, read as 64-bit words
 * (set_slots[N] of them): a header of SET_HEAD words, then 2^set_hbits[N]
 * buckets; set_nlens[N] lengths, longest first, and their masks. The
 * key word of an entry is its length | protocol << 8 | port << 16; its
 * value is 1 (match) or 0 (nomatch) | the expiry << 1: when the set has
 * timeouts, in units of 2^EXP_SHIFT ns of CLOCK_MONOTONIC (0: none). */
#define SET_LEN (1 << 6)
#define MAX_LENS 8
#define SET_HEAD 16
#define EXP_SHIFT 28
volatile const __u32 set_nlens[MAX_SETS];
volatile const __u32 set_lens[MAX_SETS][MAX_LENS];
volatile const __u64 set_mask[MAX_SETS][MAX_LENS][2];
volatile const __u32 set_hbase[MAX_SETS];
volatile const __u32 set_hbits[MAX_SETS];
volatile const __u32 set_bitmap[MAX_SETS];
#define HASH_WAYS 8
#define HASH_K1 0x9e3779b1U
#define HASH_K2 0x85ebca77U
volatile const __u32 nsets = 0;
volatile const __u32 set_cfg[MAX_SETS];
/* [2*i]: class when set i does not match the packet, [2*i+1]: when it does */
volatile const __u32 set_cls[2 * MAX_SETS];

struct lpm4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct lpm6 {
	__u32 prefixlen;
	__u8 addr[16];
};

struct iface {
	__u32 cls;
	__u8 mac[6];
	__u8 pad[2];
};

/* Up to MAX_IFTAB attached interfaces are also compiled in as constants:
 * the ifindex and MAC tests become compares with immediates and the
 * hash lookup goes. More interfaces use the ifaces map. */
#define MAX_IFTAB 4
struct iftab {
	__u32 index;
	__u32 cls;
	__u32 mac_hi; /* the first 4 bytes of the MAC as the packet holds them */
	__u16 mac_lo; /* the last 2 */
	__u16 pad;
};
volatile const __u32 niftab = 0;
volatile const struct iftab iftab[MAX_IFTAB];

struct rule {
	__u32 slot;
	__u32 drop;
};

struct counter {
	__u64 packets;
	__u64 bytes;
};

/* A set element: protocol and port (zero for address-only types), then
 * the address; prefixlen counts 24 bits for protocol and port. */
struct setkey {
	__u32 prefixlen;
	__u8 proto;
	__u8 port[2];
	__u8 addr[16];
} __attribute__((packed));

struct setval {
	__u64 expires; /* CLOCK_BOOTTIME ns; 0: permanent */
	__u32 nomatch;
	__u32 pad;
};

#define SETMAP(name)                                \
	struct {                                    \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);      \
		__uint(map_flags, BPF_F_NO_PREALLOC);     \
		__uint(max_entries, 1);                   \
		__type(key, struct setkey);               \
		__type(value, struct setval);             \
	} name SEC(".maps")

SETMAP(set0);
SETMAP(set1);
SETMAP(set2);
SETMAP(set3);

/* u32 -> u32 arrays; the loader sets the sizes of those in use */
#define U32MAP(name)                                \
	struct {                                    \
		__uint(type, BPF_MAP_TYPE_ARRAY);         \
		__uint(max_entries, 1);                   \
		__type(key, __u32);                       \
		__type(value, __u32);                     \
	} name SEC(".maps")

/* The tables of mirrored sets (SET_DIR): one array value each, the
 * set's map, read in place as src4_dir is */
__u32 set0_tab[1] SEC(".data.set0_tab");
__u32 set1_tab[1] SEC(".data.set1_tab");
__u32 set2_tab[1] SEC(".data.set2_tab");
__u32 set3_tab[1] SEC(".data.set3_tab");
volatile const __u32 set_slots[MAX_SETS];

#define LPM(name, keytype)                          \
	struct {                                    \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);      \
		__uint(map_flags, BPF_F_NO_PREALLOC);     \
		__uint(max_entries, 1);                   \
		__type(key, keytype);                     \
		__type(value, __u32);                     \
	} name SEC(".maps")

LPM(src4, struct lpm4);
LPM(dst4, struct lpm4);

/* IPv4 address fields as DIR-16-8-8 tables (xdp/dir.go), where a trie
 * lookup is a helper call that walks nodes. A first-level entry per /16
 * (at 0-65535) holds a class or, with DIR_CHUNK, a chunk of 256 entries
 * for the next byte, whose entries are classes or chunks for the last
 * byte; chunk c's entry b is at c << 8 | b (chunk numbers from 256).
 * dir4 bit 0: src4 is a table, bit 1: dst4 (otherwise the field's trie,
 * when its table would be too large).
 *
 * Each table is the one value of an array map, a global of its own data
 * section whose size the loader sets (src4_slots entries): the verifier
 * turns the global into the value's address, so a level is a shift, an
 * add and a load, where a map lookup also stores and reloads the key
 * and tests it. */
volatile const __u32 dir4 = 0;
#define DIR_CHUNK 0x80000000U
#define DIR_L1 65536

__u32 src4_dir[1] SEC(".data.src4_dir");
__u32 dst4_dir[1] SEC(".data.dst4_dir");
volatile const __u32 src4_slots = DIR_L1;
volatile const __u32 dst4_slots = DIR_L1;

/* The table t, hidden from the compiler: it is larger than declared. */
static __always_inline __u32 *dir_table(__u32 *t)
{
	asm volatile("" : "+r"(t));
	return t;
}
LPM(src6, struct lpm6);
LPM(dst6, struct lpm6);

/* Per-prefix-length hash tables (xdp/lenhash.go): the prefixes of an
 * IPv6 address field or of a mirrored set, each under its address
 * masked to its length and a key word: the length, and for sets with
 * ports the protocol and port above it. The program looks the address
 * up at each length in use, longest first: the first hit is the longest
 * stored prefix holding it, as a trie lookup gives, for a few
 * multiplications and compares per length where the trie walks up to a
 * node per bit.
 *
 * A table is an array of 64-bit words read in place (as src4_dir):
 * 2^bits buckets of HWAYS entries of HENT words (the address as two
 * words read from the packet, then the key word in the low half and the
 * value in the high half of the third; key word 0: empty), from word
 * base. A key is in one of its two buckets (hkey_buckets). */
#define HWAYS 4
#define HENT 3
#define HBUCKET (HWAYS * HENT)
#define HMIX1 0x9e3779b97f4a7c15ULL
#define HMIX2 0xbf58476d1ce4e5b9ULL
#define HMIX3 0x94d049bb133111ebULL

static __always_inline __u64 hkey_hash(__u64 a0, __u64 a1, __u32 kw)
{
	__u64 h = a0 * HMIX1 + a1;

	h ^= h >> 32;
	h = (h + kw) * HMIX2;
	return h ^ (h >> 29);
}

/* Whether bucket b (a word index) of table t of n words holds the key;
 * its value to *val. */
static __always_inline int hbucket_find(__u64 *t, __u64 n, __u64 b, __u64 a0, __u64 a1, __u32 kw,
					__u32 *val)
{
	__u64 *p;

	if (b + HBUCKET > n)
		return 0;
	p = t + b;
#pragma unroll
	for (int j = 0; j < HWAYS; j++) {
		if (p[j * HENT] == a0 && p[j * HENT + 1] == a1 && (__u32)p[j * HENT + 2] == kw) {
			*val = p[j * HENT + 2] >> 32;
			return 1;
		}
	}
	return 0;
}

/* Whether the table t of n words, 2^bits buckets from word base, holds
 * the key; its value to *val. */
static __always_inline int htab_find(__u64 *t, __u64 n, __u64 base, __u32 bits, __u64 a0, __u64 a1,
				     __u32 kw, __u32 *val)
{
	__u64 h = hkey_hash(a0, a1, kw), sh = (64 - bits) & 63;

	return hbucket_find(t, n, base + (h >> sh) * HBUCKET, a0, a1, kw, val) ||
	       hbucket_find(t, n, base + ((h * HMIX3) >> sh) * HBUCKET, a0, a1, kw, val);
}

/* IPv6 address fields as such tables: hash6 bit 0 for src6_tab, bit 1
 * for dst6_tab (otherwise the field's trie, when it has more than
 * MAX_LENS prefix lengths). Per field: tab6_words words, 2^tab6_bits
 * buckets, nlens6 lengths, longest first, with their masks as the
 * packet's address reads them, and any6 the class of ::/0, the answer
 * when no length holds the address. */
volatile const __u32 hash6 = 0;
volatile const __u32 tab6_words[2];
volatile const __u32 tab6_bits[2];
volatile const __u32 nlens6[2];
volatile const __u32 lens6[2][MAX_LENS];
volatile const __u64 mask6[2][MAX_LENS][2];
volatile const __u32 any6[2];
__u64 src6_tab[1] SEC(".data.src6_tab");
__u64 dst6_tab[1] SEC(".data.dst6_tab");

static __always_inline __u64 *htable(__u64 *t)
{
	asm volatile("" : "+r"(t));
	return t;
}

/* The class of IPv6 address addr in the table of field f (0 src, 1 dst). */
static __always_inline __u32 addr6_class(int f, __u64 *t, void *addr)
{
	__u64 a0, a1;
	__u32 v;

	__builtin_memcpy(&a0, addr, 8);
	__builtin_memcpy(&a1, addr + 8, 8);
#pragma unroll
	for (int i = 0; i < MAX_LENS; i++) {
		if (i >= nlens6[f])
			break;
		if (htab_find(t, tab6_words[f], 0, tab6_bits[f], a0 & mask6[f][i][0], a1 & mask6[f][i][1],
			      lens6[f][i], &v))
			return v;
	}
	return any6[f];
}

/* Ports and lengths: value -> class, one entry per 16-bit value (an
 * array lookup, where an LPM trie of the value ranges walks up to 17
 * nodes); index 65536 is for packets without ports. The loader sizes
 * the maps of fields in use to 65537 entries. */
#define NO_PORTS 65536

U32MAP(sports);
U32MAP(dports);
U32MAP(lengths);

/* protocol number -> class; -p and -f */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} protos SEC(".maps");

/* TCP flags byte -> class; index 256 for packets that are not TCP */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 257);
	__type(key, __u32);
	__type(value, __u32);
} tcpflags SEC(".maps");

/* ingress ifindex -> class and the device address (-i) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iface);
} ifaces SEC(".maps");

/* class -> the summary words, then the rule words; value size set by
 * the loader */
#define VEC_WORDS (MAX_SUMMARY + MAX_WORDS)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[VEC_WORDS]);
} vecs SEC(".maps");

/* compiled rule index -> counter slot and verdict */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rule);
} rules SEC(".maps");

/* counter slot -> what XDP dropped; shared by every generation */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct counter);
} counters SEC(".maps");

/* Trailing zeros of x != 0 by a de Bruijn multiplication: BPF has no
 * such instruction, and a binary search is ~40 of them. */
static const __u8 debruijn64[64] = {
	0,  1,  2,  53, 3,  7,  54, 27, 4,  38, 41, 8,  34, 55, 48, 28,
	62, 5,  39, 46, 44, 42, 22, 9,  24, 35, 59, 56, 49, 18, 29, 11,
	63, 52, 6,  26, 37, 40, 33, 47, 61, 45, 43, 21, 23, 58, 17, 10,
	51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12,
};

static __always_inline __u32 ctz64(__u64 x)
{
	return debruijn64[((x & -x) * 0x022fdd63cc95386dULL) >> 58];
}

/* The value for host-order address a in DIR-16-8-8 table t of n
 * entries (at least DIR_L1); 0 when a chunk falls outside it (the packet
 * is then passed). */
static __always_inline int dir_value(__u32 *t, __u32 n, __u32 a, __u32 *val)
{
	__u32 v = t[a >> 16], i;

	if (v & DIR_CHUNK) {
		i = (v & ~DIR_CHUNK) << 8 | (a >> 8 & 0xff);
		if (i >= n)
			return 0;
		v = t[i];
		if (v & DIR_CHUNK) {
			i = (v & ~DIR_CHUNK) << 8 | (a & 0xff);
			if (i >= n)
				return 0;
			v = t[i];
		}
	}
	*val = v;
	return 1;
}

/* Whether bucket b (an index into table t of n entries) holds
 * address a. */
static __always_inline int bucket_has(__u32 *t, __u32 n, __u32 b, __u32 a)
{
	__u32 *p;

	if (b >= n - HASH_WAYS)
		return 0;
	p = t + b;
	return p[0] == a || p[1] == a || p[2] == a || p[3] == a || p[4] == a || p[5] == a ||
	       p[6] == a || p[7] == a;
}

/* The value of host-order address a in the table t of n entries of
 * split set i (SET_HASH): 1 when a is in its hash, else what dir_value
 * gives, or for SET_BITMAP its bit in the bitmap; 0 when the packet is
 * to be passed. */
static __always_inline int split_value(int i, __u32 *t, __u32 n, __u32 a, __u32 *val)
{
	__u32 base = set_hbase[i], sh = 32 - set_hbits[i], w;

	if (a != 0 && (bucket_has(t, n, base + ((a * HASH_K1) >> sh) * HASH_WAYS, a) ||
		       bucket_has(t, n, base + ((a * HASH_K2) >> sh) * HASH_WAYS, a))) {
		*val = 1;
		return 1;
	}
	if (!dir_value(t, n, a, val))
		return 0;
	if (*val == SET_BITMAP) {
		w = set_bitmap[i] + (a >> 13);
		if (w >= n)
			return 0;
		*val = t[w] >> (a >> 8 & 31) & 1;
	}
	return 1;
}

/* The value of host-order address a in the table t of n entries of
 * set i of configuration cfg (set_cfg[i], read once: it is volatile). */
static __always_inline int set_value(int i, __u32 cfg, __u32 *t, __u32 n, __u32 a, __u32 *val)
{
	if (cfg & SET_HASH)
		return split_value(i, t, n, a, val);
	return dir_value(t, n, a, val);
}

/* linux/if_ether.h's ethhdr is packed, which makes every field a series
 * of byte loads; frames start 2-byte aligned. */
struct eth {
	__u16 dst[3];
	__u16 src[3];
	__be16 proto;
};

static __always_inline int same_mac(const __u16 *a, const __u8 *b)
{
	const __u16 *w = (const __u16 *)b;

	return a[0] == w[0] && a[1] == w[1] && a[2] == w[2];
}

static __always_inline int is_port_proto(__u8 p)
{
	return p == IPPROTO_TCP || p == IPPROTO_UDP || p == IPPROTO_SCTP ||
	       p == IPPROTO_DCCP || p == IPPROTO_UDPLITE;
}

/* Extension headers ipv6_find_hdr walks, plus the ones nftables knows:
 * we do not walk them, so such packets are passed. */
static __always_inline int is_v6_ext(__u8 p)
{
	switch (p) {
	case 0: case 43: case 44: case 51: case 59: case 60:
	case 135: case 139: case 140: case 253: case 254:
		return 1;
	}
	return 0;
}

/* Whether the IPv6 packet at ip6 is one the program classifies: a
 * whole header without extension headers, which ipv6_rcv does not drop
 * before PREROUTING. */
static __always_inline int v6_ok(struct ipv6hdr *ip6, void *end)
{
	if ((void *)(ip6 + 1) > end || ip6->version != 6)
		return 0;
	if ((void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len) > end || is_v6_ext(ip6->nexthdr))
		return 0;
	/* ipv6_rcv drops these before PREROUTING */
	if (ip6->saddr.in6_u.u6_addr8[0] == 0xff ||
	    (ip6->daddr.in6_u.u6_addr8[0] == 0xff &&
	     (ip6->daddr.in6_u.u6_addr8[1] & 0xf) <= 1))
		return 0;
	if ((ip6->saddr.in6_u.u6_addr32[0] | ip6->saddr.in6_u.u6_addr32[1] |
	     ip6->saddr.in6_u.u6_addr32[2]) == 0 &&
	    ip6->saddr.in6_u.u6_addr32[3] == bpf_htonl(1))
		return 0;
	if ((ip6->daddr.in6_u.u6_addr32[0] | ip6->daddr.in6_u.u6_addr32[1] |
	     ip6->daddr.in6_u.u6_addr32[2]) == 0 &&
	    ip6->daddr.in6_u.u6_addr32[3] == bpf_htonl(1))
		return 0;
	return 1;
}

static __always_inline int v4_csum_ok(struct iphdr *iph, __u32 ihl, void *end)
{
	__u32 *w = (__u32 *)iph;
	__u64 sum;

	/* the fixed header is known to be in the packet; the ones'
	 * complement sum of 32-bit words folds to that of the 16-bit ones,
	 * in either byte order */
	sum = (__u64)w[0] + w[1] + w[2] + w[3] + w[4];
	if (ihl > 5) {
		for (int i = 5; i < 15; i++) {
			__u32 *q = w + i;

			if (i >= ihl)
				break;
			asm volatile("" : "+r"(q));
			if ((void *)(q + 1) > end)
				return 0;
			sum += *q;
		}
	}
	/* The header is right when the ones' complement sum of its 16-bit
	 * words is 0xffff: as sum > 0 (the version is not 0), when sum is a
	 * multiple of 65535 (65536 is 1 modulo 65535, so the folding that
	 * sum would take changes nothing modulo 65535). A multiplication by
	 * the inverse of 65535 modulo 2^64 tells multiples (they map to
	 * 0..(2^64-1)/65535) in a few instructions where the folding takes
	 * a dozen. */
	return sum * 0xfffefffefffeffffULL <= 0x1000100010001ULL;
}

#define NVEC 13 /* 8 fields, 4 sets, the family */

/* Set by the loader: how many vectors the search ANDs (the fields and
 * set lookups in use, and the family's vector). They are kept in
 * sc.v[0..nvec-1] in lookup order, so that the walk tests nvec, not
 * every field: the verifier removes the branches not taken, but not the
 * loads of the constants they test. */
volatile const __u32 nvec = 0;

struct scan {
	__u64 *v[NVEC];
	__u64 m, s;
	__u64 hdr; /* with single: the class value, the answer */
	__u32 idx;
	int found;
	__u32 fw; /* the largest first word of the vectors */
};

/* The AND of every vector in use at word o. */
static __always_inline __u64 conj(__u64 **v, __u64 o)
{
	__u64 x;

	if (nvec == 0)
		return ~0ULL;
	x = v[0][o];
	if (nvec > 1) {
		x &= v[1][o];
		if (nvec > 2) {
			x &= v[2][o];
			if (nvec > 3) {
				x &= v[3][o];
				if (nvec > 4) {
					x &= v[4][o];
					if (nvec > 5) {
						x &= v[5][o];
						if (nvec > 6) {
							x &= v[6][o];
							if (nvec > 7) {
								x &= v[7][o];
								if (nvec > 8) {
									x &= v[8][o];
									if (nvec > 9) {
										x &= v[9][o];
										if (nvec > 10) {
											x &= v[10][o];
											if (nvec > 11) {
												x &= v[11][o];
												if (nvec > 12) {
													x &= v[12][o];
												}
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return x;
}

/* Class values in maps and constants: the class in the low bits, the
 * word of its first rule above (255: none), which the search starts
 * from without reading the vectors first. */
#define CLS_MASK 0x7fffff
#define CLS_WORD_SHIFT 23
/* With single, a class value is SINGLE_DROP | the counter slot when the
 * class's first rule is a DROP; anything else (no rule, ACCEPT, a value
 * no class has) passes the packet. Bit 31 is DIR_CHUNK's. */
#define SINGLE_DROP 0x40000000U
#define SINGLE_TAG 0xc0000000U

/* The vector of class *c (0: pass); with single, no vector: the value
 * (the answer) goes to sc->hdr, and the result is only not 0. */
static __always_inline __u64 *vec_of(struct scan *sc, __u32 *c)
{
	__u32 k;

	if (!c)
		return 0;
	k = *c;
	if (single) {
		sc->hdr = k;
		return (__u64 *)c;
	}
	if (nwords > 4) {
		__u32 fw = k >> CLS_WORD_SHIFT & 0xff;

		if (fw > sc->fw)
			sc->fw = fw;
	}
	k &= CLS_MASK;
	return bpf_map_lookup_elem(&vecs, &k);
}

/* One candidate word of the summary bits left in sc->m. */
static long scan_word(__u64 i, void *ctx)
{
	struct scan *sc = ctx;
	__u64 ns = nsummary, nw = nwords;

	if (!sc->m)
		return 1;
	__u64 w = sc->s * 64 + ctz64(sc->m);
	sc->m &= sc->m - 1;
	__u64 o = ns + w;
	/* hide o's origin so the bound below stays for the verifier */
	asm volatile("" : "+r"(o));
	if (w >= nw || o >= ns + nw || o >= VEC_WORDS)
		return 1;
	__u64 x = conj(sc->v, o);
	if (x) {
		sc->idx = w * 64 + ctz64(x);
		sc->found = 1;
		return 1;
	}
	return 0;
}

/* The first match in the words after word w0 (by the summary): 1 with
 * sc->idx and sc->found set, 0 for none. */
static __noinline int scan_after(struct scan *sc, __u64 w0)
{
	__u64 ns = nsummary, nw = nwords;
	__u64 s0 = w0 / 64, b0 = w0 % 64;

	if (!sc)
		return 0;
	for (__u64 s = 0; s < MAX_SUMMARY; s++) {
		if (s >= ns)
			break;
		if (s < s0)
			continue;
		sc->m = conj(sc->v, s);
		if (s == s0)
			sc->m &= b0 == 63 ? 0 : ~0ULL << (b0 + 1);
		if (!sc->m)
			continue;
		/* the first candidate word inline: it usually holds the
		 * match; the rest with bpf_loop, which the verifier checks
		 * once, not per word */
		__u64 w = s * 64 + ctz64(sc->m);
		__u64 o = ns + w;
		asm volatile("" : "+r"(o));
		if (w >= nw || o >= ns + nw || o >= VEC_WORDS)
			return 0;
		__u64 x = conj(sc->v, o);
		if (x) {
			sc->idx = w * 64 + ctz64(x);
			sc->found = 1;
			return 1;
		}
		sc->m &= sc->m - 1;
		sc->s = s;
		if (sc->m)
			bpf_loop(64, scan_word, sc, 0);
		if (sc->found)
			return 1;
	}
	return 0;
}

/* Looks packet key k up in mirrored set map; 1 match, 0 no match, -1
 * an entry that may have expired (leave the packet to nftables). The
 * coarse clock lags by up to a tick: the loader's expiries are early
 * by more than that (xdp/sets.go expiryMargin). */
static __always_inline int set_test(void *map, struct setkey *k)
{
	struct setval *e = bpf_map_lookup_elem(map, k);

	if (!e)
		return 0;
	if (e->expires && bpf_ktime_get_coarse_ns() >= e->expires)
		return -1;
	return !e->nomatch;
}

/* set_test for set i of per-length table t of n words (SET_LEN): the
 * address (4 or 16 bytes at addr), kwhi the protocol and port of the
 * key word. */
static __always_inline int lenset_test(int i, __u64 *t, __u64 n, int v6, void *addr, __u32 kwhi)
{
	__u64 a0 = 0, a1 = 0;
	__u32 v;

	if (v6) {
		__builtin_memcpy(&a0, addr, 8);
		__builtin_memcpy(&a1, addr + 8, 8);
	} else {
		a0 = *(__u32 *)addr;
	}
#pragma unroll
	for (int j = 0; j < MAX_LENS; j++) {
		if (j >= set_nlens[i])
			break;
		if (htab_find(t, n, SET_HEAD, set_hbits[i], a0 & set_mask[i][j][0], a1 & set_mask[i][j][1],
			      set_lens[i][j] | kwhi, &v)) {
			if ((v >> 1) && (bpf_ktime_get_coarse_ns() >> EXP_SHIFT) >= (v >> 1))
				return -1;
			return v & 1;
		}
	}
	return 0;
}

static __always_inline int port_proto_ipset(__u8 p)
{
	return p == IPPROTO_TCP || p == IPPROTO_UDP || p == IPPROTO_SCTP ||
	       p == IPPROTO_UDPLITE;
}

/* The vector of set slot i for this packet; 0 to pass the packet. */
static __always_inline __u64 *set_vec(struct scan *sc, int i, void *map, __u32 *tab, int v6,
				      void *saddr, void *daddr, __u8 proto, __u8 *ports)
{
	__u32 cfg = set_cfg[i];
	__u32 cls;
	int m = 0;

	if (cfg & SET_DIR) {
		if (!v6) {
			__u32 a = bpf_ntohl(*(__u32 *)((cfg & SET_ADDR_DST) ? daddr : saddr));
			__u32 val;

			if (!set_value(i, cfg, tab, set_slots[i], a, &val))
				return 0;
			m = val & 1;
		}
	} else if (!!(cfg & SET_V6) == v6) {
		void *addr = (cfg & SET_ADDR_DST) ? daddr : saddr;
		__u8 *pp = 0;
		int ok = 1;

		if (cfg & (SET_PORT_SRC | SET_PORT_DST)) {
			if (!ports || !port_proto_ipset(proto))
				ok = 0;
			else
				pp = (cfg & SET_PORT_SRC) ? ports : ports + 2;
		}
		if (ok && (cfg & SET_LEN)) {
			__u32 kwhi = pp ? (__u32)proto << 8 | (__u32)pp[0] << 24 | (__u32)pp[1] << 16 : 0;

			m = lenset_test(i, (__u64 *)tab, set_slots[i], v6, addr, kwhi);
		} else if (ok) {
			struct setkey k = {};

			if (pp) {
				k.proto = proto;
				k.port[0] = pp[0];
				k.port[1] = pp[1];
			}
			if (v6) {
				__builtin_memcpy(k.addr, addr, 16);
				k.prefixlen = 24 + 128;
			} else {
				__builtin_memcpy(k.addr, addr, 4);
				k.prefixlen = 24 + 32;
			}
			m = set_test(map, &k);
		}
		if (m < 0)
			return 0;
	}
	cls = set_cls[2 * i + m];
	return vec_of(sc, &cls);
}

/* Counts a drop by the rule of counter slot slot and drops the packet,
 * unless its IPv4 header checksum is bad: ip_rcv_core drops such a
 * packet before PREROUTING, so it is left to the kernel, uncounted, as
 * nftables never sees it. Checked only here, on the way to a drop. */
static __always_inline int count_drop(__u32 slot, struct iphdr *ip4, void *end, __u32 iplen,
				      __u32 ihl)
{
	struct counter *c;

	if (ip4 && !v4_csum_ok(ip4, ihl, end))
		return XDP_PASS;
	c = bpf_map_lookup_elem(&counters, &slot);
	if (c) {
		c->packets++;
		c->bytes += iplen;
	}
	return XDP_DROP;
}

/* The verdict of a single-vector search from the class value. */
static __always_inline int single_verdict(__u64 h, struct iphdr *ip4, void *end, __u32 iplen,
					  __u32 ihl)
{
	if ((h & SINGLE_TAG) != SINGLE_DROP)
		return XDP_PASS;
	return count_drop(h & 0xffff, ip4, end, iplen, ihl);
}

SEC("xdp")
int xdptables_classify(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct eth *eth = data;
	__u32 ifindex = ctx->ingress_ifindex;
	__u32 kport;
	__u32 flagkey = 256, protokey, iplen;
	struct iphdr *ip4 = 0;
	void *l4, *l3end, *saddr, *daddr;
	__u8 *ports = 0;
	int v6;
	struct scan sc;
	__u32 nv = 0; /* vectors in sc.v */
#define PUSH(e) { __u64 *v_ = (e); if (!v_) return XDP_PASS; sc.v[nv++] = v_; }

	__u32 ifcls;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	/* (the vectors of fields not in use are never read) */
	sc.idx = 0;
	sc.found = 0;
	sc.fw = 0;

	if (niftab > 0) {
		const volatile struct iftab *t;

		/* the entry first, then its fields: loads of the fields of
		 * every entry would come before the compares otherwise */
		if (ifindex == iftab[0].index)
			t = &iftab[0];
		else if (niftab > 1 && ifindex == iftab[1].index)
			t = &iftab[1];
		else if (niftab > 2 && ifindex == iftab[2].index)
			t = &iftab[2];
		else if (niftab > 3 && ifindex == iftab[3].index)
			t = &iftab[3];
		else
			return XDP_PASS;
		ifcls = t->cls;
		/* ip_rcv drops frames for other hosts before PREROUTING */
		if (!(eth->dst[0] & 1) &&
		    (((__u32)eth->dst[1] << 16 | eth->dst[0]) != t->mac_hi || eth->dst[2] != t->mac_lo))
			return XDP_PASS;
	} else {
		struct iface *dev = bpf_map_lookup_elem(&ifaces, &ifindex);

		if (!dev)
			return XDP_PASS;
		if (!(eth->dst[0] & 1) && !same_mac(eth->dst, dev->mac))
			return XDP_PASS;
		ifcls = dev->cls;
	}

	if (eth->proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if (!(fams & 1))
			return XDP_PASS;
		if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
			return XDP_PASS;
		iplen = bpf_ntohs(ip->tot_len);
		l3end = (void *)ip + iplen;
		if (iplen < ip->ihl * 4 || l3end > end)
			return XDP_PASS;
		/* Fragments: raw PREROUTING sees reassembled packets when
		 * defragmentation is loaded, single fragments otherwise. */
		if (ip->frag_off & bpf_htons(0x3fff))
			return XDP_PASS;
		v6 = 0;
		ip4 = ip;
		saddr = &ip->saddr;
		daddr = &ip->daddr;
		protokey = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
		if ((fields & F_SRC) && (dir4 & 1)) {
			__u32 cls;

			if (!dir_value(dir_table(src4_dir), src4_slots, bpf_ntohl(ip->saddr), &cls))
				return XDP_PASS;
			PUSH(vec_of(&sc, &cls));
		} else if (fields & F_SRC) {
			struct lpm4 k = {.prefixlen = 32};
			__u32 *c;

			__builtin_memcpy(k.addr, saddr, 4);
			c = bpf_map_lookup_elem(&src4, &k);
			PUSH(vec_of(&sc, c));
		}
		if ((fields & F_DST) && (dir4 & 2)) {
			__u32 cls;

			if (!dir_value(dir_table(dst4_dir), dst4_slots, bpf_ntohl(ip->daddr), &cls))
				return XDP_PASS;
			PUSH(vec_of(&sc, &cls));
		} else if (fields & F_DST) {
			struct lpm4 k = {.prefixlen = 32};
			__u32 *c;

			__builtin_memcpy(k.addr, daddr, 4);
			c = bpf_map_lookup_elem(&dst4, &k);
			PUSH(vec_of(&sc, c));
		}
		/* one address field decides: the rest of the packet is not
		 * looked at */
		if (single && !more && (fields & (F_SRC | F_DST)))
			return single_verdict(sc.hdr, ip, end, iplen, ip->ihl);
	} else if (eth->proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if (!(fams & 2))
			return XDP_PASS;
		if (!v6_ok(ip6, end))
			return XDP_PASS;
		l3end = (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len);
		iplen = (bpf_ntohs(ip6->payload_len) + 40) & 0xffff;
		v6 = 1;
		saddr = &ip6->saddr;
		daddr = &ip6->daddr;
		protokey = ip6->nexthdr;
		l4 = ip6 + 1;
		if ((fields & F_SRC) && (hash6 & 1)) {
			__u32 cls = addr6_class(0, htable(src6_tab), saddr);

			PUSH(vec_of(&sc, &cls));
		} else if (fields & F_SRC) {
			struct lpm6 k = {.prefixlen = 128};
			__u32 *c;

			__builtin_memcpy(k.addr, saddr, 16);
			c = bpf_map_lookup_elem(&src6, &k);
			PUSH(vec_of(&sc, c));
		}
		if ((fields & F_DST) && (hash6 & 2)) {
			__u32 cls = addr6_class(1, htable(dst6_tab), daddr);

			PUSH(vec_of(&sc, &cls));
		} else if (fields & F_DST) {
			struct lpm6 k = {.prefixlen = 128};
			__u32 *c;

			__builtin_memcpy(k.addr, daddr, 16);
			c = bpf_map_lookup_elem(&dst6, &k);
			PUSH(vec_of(&sc, c));
		}
		if (single && !more && (fields & (F_SRC | F_DST)))
			return single_verdict(sc.hdr, 0, end, iplen, 0);
	} else {
		return XDP_PASS;
	}

	/* the transport header only when a rule of the run looks at it (a
	 * truncated one is then left to nftables) */
	if (need_l4 && is_port_proto(protokey)) {
		__u8 *p = l4;
		__u32 need = protokey == IPPROTO_TCP ? 20 : 8;

		/* a truncated transport header is left to nftables */
		if (l4 + need > l3end)
			return XDP_PASS;
		if ((void *)(p + 8) > end)
			return XDP_PASS;
		if (protokey == IPPROTO_TCP) {
			if ((void *)(p + 20) > end)
				return XDP_PASS;
			flagkey = p[13];
		}
		ports = p;
	}
	if (more) {
		if (fields & F_SPORT) {
			__u32 *c;

			kport = ports ? (__u32)ports[0] << 8 | ports[1] : NO_PORTS;
			c = bpf_map_lookup_elem(&sports, &kport);
			PUSH(vec_of(&sc, c));
		}
		if (fields & F_DPORT) {
			__u32 *c;

			kport = ports ? (__u32)ports[2] << 8 | ports[3] : NO_PORTS;
			c = bpf_map_lookup_elem(&dports, &kport);
			PUSH(vec_of(&sc, c));
		}
		if (fields & F_LEN) {
			__u32 *c;

			__u32 klen = iplen & 0xffff;

			c = bpf_map_lookup_elem(&lengths, &klen);
			PUSH(vec_of(&sc, c));
		}
		if (fields & F_PROTO) {
			__u32 *c = bpf_map_lookup_elem(&protos, &protokey);

			PUSH(vec_of(&sc, c));
		}
		if (fields & F_FLAGS) {
			__u32 *c = bpf_map_lookup_elem(&tcpflags, &flagkey);

			PUSH(vec_of(&sc, c));
		}
		if (fields & F_IFACE) {
			PUSH(vec_of(&sc, &ifcls));
		}
		if (nsets > 0) {
			PUSH(set_vec(&sc, 0, &set0, dir_table(set0_tab), v6, saddr, daddr, protokey, ports));
		}
		if (nsets > 1) {
			PUSH(set_vec(&sc, 1, &set1, dir_table(set1_tab), v6, saddr, daddr, protokey, ports));
		}
		if (nsets > 2) {
			PUSH(set_vec(&sc, 2, &set2, dir_table(set2_tab), v6, saddr, daddr, protokey, ports));
		}
		if (nsets > 3) {
			PUSH(set_vec(&sc, 3, &set3, dir_table(set3_tab), v6, saddr, daddr, protokey, ports));
		}
		/* the family's rules, unless an address field or the family test
		 * at the start (one family in the run) has already chosen them */
		if (!(fields & (F_SRC | F_DST)) && fams == 3) {
			__u32 fc = fam_cls[v6];

			PUSH(vec_of(&sc, &fc));
		}
	}

	if (single) {
		/* the first rule of the one vector, from its header */
		return single_verdict(sc.hdr, ip4, end, iplen, ip4 ? ip4->ihl : 0);
	} else if (nwords <= 4) {
		/* up to 256 rules: the words in order, no summary walk */
		__u64 x = conj(sc.v, nsummary);

		if (x) {
			sc.idx = ctz64(x);
		} else if (nwords > 1 && (x = conj(sc.v, nsummary + 1))) {
			sc.idx = 64 + ctz64(x);
		} else if (nwords > 2 && (x = conj(sc.v, nsummary + 2))) {
			sc.idx = 128 + ctz64(x);
		} else if (nwords > 3 && (x = conj(sc.v, nsummary + 3))) {
			sc.idx = 192 + ctz64(x);
		} else {
			return XDP_PASS;
		}
		sc.found = 1;
	} else {
		__u64 ns = nsummary, nw = nwords;
		/* First the word of the lower bound, the largest first word
		 * of the vectors: the rules a blocklist's address class starts
		 * with usually pass the other fields. */
		__u64 w = sc.fw, o = ns + w;

		asm volatile("" : "+r"(o));
		if (w >= nw || o >= ns + nw || o >= VEC_WORDS)
			return XDP_PASS;
		__u64 x = conj(sc.v, o);
		if (x) {
			sc.idx = w * 64 + ctz64(x);
			sc.found = 1;
		} else if (!scan_after(&sc, w)) {
			/* the words after it, out of line: a match in the word
			 * of the lower bound is the common case */
			return XDP_PASS;
		}
	}
	__u32 idx = sc.idx;
	struct rule *r;

	if (!sc.found)
		return XDP_PASS;
	r = bpf_map_lookup_elem(&rules, &idx);
	if (!r || !r->drop)
		return XDP_PASS;
	return count_drop(r->slot, ip4, end, iplen, ip4 ? ip4->ihl : 0);
}

/* When one address field alone decides the run (single, no other field
 * or lookup), its IPv4 side is a table and one interface is attached,
 * the loader loads xdptables_fast_src or xdptables_fast_dst instead of
 * xdptables_classify; when one lookup of a set mirrored as a table does
 * (IPv4 rules only), xdptables_fast_set (xdptables_fast_split for a
 * split set); of a set without ports mirrored as a per-length table
 * (rules of its family only), xdptables_fast_lenset (_lenset6 for an
 * IPv6 set); an address field of ip6tables rules alone,
 * xdptables_fast_src6 or _dst6; when the protocol and one port do (IPv4 rules only),
 * xdptables_fast_port, the protocol and an address field,
 * xdptables_fast_psrc or _pdst, the protocol, a port and an address
 * field, xdptables_fast_ppsrc or _ppdst: the same verdicts with only the
 * work such a run needs, in programs of their own (no stack frame for the search, fewer
 * registers to save, no test of constants the verifier would leave in).
 *
 * The interface is not looked up: such a program runs on the one
 * interface it is built for (attaching another builds a program for
 * both first), and the verdict does not depend on it (no -i). */

/* bpfel: the EtherType's bytes 08 00 and the version and header length
 * byte 45 of an IPv4 header without options, as one word reads them */
#define ETH_IP_WORD 0x0008
#define ETH_IP_IHL5 0x450008

/* The destination MAC of iftab[0] as the first 8 bytes of a frame read
 * as one word hold it, shifted left 16 bits (the 2 bytes after it
 * shifted out). */
volatile const __u64 fast_mac;

/* The IPv4 part of the fast programs: ip's header of ihl words is whole
 * in the frame (ihl 5 is a constant in the common case, so that its
 * tests fold). */
#define FAST_SRC 1
#define FAST_DST 2
#define FAST_SET 3
#define FAST_PORT 4
#define FAST_PSRC 5
#define FAST_PDST 6
#define FAST_PPSRC 7
#define FAST_PPDST 8
#define FAST_SPLIT 9
#define FAST_LENSET 10
/* (the IPv6 kinds: runs of ip6tables rules only, no IPv4 side) */
#define FAST_SRC6 11
#define FAST_DST6 12
#define FAST_LENSET6 13

/* Runs whose rules test the protocol and one other field (IPv4 only)
 * fold the two into one table of answers, fold_slots entries, at
 * fold_base[protocol] (the protocol's class index times the row
 * length) + the other field's value:
 * xdptables_fast_port for one port (-p udp --dport 9; the port, or
 * NO_PORTS for packets without ports; fold_dst: 1 for the destination
 * port, 0 for the source port), xdptables_fast_psrc and _pdst for an
 * address (-p udp -s NET; the class its table gives). */
__u32 fold_tab[1] SEC(".data.fold_tab");
volatile const __u32 fold_slots = 1;
volatile const __u32 fold_base[256];
volatile const __u32 fold_dst = 1;

/* Runs whose rules test the protocol, one port and one address field
 * (-p udp -s NET --dport 9; IPv4 only) fold in two steps, for
 * xdptables_fast_ppsrc and _ppdst: fold_tab, indexed as for
 * xdptables_fast_port, gives the row in fold2_tab (fold2_slots
 * entries) of the packet's protocol and port classes taken together,
 * and that row's entry at the address table's class is the answer. */
__u32 fold2_tab[1] SEC(".data.fold2_tab");
volatile const __u32 fold2_slots = 1;

/* The fold_tab entry of the packet's protocol and port (fold_dst
 * says which), as the general path reads ports (a truncated transport
 * header is left to nftables); 0 to pass the packet. */
static __always_inline int fold_port(struct iphdr *ip, void *end, __u32 ihl, __u32 iplen, __u32 *v)
{
	__u32 proto = ip->protocol, port = NO_PORTS, i;

	if (is_port_proto(proto)) {
		__u8 *l4 = (void *)ip + ihl * 4;

		if ((void *)l4 + (proto == IPPROTO_TCP ? 20 : 8) > (void *)ip + iplen)
			return 0;
		if ((void *)(l4 + 8) > end)
			return 0;
		port = fold_dst ? (__u32)l4[2] << 8 | l4[3] : (__u32)l4[0] << 8 | l4[1];
	}
	i = fold_base[proto] + port;
	if (i >= fold_slots)
		return 0;
	*v = dir_table(fold_tab)[i];
	return 1;
}

static __always_inline int fast_v4(struct iphdr *ip, void *end, __u32 ihl, int kind)
{
	__u32 iplen = bpf_ntohs(ip->tot_len), v;

	if (iplen < ihl * 4 || (void *)ip + iplen > end)
		return XDP_PASS;
	/* fragments: see xdptables_classify */
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	if (kind == FAST_SRC) {
		if (!dir_value(dir_table(src4_dir), src4_slots, bpf_ntohl(ip->saddr), &v))
			return XDP_PASS;
	} else if (kind == FAST_DST) {
		if (!dir_value(dir_table(dst4_dir), dst4_slots, bpf_ntohl(ip->daddr), &v))
			return XDP_PASS;
	} else if (kind == FAST_SET || kind == FAST_SPLIT) {
		__u32 a = (set_cfg[0] & SET_ADDR_DST) ? ip->daddr : ip->saddr;

		/* (the plain table's program has no code of the split
		 * set's: it would cost it registers) */
		if (kind == FAST_SET && !dir_value(dir_table(set0_tab), set_slots[0], bpf_ntohl(a), &v))
			return XDP_PASS;
		if (kind == FAST_SPLIT && !split_value(0, dir_table(set0_tab), set_slots[0], bpf_ntohl(a), &v))
			return XDP_PASS;
		v = set_cls[v & 1];
	} else if (kind == FAST_LENSET) {
		int m = lenset_test(0, htable((__u64 *)set0_tab), set_slots[0], 0,
				    (set_cfg[0] & SET_ADDR_DST) ? &ip->daddr : &ip->saddr, 0);

		if (m < 0)
			return XDP_PASS;
		v = set_cls[m & 1];
	} else if (kind == FAST_PORT) {
		if (!fold_port(ip, end, ihl, iplen, &v))
			return XDP_PASS;
	} else if (kind == FAST_PPSRC || kind == FAST_PPDST) {
		__u32 row, i;

		if (!fold_port(ip, end, ihl, iplen, &row))
			return XDP_PASS;
		if (kind == FAST_PPSRC) {
			if (!dir_value(dir_table(src4_dir), src4_slots, bpf_ntohl(ip->saddr), &v))
				return XDP_PASS;
		} else {
			if (!dir_value(dir_table(dst4_dir), dst4_slots, bpf_ntohl(ip->daddr), &v))
				return XDP_PASS;
		}
		i = row + (v & CLS_MASK);
		if (i >= fold2_slots)
			return XDP_PASS;
		v = dir_table(fold2_tab)[i];
	} else {
		__u32 i;

		if (kind == FAST_PSRC) {
			if (!dir_value(dir_table(src4_dir), src4_slots, bpf_ntohl(ip->saddr), &v))
				return XDP_PASS;
		} else {
			if (!dir_value(dir_table(dst4_dir), dst4_slots, bpf_ntohl(ip->daddr), &v))
				return XDP_PASS;
		}
		i = fold_base[ip->protocol] + (v & CLS_MASK);
		if (i >= fold_slots)
			return XDP_PASS;
		v = dir_table(fold_tab)[i];
	}
	/* with single, the value is the answer */
	return single_verdict(v, ip, end, iplen, ihl);
}

static __always_inline int fast_v6(struct ipv6hdr *ip6, void *end, int kind)
{
	struct lpm6 k = {.prefixlen = 128};
	__u32 *c, v;
	int src = kind == FAST_SRC || kind == FAST_SRC6;

	if (!v6_ok(ip6, end))
		return XDP_PASS;
	if (kind == FAST_LENSET6) {
		int m = lenset_test(0, htable((__u64 *)set0_tab), set_slots[0], 1,
				    (set_cfg[0] & SET_ADDR_DST) ? &ip6->daddr : &ip6->saddr, 0);

		if (m < 0)
			return XDP_PASS;
		v = set_cls[m & 1];
	} else if (src && (hash6 & 1)) {
		v = addr6_class(0, htable(src6_tab), &ip6->saddr);
	} else if (!src && (hash6 & 2)) {
		v = addr6_class(1, htable(dst6_tab), &ip6->daddr);
	} else {
		if (src) {
			__builtin_memcpy(k.addr, &ip6->saddr, 16);
			c = bpf_map_lookup_elem(&src6, &k);
		} else {
			__builtin_memcpy(k.addr, &ip6->daddr, 16);
			c = bpf_map_lookup_elem(&dst6, &k);
		}
		if (!c)
			return XDP_PASS;
		v = *c;
	}
	return single_verdict(v, 0, end, (bpf_ntohs(ip6->payload_len) + 40) & 0xffff, 0);
}

static __always_inline int fast_path(struct xdp_md *ctx, int kind)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct eth);
	__u64 dst = *(__u64 *)data;
	__u32 proto;

	/* shorter frames hold no IPv4 or IPv6 header */
	if ((void *)(ip + 1) > end)
		return XDP_PASS;
	/* ip_rcv drops frames for other hosts before PREROUTING (the
	 * group bit: broadcast and multicast) */
	if (!(dst & 1) && dst << 16 != fast_mac)
		return XDP_PASS;
	proto = ((__u32 *)data)[3];
	if (kind == FAST_SRC6 || kind == FAST_DST6 || kind == FAST_LENSET6) {
		if ((proto & 0xffff) == bpf_htons(ETH_P_IPV6))
			return fast_v6((void *)ip, end, kind);
		return XDP_PASS;
	}
	if ((proto & 0xffffff) == ETH_IP_IHL5)
		return fast_v4(ip, end, 5, kind);
	if ((proto & 0xffff) == ETH_IP_WORD) {
		if (ip->version != 4 || ip->ihl < 5)
			return XDP_PASS;
		return fast_v4(ip, end, ip->ihl, kind);
	}
	if ((kind == FAST_SRC || kind == FAST_DST) && (fams & 2) &&
	    (proto & 0xffff) == bpf_htons(ETH_P_IPV6))
		return fast_v6((void *)ip, end, kind);
	return XDP_PASS;
}

SEC("xdp")
int xdptables_fast_src(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_SRC);
}

SEC("xdp")
int xdptables_fast_dst(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_DST);
}

SEC("xdp")
int xdptables_fast_set(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_SET);
}

SEC("xdp")
int xdptables_fast_split(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_SPLIT);
}

SEC("xdp")
int xdptables_fast_lenset(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_LENSET);
}

SEC("xdp")
int xdptables_fast_lenset6(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_LENSET6);
}

SEC("xdp")
int xdptables_fast_src6(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_SRC6);
}

SEC("xdp")
int xdptables_fast_dst6(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_DST6);
}

SEC("xdp")
int xdptables_fast_port(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_PORT);
}

SEC("xdp")
int xdptables_fast_ppsrc(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_PPSRC);
}

SEC("xdp")
int xdptables_fast_ppdst(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_PPDST);
}

SEC("xdp")
int xdptables_fast_psrc(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_PSRC);
}

SEC("xdp")
int xdptables_fast_pdst(struct xdp_md *ctx)
{
	return fast_path(ctx, FAST_PDST);
}

/* The ceiling for benchmarks: drop everything. */
SEC("xdp")
int xdptables_drop_all(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char __license[] SEC("license") = "Dual BSD/GPL";

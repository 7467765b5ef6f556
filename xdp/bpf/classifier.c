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

/* Set by the loader for each compiled classifier. */
volatile const __u32 nwords = 1;
volatile const __u32 nsummary = 1;

struct lpm4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct lpm6 {
	__u32 prefixlen;
	__u8 addr[16];
};

/* Ports and lengths: a presence byte, then the 16-bit value big-endian. */
struct lpm16 {
	__u32 prefixlen;
	__u8 data[3];
};

struct iface {
	__u32 cls;
	__u8 mac[6];
	__u8 pad[2];
};

struct rule {
	__u32 slot;
	__u32 drop;
};

struct counter {
	__u64 packets;
	__u64 bytes;
};

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
LPM(src6, struct lpm6);
LPM(dst6, struct lpm6);
LPM(sports, struct lpm16);
LPM(dports, struct lpm16);
LPM(lengths, struct lpm16);

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

/* class -> summary words, then rule words; value size set by the loader */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[MAX_SUMMARY + MAX_WORDS]);
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

static __always_inline __u32 ctz64(__u64 x)
{
	__u32 n = 0;

	if (!(x & 0xffffffffULL)) {
		n += 32;
		x >>= 32;
	}
	if (!(x & 0xffff)) {
		n += 16;
		x >>= 16;
	}
	if (!(x & 0xff)) {
		n += 8;
		x >>= 8;
	}
	if (!(x & 0xf)) {
		n += 4;
		x >>= 4;
	}
	if (!(x & 0x3)) {
		n += 2;
		x >>= 2;
	}
	if (!(x & 0x1))
		n += 1;
	return n;
}

static __always_inline __u64 *vec(__u32 *cls)
{
	if (!cls)
		return 0;
	return bpf_map_lookup_elem(&vecs, cls);
}

static __always_inline int same_mac(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] &&
	       a[4] == b[4] && a[5] == b[5];
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

static __always_inline int v4_csum_ok(struct iphdr *iph, __u32 ihl, void *end)
{
	__u16 *w = (__u16 *)iph;
	__u32 sum = 0;

	/* the fixed header is known to be in the packet */
	for (int i = 0; i < 10; i++)
		sum += w[i];
	for (int i = 10; i < 30; i++) {
		__u16 *q = w + i;

		if (i >= ihl * 2)
			break;
		asm volatile("" : "+r"(q));
		if ((void *)(q + 1) > end)
			return 0;
		sum += *q;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

struct scan {
	__u64 *v[8];
	__u64 m, s;
	__u32 idx;
	int found;
};

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
	if (w >= nw || o >= ns + nw || o >= MAX_SUMMARY + MAX_WORDS)
		return 1;
	__u64 *v0 = sc->v[0], *v1 = sc->v[1], *v2 = sc->v[2], *v3 = sc->v[3],
	      *v4 = sc->v[4], *v5 = sc->v[5], *v6 = sc->v[6], *v7 = sc->v[7];
	__u64 x = v0[o] & v1[o] & v2[o] & v3[o] & v4[o] & v5[o] & v6[o] & v7[o];
	if (x) {
		sc->idx = w * 64 + ctz64(x);
		sc->found = 1;
		return 1;
	}
	return 0;
}

SEC("xdp")
int xdptables_classify(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 ifindex = ctx->ingress_ifindex;
	__u32 *csrc, *cdst, *cproto, *cflags, *csport, *cdport, *clen;
	struct lpm16 kport = {.prefixlen = 8}, klen = {.prefixlen = 24};
	__u32 flagkey = 256, protokey, iplen;
	void *l4, *l3end;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;

	struct iface *dev = bpf_map_lookup_elem(&ifaces, &ifindex);
	if (!dev)
		return XDP_PASS;
	/* ip_rcv drops frames for other hosts before PREROUTING */
	if (!(eth->h_dest[0] & 1) && !same_mac(eth->h_dest, dev->mac))
		return XDP_PASS;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		struct lpm4 ks = {.prefixlen = 32}, kd = {.prefixlen = 32};

		if ((void *)(ip + 1) > end || ip->version != 4 || ip->ihl < 5)
			return XDP_PASS;
		iplen = bpf_ntohs(ip->tot_len);
		l3end = (void *)ip + iplen;
		if (iplen < ip->ihl * 4 || l3end > end)
			return XDP_PASS;
		if (!v4_csum_ok(ip, ip->ihl, end))
			return XDP_PASS;
		/* Fragments: raw PREROUTING sees reassembled packets when
		 * defragmentation is loaded, single fragments otherwise. */
		if (ip->frag_off & bpf_htons(0x3fff))
			return XDP_PASS;
		__builtin_memcpy(ks.addr, &ip->saddr, 4);
		__builtin_memcpy(kd.addr, &ip->daddr, 4);
		csrc = bpf_map_lookup_elem(&src4, &ks);
		cdst = bpf_map_lookup_elem(&dst4, &kd);
		protokey = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		struct lpm6 ks = {.prefixlen = 128}, kd = {.prefixlen = 128};

		if ((void *)(ip6 + 1) > end || ip6->version != 6)
			return XDP_PASS;
		l3end = (void *)(ip6 + 1) + bpf_ntohs(ip6->payload_len);
		if (l3end > end || is_v6_ext(ip6->nexthdr))
			return XDP_PASS;
		/* ipv6_rcv drops these before PREROUTING */
		if (ip6->saddr.in6_u.u6_addr8[0] == 0xff ||
		    (ip6->daddr.in6_u.u6_addr8[0] == 0xff &&
		     (ip6->daddr.in6_u.u6_addr8[1] & 0xf) <= 1))
			return XDP_PASS;
		if ((ip6->saddr.in6_u.u6_addr32[0] | ip6->saddr.in6_u.u6_addr32[1] |
		     ip6->saddr.in6_u.u6_addr32[2]) == 0 &&
		    ip6->saddr.in6_u.u6_addr32[3] == bpf_htonl(1))
			return XDP_PASS;
		if ((ip6->daddr.in6_u.u6_addr32[0] | ip6->daddr.in6_u.u6_addr32[1] |
		     ip6->daddr.in6_u.u6_addr32[2]) == 0 &&
		    ip6->daddr.in6_u.u6_addr32[3] == bpf_htonl(1))
			return XDP_PASS;
		iplen = (bpf_ntohs(ip6->payload_len) + 40) & 0xffff;
		__builtin_memcpy(ks.addr, &ip6->saddr, 16);
		__builtin_memcpy(kd.addr, &ip6->daddr, 16);
		csrc = bpf_map_lookup_elem(&src6, &ks);
		cdst = bpf_map_lookup_elem(&dst6, &kd);
		protokey = ip6->nexthdr;
		l4 = ip6 + 1;
	} else {
		return XDP_PASS;
	}

	if (is_port_proto(protokey)) {
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
		kport.prefixlen = 24;
		kport.data[0] = 1;
		kport.data[1] = p[0];
		kport.data[2] = p[1];
		csport = bpf_map_lookup_elem(&sports, &kport);
		kport.data[1] = p[2];
		kport.data[2] = p[3];
		cdport = bpf_map_lookup_elem(&dports, &kport);
	} else {
		csport = bpf_map_lookup_elem(&sports, &kport);
		cdport = bpf_map_lookup_elem(&dports, &kport);
	}
	klen.data[0] = 1;
	klen.data[1] = iplen >> 8;
	klen.data[2] = iplen & 0xff;
	clen = bpf_map_lookup_elem(&lengths, &klen);
	cproto = bpf_map_lookup_elem(&protos, &protokey);
	cflags = bpf_map_lookup_elem(&tcpflags, &flagkey);

	__u64 *vi = vec(&dev->cls), *vs = vec(csrc), *vd = vec(cdst),
	      *vp = vec(cproto), *vf = vec(cflags), *vsp = vec(csport),
	      *vdp = vec(cdport), *vl = vec(clen);
	if (!vi || !vs || !vd || !vp || !vf || !vsp || !vdp || !vl)
		return XDP_PASS;

	struct scan sc = {.v = {vi, vs, vd, vp, vf, vsp, vdp, vl}};

	for (__u64 s = 0; s < MAX_SUMMARY; s++) {
		if (s >= nsummary)
			break;
		sc.s = s;
		sc.m = vi[s] & vs[s] & vd[s] & vp[s] & vf[s] & vsp[s] & vdp[s] &
		       vl[s];
		/* bpf_loop: the verifier checks the body once, not per word */
		if (sc.m)
			bpf_loop(64, scan_word, &sc, 0);
		if (sc.found)
			break;
	}
	__u32 idx = sc.idx;
	int found = sc.found;
	if (!found)
		return XDP_PASS;

	struct rule *r = bpf_map_lookup_elem(&rules, &idx);
	if (!r || !r->drop)
		return XDP_PASS;
	struct counter *c = bpf_map_lookup_elem(&counters, &r->slot);
	if (c) {
		c->packets++;
		c->bytes += iplen;
	}
	return XDP_DROP;
}

/* The ceiling for benchmarks: drop everything. */
SEC("xdp")
int xdptables_drop_all(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char __license[] SEC("license") = "Dual BSD/GPL";

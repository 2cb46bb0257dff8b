// SPDX-License-Identifier: GPL-2.0
// The testbed's model of an eBPF tunnel datapath (Cilium's, in its vxlan and geneve modes): the per-packet work its
// tc programs do at the same two hooks, with the same kernel helpers, on the testbed's address plan.
//
//   from_pod         tc ingress of a pod's host-side veth (a packet leaving the pod): parse, connection tracking
//                    (lookup, create, count), the destination's ipcache entry (identity and node), egress policy,
//                    metrics. A packet for another node's pod gets its TTL decremented, its inner MACs rewritten and
//                    its tunnel key set (a collect-metadata device), and is redirected to the tunnel device,
//                    bypassing the node's routing and netfilter; anything else goes on to the stack.
//   from_pod_routed  the same without the tunnel: native routing, or an encrypting device the stack routes to.
//   to_overlay       tc egress of the tunnel device: a packet the stack routed there (a host-network client, a
//                    service's DNAT) gets its tunnel key from the ipcache; one from from_pod already has it.
//   from_overlay     tc ingress of the device packets from other nodes arrive on (the tunnel device, or the node's
//                    uplink in native routing): connection tracking, the source's ipcache entry, ingress policy,
//                    the endpoint lookup, metrics; then the stack delivers it to the pod by its /32 route.
//
// What it leaves out of Cilium's programs: the agent (it fills the maps; here the first miss fills the ipcache from
// the address plan), tail calls, NAT, load balancing, events. Each program instance has maps of its own (conntrack
// per interface, not per node): the lookups cost the same, and no map is pinned or shared across the testbed's
// node namespaces. The object is the same for every node: the node is read from the pod's address, and the tunnel
// device has the same interface index (TUNNEL_IFINDEX) in every node namespace.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef TUNNEL_IFINDEX
#error "TUNNEL_IFINDEX (the tunnel device's interface index in every node namespace) is required"
#endif
#ifndef VNI
#error "VNI is required"
#endif

// the testbed's address plan (substrates/local/datapath.py): node i is 10.77.0.(10+i) on the LAN, its pod CIDR
// 10.244.i.0/24, its tunnel device's MAC 02:eb:0b:i:00:00
#define LAN_NET 0x0a4d0000u  /* 10.77.0.0 */
#define POD_NET 0x0af40000u  /* 10.244.0.0 */

struct ct_key {
    __u32 saddr, daddr;
    __u16 sport, dport;
    __u8 proto, dir, pad[2];
};

struct ct_entry {
    __u64 packets, bytes;
    __u64 last_seen;
    __u32 flags;
    __u32 pad;
};

struct policy_key {
    __u32 peer;  // the peer's address (Cilium keys on its security identity)
    __u16 dport;
    __u8 proto, dir;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct ct_key);
    __type(value, struct ct_entry);
} ct SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, struct policy_key);
    __type(value, __u64);
} policy SEC(".maps");

// the ipcache: address -> (identity, tunnel endpoint), longest prefix first, as Cilium finds a destination's node
struct ipcache_key {
    __u32 prefixlen;
    __u32 addr;  // network order
};

struct ipcache_entry {
    __u32 identity;
    __u32 tunnel_endpoint;  // the node's address, host order
};

struct {
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(max_entries, 4096);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, struct ipcache_key);
    __type(value, struct ipcache_entry);
} ipcache SEC(".maps");

// local endpoints: a pod address -> its endpoint (looked up before delivery)
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u64);
} endpoints SEC(".maps");

// forwarding metrics: per CPU, per direction and verdict, one update per packet
struct metrics_key {
    __u8 reason, dir, pad[2];
};

struct metrics_value {
    __u64 packets, bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 64);
    __type(key, struct metrics_key);
    __type(value, struct metrics_value);
} metrics SEC(".maps");

struct tuple {
    struct iphdr *ip;
    __u32 ip_off;
    __u32 saddr, daddr;
    __u16 sport, dport;
    __u8 proto;
};

static __always_inline int parse(struct __sk_buff *skb, struct tuple *t)
{
    void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
        return -1;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->ihl != 5)
        return -1;
    t->ip = ip;
    t->ip_off = sizeof(*eth);
    t->saddr = bpf_ntohl(ip->saddr);
    t->daddr = bpf_ntohl(ip->daddr);
    t->proto = ip->protocol;
    t->sport = t->dport = 0;
    if (ip->protocol == IPPROTO_TCP || ip->protocol == IPPROTO_UDP) {
        __u16 *ports = (void *)(ip + 1);
        if ((void *)(ports + 2) > end)
            return -1;
        t->sport = bpf_ntohs(ports[0]);
        t->dport = bpf_ntohs(ports[1]);
    }
    return 0;
}

// conntrack: find the connection in either direction, create it on its first packet, count the packet
static __always_inline void track(struct __sk_buff *skb, const struct tuple *t, __u8 dir)
{
    struct ct_key key = {.saddr = t->saddr, .daddr = t->daddr, .sport = t->sport, .dport = t->dport,
                         .proto = t->proto, .dir = dir};
    struct ct_entry *e = bpf_map_lookup_elem(&ct, &key);
    if (!e) {
        struct ct_key reply = {.saddr = t->daddr, .daddr = t->saddr, .sport = t->dport, .dport = t->sport,
                               .proto = t->proto, .dir = dir ^ 1};
        e = bpf_map_lookup_elem(&ct, &reply);
    }
    if (!e) {
        struct ct_entry fresh = {.packets = 0};
        bpf_map_update_elem(&ct, &key, &fresh, BPF_NOEXIST);
        e = bpf_map_lookup_elem(&ct, &key);
        if (!e)
            return;
    }
    __sync_fetch_and_add(&e->packets, 1);
    __sync_fetch_and_add(&e->bytes, skb->len);
    e->last_seen = bpf_ktime_get_ns();
}

// policy: an allow-all policy, looked up per packet as an L3/L4 policy is (exact, then the wildcard entry)
static __always_inline void check_policy(const struct tuple *t, __u32 peer, __u8 dir)
{
    struct policy_key key = {.peer = peer, .dport = t->dport, .proto = t->proto, .dir = dir};
    if (!bpf_map_lookup_elem(&policy, &key)) {
        key.dport = 0;
        key.proto = 0;
        bpf_map_lookup_elem(&policy, &key);
    }
}

static __always_inline int pod_node(__u32 addr)
{
    if ((addr & 0xffff0000u) != POD_NET)
        return -1;
    return (addr >> 8) & 0xff;
}

// the ipcache's answer for an address; the agent would have written it, here the first miss fills it from the
// address plan (a /24 per node's pod CIDR), so every later packet pays the trie lookup alone
static __always_inline struct ipcache_entry *ipcache_lookup(__u32 addr)
{
    struct ipcache_key key = {.prefixlen = 32, .addr = bpf_htonl(addr)};
    struct ipcache_entry *e = bpf_map_lookup_elem(&ipcache, &key);
    if (e)
        return e;
    int node = pod_node(addr);
    if (node < 0)
        return 0;
    struct ipcache_key cidr = {.prefixlen = 24, .addr = bpf_htonl(addr & 0xffffff00u)};
    struct ipcache_entry fill = {.identity = 256 + node, .tunnel_endpoint = LAN_NET + 10 + node};
    bpf_map_update_elem(&ipcache, &cidr, &fill, BPF_ANY);
    return bpf_map_lookup_elem(&ipcache, &key);
}

static __always_inline void count(struct __sk_buff *skb, __u8 reason, __u8 dir)
{
    struct metrics_key key = {.reason = reason, .dir = dir};
    struct metrics_value *m = bpf_map_lookup_elem(&metrics, &key);
    if (!m) {
        struct metrics_value zero = {};
        bpf_map_update_elem(&metrics, &key, &zero, BPF_NOEXIST);
        m = bpf_map_lookup_elem(&metrics, &key);
        if (!m)
            return;
    }
    m->packets++;
    m->bytes += skb->len;
}

// the work every packet leaving a pod gets; the destination's entry, or null outside the pod network
static __always_inline struct ipcache_entry *leaving_pod(struct __sk_buff *skb, const struct tuple *t)
{
    track(skb, t, 0);
    struct ipcache_entry *dst = ipcache_lookup(t->daddr);
    check_policy(t, dst ? dst->identity : 2, 0);
    count(skb, 0, 0);
    return dst;
}

SEC("tc/from_pod")
int from_pod(struct __sk_buff *skb)
{
    struct tuple t;
    if (parse(skb, &t) < 0)
        return TC_ACT_OK;
    struct ipcache_entry *dst = leaving_pod(skb, &t);
    int here = pod_node(t.saddr), there = pod_node(t.daddr);
    if (!dst || here < 0 || there == here)
        return TC_ACT_OK;  // this node's pod or outside the pod network: the stack routes it

    if (t.ip->ttl <= 1)
        return TC_ACT_SHOT;
    __u16 old = *(__u16 *)&t.ip->ttl, new;
    t.ip->ttl--;
    new = *(__u16 *)&t.ip->ttl;
    bpf_l3_csum_replace(skb, t.ip_off + __builtin_offsetof(struct iphdr, check), old, new, 2);

    // the inner frame goes from this node's tunnel device to the peer's, so the peer's device takes it as its own
    unsigned char macs[12] = {0x02, 0xeb, 0x0b, (unsigned char)there, 0, 0,
                              0x02, 0xeb, 0x0b, (unsigned char)here, 0, 0};
    bpf_skb_store_bytes(skb, 0, macs, sizeof(macs), 0);

    struct bpf_tunnel_key key = {.remote_ipv4 = dst->tunnel_endpoint, .tunnel_id = VNI, .tunnel_ttl = 64};
    if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0) < 0)
        return TC_ACT_SHOT;
    return bpf_redirect(TUNNEL_IFINDEX, 0);
}

SEC("tc/from_pod_routed")
int from_pod_routed(struct __sk_buff *skb)
{
    struct tuple t;
    if (parse(skb, &t) == 0)
        leaving_pod(skb, &t);
    return TC_ACT_OK;
}

SEC("tc/to_overlay")
int to_overlay(struct __sk_buff *skb)
{
    struct bpf_tunnel_key key = {};
    if (bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0) == 0)
        return TC_ACT_OK;  // encapsulated by from_pod
    struct tuple t;
    if (parse(skb, &t) < 0)
        return TC_ACT_OK;
    struct ipcache_entry *dst = ipcache_lookup(t.daddr);
    if (!dst)
        return TC_ACT_SHOT;  // nothing but the pod network is routed to the tunnel
    key.remote_ipv4 = dst->tunnel_endpoint;
    key.tunnel_id = VNI;
    key.tunnel_ttl = 64;
    if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0) < 0)
        return TC_ACT_SHOT;
    return TC_ACT_OK;
}

SEC("tc/from_overlay")
int from_overlay(struct __sk_buff *skb)
{
    struct tuple t;
    if (parse(skb, &t) < 0)
        return TC_ACT_OK;
    track(skb, &t, 1);
    struct ipcache_entry *src = ipcache_lookup(t.saddr);
    check_policy(&t, src ? src->identity : 2, 1);
    bpf_map_lookup_elem(&endpoints, &t.daddr);
    count(skb, 0, 1);
    return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: GPL-2.0
// The testbed's model of an eBPF socket load balancer (Cilium's with kube-proxy replacement): cgroup hooks that every
// socket operation of a pod's processes passes through, on the testbed's ClusterIP services.
//
//   sock_connect4      connect() of a TCP or UDP socket: a ClusterIP:port is rewritten to its backend before the
//                      kernel routes anything, and the socket's reverse entry recorded (cookie, backend -> service)
//   sock_sendmsg4      sendto()/sendmsg() of an unconnected UDP socket: the same, per message
//   sock_recvmsg4      recvfrom()/recvmsg() of a UDP socket: the sender's address is looked up among the socket's
//                      reverse entries and shown as the service it answered for
//   sock_getpeername4  getpeername(): the same
//
// Every pod's process runs in a cgroup (v2) these programs are attached to (substrates/local/sock_lb.py), so every
// UDP message a pod sends or receives pays a service lookup or a reverse lookup, hit or miss, as it does on a real
// node, where the programs sit on the root cgroup. With a service translated here, the service proxy's DNAT rules
// are not reached: the packet leaves the pod addressed to the backend.
// The hooks report to the node's agent where Cilium's socket load balancer tracing does (its agent's `trace-sock`,
// on by default; bpf_sock.c's send_trace_sock_notify4): on the way out an event once the destination is found to be
// a service and one after the translation; on the way back an event for every operation, before the reverse
// lookup, and one after a translation. An event is 32 bytes on `events`, which the node's monitor (sock_lb_loader
// monitor, one process per node, as the agent's perf reader) reads as it comes, one wake-up an event. So each UDP
// message a pod receives wakes the monitor, and a message it sends to a pod does not.
// What it leaves out of Cilium's: the service's backend selection among several (one backend here), session
// affinity, health checks, host-network sockets (a real node runs the hooks for them too), IPv6, what the agent does
// with an event (Hubble decodes it into a flow; the monitor here only counts it), and the agent that fills the maps
// (here the testbed fills `services` when it adds a service).

#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

struct svc_key {
    __u32 addr;   // the ClusterIP, network order
    __u16 port;   // network order
    __u8 proto;   // IPPROTO_TCP or IPPROTO_UDP
    __u8 pad;
};

struct svc_backend {
    __u32 addr;
    __u16 port;
    __u16 pad;
};

struct rev_key {
    __u64 cookie;  // the socket's cookie
    __u32 addr;    // the backend it was sent to
    __u16 port;
    __u16 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 65536);
    __type(key, struct svc_key);
    __type(value, struct svc_backend);
} services SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 262144);
    __type(key, struct rev_key);
    __type(value, struct svc_backend);
} reverse SEC(".maps");

struct sock_event {
    __u8 type;    // 1: the operation as the hook found it, 2: after a translation
    __u8 point;   // 0: towards a service (connect, sendmsg), 1: back from it (recvmsg, getpeername)
    __u8 proto;
    __u8 pad;
    __u32 addr;   // the address the hook saw (or wrote), network order
    __u16 port;
    __u16 pad2;
    __u32 pad3;
    __u64 cookie;
    __u64 cgroup;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, sizeof(__u32));
} events SEC(".maps");

// per CPU: [0] translated to a backend, [1] translated back to the service, [2] operations that matched nothing
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 3);
    __type(key, __u32);
    __type(value, __u64);
} counts SEC(".maps");

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counts, &which);
    if (c)
        *c += 1;
}

static __always_inline void notify(struct bpf_sock_addr *ctx, __u8 type, __u8 point, __u8 proto, __u32 addr,
                                   __u16 port, __u64 cookie)
{
    struct sock_event ev = {.type = type, .point = point, .proto = proto, .addr = addr, .port = port,
                            .cookie = cookie, .cgroup = bpf_get_current_cgroup_id()};
    bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
}

static __always_inline int to_backend(struct bpf_sock_addr *ctx, __u8 proto)
{
    struct svc_key key = {.addr = ctx->user_ip4, .port = (__u16)ctx->user_port, .proto = proto};
    struct svc_backend *be = bpf_map_lookup_elem(&services, &key);
    if (!be) {
        count(2);
        return 1;
    }
    __u64 cookie = bpf_get_socket_cookie(ctx);
    notify(ctx, 1, 0, proto, key.addr, key.port, cookie);
    struct rev_key rk = {.cookie = cookie, .addr = be->addr, .port = be->port};
    struct svc_backend svc = {.addr = key.addr, .port = key.port};
    bpf_map_update_elem(&reverse, &rk, &svc, BPF_ANY);
    ctx->user_ip4 = be->addr;
    ctx->user_port = be->port;
    notify(ctx, 2, 0, proto, be->addr, be->port, cookie);
    count(0);
    return 1;
}

static __always_inline int to_service(struct bpf_sock_addr *ctx)
{
    __u64 cookie = bpf_get_socket_cookie(ctx);
    struct rev_key rk = {.cookie = cookie, .addr = ctx->user_ip4, .port = (__u16)ctx->user_port};
    __u8 proto = (__u8)ctx->protocol;
    notify(ctx, 1, 1, proto, rk.addr, rk.port, cookie);
    struct svc_backend *svc = bpf_map_lookup_elem(&reverse, &rk);
    if (!svc) {
        count(2);
        return 1;
    }
    ctx->user_ip4 = svc->addr;
    ctx->user_port = svc->port;
    notify(ctx, 2, 1, proto, svc->addr, svc->port, cookie);
    count(1);
    return 1;
}

SEC("cgroup/connect4")
int sock_connect4(struct bpf_sock_addr *ctx)
{
    __u32 proto = ctx->protocol;
    if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
        return 1;
    return to_backend(ctx, (__u8)proto);
}

SEC("cgroup/sendmsg4")
int sock_sendmsg4(struct bpf_sock_addr *ctx)
{
    return to_backend(ctx, IPPROTO_UDP);
}

SEC("cgroup/recvmsg4")
int sock_recvmsg4(struct bpf_sock_addr *ctx)
{
    return to_service(ctx);
}

SEC("cgroup/getpeername4")
int sock_getpeername4(struct bpf_sock_addr *ctx)
{
    return to_service(ctx);
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: GPL-2.0
// Loads sock_lb.c's programs onto a cgroup and edits their service map (substrates/local/sock_lb.py runs it).
//
//   sock_lb_loader attach OBJECT CGROUP_DIR       load, attach every program to the cgroup (the cgroup keeps them
//                                                 until it is removed), print the maps' ids as JSON
//   sock_lb_loader service MAP_ID VIP PORT BACKEND BPORT   VIP:PORT -> BACKEND:BPORT, TCP and UDP
//   sock_lb_loader flush MAP_ID                   delete every service
//   sock_lb_loader counts MAP_ID                  the counts map's totals over CPUs: translated reversed missed
//   sock_lb_loader monitor MAP_ID                 the node's monitor: read the events perf array as they come (a
//                                                 wake-up an event, 64 pages a CPU, as Cilium's agent reads its
//                                                 own), print `ready`, and on SIGTERM or SIGINT what it read:
//                                                 `events N translated T lost L`
//
// Exit 0 on success; otherwise a one-line message on stderr and exit 1.

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct svc_key {
    __u32 addr;
    __u16 port;
    __u8 proto;
    __u8 pad;
};

struct svc_backend {
    __u32 addr;
    __u16 port;
    __u16 pad;
};

static int fail(const char *what, int err)
{
    fprintf(stderr, "sock_lb_loader: %s: %s\n", what, strerror(err < 0 ? -err : err));
    return 1;
}

static unsigned int map_id(struct bpf_object *obj, const char *name)
{
    struct bpf_map *map = bpf_object__find_map_by_name(obj, name);
    struct bpf_map_info info;
    __u32 len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (!map || bpf_obj_get_info_by_fd(bpf_map__fd(map), &info, &len))
        return 0;
    return info.id;
}

static int attach(const char *path, const char *cgroup)
{
    struct bpf_object *obj = bpf_object__open_file(path, NULL);
    struct bpf_program *prog;
    int cg, err;
    if (!obj)
        return fail(path, errno);
    err = bpf_object__load(obj);
    if (err)
        return fail("loading the programs", err);
    cg = open(cgroup, O_RDONLY | O_DIRECTORY);
    if (cg < 0)
        return fail(cgroup, errno);
    bpf_object__for_each_program(prog, obj) {
        err = bpf_prog_attach(bpf_program__fd(prog), cg, bpf_program__expected_attach_type(prog),
                              BPF_F_ALLOW_MULTI);
        if (err) {
            char what[256];
            snprintf(what, sizeof(what), "attaching %s to %s", bpf_program__name(prog), cgroup);
            return fail(what, errno);
        }
    }
    printf("{\"services\": %u, \"reverse\": %u, \"counts\": %u, \"events\": %u}\n", map_id(obj, "services"),
           map_id(obj, "reverse"), map_id(obj, "counts"), map_id(obj, "events"));
    close(cg);
    bpf_object__close(obj);  // the cgroup holds the programs, and they their maps
    return 0;
}

static int map_fd(const char *id)
{
    char *end;
    unsigned long n = strtoul(id, &end, 10);
    if (*id == '\0' || *end != '\0' || n == 0) {
        fprintf(stderr, "sock_lb_loader: not a map id: %s\n", id);
        exit(1);
    }
    int fd = bpf_map_get_fd_by_id((__u32)n);
    if (fd < 0) {
        fprintf(stderr, "sock_lb_loader: map %s: %s\n", id, strerror(errno));
        exit(1);
    }
    return fd;
}

static __u32 ipv4(const char *text)
{
    struct in_addr a;
    if (inet_pton(AF_INET, text, &a) != 1) {
        fprintf(stderr, "sock_lb_loader: not an IPv4 address: %s\n", text);
        exit(1);
    }
    return a.s_addr;
}

static __u16 port(const char *text)
{
    char *end;
    long n = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || n < 1 || n > 65535) {
        fprintf(stderr, "sock_lb_loader: not a port: %s\n", text);
        exit(1);
    }
    return htons((__u16)n);
}

static int service(char **argv)
{
    int fd = map_fd(argv[0]);
    __u8 protos[] = {IPPROTO_TCP, IPPROTO_UDP};
    for (unsigned i = 0; i < sizeof(protos); i++) {
        struct svc_key key = {.addr = ipv4(argv[1]), .port = port(argv[2]), .proto = protos[i]};
        struct svc_backend be = {.addr = ipv4(argv[3]), .port = port(argv[4])};
        if (bpf_map_update_elem(fd, &key, &be, BPF_ANY))
            return fail("adding the service", errno);
    }
    return 0;
}

static int flush(const char *id)
{
    int fd = map_fd(id);
    struct svc_key key;
    while (bpf_map_get_next_key(fd, NULL, &key) == 0)
        if (bpf_map_delete_elem(fd, &key))
            return fail("deleting a service", errno);
    return 0;
}

static int counts(const char *id)
{
    int fd = map_fd(id);
    int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0)
        return fail("counting CPUs", cpus);
    __u64 *per_cpu = calloc((size_t)cpus, sizeof(__u64));
    for (__u32 k = 0; k < 3; k++) {
        __u64 total = 0;
        if (bpf_map_lookup_elem(fd, &k, per_cpu))
            return fail("reading the counts", errno);
        for (int c = 0; c < cpus; c++)
            total += per_cpu[c];
        printf(k < 2 ? "%llu " : "%llu\n", (unsigned long long)total);
    }
    free(per_cpu);
    return 0;
}

struct sock_event {  // sock_lb.c's
    __u8 type, point, proto, pad;
    __u32 addr;
    __u16 port, pad2;
    __u32 pad3;
    __u64 cookie, cgroup;
};

static volatile sig_atomic_t stopping;
static unsigned long long n_events, n_translated, n_lost;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void on_event(void *ctx, int cpu, void *data, __u32 size)
{
    const struct sock_event *ev = data;
    (void)ctx;
    (void)cpu;
    if (size < sizeof(*ev))
        return;
    n_events++;
    n_translated += ev->type == 2;
}

static void on_lost(void *ctx, int cpu, __u64 lost)
{
    (void)ctx;
    (void)cpu;
    n_lost += lost;
}

static int monitor(const char *id)
{
    int fd = map_fd(id);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct perf_buffer *pb = perf_buffer__new(fd, 64, on_event, on_lost, NULL, NULL);
    if (!pb)
        return fail("opening the events perf buffer", errno);
    printf("ready\n");
    fflush(stdout);
    while (!stopping) {
        int err = perf_buffer__poll(pb, 1000);
        if (err < 0 && err != -EINTR) {
            perf_buffer__free(pb);
            return fail("reading the events", err);
        }
    }
    perf_buffer__free(pb);
    printf("events %llu translated %llu lost %llu\n", n_events, n_translated, n_lost);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "attach"))
        return attach(argv[2], argv[3]);
    if (argc == 7 && !strcmp(argv[1], "service"))
        return service(argv + 2);
    if (argc == 3 && !strcmp(argv[1], "flush"))
        return flush(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "counts"))
        return counts(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "monitor"))
        return monitor(argv[2]);
    fprintf(stderr, "usage: sock_lb_loader attach OBJECT CGROUP_DIR | service MAP_ID VIP PORT BACKEND BPORT | "
                    "flush MAP_ID | counts MAP_ID | monitor MAP_ID\n");
    return 2;
}

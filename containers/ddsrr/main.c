/*
 * edgebench-ddsrr: round-robin DDS ping-pong on Cyclone DDS's C API, for latency with several subscribers
 * (seed 000, Fig. 7 and Eq. 1; seed 002, Fig. 4).
 *
 * ddsperf's ping is answered by every pong, so with N subscribers the N-th answer's round trip includes the
 * N-1 answers the pinger handled before it. Here every ping is delivered to all N subscribers (as a publisher's
 * sample is), but names one of them (`target`, in turn 0, 1, ..., N-1), and only that one answers. The latency of a
 * ping is half its round trip; the mean over all pings is the paper's L_avg = 1/K sum L_(i % N).
 *
 *   edgebench-ddsrr ping -n SUBSCRIBERS -s SIZE -D SECONDS [-r reliable|best-effort] [-t TIMEOUT_MS]
 *                        [-w MATCH_WAIT_S] [-i DOMAIN]
 *   edgebench-ddsrr pong -k INDEX [-r reliable|best-effort] [-D SECONDS] [-i DOMAIN]
 *
 * The ping waits up to MATCH_WAIT_S (default 20) until N subscribers read its pings and N answer, then sends one
 * ping at a time for SECONDS: the next ping goes when the named subscriber answered, or after TIMEOUT_MS (default
 * 1000) without an answer (counted as a timeout; a late answer is dropped). SIZE is the serialized sample's size
 * in bytes: 4 (seq) + 4 (target) + 4 (length) + the baggage, at least 12. A pong echoes the sample it answers.
 * Both use CYCLONEDDS_URI like every Cyclone DDS program. Output (stdout, one line per second of the ping, then a
 * total; the pong prints one line when it stops), docs/tool-formats/ddsrr.md:
 *
 *   ddsrr-ping t 1.000 subscribers 4 size 64 cnt 9071 mean 52.31us min 40.11us 50% 50.02us 90% 61.40us
 *              99% 90.12us max 301.20us timeouts 0
 *   ddsrr-ping total sent 9071 answered 9071 timeouts 0 per-subscriber 2268 2268 2268 2267
 *   ddsrr-pong index 2 answered 2268
 *
 * Exit codes: 0 measured, 1 the subscribers did not match in time, 2 a DDS call failed, 3 bad arguments.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dds/dds.h"
#include "ddsrr.h"

#define PING_TOPIC "edgebench_rr_ping"
#define PONG_TOPIC "edgebench_rr_pong"
#define HEADER_BYTES 12u
#define MAX_SUBSCRIBERS 64
#define TAKE_MAX 16

static volatile sig_atomic_t stopping = 0;

static void on_signal(int sig) { (void)sig; stopping = 1; }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(int code, const char *what, dds_return_t rc) {
  if (rc < 0)
    fprintf(stdout, "error: %s: %s\n", what, dds_strretcode(rc));
  else
    fprintf(stdout, "error: %s\n", what);
  exit(code);
}

static int usage(const char *msg) {
  fprintf(stderr, "error: %s\nusage: edgebench-ddsrr ping -n SUBSCRIBERS -s SIZE -D SECONDS [-r reliable|best-effort]"
                  " [-t TIMEOUT_MS] [-w MATCH_WAIT_S] [-i DOMAIN]\n"
                  "       edgebench-ddsrr pong -k INDEX [-r reliable|best-effort] [-D SECONDS] [-i DOMAIN]\n", msg);
  return 3;
}

static int parse_num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

struct dds_parts {
  dds_entity_t participant, writer, reader, waitset;
};

static struct dds_parts open_dds(int domain, int reliable, const char *write_topic, const char *read_topic) {
  struct dds_parts p;
  dds_return_t rc;
  p.participant = dds_create_participant(domain < 0 ? DDS_DOMAIN_DEFAULT : (dds_domainid_t)domain, NULL, NULL);
  if (p.participant < 0)
    fail(2, "dds_create_participant", p.participant);
  dds_qos_t *qos = dds_create_qos();
  dds_qset_reliability(qos, reliable ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT, DDS_SECS(1));
  dds_qset_history(qos, DDS_HISTORY_KEEP_LAST, 1);
  dds_entity_t wt = dds_create_topic(p.participant, &edgebench_RrSample_desc, write_topic, qos, NULL);
  dds_entity_t rt = dds_create_topic(p.participant, &edgebench_RrSample_desc, read_topic, qos, NULL);
  if (wt < 0 || rt < 0)
    fail(2, "dds_create_topic", wt < 0 ? wt : rt);
  p.writer = dds_create_writer(p.participant, wt, qos, NULL);
  p.reader = dds_create_reader(p.participant, rt, qos, NULL);
  dds_delete_qos(qos);
  if (p.writer < 0 || p.reader < 0)
    fail(2, "dds_create_writer/reader", p.writer < 0 ? p.writer : p.reader);
  p.waitset = dds_create_waitset(p.participant);
  dds_entity_t cond = dds_create_readcondition(p.reader, DDS_ANY_STATE);
  if (p.waitset < 0 || cond < 0 || (rc = dds_waitset_attach(p.waitset, cond, 0)) < 0)
    fail(2, "dds waitset", p.waitset < 0 ? p.waitset : cond < 0 ? cond : rc);
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* nearest rank: the smallest value with at least q of the values at or below it */
static double quantile(const double *sorted, size_t n, double q) {
  size_t rank = (size_t)ceil(q * (double)n);
  return sorted[rank == 0 ? 0 : rank - 1];
}

static void report(double t, unsigned n_subs, unsigned size, double *lat, size_t n, unsigned timeouts) {
  if (n == 0) {
    printf("ddsrr-ping t %.3f subscribers %u size %u cnt 0 timeouts %u\n", t, n_subs, size, timeouts);
    return;
  }
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += lat[i];
  qsort(lat, n, sizeof *lat, cmp_double);
  printf("ddsrr-ping t %.3f subscribers %u size %u cnt %zu mean %.2fus min %.2fus 50%% %.2fus 90%% %.2fus "
         "99%% %.2fus max %.2fus timeouts %u\n", t, n_subs, size, n, sum / (double)n, lat[0],
         quantile(lat, n, 0.50), quantile(lat, n, 0.90), quantile(lat, n, 0.99), lat[n - 1], timeouts);
}

static int run_ping(int domain, int reliable, unsigned n_subs, unsigned size, double seconds, double timeout_ms,
                    double wait_s) {
  struct dds_parts p = open_dds(domain, reliable, PING_TOPIC, PONG_TOPIC);
  dds_publication_matched_status_t pm;
  dds_subscription_matched_status_t sm;
  int64_t give_up = now_ns() + (int64_t)(wait_s * 1e9);
  for (;;) {
    dds_get_publication_matched_status(p.writer, &pm);
    dds_get_subscription_matched_status(p.reader, &sm);
    if (pm.current_count >= n_subs && sm.current_count >= n_subs)
      break;
    if (stopping || now_ns() > give_up) {
      printf("error: too few matching participants within %.0f s: %u of %u subscribers read the pings, %u of %u "
             "answer\n", wait_s, pm.current_count, n_subs, sm.current_count, n_subs);
      dds_delete(p.participant);
      return 1;
    }
    dds_sleepfor(DDS_MSECS(10));
  }

  edgebench_RrSample ping;
  memset(&ping, 0, sizeof ping);
  uint32_t baggage = size > HEADER_BYTES ? size - HEADER_BYTES : 0;
  ping.baggage._length = ping.baggage._maximum = baggage;
  ping.baggage._buffer = baggage ? calloc(baggage, 1) : NULL;
  ping.baggage._release = false;
  size_t cap = 1 << 16, n = 0;
  double *lat = malloc(cap * sizeof *lat);
  unsigned long per_sub[MAX_SUBSCRIBERS] = {0};
  unsigned long sent = 0, answered = 0, timeouts = 0;
  unsigned sec_timeouts = 0;
  void *samples[TAKE_MAX];
  dds_sample_info_t infos[TAKE_MAX];
  const int64_t timeout = (int64_t)(timeout_ms * 1e6);
  const int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
  int64_t next_report = t0 + 1000000000;
  uint32_t seq = 0;

  while (!stopping && now_ns() < end) {
    seq++;
    ping.seq = seq;
    ping.target = (seq - 1) % n_subs;
    const int64_t sent_at = now_ns();
    dds_return_t rc = dds_write(p.writer, &ping);
    if (rc < 0)
      fail(2, "dds_write", rc);
    sent++;
    int64_t rtt = -1;
    while (rtt < 0 && !stopping) {
      int64_t left = sent_at + timeout - now_ns();
      if (left <= 0)
        break;
      dds_waitset_wait(p.waitset, NULL, 0, left);
      memset(samples, 0, sizeof samples);
      int got = dds_take(p.reader, samples, infos, TAKE_MAX, TAKE_MAX);
      const int64_t at = now_ns();
      for (int i = 0; i < got; i++) {
        const edgebench_RrSample *s = samples[i];
        if (infos[i].valid_data && s->seq == seq && s->target == ping.target)
          rtt = at - sent_at;
      }
      if (got > 0)
        dds_return_loan(p.reader, samples, got);
    }
    if (rtt >= 0) {
      if (n == cap) {
        cap *= 2;
        lat = realloc(lat, cap * sizeof *lat);
      }
      lat[n++] = (double)rtt / 2000.0;
      answered++;
      per_sub[ping.target % MAX_SUBSCRIBERS]++;
    } else if (!stopping) {
      timeouts++;
      sec_timeouts++;
    }
    const int64_t now = now_ns();
    if (now >= next_report) {
      report((double)(now - t0) / 1e9, n_subs, size, lat, n, sec_timeouts);
      n = 0;
      sec_timeouts = 0;
      next_report += 1000000000;
    }
  }
  if (n > 0 || sec_timeouts > 0)
    report((double)(now_ns() - t0) / 1e9, n_subs, size, lat, n, sec_timeouts);
  printf("ddsrr-ping total sent %lu answered %lu timeouts %lu per-subscriber", sent, answered, timeouts);
  for (unsigned k = 0; k < n_subs && k < MAX_SUBSCRIBERS; k++)
    printf(" %lu", per_sub[k]);
  printf("\n");
  free(lat);
  free(ping.baggage._buffer);
  dds_delete(p.participant);
  return 0;
}

static int run_pong(int domain, int reliable, unsigned index, double seconds) {
  struct dds_parts p = open_dds(domain, reliable, PONG_TOPIC, PING_TOPIC);
  void *samples[TAKE_MAX];
  dds_sample_info_t infos[TAKE_MAX];
  unsigned long answered = 0;
  const int64_t end = seconds > 0 ? now_ns() + (int64_t)(seconds * 1e9) : INT64_MAX;
  while (!stopping && now_ns() < end) {
    dds_waitset_wait(p.waitset, NULL, 0, DDS_MSECS(100));
    memset(samples, 0, sizeof samples);
    int got = dds_take(p.reader, samples, infos, TAKE_MAX, TAKE_MAX);
    for (int i = 0; i < got; i++) {
      const edgebench_RrSample *s = samples[i];
      if (infos[i].valid_data && s->target == index) {
        dds_return_t rc = dds_write(p.writer, s);
        if (rc < 0)
          fail(2, "dds_write", rc);
        answered++;
      }
    }
    if (got > 0)
      dds_return_loan(p.reader, samples, got);
  }
  printf("ddsrr-pong index %u answered %lu\n", index, answered);
  dds_delete(p.participant);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2 || (strcmp(argv[1], "ping") && strcmp(argv[1], "pong")))
    return usage("the first argument is ping or pong");
  const int is_ping = strcmp(argv[1], "ping") == 0;
  double subs = 0, size = -1, seconds = is_ping ? -1 : 0, timeout_ms = 1000, wait_s = 20, index = -1, domain = -1;
  int reliable = 1, opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "n:s:D:r:t:w:k:i:")) != -1) {
    int bad = 0;
    switch (opt) {
    case 'n': bad = parse_num(optarg, 1, MAX_SUBSCRIBERS, &subs) || subs != floor(subs); break;
    case 's': bad = parse_num(optarg, HEADER_BYTES, 1 << 24, &size) || size != floor(size); break;
    case 'D': bad = parse_num(optarg, 0.001, 86400, &seconds); break;
    case 't': bad = parse_num(optarg, 1, 3600000, &timeout_ms); break;
    case 'w': bad = parse_num(optarg, 0.1, 3600, &wait_s); break;
    case 'k': bad = parse_num(optarg, 0, MAX_SUBSCRIBERS - 1, &index) || index != floor(index); break;
    case 'i': bad = parse_num(optarg, 0, 232, &domain) || domain != floor(domain); break;
    case 'r':
      if (strcmp(optarg, "reliable") == 0) reliable = 1;
      else if (strcmp(optarg, "best-effort") == 0) reliable = 0;
      else bad = 1;
      break;
    default: return usage("unknown option");
    }
    if (bad) {
      char msg[128];
      snprintf(msg, sizeof msg, "bad value for -%c: %s", opt, optarg);
      return usage(msg);
    }
  }
  if (optind != argc)
    return usage("unexpected arguments");
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  if (is_ping) {
    if (subs < 1 || size < 0 || seconds <= 0)
      return usage("ping needs -n SUBSCRIBERS, -s SIZE (>= 12) and -D SECONDS");
    return run_ping((int)domain, reliable, (unsigned)subs, (unsigned)size, seconds, timeout_ms, wait_s);
  }
  if (index < 0)
    return usage("pong needs -k INDEX");
  return run_pong((int)domain, reliable, (unsigned)index, seconds);
}

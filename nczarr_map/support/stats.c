/* stats.c - timing of storage-map calls (see stats.h). */
#include "stats.h"

#include "diag.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
static int stats_on;

static void read_stats_env(void) { stats_on = mzn_env_flag("MMZIP_NCZARR_STATS"); }

int mzn_stats_enabled(void) {
    pthread_once(&stats_once, read_stats_env);
    return stats_on;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The whole process's faults: a large read is shared by the core's helper threads, whose faults are the
 * call's too (they are joined before it returns, and netCDF-C calls the map from one thread at a time). */
static uint64_t process_faults(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

mzn_stats_clock mzn_stats_start(void) {
    mzn_stats_clock c = {0, 0, 0};
    if (!mzn_stats_enabled()) return c;
    c.on = 1;
    c.faults0 = process_faults();
    c.t0 = now();
    return c;
}

void mzn_stats_stop(mzn_stats *st, mzn_op op, const mzn_stats_clock *c, uint64_t bytes) {
    if (!c->on || !st) return;
    double t = now();
    mzn_op_stats *o = &st->op[op];
    o->calls++;
    o->bytes += bytes;
    o->seconds += t - c->t0;
    o->faults += process_faults() - c->faults0;
}

void mzn_stats_print(const mzn_stats *st, const char *archive_path) {
    if (!mzn_stats_enabled()) return;
    double total = 0;
    for (int i = 0; i < MZN_OP_COUNT; i++) total += st->op[i].seconds;
    const mzn_op_stats *r = &st->op[MZN_OP_READ], *w = &st->op[MZN_OP_WRITE], *p = &st->op[MZN_OP_PROBE];
    char line[8192];
    int n = snprintf(line, sizeof line,
                     "mmzip_nczarr stats: archive=%s open_s=%.6f read_calls=%llu read_bytes=%llu read_s=%.6f "
                     "read_faults=%llu write_calls=%llu write_bytes=%llu write_s=%.6f write_faults=%llu "
                     "probe_calls=%llu probe_s=%.6f close_s=%.6f store_s=%.6f\n",
                     archive_path ? archive_path : "?", st->op[MZN_OP_OPEN].seconds, (unsigned long long)r->calls,
                     (unsigned long long)r->bytes, r->seconds, (unsigned long long)r->faults,
                     (unsigned long long)w->calls, (unsigned long long)w->bytes, w->seconds,
                     (unsigned long long)w->faults, (unsigned long long)p->calls, p->seconds,
                     st->op[MZN_OP_CLOSE].seconds, total);
    if (n <= 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    /* One write(2), so that lines of concurrent processes do not interleave. */
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
}

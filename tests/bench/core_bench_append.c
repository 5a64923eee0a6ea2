/*
 * core_bench_append - appending N small entries under each commit policy: the cost per entry must stay flat
 * as N grows (O(N) in total) when commits are batched.
 *
 *   usage: core_bench_append ARCHIVE N MODE
 *
 * MODE is one of
 *   batch      mmzip_begin, N puts, one mmzip_commit;
 *   amortized  MMZIP_COMMIT_AMORTIZED: the library commits whenever the bytes written since the last commit
 *              reach the size of the central directory;
 *   each       MMZIP_COMMIT_EACH: every put is a commit (one directory write each: O(N^2) in total).
 * Each entry holds 100 bytes. The archive is created afresh, checked afterwards (entry count, and the bytes
 * of the first and last entries), and the time includes the final close. Prints one JSON object.
 */
#include "core_bench_util.h"

#define PAYLOAD 100

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: core_bench_append ARCHIVE N batch|amortized|each\n");
        return 2;
    }
    const char *path = argv[1], *mode = argv[3];
    uint64_t n = strtoull(argv[2], NULL, 10);
    mmzip_options o;
    mmzip_options_init(&o);
    int batch = strcmp(mode, "batch") == 0;
    if (strcmp(mode, "amortized") == 0) o.commit_policy = MMZIP_COMMIT_AMORTIZED;
    else if (strcmp(mode, "each") == 0 || batch) o.commit_policy = MMZIP_COMMIT_EACH;
    else {
        fprintf(stderr, "core_bench_append: unknown mode '%s'\n", mode);
        return 2;
    }
    unlink(path);
    unsigned char payload[PAYLOAD];
    double t0 = bench_now();
    mmzip_t *h;
    int st = mmzip_open(path, "w", &o, &h);
    if (st) bench_die(path, st);
    if (batch && (st = mmzip_begin(h)) != MMZIP_OK) bench_die("begin", st);
    for (uint64_t i = 0; i < n; i++) {
        char key[32];
        bench_key(key, sizeof key, i);
        memset(payload, (int)(i & 0xff), sizeof payload);
        memcpy(payload, &i, sizeof i);
        if ((st = mmzip_put(h, key, payload, sizeof payload, 0)) != MMZIP_OK) bench_die(key, st);
    }
    if (batch && (st = mmzip_commit(h)) != MMZIP_OK) bench_die("commit", st);
    if ((st = mmzip_close(h)) != MMZIP_OK) bench_die("close", st);
    double t = bench_now() - t0;

    if ((st = mmzip_open(path, "r", NULL, &h)) != MMZIP_OK) bench_die(path, st);
    if (mmzip_count(h) != n) {
        fprintf(stderr, "core_bench_append: %zu entries after %llu puts\n", mmzip_count(h), (unsigned long long)n);
        return 1;
    }
    for (uint64_t i = 0; i < n; i += n > 1 ? n - 1 : 1) {
        char key[32];
        bench_key(key, sizeof key, i);
        const void *p;
        uint64_t size, got_i;
        if ((st = mmzip_get(h, key, &p, &size)) != MMZIP_OK) bench_die(key, st);
        memcpy(&got_i, p, sizeof got_i);
        if (size != PAYLOAD || got_i != i) {
            fprintf(stderr, "core_bench_append: entry %s reads back wrong\n", key);
            return 1;
        }
    }
    mmzip_info info;
    mmzip_get_info(h, &info);
    mmzip_close(h);
    printf("{\"bench\": \"append\", \"mode\": \"%s\", \"entries\": %llu, \"seconds\": %.6f, \"us_per_entry\": %.3f, "
           "\"file_bytes\": %llu}\n",
           mode, (unsigned long long)n, t, t * 1e6 / (double)(n ? n : 1), (unsigned long long)info.file_size);
    unlink(path);
    return 0;
}

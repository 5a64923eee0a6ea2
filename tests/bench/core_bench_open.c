/*
 * core_bench_open - opening an archive of N entries and finding one entry by name: mmzip against libzip.
 *
 *   usage: core_bench_open ARCHIVE N REPEATS
 *
 * Creates ARCHIVE (N entries of 16 bytes, one batch) unless it already holds N entries. Each peer then
 * opens it read-only, looks up a random entry by name and closes it, REPEATS times; the best time counts
 * (the machine is shared, so the minimum is the least noisy estimate). libzip opens without ZIP_CHECKCONS,
 * its default and fastest mode. Prints one JSON object with both times and the ratio.
 */
#include "core_bench_util.h"

#include <zip.h>

static double time_mmzip(const char *path, const char *key) {
    double t0 = bench_now();
    mmzip_t *h;
    int st = mmzip_open(path, "r", NULL, &h);
    if (st) bench_die(path, st);
    mmzip_entry_info info;
    if ((st = mmzip_stat(h, key, &info)) != MMZIP_OK) bench_die(key, st);
    mmzip_close(h);
    return bench_now() - t0;
}

static double time_libzip(const char *path, const char *key) {
    double t0 = bench_now();
    int err;
    zip_t *za = zip_open(path, ZIP_RDONLY, &err);
    if (!za) {
        fprintf(stderr, "core_bench_open: libzip cannot open %s (error %d)\n", path, err);
        exit(1);
    }
    if (zip_name_locate(za, key, 0) < 0) {
        fprintf(stderr, "core_bench_open: libzip does not find %s\n", key);
        exit(1);
    }
    zip_discard(za);
    return bench_now() - t0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: core_bench_open ARCHIVE N REPEATS\n");
        return 2;
    }
    const char *path = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10);
    int repeats = atoi(argv[3]);
    if (!bench_archive_ready(path, n)) bench_make_archive(path, n, 16);
    uint64_t seed = 42;
    double best_m = 1e30, best_l = 1e30;
    for (int r = 0; r < repeats; r++) {
        char key[32];
        bench_key(key, sizeof key, bench_rand(&seed) % n);
        double m = time_mmzip(path, key), l = time_libzip(path, key);
        if (m < best_m) best_m = m;
        if (l < best_l) best_l = l;
    }
    printf("{\"bench\": \"open\", \"entries\": %llu, \"mmzip_s\": %.6f, \"libzip_s\": %.6f, \"libzip_over_mmzip\": %.2f}\n",
           (unsigned long long)n, best_m, best_l, best_l / best_m);
    return 0;
}

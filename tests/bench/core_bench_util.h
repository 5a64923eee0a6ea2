/*
 * core_bench_util.h - what the core benchmarks share: a monotonic clock, entry names, a fixed-seed random
 * sequence, and building the archives they measure (through the public API, batched).
 */
#ifndef MMZIP_CORE_BENCH_UTIL_H
#define MMZIP_CORE_BENCH_UTIL_H

#include "mmzip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The name of entry i: fixed width, so that every archive of N entries has the same directory size. */
static inline void bench_key(char *buf, size_t len, uint64_t i) { snprintf(buf, len, "e/%08llu", (unsigned long long)i); }

/* xorshift64*: the same random sequence in every run and for every peer. */
static inline uint64_t bench_rand(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline void bench_die(const char *what, int status) {
    fprintf(stderr, "core bench: %s: %s (%s)\n", what, mmzip_last_error(), mmzip_strerror(status));
    exit(1);
}

/* Writes a new archive at path with n entries of entry_size bytes each (bytes derived from the index, so a
 * reader can verify them), in one batch. */
static inline void bench_make_archive(const char *path, uint64_t n, size_t entry_size) {
    mmzip_t *h;
    int st = mmzip_open(path, "w", NULL, &h);
    if (st) bench_die(path, st);
    if ((st = mmzip_begin(h)) != MMZIP_OK) bench_die("begin", st);
    unsigned char *buf = malloc(entry_size ? entry_size : 1);
    if (!buf) bench_die("out of memory", MMZIP_ENOMEM);
    for (uint64_t i = 0; i < n; i++) {
        char key[32];
        bench_key(key, sizeof key, i);
        for (size_t k = 0; k < entry_size; k++) buf[k] = (unsigned char)(i * 131 + k * 7);
        if ((st = mmzip_put(h, key, buf, entry_size, 0)) != MMZIP_OK) bench_die(key, st);
    }
    free(buf);
    if ((st = mmzip_commit(h)) != MMZIP_OK) bench_die("commit", st);
    if ((st = mmzip_close(h)) != MMZIP_OK) bench_die("close", st);
}

/* 1 if path exists and mmzip opens it with exactly n entries. */
static inline int bench_archive_ready(const char *path, uint64_t n) {
    if (access(path, R_OK) != 0) return 0;
    mmzip_t *h;
    if (mmzip_open(path, "r", NULL, &h) != MMZIP_OK) return 0;
    int ok = mmzip_count(h) == n;
    mmzip_close(h);
    return ok;
}

#endif

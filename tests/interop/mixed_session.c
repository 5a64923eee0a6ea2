/*
 * mixed_session.c - one writing session of seeded random operations through mmzip.h, then a check of every value.
 *
 *   mixed_session ARCHIVE SEED OPS
 *
 * Opens ARCHIVE with "w" and runs OPS operations over 40 names (d0/k00 .. d2/k39): puts (half of them), removes,
 * reservations patched in place, and batches of up to six puts and removes committed together; sizes from empty
 * to 3 MB, mostly small, so that the session relocates its directory and keeps old directories for their readers
 * (protocol.md §3.7) among entries it later supersedes. Closes, reopens read-only and compares every name with
 * what the operations left (bytes, CRC-32, count). Exit status 0 if all matched; 1 with a line per mismatch; 2 if
 * an operation failed. What other readers make of the archive is for the caller (test_dead_first_entry.py).
 */
#include <mmzip.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES 40
#define MAX_SIZE 3000000u

static uint64_t rng_state;
static int version[NAMES];    /* the version a name holds; 0 or negative: absent (removed after -version) */
static uint32_t length[NAMES];
static unsigned char *buffer;
static mmzip_t *archive;
static long op;

static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char *name_of(int k) {
    static char name[16];
    snprintf(name, sizeof name, "d%d/k%02d", k % 3, k);
    return name;
}

/* The bytes of version v of name k: a stream of its own, so that any mix-up of entries shows. */
static void fill(unsigned char *out, int k, int v, uint32_t n) {
    uint64_t x = (uint64_t)k * 1000003u + (uint64_t)v * 7919u + 1;
    for (uint32_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[i] = (unsigned char)x;
    }
}

static uint32_t random_size(void) {
    uint32_t r = (uint32_t)(next_random() % 100);
    if (r < 40) return (uint32_t)(next_random() % 64);
    if (r < 80) return (uint32_t)(next_random() % 8192);
    if (r < 95) return (uint32_t)(next_random() % 200000);
    return (uint32_t)(next_random() % MAX_SIZE);
}

static void fail(const char *what) {
    fprintf(stderr, "operation %ld: %s: %s\n", op, what, mmzip_last_error());
    exit(2);
}

static void put(int k) {
    uint32_t n = random_size();
    int v = abs(version[k]) + 1;
    fill(buffer, k, v, n);
    if (mmzip_put(archive, name_of(k), buffer, n, 0) != MMZIP_OK) fail("put");
    version[k] = v;
    length[k] = n;
}

static void reserve(int k) {
    uint32_t n = random_size();
    uint32_t capacity = n + (uint32_t)(next_random() % 5000);
    int v = abs(version[k]) + 1;
    void *p;
    if (mmzip_reserve(archive, name_of(k), capacity, 0, 0, &p) != MMZIP_OK) fail("reserve");
    fill(p, k, v, n);
    if (mmzip_patch(archive, name_of(k), n) != MMZIP_OK) fail("patch");
    version[k] = v;
    length[k] = n;
}

static void remove_or_put(int k) {
    if (version[k] <= 0) {
        put(k);
        return;
    }
    if (mmzip_remove(archive, name_of(k)) != MMZIP_OK) fail("remove");
    version[k] = -version[k];
}

static void one_operation(void) {
    uint32_t r = (uint32_t)(next_random() % 100);
    int k = (int)(next_random() % NAMES);
    if (r < 50) {
        put(k);
    } else if (r < 60) {
        remove_or_put(k);
    } else if (r < 75) {
        reserve(k);
    } else {
        int members = 1 + (int)(next_random() % 6);
        if (mmzip_begin(archive) != MMZIP_OK) fail("begin");
        for (int j = 0; j < members; j++) {
            int kk = (int)(next_random() % NAMES);
            if (next_random() % 5 == 0 && version[kk] > 0) remove_or_put(kk);
            else put(kk);
        }
        if (mmzip_commit(archive) != MMZIP_OK) fail("commit");
    }
}

static int check_values(const char *path) {
    mmzip_t *h;
    if (mmzip_open(path, "r", NULL, &h) != MMZIP_OK) fail("reopen");
    int bad = 0;
    size_t live = 0;
    for (int k = 0; k < NAMES; k++) {
        const void *data;
        uint64_t size;
        int st = mmzip_get(h, name_of(k), &data, &size);
        if (version[k] <= 0) {
            if (st != MMZIP_ENOTFOUND) printf("%s: removed, but reads (status %d)\n", name_of(k), st), bad = 1;
            continue;
        }
        live++;
        if (st != MMZIP_OK) {
            printf("%s: version %d missing (status %d)\n", name_of(k), version[k], st);
            bad = 1;
            continue;
        }
        fill(buffer, k, version[k], length[k]);
        if (size != length[k] || memcmp(data, buffer, length[k]) != 0)
            printf("%s: not the bytes of version %d\n", name_of(k), version[k]), bad = 1;
        else if (mmzip_verify(h, name_of(k)) != MMZIP_OK)
            printf("%s: CRC-32: %s\n", name_of(k), mmzip_last_error()), bad = 1;
    }
    if (mmzip_count(h) != live) printf("%zu entries, %zu expected\n", mmzip_count(h), live), bad = 1;
    mmzip_close(h);
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: mixed_session ARCHIVE SEED OPS\n");
        return 2;
    }
    rng_state = strtoull(argv[2], NULL, 10) * 2654435761u + 88172645463325252ull;
    long ops = atol(argv[3]);
    buffer = malloc(MAX_SIZE);
    if (!buffer) return 2;
    if (mmzip_open(argv[1], "w", NULL, &archive) != MMZIP_OK) fail("open");
    for (op = 1; op <= ops; op++) one_operation();
    if (mmzip_close(archive) != MMZIP_OK) fail("close");
    int bad = check_values(argv[1]);
    free(buffer);
    return bad;
}

/*
 * test_write_behind.c - puts written by the background thread (mmzip_options.threads >= 2): reads of
 * pending entries see their bytes and CRCs (the writer thread computes those of large entries), rewrites
 * over the same space land in order, a rollback drops the queue,
 * a write that fails in the background is reported by the next put or commit and retried by later ones, and the
 * archive is byte for byte the one a single-threaded writer makes. Linked with the test build of the
 * library, whose MMZIP_CRASH_AT=put.entry:fail makes entry writes fail with EIO.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mmzip.h"
#include "mmzip_ctest.h"

static char dir[256];

static const char *path_of(const char *name) { return ctest_path_in(dir, name); }

static void fill(uint8_t *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

/* Entry key holds exactly size bytes of fill(seed), through both the zero-copy and the copying read. */
static void expect_filled(mmzip_t *h, const char *key, size_t size, unsigned seed) {
    uint8_t *want = malloc(size), *got = malloc(size);
    CHECK(want && got);
    fill(want, size, seed);
    const void *d;
    uint64_t n;
    OK(mmzip_get(h, key, &d, &n));
    CHECK_EQ_U64(n, size);
    CHECK(n == size && memcmp(d, want, size) == 0);
    size_t r = 0;
    OK(mmzip_read(h, key, 0, got, size, &r));
    CHECK_EQ_U64(r, size);
    CHECK(memcmp(got, want, size) == 0);
    free(want);
    free(got);
}

/* CRC-32 (ZIP's polynomial), bit by bit: slow and obviously right. */
static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

static uint32_t crc32_filled(size_t size, unsigned seed) {
    uint8_t *b = malloc(size);
    CHECK(b != NULL);
    fill(b, size, seed);
    uint32_t c = crc32_of(b, size);
    free(b);
    return c;
}

typedef struct {
    const char *key;
    uint32_t crc;
    int seen;
} crc_expect;

static int check_listed_crc(const mmzip_entry_info *info, void *ctx) {
    crc_expect *x = ctx;
    if (info->name_len == strlen(x->key) && memcmp(info->name, x->key, info->name_len) == 0) {
        x->seen = 1;
        CHECK_EQ_U64(info->crc32, x->crc);
    }
    return 0;
}

/* The CRC-32 that mmzip_stat and mmzip_list report for key, which may still be pending. */
static void expect_crc(mmzip_t *h, const char *key, size_t size, unsigned seed) {
    uint32_t want = crc32_filled(size, seed);
    mmzip_entry_info info;
    OK(mmzip_stat(h, key, &info));
    CHECK_EQ_U64(info.crc32, want);
    crc_expect x = {key, want, 0};
    OK(mmzip_list(h, NULL, check_listed_crc, &x));
    CHECK(x.seen);
}

static mmzip_t *open_writer(const char *p, unsigned threads) {
    mmzip_options o;
    mmzip_options_init(&o);
    o.threads = threads;
    o.commit_policy = MMZIP_COMMIT_MANUAL;
    mmzip_t *h;
    OK(mmzip_open(p, "w", &o, &h));
    return h;
}

static void put_filled(mmzip_t *h, const char *key, size_t size, unsigned seed) {
    uint8_t *b = malloc(size);
    CHECK(b != NULL);
    fill(b, size, seed);
    OK(mmzip_put(h, key, b, size, 0));
    memset(b, 0xEE, size); /* the caller may reuse its buffer as soon as the put returns */
    free(b);
}

static void no_problem(const char *message, void *ctx) {
    (void)ctx;
    fprintf(stderr, "check: %s\n", message);
}

/* The same puts, rewrites and reads, with one thread or with the writer behind. */
static void write_sequence(const char *p, unsigned threads) {
    mmzip_t *h = open_writer(p, threads);
    put_filled(h, "big", (3u << 20) + 17, 1);
    expect_crc(h, "big", (3u << 20) + 17, 1); /* the writer thread computes it: stat and list wait for it */
    put_filled(h, "mid", (200u << 10) + 5, 2);
    put_filled(h, "small", 1000, 3);
    expect_crc(h, "mid", (200u << 10) + 5, 2);
    /* Pending entries whose bytes may still be queued read back whole. */
    expect_filled(h, "big", (3u << 20) + 17, 1);
    expect_filled(h, "small", 1000, 3);
    /* Rewrites of the last entry reuse its space: the queue holds several writes to the same offsets, and
     * the newest must land last. */
    put_filled(h, "last", (2u << 20) + 1, 4);
    put_filled(h, "last", (2u << 20) + 1, 5);
    put_filled(h, "last", (1u << 20) + 3, 6);
    OK(mmzip_commit(h));
    expect_filled(h, "last", (1u << 20) + 3, 6);
    put_filled(h, "after", (5u << 20) + 9, 7);
    /* A rewrite with as many bytes compares CRCs with the pending version, which must be known by then. */
    put_filled(h, "after", (5u << 20) + 9, 7);
    put_filled(h, "same", (1u << 20) + 1, 15);
    OK(mmzip_close(h));

    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(mmzip_check(h, no_problem, NULL) == MMZIP_OK);
    expect_filled(h, "big", (3u << 20) + 17, 1);
    expect_filled(h, "mid", (200u << 10) + 5, 2);
    expect_filled(h, "small", 1000, 3);
    expect_filled(h, "last", (1u << 20) + 3, 6);
    expect_filled(h, "after", (5u << 20) + 9, 7);
    expect_filled(h, "same", (1u << 20) + 1, 15);
    expect_crc(h, "after", (5u << 20) + 9, 7);
    CHECK_EQ_U64(mmzip_count(h), 6);
    OK(mmzip_close(h));
}

static uint8_t *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    CHECK(f != NULL);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n ? *n : 1);
    CHECK(b && fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

static void test_same_archive_as_one_thread(void) {
    write_sequence(path_of("one.zip"), 1);
    write_sequence(path_of("behind.zip"), 2);
    size_t n1 = 0, n2 = 0;
    uint8_t *a = slurp(path_of("one.zip"), &n1), *b = slurp(path_of("behind.zip"), &n2);
    CHECK_EQ_U64(n1, n2);
    CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0);
    free(a);
    free(b);
}

static void test_rollback_drops_the_queue(void) {
    const char *p = path_of("rollback.zip");
    mmzip_t *h = open_writer(p, 2);
    put_filled(h, "kept", (2u << 20) + 1, 8);
    OK(mmzip_commit(h));
    for (int i = 0; i < 6; i++) put_filled(h, "dropped", (4u << 20) + (size_t)i, 9);
    OK(mmzip_rollback(h));
    CHECK(mmzip_exists(h, "dropped") == 0);
    put_filled(h, "later", (3u << 20) + 2, 10);
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(mmzip_check(h, no_problem, NULL) == MMZIP_OK);
    CHECK_EQ_U64(mmzip_count(h), 2);
    expect_filled(h, "kept", (2u << 20) + 1, 8);
    expect_filled(h, "later", (3u << 20) + 2, 10);
    OK(mmzip_close(h));
}

static void test_background_failure(void) {
    const char *p = path_of("failure.zip");
    mmzip_t *h = open_writer(p, 2);
    put_filled(h, "first", (2u << 20) + 1, 11);
    OK(mmzip_commit(h));
    /* From now on every entry write fails. The put returns before its bytes are written, so it is the
     * next call that writes (a put or a commit) that reports the failure, with the usual message; nothing
     * is committed. */
    setenv("MMZIP_CRASH_AT", "put.entry:fail", 1);
    setenv("MMZIP_CRASH_HIT", "1+", 1);
    put_filled(h, "second", (3u << 20) + 7, 12);
    FAILS_WITH(mmzip_commit(h), MMZIP_EIO, "cannot write put.entry");
    uint8_t *b = malloc(2u << 20);
    CHECK(b != NULL);
    fill(b, 2u << 20, 13);
    FAILS_WITH(mmzip_put(h, "third", b, 2u << 20, 0), MMZIP_EIO, "failure.zip");
    FAILS_WITH(mmzip_commit(h), MMZIP_EIO, "cannot write put.entry");
    mmzip_t *r;
    OK(mmzip_open(p, "r", NULL, &r));
    CHECK_EQ_U64(mmzip_count(r), 1);
    OK(mmzip_close(r));
    /* Once writes work again, a retried commit writes the queue and publishes what was put. */
    unsetenv("MMZIP_CRASH_AT");
    unsetenv("MMZIP_CRASH_HIT");
    OK(mmzip_commit(h));
    OK(mmzip_put(h, "third", b, 2u << 20, 0));
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(mmzip_check(h, no_problem, NULL) == MMZIP_OK);
    CHECK_EQ_U64(mmzip_count(h), 3);
    expect_filled(h, "first", (2u << 20) + 1, 11);
    expect_filled(h, "second", (3u << 20) + 7, 12);
    expect_filled(h, "third", 2u << 20, 13);
    OK(mmzip_close(h));

    /* With one thread the put itself fails. */
    h = open_writer(path_of("failure1.zip"), 1);
    setenv("MMZIP_CRASH_AT", "put.entry:fail", 1);
    setenv("MMZIP_CRASH_HIT", "1+", 1);
    FAILS_WITH(mmzip_put(h, "x", b, 2u << 20, 0), MMZIP_EIO, "cannot write put.entry");
    unsetenv("MMZIP_CRASH_AT");
    unsetenv("MMZIP_CRASH_HIT");
    free(b);
    OK(mmzip_close(h));
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mmzip-wb-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    RUN(test_same_archive_as_one_thread);
    RUN(test_rollback_drops_the_queue);
    RUN(test_background_failure);
    if (!getenv("MMZIP_KEEP_TMP")) {
        const char *names[] = {"one.zip", "behind.zip", "rollback.zip", "failure.zip", "failure1.zip"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(path_of(names[i]));
        rmdir(dir);
    }
    return ctest_result();
}

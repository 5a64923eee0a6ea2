/*
 * core_bench_crc - what checking a stored entry's CRC-32 costs on each read path (mmzip.h, mmzip_get).
 *
 *   usage: core_bench_crc ARCHIVE MIB ROUNDS
 *
 * Writes one stored entry of MIB MiB, then times, best of ROUNDS, with the file in the page cache:
 *   floor      memcpy of the entry out of the mapping into a warm buffer (the copy floor of any read);
 *   crc32      mmzip_verify() the first time: the core's crc32 (ISA-L's or libdeflate's) over the mapped bytes;
 *   verify     mmzip_verify() on a handle that has already verified it (remembered: should be ~0);
 *   get        mmzip_get(), zero-copy, unverified (a lookup);
 *   get+crc    mmzip_get() on a fresh MMZIP_VERIFY_CRC handle (lookup + one CRC pass);
 *   read       mmzip_read() of the whole entry on a fresh handle (copy + CRC of the copy);
 *   read again mmzip_read() of the whole entry once it was found good (copy only).
 * Prints GB/s and each path's time as a multiple of the copy floor. Not a timed assertion.
 */
#include "core_bench_util.h"

static double best(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: core_bench_crc ARCHIVE MIB ROUNDS\n");
        return 2;
    }
    const char *path = argv[1];
    size_t len = (size_t)strtoull(argv[2], NULL, 10) << 20;
    int rounds = atoi(argv[3]);
    uint8_t *data = malloc(len), *buf = malloc(len);
    if (!data || !buf) return 1;
    uint64_t st = 42;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = bench_rand(&st);
        memcpy(data + i, &r, len - i < 8 ? len - i : 8);
    }
    memset(buf, 0, len);
    mmzip_t *h;
    int s = mmzip_open(path, "w", NULL, &h);
    if (s) bench_die("open", s);
    if ((s = mmzip_put(h, "big", data, len, 0))) bench_die("put", s);
    if ((s = mmzip_close(h))) bench_die("close", s);

    double t_floor = 1e9, t_verify_first = 1e9, t_verify_again = 1e9, t_get = 1e9, t_get_crc = 1e9,
           t_read = 1e9, t_read_again = 1e9;
    mmzip_options vo;
    mmzip_options_init(&vo);
    vo.flags |= MMZIP_VERIFY_CRC;
    for (int r = 0; r < rounds; r++) {
        const void *p;
        uint64_t n;
        size_t got;
        /* Each measurement that must see a first verification gets a fresh store (close, reopen). */
        if ((s = mmzip_open(path, "r", NULL, &h))) bench_die("open", s);
        if ((s = mmzip_get(h, "big", &p, &n))) bench_die("get", s);
        memcpy(buf, p, len); /* fault the mapping in */
        double t0 = bench_now();
        memcpy(buf, p, len);
        t_floor = best(t_floor, bench_now() - t0);
        t0 = bench_now();
        if ((s = mmzip_get(h, "big", &p, &n))) bench_die("get", s);
        t_get = best(t_get, bench_now() - t0);
        t0 = bench_now();
        if ((s = mmzip_verify(h, "big"))) bench_die("verify", s);
        t_verify_first = best(t_verify_first, bench_now() - t0);
        t0 = bench_now();
        if ((s = mmzip_verify(h, "big"))) bench_die("verify", s);
        t_verify_again = best(t_verify_again, bench_now() - t0);
        mmzip_close(h);

        if ((s = mmzip_open(path, "r", &vo, &h))) bench_die("open", s);
        t0 = bench_now();
        if ((s = mmzip_get(h, "big", &p, &n))) bench_die("get+crc", s);
        t_get_crc = best(t_get_crc, bench_now() - t0);
        mmzip_close(h);

        if ((s = mmzip_open(path, "r", NULL, &h))) bench_die("open", s);
        t0 = bench_now();
        if ((s = mmzip_read(h, "big", 0, buf, len, &got))) bench_die("read", s);
        t_read = best(t_read, bench_now() - t0);
        t0 = bench_now();
        if ((s = mmzip_read(h, "big", 0, buf, len, &got))) bench_die("read", s);
        t_read_again = best(t_read_again, bench_now() - t0);
        mmzip_close(h);
    }
    double gb = (double)len / 1e9;
    printf("CRC-32 cost, one stored entry of %zu MiB, page cache warm, best of %d\n", len >> 20, rounds);
    printf("%-34s %10s %9s %14s\n", "path", "ms", "GB/s", "x copy floor");
#define ROW(name, t) printf("%-34s %10.3f %9.2f %14.2f\n", name, (t) * 1e3, (t) > 0 ? gb / (t) : 0, (t) / t_floor)
    ROW("floor: memcpy from the mapping", t_floor);
    ROW("mmzip_get, unverified", t_get);
    ROW("mmzip_verify, first (crc32)", t_verify_first);
    ROW("mmzip_verify, known good", t_verify_again);
    ROW("mmzip_get, MMZIP_VERIFY_CRC", t_get_crc);
    ROW("mmzip_read whole, first", t_read);
    ROW("mmzip_read whole, known good", t_read_again);
    printf("crc32 per MiB: %.3f ms\n", t_verify_first * 1e3 / (double)(len >> 20));
    free(data);
    free(buf);
    unlink(path);
    return 0;
}

/*
 * core_bench_seq - a sequential read of one large stored entry, against memcpy bandwidth.
 *
 *   usage: core_bench_seq ARCHIVE SIZE_MIB REPEATS
 *
 * Creates ARCHIVE holding one stored entry of SIZE_MIB MiB (written in place through mmzip_reserve), followed
 * by a small one, unless it holds them already, and warms the page cache. Then, best of REPEATS, each copying the whole SIZE_MIB
 * through a 1 MiB buffer (data that ends in the caller's buffer, the same work for every peer):
 *   memcpy        from a 256 MiB anonymous, pre-faulted buffer (larger than any cache), cycled: the bandwidth
 *                 ceiling of a copy on this machine;
 *   mmzip cold    open + mmzip_read in 1 MiB pieces on a fresh handle: pays the page faults of the mapping;
 *   mmzip warm    the same on a handle that has read the entry once (mapping populated);
 *   pread         pread(2) in 1 MiB pieces, for context.
 * Prints one JSON object with bandwidths (GB/s) and the ratios to memcpy.
 */
#include "core_bench_util.h"

#include <fcntl.h>
#include <sys/mman.h>

#define PIECE (1u << 20)
#define KEY "big.bin"
#define TAIL "tail.json"

static unsigned char pattern(uint64_t k) { return (unsigned char)(k * 7 + (k >> 12)); }

static void make_big(const char *path, uint64_t size) {
    mmzip_t *h;
    int st = mmzip_open(path, "w", NULL, &h);
    if (st) bench_die(path, st);
    void *view;
    if ((st = mmzip_reserve(h, KEY, size, 4096, 0, &view)) != MMZIP_OK) bench_die("reserve", st);
    unsigned char *p = view;
    for (uint64_t k = 0; k < size; k++) p[k] = pattern(k);
    if ((st = mmzip_patch(h, KEY, size)) != MMZIP_OK) bench_die("patch", st);
    /* Another entry after the big one, as in any real archive: the core CRC-checks the physically last stored
     * entry on its first read (it could be a torn tail), a one-off full pass that is not a read's cost. */
    if ((st = mmzip_put(h, TAIL, "{}", 2, 0)) != MMZIP_OK) bench_die("put", st);
    if ((st = mmzip_close(h)) != MMZIP_OK) bench_die("close", st);
}

static int big_ready(const char *path, uint64_t size) {
    mmzip_t *h;
    if (access(path, R_OK) != 0 || mmzip_open(path, "r", NULL, &h) != MMZIP_OK) return 0;
    uint64_t got = 0;
    int ok = mmzip_size(h, KEY, &got) == MMZIP_OK && got == size && mmzip_exists(h, TAIL);
    mmzip_close(h);
    return ok;
}

static void verify_piece(const unsigned char *buf, uint64_t at, size_t len) {
    for (size_t k = 0; k < len; k += 4093)
        if (buf[k] != pattern(at + k)) {
            fprintf(stderr, "core_bench_seq: wrong byte at %llu\n", (unsigned long long)(at + k));
            exit(1);
        }
}

/* Reads the whole entry through h in PIECE-sized copies; checks some bytes of each piece. */
static void read_through(mmzip_t *h, uint64_t size, unsigned char *dst) {
    for (uint64_t at = 0; at < size; at += PIECE) {
        size_t got;
        int st = mmzip_read(h, KEY, at, dst, PIECE, &got);
        if (st) bench_die(KEY, st);
        verify_piece(dst, at, got);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: core_bench_seq ARCHIVE SIZE_MIB REPEATS\n");
        return 2;
    }
    const char *path = argv[1];
    uint64_t size = strtoull(argv[2], NULL, 10) << 20;
    int repeats = atoi(argv[3]);
    if (!big_ready(path, size)) make_big(path, size);
    unsigned char *dst = malloc(PIECE);
    size_t src_len = (size_t)(size < (256u << 20) ? size : (256u << 20));
    unsigned char *src = mmap(NULL, src_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!dst || src == MAP_FAILED) return 1;
    for (size_t k = 0; k < src_len; k++) src[k] = pattern(k);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    for (off_t o = 0; pread(fd, dst, PIECE, o) > 0; o += PIECE) {} /* warm the page cache */

    double best_memcpy = 1e30, best_cold = 1e30, best_warm = 1e30, best_pread = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = bench_now();
        for (uint64_t at = 0; at < size; at += PIECE) {
            memcpy(dst, src + (at % src_len), PIECE);
            verify_piece(dst, at % src_len, PIECE);
        }
        double t = bench_now() - t0;
        if (t < best_memcpy) best_memcpy = t;

        mmzip_t *h;
        t0 = bench_now();
        int st = mmzip_open(path, "r", NULL, &h);
        if (st) bench_die(path, st);
        read_through(h, size, dst);
        t = bench_now() - t0;
        if (t < best_cold) best_cold = t;
        t0 = bench_now();
        read_through(h, size, dst);
        t = bench_now() - t0;
        if (t < best_warm) best_warm = t;
        mmzip_close(h);

        t0 = bench_now();
        for (uint64_t at = 0; at < size; at += PIECE) {
            ssize_t got = pread(fd, dst, PIECE, (off_t)at);
            if (got <= 0) return 1;
        }
        t = bench_now() - t0;
        if (t < best_pread) best_pread = t;
    }
    close(fd);
    munmap(src, src_len);
    free(dst);
    double gb = (double)size / 1e9;
    printf("{\"bench\": \"sequential\", \"mib\": %llu, \"memcpy_gbs\": %.3f, \"mmzip_cold_gbs\": %.3f, "
           "\"mmzip_warm_gbs\": %.3f, \"pread_gbs\": %.3f, \"mmzip_cold_over_memcpy\": %.3f, "
           "\"mmzip_warm_over_memcpy\": %.3f}\n",
           (unsigned long long)(size >> 20), gb / best_memcpy, gb / best_cold, gb / best_warm, gb / best_pread,
           best_memcpy / best_cold, best_memcpy / best_warm);
    return 0;
}

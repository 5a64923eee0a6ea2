/*
 * core_bench_read - random reads of whole 4 KiB entries: mmzip against libzip's zip_fread and against
 * pread(2) of the same bytes.
 *
 *   usage: core_bench_read ARCHIVE N READS
 *
 * Creates ARCHIVE (N entries of 4096 bytes) unless it already holds N entries, and warms the page cache,
 * so that every peer reads from memory. Each peer then reads the same READS entries in the same random
 * order into a 4 KiB buffer:
 *   mmzip_read   name lookup + copy out of the shared mapping (the bytes end in the caller's buffer, as with
 *                the peers); timed twice: first on a fresh handle, whose mapping faults each page in on first
 *                touch ("cold"), then again over the same reads ("warm", the steady state of a long-lived
 *                reader);
 *   mmzip_get    name lookup + zero-copy pointer, every byte summed (what a zero-copy reader pays);
 *   libzip       zip_fopen (name lookup) + zip_fread + zip_fclose on an archive opened once;
 *   pread        pread at the data offset, resolved beforehand (no lookup);
 *   copy floor   memcpy of the same bytes out of the mapping, from addresses resolved beforehand: no lookup,
 *                no call, only the copy and the memory traffic it causes. libzip's time over this floor is
 *                the most any reader that hands over the bytes could gain on libzip in this run.
 * Every read is checked against the entry's known bytes once, before timing. Prints one JSON object.
 */
#include "core_bench_util.h"

#include <fcntl.h>
#include <zip.h>

#define ENTRY 4096

typedef struct {
    char key[32];
    uint64_t offset;
    const void *mapped; /* the entry's bytes in the shared mapping, resolved before timing */
} target;

static void expect_bytes(const unsigned char *buf, uint64_t i, const char *who) {
    for (size_t k = 0; k < ENTRY; k++)
        if (buf[k] != (unsigned char)(i * 131 + k * 7)) {
            fprintf(stderr, "core_bench_read: %s read wrong bytes for entry %llu\n", who, (unsigned long long)i);
            exit(1);
        }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: core_bench_read ARCHIVE N READS\n");
        return 2;
    }
    const char *path = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10), reads = strtoull(argv[3], NULL, 10);
    if (!bench_archive_ready(path, n)) bench_make_archive(path, n, ENTRY);

    mmzip_t *h;
    int st = mmzip_open(path, "r", NULL, &h);
    if (st) bench_die(path, st);
    int err;
    zip_t *za = zip_open(path, ZIP_RDONLY, &err);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!za || fd < 0) {
        fprintf(stderr, "core_bench_read: cannot open %s with libzip or open(2)\n", path);
        return 1;
    }
    target *t = malloc(reads * sizeof *t);
    uint64_t *idx = malloc(reads * sizeof *idx);
    unsigned char buf[ENTRY];
    if (!t || !idx) return 1;
    uint64_t seed = 7;
    for (uint64_t r = 0; r < reads; r++) {
        idx[r] = bench_rand(&seed) % n;
        bench_key(t[r].key, sizeof t[r].key, idx[r]);
        mmzip_entry_info info;
        if ((st = mmzip_stat(h, t[r].key, &info)) != MMZIP_OK) bench_die(t[r].key, st);
        t[r].offset = info.data_offset;
    }
    /* Warm the page cache and verify every peer once. */
    for (uint64_t i = 0; i < n; i += (n / 64) + 1) {
        char key[32];
        bench_key(key, sizeof key, i);
        size_t got;
        if (mmzip_read(h, key, 0, buf, ENTRY, &got) != MMZIP_OK || got != ENTRY) bench_die(key, MMZIP_EIO);
        expect_bytes(buf, i, "mmzip_read");
        zip_file_t *zf = zip_fopen(za, key, 0);
        if (!zf || zip_fread(zf, buf, ENTRY) != ENTRY) return 1;
        zip_fclose(zf);
        expect_bytes(buf, i, "libzip");
    }
    if (pread(fd, buf, ENTRY, (off_t)t[0].offset) != ENTRY) return 1;
    expect_bytes(buf, idx[0], "pread");
    for (int pass = 0; pass < 2; pass++) { /* pull the whole file into the page cache */
        unsigned char big[1 << 16];
        for (off_t o = 0; pread(fd, big, sizeof big, o) > 0; o += (off_t)sizeof big) {}
    }

    /* A fresh handle for the timed passes: the warm-up above faulted some of the old one's pages in. */
    mmzip_close(h);
    if ((st = mmzip_open(path, "r", NULL, &h)) != MMZIP_OK) bench_die(path, st);
    unsigned long long sum = 0;
    double t_cold = 0, t_read = 0;
    for (int pass = 0; pass < 2; pass++) {
        double t0 = bench_now();
        for (uint64_t r = 0; r < reads; r++) {
            size_t got;
            if (mmzip_read(h, t[r].key, 0, buf, ENTRY, &got) != MMZIP_OK) bench_die(t[r].key, MMZIP_EIO);
            sum += buf[r % ENTRY];
        }
        *(pass ? &t_read : &t_cold) = bench_now() - t0;
    }

    /* Addresses for the copy floor, resolved after the cold pass (which must find the pages unmapped) and
     * before the summing pass (which pushes the local headers this touches out of the caches again). */
    for (uint64_t r = 0; r < reads; r++) {
        uint64_t size;
        if ((st = mmzip_get(h, t[r].key, &t[r].mapped, &size)) != MMZIP_OK) bench_die(t[r].key, st);
    }

    double t0 = bench_now();
    for (uint64_t r = 0; r < reads; r++) {
        const void *p;
        uint64_t size;
        if (mmzip_get(h, t[r].key, &p, &size) != MMZIP_OK) bench_die(t[r].key, MMZIP_EIO);
        const uint64_t *w = p;
        for (size_t k = 0; k < ENTRY / 8; k++) sum += w[k];
    }
    double t_get = bench_now() - t0;

    t0 = bench_now();
    for (uint64_t r = 0; r < reads; r++) {
        memcpy(buf, t[r].mapped, ENTRY);
        __asm__ volatile("" : : "r"(buf) : "memory"); /* the copy must happen */
        sum += buf[r % ENTRY];
    }
    double t_floor = bench_now() - t0;

    t0 = bench_now();
    for (uint64_t r = 0; r < reads; r++) {
        zip_file_t *zf = zip_fopen(za, t[r].key, 0);
        if (!zf || zip_fread(zf, buf, ENTRY) != ENTRY) {
            fprintf(stderr, "core_bench_read: libzip failed on %s\n", t[r].key);
            return 1;
        }
        zip_fclose(zf);
        sum += buf[r % ENTRY];
    }
    double t_libzip = bench_now() - t0;

    t0 = bench_now();
    for (uint64_t r = 0; r < reads; r++) {
        if (pread(fd, buf, ENTRY, (off_t)t[r].offset) != ENTRY) return 1;
        sum += buf[r % ENTRY];
    }
    double t_pread = bench_now() - t0;

    zip_discard(za);
    close(fd);
    mmzip_close(h);
    free(t);
    free(idx);
    double k = 1e6 / (double)reads;
    printf("{\"bench\": \"random_read\", \"entries\": %llu, \"reads\": %llu, \"mmzip_cold_us\": %.3f, "
           "\"libzip_over_mmzip_cold\": %.2f, \"mmzip_read_us\": %.3f, "
           "\"mmzip_get_us\": %.3f, \"libzip_us\": %.3f, \"pread_us\": %.3f, \"libzip_over_mmzip_read\": %.2f, "
           "\"pread_over_mmzip_read\": %.2f, \"libzip_over_mmzip_get\": %.2f, \"copy_floor_us\": %.3f, "
           "\"libzip_over_copy_floor\": %.2f, \"checksum\": %llu}\n",
           (unsigned long long)n, (unsigned long long)reads, t_cold * k, t_libzip / t_cold, t_read * k, t_get * k, t_libzip * k, t_pread * k,
           t_libzip / t_read, t_pread / t_read, t_libzip / t_get, t_floor * k, t_libzip / t_floor, sum);
    return 0;
}

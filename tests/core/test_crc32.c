/*
 * test_crc32.c - the core's CRC-32 (plugin/src/crc32.c: ISA-L's or libdeflate's, whichever the build chose)
 * against zlib's crc32(), the reference every ZIP reader agrees with.
 *
 * A CRC routine that folds 64 bytes at a time has separate paths for the head before the first aligned
 * block, the folding loop, the fold-down of its accumulators and the tail, each taken by different lengths
 * and alignments: so every length up to a few folding blocks is tried at every alignment of a cache line,
 * then long buffers whose lengths straddle the larger loop strides, chained calls (a CRC continued from a
 * previous value, as mmzip_read and the edit journal compute it) and the standard check value.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static int failures;

static void expect(uint32_t got, uint32_t want, const char *what, size_t len, size_t align) {
    if (got != want && failures++ < 20)
        fprintf(stderr, "FAIL %s: length %zu at alignment %zu: %08x, zlib says %08x\n", what, len, align, got, want);
}

int main(void) {
    enum { MAX_SHORT = 4160, ALIGNS = 64 };
    size_t big = (size_t)64 << 20;
    unsigned char *buf = malloc(big + 4096);
    if (!buf) return 2;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < big + 4096; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    expect(mz_crc32(0, "123456789", 9), 0xCBF43926u, "check value", 9, 0);
    expect(mz_crc32(0, buf, 0), 0, "empty", 0, 0);
    expect(mz_crc32(0x12345678u, buf, 0), 0x12345678u, "empty, continued", 0, 0);

    size_t calls = 0;
    for (size_t len = 0; len <= MAX_SHORT; len++)
        for (size_t a = 0; a < ALIGNS; a++, calls++)
            expect(mz_crc32(0, buf + a, len), (uint32_t)crc32(0, buf + a, (uInt)len), "short", len, a);

    /* Long lengths around the strides of every known folding loop (16, 64, 128, 256 bytes and their
     * multiples) and around page and huge-page sizes. */
    static const size_t longs[] = {65535, 65536, 65537, 65536 + 255, 1 << 20, (1 << 20) + 1, (1 << 20) - 17,
                                   (2 << 20) + 4095, (size_t)(4 << 20), (size_t)(64 << 20)};
    for (size_t i = 0; i < sizeof longs / sizeof *longs; i++)
        for (size_t a = 0; a < 3; a++) {
            size_t len = longs[i] - (longs[i] == big ? a : 0);
            expect(mz_crc32(0, buf + a * 7, len), (uint32_t)crc32(0, buf + a * 7, (uInt)len), "long", len, a * 7);
            calls++;
        }

    /* Continued: the CRC of a buffer computed in two calls equals the one of the whole. */
    for (size_t split = 0; split <= 1024; split += 3) {
        size_t len = 100000;
        uint32_t whole = (uint32_t)crc32(0, buf + 5, (uInt)len);
        expect(mz_crc32(mz_crc32(0, buf + 5, split), buf + 5 + split, len - split), whole, "continued", split, 5);
        expect(mz_crc32(0x0BADF00Du, buf + 5, split), (uint32_t)crc32(0x0BADF00Du, buf + 5, (uInt)split),
               "from a value", split, 5);
        calls += 2;
    }
    free(buf);
    if (failures) {
        fprintf(stderr, "%d of %zu CRCs differ from zlib's\n", failures, calls);
        return 1;
    }
    printf("%zu CRCs equal zlib's (lengths 0-%d at %d alignments, long and continued ones)\n", calls, MAX_SHORT,
           ALIGNS);
    return 0;
}

/*
 * crc32_combine.c - CRC-32 algebra: the CRC of a whole from the CRCs of its parts, without reading the parts
 * again.
 *
 * An in-place edit (edit.c) must give the directory the CRC-32 of the whole entry at every publish, and
 * reading a 1 GiB member to compute it would make every session cost the member's size again. CRC-32 is
 * affine over GF(2): for messages A, B of one length, crc(B) = crc(A) ^ crc0(A ^ B), where crc0 is the pure
 * polynomial remainder (no pre- or post-conditioning). A ^ B is zero outside the changed blocks; each block's
 * crc0 is moved to its place by multiplying with x^(8 * bytes after it) mod P. Growth is then a CRC
 * concatenation with the appended bytes. So a publish reads what changed and what was appended, not the
 * entry. The arithmetic (polynomials in the reflected bit order of CRC-32) is the textbook one; mz_crc32
 * (crc32.c) does the byte work.
 */
#include "internal.h"

#define MZ_CRC_POLY 0xedb88320u

static uint32_t gf2_mul(uint32_t a, uint32_t b) { /* a * b mod P, both reflected */
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ MZ_CRC_POLY : b >> 1;
    }
    return p;
}

/* x^(8n) mod P: x^(2^k) for k = 3.. by squaring, multiplied in for each bit of n. */
static uint32_t x8n_mod_p(uint64_t n) {
    uint32_t sq = 1u << 30; /* x^1 */
    for (int k = 0; k < 3; k++) sq = gf2_mul(sq, sq);
    uint32_t p = 1u << 31; /* x^0 */
    while (n) {
        if (n & 1) p = gf2_mul(sq, p);
        sq = gf2_mul(sq, sq);
        n >>= 1;
    }
    return p;
}

/* mz_crc32 inverts the register before and after, so starting it from all ones runs the bare remainder. */
uint32_t mz_crc0_shifted(const uint8_t *data, size_t len, uint64_t after) {
    return gf2_mul(x8n_mod_p(after), ~mz_crc32(0xFFFFFFFFu, data, len));
}

/* The conditioning of the two cancels (the textbook combination). */
uint32_t mz_crc32_concat(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    return gf2_mul(x8n_mod_p(len_b), crc_a) ^ crc_b;
}

/*
 * decode.c - decoding entries compressed with the methods other ZIP writers use besides deflate: bzip2 (12),
 * LZMA (14), zstd (93) and xz (95), with Debian's libbz2, liblzma and libzstd. Each decodes the whole entry
 * into a buffer of exactly its recorded size; a stream that ends short of it, or goes on past it, is an
 * error that says which. The CRC-32 is checked by the caller (read.c: mz_decode_entry).
 *
 * Layouts (APPNOTE.TXT 4.4.5 and 5.8):
 *   12  a bzip2 stream ("BZh" header), as bzip2(1) writes it.
 *   14  2 bytes of LZMA SDK version, 2 bytes of properties length (5), the 5 property bytes, then the raw
 *       LZMA stream; general-purpose bit 1 says that it ends with an end-of-stream marker (its size is then
 *       not relied on).
 *   93  one or more zstd frames.
 *   95  an xz stream (.xz file format).
 */
#include "internal.h"

#include <bzlib.h>
#include <limits.h>
#include <lzma.h>
#include <stdio.h>
#include <zstd.h>
#include <zstd_errors.h>

#define ENAME(e) (int)(e)->name_len, mz_name(s, (e))

static int too_short(mz_store *s, mz_entry *e, const char *method, uint64_t got) {
    return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the %s stream decodes to %llu bytes, fewer than the %llu "
                   "the central directory's uncompressed size says", s->path, ENAME(e), method,
                   (unsigned long long)got, (unsigned long long)e->usize);
}

static int too_long(mz_store *s, mz_entry *e, const char *method) {
    return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the %s stream decodes to more than the %llu bytes the "
                   "central directory's uncompressed size says", s->path, ENAME(e), method,
                   (unsigned long long)e->usize);
}

static int decode_bzip2(mz_store *s, mz_entry *e, const uint8_t *in, uint8_t *out) {
    bz_stream z;
    memset(&z, 0, sizeof z);
    if (BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint64_t in_left = e->csize, out_left = e->usize;
    uint8_t spare;
    int r = BZ_OK;
    z.next_in = (char *)(uintptr_t)in;
    z.next_out = (char *)out;
    /* The library counts in unsigned int: feed and drain at most 1 GiB at a time. */
    while (r == BZ_OK) {
        if (z.avail_in == 0 && in_left) {
            z.avail_in = (unsigned)(in_left < (1u << 30) ? in_left : (1u << 30));
            in_left -= z.avail_in;
        }
        if (z.avail_out == 0) {
            if (out_left) {
                z.avail_out = (unsigned)(out_left < (1u << 30) ? out_left : (1u << 30));
                out_left -= z.avail_out;
            } else {
                /* Room for one byte more: a stream that produces it is longer than recorded. */
                z.next_out = (char *)&spare;
                z.avail_out = 1;
            }
        }
        unsigned before_in = z.avail_in, before_out = z.avail_out;
        r = BZ2_bzDecompress(&z);
        if (z.next_out == (char *)&spare + 1) break; /* a byte past the recorded size: longer than recorded */
        if (r == BZ_OK && z.avail_in == before_in && z.avail_out == before_out && !in_left) break; /* stuck */
    }
    uint64_t produced = ((uint64_t)z.total_out_hi32 << 32) | z.total_out_lo32;
    BZ2_bzDecompressEnd(&z);
    if (produced > e->usize) return too_long(s, e, "bzip2");
    if (r == BZ_STREAM_END && produced == e->usize) return MMZIP_OK;
    if (r == BZ_STREAM_END || r == BZ_OK) return too_short(s, e, "bzip2", produced);
    return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the bzip2 stream is corrupt (libbz2 error %d)", s->path,
                   ENAME(e), r);
}

/* Runs an lzma decoder over the chunks in[0..n) into out; *produced gets the byte count. */
static lzma_ret run_lzma(lzma_stream *z, const uint8_t *const *in, const size_t *in_len, int n, uint8_t *out,
                         uint64_t out_len, uint64_t *produced) {
    uint8_t spare;
    lzma_ret r = LZMA_OK;
    z->next_out = out;
    z->avail_out = (size_t)out_len;
    int overflow = 0;
    for (int i = 0; i < n && r == LZMA_OK; i++) {
        z->next_in = in[i];
        z->avail_in = in_len[i];
        while (r == LZMA_OK && (z->avail_in || i == n - 1)) {
            if (z->avail_out == 0) {
                if (overflow) break;
                z->next_out = &spare;
                z->avail_out = 1;
                overflow = 1;
            }
            size_t ai = z->avail_in, ao = z->avail_out;
            r = lzma_code(z, i == n - 1 ? LZMA_FINISH : LZMA_RUN);
            if (r == LZMA_OK && z->avail_in == ai && z->avail_out == ao) break;
        }
    }
    *produced = z->total_out;
    return r;
}

static int decode_lzma(mz_store *s, mz_entry *e, const uint8_t *in, uint8_t *out) {
    if (e->csize < 9 || mz_get16(in + 2) != 5)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the LZMA header (version, properties size) is not the "
                       "4 + 5 bytes APPNOTE 5.8 describes", s->path, ENAME(e));
    /* The same stream behind a .lzma ("LZMA_Alone") header: the 5 properties, then the uncompressed size, or
     * "unknown" when the entry says it ends with an end-of-stream marker. */
    uint8_t hdr[13];
    memcpy(hdr, in + 4, 5);
    uint64_t size = (e->gp_flags & 2) ? UINT64_MAX : e->usize;
    mz_put64(hdr + 5, size);
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_alone_decoder(&z, UINT64_MAX) != LZMA_OK) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    const uint8_t *chunks[2] = {hdr, in + 9};
    size_t lens[2] = {sizeof hdr, (size_t)(e->csize - 9)};
    uint64_t produced;
    lzma_ret r = run_lzma(&z, chunks, lens, 2, out, e->usize, &produced);
    lzma_end(&z);
    if (produced > e->usize) return too_long(s, e, "LZMA");
    if (r == LZMA_STREAM_END && produced == e->usize) return MMZIP_OK;
    if (r == LZMA_STREAM_END || r == LZMA_OK || r == LZMA_BUF_ERROR) return too_short(s, e, "LZMA", produced);
    return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the LZMA stream is corrupt (liblzma error %d)", s->path,
                   ENAME(e), (int)r);
}

static int decode_xz(mz_store *s, mz_entry *e, const uint8_t *in, uint8_t *out) {
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&z, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    const uint8_t *chunks[1] = {in};
    size_t lens[1] = {(size_t)e->csize};
    uint64_t produced;
    lzma_ret r = run_lzma(&z, chunks, lens, 1, out, e->usize, &produced);
    lzma_end(&z);
    if (produced > e->usize) return too_long(s, e, "xz");
    if (r == LZMA_STREAM_END && produced == e->usize) return MMZIP_OK;
    if (r == LZMA_STREAM_END || r == LZMA_OK || r == LZMA_BUF_ERROR) return too_short(s, e, "xz", produced);
    return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the xz stream is corrupt (liblzma error %d)", s->path,
                   ENAME(e), (int)r);
}

static int decode_zstd(mz_store *s, mz_entry *e, const uint8_t *in, uint8_t *out) {
    /* Decodes every frame of the input (they may be concatenated) into exactly usize bytes. */
    size_t r = ZSTD_decompress(out, (size_t)e->usize, in, (size_t)e->csize);
    if (ZSTD_isError(r)) {
        if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall) return too_long(s, e, "zstd");
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the zstd stream is corrupt (%s)", s->path, ENAME(e),
                       ZSTD_getErrorName(r));
    }
    if (r != e->usize) return too_short(s, e, "zstd", r);
    return MMZIP_OK;
}

int mz_decode_other(mz_store *s, mz_entry *e, uint8_t *buf) {
    const uint8_t *in = s->map.base + e->data_off;
    switch (e->method) {
    case 12: return decode_bzip2(s, e, in, buf);
    case 14: return decode_lzma(s, e, in, buf);
    case 93: return decode_zstd(s, e, in, buf);
    case 95: return decode_xz(s, e, in, buf);
    default:
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' uses compression method %u (%s); mmzip reads stored "
                       "(0), deflate (8), bzip2 (12), LZMA (14), zstd (93) and xz (95)", s->path, ENAME(e),
                       e->method, mmzip_method_name(e->method));
    }
}

int mz_method_supported(unsigned method) {
    return method == 0 || method == 8 || method == 12 || method == 14 || method == 93 || method == 95;
}

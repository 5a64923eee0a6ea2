/*
 * decode.c - the ZIP compression methods: one table (below, `methods`) of every method's number (APPNOTE.TXT
 * 4.4.5), its name, and whether and how mmzip reads it. A new method is one row and, if mmzip is to read
 * it, one decoder in this file. Stored (0) needs none; deflate (8) is the hot path and is inflated by
 * read.c with libdeflate (mz_decode_entry), so its row names it but has no decoder here. The others are the
 * methods other ZIP writers use besides deflate: bzip2 (12), LZMA (14), zstd (93) and xz (95), with
 * Debian's libbz2, liblzma and libzstd. Each decodes the whole entry into a buffer of exactly its recorded
 * size; a stream that ends short of it, or goes on past it, is an error that says which. The CRC-32 is
 * checked by the caller (read.c: mz_decode_entry).
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

typedef int (*decoder_fn)(mz_store *s, mz_entry *e, const uint8_t *in, uint8_t *out);

/* Every method mmzip can name. `reads`: stored and deflate are read by read.c itself; a decoder here makes a
 * method readable; a row with neither is named in messages and refused. */
static const struct zip_method {
    unsigned id;
    const char *name;
    int reads;
    decoder_fn decode;
} methods[] = {
    {0, "stored", 1, NULL},
    {1, "shrink", 0, NULL},
    {6, "implode", 0, NULL},
    {8, "deflate", 1, NULL},
    {9, "deflate64", 0, NULL},
    {12, "bzip2", 1, decode_bzip2},
    {14, "lzma", 1, decode_lzma},
    {93, "zstd", 1, decode_zstd},
    {95, "xz", 1, decode_xz},
    {98, "ppmd", 0, NULL},
    {99, "AES encryption", 0, NULL},
};

static const struct zip_method *find_method(unsigned id) {
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (methods[i].id == id) return &methods[i];
    return NULL;
}

const char *mmzip_method_name(unsigned method) {
    const struct zip_method *m = find_method(method);
    return m ? m->name : "unknown";
}

int mz_method_supported(unsigned method) {
    const struct zip_method *m = find_method(method);
    return m && m->reads;
}

int mz_decode_other(mz_store *s, mz_entry *e, uint8_t *buf) {
    const struct zip_method *m = find_method(e->method);
    if (m && m->decode) return m->decode(s, e, s->map.base + e->data_off, buf);
    /* The readable methods, from the table, for the message. */
    char readable[256];
    size_t n = 0;
    readable[0] = '\0';
    for (size_t i = 0; i < sizeof methods / sizeof methods[0] && n < sizeof readable; i++)
        if (methods[i].reads)
            n += (size_t)snprintf(readable + n, sizeof readable - n, "%s%s (%u)", n ? ", " : "", methods[i].name,
                                  methods[i].id);
    return mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' uses compression method %u (%s); mmzip reads %s", s->path,
                   ENAME(e), e->method, m ? m->name : "unknown", readable);
}

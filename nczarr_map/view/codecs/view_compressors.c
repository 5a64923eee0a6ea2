/* view_compressors.c - numcodecs compressors on Debian's C libraries (see view_compressors.h). */
#include "view_compressors.h"

#include <blosc.h>
#include <bzlib.h>
#include <limits.h>
#include <lz4.h>
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

static int fail(char *err, size_t err_len, mzv_compressor kind, const char *problem) {
    if (err && err_len) snprintf(err, err_len, "%s decoding failed: %s", mzv_compressor_name(kind), problem);
    return -1;
}

const char *mzv_compressor_name(mzv_compressor kind) {
    switch (kind) {
    case MZV_COMP_BLOSC: return "blosc";
    case MZV_COMP_ZLIB: return "zlib";
    case MZV_COMP_GZIP: return "gzip";
    case MZV_COMP_BZ2: return "bz2";
    case MZV_COMP_LZMA_XZ: return "lzma (xz)";
    case MZV_COMP_LZMA_ALONE: return "lzma (alone)";
    case MZV_COMP_ZSTD: return "zstd";
    case MZV_COMP_LZ4: return "lz4";
    }
    return "?";
}

/* An output buffer that grows geometrically up to a hard limit, for the streaming formats whose decoded
 * size is not in a header. */
typedef struct grow_buf {
    unsigned char *data;
    size_t len, cap, limit;
} grow_buf;

/* Makes room for at least one more byte; 0, or -1 when the limit is reached or memory runs out. */
static int grow(grow_buf *g) {
    if (g->len < g->cap) return 0;
    if (g->cap >= g->limit) return -1;
    size_t cap = g->cap ? g->cap * 2 : 4096;
    if (cap > g->limit || cap < g->cap) cap = g->limit;
    unsigned char *d = realloc(g->data, cap ? cap : 1);
    if (!d) return -1;
    g->data = d;
    g->cap = cap;
    return 0;
}

static int finish(grow_buf *g, mzv_bytes *out) {
    if (!g->data && !(g->data = malloc(1))) return -1;
    out->data = g->data;
    out->len = g->len;
    return 0;
}

static int decode_blosc(const void *in, size_t len, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    /* numcodecs decodes the frame its header describes and ignores bytes after it (some writers pad chunk
     * files), so the frame is validated at the length the header gives, which must fit in the chunk. */
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    if (len < BLOSC_MIN_HEADER_LENGTH) return fail(err, err_len, MZV_COMP_BLOSC, "not a valid Blosc frame (too short)");
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    if (cbytes > len) return fail(err, err_len, MZV_COMP_BLOSC, "truncated frame (its header says it is longer)");
    if (blosc_cbuffer_validate(in, cbytes, &nbytes) != 0)
        return fail(err, err_len, MZV_COMP_BLOSC, "not a valid Blosc frame");
    if (nbytes > limit) return fail(err, err_len, MZV_COMP_BLOSC, "decoded size exceeds the chunk size");
    out->data = malloc(nbytes ? nbytes : 1);
    if (!out->data) return fail(err, err_len, MZV_COMP_BLOSC, "out of memory");
    if (nbytes) {
        int n = blosc_decompress_ctx(in, out->data, nbytes, 1);
        if (n < 0 || (size_t)n != nbytes) {
            free(out->data);
            out->data = NULL;
            return fail(err, err_len, MZV_COMP_BLOSC,
                        "corrupt frame, or a codec this libblosc was built without (see blosc_list_compressors)");
        }
    }
    out->len = nbytes;
    return 0;
}

static int decode_zlib(mzv_compressor kind, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                       size_t err_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15: zlib header; 16 + 15: gzip header. */
    if (inflateInit2(&zs, kind == MZV_COMP_GZIP ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK)
        return fail(err, err_len, kind, "inflateInit2 failed");
    grow_buf g = {NULL, 0, 0, limit};
    const unsigned char *src = in;
    size_t left = len;
    int rc = Z_OK, problem = 0;
    const char *why = "corrupt stream";
    while (!problem) {
        if (grow(&g) != 0) {
            problem = 1, why = "decoded size exceeds the limit";
            break;
        }
        /* zlib counts in uInt: feed large inputs in slices. */
        uInt in_now = left > UINT_MAX ? UINT_MAX : (uInt)left;
        uInt out_room = g.cap - g.len > UINT_MAX ? UINT_MAX : (uInt)(g.cap - g.len);
        zs.next_in = (Bytef *)src;
        zs.avail_in = in_now;
        zs.next_out = g.data + g.len;
        zs.avail_out = out_room;
        rc = inflate(&zs, Z_NO_FLUSH);
        size_t consumed = in_now - zs.avail_in;
        src += consumed;
        left -= consumed;
        g.len += out_room - zs.avail_out;
        if (rc == Z_STREAM_END) {
            /* Python's GzipFile reads every member of a multi-member gzip file, and skips zero padding
             * after the last one. */
            if (kind == MZV_COMP_GZIP) {
                while (left > 0 && *src == 0) src++, left--;
                if (left > 0) {
                    if (inflateReset(&zs) != Z_OK) problem = 1;
                    continue;
                }
            }
            break;
        }
        if (rc == Z_BUF_ERROR && left == 0 && zs.avail_out != 0) {
            problem = 1, why = "truncated stream";
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            problem = 1;
        }
    }
    inflateEnd(&zs);
    /* Bytes after a zlib stream are ignored, as Python's zlib.decompress (numcodecs' Zlib) ignores them. */
    if (problem || finish(&g, out) != 0) {
        free(g.data);
        return fail(err, err_len, kind, problem ? why : "out of memory");
    }
    return 0;
}

static int decode_bz2(const void *in, size_t len, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    grow_buf g = {NULL, 0, 0, limit};
    const char *src = in;
    size_t left = len;
    const char *why = NULL;
    /* Python's bz2.decompress decodes concatenated streams (one bz_stream each) and empty input to
     * nothing; after a complete stream, bytes that are not a valid stream (padding) are ignored, their
     * partial output dropped, but a stream cut short is an error. */
    int streams = 0;
    while (!why && left > 0) {
        size_t stream_start = g.len;
        int ignorable = 0;
        bz_stream bz;
        memset(&bz, 0, sizeof bz);
        if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) {
            why = "BZ2_bzDecompressInit failed";
            break;
        }
        int rc = BZ_OK;
        while (rc == BZ_OK) {
            if (grow(&g) != 0) {
                why = "decoded size exceeds the limit";
                break;
            }
            unsigned in_now = left > UINT_MAX ? UINT_MAX : (unsigned)left;
            unsigned out_room = g.cap - g.len > UINT_MAX ? UINT_MAX : (unsigned)(g.cap - g.len);
            bz.next_in = (char *)src;
            bz.avail_in = in_now;
            bz.next_out = (char *)g.data + g.len;
            bz.avail_out = out_room;
            rc = BZ2_bzDecompress(&bz);
            src += in_now - bz.avail_in;
            left -= in_now - bz.avail_in;
            g.len += out_room - bz.avail_out;
            if (rc == BZ_OK && left == 0 && bz.avail_out != 0) {
                why = "truncated stream";
                break;
            }
        }
        if (!why && rc != BZ_STREAM_END) {
            if (streams > 0 && (rc == BZ_DATA_ERROR || rc == BZ_DATA_ERROR_MAGIC)) ignorable = 1;
            else why = "corrupt stream";
        }
        BZ2_bzDecompressEnd(&bz);
        if (ignorable) {
            g.len = stream_start;
            break;
        }
        streams++;
    }
    if (why || finish(&g, out) != 0) {
        free(g.data);
        return fail(err, err_len, MZV_COMP_BZ2, why ? why : "out of memory");
    }
    return 0;
}

static int decode_lzma(mzv_compressor kind, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                       size_t err_len) {
    lzma_stream ls = LZMA_STREAM_INIT;
    lzma_ret init = kind == MZV_COMP_LZMA_XZ ? lzma_stream_decoder(&ls, UINT64_MAX, LZMA_CONCATENATED)
                                             : lzma_alone_decoder(&ls, UINT64_MAX);
    if (init != LZMA_OK) return fail(err, err_len, kind, "decoder initialisation failed");
    grow_buf g = {NULL, 0, 0, limit};
    const char *why = NULL;
    ls.next_in = in;
    ls.avail_in = len;
    for (;;) {
        if (grow(&g) != 0) {
            why = "decoded size exceeds the limit";
            break;
        }
        ls.next_out = g.data + g.len;
        ls.avail_out = g.cap - g.len;
        size_t before = ls.avail_out;
        /* LZMA_FINISH once all input is given: lets the concatenated xz decoder end. */
        lzma_ret rc = lzma_code(&ls, LZMA_FINISH);
        g.len += before - ls.avail_out;
        if (rc == LZMA_STREAM_END) {
            if (ls.avail_in != 0) why = "data after the end of the stream";
            break;
        }
        if (rc == LZMA_BUF_ERROR && ls.avail_out != 0) {
            why = "truncated stream";
            break;
        }
        if (rc != LZMA_OK && rc != LZMA_BUF_ERROR) {
            why = rc == LZMA_FORMAT_ERROR ? "not in the expected format" : "corrupt stream";
            break;
        }
    }
    lzma_end(&ls);
    if (why || finish(&g, out) != 0) {
        free(g.data);
        return fail(err, err_len, kind, why ? why : "out of memory");
    }
    return 0;
}

static int decode_zstd(const void *in, size_t len, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    /* Streaming decoding handles every case numcodecs produces: one frame with its size recorded, frames
     * from streaming compressors without it, and concatenated frames. */
    unsigned long long hint = ZSTD_getFrameContentSize(in, len);
    if (hint == ZSTD_CONTENTSIZE_ERROR) return fail(err, err_len, MZV_COMP_ZSTD, "not a zstd frame");
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (!ds) return fail(err, err_len, MZV_COMP_ZSTD, "out of memory");
    grow_buf g = {NULL, 0, 0, limit};
    if (hint != ZSTD_CONTENTSIZE_UNKNOWN && hint > 0 && hint <= limit) {
        g.data = malloc((size_t)hint);
        g.cap = g.data ? (size_t)hint : 0;
    }
    ZSTD_inBuffer ib = {in, len, 0};
    const char *why = NULL;
    size_t pending = 1; /* 0 once a frame is complete and flushed */
    while (!why && (ib.pos < ib.size || pending != 0)) {
        if (g.len == g.cap && grow(&g) != 0) {
            why = "decoded size exceeds the limit";
            break;
        }
        ZSTD_outBuffer ob = {g.data + g.len, g.cap - g.len, 0};
        size_t before_in = ib.pos;
        pending = ZSTD_decompressStream(ds, &ob, &ib);
        g.len += ob.pos;
        if (ZSTD_isError(pending)) why = ZSTD_getErrorName(pending);
        else if (ob.pos == 0 && ib.pos == before_in && ob.size != 0) why = "truncated frame";
    }
    ZSTD_freeDStream(ds);
    if (why || finish(&g, out) != 0) {
        free(g.data);
        return fail(err, err_len, MZV_COMP_ZSTD, why ? why : "out of memory");
    }
    return 0;
}

static int decode_lz4(const void *in, size_t len, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    const unsigned char *p = in;
    if (len < 4) return fail(err, err_len, MZV_COMP_LZ4, "shorter than numcodecs' 4-byte size header");
    uint32_t size = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (size > limit || size > (uint32_t)INT_MAX) return fail(err, err_len, MZV_COMP_LZ4, "decoded size exceeds the limit");
    if (len - 4 > (size_t)INT_MAX) return fail(err, err_len, MZV_COMP_LZ4, "block too large");
    out->data = malloc(size ? size : 1);
    if (!out->data) return fail(err, err_len, MZV_COMP_LZ4, "out of memory");
    int n = LZ4_decompress_safe((const char *)p + 4, (char *)out->data, (int)(len - 4), (int)size);
    if (n < 0 || (uint32_t)n != size) {
        free(out->data);
        out->data = NULL;
        return fail(err, err_len, MZV_COMP_LZ4, "corrupt block or wrong size header");
    }
    out->len = size;
    return 0;
}

int mzv_decompress(mzv_compressor kind, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                   size_t err_len) {
    out->data = NULL;
    out->len = 0;
    switch (kind) {
    case MZV_COMP_BLOSC: return decode_blosc(in, len, limit, out, err, err_len);
    case MZV_COMP_ZLIB:
    case MZV_COMP_GZIP: return decode_zlib(kind, in, len, limit, out, err, err_len);
    case MZV_COMP_BZ2: return decode_bz2(in, len, limit, out, err, err_len);
    case MZV_COMP_LZMA_XZ:
    case MZV_COMP_LZMA_ALONE: return decode_lzma(kind, in, len, limit, out, err, err_len);
    case MZV_COMP_ZSTD: return decode_zstd(in, len, limit, out, err, err_len);
    case MZV_COMP_LZ4: return decode_lz4(in, len, limit, out, err, err_len);
    }
    return fail(err, err_len, kind, "unknown compressor");
}

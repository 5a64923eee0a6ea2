/* zstd.c - numcodecs' Zstd and Zarr v3's zstd codec: one or more zstd frames, decoded with libzstd
 * (codec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_zstd_decode);

int mzv_zstd_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len) {
    /* Streaming decoding handles every case numcodecs produces: one frame with its size recorded, frames
     * from streaming compressors without it, and concatenated frames. */
    unsigned long long hint = ZSTD_getFrameContentSize(in, len);
    if (hint == ZSTD_CONTENTSIZE_ERROR) return mzv_codec_fail(s, err, err_len, "not a zstd frame");
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (!ds) return mzv_codec_fail(s, err, err_len, "out of memory");
    mzv_grow_buf g = {NULL, 0, 0, limit};
    if (hint != ZSTD_CONTENTSIZE_UNKNOWN && hint > 0 && hint <= limit) {
        g.data = malloc((size_t)hint);
        g.cap = g.data ? (size_t)hint : 0;
    }
    ZSTD_inBuffer ib = {in, len, 0};
    const char *why = NULL;
    size_t pending = 1; /* 0 once a frame is complete and flushed */
    while (!why && (ib.pos < ib.size || pending != 0)) {
        if (g.len == g.cap && mzv_grow(&g) != 0) {
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
    if (why || mzv_grow_finish(&g, out) != 0) {
        free(g.data);
        return mzv_codec_fail(s, err, err_len, why ? why : "out of memory");
    }
    return 0;
}

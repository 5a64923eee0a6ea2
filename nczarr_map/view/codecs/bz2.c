/* bz2.c - numcodecs' BZ2: one or more bzip2 streams, decoded with libbz2 (codec.h). */
#include <bzlib.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_bz2_decode);

int mzv_bz2_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                   size_t err_len) {
    mzv_grow_buf g = {NULL, 0, 0, limit};
    const char *src = (const char *)in;
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
            if (mzv_grow(&g) != 0) {
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
    if (why || mzv_grow_finish(&g, out) != 0) {
        free(g.data);
        return mzv_codec_fail(s, err, err_len, why ? why : "out of memory");
    }
    return 0;
}

/* zlib.c - numcodecs' Zlib (a zlib stream, RFC 1950) and GZip (one or more gzip members, RFC 1952), and
 * Zarr v3's gzip codec, decoded with zlib (codec.h). The compression level does not matter to decoding. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_zlib_decode);
MZV_CODEC_DECODER(mzv_gzip_decode);

static int inflate_stream(const mzv_step *s, int gzip, const unsigned char *in, size_t len, size_t limit,
                          mzv_bytes *out, char *err, size_t err_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15: zlib header; 16 + 15: gzip header. */
    if (inflateInit2(&zs, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK)
        return mzv_codec_fail(s, err, err_len, "inflateInit2 failed");
    mzv_grow_buf g = {NULL, 0, 0, limit};
    const unsigned char *src = in;
    size_t left = len;
    int rc = Z_OK, problem = 0;
    const char *why = "corrupt stream";
    while (!problem) {
        if (mzv_grow(&g) != 0) {
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
            if (gzip) {
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
    if (problem || mzv_grow_finish(&g, out) != 0) {
        free(g.data);
        return mzv_codec_fail(s, err, err_len, problem ? why : "out of memory");
    }
    return 0;
}

int mzv_zlib_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len) {
    return inflate_stream(s, 0, in, len, limit, out, err, err_len);
}

int mzv_gzip_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len) {
    return inflate_stream(s, 1, in, len, limit, out, err, err_len);
}

/* lz4.c - numcodecs' LZ4: a 4-byte little-endian decoded size, then one LZ4 block (numcodecs' own
 * framing), decoded with liblz4 (codec.h). */
#include <limits.h>
#include <lz4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_lz4_decode);

int mzv_lz4_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                   size_t err_len) {
    const unsigned char *p = in;
    if (len < 4) return mzv_codec_fail(s, err, err_len, "shorter than numcodecs' 4-byte size header");
    uint32_t size = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (size > limit || size > (uint32_t)INT_MAX)
        return mzv_codec_fail(s, err, err_len, "decoded size exceeds the limit");
    if (len - 4 > (size_t)INT_MAX) return mzv_codec_fail(s, err, err_len, "block too large");
    out->data = malloc(size ? size : 1);
    if (!out->data) return mzv_codec_fail(s, err, err_len, "out of memory");
    int n = LZ4_decompress_safe((const char *)p + 4, (char *)out->data, (int)(len - 4), (int)size);
    if (n < 0 || (uint32_t)n != size) {
        free(out->data);
        out->data = NULL;
        return mzv_codec_fail(s, err, err_len, "corrupt block or wrong size header");
    }
    out->len = size;
    return 0;
}

/* checksum32.c - numcodecs' CRC32 and Adler32 filters (numcodecs' checksum32 module): a 4-byte
 * little-endian checksum prefix, verified and removed, computed with zlib (codec.h). */
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_crc32_decode);
MZV_CODEC_DECODER(mzv_adler32_decode);

static int checksum(const mzv_step *s, int adler, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                    char *err, size_t err_len) {
    const char *name = mzv_codec_label(s->codec);
    if (len < 4) return mzv_codec_failf(err, err_len, "%s: chunk shorter than its checksum", name);
    uint32_t expect = (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
    const unsigned char *p = in + 4;
    size_t n = len - 4;
    uLong sum = adler ? adler32(0L, Z_NULL, 0) : crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt step = n > (1u << 30) ? (1u << 30) : (uInt)n;
        sum = adler ? adler32(sum, p, step) : crc32(sum, p, step);
        p += step;
        n -= step;
    }
    if ((uint32_t)sum != expect) return mzv_codec_failf(err, err_len, "%s: checksum mismatch (corrupt chunk)", name);
    if (mzv_codec_alloc(out, len - 4, limit, err, err_len) != 0) return -1;
    memcpy(out->data, in + 4, len - 4);
    return 0;
}

int mzv_crc32_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len) {
    return checksum(s, 0, in, len, limit, out, err, err_len);
}

int mzv_adler32_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                       char *err, size_t err_len) {
    return checksum(s, 1, in, len, limit, out, err, err_len);
}

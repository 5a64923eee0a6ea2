/* crc32c.c - Zarr v3's crc32c codec: a 4-byte little-endian CRC-32C (Castagnoli) suffix, verified and
 * removed (codec.h). mzv_crc32c also checks the index of a shard (v3/v3_chunks.c). */
#include <stdint.h>
#include <string.h>

#include "codec.h"
#include "view_codecs.h"

MZV_CODEC_DECODER(mzv_crc32c_decode);

uint32_t mzv_crc32c(uint32_t crc, const unsigned char *data, size_t len) {
    uint32_t table[256]; /* built per call: 2 K steps, nothing next to decoding a chunk, and no global state */
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    crc = ~crc;
    for (size_t i = 0; i < len; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

int mzv_crc32c_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                      char *err, size_t err_len) {
    (void)s;
    if (len < 4) return mzv_step_fail(s, err, err_len, "chunk shorter than its checksum");
    size_t n = len - 4;
    const unsigned char *t = in + n;
    uint32_t expect = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    if (mzv_crc32c(0, in, n) != expect) return mzv_step_fail(s, err, err_len, "checksum mismatch (corrupt chunk)");
    if (mzv_codec_alloc(out, n, limit, err, err_len) != 0) return -1;
    memcpy(out->data, in, n);
    return 0;
}

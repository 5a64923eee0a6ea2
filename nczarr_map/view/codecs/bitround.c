/* bitround.c - numcodecs' BitRound filter: it only zeroes low mantissa bits, so decoding is the identity
 * (codec.h). */
#include <string.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_bitround_decode);

int mzv_bitround_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                        char *err, size_t err_len) {
    (void)s;
    if (mzv_codec_alloc(out, len, limit, err, err_len) != 0) return -1;
    memcpy(out->data, in, len);
    return 0;
}

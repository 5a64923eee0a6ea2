/* packbits.c - numcodecs' PackBits filter: bit-unpacking of a bool array, the first byte giving the number
 * of padding bits (codec.h). */
#include "codec.h"

MZV_CODEC_DECODER(mzv_packbits_decode);

int mzv_packbits_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                        char *err, size_t err_len) {
    (void)s;
    if (len < 1) return mzv_step_fail(s, err, err_len, "empty chunk");
    size_t padding = in[0], bits = (len - 1) * 8;
    if (padding > 7 || padding > bits) return mzv_step_fail(s, err, err_len, "bad padding count");
    if (mzv_codec_alloc(out, bits - padding, limit, err, err_len) != 0) return -1;
    for (size_t i = 0; i < bits - padding; i++) out->data[i] = (in[1 + i / 8] >> (7 - i % 8)) & 1;
    return 0;
}

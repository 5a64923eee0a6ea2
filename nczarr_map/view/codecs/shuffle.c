/* shuffle.c - numcodecs' Shuffle filter (its own byte shuffle, not Blosc's): decoding unshuffles the bytes
 * by "elementsize" (codec.h). */
#include <stdint.h>
#include <string.h>

#include "codec.h"

MZV_CODEC_CONFIGURE(mzv_shuffle_configure);
MZV_CODEC_DECODER(mzv_shuffle_decode);

int mzv_shuffle_configure(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len) {
    (void)format;
    uint64_t es = 4; /* numcodecs' default */
    const mzj_value *v = mzj_get(config, "elementsize");
    if (v && (!mzj_as_uint64(v, &es) || es > 1024)) return mzv_step_fail(s, err, err_len, "bad elementsize");
    s->elementsize = (size_t)es;
    return 0;
}

int mzv_shuffle_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                       char *err, size_t err_len) {
    size_t es = s->elementsize;
    if (mzv_codec_alloc(out, len, limit, err, err_len) != 0) return -1;
    if (es <= 1) {
        memcpy(out->data, in, len);
        return 0;
    }
    if (len % es) return mzv_step_fail(s, err, err_len, "chunk length is not a multiple of elementsize");
    size_t count = len / es;
    for (size_t i = 0; i < count; i++)
        for (size_t b = 0; b < es; b++) out->data[i * es + b] = in[b * count + i];
    return 0;
}

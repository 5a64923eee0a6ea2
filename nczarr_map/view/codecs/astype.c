/* astype.c - numcodecs' AsType filter, and Quantize, whose decoding is the same cast: numpy astype from the
 * encoded to the decoded dtype (no float -> integer, whose result numpy leaves undefined) (codec.h). */
#include <stdint.h>

#include "codec.h"
#include "view_convert.h"

MZV_CODEC_CONFIGURE(mzv_astype_configure);
MZV_CODEC_CONFIGURE(mzv_quantize_configure);
MZV_CODEC_DECODER(mzv_astype_decode);

int mzv_astype_configure(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len) {
    (void)format;
    if (mzv_codec_dtype_param(config, "encode_dtype", &s->encoded, err, err_len) != 0 ||
        mzv_codec_dtype_param(config, "decode_dtype", &s->decoded, err, err_len) != 0)
        return -1;
    if (s->encoded.cls == MZV_DT_FLOAT && s->decoded.cls != MZV_DT_FLOAT)
        return mzv_step_fail(s, err, err_len, "float to integer is not decoded (numpy's result is undefined)");
    if (s->decoded.cls == MZV_DT_FLOAT && s->decoded.itemsize == 2)
        return mzv_step_fail(s, err, err_len, "float16 results are not supported");
    return 0;
}

/* Quantize: decoding is astype(astype -> dtype), for float32/float64 only. */
int mzv_quantize_configure(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len) {
    (void)format;
    if (mzv_codec_dtype_and_astype(config, s, err, err_len) != 0) return -1;
    if (s->decoded.cls != MZV_DT_FLOAT || s->encoded.cls != MZV_DT_FLOAT || s->decoded.itemsize == 2)
        return mzv_step_fail(s, err, err_len, "only float32/float64 are supported");
    return 0;
}

int mzv_astype_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                      char *err, size_t err_len) {
    size_t esz = s->encoded.itemsize, dsz = s->decoded.itemsize, n;
    if (mzv_codec_items(s, len, limit, out, &n, err, err_len) != 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (mzv_store_number(&s->decoded, out->data + i * dsz, mzv_load_number(&s->encoded, in + i * esz)) != 0)
            return mzv_step_fail(s, err, err_len, "unsupported conversion");
    return 0;
}

/* fixedscaleoffset.c - numcodecs' FixedScaleOffset filter: decoding is enc / scale + offset in numpy's
 * arithmetic, for a floating-point dtype (codec.h). */
#include <stdint.h>

#include "codec.h"
#include "view_convert.h"

MZV_CODEC_CONFIGURE(mzv_fixedscaleoffset_configure);
MZV_CODEC_DECODER(mzv_fixedscaleoffset_decode);

int mzv_fixedscaleoffset_configure(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len) {
    (void)format;
    if (mzv_codec_dtype_and_astype(config, s, err, err_len) != 0) return -1;
    if (s->decoded.cls != MZV_DT_FLOAT || s->decoded.itemsize == 2 ||
        (s->encoded.cls == MZV_DT_FLOAT && s->encoded.itemsize == 2))
        return mzv_step_fail(s, err, err_len, "only float32/float64 results are supported");
    if (!mzj_as_double(mzj_get(config, "scale"), &s->scale) || !mzj_as_double(mzj_get(config, "offset"), &s->offset))
        return mzv_step_fail(s, err, err_len, "scale or offset missing");
    return 0;
}

int mzv_fixedscaleoffset_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out,
                                char *err, size_t err_len) {
    size_t esz = s->encoded.itemsize, dsz = s->decoded.itemsize, n;
    if (mzv_codec_items(s, len, limit, out, &n, err, err_len) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        mzv_number x = mzv_load_number(&s->encoded, in + i * esz), r;
        /* numpy 1.24 value-based casting: a float32 array stays float32 against Python scalars; integer
         * arrays divide in float64. */
        if (x.kind == MZV_NUM_FLOAT) {
            float q = x.v.f / (float)s->scale;
            r.kind = MZV_NUM_FLOAT, r.v.f = q + (float)s->offset;
        } else {
            double q = mzv_number_as_double(x) / s->scale;
            r.kind = MZV_NUM_DOUBLE, r.v.d = q + s->offset;
        }
        mzv_store_number(&s->decoded, out->data + i * dsz, r);
    }
    return 0;
}

/* delta.c - numcodecs' Delta filter: decoding is a cumulative sum from "astype" to "dtype"; integers wrap
 * as numpy's cumsum does; floats only without a change of type (codec.h). */
#include <stdint.h>

#include "codec.h"
#include "view_convert.h"

MZV_CODEC_CONFIGURE(mzv_delta_configure);
MZV_CODEC_DECODER(mzv_delta_decode);

int mzv_delta_configure(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len) {
    (void)format;
    if (mzv_codec_dtype_and_astype(config, s, err, err_len) != 0) return -1;
    int floats = s->decoded.cls == MZV_DT_FLOAT || s->encoded.cls == MZV_DT_FLOAT;
    if (floats && (s->decoded.itemsize != s->encoded.itemsize || s->decoded.cls != s->encoded.cls ||
                   s->decoded.itemsize == 2))
        return mzv_step_fail(s, err, err_len, "floating-point with a different astype is not decoded exactly");
    return 0;
}

int mzv_delta_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len) {
    size_t esz = s->encoded.itemsize, dsz = s->decoded.itemsize, n;
    if (mzv_codec_items(s, len, limit, out, &n, err, err_len) != 0) return -1;
    if (s->decoded.cls == MZV_DT_FLOAT) {
        /* numpy's cumsum accumulates floats sequentially in their own precision. */
        float accf = 0;
        double accd = 0;
        for (size_t i = 0; i < n; i++) {
            mzv_number x = mzv_load_number(&s->encoded, in + i * esz), r;
            if (x.kind == MZV_NUM_FLOAT) accf += x.v.f, r.kind = MZV_NUM_FLOAT, r.v.f = accf;
            else accd += x.v.d, r.kind = MZV_NUM_DOUBLE, r.v.d = accd;
            mzv_store_number(&s->decoded, out->data + i * dsz, r);
        }
        return 0;
    }
    /* Integers: numpy accumulates in 64 bits and casts; modular arithmetic gives the same low bits. */
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        mzv_number x = mzv_load_number(&s->encoded, in + i * esz);
        acc += x.kind == MZV_NUM_INT ? (uint64_t)x.v.i : x.v.u;
        mzv_number r = {.kind = MZV_NUM_UINT, .v.u = acc};
        mzv_store_number(&s->decoded, out->data + i * dsz, r);
    }
    return 0;
}

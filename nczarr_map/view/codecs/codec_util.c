/* codec_util.c - what the codec files share: messages, bounded output buffers, dtype parameters (see
 * codec.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec.h"
#include "view_convert.h"

const char *mzv_codec_label(const mzv_codec *c) { return c->v2_id ? c->v2_id : c->v3_name; }

int mzv_codec_fail(const mzv_step *s, char *err, size_t err_len, const char *problem) {
    if (err && err_len) snprintf(err, err_len, "%s decoding failed: %s", mzv_codec_label(s->codec), problem);
    return -1;
}

int mzv_step_fail(const mzv_step *s, char *err, size_t err_len, const char *problem) {
    if (err && err_len) snprintf(err, err_len, "%s: %s", mzv_codec_label(s->codec), problem);
    return -1;
}

int mzv_codec_failf(char *err, size_t err_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && err_len) vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return -1;
}

int mzv_codec_alloc(mzv_bytes *out, size_t len, size_t limit, char *err, size_t err_len) {
    if (len > limit) return mzv_codec_failf(err, err_len, "decoded size exceeds the limit");
    out->data = malloc(len ? len : 1);
    out->len = len;
    if (!out->data) return mzv_codec_failf(err, err_len, "out of memory");
    return 0;
}

int mzv_codec_dtype_param(const mzj_value *config, const char *key, mzv_dtype *out, char *err, size_t err_len) {
    const char *s = mzj_string(mzj_get(config, key));
    char sub[200];
    if (!s) return mzv_codec_failf(err, err_len, "filter parameter \"%s\" missing or not a string", key);
    if (mzv_dtype_parse_string(s, out, sub, sizeof sub) != 0 || !mzv_dtype_is_numeric(out))
        return mzv_codec_failf(err, err_len, "filter parameter has an unsupported dtype: %s", s);
    return 0;
}

int mzv_codec_dtype_and_astype(const mzj_value *config, mzv_step *s, char *err, size_t err_len) {
    if (mzv_codec_dtype_param(config, "dtype", &s->decoded, err, err_len) != 0) return -1;
    if (!mzj_get(config, "astype")) {
        s->encoded = s->decoded;
        return 0;
    }
    return mzv_codec_dtype_param(config, "astype", &s->encoded, err, err_len);
}

int mzv_codec_items(const mzv_step *s, size_t len, size_t limit, mzv_bytes *out, size_t *n, char *err, size_t err_len) {
    size_t esz = s->encoded.itemsize, dsz = s->decoded.itemsize;
    if (len % esz) return mzv_step_fail(s, err, err_len, "chunk length is not a multiple of the encoded item size");
    *n = len / esz;
    if (*n > SIZE_MAX / dsz) return mzv_codec_failf(err, err_len, "decoded size exceeds the limit");
    return mzv_codec_alloc(out, *n * dsz, limit, err, err_len);
}

int mzv_grow(mzv_grow_buf *g) {
    if (g->len < g->cap) return 0;
    if (g->cap >= g->limit) return -1;
    size_t cap = g->cap ? g->cap * 2 : 4096;
    if (cap > g->limit || cap < g->cap) cap = g->limit;
    unsigned char *d = realloc(g->data, cap ? cap : 1);
    if (!d) return -1;
    g->data = d;
    g->cap = cap;
    return 0;
}

int mzv_grow_finish(mzv_grow_buf *g, mzv_bytes *out) {
    if (!g->data && !(g->data = malloc(1))) return -1;
    out->data = g->data;
    out->len = g->len;
    return 0;
}

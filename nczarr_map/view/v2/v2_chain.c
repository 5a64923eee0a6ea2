/* v2_chain.c - the decoding pipeline of a Zarr v2 array from its .zarray "compressor" and "filters"
 * (see view_codecs.h), each codec found by its numcodecs id in the codec table (codec_table.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_table.h"
#include "v2_read.h"

static int set_unsupported(mzv_codec_chain *c, const char *fmt, const char *a) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a ? a : "");
    free(c->unsupported);
    c->unsupported = strdup(msg);
    return c->unsupported ? 0 : -1;
}

/* Looks the entry's id up for role and configures it. 0, or -1 with a message in err. */
static int parse_codec(const mzj_value *config, mzv_codec_role role, mzv_step *out, char *err, size_t err_len) {
    static const char *const what[] = {[MZV_CODEC_COMPRESSOR] = "compressor", [MZV_CODEC_FILTER] = "filter",
                                       [MZV_CODEC_OBJECT] = "object codec"};
    const char *id = mzj_string(mzj_get(config, "id"));
    if (!id) return mzv_codec_failf(err, err_len, "%s without an id", what[role]);
    const mzv_codec *codec = mzv_codec_find_v2(id);
    if (!codec || codec->role != role)
        return mzv_codec_failf(err, err_len, "%s \"%s\" cannot be decoded by the view", what[role], id);
    return mzv_codec_configure(codec, config, 2, out, err, err_len);
}

int mzv_v2_filter_parse(const mzj_value *config, mzv_step *out, char *err, size_t err_len) {
    return parse_codec(config, MZV_CODEC_FILTER, out, err, err_len);
}

int mzv_chain_build(const mzv_zarray *z, mzv_codec_chain *out) {
    memset(out, 0, sizeof *out);
    char err[256];
    mzv_step step;
    if (z->compressor) {
        if (parse_codec(z->compressor, MZV_CODEC_COMPRESSOR, &step, err, sizeof err) != 0)
            return set_unsupported(out, "%s", err);
        if (mzv_chain_push(out, &step) != 0) return -1;
    }
    if (!z->filters) return 0;
    size_t n = z->filters->u.array.count;
    size_t first = 0;
    if (z->dtype.cls == MZV_DT_OBJECT) {
        /* zarr-python puts the object codec first in the list: it is the last to decode. */
        if (parse_codec(z->filters->u.array.items[0], MZV_CODEC_OBJECT, &step, err, sizeof err) != 0)
            return set_unsupported(out, "%s", err);
        out->object_codec = step.codec->object;
        first = 1;
    }
    for (size_t i = n; i-- > first;) {
        if (mzv_v2_filter_parse(z->filters->u.array.items[i], &step, err, sizeof err) != 0)
            return set_unsupported(out, "%s", err);
        if (mzv_chain_push(out, &step) != 0) return -1;
    }
    return 0;
}

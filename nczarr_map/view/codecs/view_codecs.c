/* view_codecs.c - running the per-array decoding pipeline (see view_codecs.h); building it from the metadata
 * is the job of each format's reader (v2/v2_chain.c, v3/v3_array.c), which find codecs in codec_table.c. */
#include "view_codecs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mzv_chain_free(mzv_codec_chain *c) {
    if (!c) return;
    free(c->steps);
    free(c->unsupported);
    memset(c, 0, sizeof *c);
}

int mzv_chain_push(mzv_codec_chain *c, const mzv_step *step) {
    mzv_step *s = realloc(c->steps, (c->step_count + 1) * sizeof *s);
    if (!s) return -1;
    c->steps = s;
    c->steps[c->step_count++] = *step;
    return 0;
}

int mzv_chain_is_identity(const mzv_codec_chain *c) { return !c->unsupported && c->step_count == 0; }

int mzv_step_decode(const mzv_step *s, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len) {
    out->data = NULL;
    out->len = 0;
    if (s->codec->decode(s, in, len, limit, out, err, err_len) == 0) return 0;
    free(out->data);
    out->data = NULL;
    out->len = 0;
    return -1;
}

int mzv_chain_decode(const mzv_codec_chain *c, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len) {
    out->data = NULL;
    out->len = 0;
    if (c->unsupported) {
        snprintf(err, err_len, "%s", c->unsupported);
        return -1;
    }
    /* Only a compressor's input may be larger than what it decodes to by more than a little. */
    if ((c->step_count == 0 || c->steps[0].codec->role != MZV_CODEC_COMPRESSOR) && len > limit) {
        snprintf(err, err_len, "stored chunk larger than the limit");
        return -1;
    }
    if (c->step_count == 0) {
        out->data = malloc(len ? len : 1);
        if (!out->data) {
            snprintf(err, err_len, "out of memory");
            return -1;
        }
        memcpy(out->data, in, len);
        out->len = len;
        return 0;
    }
    mzv_bytes cur = {(unsigned char *)in, len}; /* borrowed until the first step's output */
    for (size_t i = 0; i < c->step_count; i++) {
        mzv_bytes next;
        int rc = mzv_step_decode(&c->steps[i], cur.data, cur.len, limit, &next, err, err_len);
        if (i > 0) free(cur.data);
        if (rc != 0) return -1;
        cur = next;
    }
    *out = cur;
    return 0;
}

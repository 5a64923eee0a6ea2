/* view_codecs.c - running the per-array decoding pipeline (see view_codecs.h); building it from the metadata
 * is the job of each format's reader (v2/v2_chain.c). */
#include "view_codecs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mzv_chain_free(mzv_codec_chain *c) {
    if (!c) return;
    free(c->filters);
    free(c->unsupported);
    memset(c, 0, sizeof *c);
}

int mzv_chain_is_identity(const mzv_codec_chain *c) {
    return !c->unsupported && !c->has_compressor && c->filter_count == 0;
}

int mzv_chain_decode(const mzv_codec_chain *c, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len) {
    out->data = NULL;
    out->len = 0;
    if (c->unsupported) {
        snprintf(err, err_len, "%s", c->unsupported);
        return -1;
    }
    mzv_bytes cur = {NULL, 0};
    if (c->has_compressor) {
        if (mzv_decompress(c->compressor, in, len, limit, &cur, err, err_len) != 0) return -1;
    } else {
        if (len > limit) {
            snprintf(err, err_len, "stored chunk larger than the limit");
            return -1;
        }
        cur.data = malloc(len ? len : 1);
        if (!cur.data) {
            snprintf(err, err_len, "out of memory");
            return -1;
        }
        memcpy(cur.data, in, len);
        cur.len = len;
    }
    for (size_t i = 0; i < c->filter_count; i++) {
        mzv_bytes next;
        int rc = mzv_filter_decode(&c->filters[i], &cur, limit, &next, err, err_len);
        free(cur.data);
        if (rc != 0) return -1;
        cur = next;
    }
    *out = cur;
    return 0;
}

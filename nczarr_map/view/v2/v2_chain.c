/* v2_chain.c - the decoding pipeline of a Zarr v2 array from its .zarray "compressor" and "filters"
 * (see view_codecs.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v2_read.h"

static int set_unsupported(mzv_codec_chain *c, const char *fmt, const char *a) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a ? a : "");
    free(c->unsupported);
    c->unsupported = strdup(msg);
    return c->unsupported ? 0 : -1;
}

static int parse_compressor(const mzj_value *config, mzv_codec_chain *c) {
    const char *id = mzj_string(mzj_get(config, "id"));
    c->has_compressor = 1;
    if (strcmp(id, "blosc") == 0) c->compressor = MZV_COMP_BLOSC;
    else if (strcmp(id, "zlib") == 0) c->compressor = MZV_COMP_ZLIB;
    else if (strcmp(id, "gzip") == 0) c->compressor = MZV_COMP_GZIP;
    else if (strcmp(id, "bz2") == 0) c->compressor = MZV_COMP_BZ2;
    else if (strcmp(id, "zstd") == 0) c->compressor = MZV_COMP_ZSTD;
    else if (strcmp(id, "lz4") == 0) c->compressor = MZV_COMP_LZ4;
    else if (strcmp(id, "lzma") == 0) {
        /* numcodecs' LZMA: format 1 = .xz (default), 2 = .lzma ("alone"), 3 = raw with a filter list. */
        int64_t format = 1;
        const mzj_value *f = mzj_get(config, "format");
        if (f && f->kind != MZJ_NULL && !mzj_as_int64(f, &format)) format = -1;
        if (format == 1) c->compressor = MZV_COMP_LZMA_XZ;
        else if (format == 2) c->compressor = MZV_COMP_LZMA_ALONE;
        else return set_unsupported(c, "compressor lzma: only formats 1 (xz) and 2 (alone) are decoded%s", NULL);
    } else {
        return set_unsupported(c, "compressor \"%s\" cannot be decoded by the view", id);
    }
    return 0;
}

int mzv_chain_build(const mzv_zarray *z, mzv_codec_chain *out) {
    memset(out, 0, sizeof *out);
    if (z->compressor && parse_compressor(z->compressor, out) != 0) return -1;
    if (out->unsupported) return 0;
    if (!z->filters) return 0;
    size_t n = z->filters->u.array.count;
    size_t first = 0;
    if (z->dtype.cls == MZV_DT_OBJECT) {
        /* zarr-python puts the object codec first in the list: it is the last to decode. */
        const char *id = mzj_string(mzj_get(z->filters->u.array.items[0], "id"));
        if (strcmp(id, "vlen-utf8") == 0) out->object_codec = MZV_OBJECT_VLEN_UTF8;
        else if (strcmp(id, "vlen-bytes") == 0) out->object_codec = MZV_OBJECT_VLEN_BYTES;
        else return set_unsupported(out, "object codec \"%s\" cannot be decoded by the view", id);
        first = 1;
    }
    if (n > first) {
        out->filters = calloc(n - first, sizeof *out->filters);
        if (!out->filters) return -1;
    }
    for (size_t i = n; i-- > first;) {
        char err[256];
        if (mzv_filter_parse(z->filters->u.array.items[i], &out->filters[out->filter_count], err, sizeof err) != 0)
            return set_unsupported(out, "%s", err);
        out->filter_count++;
    }
    return 0;
}

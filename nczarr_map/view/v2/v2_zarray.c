/* v2_zarray.c - parsing and validating a Zarr v2 .zarray document into the array model (see v2_read.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v2_read.h"

static int failf(char *err, size_t err_len, const char *msg, const char *detail) {
    if (err && err_len) snprintf(err, err_len, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
    return -1;
}

int mzv_zarray_parse(const char *text, size_t len, mzv_zarray *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    if (mzj_parse(text, len, &out->json, err, err_len) != 0) return -1;
    const mzj_value *j = out->json;
    if (j->kind != MZJ_OBJECT) goto bad_document;

    int64_t format;
    if (!mzj_as_int64(mzj_get(j, "zarr_format"), &format) || format != 2) {
        failf(err, err_len, "zarr_format is not 2", NULL);
        goto fail;
    }
    int chunk_rank;
    if (mzv_parse_shape(mzj_get(j, "shape"), "shape", out->shape, &out->rank, err, err_len) != 0 ||
        mzv_parse_shape(mzj_get(j, "chunks"), "chunks", out->chunks, &chunk_rank, err, err_len) != 0)
        goto fail;
    if (chunk_rank != out->rank) {
        failf(err, err_len, "chunks and shape have different lengths", NULL);
        goto fail;
    }
    for (int i = 0; i < out->rank; i++) {
        if (out->chunks[i] == 0 && out->shape[i] != 0) {
            failf(err, err_len, "a chunk length is 0 for a non-empty dimension", NULL);
            goto fail;
        }
    }
    out->dtype_json = mzj_get(j, "dtype");
    if (mzv_dtype_parse(out->dtype_json, &out->dtype, err, err_len) != 0) goto fail;

    const mzj_value *order = mzj_get(j, "order");
    const char *o = mzj_string(order);
    if (order && (!o || (strcmp(o, "C") != 0 && strcmp(o, "F") != 0))) {
        failf(err, err_len, "order is neither \"C\" nor \"F\"", NULL);
        goto fail;
    }
    out->fortran_order = o && strcmp(o, "F") == 0;

    out->separator = '.';
    const mzj_value *sep = mzj_get(j, "dimension_separator");
    if (sep && sep->kind != MZJ_NULL) {
        const char *s = mzj_string(sep);
        if (!s || (strcmp(s, ".") != 0 && strcmp(s, "/") != 0)) {
            failf(err, err_len, "dimension_separator is neither \".\" nor \"/\"", NULL);
            goto fail;
        }
        out->separator = s[0];
    }

    out->fill_value = mzj_get(j, "fill_value");
    const mzj_value *comp = mzj_get(j, "compressor");
    if (comp && comp->kind != MZJ_NULL) {
        if (comp->kind != MZJ_OBJECT || !mzj_string(mzj_get(comp, "id"))) {
            failf(err, err_len, "compressor is neither null nor an object with an \"id\"", NULL);
            goto fail;
        }
        out->compressor = comp;
    }
    const mzj_value *filters = mzj_get(j, "filters");
    if (filters && filters->kind != MZJ_NULL) {
        if (filters->kind != MZJ_ARRAY) {
            failf(err, err_len, "filters is neither null nor a list", NULL);
            goto fail;
        }
        for (size_t i = 0; i < filters->u.array.count; i++) {
            const mzj_value *f = filters->u.array.items[i];
            if (f->kind != MZJ_OBJECT || !mzj_string(mzj_get(f, "id"))) {
                failf(err, err_len, "a filter is not an object with an \"id\"", NULL);
                goto fail;
            }
        }
        if (filters->u.array.count) out->filters = filters;
    }
    if (out->dtype.cls == MZV_DT_OBJECT && !out->filters) {
        failf(err, err_len, "object dtype \"|O\" without an object codec in filters", NULL);
        goto fail;
    }
    return 0;

bad_document:
    failf(err, err_len, "not a JSON object", NULL);
fail:
    mzj_free(out->json);
    memset(out, 0, sizeof *out);
    return -1;
}

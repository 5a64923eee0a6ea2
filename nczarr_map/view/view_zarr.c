/* view_zarr.c - the array model: numpy dtypes and shapes (see view_zarr.h). */
#include "view_zarr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failf(char *err, size_t err_len, const char *msg, const char *detail) {
    if (err && err_len) snprintf(err, err_len, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
    return -1;
}

/* Structured dtypes nest; a record inside a record inside ... is legal but never deep. */
#define MAX_STRUCT_DEPTH 8

static int parse_size(const char *s, size_t *out, const char **rest) {
    if (*s < '0' || *s > '9') return -1;
    size_t v = 0;
    while (*s >= '0' && *s <= '9') {
        if (v > (SIZE_MAX - 9) / 10) return -1;
        v = v * 10 + (size_t)(*s - '0');
        s++;
    }
    *out = v;
    *rest = s;
    return 0;
}

int mzv_dtype_parse_string(const char *s, mzv_dtype *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    const char *text = s;
    if (*s == '<' || *s == '|' || *s == '=') s++;
    else if (*s == '>') out->big_endian = 1, s++;
    char kind = *s++;
    size_t n = 0;
    const char *rest = s;
    if (kind == 'O') {
        /* "|O" or "|O8" */
        if (*s && (parse_size(s, &n, &rest) != 0 || *rest)) return failf(err, err_len, "unknown dtype", text);
        out->cls = MZV_DT_OBJECT;
        return 0;
    }
    if (parse_size(s, &n, &rest) != 0) return failf(err, err_len, "unknown dtype", text);
    switch (kind) {
    case 'b':
        if (n != 1 || *rest) return failf(err, err_len, "unknown dtype", text);
        out->cls = MZV_DT_BOOL;
        out->itemsize = 1;
        break;
    case 'i':
    case 'u':
        if ((n != 1 && n != 2 && n != 4 && n != 8) || *rest) return failf(err, err_len, "unknown dtype", text);
        out->cls = kind == 'i' ? MZV_DT_INT : MZV_DT_UINT;
        out->itemsize = n;
        break;
    case 'f':
    case 'c':
        if (*rest || n == 0) return failf(err, err_len, "unknown dtype", text);
        out->itemsize = n;
        if (kind == 'f' && (n == 2 || n == 4 || n == 8)) out->cls = MZV_DT_FLOAT;
        else if (kind == 'c' && (n == 8 || n == 16)) out->cls = MZV_DT_COMPLEX;
        else out->cls = MZV_DT_OPAQUE; /* float128, complex256: kept as bytes */
        break;
    case 'S':
    case 'a':
        if (*rest) return failf(err, err_len, "unknown dtype", text);
        out->cls = MZV_DT_BYTES;
        out->itemsize = out->width = n;
        break;
    case 'U':
        if (*rest || n > SIZE_MAX / 4) return failf(err, err_len, "unknown dtype", text);
        out->cls = MZV_DT_UNICODE;
        out->width = n;
        out->itemsize = 4 * n;
        break;
    case 'V':
        if (*rest || n == 0) return failf(err, err_len, "unknown dtype", text);
        out->cls = MZV_DT_OPAQUE;
        out->itemsize = n;
        break;
    case 'M':
    case 'm':
        if (n != 8) return failf(err, err_len, "unknown dtype", text);
        out->cls = kind == 'M' ? MZV_DT_DATETIME : MZV_DT_TIMEDELTA;
        out->itemsize = 8;
        if (*rest == '[') {
            const char *close = strchr(rest, ']');
            size_t ulen = close ? (size_t)(close - rest - 1) : 0;
            if (!close || close[1] || ulen == 0 || ulen >= sizeof out->unit)
                return failf(err, err_len, "bad datetime unit in dtype", text);
            memcpy(out->unit, rest + 1, ulen);
            out->unit[ulen] = '\0';
        } else if (*rest) {
            return failf(err, err_len, "unknown dtype", text);
        }
        break;
    default: return failf(err, err_len, "unknown dtype", text);
    }
    return 0;
}

static int structured_itemsize(const mzj_value *fields, int depth, size_t *out, char *err, size_t err_len) {
    if (depth > MAX_STRUCT_DEPTH) return failf(err, err_len, "structured dtype nested too deeply", NULL);
    if (fields->kind != MZJ_ARRAY || fields->u.array.count == 0)
        return failf(err, err_len, "structured dtype must be a non-empty list of fields", NULL);
    size_t total = 0;
    for (size_t i = 0; i < fields->u.array.count; i++) {
        const mzj_value *f = fields->u.array.items[i];
        if (f->kind != MZJ_ARRAY || f->u.array.count < 2 || f->u.array.count > 3 ||
            f->u.array.items[0]->kind != MZJ_STRING)
            return failf(err, err_len, "structured dtype field must be [name, dtype] or [name, dtype, shape]", NULL);
        const mzj_value *ft = f->u.array.items[1];
        size_t size;
        if (ft->kind == MZJ_STRING) {
            mzv_dtype d;
            if (mzv_dtype_parse_string(ft->u.string.bytes, &d, err, err_len) != 0) return -1;
            if (d.cls == MZV_DT_OBJECT) return failf(err, err_len, "object field in a structured dtype", NULL);
            size = d.itemsize;
        } else if (structured_itemsize(ft, depth + 1, &size, err, err_len) != 0) {
            return -1;
        }
        if (f->u.array.count == 3) {
            const mzj_value *shape = f->u.array.items[2];
            if (shape->kind != MZJ_ARRAY) return failf(err, err_len, "structured dtype field shape must be a list", NULL);
            for (size_t k = 0; k < shape->u.array.count; k++) {
                uint64_t n;
                if (!mzj_as_uint64(shape->u.array.items[k], &n) || (n && size > SIZE_MAX / n))
                    return failf(err, err_len, "bad structured dtype field shape", NULL);
                size *= (size_t)n;
            }
        }
        if (total > SIZE_MAX - size) return failf(err, err_len, "structured dtype too large", NULL);
        total += size;
    }
    *out = total;
    return 0;
}

int mzv_dtype_parse(const mzj_value *dtype, mzv_dtype *out, char *err, size_t err_len) {
    if (!dtype) return failf(err, err_len, "missing dtype", NULL);
    if (dtype->kind == MZJ_STRING) return mzv_dtype_parse_string(dtype->u.string.bytes, out, err, err_len);
    memset(out, 0, sizeof *out);
    out->cls = MZV_DT_OPAQUE;
    if (structured_itemsize(dtype, 0, &out->itemsize, err, err_len) != 0) return -1;
    if (out->itemsize == 0) return failf(err, err_len, "structured dtype of size 0", NULL);
    return 0;
}

int mzv_parse_shape(const mzj_value *list, const char *what, uint64_t *dims, int *rank, char *err, size_t err_len) {
    if (!list || list->kind != MZJ_ARRAY) return failf(err, err_len, what, "missing or not a list");
    if (list->u.array.count > MZV_MAX_RANK) return failf(err, err_len, what, "more than 32 dimensions");
    for (size_t i = 0; i < list->u.array.count; i++)
        if (!mzj_as_uint64(list->u.array.items[i], &dims[i]) || dims[i] > (UINT64_C(1) << 62))
            return failf(err, err_len, what, "not a list of non-negative integers");
    *rank = (int)list->u.array.count;
    return 0;
}

void mzv_zarray_free(mzv_zarray *z) {
    if (!z) return;
    mzj_free(z->json);
    free(z->sharding);
    memset(z, 0, sizeof *z);
}

uint64_t mzv_chunk_elements(const mzv_zarray *z) {
    uint64_t n = 1;
    for (int i = 0; i < z->rank; i++) {
        if (z->chunks[i] == 0 || n > UINT64_MAX / z->chunks[i]) return 0;
        n *= z->chunks[i];
    }
    return n;
}

int mzv_zarray_is_empty(const mzv_zarray *z) {
    for (int i = 0; i < z->rank; i++)
        if (z->shape[i] == 0) return 1;
    return 0;
}

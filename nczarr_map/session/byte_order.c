/* byte_order.c - correcting the byte order that netCDF-C 4.9.0 - 4.9.2 declare for the bytes they write. */
#include "byte_order.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

char mzn_native_order_char(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first ? '<' : '>';
}

/* 1 if dtype is "<" or ">" followed by a number kind (i, u, f, c) and a size above one byte. */
static int multibyte_number(const char *dtype) {
    if (!dtype || (dtype[0] != '<' && dtype[0] != '>') || !strchr("iufc", dtype[1]) || dtype[1] == '\0')
        return 0;
    char *end;
    long size = strtol(dtype + 2, &end, 10);
    return dtype[2] >= '0' && dtype[2] <= '9' && *end == '\0' && size > 1;
}

static const char *dtype_of(const mzj_value *doc) { return mzj_string(mzj_get(doc, "dtype")); }

int mzn_dtype_foreign_order(const void *zarray, size_t len) {
    mzj_value *doc;
    if (mzj_parse(zarray, len, &doc, NULL, 0) != 0) return 0;
    const char *dtype = dtype_of(doc);
    int foreign = multibyte_number(dtype) && dtype[0] != mzn_native_order_char();
    mzj_free(doc);
    return foreign;
}

int mzn_native_dtype(const void *zarray, size_t len, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    mzj_value *doc;
    if (mzj_parse(zarray, len, &doc, NULL, 0) != 0) return 0;
    const char *dtype = dtype_of(doc);
    int rc = 0;
    if (multibyte_number(dtype) && dtype[0] != mzn_native_order_char()) {
        char *fixed = strdup(dtype);
        rc = -1;
        if (fixed) {
            fixed[0] = mzn_native_order_char();
            if (mzj_object_set(doc, "dtype", mzj_new_cstring(fixed)) == 0 && (*out = mzj_to_text(doc, out_len)))
                rc = 1;
            free(fixed);
        }
    }
    mzj_free(doc);
    return rc;
}

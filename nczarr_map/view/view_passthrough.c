/* view_passthrough.c - placeholder view that translates nothing, until the compatibility view lands. */
#include <stdlib.h>

#include "view.h"

struct mzv_view {
    int unused;
};

int mzv_open(mmzip_t *archive, const char *prefix, int enabled, mzv_view **out) {
    (void)archive;
    (void)prefix;
    (void)enabled;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -61; /* NC_ENOMEM */
}

int mzv_get(mzv_view *v, const char *key, const void **data, size_t *len) {
    (void)v, (void)key, (void)data, (void)len;
    return 0;
}

int mzv_check_write(mzv_view *v, const char *key, const void *data, size_t len) {
    (void)v, (void)key, (void)data, (void)len;
    return 0;
}

int mzv_active(const mzv_view *v) {
    (void)v;
    return 0;
}

void mzv_close(mzv_view *v) { free(v); }

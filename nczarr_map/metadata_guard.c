/* metadata_guard.c - merging netCDF-C's metadata rewrites into the archived objects. */
#include "metadata_guard.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"

/* The archived bytes if doc means the same as the archived document, else doc printed. */
static int result_bytes(const mzn_json *doc, const mzn_json *original, const void *archived, size_t archived_len,
                        char **out, size_t *out_len) {
    if (mzn_json_equal(doc, original)) {
        if (!(*out = malloc(archived_len ? archived_len : 1))) return -1;
        memcpy(*out, archived, archived_len);
        *out_len = archived_len;
        return 1;
    }
    return (*out = mzn_json_print(doc, out_len)) ? 1 : -1;
}

/* Parses both sides; returns 1 if both are objects. */
static int parse_objects(const void *a, size_t alen, const void *b, size_t blen, mzn_json **x, mzn_json **y) {
    *x = mzn_json_parse(a, alen);
    *y = mzn_json_parse(b, blen);
    return *x && *y && (*x)->kind == MZN_JSON_OBJECT && (*y)->kind == MZN_JSON_OBJECT;
}

int mzn_merge_blind_attributes(const void *archived, size_t archived_len, const void *incoming,
                               size_t incoming_len, char **merged, size_t *merged_len) {
    *merged = NULL;
    *merged_len = 0;
    mzn_json *base, *overlay, *original = NULL;
    int rc = 0;
    if (!parse_objects(archived, archived_len, incoming, incoming_len, &base, &overlay)) goto out;
    rc = -1;
    if (!(original = mzn_json_copy(base)) || mzn_json_merge(base, overlay) != 0) goto out;
    rc = result_bytes(base, original, archived, archived_len, merged, merged_len);
out:
    mzn_json_free(base);
    mzn_json_free(overlay);
    mzn_json_free(original);
    return rc;
}

int mzn_guard_array_rewrite(const void *archived, size_t archived_len, const void *incoming, size_t incoming_len,
                            char **out, size_t *out_len, int *lossy) {
    *out = NULL;
    *out_len = 0;
    *lossy = 0;
    mzn_json *kept, *rewrite, *original = NULL;
    int rc = 0;
    if (!parse_objects(archived, archived_len, incoming, incoming_len, &kept, &rewrite)) goto out;
    rc = -1;
    if (!(original = mzn_json_copy(kept))) goto out;
    for (size_t i = 0; i < kept->count; i++) {
        const char *name = kept->keys[i];
        if (mzn_json_member(kept, name) != kept->items[i] || strcmp(name, "shape") == 0) continue;
        if (!mzn_json_equal(kept->items[i], mzn_json_member(rewrite, name))) *lossy = 1;
    }
    /* The new shape, and members the archive lacks (e.g. NCZarr's own _nczarr_array), are taken. */
    for (size_t i = 0; i < rewrite->count; i++) {
        const char *name = rewrite->keys[i];
        if ((strcmp(name, "shape") == 0 || !mzn_json_member(kept, name)) &&
            mzn_json_set(kept, name, rewrite->items[i]) != 0)
            goto out;
    }
    rc = result_bytes(kept, original, archived, archived_len, out, out_len);
out:
    mzn_json_free(kept);
    mzn_json_free(rewrite);
    mzn_json_free(original);
    return rc;
}

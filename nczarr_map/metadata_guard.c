/* metadata_guard.c - merging netCDF-C's metadata rewrites into the archived objects. */
#include "metadata_guard.h"

#include <stdlib.h>
#include <string.h>

#include "view_json.h"

/* The archived bytes if doc means the same as the archived document, else doc printed. */
static int result_bytes(const mzj_value *doc, const mzj_value *original, const void *archived,
                        size_t archived_len, char **out, size_t *out_len) {
    if (mzj_equal(doc, original)) {
        if (!(*out = malloc(archived_len ? archived_len : 1))) return -1;
        memcpy(*out, archived, archived_len);
        *out_len = archived_len;
        return 1;
    }
    return (*out = mzj_to_text(doc, out_len)) ? 1 : -1;
}

/* Parses both sides; returns 1 if both are objects. */
static int parse_objects(const void *a, size_t alen, const void *b, size_t blen, mzj_value **x, mzj_value **y) {
    /* A side that does not parse is left NULL: the caller stores the incoming bytes as they are. */
    mzj_parse(a, alen, x, NULL, 0);
    mzj_parse(b, blen, y, NULL, 0);
    return *x && *y && (*x)->kind == MZJ_OBJECT && (*y)->kind == MZJ_OBJECT;
}

int mzn_merge_blind_attributes(const void *archived, size_t archived_len, const void *incoming,
                               size_t incoming_len, char **merged, size_t *merged_len) {
    *merged = NULL;
    *merged_len = 0;
    mzj_value *base, *overlay, *original = NULL;
    int rc = 0;
    if (!parse_objects(archived, archived_len, incoming, incoming_len, &base, &overlay)) goto out;
    rc = -1;
    if (!(original = mzj_clone(base)) || mzj_merge(base, overlay) != 0) goto out;
    rc = result_bytes(base, original, archived, archived_len, merged, merged_len);
out:
    mzj_free(base);
    mzj_free(overlay);
    mzj_free(original);
    return rc;
}

int mzn_guard_array_rewrite(const void *archived, size_t archived_len, const void *incoming, size_t incoming_len,
                            char **out, size_t *out_len, int *lossy) {
    *out = NULL;
    *out_len = 0;
    *lossy = 0;
    mzj_value *kept, *rewrite, *original = NULL;
    int rc = 0;
    if (!parse_objects(archived, archived_len, incoming, incoming_len, &kept, &rewrite)) goto out;
    rc = -1;
    if (!(original = mzj_clone(kept))) goto out;
    for (size_t i = 0; i < kept->u.object.count; i++) {
        const mzj_member *m = &kept->u.object.members[i];
        if (strcmp(m->key, "shape") != 0 && !mzj_equal(m->value, mzj_get(rewrite, m->key))) *lossy = 1;
    }
    /* The new shape, and members the archive lacks (e.g. NCZarr's own _nczarr_array), are taken. */
    for (size_t i = 0; i < rewrite->u.object.count; i++) {
        const mzj_member *m = &rewrite->u.object.members[i];
        if ((strcmp(m->key, "shape") == 0 || !mzj_get(kept, m->key)) &&
            mzj_object_set(kept, m->key, mzj_clone(m->value)) != 0)
            goto out;
    }
    rc = result_bytes(kept, original, archived, archived_len, out, out_len);
out:
    mzj_free(kept);
    mzj_free(rewrite);
    mzj_free(original);
    return rc;
}

/* metadata_guard.c - merging netCDF-C's metadata rewrites into the archived objects. */
#include "metadata_guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "json.h"
#include "view_release.h"

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

/* NCZarr's type table of attrs ({"types": {...}} under either spelling), and the spelling. */
static mzj_value *types_of(const mzj_value *attrs, const char **spelling) {
    static const char *const keys[] = {"_nczarr_attr", "_NCZARR_ATTR"};
    for (size_t i = 0; i < 2; i++) {
        mzj_value *t = (mzj_value *)mzj_get(mzj_get(attrs, keys[i]), "types");
        if (t && t->kind == MZJ_OBJECT) {
            if (spelling) *spelling = keys[i];
            return t;
        }
    }
    return NULL;
}

/* written is the archived value unchanged: as netCDF-C renders it, or (a dict or a list of lists, which
 * netCDF-C reads as JSON text) as that text. */
static int unchanged_value(const mzj_value *archived, const mzj_value *written) {
    if (mzv_written_value_matches(archived, written)) return 1;
    if (written->kind != MZJ_STRING || (archived->kind != MZJ_OBJECT && archived->kind != MZJ_ARRAY)) return 0;
    mzj_value *parsed;
    if (mzj_parse(written->u.string.bytes, written->u.string.len, &parsed, NULL, 0) != 0) return 0;
    int same = mzj_equal(parsed, archived);
    mzj_free(parsed);
    return same;
}

/* A _FillValue attribute netCDF-C made from the array's fill_value (null: netCDF's default fill). */
static int materialised_fill(const mzj_value *written, const mzj_value *fill) {
    if (!fill || fill->kind == MZJ_NULL) return 1;
    double a, b;
    if (mzj_as_double(fill, &a) && mzj_as_double(written, &b) && ((isnan(a) && isnan(b)) || a == b)) return 1;
    return mzv_written_value_matches(fill, written);
}

/* Sets or removes the type of attribute key in table (in the table's own spelling of char). */
static int retype(mzj_value *table, const char *spelling, const mzj_value *wtypes, const char *key) {
    const char *t = mzj_string(mzj_get(wtypes, key));
    if (!t) {
        mzj_object_remove(table, key);
        return 0;
    }
    if (spelling && strcmp(spelling, "_nczarr_attr") == 0 && strcmp(t, "<U1") == 0) t = ">S1";
    if (spelling && strcmp(spelling, "_NCZARR_ATTR") == 0 && strcmp(t, ">S1") == 0) t = "<U1";
    return mzj_object_set(table, key, mzj_new_cstring(t));
}

int mzn_exact_attributes(const void *archived, size_t archived_len, const void *incoming, size_t incoming_len,
                         const void *zarray, size_t zarray_len, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    mzj_value *base = NULL, *written = NULL, *result = NULL, *definition = NULL, *added_types = NULL;
    int rc = 0;
    if (archived) mzj_parse(archived, archived_len, &base, NULL, 0);
    else base = mzj_new_object();
    mzj_parse(incoming, incoming_len, &written, NULL, 0);
    if (!base || !written || base->kind != MZJ_OBJECT || written->kind != MZJ_OBJECT) goto out;
    if (zarray) mzj_parse(zarray, zarray_len, &definition, NULL, 0);
    rc = -1;
    if (!(result = mzj_clone(base))) goto out;
    const char *spelling = NULL, *wspelling = NULL;
    mzj_value *table = types_of(result, &spelling);
    const mzj_value *wtypes = types_of(written, &wspelling);
    int changed = 0;
    for (size_t i = 0; i < written->u.object.count; i++) {
        const char *k = written->u.object.members[i].key;
        const mzj_value *wv = written->u.object.members[i].value, *av = mzj_get(base, k);
        if (mzv_is_types_key(k)) continue; /* follows the attributes it types */
        if (av ? unchanged_value(av, wv)
               : strcmp(k, "_ARRAY_DIMENSIONS") == 0 ||
                     (strcmp(k, "_FillValue") == 0 && definition && materialised_fill(wv, mzj_get(definition, "fill_value"))))
            continue;
        if (mzj_object_set(result, k, mzj_clone(wv)) != 0) goto out;
        changed = 1;
        if (table) {
            if (retype(table, spelling, wtypes, k) != 0) goto out;
        } else if (mzj_get(wtypes, k)) {
            if (!added_types && !(added_types = mzj_new_object())) goto out;
            if (retype(added_types, wspelling, wtypes, k) != 0) goto out;
        }
    }
    for (size_t i = 0; i < base->u.object.count; i++) {
        const char *k = base->u.object.members[i].key;
        /* 4.9.0 writes _ARRAY_DIMENSIONS only for arrays of the root group: not a deletion */
        if (mzv_is_types_key(k) || strcmp(k, "_ARRAY_DIMENSIONS") == 0 || mzj_get(written, k)) continue;
        mzj_object_remove(result, k);
        if (table) mzj_object_remove(table, k);
        changed = 1;
    }
    if (added_types) {
        mzj_value *holder = mzj_new_object(), *types = added_types;
        added_types = NULL;
        if (!holder) {
            mzj_free(types);
            goto out;
        }
        if (mzj_object_set(holder, "types", types) != 0) { /* types is freed */
            mzj_free(holder);
            goto out;
        }
        if (mzj_object_set(result, wspelling, holder) != 0) goto out;
    }
    if (!changed) {
        rc = archived ? result_bytes(base, base, archived, archived_len, out, out_len) : 2;
        goto out;
    }
    rc = (*out = mzj_to_text(result, out_len)) ? 1 : -1;
out:
    mzj_free(base);
    mzj_free(written);
    mzj_free(result);
    mzj_free(definition);
    mzj_free(added_types);
    return rc;
}

/*
 * v2_read.c - reading a Zarr v2 dataset's metadata into the view's catalog: every .zarray, .zattrs and
 * .zgroup under the dataset prefix (see v2_read.h).
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v2_read.h"
#include "view_internal.h"

/* The metadata entries found by the listing, before parsing. */
typedef struct found {
    char **names; /* relative to the dataset prefix */
    size_t count, cap;
    size_t skip;
    int failed;
} found;

static int collect_metadata(const mmzip_entry_info *info, void *ctx) {
    found *f = ctx;
    if (info->name_len <= f->skip) return 0;
    const char *rel = info->name + f->skip;
    size_t rel_len = info->name_len - f->skip;
    if (rel_len < 7 || (memcmp(rel + rel_len - 7, ".zarray", 7) != 0 && memcmp(rel + rel_len - 7, ".zattrs", 7) != 0 &&
                        memcmp(rel + rel_len - 7, ".zgroup", 7) != 0))
        return 0;
    if (rel_len > 7 && rel[rel_len - 8] != '/') return 0; /* "x.zarray" is not metadata */
    if (f->count == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        char **n = realloc(f->names, cap * sizeof *n);
        if (!n) return f->failed = 1, MMZIP_ENOMEM;
        f->names = n;
        f->cap = cap;
    }
    char *name = malloc(rel_len + 1);
    if (!name) return f->failed = 1, MMZIP_ENOMEM;
    memcpy(name, rel, rel_len);
    name[rel_len] = '\0';
    f->names[f->count++] = name;
    return 0;
}

static int read_arrays(mzv_view *v, const found *f) {
    size_t n = 0;
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        if (mzv_classify(f->names[i], &dl) == MZV_META_ZARRAY && dl > 0) n++;
    }
    v->arrays = calloc(n ? n : 1, sizeof *v->arrays);
    if (!v->arrays) return NC_ENOMEM;
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        /* An array at the dataset root (dl == 0) is invisible to NCZarr, which reads the root as a group. */
        if (mzv_classify(f->names[i], &dl) != MZV_META_ZARRAY || dl == 0) continue;
        mzv_array *a = &v->arrays[v->array_count];
        if (!(a->path = strndup(f->names[i], dl))) return NC_ENOMEM;
        v->array_count++;
        const char *text;
        size_t len;
        int rc = mzv_load_json(v, f->names[i], NULL, &text, &len);
        if (rc) return rc;
        char err[256];
        if (mzv_zarray_parse(text, len, &a->z, err, sizeof err) != 0) {
            char *entry = mzv_entry_name(v, f->names[i]);
            rc = mzv_fail(v, NC_ENCZARR, entry ? entry : f->names[i], "not a Zarr v2 array: %s", err);
            free(entry);
            return rc;
        }
        if (mzv_chain_build(&a->z, &a->chain) != 0) return NC_ENOMEM;
    }
    mzv_sort_catalog(v);
    return NC_NOERR;
}

static int read_groups_and_attrs(mzv_view *v, const found *f) {
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        mzv_meta_kind k = mzv_classify(f->names[i], &dl);
        if (k == MZV_META_ZGROUP) {
            mzv_group *g = mzv_group_slot(v, f->names[i], dl);
            if (!g) return NC_ENOMEM;
            int rc = mzv_load_json(v, f->names[i], &g->zgroup_json, NULL, NULL);
            if (rc) return rc;
        }
    }
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        if (mzv_classify(f->names[i], &dl) != MZV_META_ZATTRS) continue;
        mzj_value *attrs;
        int rc = mzv_load_json(v, f->names[i], &attrs, NULL, NULL);
        if (rc) return rc;
        if (attrs->kind != MZJ_OBJECT) {
            mzj_free(attrs);
            char *entry = mzv_entry_name(v, f->names[i]);
            rc = mzv_fail(v, NC_ENCZARR, entry ? entry : f->names[i], "attributes are not a JSON object");
            free(entry);
            return rc;
        }
        mzv_array *a = dl ? mzv_find_array(v, f->names[i], dl) : NULL;
        if (a) {
            a->attrs = attrs;
            continue;
        }
        mzv_group *g = mzv_group_slot(v, f->names[i], dl);
        if (!g) {
            mzj_free(attrs);
            return NC_ENOMEM;
        }
        g->attrs = attrs;
    }
    return NC_NOERR;
}

int mzv_v2_read(mzv_view *v) {
    found f = {0};
    f.skip = strlen(v->prefix);
    int st = mmzip_list_ex(v->archive, v->prefix, MMZIP_LIST_NO_DATA_OFFSET, collect_metadata, &f);
    int rc = NC_NOERR;
    if (f.failed) rc = NC_ENOMEM;
    else if (st != MMZIP_OK) rc = mzv_fail(v, NC_ENCZARR, NULL, "cannot list the archive: %s", mmzip_last_error());
    if (!rc) rc = read_arrays(v, &f);
    if (!rc) rc = read_groups_and_attrs(v, &f);
    for (size_t i = 0; i < f.count; i++) free(f.names[i]);
    free(f.names);
    if (!rc) mzv_sort_catalog(v);
    return rc;
}

/*
 * view.c - the compatibility view's entry points: reading the dataset's metadata (the format reader,
 * v2/v2_read.c or v3/v3_read.c, fills the catalog), presenting each array and group (view_present.c), and routing keys to
 * the presented documents and the translated chunks (view_chunks.c).
 */
#include "view.h"

#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v2_read.h"
#include "v3_read.h"
#include "view_internal.h"
#include "view_release.h"

#define DEFAULT_CACHE_MB 256

/* ---------------------------------------------------------------------------------------------------- */
/* Reading and presenting the dataset                                                                    */

static int analyse(mzv_view *v) {
    v->zarr_v3 = mzv_v3_detect(v);
    int rc = v->zarr_v3 ? mzv_v3_read(v) : mzv_v2_read(v);
    if (rc) return rc;

    mzv_group *root = mzv_find_group(v, "", 0);
    /* Each release reads its own NCZarr as it is: 4.9.0 the upper-case form (_NCZARR_SUPERBLOCK in the root
     * .zgroup), 4.9.3+ the lower-case one (in the root .zattrs; 4.9.1/4.9.2 kept it in .zgroup). The other
     * release's NCZarr is shown as plain Zarr (4.9.3 takes 4.9.0's for plain Zarr anyway, and refuses its
     * "<U1" chars). */
    if (root && mzv_reads_lowercase_nczarr())
        v->nczarr_format = mzj_get(root->zgroup_json, "_nczarr_superblock") != NULL ||
                           mzj_get(root->attrs, "_nczarr_superblock") != NULL;
    else
        v->nczarr_format = root && root->zgroup_json && mzj_get(root->zgroup_json, "_NCZARR_SUPERBLOCK") != NULL;
    mzj_value *superblock = NULL;
    char *nczarr_root = NULL;
    /* A group of the running release's NCZarr form opened as a dataset of its own (view_subdataset.c). */
    if (!v->nczarr_format && !v->zarr_v3 &&
        (rc = mzv_find_nczarr_ancestor(v, &superblock, &nczarr_root)))
        return rc;
    if (superblock) v->nested_nczarr = v->nczarr_format = 1;
    if ((rc = mzv_check_structure(v))) goto out;

    /* Path order makes dimension naming deterministic. */
    int scalars = 0;
    for (size_t i = 0; i < v->array_count; i++) {
        mzv_array *a = &v->arrays[i];
        if ((rc = mzv_present_array(v, a))) goto out;
        a->zarray.archive = a->z.json;
        a->zattrs.archive = a->attrs;
        scalars |= a->nczarr_scalar;
    }
    for (size_t i = 0; i < v->group_count; i++) {
        mzv_group *g = &v->groups[i];
        if ((rc = mzv_present_group(v, g, g->zgroup_json, g->attrs))) goto out;
        g->zgroup.archive = g->zgroup_json;
        g->zattrs.archive = g->attrs;
    }
    if (v->nczarr_format && scalars && (rc = mzv_present_nczarr_root(v, root, root->zgroup_json))) goto out;
    for (size_t i = 0; v->nczarr_format && i < v->array_count; i++) {
        mzv_array *a = &v->arrays[i];
        if ((rc = mzv_present_decoded(&a->zarray, a->z.json)) || (rc = mzv_present_decoded(&a->zattrs, a->attrs)))
            goto out;
    }
    for (size_t i = 0; v->nczarr_format && i < v->group_count; i++) {
        mzv_group *g = &v->groups[i];
        if ((rc = mzv_present_decoded(&g->zgroup, g->zgroup_json)) || (rc = mzv_present_decoded(&g->zattrs, g->attrs)))
            goto out;
    }
    if (superblock) rc = mzv_present_nested_nczarr(v, superblock, nczarr_root);
out:
    mzj_free(superblock);
    free(nczarr_root);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Entry points                                                                                           */

static size_t cache_budget(void) {
    const char *env = getenv("MMZIP_NCZARR_VIEW_CACHE_MB");
    char *end;
    unsigned long mb = env && *env ? strtoul(env, &end, 10) : DEFAULT_CACHE_MB;
    if (!env || !*env || *end || mb == 0) mb = DEFAULT_CACHE_MB;
    return (size_t)mb << 20;
}

int mzv_open(mmzip_t *archive, const char *prefix, int enabled, mzv_view **out) {
    return mzv_open_mode(archive, prefix, enabled, 0, out);
}

int mzv_open_mode(mmzip_t *archive, const char *prefix, int enabled, int pure_zarr, mzv_view **out) {
    *out = NULL;
    mzv_view *v = calloc(1, sizeof *v);
    if (!v) return NC_ENOMEM;
    v->archive = archive;
    v->pure_zarr = pure_zarr;
    v->enabled = enabled;
    v->cache_budget = cache_budget();
    size_t p = prefix ? strlen(prefix) : 0;
    v->prefix = malloc(p + 2);
    v->dims = mzv_dims_new();
    if (!v->prefix || !v->dims) {
        mzv_close(v);
        return NC_ENOMEM;
    }
    snprintf(v->prefix, p + 2, "%s%s", p ? prefix : "", p && prefix[p - 1] != '/' ? "/" : "");
    if (!enabled) {
        int rc = mzv_check_raw(v);
        if (rc) {
            mzv_close(v);
            return rc;
        }
    } else {
        int rc = analyse(v);
        if (rc) {
            mzv_close(v);
            return rc;
        }
    }
    *out = v;
    return NC_NOERR;
}

/* The presented document of meta, if the view serves it. */
static int serve_meta(mzv_meta *m, const void **data, size_t *len) {
    if (!m->text || m->superseded) return 0;
    *data = m->text;
    *len = m->len;
    return 1;
}

int mzv_get(mzv_view *v, const char *key, const void **data, size_t *len) {
    if (!v || !v->enabled || !key || key[0] != '/') return 0;
    const char *rel = key + 1;
    size_t dl;
    switch (mzv_classify(rel, &dl)) {
    case MZV_META_ZARRAY: {
        mzv_array *a = dl ? mzv_find_array(v, rel, dl) : NULL;
        return a ? serve_meta(&a->zarray, data, len) : 0;
    }
    case MZV_META_ZATTRS: {
        mzv_array *a = dl ? mzv_find_array(v, rel, dl) : NULL;
        if (a) return serve_meta(&a->zattrs, data, len);
        mzv_group *g = mzv_find_group(v, rel, dl);
        return g ? serve_meta(&g->zattrs, data, len) : 0;
    }
    case MZV_META_ZGROUP: {
        mzv_group *g = mzv_find_group(v, rel, dl);
        return g ? serve_meta(&g->zgroup, data, len) : 0;
    }
    case MZV_META_OTHER: break;
    }
    const char *chunk_key;
    mzv_array *a = mzv_find_chunk_owner(v, rel, &chunk_key);
    return a ? mzv_chunk_get(v, a, chunk_key, data, len) : 0;
}

/* The presented v2 metadata key of a node: netCDF-C 4.9.3+ take a dataset for Zarr only when a listing
 * shows a ".z..." key (zsync.c, ncz_validate), and a v3 archive has none of its own. */
static void each_meta_key(const char *path, const char *name, void (*fn)(void *ctx, const char *path), void *ctx) {
    char key[4096];
    int n = snprintf(key, sizeof key, "%s%s%s", path, path[0] ? "/" : "", name);
    if (n > 0 && (size_t)n < sizeof key) fn(ctx, key);
}

void mzv_for_each_node(const mzv_view *v, void (*fn)(void *ctx, const char *path), void *ctx) {
    if (!v || !v->enabled || !v->zarr_v3) return;
    for (size_t i = 0; i < v->group_count; i++) {
        if (v->groups[i].path[0]) fn(ctx, v->groups[i].path);
        each_meta_key(v->groups[i].path, ".zgroup", fn, ctx);
        each_meta_key(v->groups[i].path, ".zattrs", fn, ctx);
    }
    for (size_t i = 0; i < v->array_count; i++) {
        fn(ctx, v->arrays[i].path);
        each_meta_key(v->arrays[i].path, ".zarray", fn, ctx);
        each_meta_key(v->arrays[i].path, ".zattrs", fn, ctx);
    }
}

int mzv_active(const mzv_view *v) { return v && v->enabled && v->any_translated; }

int mzv_nested_nczarr(const mzv_view *v) { return v && v->enabled && v->nested_nczarr; }

static void free_meta(mzv_meta *m) {
    free(m->text);
    mzj_free(m->json);
}

void mzv_close(mzv_view *v) {
    if (!v) return;
    free(v->replacement);
    for (size_t i = 0; i < v->array_count; i++) {
        mzv_array *a = &v->arrays[i];
        free(a->path);
        mzv_zarray_free(&a->z);
        mzj_free(a->attrs);
        mzv_chain_free(&a->chain);
        free(a->broken);
        free(a->fill_chunk);
        free_meta(&a->zarray);
        free_meta(&a->zattrs);
    }
    free(v->arrays);
    for (size_t i = 0; i < v->group_count; i++) {
        mzv_group *g = &v->groups[i];
        free(g->path);
        mzj_free(g->zgroup_json);
        mzj_free(g->attrs);
        free_meta(&g->zgroup);
        free_meta(&g->zattrs);
    }
    free(v->groups);
    mzv_cache_free(v);
    mzv_dims_free(v->dims);
    free(v->prefix);
    free(v);
}

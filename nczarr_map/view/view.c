/*
 * view.c - the compatibility view's entry points: reading every metadata object of the archive at open,
 * presenting each array and group (view_present.c), and routing keys to the presented documents and the
 * translated chunks (view_chunks.c).
 */
#include "view.h"

#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_internal.h"

#define DEFAULT_CACHE_MB 256

/* ---------------------------------------------------------------------------------------------------- */
/* Reading the archive's metadata                                                                        */

typedef enum meta_kind { META_ZARRAY, META_ZATTRS, META_ZGROUP, META_OTHER } meta_kind;

static meta_kind classify(const char *rel, size_t *dir_len) {
    static const struct {
        const char *name;
        meta_kind kind;
    } names[] = {{".zarray", META_ZARRAY}, {".zattrs", META_ZATTRS}, {".zgroup", META_ZGROUP}};
    const char *slash = strrchr(rel, '/');
    const char *base = slash ? slash + 1 : rel;
    *dir_len = slash ? (size_t)(slash - rel) : 0;
    for (size_t i = 0; i < 3; i++)
        if (strcmp(base, names[i].name) == 0) return names[i].kind;
    return META_OTHER;
}

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

char *mzv_entry_name(const mzv_view *v, const char *relative_key) {
    size_t p = strlen(v->prefix), r = strlen(relative_key);
    char *s = malloc(p + r + 1);
    if (!s) return NULL;
    memcpy(s, v->prefix, p);
    memcpy(s + p, relative_key, r + 1);
    return s;
}

/* Reads and parses one JSON metadata entry. */
static int load_json(mzv_view *v, const char *rel, mzj_value **out, const char **text, size_t *len) {
    char *entry = mzv_entry_name(v, rel);
    if (!entry) return NC_ENOMEM;
    const void *data;
    uint64_t size;
    int st = mmzip_get(v->archive, entry, &data, &size);
    int rc = NC_NOERR;
    if (st != MMZIP_OK) {
        rc = mzv_fail(v, NC_ENCZARR, entry, "cannot read: %s", mmzip_last_error());
    } else {
        char err[256];
        if (text) *text = data, *len = (size_t)size;
        if (out && mzj_parse(data, (size_t)size, out, err, sizeof err) != 0)
            rc = mzv_fail(v, NC_ENCZARR, entry, "not valid JSON: %s", err);
    }
    free(entry);
    return rc;
}

static int compare_arrays(const void *a, const void *b) {
    return strcmp(((const mzv_array *)a)->path, ((const mzv_array *)b)->path);
}

static int compare_groups(const void *a, const void *b) {
    return strcmp(((const mzv_group *)a)->path, ((const mzv_group *)b)->path);
}

mzv_array *mzv_find_array(mzv_view *v, const char *path, size_t path_len) {
    size_t lo = 0, hi = v->array_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *p = v->arrays[mid].path;
        int c = strncmp(p, path, path_len);
        if (c == 0) c = p[path_len] ? 1 : 0;
        if (c == 0) return &v->arrays[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

mzv_group *mzv_find_group(mzv_view *v, const char *path, size_t path_len) {
    size_t lo = 0, hi = v->group_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *p = v->groups[mid].path;
        int c = strncmp(p, path, path_len);
        if (c == 0) c = p[path_len] ? 1 : 0;
        if (c == 0) return &v->groups[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

mzv_array *mzv_find_chunk_owner(mzv_view *v, const char *rel, const char **chunk_key) {
    /* With "/" separators the chunk key has slashes too: try each split, deepest array first. */
    size_t n = strlen(rel);
    int tries = 0;
    for (size_t i = n; i-- > 0 && tries <= MZV_MAX_RANK + 1;) {
        if (rel[i] != '/') continue;
        tries++;
        mzv_array *a = mzv_find_array(v, rel, i);
        if (a) {
            *chunk_key = rel + i + 1;
            return a;
        }
    }
    return NULL;
}

/* Finds or adds the group at path (groups are created from .zgroup and from .zattrs entries). */
static mzv_group *group_slot(mzv_view *v, const char *path, size_t len) {
    for (size_t i = 0; i < v->group_count; i++)
        if (strlen(v->groups[i].path) == len && strncmp(v->groups[i].path, path, len) == 0) return &v->groups[i];
    mzv_group *g = realloc(v->groups, (v->group_count + 1) * sizeof *g);
    if (!g) return NULL;
    v->groups = g;
    g = &v->groups[v->group_count];
    memset(g, 0, sizeof *g);
    if (!(g->path = strndup(path, len))) return NULL;
    v->group_count++;
    return g;
}

static int read_arrays(mzv_view *v, const found *f) {
    size_t n = 0;
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        if (classify(f->names[i], &dl) == META_ZARRAY && dl > 0) n++;
    }
    v->arrays = calloc(n ? n : 1, sizeof *v->arrays);
    if (!v->arrays) return NC_ENOMEM;
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        /* An array at the dataset root (dl == 0) is invisible to NCZarr, which reads the root as a group. */
        if (classify(f->names[i], &dl) != META_ZARRAY || dl == 0) continue;
        mzv_array *a = &v->arrays[v->array_count];
        if (!(a->path = strndup(f->names[i], dl))) return NC_ENOMEM;
        v->array_count++;
        const char *text;
        size_t len;
        int rc = load_json(v, f->names[i], NULL, &text, &len);
        if (rc) return rc;
        char err[256];
        if (mzv_zarray_parse(text, len, &a->z, err, sizeof err) != 0) {
            char *entry = mzv_entry_name(v, f->names[i]);
            rc = mzv_fail(v, NC_ENCZARR, entry ? entry : f->names[i], "not a Zarr v2 array: %s", err);
            free(entry);
            return rc;
        }
    }
    qsort(v->arrays, v->array_count, sizeof *v->arrays, compare_arrays);
    return NC_NOERR;
}

static int read_groups_and_attrs(mzv_view *v, const found *f) {
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        meta_kind k = classify(f->names[i], &dl);
        if (k == META_ZGROUP) {
            mzv_group *g = group_slot(v, f->names[i], dl);
            if (!g) return NC_ENOMEM;
            int rc = load_json(v, f->names[i], &g->zgroup_json, NULL, NULL);
            if (rc) return rc;
        }
    }
    for (size_t i = 0; i < f->count; i++) {
        size_t dl;
        if (classify(f->names[i], &dl) != META_ZATTRS) continue;
        mzj_value *attrs;
        int rc = load_json(v, f->names[i], &attrs, NULL, NULL);
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
        mzv_group *g = group_slot(v, f->names[i], dl);
        if (!g) {
            mzj_free(attrs);
            return NC_ENOMEM;
        }
        g->attrs = attrs;
    }
    if (v->group_count > 1) qsort(v->groups, v->group_count, sizeof *v->groups, compare_groups);
    return NC_NOERR;
}

static int analyse(mzv_view *v) {
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
    if (rc) return rc;

    mzv_group *root = mzv_find_group(v, "", 0);
    v->nczarr_format = root && root->zgroup_json && mzj_get(root->zgroup_json, "_NCZARR_SUPERBLOCK") != NULL;

    /* Path order makes dimension naming deterministic. */
    int scalars = 0;
    for (size_t i = 0; i < v->array_count; i++) {
        mzv_array *a = &v->arrays[i];
        if ((rc = mzv_present_array(v, a))) return rc;
        a->zarray.archive = a->z.json;
        a->zattrs.archive = a->attrs;
        scalars |= a->nczarr_scalar;
    }
    for (size_t i = 0; i < v->group_count; i++) {
        mzv_group *g = &v->groups[i];
        if ((rc = mzv_present_group(v, g, g->zgroup_json, g->attrs))) return rc;
        g->zgroup.archive = g->zgroup_json;
        g->zattrs.archive = g->attrs;
    }
    if (v->nczarr_format && scalars && (rc = mzv_present_nczarr_root(v, root, root->zgroup_json))) return rc;
    for (size_t i = 0; v->nczarr_format && i < v->array_count; i++) {
        mzv_array *a = &v->arrays[i];
        if ((rc = mzv_present_decoded(&a->zarray, a->z.json)) || (rc = mzv_present_decoded(&a->zattrs, a->attrs)))
            return rc;
    }
    for (size_t i = 0; v->nczarr_format && i < v->group_count; i++) {
        mzv_group *g = &v->groups[i];
        if ((rc = mzv_present_decoded(&g->zgroup, g->zgroup_json)) || (rc = mzv_present_decoded(&g->zattrs, g->attrs)))
            return rc;
    }
    return NC_NOERR;
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
    *out = NULL;
    mzv_view *v = calloc(1, sizeof *v);
    if (!v) return NC_ENOMEM;
    v->archive = archive;
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
    if (enabled) {
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
    switch (classify(rel, &dl)) {
    case META_ZARRAY: {
        mzv_array *a = dl ? mzv_find_array(v, rel, dl) : NULL;
        return a ? serve_meta(&a->zarray, data, len) : 0;
    }
    case META_ZATTRS: {
        mzv_array *a = dl ? mzv_find_array(v, rel, dl) : NULL;
        if (a) return serve_meta(&a->zattrs, data, len);
        mzv_group *g = mzv_find_group(v, rel, dl);
        return g ? serve_meta(&g->zattrs, data, len) : 0;
    }
    case META_ZGROUP: {
        mzv_group *g = mzv_find_group(v, rel, dl);
        return g ? serve_meta(&g->zgroup, data, len) : 0;
    }
    case META_OTHER: break;
    }
    const char *chunk_key;
    mzv_array *a = mzv_find_chunk_owner(v, rel, &chunk_key);
    return a ? mzv_chunk_get(v, a, chunk_key, data, len) : 0;
}

int mzv_active(const mzv_view *v) { return v && v->enabled && v->any_translated; }

static void free_meta(mzv_meta *m) {
    free(m->text);
    mzj_free(m->json);
}

void mzv_close(mzv_view *v) {
    if (!v) return;
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

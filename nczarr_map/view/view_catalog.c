/*
 * view_catalog.c - the view's catalog of the dataset's arrays and groups: lookups by path, the archive entry
 * of a key, and reading one JSON metadata entry. The format readers (v2/, v3/) fill the catalog; the
 * presentation, chunk and write modules look things up in it.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_internal.h"

mzv_meta_kind mzv_classify(const char *rel, size_t *dir_len) {
    static const struct {
        const char *name;
        mzv_meta_kind kind;
    } names[] = {{".zarray", MZV_META_ZARRAY}, {".zattrs", MZV_META_ZATTRS}, {".zgroup", MZV_META_ZGROUP}};
    const char *slash = strrchr(rel, '/');
    const char *base = slash ? slash + 1 : rel;
    *dir_len = slash ? (size_t)(slash - rel) : 0;
    for (size_t i = 0; i < 3; i++)
        if (strcmp(base, names[i].name) == 0) return names[i].kind;
    return MZV_META_OTHER;
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
int mzv_load_json(mzv_view *v, const char *rel, mzj_value **out, const char **text, size_t *len) {
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

void mzv_sort_catalog(mzv_view *v) {
    if (v->array_count > 1) qsort(v->arrays, v->array_count, sizeof *v->arrays, compare_arrays);
    if (v->group_count > 1) qsort(v->groups, v->group_count, sizeof *v->groups, compare_groups);
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
mzv_group *mzv_group_slot(mzv_view *v, const char *path, size_t len) {
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

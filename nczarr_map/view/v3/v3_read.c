/*
 * v3_read.c - reading a Zarr v3 dataset's zarr.json documents into the view's catalog (see v3_read.h):
 * groups become groups (their "attributes" are the .zattrs netCDF is shown), arrays are parsed by
 * v3_array.c, and "dimension_names" become the array's _ARRAY_DIMENSIONS, the names 4.9.0 gives its
 * dimensions.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v3_read.h"
#include "view_internal.h"

int mzv_v3_detect(mzv_view *v) {
    char *entry = mzv_entry_name(v, "zarr.json");
    int found = entry && mmzip_exists(v->archive, entry);
    free(entry);
    return found;
}

/* The zarr.json documents found by the listing: dataset-relative directory names ("" for the root). */
typedef struct listing {
    char **dirs;
    size_t count, cap;
    size_t skip;
    int failed;
} listing;

static int collect_zarr_json(const mmzip_entry_info *info, void *ctx) {
    listing *l = ctx;
    if (info->name_len < l->skip + 9) return 0;
    const char *rel = info->name + l->skip;
    size_t n = info->name_len - l->skip;
    if (memcmp(rel + n - 9, "zarr.json", 9) != 0 || (n > 9 && rel[n - 10] != '/')) return 0;
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **d = realloc(l->dirs, cap * sizeof *d);
        if (!d) return l->failed = 1, MMZIP_ENOMEM;
        l->dirs = d;
        l->cap = cap;
    }
    if (!(l->dirs[l->count] = strndup(rel, n > 9 ? n - 10 : 0))) return l->failed = 1, MMZIP_ENOMEM;
    l->count++;
    return 0;
}

/* The entry name of a node's zarr.json, for messages ("<prefix>a/b/zarr.json"). */
static char *document_entry(mzv_view *v, const char *path) {
    size_t n = strlen(path);
    char *rel = malloc(n + 11);
    if (!rel) return NULL;
    snprintf(rel, n + 11, "%s%szarr.json", path, n ? "/" : "");
    char *entry = mzv_entry_name(v, rel);
    free(rel);
    return entry;
}

static int bad_document(mzv_view *v, const char *path, const char *problem) {
    char *entry = document_entry(v, path);
    int rc = mzv_fail(v, NC_ENCZARR, entry ? entry : path, "not a Zarr v3 node: %s", problem);
    free(entry);
    return rc;
}

/* The array's attributes as the v2 code reads them: a copy of "attributes", with "dimension_names" as
 * _ARRAY_DIMENSIONS when every name is a non-empty string and the attributes have none. */
static int array_attrs(const mzj_value *doc, int rank, mzj_value **out) {
    const mzj_value *attrs = mzj_get(doc, "attributes");
    *out = attrs && attrs->kind == MZJ_OBJECT ? mzj_clone(attrs) : mzj_new_object();
    if (!*out) return NC_ENOMEM;
    const mzj_value *names = mzj_get(doc, "dimension_names");
    if (!names || names->kind != MZJ_ARRAY || (int)names->u.array.count != rank || rank == 0 ||
        mzj_get(*out, "_ARRAY_DIMENSIONS"))
        return NC_NOERR;
    for (size_t i = 0; i < names->u.array.count; i++)
        if (!mzj_string(names->u.array.items[i]) || !names->u.array.items[i]->u.string.len) return NC_NOERR;
    return mzj_object_set(*out, "_ARRAY_DIMENSIONS", mzj_clone(names)) ? NC_ENOMEM : NC_NOERR;
}

/* Adds the node at path (document doc, borrowed) to the catalog. */
static int add_node(mzv_view *v, const char *path, const mzj_value *doc, size_t *arrays_cap) {
    if (!doc || doc->kind != MZJ_OBJECT) return bad_document(v, path, "not a JSON object");
    int64_t format;
    if (!mzj_as_int64(mzj_get(doc, "zarr_format"), &format) || format != 3)
        return bad_document(v, path, "zarr_format is not 3");
    const char *type = mzj_string(mzj_get(doc, "node_type"));
    if (type && strcmp(type, "group") == 0) {
        mzv_group *g = mzv_group_slot(v, path, strlen(path));
        if (!g) return NC_ENOMEM;
        mzj_free(g->zgroup_json);
        if (!(g->zgroup_json = mzj_clone(doc))) return NC_ENOMEM;
        const mzj_value *attrs = mzj_get(doc, "attributes");
        mzj_free(g->attrs);
        g->attrs = NULL;
        if (attrs && attrs->kind == MZJ_OBJECT && !(g->attrs = mzj_clone(attrs))) return NC_ENOMEM;
        return NC_NOERR;
    }
    if (!type || strcmp(type, "array") != 0) return bad_document(v, path, "node_type is neither \"group\" nor \"array\"");
    /* An array at the dataset root is invisible to NCZarr, which reads the root as a group. */
    if (!*path) return NC_NOERR;
    if (v->array_count == *arrays_cap) {
        size_t cap = *arrays_cap ? 2 * *arrays_cap : 64;
        mzv_array *a = realloc(v->arrays, cap * sizeof *a);
        if (!a) return NC_ENOMEM;
        v->arrays = a;
        *arrays_cap = cap;
    }
    mzv_array *a = &v->arrays[v->array_count];
    memset(a, 0, sizeof *a);
    if (!(a->path = strdup(path))) return NC_ENOMEM;
    v->array_count++;
    char err[256];
    if (mzv_v3_array_parse(doc, &a->z, &a->chain, err, sizeof err) != 0) return bad_document(v, path, err);
    return array_attrs(doc, a->z.rank, &a->attrs);
}

/* The root's inline consolidated metadata ({path: document}), or NULL. */
static const mzj_value *consolidated(const mzj_value *root) {
    const mzj_value *c = mzj_get(root, "consolidated_metadata");
    const char *kind = mzj_string(mzj_get(c, "kind"));
    const mzj_value *m = mzj_get(c, "metadata");
    return kind && strcmp(kind, "inline") == 0 && m && m->kind == MZJ_OBJECT ? m : NULL;
}

/* The zarr.json documents of the archive under the dataset (dataset-relative directories, "" the root). */
static int list_documents(mzv_view *v, listing *l) {
    l->skip = strlen(v->prefix);
    int st = mmzip_list_ex(v->archive, v->prefix, MMZIP_LIST_NO_DATA_OFFSET, collect_zarr_json, l);
    if (l->failed) return NC_ENOMEM;
    if (st != MMZIP_OK) return mzv_fail(v, NC_ENCZARR, NULL, "cannot list the archive: %s", mmzip_last_error());
    return NC_NOERR;
}

static void free_listing(listing *l) {
    for (size_t i = 0; i < l->count; i++) free(l->dirs[i]);
    free(l->dirs);
}

/* Consolidated metadata is a copy: a node written after it (by a writer that did not consolidate again) is in
 * the archive but not in it. zarr-python then shows only the listed nodes; shown here, that would be a
 * dataset with an array less and exit status 0. So every zarr.json of the archive must be listed. */
static int consolidated_complete(mzv_view *v, const mzj_value *cm) {
    listing l = {0};
    int rc = list_documents(v, &l);
    for (size_t i = 0; !rc && i < l.count; i++) {
        if (!*l.dirs[i] || mzj_get(cm, l.dirs[i])) continue;
        char *entry = document_entry(v, l.dirs[i]);
        rc = mzv_fail(v, NC_ENCZARR, entry ? entry : l.dirs[i],
                      "the node '%s' is in the archive but not in the root's consolidated_metadata (written after "
                      "the metadata was consolidated?): it would be left out; consolidate the metadata again "
                      "(zarr.consolidate_metadata) or remove it from the root's zarr.json", l.dirs[i]);
        free(entry);
    }
    free_listing(&l);
    return rc;
}

int mzv_v3_read(mzv_view *v) {
    mzj_value *root;
    int rc = mzv_load_json(v, "zarr.json", &root, NULL, NULL);
    if (rc) return rc;
    size_t cap = 0;
    if ((rc = add_node(v, "", root, &cap))) {
        mzj_free(root);
        return rc;
    }
    const mzj_value *cm = consolidated(root);
    if (cm) {
        for (size_t i = 0; !rc && i < cm->u.object.count; i++) {
            const mzj_member *m = &cm->u.object.members[i];
            if (m->key_len == 0 || strlen(m->key) != m->key_len || m->key[0] == '/' || m->key[m->key_len - 1] == '/')
                rc = bad_document(v, "", "consolidated_metadata names a node with an empty or bad path");
            else rc = add_node(v, m->key, m->value, &cap);
        }
        if (!rc) rc = consolidated_complete(v, cm);
        mzj_free(root);
        if (!rc) mzv_sort_catalog(v);
        return rc;
    }
    mzj_free(root);
    listing l = {0};
    rc = list_documents(v, &l);
    for (size_t i = 0; !rc && i < l.count; i++) {
        if (!*l.dirs[i]) continue; /* the root, read above */
        char rel[4096];
        if (strlen(l.dirs[i]) + 11 > sizeof rel) {
            rc = bad_document(v, l.dirs[i], "path too long");
            break;
        }
        snprintf(rel, sizeof rel, "%s/zarr.json", l.dirs[i]);
        mzj_value *doc;
        if ((rc = mzv_load_json(v, rel, &doc, NULL, NULL))) break;
        rc = add_node(v, l.dirs[i], doc, &cap);
        mzj_free(doc);
    }
    free_listing(&l);
    if (!rc) mzv_sort_catalog(v);
    return rc;
}

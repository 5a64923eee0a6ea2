/*
 * view_subdataset.c - a group of an NCZarr dataset opened as a dataset of its own ("a.zip#/lung/sub").
 *
 * NCZarr (4.9.0's format) names an array's dimensions by their full path from the dataset root
 * (_NCZARR_ARRAY.dimrefs ["/lung/x"]) and marks only the root .zgroup with _NCZARR_SUPERBLOCK. Seen from a
 * nested group, netCDF-C would find no superblock, fall back to pure Zarr and show anonymous dimensions. So
 * when the view's root is a group below an NCZarr root, it presents the group as the root of an NCZarr
 * dataset of its own: the ancestor's superblock on its .zgroup; dimension references inside the group
 * re-rooted ("/lung/sub/y" -> "/y"); dimensions of ancestor groups ("/lung/x") declared in the presented
 * root with their sizes and referenced there ("/x"), as they would be had the group been written alone.
 * Two different dimensions that would take the same name at the new root are an error naming both.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_internal.h"

/* The parsed .zgroup of an ancestor directory ("" or "a/"), or NULL. */
static mzj_value *read_zgroup(mzv_view *v, const char *dir) {
    size_t n = strlen(dir) + sizeof ".zgroup";
    char *name = malloc(n);
    if (!name) return NULL;
    snprintf(name, n, "%s.zgroup", dir);
    const void *data;
    uint64_t len;
    mzj_value *doc = NULL;
    if (mmzip_get(v->archive, name, &data, &len) == MMZIP_OK) mzj_parse(data, (size_t)len, &doc, NULL, 0);
    free(name);
    return doc;
}

/* The member of an object by key, modifiable. */
static mzj_value *member(mzj_value *obj, const char *key) {
    for (size_t i = 0; obj && obj->kind == MZJ_OBJECT && i < obj->u.object.count; i++)
        if (strcmp(obj->u.object.members[i].key, key) == 0) return obj->u.object.members[i].value;
    return NULL;
}

typedef struct subdataset {
    mzv_view *v;
    const char *root_dir;  /* the NCZarr root's entry prefix, "" or "a/" */
    char *fqn;             /* the view root's path in that dataset, "/lung/sub" */
    mzj_value *extra_dims; /* dimensions of ancestor groups, by their new name: name -> size */
    mzj_value *extra_fqns; /* name -> the dimension's full name in the archive, for messages */
    mzj_value *own_dims;   /* the view root's own _NCZARR_GROUP.dims (borrowed), or NULL */
} subdataset;

/* The size of dimension `ref` ("/lung/x") from its group's .zgroup, or NULL. */
static mzj_value *ancestor_dim_size(subdataset *sd, const char *ref) {
    const char *slash = strrchr(ref, '/');
    size_t dir_len = (size_t)(slash - ref); /* "/lung" -> "lung/" */
    size_t n = strlen(sd->root_dir) + dir_len + 2;
    char *dir = malloc(n);
    if (!dir) return NULL;
    snprintf(dir, n, "%s%.*s%s", sd->root_dir, dir_len ? (int)dir_len - 1 : 0, ref + 1, dir_len ? "/" : "");
    mzj_value *zgroup = read_zgroup(sd->v, dir);
    free(dir);
    mzj_value *size = mzj_clone(member(member(member(zgroup, "_NCZARR_GROUP"), "dims"), slash + 1));
    mzj_free(zgroup);
    return size;
}

/* The re-rooted reference of ref, malloc'ed; NULL with *rc set on failure. */
static char *reroot(subdataset *sd, const char *array, const char *ref, int *rc) {
    size_t fl = strlen(sd->fqn);
    if (strncmp(ref, sd->fqn, fl) == 0 && ref[fl] == '/') return strdup(ref + fl);
    if (strcmp(ref, "/_scalar_") == 0) return strdup(ref); /* NCZarr's scalar dimension, always at the root */
    const char *name = strrchr(ref, '/');
    name = name ? name + 1 : ref;
    const char *known = mzj_string(mzj_get(sd->extra_fqns, name));
    if (known && strcmp(known, ref) != 0) {
        *rc = mzv_fail(sd->v, NC_ENCZARR, array, "dimensions '%s' and '%s' of groups above the opened group would "
                       "both be '/%s' in it; open the dataset at a group above both", known, ref, name);
        return NULL;
    }
    if (mzj_get(sd->own_dims, name)) {
        *rc = mzv_fail(sd->v, NC_ENCZARR, array, "dimension '%s' of a group above the opened group has the name of "
                       "the group's own dimension '%s/%s'; open the dataset at a group above it", ref, sd->fqn,
                       name);
        return NULL;
    }
    if (!known) {
        mzj_value *size = ancestor_dim_size(sd, ref);
        if (!size) {
            *rc = mzv_fail(sd->v, NC_ENCZARR, array, "dimension '%s' is not declared by its group", ref);
            return NULL;
        }
        if (mzj_object_set(sd->extra_dims, name, size) != 0 ||
            mzj_object_set(sd->extra_fqns, name, mzj_new_cstring(ref)) != 0) {
            *rc = NC_ENOMEM;
            return NULL;
        }
    }
    size_t n = strlen(name) + 2;
    char *out = malloc(n);
    if (out) snprintf(out, n, "/%s", name);
    return out;
}

/* Replaces m's presented document with doc (owned). */
static int replace_meta(mzv_meta *m, mzj_value *doc) {
    size_t len;
    char *text = mzj_to_text(doc, &len);
    if (!text) {
        mzj_free(doc);
        return NC_ENOMEM;
    }
    free(m->text);
    mzj_free(m->json);
    m->text = text;
    m->len = len;
    m->json = doc;
    return NC_NOERR;
}

static int reroot_array(subdataset *sd, mzv_array *a) {
    mzj_value *doc = mzj_clone(a->zarray.json ? a->zarray.json : a->z.json);
    if (!doc) return NC_ENOMEM;
    mzj_value *refs = member(member(doc, "_NCZARR_ARRAY"), "dimrefs");
    if (!refs || refs->kind != MZJ_ARRAY) {
        mzj_free(doc);
        return NC_NOERR;
    }
    for (size_t i = 0; i < refs->u.array.count; i++) {
        const char *ref = mzj_string(refs->u.array.items[i]);
        if (!ref || ref[0] != '/') continue;
        int rc = NC_ENOMEM;
        char *now = reroot(sd, a->path, ref, &rc);
        mzj_value *item = now ? mzj_new_cstring(now) : NULL;
        free(now);
        if (!item) {
            mzj_free(doc);
            return rc;
        }
        mzj_free(refs->u.array.items[i]);
        refs->u.array.items[i] = item;
    }
    return replace_meta(&a->zarray, doc);
}

/* The presented root .zgroup: the ancestor's superblock, the ancestors' dimensions added. */
static int present_root(subdataset *sd, mzv_group *root, const mzj_value *superblock) {
    mzj_value *doc = mzj_clone(root->zgroup.json ? root->zgroup.json : root->zgroup_json);
    if (!doc || mzj_object_set(doc, "_NCZARR_SUPERBLOCK", mzj_clone(superblock)) != 0) {
        mzj_free(doc);
        return NC_ENOMEM;
    }
    mzj_value *group = member(doc, "_NCZARR_GROUP");
    if (!group) {
        if (mzj_object_set(doc, "_NCZARR_GROUP", mzj_new_object()) != 0) {
            mzj_free(doc);
            return NC_ENOMEM;
        }
        group = member(doc, "_NCZARR_GROUP");
    }
    mzj_value *dims = member(group, "dims");
    if (!dims) {
        if (mzj_object_set(group, "dims", mzj_new_object()) != 0) {
            mzj_free(doc);
            return NC_ENOMEM;
        }
        dims = member(group, "dims");
    }
    for (size_t i = 0; i < sd->extra_dims->u.object.count; i++) {
        const mzj_member *m = &sd->extra_dims->u.object.members[i];
        if (mzj_object_set(dims, m->key, mzj_clone(m->value)) != 0) {
            mzj_free(doc);
            return NC_ENOMEM;
        }
    }
    return replace_meta(&root->zgroup, doc);
}

int mzv_find_nczarr_ancestor(mzv_view *v, mzj_value **superblock, char **root_dir) {
    *superblock = NULL;
    *root_dir = NULL;
    size_t n = strlen(v->prefix);
    if (n == 0) return NC_NOERR;
    mzv_group *root = mzv_find_group(v, "", 0);
    if (!root || !root->zgroup_json || mzj_get(root->zgroup_json, "_NCZARR_SUPERBLOCK")) return NC_NOERR;
    char *dir = strdup(v->prefix);
    if (!dir) return NC_ENOMEM;
    /* "a/b/c/" -> "a/b/", "a/", "" */
    for (size_t end = n - 1;;) {
        while (end > 0 && dir[end - 1] != '/') end--;
        dir[end] = '\0';
        mzj_value *zgroup = read_zgroup(v, dir);
        const mzj_value *sb = mzj_get(zgroup, "_NCZARR_SUPERBLOCK");
        if (sb) {
            *superblock = mzj_clone(sb);
            mzj_free(zgroup);
            if (!*superblock) {
                free(dir);
                return NC_ENOMEM;
            }
            *root_dir = dir;
            return NC_NOERR;
        }
        mzj_free(zgroup);
        if (end == 0) break;
        end--;
    }
    free(dir);
    return NC_NOERR;
}

int mzv_present_nested_nczarr(mzv_view *v, const mzj_value *superblock, const char *root_dir) {
    subdataset sd = {v, root_dir, NULL, mzj_new_object(), mzj_new_object(), NULL};
    size_t rl = strlen(root_dir), pl = strlen(v->prefix);
    sd.fqn = malloc(pl - rl + 1);
    int rc = NC_ENOMEM;
    mzv_group *root = mzv_find_group(v, "", 0);
    if (!sd.fqn || !sd.extra_dims || !sd.extra_fqns || !root) goto out;
    snprintf(sd.fqn, pl - rl + 1, "/%.*s", (int)(pl - rl - 1), v->prefix + rl); /* "a/lung/sub/" -> "/lung/sub" */
    sd.own_dims = member(member(root->zgroup_json, "_NCZARR_GROUP"), "dims");
    rc = NC_NOERR;
    for (size_t i = 0; rc == NC_NOERR && i < v->array_count; i++) rc = reroot_array(&sd, &v->arrays[i]);
    if (rc == NC_NOERR) rc = present_root(&sd, root, superblock);
out:
    free(sd.fqn);
    mzj_free(sd.extra_dims);
    mzj_free(sd.extra_fqns);
    return rc;
}

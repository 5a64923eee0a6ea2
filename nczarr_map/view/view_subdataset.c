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
 *
 * 4.9.3+ read only their own, lower-case form (libnczarr/zsync.c): the superblock "_nczarr_superblock" and
 * "_nczarr_group" {"dimensions": ...} in a group's .zattrs (4.9.1/4.9.2 kept them in .zgroup, which 4.9.3
 * still reads), "_nczarr_array" {"dimension_references": [...]} in an array's .zattrs, attribute types in
 * "_nczarr_attr". Under those releases the same re-rooting is done on that form; each release's other form
 * stays plain Zarr to it, as at the root (view.c).
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_internal.h"
#include "view_release.h"

/* The keys of the NCZarr form the running release reads. */
typedef struct nczarr_keys {
    int lower;              /* 4.9.3+'s form: the keys below live in .zattrs (or, 4.9.1/4.9.2, .zgroup) */
    const char *superblock; /* "_NCZARR_SUPERBLOCK" / "_nczarr_superblock" */
    const char *group;      /* "_NCZARR_GROUP" / "_nczarr_group" */
    const char *dims;       /* in group: "dims" / "dimensions" (4.9.3 also takes "dims") */
    const char *array;      /* "_NCZARR_ARRAY" (in .zarray) / "_nczarr_array" (in .zattrs) */
    const char *refs;       /* in array: "dimrefs" / "dimension_references" (4.9.3 also takes "dimrefs") */
} nczarr_keys;

static const nczarr_keys UPPER = {0, "_NCZARR_SUPERBLOCK", "_NCZARR_GROUP", "dims", "_NCZARR_ARRAY", "dimrefs"};
static const nczarr_keys LOWER = {1, "_nczarr_superblock", "_nczarr_group", "dimensions", "_nczarr_array",
                                  "dimension_references"};

static const nczarr_keys *running_keys(void) { return mzv_reads_lowercase_nczarr() ? &LOWER : &UPPER; }

/* The parsed entry dir + leaf (dir "" or "a/", leaf ".zgroup" or ".zattrs"), or NULL. */
static mzj_value *read_json(mzv_view *v, const char *dir, const char *leaf) {
    size_t n = strlen(dir) + strlen(leaf) + 1;
    char *name = malloc(n);
    if (!name) return NULL;
    snprintf(name, n, "%s%s", dir, leaf);
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

/* member(obj, key), or in the lower-case form the older spelling 4.9.3 also accepts (dictgetalt). */
static mzj_value *member_alt(mzj_value *obj, const char *key, const char *alt) {
    mzj_value *m = member(obj, key);
    return m || !alt ? m : member(obj, alt);
}

/* The NCZarr group object of an ancestor directory, as NCZarr looks it up: 4.9.0 in .zgroup; 4.9.3 in .zattrs
 * first, then .zgroup (getnczarrkey). *doc receives the parsed document to free. */
static mzj_value *ancestor_key(mzv_view *v, const nczarr_keys *k, const char *dir, const char *key, mzj_value **doc) {
    *doc = NULL;
    if (k->lower) {
        *doc = read_json(v, dir, ".zattrs");
        mzj_value *m = member(*doc, key);
        if (m) return m;
        mzj_free(*doc);
    }
    *doc = read_json(v, dir, ".zgroup");
    return member(*doc, key);
}

typedef struct subdataset {
    mzv_view *v;
    const nczarr_keys *k;
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
    mzj_value *doc;
    mzj_value *group = ancestor_key(sd->v, sd->k, dir, sd->k->group, &doc);
    free(dir);
    mzj_value *size = mzj_clone(member(member_alt(group, sd->k->dims, sd->k->lower ? "dims" : NULL), slash + 1));
    mzj_free(doc);
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
    char *text = mzj_to_netcdf_text(doc, &len);
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
    /* 4.9.0 keeps _NCZARR_ARRAY in .zarray; 4.9.3 looks in .zattrs first, then .zarray. */
    mzv_meta *meta = &a->zarray;
    const mzj_value *base = a->zarray.json ? a->zarray.json : a->z.json;
    if (sd->k->lower) {
        const mzj_value *attrs = a->zattrs.json ? a->zattrs.json : a->attrs;
        if (mzj_get(attrs, sd->k->array) || !mzj_get(base, sd->k->array)) {
            meta = &a->zattrs;
            base = attrs;
        }
    }
    if (!base) return NC_NOERR;
    mzj_value *doc = mzj_clone(base);
    if (!doc) return NC_ENOMEM;
    mzj_value *refs = member_alt(member(doc, sd->k->array), sd->k->refs, sd->k->lower ? "dimrefs" : NULL);
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
    return replace_meta(meta, doc);
}

/* The root's presented document holding the NCZarr group keys: .zgroup for 4.9.0; for 4.9.3 the .zattrs,
 * unless only the .zgroup has the group key (4.9.1/4.9.2). */
static mzv_meta *root_meta(const subdataset *sd, mzv_group *root, const mzj_value **base) {
    const mzj_value *zgroup = root->zgroup.json ? root->zgroup.json : root->zgroup_json;
    const mzj_value *zattrs = root->zattrs.json ? root->zattrs.json : root->attrs;
    if (!sd->k->lower || (!mzj_get(zattrs, sd->k->group) && mzj_get(zgroup, sd->k->group))) {
        *base = zgroup;
        return &root->zgroup;
    }
    *base = zattrs;
    return &root->zattrs;
}

/* The presented root: the ancestor's superblock, the ancestors' dimensions added. */
static int present_root(subdataset *sd, mzv_group *root, const mzj_value *superblock) {
    const mzj_value *base;
    mzv_meta *meta = root_meta(sd, root, &base);
    mzj_value *doc = base ? mzj_clone(base) : mzj_new_object();
    if (!doc || mzj_object_set(doc, sd->k->superblock, mzj_clone(superblock)) != 0) {
        mzj_free(doc);
        return NC_ENOMEM;
    }
    /* 4.9.3 types every attribute of a .zattrs, its own keys as "|J0", as it writes them. */
    mzj_value *types = sd->k->lower ? member(member(doc, "_nczarr_attr"), "types") : NULL;
    if (types && types->kind == MZJ_OBJECT && mzj_object_set(types, sd->k->superblock, mzj_new_cstring("|J0")) != 0) {
        mzj_free(doc);
        return NC_ENOMEM;
    }
    mzj_value *group = member(doc, sd->k->group);
    if (!group) {
        if (mzj_object_set(doc, sd->k->group, mzj_new_object()) != 0) {
            mzj_free(doc);
            return NC_ENOMEM;
        }
        group = member(doc, sd->k->group);
    }
    mzj_value *dims = member_alt(group, sd->k->dims, sd->k->lower ? "dims" : NULL);
    if (!dims) {
        if (mzj_object_set(group, sd->k->dims, mzj_new_object()) != 0) {
            mzj_free(doc);
            return NC_ENOMEM;
        }
        dims = member(group, sd->k->dims);
    }
    if (dims->kind != MZJ_OBJECT) {
        mzj_free(doc);
        return mzv_fail(sd->v, NC_ENCZARR, root->path, "the group's NCZarr dimensions are not a JSON object");
    }
    for (size_t i = 0; i < sd->extra_dims->u.object.count; i++) {
        const mzj_member *m = &sd->extra_dims->u.object.members[i];
        if (mzj_object_set(dims, m->key, mzj_clone(m->value)) != 0) {
            mzj_free(doc);
            return NC_ENOMEM;
        }
    }
    return replace_meta(meta, doc);
}

int mzv_find_nczarr_ancestor(mzv_view *v, mzj_value **superblock, char **root_dir) {
    *superblock = NULL;
    *root_dir = NULL;
    size_t n = strlen(v->prefix);
    if (n == 0) return NC_NOERR;
    const nczarr_keys *k = running_keys();
    mzv_group *root = mzv_find_group(v, "", 0);
    /* A root with a superblock of either form is a dataset of its own (of the other release: plain Zarr to
     * this one), not a group of an ancestor's dataset. */
    if (!root || !root->zgroup_json || mzj_get(root->zgroup_json, UPPER.superblock) ||
        mzj_get(root->zgroup_json, LOWER.superblock) || mzj_get(root->attrs, LOWER.superblock))
        return NC_NOERR;
    char *dir = strdup(v->prefix);
    if (!dir) return NC_ENOMEM;
    /* "a/b/c/" -> "a/b/", "a/", "" */
    for (size_t end = n - 1;;) {
        while (end > 0 && dir[end - 1] != '/') end--;
        dir[end] = '\0';
        mzj_value *zgroup;
        const mzj_value *sb = ancestor_key(v, k, dir, k->superblock, &zgroup);
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
    subdataset sd = {v, running_keys(), root_dir, NULL, mzj_new_object(), mzj_new_object(), NULL};
    size_t rl = strlen(root_dir), pl = strlen(v->prefix);
    sd.fqn = malloc(pl - rl + 1);
    int rc = NC_ENOMEM;
    mzv_group *root = mzv_find_group(v, "", 0);
    if (!sd.fqn || !sd.extra_dims || !sd.extra_fqns || !root) goto out;
    snprintf(sd.fqn, pl - rl + 1, "/%.*s", (int)(pl - rl - 1), v->prefix + rl); /* "a/lung/sub/" -> "/lung/sub" */
    const mzj_value *base;
    root_meta(&sd, root, &base);
    sd.own_dims = member_alt(member((mzj_value *)base, sd.k->group), sd.k->dims, sd.k->lower ? "dims" : NULL);
    rc = NC_NOERR;
    for (size_t i = 0; rc == NC_NOERR && i < v->array_count; i++) rc = reroot_array(&sd, &v->arrays[i]);
    if (rc == NC_NOERR) rc = present_root(&sd, root, superblock);
out:
    free(sd.fqn);
    mzj_free(sd.extra_dims);
    mzj_free(sd.extra_fqns);
    return rc;
}

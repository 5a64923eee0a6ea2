/*
 * publish.c - flushing buffered metadata and committing, with self-consistent intermediate commits.
 *
 * An archive with consolidated metadata (.zmetadata at the dataset's root, which zarr-python and xarray
 * read instead of the individual objects when present) gets it updated in the same commit as the objects
 * it mirrors; otherwise arrays added through netCDF would be invisible to those readers, and changed
 * attributes stale. netCDF-C itself never reads or writes it.
 */
#include "publish.h"

#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "root_slot.h"
#include "status.h"
#include "subdataset.h"
#include "json.h"

typedef struct pending_object {
    const char *key;
    mzn_blob *blob;
} pending_object;

static int compare_keys(const void *a, const void *b) {
    return strcmp(((const pending_object *)a)->key, ((const pending_object *)b)->key);
}

/* The group listing in a group's .zgroup (4.9.0-4.9.2) or .zattrs (4.9.3+), or NULL. */
static const mzj_value *group_listing(const mzj_value *doc) {
    const mzj_value *g = mzj_get(doc, "_NCZARR_GROUP");
    if (!g) g = mzj_get(doc, "_nczarr_group");
    return g && g->kind == MZJ_OBJECT ? g : NULL;
}

static int is_group_object(const char *key) {
    const char *last = strrchr(key, '/');
    return last && (strcmp(last, "/.zgroup") == 0 || strcmp(last, "/.zattrs") == 0);
}

static pending_object *find_pending(pending_object *objs, size_t n, const char *key) {
    pending_object probe = {key, NULL};
    return n ? bsearch(&probe, objs, n, sizeof *objs, compare_keys) : NULL;
}

/* Will the object `key` be in the archive after this publish? */
static int will_exist(mzn_session *s, pending_object *objs, size_t n, const char *key) {
    if (find_pending(objs, n, key)) return 1;
    char *name = mzn_session_entry_name(s, key);
    int found = name && mmzip_exists(s->archive, name);
    free(name);
    return found;
}

/* Every name in listing[field] has <group>/<name>/<object> (or the array is absent or malformed). */
static int members_complete(mzn_session *s, pending_object *objs, size_t n, const char *group_key,
                            size_t group_len, const mzj_value *listing, const char *field, const char *object) {
    const mzj_value *names = mzj_get(listing, field);
    if (!names || names->kind != MZJ_ARRAY) return 1;
    for (size_t i = 0; i < names->u.array.count; i++) {
        const mzj_value *nm = names->u.array.items[i];
        if (nm->kind != MZJ_STRING) continue;
        size_t name_len = nm->u.string.len;
        size_t len = group_len + 1 + name_len + strlen(object) + 1;
        char *key = malloc(len);
        if (!key) return 0;
        memcpy(key, group_key, group_len);
        key[group_len] = '/';
        memcpy(key + group_len + 1, nm->u.string.bytes, name_len);
        strcpy(key + group_len + 1 + name_len, object);
        int ok = will_exist(s, objs, n, key);
        free(key);
        if (!ok) return 0;
    }
    return 1;
}

/* 1 if the object is a group listing naming something that would be missing after the commit. */
static int listing_incomplete(mzn_session *s, pending_object *objs, size_t n, const pending_object *o) {
    if (!is_group_object(o->key)) return 0;
    mzj_value *doc; /* NULL if it does not parse: then it lists nothing */
    mzj_parse((const char *)o->blob->bytes, o->blob->len, &doc, NULL, 0);
    const mzj_value *listing = group_listing(doc);
    int incomplete = 0;
    if (listing) {
        /* "/.zgroup" belongs to the root group (key prefix ""), "/g/.zgroup" to "/g". */
        size_t group_len = (size_t)(strrchr(o->key, '/') - o->key);
        incomplete = !members_complete(s, objs, n, o->key, group_len, listing, "vars", "/.zarray") ||
                     !members_complete(s, objs, n, o->key, group_len, listing, "groups", "/.zgroup");
    }
    mzj_free(doc);
    return incomplete;
}

/* 1 if some directory above the chunk key has a .zarray after the publish ("/g/v/0.1" -> "/g/v/.zarray";
 * with "/" as dimension separator the array is further up). */
static int chunk_has_array(mzn_session *s, pending_object *objs, size_t n, const char *chunk_key) {
    char *key = malloc(strlen(chunk_key) + sizeof "/.zarray");
    if (!key) return 0;
    strcpy(key, chunk_key);
    int found = 0;
    char *slash;
    while (!found && (slash = strrchr(key, '/')) != NULL) {
        strcpy(slash, "/.zarray");
        found = will_exist(s, objs, n, key);
        *slash = '\0';
    }
    free(key);
    return found;
}

/* The sync rule of publish.h: 1 if publishing now gives readers a complete dataset. */
static int consistent_for_sync(mzn_session *s, pending_object *objs, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (listing_incomplete(s, objs, n, &objs[i])) {
            mzn_trace("sync: nothing published: %s lists members without metadata yet", objs[i].key);
            return 0;
        }
    const char *key;
    for (size_t i = 0; mzn_keymap_next(&s->pending_chunks, &i, &key, NULL);)
        if (!chunk_has_array(s, objs, n, key)) {
            mzn_trace("sync: nothing published: chunk %s has no array metadata yet", key);
            return 0;
        }
    return 1;
}

/* 1 if the archive already holds this object, byte for byte or in meaning. */
static int already_archived(mzn_session *s, const char *name, const mzn_blob *b) {
    const void *data;
    uint64_t len;
    if (mmzip_get(s->archive, name, &data, &len) != MMZIP_OK) return 0;
    if (len == b->len && memcmp(data, b->bytes, b->len) == 0) return 1;
    mzj_value *x, *y = NULL;
    if (mzj_parse(data, (size_t)len, &x, NULL, 0) == 0) mzj_parse((const char *)b->bytes, b->len, &y, NULL, 0);
    int same = x && y && mzj_equal(x, y);
    mzj_free(x);
    mzj_free(y);
    return same;
}

/* Zarr v2 metadata objects, the ones consolidated metadata mirrors. */
static int is_zarr_metadata(const char *key) {
    const char *base = strrchr(key, '/');
    base = base ? base + 1 : key;
    return strcmp(base, ".zgroup") == 0 || strcmp(base, ".zarray") == 0 || strcmp(base, ".zattrs") == 0;
}

/* Rewrites the .zmetadata in directory dir ("" or ending in '/', the dataset's own or, for a sub-dataset,
 * an ancestor's: keys there are relative to dir), if there is one, with the objects that this publish
 * changed. */
static int refresh_consolidated_in(mzn_session *s, const char *dir, pending_object *objs, size_t n,
                                   const unsigned char *changed) {
    size_t dl = strlen(dir);
    char *name = malloc(dl + sizeof ".zmetadata");
    if (!name) return NC_ENOMEM;
    memcpy(name, dir, dl);
    memcpy(name + dl, ".zmetadata", sizeof ".zmetadata");
    /* The dataset's root seen from dir: "" for its own .zmetadata, "lung/" from the archive root. */
    const char *below = s->prefix + dl;
    const void *data;
    uint64_t len;
    mzj_value *doc = NULL;
    int rc = NC_NOERR;
    if (mmzip_get(s->archive, name, &data, &len) != MMZIP_OK) goto out; /* not consolidated: nothing to do */
    char err[160];
    if (mzj_parse(data, (size_t)len, &doc, err, sizeof err) != 0 || !mzj_get(doc, "metadata") ||
        mzj_get(doc, "metadata")->kind != MZJ_OBJECT) {
        mzn_diag("%s: %s is not consolidated Zarr metadata (%s); left as it is, and now stale", s->archive_path,
                 name, doc ? "no \"metadata\" object" : err);
        goto out;
    }
    mzj_value *metadata = (mzj_value *)mzj_get(doc, "metadata");
    for (size_t i = 0; i < n; i++) {
        if (!changed[i] || !is_zarr_metadata(objs[i].key)) continue;
        const char *key = objs[i].key[0] == '/' ? objs[i].key + 1 : objs[i].key;
        size_t rl = strlen(below) + strlen(key) + 1;
        char *relative = malloc(rl);
        if (!relative) {
            rc = NC_ENOMEM;
            goto out;
        }
        snprintf(relative, rl, "%s%s", below, key);
        mzj_value *v;
        if (mzj_parse((const char *)objs[i].blob->bytes, objs[i].blob->len, &v, err, sizeof err) != 0) {
            /* An object that does not parse cannot be mirrored; a stale copy would contradict it. */
            mzj_object_remove(metadata, relative);
            free(relative);
            mzn_diag("%s: %s: not JSON (%s); dropped from %s", s->archive_path, objs[i].key, err, name);
            continue;
        }
        int set = mzj_object_set(metadata, relative, v);
        free(relative);
        if (set != 0) {
            rc = NC_ENOMEM;
            goto out;
        }
    }
    size_t text_len;
    char *text = mzj_to_ascii_text(doc, &text_len);
    if (!text) {
        rc = NC_ENOMEM;
        goto out;
    }
    int st = mmzip_put(s->archive, name, text, text_len, 0);
    free(text);
    mzn_trace("publish %s (%zu bytes, consolidated metadata refreshed)", name, text_len);
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        rc = mzn_nc_error(st);
    }
out:
    mzj_free(doc);
    free(name);
    return rc;
}

/* The dataset's .zmetadata; and for a sub-dataset that existed before this session, the consolidated
 * metadata of the groups above it too, which list its objects (zarr-python consolidates at the archive
 * root): stale copies there would contradict what was written. A new sub-dataset leaves them as they are
 * (they do not list it; every entry outside it keeps its bytes). */
static int refresh_consolidated(mzn_session *s, pending_object *objs, size_t n, const unsigned char *changed) {
    int any = 0;
    for (size_t i = 0; i < n && !any; i++) any = changed[i] && is_zarr_metadata(objs[i].key);
    if (!any) return NC_NOERR;
    char *dir = strdup(s->prefix);
    if (!dir) return NC_ENOMEM;
    int rc = refresh_consolidated_in(s, dir, objs, n, changed);
    for (size_t end = strlen(dir); rc == NC_NOERR && s->group && !s->created && end > 0;) {
        end--; /* "a/b/" -> "a/", then "" */
        while (end > 0 && dir[end - 1] != '/') end--;
        dir[end] = '\0';
        rc = refresh_consolidated_in(s, dir, objs, n, changed);
    }
    free(dir);
    return rc;
}

/*
 * The bytes to store for a metadata object: netCDF-C's own when they are ASCII JSON, else the same JSON with
 * every non-ASCII character and control character escaped (zarr-python 2.13 decodes metadata as ASCII, and
 * Python's json refuses a raw control character in a string; netCDF-C writes raw UTF-8 and leaves control
 * characters other than tab, newline, carriage return, backspace and form feed raw). Sets *owned when the
 * bytes were allocated here; NC_ENOMEM.
 */
static int stored_form(const mzn_blob *b, const void **bytes, size_t *len, char **owned) {
    *bytes = b->bytes;
    *len = b->len;
    *owned = NULL;
    size_t i = 0;
    /* Tab, newline and carriage return raw can only be JSON's whitespace between tokens. */
    while (i < b->len && b->bytes[i] < 0x80 &&
           (b->bytes[i] >= 0x20 || b->bytes[i] == '\n' || b->bytes[i] == '\r' || b->bytes[i] == '\t'))
        i++;
    if (i == b->len) return NC_NOERR;
    mzj_value *doc;
    if (mzj_parse((const char *)b->bytes, b->len, &doc, NULL, 0) != 0) return NC_NOERR; /* not JSON: as is */
    *owned = mzj_to_ascii_text(doc, len);
    mzj_free(doc);
    if (!*owned) return NC_ENOMEM;
    *bytes = *owned;
    return NC_NOERR;
}

static int write_objects(mzn_session *s, pending_object *objs, size_t n, unsigned char *changed) {
    for (size_t i = 0; i < n; i++) {
        char *name = mzn_session_entry_name(s, objs[i].key);
        if (!name) return NC_ENOMEM;
        int st = MMZIP_OK;
        if (!already_archived(s, name, objs[i].blob)) {
            const void *bytes;
            size_t len;
            char *owned;
            if (stored_form(objs[i].blob, &bytes, &len, &owned) != NC_NOERR) {
                free(name);
                return NC_ENOMEM;
            }
            int filled = 0, rc = NC_NOERR;
            if (strcmp(objs[i].key, "/.zgroup") == 0 && (rc = mzn_root_slot_fill(s, bytes, len, &filled)) != NC_NOERR) {
                free(owned);
                free(name);
                return rc;
            }
            if (!filled) st = mmzip_put(s->archive, name, bytes, len, 0);
            free(owned);
            changed[i] = 1;
            mzn_trace("publish %s (%zu bytes)", objs[i].key, len);
        }
        free(name);
        if (st != MMZIP_OK) {
            mzn_diag("%s", mmzip_last_error());
            return mzn_nc_error(st);
        }
    }
    return NC_NOERR;
}

int mzn_publish(mzn_session *s, mzn_publish_kind kind) {
    if (!s->writable) return NC_NOERR;
    size_t n = s->pending_metadata.count;
    pending_object *objs = n ? calloc(n, sizeof *objs) : NULL;
    unsigned char *changed = n ? calloc(n, 1) : NULL;
    if (n && (!objs || !changed)) {
        free(objs);
        free(changed);
        return NC_ENOMEM;
    }
    const char *key;
    void *value;
    size_t k = 0;
    for (size_t i = 0; mzn_keymap_next(&s->pending_metadata, &i, &key, &value);) {
        objs[k].key = key;
        objs[k++].blob = value;
    }
    /* Sorted: deterministic archives, and bsearch for the consistency check. */
    if (n) qsort(objs, n, sizeof *objs, compare_keys);
    int rc = NC_NOERR;
    if (kind == MZN_PUBLISH_SYNC && !consistent_for_sync(s, objs, n)) goto out;
    if ((rc = write_objects(s, objs, n, changed)) != NC_NOERR) goto out;
    if ((rc = refresh_consolidated(s, objs, n, changed)) != NC_NOERR) goto out;
    int st = MMZIP_OK;
    /* A new sub-dataset's first commit: the root group that makes the archive a Zarr hierarchy (subdataset.h). */
    if (s->created && s->group && !s->published) st = mzn_subdataset_add_parent_groups(s->archive, s->prefix);
    if (st == MMZIP_OK) st = mmzip_commit(s->archive);
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        rc = mzn_nc_error(st);
        goto out;
    }
    s->published = 1;
    /* Published objects leave the buffer; reads now find them in the archive. */
    mzn_keymap_clear(&s->pending_metadata, free);
    mzn_keymap_clear(&s->pending_chunks, NULL);
out:
    free(objs);
    free(changed);
    return rc;
}

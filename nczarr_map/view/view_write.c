/*
 * view_write.c - mzv_check_write: a write session must never store a translated form.
 *
 * netCDF-C 4.9.0 rewrites every .zarray, .zattrs and .zgroup it has read at nc_close of a writable open,
 * and writes a fill chunk for a missing chunk it read. Those rewrites carry what the view presented, not
 * what the archive holds. So a write is compared with the presented object:
 *   - every member as the view shows it or as the archive holds it (allowing for how 4.9.0 writes metadata
 *     back, below) -> a no-op: the archive keeps its original bytes. A mix of the two is still no change:
 *     it is what the storage map makes when it merges a rewrite into the archived object
 *     (nczarr_map/session/metadata_guard.h) before asking the view;
 *   - different, and the object is a translation -> refused (NC_EPERM);
 *   - different, and the view showed the archive's own value -> a genuine change: stored, and from then on
 *     the view serves what was written.
 *
 * How 4.9.0 writes metadata back (libnczarr/zsync.c, zcvt.c): doubles with "%lg" (6 significant digits),
 * one-element lists as scalars, booleans as integers, dicts through its own JSON text, no _NCZARR_ATTR in
 * pure Zarr, _ARRAY_DIMENSIONS only for variables of the root group, a materialised _FillValue attribute,
 * no "dimension_separator" when it is ".", and one-byte dtypes as "<i1"/"<u1".
 */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_internal.h"
#include "view_release.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Equivalence                                                                                            */

static int is_num(const mzj_value *v) { return v->kind == MZJ_INT || v->kind == MZJ_REAL || v->kind == MZJ_BOOL; }

static double num(const mzj_value *v) {
    double d = 0;
    if (v->kind == MZJ_BOOL) return v->u.boolean;
    mzj_as_double(v, &d);
    return d;
}

/* w is p, or p as 4.9.0 prints it with "%lg". */
static int numbers_match(const mzj_value *p, const mzj_value *w) {
    if (p->kind == MZJ_INT && w->kind == MZJ_INT) return mzj_equal(p, w);
    double a = num(p), b = num(w);
    if (isnan(a) && isnan(b)) return 1;
    if (a == b) return 1;
    char text[64];
    snprintf(text, sizeof text, "%lg", a);
    return strtod(text, NULL) == b;
}

static int values_match(const mzj_value *p, const mzj_value *w);

static int objects_match(const mzj_value *p, const mzj_value *w) {
    if (p->u.object.count != w->u.object.count) return 0;
    for (size_t i = 0; i < p->u.object.count; i++) {
        const mzj_value *o = mzj_get(w, p->u.object.members[i].key);
        if (!o || !values_match(p->u.object.members[i].value, o)) return 0;
    }
    return 1;
}

static int values_match(const mzj_value *p, const mzj_value *w) {
    if (p->kind == MZJ_ARRAY && p->u.array.count == 1 && w->kind != MZJ_ARRAY) return values_match(p->u.array.items[0], w);
    if (w->kind == MZJ_ARRAY && w->u.array.count == 1 && p->kind != MZJ_ARRAY) return values_match(p, w->u.array.items[0]);
    if (is_num(p) && is_num(w)) return numbers_match(p, w);
    if (p->kind != w->kind) return 0;
    switch (p->kind) {
    case MZJ_ARRAY:
        if (p->u.array.count != w->u.array.count) return 0;
        for (size_t i = 0; i < p->u.array.count; i++)
            if (!values_match(p->u.array.items[i], w->u.array.items[i])) return 0;
        return 1;
    case MZJ_OBJECT: return objects_match(p, w);
    default: return mzj_equal(p, w);
    }
}

int mzv_written_value_matches(const mzj_value *archived, const mzj_value *written) {
    if (!archived || !written) return 0;
    /* 4.9.3+ write a NaN or infinite attribute as the string zarr uses for such fill values */
    double a, w;
    if (archived->kind == MZJ_REAL && written->kind == MZJ_STRING && mzj_as_double(archived, &a) &&
        mzj_as_double(written, &w) && !isfinite(a))
        return (isnan(a) && isnan(w)) || a == w;
    return values_match(archived, written);
}

/* "|u1" and "<u1" are the same dtype. */
static int dtypes_match(const mzj_value *p, const mzj_value *w) {
    const char *a = mzj_string(p), *b = mzj_string(w);
    if (!a || !b) return p && w ? values_match(p, w) : p == w;
    if (strlen(a) == 3 && strlen(b) == 3 && a[2] == '1' && b[2] == '1') return a[1] == b[1];
    return strcmp(a, b) == 0;
}

static const mzj_value null_value = {.kind = MZJ_NULL};

static const mzj_value *get_or_null(const mzj_value *o, const char *key) {
    const mzj_value *v = o ? mzj_get(o, key) : NULL;
    return v ? v : &null_value;
}

/* The written value of key matches what the view shows or what the archive holds. */
static int either_matches(const mzj_value *shown, const mzj_value *archive, const char *key, const mzj_value *w,
                          int (*match)(const mzj_value *, const mzj_value *)) {
    const mzj_value *p = shown ? mzj_get(shown, key) : NULL, *a = archive ? mzj_get(archive, key) : NULL;
    return (p && match(p, w)) || (a && match(a, w));
}

static int dtype_value_match(const mzj_value *p, const mzj_value *w) { return dtypes_match(p, w); }

static const char *separator(const mzj_value *o) {
    const char *s = o ? mzj_string(mzj_get(o, "dimension_separator")) : NULL;
    return s ? s : ".";
}

static int zarray_unchanged(const mzj_value *p, const mzj_value *a, const mzj_value *w) {
    static const char *const keys[] = {"zarr_format", "shape", "chunks", "fill_value", "order", "compressor", "filters"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const mzj_value *wv = get_or_null(w, keys[i]);
        if (!(values_match(get_or_null(p, keys[i]), wv) || (a && values_match(get_or_null(a, keys[i]), wv))))
            return 0;
    }
    const mzj_value *dt = mzj_get(w, "dtype");
    if (!dt || !either_matches(p, a, "dtype", dt, dtype_value_match)) return 0;
    const char *ws = separator(w);
    if (strcmp(ws, separator(p)) != 0 && !(a && strcmp(ws, separator(a)) == 0)) return 0;
    const mzj_value *nczarr = mzj_get(w, "_NCZARR_ARRAY");
    return !nczarr || either_matches(p, a, "_NCZARR_ARRAY", nczarr, values_match) ||
           (!mzj_get(p, "_NCZARR_ARRAY") && !(a && mzj_get(a, "_NCZARR_ARRAY")));
}

static int zattrs_unchanged(const mzj_value *p, const mzj_value *a, const mzj_value *w) {
    if (w->kind != MZJ_OBJECT) return 0;
    for (size_t i = 0; i < w->u.object.count; i++) {
        const char *k = w->u.object.members[i].key;
        const mzj_value *wv = w->u.object.members[i].value;
        if (mzv_is_types_key(k)) continue; /* NCZarr's type table; the values carry the meaning */
        if (either_matches(p, a, k, wv, values_match)) continue;
        /* 4.9.0 materialises a _FillValue attribute from the array's fill value */
        if (strcmp(k, "_FillValue") == 0 && !mzj_get(p, k) && !(a && mzj_get(a, k))) continue;
        return 0;
    }
    for (size_t i = 0; p && i < p->u.object.count; i++) {
        const char *k = p->u.object.members[i].key;
        /* 4.9.0 writes _ARRAY_DIMENSIONS only for variables of the root group */
        if (mzv_is_types_key(k) || strcmp(k, "_ARRAY_DIMENSIONS") == 0) continue;
        if (!mzj_get(w, k)) return 0; /* a deleted attribute */
    }
    return 1;
}

static int zgroup_unchanged(const mzj_value *p, const mzj_value *a, const mzj_value *w) {
    if (w->kind != MZJ_OBJECT) return 0;
    for (size_t i = 0; i < w->u.object.count; i++)
        if (!either_matches(p, a, w->u.object.members[i].key, w->u.object.members[i].value, values_match)) return 0;
    for (size_t i = 0; p && i < p->u.object.count; i++)
        if (!mzj_get(w, p->u.object.members[i].key)) return 0;
    return 1;
}

int mzv_metadata_unchanged(const char *kind, const mzj_value *presented, const mzj_value *archive,
                           const mzj_value *written) {
    if (!written || (!presented && !archive)) return 0;
    if (!presented) presented = archive;
    if (strcmp(kind, ".zarray") == 0) return zarray_unchanged(presented, archive, written);
    if (strcmp(kind, ".zattrs") == 0) return zattrs_unchanged(presented, archive, written);
    return zgroup_unchanged(presented, archive, written);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Metadata writes                                                                                        */

/* The archive's type table (either spelling) in out, NULL if it has none. */
static mzj_value *types_table_of(mzj_value *out, const char **spelling) {
    static const char *const keys[] = {"_nczarr_attr", "_NCZARR_ATTR"};
    for (size_t i = 0; i < 2; i++) {
        mzj_value *t = out->kind == MZJ_OBJECT ? (mzj_value *)mzj_get(out, keys[i]) : NULL;
        mzj_value *types = t && t->kind == MZJ_OBJECT ? (mzj_value *)mzj_get(t, "types") : NULL;
        if (types && types->kind == MZJ_OBJECT) {
            *spelling = keys[i];
            return types;
        }
    }
    return NULL;
}

/*
 * netCDF's own changes to a translated .zattrs, applied to the archive's attributes (see mzv_check_write's
 * 2). Returns 2 with v->replacement set, 1 if netCDF changed nothing, <0 to refuse.
 */
static int merge_attrs(mzv_view *v, const char *key, const mzj_value *p, const mzj_value *a, const mzj_value *w,
                       int array_translated) {
    if (w->kind != MZJ_OBJECT || (a && a->kind != MZJ_OBJECT) || !p || p->kind != MZJ_OBJECT) return NC_EPERM;
    mzj_value *out = a ? mzj_clone(a) : mzj_new_object();
    if (!out) return NC_ENOMEM;
    const char *spelling = NULL;
    mzj_value *types = types_table_of(out, &spelling);
    const mzj_value *wtypes = mzj_get(mzj_get(w, mzv_types_key()), "types");
    int changed = 0, rc = 0;
    for (size_t i = 0; rc == 0 && i < w->u.object.count; i++) {
        const char *k = w->u.object.members[i].key;
        const mzj_value *wv = w->u.object.members[i].value, *pv = mzj_get(p, k), *av = a ? mzj_get(a, k) : NULL;
        /* netCDF writes back the view's dimension names and type table; neither is a change */
        if (mzv_is_types_key(k) || strcmp(k, "_ARRAY_DIMENSIONS") == 0) continue;
        if ((pv && values_match(pv, wv)) || (av && values_match(av, wv))) continue;
        if (strcmp(k, "_FillValue") == 0 && !pv && !av) continue; /* materialised by 4.9.0 */
        if (strcmp(k, "_FillValue") == 0 && array_translated) rc = NC_EPERM;
        else if (mzj_object_set(out, k, mzj_clone(wv)) != 0) rc = NC_ENOMEM;
        else {
            changed = 1;
            const char *t = mzj_string(mzj_get(wtypes, k));
            if (types && t) {
                /* the archive's table is in its writer's convention */
                const char *stored = strcmp(spelling, "_nczarr_attr") == 0 && strcmp(t, "<U1") == 0 ? ">S1" : t;
                if (mzj_object_set(types, k, mzj_new_cstring(stored)) != 0) rc = NC_ENOMEM;
            } else if (types) {
                mzj_object_remove(types, k);
            }
        }
    }
    for (size_t i = 0; rc == 0 && i < p->u.object.count; i++) {
        const char *k = p->u.object.members[i].key;
        if (mzv_is_types_key(k) || strcmp(k, "_ARRAY_DIMENSIONS") == 0 || mzj_get(w, k)) continue;
        if (a && mzj_get(a, k)) { /* deleted by netCDF; what the view added needs no deleting */
            if (strcmp(k, "_FillValue") == 0 && array_translated) {
                rc = NC_EPERM;
                break;
            }
            mzj_object_remove(out, k);
            if (types) mzj_object_remove(types, k);
            changed = 1;
        }
    }
    if (rc == 0 && changed) {
        free(v->replacement);
        v->replacement = mzj_to_ascii_text(out, &v->replacement_len);
        if (!v->replacement) rc = NC_ENOMEM;
    }
    mzj_free(out);
    if (rc == NC_EPERM)
        return mzv_fail(v, NC_EPERM, key,
                        "write refused: _FillValue of an array the compatibility view presents translated "
                        "(the archive keeps its original fill value)");
    if (rc) return mzv_fail(v, rc, key, "out of memory");
    return changed ? 2 : 1;
}

const void *mzv_replacement(const mzv_view *v, size_t *len) {
    *len = v->replacement_len;
    return v->replacement;
}

static int check_metadata(mzv_view *v, const char *key, const char *kind, mzv_meta *m, int array_translated,
                          const void *data, size_t len) {
    if (m->superseded) return 0;
    mzj_value *written = NULL;
    char err[256];
    int parsed = mzj_parse(data, len, &written, err, sizeof err) == 0;
    int same = parsed && mzv_metadata_unchanged(kind, m->text ? m->json : NULL, m->archive, written);
    if (same) {
        mzj_free(written);
        return 1;
    }
    /* The view translated this object if what it shows differs from what the archive holds. */
    int translated = array_translated ||
                     (m->text && !(m->archive && mzv_metadata_unchanged(kind, NULL, m->archive, m->json)));
    if (translated && parsed && strcmp(kind, ".zattrs") == 0) {
        int r = merge_attrs(v, key, m->text ? m->json : m->archive, m->archive, written, array_translated);
        mzj_free(written);
        if (r == 2) m->superseded = 1;
        return r;
    }
    mzj_free(written);
    if (translated)
        return mzv_fail(v, NC_EPERM, key,
                        "write refused: this %s is presented translated by the compatibility view and the archive "
                        "keeps its original form (open with MMZIP_NCZARR_VIEW=raw to edit the archive as it is)",
                        kind);
    m->superseded = 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Chunk writes                                                                                           */

/* 1 if every element of data (len bytes) equals elem. */
static int uniform(const unsigned char *data, size_t len, const unsigned char *elem, size_t elem_len) {
    if (elem_len == 0 || len % elem_len) return 0;
    for (size_t o = 0; o < len; o += elem_len)
        if (memcmp(data + o, elem, elem_len) != 0) return 0;
    return 1;
}

static int refuse_chunk(mzv_view *v, const char *key) {
    return mzv_fail(v, NC_EPERM, key,
                    "write refused: this array is presented translated by the compatibility view (another dtype, "
                    "shape or encoding than the archive's) and the archive keeps its original chunks");
}

static int check_chunk(mzv_view *v, mzv_array *a, const char *key, const char *chunk_key, const void *data, size_t len,
                       int written) {
    uint64_t index[MZV_MAX_RANK + 1];
    if (mzv_chunk_key_parse(a, chunk_key, index) != 0) return 0;
    if (a->data_translated) {
        const void *shown;
        size_t shown_len;
        int r = mzv_chunk_get(v, a, chunk_key, &shown, &shown_len);
        if (r < 0) return r;
        if (r == 1 && shown_len == len && memcmp(shown, data, len) == 0) return 1;
        return refuse_chunk(v, key);
    }
    /* The map serves the archive's chunk, so a rewrite of the same bytes, or the fill chunk 4.9.0 writes
     * for a missing chunk it merely read, changes nothing. Other bytes are a genuine change, allowed only
     * where 4.9.0 sees the archive's own dtype and shape. */
    char *relative = malloc(strlen(a->path) + strlen(chunk_key) + 2);
    if (!relative) return NC_ENOMEM;
    sprintf(relative, "%s/%s", a->path, chunk_key);
    char *entry = mzv_entry_name(v, relative);
    free(relative);
    if (!entry) return NC_ENOMEM;
    const void *stored;
    uint64_t size;
    int st = mmzip_get(v->archive, entry, &stored, &size);
    free(entry);
    int same;
    if (st == MMZIP_OK) {
        same = size == len && memcmp(stored, data, len) == 0;
    } else if (written) {
        same = 0; /* the session's puts wrote into it: data, whatever its values */
    } else {
        /* The fill chunk netCDF-C writes back for a missing chunk it merely read is what it read it as: the
         * .zarray's fill_value as presented, or, where that is null (no_fill, libnczarr/zsync.c), zeros
         * (NCZ_ensure_fill_chunk, every release). Only that chunk is no change. A chunk of netCDF's default
         * fill is data where the fill_value is null: taken for a fill chunk, it was dropped and read back as
         * zeros (an outside review), while the zeros chunk of a merely read missing chunk was stored. */
        const unsigned char *fill = mzv_fill_chunk(a);
        const mzj_value *fv = a->zarray.json ? mzj_get(a->zarray.json, "fill_value") : a->z.fill_value;
        int own_fill = fv && fv->kind != MZJ_NULL;
        static const unsigned char zero = 0;
        same = len == a->chunk_bytes && (own_fill ? fill && memcmp(fill, data, len) == 0 : uniform(data, len, &zero, 1));
    }
    if (same) return 1;
    if (a->translated) return refuse_chunk(v, key);
    return 0;
}

int mzv_check_write(mzv_view *v, const char *key, const void *data, size_t len) {
    return mzv_check_chunk_write(v, key, data, len, 0);
}

int mzv_check_chunk_write(mzv_view *v, const char *key, const void *data, size_t len, int written) {
    if (!v || !v->enabled || !key || key[0] != '/') return 0;
    if (v->zarr_v3) /* the storage map refuses to open v3 for writing; this is the view's own guard */
        return mzv_fail(v, NC_EPERM, key, "write refused: the archive is Zarr v3, which netCDF-C writes as v2");
    const char *rel = key + 1;
    const char *slash = strrchr(rel, '/');
    const char *base = slash ? slash + 1 : rel;
    size_t dl = slash ? (size_t)(slash - rel) : 0;
    if (strcmp(base, ".zarray") == 0 || strcmp(base, ".zattrs") == 0 || strcmp(base, ".zgroup") == 0) {
        mzv_array *a = dl && base[2] != 'g' ? mzv_find_array(v, rel, dl) : NULL;
        if (a) {
            mzv_meta *m = base[2] == 'a' && base[3] == 'r' ? &a->zarray : &a->zattrs;
            return check_metadata(v, key, base, m, a->translated, data, len);
        }
        mzv_group *g = mzv_find_group(v, rel, dl);
        if (!g) return 0; /* a new group or array */
        mzv_meta *m = strcmp(base, ".zgroup") == 0 ? &g->zgroup : &g->zattrs;
        if (!m->text && !m->archive) return 0;
        return check_metadata(v, key, base, m, 0, data, len);
    }
    const char *chunk_key;
    mzv_array *a = mzv_find_chunk_owner(v, rel, &chunk_key);
    return a ? check_chunk(v, a, key, chunk_key, data, len, written) : 0;
}

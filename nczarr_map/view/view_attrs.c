/* view_attrs.c - attributes rewritten for netCDF-C 4.9.0 (see view_attrs.h). */
#include "view_attrs.h"
#include "view_release.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A REAL whose source text is an integer: an integer too large for 64 bits. 4.9.0's lexer would take the
 * digits as an integer and overflow. */
static int is_huge_integer(const mzj_value *v) {
    return v->kind == MZJ_REAL && v->u.real.text && !strpbrk(v->u.real.text, ".eEnNI");
}

static int is_number(const mzj_value *v) {
    return v->kind == MZJ_INT || (v->kind == MZJ_REAL && !is_huge_integer(v));
}

/* The dtype that holds every element of a list of numbers, as 4.9.0 would pick for one value
 * (libnczarr/zsync.c mininttype), or NULL if no integer type holds them all. */
static const char *list_type(const mzj_value *list) {
    int any_real = 0, any_negative = 0;
    uint64_t max_pos = 0, max_neg = 0; /* magnitudes */
    for (size_t i = 0; i < list->u.array.count; i++) {
        const mzj_value *e = list->u.array.items[i];
        if (e->kind == MZJ_REAL) {
            any_real = 1;
        } else if (e->u.integer.negative && e->u.integer.magnitude) {
            any_negative = 1;
            if (e->u.integer.magnitude > max_neg) max_neg = e->u.integer.magnitude;
        } else if (e->u.integer.magnitude > max_pos) {
            max_pos = e->u.integer.magnitude;
        }
    }
    if (any_real) return "<f8";
    if (mzv_infers_int_attributes()) {
        /* what 4.9.3+ infer for JSON integers, so that the view shows what netCDF-C alone shows */
        if (!any_negative && max_pos > (uint64_t)INT64_MAX) return "<u8";
        if (max_pos > (uint64_t)INT64_MAX || max_neg > (uint64_t)INT64_MAX + 1) return NULL;
        return max_pos <= 2147483647 && max_neg <= 2147483648u ? "<i4" : "<i8";
    }
    if (!any_negative) {
        if (max_pos <= 127) return "|i1";
        if (max_pos <= 255) return "|u1";
        if (max_pos <= 32767) return "<i2";
        if (max_pos <= 65535) return "<u2";
        if (max_pos <= 2147483647) return "<i4";
        if (max_pos <= 4294967295u) return "<u4";
        if (max_pos <= (uint64_t)INT64_MAX) return "<i8";
        return "<u8";
    }
    if (max_pos > (uint64_t)INT64_MAX || max_neg > (uint64_t)INT64_MAX + 1) return NULL;
    if (max_pos <= 127 && max_neg <= 128) return "|i1";
    if (max_pos <= 32767 && max_neg <= 32768) return "<i2";
    if (max_pos <= 2147483647 && max_neg <= 2147483648u) return "<i4";
    return "<i8";
}

static int all_of(const mzj_value *list, int (*pred)(const mzj_value *)) {
    for (size_t i = 0; i < list->u.array.count; i++)
        if (!pred(list->u.array.items[i])) return 0;
    return 1;
}

static int is_bool(const mzj_value *v) { return v->kind == MZJ_BOOL; }

int mzv_attr_value_is_plain(const mzj_value *value) {
    switch (value->kind) {
    case MZJ_BOOL:
    case MZJ_INT:
    case MZJ_STRING:
    case MZJ_OBJECT: return 1;
    case MZJ_REAL: return !is_huge_integer(value);
    case MZJ_ARRAY: return value->u.array.count > 0 && all_of(value, is_bool);
    default: return 0;
    }
}

static mzj_value *json_text(const mzj_value *value) {
    size_t len;
    char *text = mzj_to_text(value, &len);
    if (!text) return NULL;
    mzj_value *s = mzj_new_string(text, len);
    free(text);
    return s;
}

/* Sets name in out to the presented form of value, recording an explicit type in types when needed. */
static int present_value(mzj_value *out, mzj_value *types, const char *name, const mzj_value *value) {
    if (mzv_attr_value_is_plain(value)) return mzj_object_set(out, name, mzj_clone(value));
    if (value->kind == MZJ_ARRAY && value->u.array.count > 0 && all_of(value, is_number)) {
        const char *type = list_type(value);
        if (type) {
            if (mzj_object_set(types, name, mzj_new_cstring(type)) != 0) return -1;
            return mzj_object_set(out, name, mzj_clone(value));
        }
    }
    return mzj_object_set(out, name, json_text(value));
}

/* A _FillValue that can be the fill value of a numeric variable: a number (or NaN/Infinity spelled as a
 * string) or a one-element list of one. Returns the number as a new value, or NULL. */
static mzj_value *numeric_fill(const mzj_value *v) {
    if (v->kind == MZJ_ARRAY && v->u.array.count == 1) v = v->u.array.items[0];
    if (is_number(v)) return mzj_clone(v);
    double d;
    if (v->kind == MZJ_STRING && mzj_as_double(v, &d)) return mzj_new_real(d);
    return NULL;
}

/* xarray's Zarr v3 encoding of a floating _FillValue: standard base64 of the value as a little-endian
 * float64 (12 characters, one '=' of padding). Returns the number as a new value, or NULL. */
static mzj_value *xarray_coded_fill(const mzj_value *v) {
    const char *s = mzj_string(v);
    if (!s || v->u.string.len != 12 || s[11] != '=') return NULL;
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char bytes[9];
    size_t n = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < 11; i++) {
        const char *c = s[i] ? strchr(alphabet, s[i]) : NULL;
        if (!c) return NULL;
        acc = (acc << 6) | (uint32_t)(c - alphabet);
        if (i % 4 == 3) {
            bytes[n++] = (unsigned char)(acc >> 16);
            bytes[n++] = (unsigned char)(acc >> 8);
            bytes[n++] = (unsigned char)acc;
            acc = 0;
        }
    }
    /* the last group: three characters and '=' hold two bytes; the unused low bits must be zero */
    if (acc & 3) return NULL;
    bytes[n++] = (unsigned char)(acc >> 10);
    bytes[n++] = (unsigned char)(acc >> 2);
    uint64_t bits = 0;
    for (int i = 7; i >= 0; i--) bits = bits << 8 | bytes[i];
    double d;
    memcpy(&d, &bits, sizeof d);
    return mzj_new_real(d);
}

static int present_fill(mzj_value *out, mzj_value *types, const mzv_attr_plan *plan, const mzj_value *value) {
    if (plan->fill_type) {
        mzj_value *n = numeric_fill(value);
        if (!n && plan->xarray_v3_fill) n = xarray_coded_fill(value);
        if (n) {
            if (mzj_object_set(types, "_FillValue", mzj_new_cstring(plan->fill_type)) != 0) {
                mzj_free(n);
                return -1;
            }
            return mzj_object_set(out, "_FillValue", n);
        }
    } else if (plan->char_variable && value->kind == MZJ_STRING && value->u.string.len <= 1) {
        if (mzj_object_set(types, "_FillValue", mzj_new_cstring(mzv_release_attr_type("<U1"))) != 0) return -1;
        return mzj_object_set(out, "_FillValue", mzj_clone(value));
    }
    /* netCDF checks a _FillValue against the variable's type; keep the archive's value visible under a
     * name netCDF does not interpret. */
    return mzj_object_set(out, "_ZARR_FillValue", json_text(value));
}

/* NCZarr's own metadata in a .zattrs (4.9.3+; typed "|J0", which 4.9.0 cannot read): in a dataset shown
 * as plain Zarr it describes nothing netCDF reads, and is left out like the type table. */
static int is_nczarr_metadata(const char *key) {
    return strcmp(key, "_nczarr_superblock") == 0 || strcmp(key, "_nczarr_group") == 0 ||
           strcmp(key, "_nczarr_array") == 0 || mzv_is_types_key(key);
}

mzj_value *mzv_attrs_present(const mzj_value *archive_attrs, const mzv_attr_plan *plan) {
    mzj_value *out = mzj_new_object(), *types = mzj_new_object();
    if (!out || !types) goto oom;
    if (archive_attrs && archive_attrs->kind == MZJ_OBJECT) {
        /* NCZarr's own archives type their attributes; keep those types. */
        const mzj_value *own = mzv_archive_types_table(archive_attrs);
        for (size_t i = 0; own && own->kind == MZJ_OBJECT && i < own->u.object.count; i++) {
            const mzj_member *t = &own->u.object.members[i];
            if (is_nczarr_metadata(t->key)) continue;
            const char *own_type = mzj_string(t->value);
            if (own_type && !mzv_release_reads_attr_type(own_type)) continue; /* presented by its value */
            mzj_value *type = own_type ? mzj_new_cstring(mzv_release_attr_type(own_type)) : mzj_clone(t->value);
            if (mzj_object_set(types, t->key, type) != 0) goto oom;
        }
        for (size_t i = 0; i < archive_attrs->u.object.count; i++) {
            const mzj_member *m = &archive_attrs->u.object.members[i];
            int rc;
            if (mzv_is_types_key(m->key) || is_nczarr_metadata(m->key)) continue;
            if (plan->dim_names && strcmp(m->key, "_ARRAY_DIMENSIONS") == 0) continue;
            if (plan->dim_names && strcmp(m->key, "_FillValue") == 0) {
                mzj_object_remove(types, "_FillValue");
                rc = present_fill(out, types, plan, m->value);
            } else if (mzj_get(types, m->key) && m->value->kind != MZJ_NULL) {
                rc = mzj_object_set(out, m->key, mzj_clone(m->value)); /* typed by NCZarr */
            } else if (strcmp(m->key, "_NCProperties") == 0 && m->value->kind != MZJ_STRING) {
                rc = mzj_object_set(out, m->key, json_text(m->value)); /* 4.9.0 requires a string */
            } else {
                rc = present_value(out, types, m->key, m->value);
            }
            if (rc != 0) goto oom;
        }
    }
    if (plan->zarr_fill && plan->fill_type && !mzj_get(out, "_FillValue") && !mzj_get(out, "_ZARR_FillValue")) {
        mzj_value *n = numeric_fill(plan->zarr_fill);
        int usable = n != NULL;
        mzj_free(n);
        if (usable && present_fill(out, types, plan, plan->zarr_fill) != 0) goto oom;
    }
    if (plan->dim_names) {
        mzj_value *dims = mzj_new_array();
        if (!dims) goto oom;
        for (int i = 0; i < plan->rank; i++)
            if (mzj_array_push(dims, mzj_new_cstring(plan->dim_names[i])) != 0) {
                mzj_free(dims);
                goto oom;
            }
        if (mzj_object_set(out, "_ARRAY_DIMENSIONS", dims) != 0) goto oom;
    }
    for (size_t i = 0; plan->additions && i < plan->additions->u.object.count; i++) {
        const mzj_member *m = &plan->additions->u.object.members[i];
        if (!mzj_get(out, m->key) && mzj_object_set(out, m->key, mzj_clone(m->value)) != 0) goto oom;
    }
    if (types->u.object.count) {
        mzj_value *nczattr = mzj_new_object();
        if (!nczattr || mzj_object_set(nczattr, "types", types) != 0) {
            mzj_free(nczattr);
            types = NULL;
            goto oom;
        }
        types = NULL;
        if (mzj_object_set(out, mzv_types_key(), nczattr) != 0) goto oom;
    }
    mzj_free(types);
    return out;
oom:
    mzj_free(out);
    mzj_free(types);
    return NULL;
}

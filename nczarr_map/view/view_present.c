/*
 * view_present.c - what netCDF-C 4.9.0 is shown for one array or group: presented dtype, shape, chunks,
 * dimension names, fill value, and the .zarray / .zattrs / .zgroup documents (docs/compat-view.md).
 */
#include <inttypes.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_attrs.h"
#include "view_internal.h"
#include "view_release.h"
#include "view_strings.h"
#include "v2_read.h"
#include "v3_read.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Dtype                                                                                                  */

typedef enum extra_kind { EXTRA_NONE, EXTRA_STRLEN, EXTRA_COMPLEX, EXTRA_BYTES } extra_kind;

/* The presented dtype and element conversion of a; sets *extra and *extra_len (when known). */
static void choose_dtype(mzv_array *a, extra_kind *extra, uint64_t *extra_len) {
    const mzv_dtype *d = &a->z.dtype;
    *extra = EXTRA_NONE;
    *extra_len = 0;
    a->conversion = MZV_CONV_NONE;
    switch (d->cls) {
    /* One-byte types are spelled "<i1"/"<u1", as 4.9.0 writes them back. */
    case MZV_DT_BOOL: snprintf(a->pdtype, sizeof a->pdtype, "<u1"); break;
    case MZV_DT_INT:
    case MZV_DT_UINT:
        if (d->itemsize == 1) {
            snprintf(a->pdtype, sizeof a->pdtype, "<%c1", d->cls == MZV_DT_INT ? 'i' : 'u');
        } else {
            snprintf(a->pdtype, sizeof a->pdtype, "<%c%zu", d->cls == MZV_DT_INT ? 'i' : 'u', d->itemsize);
            if (d->big_endian) a->conversion = MZV_CONV_BYTESWAP, a->swap_size = d->itemsize;
        }
        break;
    case MZV_DT_FLOAT:
        if (d->itemsize == 2) {
            snprintf(a->pdtype, sizeof a->pdtype, "<f4");
            a->conversion = MZV_CONV_HALF;
        } else {
            snprintf(a->pdtype, sizeof a->pdtype, "<f%zu", d->itemsize);
            if (d->big_endian) a->conversion = MZV_CONV_BYTESWAP, a->swap_size = d->itemsize;
        }
        break;
    case MZV_DT_COMPLEX:
        snprintf(a->pdtype, sizeof a->pdtype, "<f%zu", d->itemsize / 2);
        if (d->big_endian) a->conversion = MZV_CONV_BYTESWAP, a->swap_size = d->itemsize / 2;
        *extra = EXTRA_COMPLEX;
        *extra_len = 2;
        break;
    case MZV_DT_DATETIME:
    case MZV_DT_TIMEDELTA:
        snprintf(a->pdtype, sizeof a->pdtype, "<i8");
        if (d->big_endian) a->conversion = MZV_CONV_BYTESWAP, a->swap_size = 8;
        break;
    case MZV_DT_BYTES:
        snprintf(a->pdtype, sizeof a->pdtype, "<U1");
        /* "|S1" is netCDF's own char convention (a char variable with its length dimension already in
         * the shape): one byte per element, no extra dimension. */
        if (d->width != 1) *extra = EXTRA_STRLEN, *extra_len = d->width;
        break;
    case MZV_DT_UNICODE:
        snprintf(a->pdtype, sizeof a->pdtype, "<U1");
        a->conversion = MZV_CONV_UCS4;
        *extra = EXTRA_STRLEN;
        break;
    case MZV_DT_OBJECT:
        snprintf(a->pdtype, sizeof a->pdtype, "<U1");
        a->conversion = MZV_CONV_VLEN;
        *extra = EXTRA_STRLEN;
        break;
    case MZV_DT_OPAQUE:
        snprintf(a->pdtype, sizeof a->pdtype, "<u1");
        *extra = EXTRA_BYTES;
        *extra_len = d->itemsize;
        break;
    }
}

static size_t presented_item_size(const char *pdtype) { return (size_t)strtoul(pdtype + 2, NULL, 10); }

/* ---------------------------------------------------------------------------------------------------- */
/* Scanning the chunks of string arrays                                                                  */

typedef struct name_list {
    char **names;
    size_t count, cap;
    size_t skip; /* length of the "prefix + path/" part of each entry name */
    int failed;
} name_list;

static int collect_name(const mmzip_entry_info *info, void *ctx) {
    name_list *l = ctx;
    if (info->name_len <= l->skip) return 0;
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **n = realloc(l->names, cap * sizeof *n);
        if (!n) return l->failed = 1, MMZIP_ENOMEM;
        l->names = n;
        l->cap = cap;
    }
    char *name = malloc(info->name_len + 1);
    if (!name) return l->failed = 1, MMZIP_ENOMEM;
    memcpy(name, info->name, info->name_len);
    name[info->name_len] = '\0';
    l->names[l->count++] = name;
    return 0;
}

static void free_names(name_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
}

/* The UTF-8 length of the array's fill value as a string element (what missing chunks hold). */
static size_t fill_string_length(const mzv_array *a) {
    const char *s = mzj_string(a->z.fill_value);
    return s && a->z.dtype.cls != MZV_DT_BYTES ? strlen(s) : 0;
}

/*
 * Finds the presented row width of a unicode / vlen array (its longest string in UTF-8 bytes, at least 1),
 * and recognises NCZarr 4.9.0's own char arrays: dtype "<U1" stored with one byte per element.
 * A chunk that cannot be decoded is skipped here; reading it later reports the error.
 */
/* 1 if the n bytes at p hold a NUL followed by a non-NUL byte (trailing NULs are numpy's padding). */
static int has_inner_nul(const unsigned char *p, size_t n) {
    const unsigned char *z = memchr(p, 0, n);
    if (!z) return 0;
    for (size_t i = (size_t)(z - p); i < n; i++)
        if (p[i]) return 1;
    return 0;
}

/* The longest string of one decoded chunk, in UTF-8 bytes, raised into *width (undecodable: skipped); also
 * notes a string holding a NUL inside (a->inner_nul; for "|S<n>" arrays this is all the scan looks for). */
static void widen_to_chunk(mzv_array *a, const mzv_bytes *dec, size_t *width) {
    char err[256];
    if (a->conversion == MZV_CONV_VLEN) {
        mzv_vlen_items items;
        if (mzv_vlen_parse(dec->data, dec->len, a->chunk_elements, &items, err, sizeof err) == 0) {
            if (items.max_length > *width) *width = items.max_length;
            for (size_t i = 0; i < items.count && !a->inner_nul; i++)
                a->inner_nul = memchr(dec->data + items.offsets[i], 0, items.lengths[i]) != NULL;
            mzv_vlen_free(&items);
        }
    } else if (a->z.dtype.cls == MZV_DT_BYTES) {
        size_t w = a->z.dtype.width;
        for (size_t o = 0; w && o + w <= dec->len && !a->inner_nul; o += w) a->inner_nul = has_inner_nul(dec->data + o, w);
    } else if (dec->len == a->chunk_elements * a->z.dtype.itemsize) {
        for (uint64_t e = 0; e < a->chunk_elements; e++) {
            size_t n = mzv_ucs4_utf8_length(dec->data + e * a->z.dtype.itemsize, a->z.dtype.width, a->z.dtype.big_endian);
            if (n > *width) *width = n;
        }
    }
}

/* Zarr v3: every chunk of the grid (the inner chunks of shards included), through the chunk reader. */
static void scan_strings_v3(mzv_view *v, mzv_array *a) {
    uint64_t grid[MZV_MAX_RANK], index[MZV_MAX_RANK] = {0};
    int rank = a->z.rank;
    for (int i = 0; i < rank; i++) grid[i] = (a->z.shape[i] + a->z.chunks[i] - 1) / a->z.chunks[i];
    size_t width = fill_string_length(a);
    for (;;) {
        mzv_bytes dec;
        char err[256];
        if (mzv_chunk_decode_at(v, a, index, &dec, err, sizeof err) == 0) {
            widen_to_chunk(a, &dec, &width);
            free(dec.data);
        }
        int d = rank - 1;
        while (d >= 0 && ++index[d] == grid[d]) index[d--] = 0;
        if (d < 0) break;
    }
    a->row_width = width ? width : 1;
}

static int scan_strings(mzv_view *v, mzv_array *a, int *nczarr_char) {
    *nczarr_char = 0;
    if (a->z.format == 3) {
        scan_strings_v3(v, a);
        return NC_NOERR;
    }
    name_list l = {0};
    char *dir = mzv_entry_name(v, a->path);
    if (!dir) return NC_ENOMEM;
    size_t dlen = strlen(dir);
    char *prefix = malloc(dlen + 2);
    if (!prefix) {
        free(dir);
        return NC_ENOMEM;
    }
    snprintf(prefix, dlen + 2, "%s/", dir);
    free(dir);
    l.skip = dlen + 1;
    int st = mmzip_list_ex(v->archive, prefix, MMZIP_LIST_NO_DATA_OFFSET, collect_name, &l);
    free(prefix);
    if (l.failed) {
        free_names(&l);
        return NC_ENOMEM;
    }
    if (st != MMZIP_OK) {
        free_names(&l);
        return mzv_fail(v, NC_ENCZARR, a->path, "cannot list the chunks: %s", mmzip_last_error());
    }
    size_t width = fill_string_length(a);
    int first = 1;
    for (size_t i = 0; i < l.count; i++) {
        const char *key = l.names[i] + l.skip;
        if (!mzv_v2_is_chunk_key(&a->z, key)) continue;
        const void *stored;
        uint64_t stored_len;
        /* Every chunk counts: one left out (damaged, or not decodable) could hold the longest string, and the
         * others would be presented cut to a narrower width. */
        int got = mmzip_get(v->archive, l.names[i], &stored, &stored_len);
        if (got == MMZIP_ENOTFOUND) continue;
        if (got != MMZIP_OK) {
            int e = mzv_fail(v, NC_ENCZARR, l.names[i],
                             "cannot read the chunk to size its strings: %s", mmzip_last_error());
            free_names(&l);
            return e;
        }
        mzv_bytes dec;
        char err[256];
        size_t limit = a->conversion == MZV_CONV_VLEN ? (size_t)1 << 31 : (size_t)a->chunk_elements * a->z.dtype.itemsize + 4096;
        if (mzv_chain_decode(&a->chain, stored, (size_t)stored_len, limit, &dec, err, sizeof err) != 0) {
            int e = mzv_fail(v, NC_ENCZARR, l.names[i],
                             "cannot decode the chunk to size its strings: %s", err);
            free_names(&l);
            return e;
        }
        if (a->conversion != MZV_CONV_VLEN && first && a->z.dtype.width == 1 && dec.len == a->chunk_elements) {
            /* One byte per element where numpy needs four: written by NCZarr as char. */
            *nczarr_char = 1;
            free(dec.data);
            break;
        }
        widen_to_chunk(a, &dec, &width);
        first = 0;
        free(dec.data);
    }
    free_names(&l);
    a->row_width = width ? width : 1;
    return NC_NOERR;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Fill value                                                                                             */

static int int_fits(const mzj_value *f, const char *pdtype) {
    int64_t i;
    uint64_t u;
    int is_signed = pdtype[1] == 'i';
    size_t bits = 8 * presented_item_size(pdtype);
    if (mzj_as_int64(f, &i)) {
        if (is_signed) return bits == 64 || (i >= -(INT64_C(1) << (bits - 1)) && i < (INT64_C(1) << (bits - 1)));
        return i >= 0 && (bits == 64 || (uint64_t)i < (UINT64_C(1) << bits));
    }
    return mzj_as_uint64(f, &u) && !is_signed && bits == 64;
}

/* netCDF's default fill value for a presented numeric dtype: what an empty array's one presented element
 * holds, so that ncdump prints it as "_" (no data). null for chars. */
static mzj_value *default_fill(const char *pdtype) {
    static const struct {
        const char *dtype;
        double value;
        int is_real;
    } fills[] = {{"<i1", NC_FILL_BYTE, 0},     {"<u1", NC_FILL_UBYTE, 0},  {"<i2", NC_FILL_SHORT, 0},
                 {"<u2", NC_FILL_USHORT, 0},   {"<i4", NC_FILL_INT, 0},    {"<u4", NC_FILL_UINT, 0},
                 {"<f4", NC_FILL_FLOAT, 1},    {"<f8", NC_FILL_DOUBLE, 1}};
    if (!strcmp(pdtype, "<i8")) return mzj_new_int(NC_FILL_INT64);
    if (!strcmp(pdtype, "<u8")) return mzj_new_uint(NC_FILL_UINT64);
    for (size_t i = 0; i < sizeof fills / sizeof fills[0]; i++)
        if (!strcmp(pdtype, fills[i].dtype))
            return fills[i].is_real ? mzj_new_real(fills[i].value) : mzj_new_int((int64_t)fills[i].value);
    return mzj_new_null();
}

/* The fill_value presented in .zarray: a number for numeric presentations, otherwise null (the view
 * serves missing chunks of translated arrays itself, with the archive's fill). */
static mzj_value *presented_fill(const mzv_array *a) {
    const mzj_value *f = a->z.fill_value;
    if ((!f || f->kind == MZJ_NULL) && a->empty) return default_fill(a->pdtype);
    if (!f || f->kind == MZJ_NULL) return mzj_new_null();
    switch (a->z.dtype.cls) {
    case MZV_DT_BOOL:
        if (f->kind == MZJ_BOOL) return mzj_new_int(f->u.boolean);
        if (int_fits(f, "<u1")) return mzj_clone(f);
        return mzj_new_null();
    case MZV_DT_INT:
    case MZV_DT_UINT:
    case MZV_DT_DATETIME:
    case MZV_DT_TIMEDELTA:
        return int_fits(f, a->pdtype) ? mzj_clone(f) : mzj_new_null();
    case MZV_DT_FLOAT: {
        /* Written as "%.17g" (or NaN/Infinity): an integer beyond 64 bits in the archive's text would reach
         * 4.9.0's lexer as an overflowing integer. */
        double d;
        if (!mzj_as_double(f, &d)) return mzj_new_null();
        return f->kind == MZJ_INT ? mzj_clone(f) : mzj_new_real(d);
    }
    default: return mzj_new_null();
    }
}

/* ---------------------------------------------------------------------------------------------------- */
/* Dimension names                                                                                        */

static const char *leaf_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* 1 if attrs holds a usable _ARRAY_DIMENSIONS for rank dimensions. */
static const mzj_value *xarray_dims(const mzv_array *a) {
    const mzj_value *d = mzj_get(a->attrs, "_ARRAY_DIMENSIONS");
    if (!d || d->kind != MZJ_ARRAY || (int)d->u.array.count != a->z.rank || a->z.rank == 0) return NULL;
    for (size_t i = 0; i < d->u.array.count; i++)
        if (d->u.array.items[i]->kind != MZJ_STRING || d->u.array.items[i]->u.string.len == 0) return NULL;
    return d;
}

/* 1 if the group at path (length len) is a DataAxesFormats data set: it holds the group "axes" and the
 * array "daf" (Zarr v2) or the attribute "daf" (Zarr v3). */
static int is_daf_root(mzv_view *v, const char *path, size_t len) {
    char daf[MZV_DIM_NAME_MAX * 4], axes[MZV_DIM_NAME_MAX * 4];
    if (len >= sizeof daf - 6) return 0;
    snprintf(daf, sizeof daf, "%.*s%sdaf", (int)len, path, len ? "/" : "");
    snprintf(axes, sizeof axes, "%.*s%saxes", (int)len, path, len ? "/" : "");
    if (!mzv_find_group(v, axes, strlen(axes))) return 0;
    if (mzv_find_array(v, daf, strlen(daf))) return 1;
    /* DataAxesFormats 0.3 (Zarr v3) marks the data set with the group attribute "daf" instead. */
    const mzv_group *g = mzv_find_group(v, path, len);
    return g && mzj_get(g->attrs, "daf") != NULL;
}

/* The path of an array relative to the DataAxesFormats data set that holds it (the dataset root, or a
 * group: DataAxesFormats' ".dafs.zarr.zip" archives keep one data set per group), or NULL. */
static const char *daf_relative_path(mzv_view *v, const char *path) {
    for (size_t i = strlen(path); i-- > 0;) {
        if (path[i] != '/') continue;
        if (is_daf_root(v, path, i)) return path + i + 1;
    }
    return is_daf_root(v, "", 0) ? path : NULL;
}

static int name_dimensions(mzv_view *v, mzv_array *a, extra_kind extra) {
    char wanted[MZV_MAX_RANK + 1][MZV_DIM_NAME_MAX];
    const char *daf;
    int grid_rank = a->prank - (extra != EXTRA_NONE);
    const mzj_value *xd = xarray_dims(a);
    if (a->zero_d) {
        snprintf(wanted[0], MZV_DIM_NAME_MAX, "_scalar_");
    } else if (xd) {
        for (int i = 0; i < grid_rank; i++) snprintf(wanted[i], MZV_DIM_NAME_MAX, "%s", xd->u.array.items[i]->u.string.bytes);
    } else if (!((daf = daf_relative_path(v, a->path)) && mzv_daf_dim_names(daf, grid_rank, wanted))) {
        for (int i = 0; i < grid_rank; i++) snprintf(wanted[i], MZV_DIM_NAME_MAX, "_zdim_%" PRIu64, a->pshape[i]);
    }
    switch (extra) {
    case EXTRA_STRLEN: snprintf(wanted[grid_rank], MZV_DIM_NAME_MAX, "%.200s_strlen", leaf_name(a->path)); break;
    case EXTRA_BYTES: snprintf(wanted[grid_rank], MZV_DIM_NAME_MAX, "%.200s_bytes", leaf_name(a->path)); break;
    case EXTRA_COMPLEX: snprintf(wanted[grid_rank], MZV_DIM_NAME_MAX, "re_im"); break;
    case EXTRA_NONE: break;
    }
    int named = a->prank - (a->fixed_strings && extra == EXTRA_STRLEN); /* see fixed_strings */
    for (int i = 0; i < named; i++)
        if (!(a->dim_names[i] = mzv_dims_claim(v->dims, wanted[i], a->pshape[i]))) return NC_ENOMEM;
    return NC_NOERR;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Documents                                                                                              */

static mzj_value *uint_list(const uint64_t *values, int n) {
    mzj_value *l = mzj_new_array();
    for (int i = 0; l && i < n; i++)
        if (mzj_array_push(l, mzj_new_uint(values[i])) != 0) {
            mzj_free(l);
            return NULL;
        }
    return l;
}

static int set_meta(mzv_meta *m, mzj_value *json) {
    if (!json) return NC_ENOMEM;
    m->json = json;
    m->text = mzj_to_netcdf_text(json, &m->len);
    return m->text ? NC_NOERR : NC_ENOMEM;
}

/* The rank netCDF sees: without the string length dimension when strings are fixed-width "|S<n>". */
static int shown_rank(const mzv_array *a) { return a->fixed_strings ? a->prank - a->extra_dim : a->prank; }

/* The .zarray of a pure-Zarr presentation: only the keys 4.9.0 reads, in the form it writes them. */
static mzj_value *pure_zarray(const mzv_array *a) {
    mzj_value *j = mzj_new_object();
    char sep[2] = {a->z.separator, '\0'};
    char fixed[32];
    snprintf(fixed, sizeof fixed, "|S%" PRIu64, a->extra_dim ? a->pshape[a->prank - 1] : 1);
    if (!j || mzj_object_set(j, "zarr_format", mzj_new_int(2)) != 0 ||
        mzj_object_set(j, "shape", uint_list(a->pshape, shown_rank(a))) != 0 ||
        mzj_object_set(j, "chunks", uint_list(a->pchunks, shown_rank(a))) != 0 ||
        mzj_object_set(j, "dtype", mzj_new_cstring(a->fixed_strings ? fixed : a->pdtype)) != 0 ||
        mzj_object_set(j, "fill_value", presented_fill(a)) != 0 ||
        mzj_object_set(j, "order", mzj_new_cstring("C")) != 0 ||
        mzj_object_set(j, "compressor", mzj_new_null()) != 0 ||
        mzj_object_set(j, "filters", mzj_new_null()) != 0 ||
        mzj_object_set(j, "dimension_separator", mzj_new_cstring(sep)) != 0) {
        mzj_free(j);
        return NULL;
    }
    return j;
}

/* NCZarr's own format: the archive's document with only the data-related keys changed, and NCZarr's
 * scalar form ("storage": "scalar", no dimension references) replaced by a length-1 dimension. */
static mzj_value *nczarr_zarray(const mzv_array *a) {
    mzj_value *j = mzj_clone(a->z.json);
    if (!j || mzj_object_set(j, "dtype", mzj_new_cstring(a->pdtype)) != 0 ||
        mzj_object_set(j, "fill_value", presented_fill(a)) != 0 ||
        mzj_object_set(j, "order", mzj_new_cstring("C")) != 0 ||
        mzj_object_set(j, "compressor", mzj_new_null()) != 0 ||
        mzj_object_set(j, "filters", mzj_new_null()) != 0) {
        mzj_free(j);
        return NULL;
    }
    if (a->nczarr_scalar) {
        mzj_value *ncz = mzj_new_object(), *refs = mzj_new_array();
        if (!ncz || !refs || mzj_array_push(refs, mzj_new_cstring("/_scalar_")) != 0 ||
            mzj_object_set(ncz, "dimrefs", refs) != 0 || mzj_object_set(ncz, "storage", mzj_new_cstring("chunked")) != 0 ||
            mzj_object_set(j, "_NCZARR_ARRAY", ncz) != 0) {
            if (!ncz) mzj_free(refs);
            mzj_free(j);
            return NULL;
        }
    }
    return j;
}

static const char *datetime_unit_name(const char *unit) {
    static const char *const map[][2] = {{"D", "days"},           {"h", "hours"},          {"m", "minutes"},
                                         {"s", "seconds"},        {"ms", "milliseconds"}, {"us", "microseconds"},
                                         {"ns", "nanoseconds"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(unit, map[i][0]) == 0) return map[i][1];
    return NULL;
}

/* 1 if 4.9.0 sees the archive's own dtype: plain little-endian numbers, netCDF-style "|S1" chars, and
 * NCZarr's one-byte "<U1" chars. */
static int dtype_presented_as_is(const mzv_array *a) {
    switch (a->z.dtype.cls) {
    case MZV_DT_INT:
    case MZV_DT_UINT:
    case MZV_DT_FLOAT: return a->conversion == MZV_CONV_NONE;
    case MZV_DT_BYTES: return a->z.dtype.width == 1;
    case MZV_DT_UNICODE: return a->conversion == MZV_CONV_NONE;
    default: return 0;
    }
}

/* Attributes the view adds (when the archive has none of that name) to say what it translated. */
static mzj_value *additions(const mzv_array *a) {
    mzj_value *add = mzj_new_object();
    if (!add) return NULL;
    int rc = 0;
    if (!dtype_presented_as_is(a)) {
        if (a->z.dtype_json->kind == MZJ_STRING) {
            rc |= mzj_object_set(add, "_ZARR_DTYPE", mzj_clone(a->z.dtype_json));
        } else {
            size_t n;
            char *t = mzj_to_text(a->z.dtype_json, &n);
            rc |= t ? mzj_object_set(add, "_ZARR_DTYPE", mzj_new_string(t, n)) : -1;
            free(t);
        }
    }
    if (a->z.dtype.cls == MZV_DT_UNICODE || a->chain.object_codec == MZV_OBJECT_VLEN_UTF8)
        rc |= mzj_object_set(add, "_Encoding", mzj_new_cstring("utf-8"));
    if (a->zero_d || a->empty) {
        mzj_value *shape = uint_list(a->z.shape, a->z.rank);
        size_t n;
        char *t = shape ? mzj_to_text(shape, &n) : NULL;
        rc |= t ? mzj_object_set(add, "_ZARR_SHAPE", mzj_new_string(t, n)) : -1;
        free(t);
        mzj_free(shape);
    }
    const char *unit = datetime_unit_name(a->z.dtype.unit);
    if (unit && a->z.dtype.cls == MZV_DT_DATETIME) {
        char units[64];
        snprintf(units, sizeof units, "%s since 1970-01-01 00:00:00", unit);
        rc |= mzj_object_set(add, "units", mzj_new_cstring(units));
        rc |= mzj_object_set(add, "calendar", mzj_new_cstring("proleptic_gregorian"));
    } else if (unit && a->z.dtype.cls == MZV_DT_TIMEDELTA) {
        rc |= mzj_object_set(add, "units", mzj_new_cstring(unit));
    }
    if (rc) {
        mzj_free(add);
        return NULL;
    }
    return add;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Arrays and groups                                                                                      */

/* Records why the chunks of a cannot be presented (the metadata still is). */
static int break_array(mzv_array *a, const char *why) {
    free(a->broken);
    a->broken = strdup(why);
    return a->broken ? NC_NOERR : NC_ENOMEM;
}

/* No chunk larger than this is presented (4.9.0 would allocate it whole; hostile shapes overflow). */
#define MZV_MAX_CHUNK_BYTES ((uint64_t)1 << 40)

/* a * b, or UINT64_MAX when it overflows. */
static uint64_t mul_sat(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

/* Shape, chunks and element sizes once the dtype and the extra dimension are known. Returns 0, or -1 when
 * a chunk would exceed MZV_MAX_CHUNK_BYTES (decoded or presented). */
static int lay_out(mzv_array *a, extra_kind extra, uint64_t extra_len) {
    int r = a->z.rank;
    a->zero_d = r == 0;
    a->empty = mzv_zarray_is_empty(&a->z);
    int grid = r ? r : 1;
    for (int i = 0; i < grid; i++) {
        uint64_t s = r ? a->z.shape[i] : 1, c = r ? a->z.chunks[i] : 1;
        a->pshape[i] = s ? s : 1;           /* zero-length dimensions are shown with length 1 */
        /* 4.9.0 refuses chunks longer than the dimension; 4.9.3+ make them for record variables */
        a->pchunks[i] = s ? (c < s || mzv_reads_long_chunks() ? c : s) : 1;
    }
    a->extra_dim = extra != EXTRA_NONE;
    a->prank = grid + a->extra_dim;
    if (a->extra_dim) a->pshape[grid] = a->pchunks[grid] = extra_len ? extra_len : 1;
    uint64_t elem_out = mul_sat(presented_item_size(a->pdtype), a->extra_dim ? a->pshape[grid] : 1);
    uint64_t elements = 1, pelems = 1;
    if (!a->zero_d && !a->empty)
        for (int i = 0; i < r; i++) elements = mul_sat(elements, a->z.chunks[i]);
    for (int i = 0; i < grid; i++) pelems = mul_sat(pelems, a->pchunks[i]);
    uint64_t decoded = mul_sat(elements, a->z.dtype.itemsize), presented = mul_sat(pelems, elem_out);
    int fits = decoded <= MZV_MAX_CHUNK_BYTES && presented <= MZV_MAX_CHUNK_BYTES;
    a->elem_out = fits ? (size_t)elem_out : 1;
    a->chunk_elements = fits ? elements : 1;
    a->chunk_bytes = fits ? (size_t)presented : 1;
    return fits ? 0 : -1;
}

static int needs_clamp(const mzv_array *a) {
    if (mzv_reads_long_chunks()) return 0;
    for (int i = 0; i < a->z.rank; i++)
        if (a->z.shape[i] && a->z.chunks[i] > a->z.shape[i]) return 1;
    return 0;
}

static int fortran_matters(const mzv_array *a) {
    int spread = 0;
    for (int i = 0; i < a->z.rank; i++)
        if (a->z.chunks[i] > 1) spread++;
    return a->z.fortran_order && spread > 1;
}

/* 1 if a chunk (C order, decoded elements of elem_in bytes) would reach 4.9.0 unchanged. */
static int data_unchanged(const mzv_array *a) {
    return mzv_chain_is_identity(&a->chain) && a->conversion == MZV_CONV_NONE && !fortran_matters(a) &&
           !needs_clamp(a) && !a->empty && !a->extra_dim && !a->broken && !a->z.transposed &&
           (a->z.format != 3 || mzv_v3_chunks_stored_as_v2(&a->z));
}

/* 1 if the NCZarr dataset says (root _NCProperties "...,netcdf=4.9.N,...") it was created by a netCDF-C
 * that writes native (little-endian) bytes under a big-endian dtype: 4.9.0 - 4.9.2 (view_release.h; see
 * nczarr_map/session/byte_order.h). */
static int created_by_unswapping_nczarr(mzv_view *v) {
    mzv_group *root = mzv_find_group(v, "", 0);
    return mzv_written_with_mislabelled_byte_order(root ? mzj_string(mzj_get(root->attrs, "_NCProperties")) : NULL);
}

static int present_nczarr_array(mzv_view *v, mzv_array *a) {
    if (a->z.dtype.big_endian && a->z.dtype.itemsize > 1 && created_by_unswapping_nczarr(v) &&
        (a->z.dtype.cls == MZV_DT_INT || a->z.dtype.cls == MZV_DT_UINT || a->z.dtype.cls == MZV_DT_FLOAT ||
         a->z.dtype.cls == MZV_DT_COMPLEX)) {
        /* Which bytes the chunks hold depends on which release wrote each: a guess could be wrong. */
        int rc = break_array(a, "big-endian array of a dataset made by netCDF-C 4.9.0-4.9.2, which store "
                                "little-endian bytes under a big-endian dtype: its values are ambiguous");
        if (rc) return rc;
    }
    extra_kind extra;
    uint64_t extra_len;
    choose_dtype(a, &extra, &extra_len);
    if (a->z.dtype.cls == MZV_DT_UNICODE && a->z.dtype.width == 1) {
        /* NCZarr's char variables: "<U1" with one byte per element, which 4.9.0 reads itself. */
        extra = EXTRA_NONE;
        a->conversion = MZV_CONV_NONE;
    }
    if (mzv_fixed_strings() && a->z.dtype.cls == MZV_DT_BYTES) {
        /* 4.9.3+'s own NC_STRING variables ("|S<n>") and chars (">S1"): read by those releases as they are. */
        extra = EXTRA_NONE;
        snprintf(a->pdtype, sizeof a->pdtype, "%s", mzj_string(a->z.dtype_json) ? mzj_string(a->z.dtype_json) : "|S1");
    }
    const mzj_value *ncz = mzj_get(a->z.json, "_NCZARR_ARRAY");
    const char *storage = mzj_string(mzj_get(ncz, "storage"));
    const mzj_value *refs = mzj_get(ncz, "dimrefs");
    a->nczarr_scalar = storage && strcmp(storage, "scalar") == 0 && a->z.rank == 1 && a->z.shape[0] == 1 &&
                       (!refs || (refs->kind == MZJ_ARRAY && refs->u.array.count == 0));
    if (lay_out(a, EXTRA_NONE, 0) != 0) return break_array(a, "chunks of more than 2^40 bytes");
    if (extra != EXTRA_NONE || a->conversion == MZV_CONV_UCS4 || a->conversion == MZV_CONV_VLEN || a->empty ||
        needs_clamp(a)) {
        /* NCZarr 4.9.0 writes none of these; its format cannot grow a dimension here. */
        int rc = break_array(a, "this dtype or shape cannot be presented in NCZarr's own format");
        if (rc) return rc;
        return NC_NOERR; /* the archive's .zarray is served as it is */
    }
    a->data_translated = !data_unchanged(a);
    a->translated = a->data_translated || a->nczarr_scalar;
    if (!a->translated) return NC_NOERR;
    v->any_translated = 1;
    int rc = set_meta(&a->zarray, nczarr_zarray(a));
    if (rc || !a->nczarr_scalar || !mzj_get(a->attrs, "_ARRAY_DIMENSIONS")) return rc;
    /* The scalar's (empty) xarray dimension list, as 4.9.0 writes it back for the presented dimension. */
    mzj_value *dims = mzj_new_array();
    if (!dims || mzj_array_push(dims, mzj_new_cstring("_scalar_")) != 0) {
        mzj_free(dims);
        return NC_ENOMEM;
    }
    mzj_value *attrs = mzj_clone(a->attrs);
    if (!attrs) {
        mzj_free(dims);
        return NC_ENOMEM;
    }
    if (mzj_object_set(attrs, "_ARRAY_DIMENSIONS", dims) != 0) { /* frees dims */
        mzj_free(attrs);
        return NC_ENOMEM;
    }
    return set_meta(&a->zattrs, attrs);
}

int mzv_present_array(mzv_view *v, mzv_array *a) {
    if (v->nczarr_format) return present_nczarr_array(v, a);

    extra_kind extra;
    uint64_t extra_len;
    choose_dtype(a, &extra, &extra_len);
    /* provisional for string arrays: their width is not known yet */
    if (lay_out(a, extra, extra_len) != 0) {
        int rc = break_array(a, "chunks of more than 2^40 bytes");
        if (rc) return rc;
    }
    if (a->chain.unsupported) {
        int rc = break_array(a, a->chain.unsupported);
        if (rc) return rc;
    }
    if (a->z.dtype.cls == MZV_DT_BYTES && a->z.dtype.width == 0) {
        int rc = break_array(a, "zero-width bytes dtype \"|S0\"");
        if (rc) return rc;
        extra = EXTRA_STRLEN, extra_len = 1;
    }
    if (mzv_fixed_strings() && a->z.dtype.cls == MZV_DT_BYTES && a->z.dtype.width > 1 && !a->broken && !a->empty) {
        int unused;
        int rc = scan_strings(v, a, &unused); /* only looks for inner NULs */
        if (rc) return rc;
    }
    if (a->conversion == MZV_CONV_UCS4 || a->conversion == MZV_CONV_VLEN) {
        a->row_width = 1;
        if (!a->broken && !a->empty) {
            int nczarr_char = 0;
            int rc = scan_strings(v, a, &nczarr_char);
            if (rc) return rc;
            if (nczarr_char) {
                /* NCZarr's "<U1" char array: presented as it is. */
                extra = EXTRA_NONE;
                a->conversion = MZV_CONV_NONE;
            }
        }
        extra_len = a->row_width;
    }
    if (lay_out(a, extra, extra_len) != 0 && !a->broken) {
        int rc = break_array(a, "chunks of more than 2^40 bytes");
        if (rc) return rc;
    }
    /* 4.9.3+ read no "U" dtype: the same rows, shown as fixed-width strings, or as rows of ubyte when a
     * string holds a NUL inside (an NC_STRING would end there: a wrong value) or when the chunks cannot be
     * presented (4.9.3's ncdump crashes on a failed read of an NC_STRING variable; of ubyte it reports it). */
    if (mzv_fixed_strings() && (a->inner_nul || a->broken) && !strcmp(a->pdtype, "<U1"))
        snprintf(a->pdtype, sizeof a->pdtype, "<u1");
    a->fixed_strings = mzv_fixed_strings() && !strcmp(a->pdtype, "<U1");
    a->data_translated = !data_unchanged(a);
    /* A fill value 4.9.0 cannot take is presented as null; missing chunks then come from the view. */
    mzj_value *fill = presented_fill(a);
    if (!fill) return NC_ENOMEM;
    if (fill->kind == MZJ_NULL && a->z.fill_value && a->z.fill_value->kind != MZJ_NULL) a->data_translated = 1;
    mzj_free(fill);
    a->translated = a->data_translated || !dtype_presented_as_is(a) || a->zero_d || a->empty;
    if (a->translated) v->any_translated = 1;

    int rc = name_dimensions(v, a, extra);
    if (rc) return rc;
    if ((rc = set_meta(&a->zarray, pure_zarray(a)))) return rc;

    mzj_value *add = additions(a);
    if (!add) return NC_ENOMEM;
    int numeric = a->z.dtype.cls == MZV_DT_BOOL || a->z.dtype.cls == MZV_DT_INT || a->z.dtype.cls == MZV_DT_UINT ||
                  a->z.dtype.cls == MZV_DT_FLOAT || a->z.dtype.cls == MZV_DT_DATETIME ||
                  a->z.dtype.cls == MZV_DT_TIMEDELTA;
    /* xarray's Zarr reader takes a Zarr v2 array's fill_value for its _FillValue (and masks it); netCDF
     * readers see the same when the archive follows xarray's convention (its own _ARRAY_DIMENSIONS). Plain
     * zarr-python arrays (fill_value 0 by default, never masked by zarr-python) are left alone, and so is
     * Zarr v3, whose fill_value is mandatory and which xarray does not use as a mask
     * (use_zarr_fill_value_as_mask defaults to false for v3). */
    int xarray_style = !v->zarr_v3 && xarray_dims(a) != NULL && (a->z.dtype.cls == MZV_DT_INT || a->z.dtype.cls == MZV_DT_UINT ||
                                                  a->z.dtype.cls == MZV_DT_FLOAT);
    mzj_value *zfill = xarray_style ? presented_fill(a) : NULL;
    if (zfill && zfill->kind == MZJ_NULL) {
        mzj_free(zfill);
        zfill = NULL;
    }
    /* numpy's NaT (INT64_MIN) is missing to every reader of the archive's own dtype (zarr-python, xarray's
     * Zarr reader, which masks no other value of a datetime array); netCDF readers see the integers with
     * units, and without a _FillValue xarray's netcdf4 engine decoded NaT as 1970-01-01 (an outside review).
     * An archive's own _FillValue attribute still wins. */
    if (!zfill && (a->z.dtype.cls == MZV_DT_DATETIME || a->z.dtype.cls == MZV_DT_TIMEDELTA) &&
        !(zfill = mzj_new_int(INT64_MIN))) {
        mzj_free(add);
        return NC_ENOMEM;
    }
    mzv_attr_plan plan = {a->dim_names, shown_rank(a), numeric ? a->pdtype : NULL,
                          !strcmp(a->pdtype, "<U1") && !a->fixed_strings, add, zfill,
                          v->zarr_v3 && a->z.dtype.cls == MZV_DT_FLOAT};
    rc = set_meta(&a->zattrs, mzv_attrs_present(a->attrs, &plan));
    mzj_free(add);
    mzj_free(zfill);
    return rc;
}

int mzv_present_group(mzv_view *v, mzv_group *g, const mzj_value *zgroup, const mzj_value *attrs) {
    if (v->nczarr_format) return NC_NOERR; /* NCZarr's own groups read fine (but see mzv_present_nczarr_root) */
    /* Pure Zarr: only "zarr_format" matters to 4.9.0; other keys (4.9.1's "_nczarr_superblock", ...) are
     * left out so that the group reads as plain Zarr. */
    if (zgroup) {
        mzj_value *j = mzj_new_object();
        if (!j || mzj_object_set(j, "zarr_format", mzj_new_int(2)) != 0) {
            mzj_free(j);
            return NC_ENOMEM;
        }
        int rc = set_meta(&g->zgroup, j);
        if (rc) return rc;
    }
    if (!attrs) return NC_NOERR;
    mzv_attr_plan plan = {NULL, 0, NULL, 0, NULL, NULL, 0};
    return set_meta(&g->zattrs, mzv_attrs_present(attrs, &plan));
}

/* 1 if a character netCDF-C 4.9.0 cannot read from its \\u escape is in a string or key of doc: a non-ASCII
 * character, or a control character (both stored as \\uXXXX, which 4.9.0 reads as the text "uXXXX"). */
static int needs_decoding(unsigned char c) { return c >= 0x80 || c < 0x20; }

static int has_undecodable(const mzj_value *doc) {
    if (!doc) return 0;
    switch (doc->kind) {
    case MZJ_STRING:
        for (size_t i = 0; i < doc->u.string.len; i++)
            if (needs_decoding((unsigned char)doc->u.string.bytes[i])) return 1;
        return 0;
    case MZJ_ARRAY:
        for (size_t i = 0; i < doc->u.array.count; i++)
            if (has_undecodable(doc->u.array.items[i])) return 1;
        return 0;
    case MZJ_OBJECT:
        for (size_t i = 0; i < doc->u.object.count; i++) {
            const mzj_member *m = &doc->u.object.members[i];
            for (size_t k = 0; k < m->key_len; k++)
                if (needs_decoding((unsigned char)m->key[k])) return 1;
            if (has_undecodable(m->value)) return 1;
        }
        return 0;
    default: return 0;
    }
}

int mzv_present_decoded(mzv_meta *m, const mzj_value *doc) {
    if (m->text || !has_undecodable(doc)) return NC_NOERR;
    return set_meta(m, mzj_clone(doc));
}

int mzv_present_nczarr_root(mzv_view *v, mzv_group *root, const mzj_value *zgroup) {
    (void)v;
    mzj_value *j = mzj_clone(zgroup);
    if (!j) return NC_ENOMEM;
    mzj_value *group = NULL;
    for (size_t i = 0; i < j->u.object.count; i++)
        if (strcmp(j->u.object.members[i].key, "_NCZARR_GROUP") == 0) group = j->u.object.members[i].value;
    mzj_value *dims = NULL;
    for (size_t i = 0; group && group->kind == MZJ_OBJECT && i < group->u.object.count; i++)
        if (strcmp(group->u.object.members[i].key, "dims") == 0) dims = group->u.object.members[i].value;
    if (!dims || dims->kind != MZJ_OBJECT) {
        mzj_free(j);
        return NC_NOERR; /* not the shape NCZarr writes: leave the group alone */
    }
    if (mzj_object_set(dims, "_scalar_", mzj_new_int(1)) != 0) {
        mzj_free(j);
        return NC_ENOMEM;
    }
    return set_meta(&root->zgroup, j);
}

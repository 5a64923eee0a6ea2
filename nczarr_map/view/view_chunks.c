/*
 * view_chunks.c - serving the chunks of translated arrays: decode (compressor, filters), convert the
 * elements (byte order, float16, strings), re-lay them out (Fortran order, chunks cut to the shape), and
 * keep the last few results.
 *
 * NCZarr reads a chunk as len() then read(), and caches decoded chunks itself, so the view only needs to
 * remember the most recent ones: a small cache (MZV_CACHE_ENTRIES entries, at most cache_budget bytes)
 * that never evicts the entry it returned last (view.h: a chunk stays valid until the next call).
 */
#include <inttypes.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_convert.h"
#include "view_internal.h"
#include "view_layout.h"
#include "view_strings.h"
#include "v2_read.h"
#include "v3_read.h"

#define MZV_CACHE_ENTRIES 16

/* Bytes per decoded element as stored: NCZarr's one-byte "<U1" chars are presented untouched. */
static size_t decoded_item_size(const mzv_array *a) {
    if (a->z.dtype.cls == MZV_DT_UNICODE && a->conversion == MZV_CONV_NONE) return 1;
    return a->z.dtype.itemsize;
}

int mzv_chunk_key_parse(const mzv_array *a, const char *key, uint64_t *index) {
    int grid = a->prank - a->extra_dim;
    /* Fixed-width strings (4.9.3+) have no length dimension, so no ".0" for it in their keys. */
    int key_rank = a->fixed_strings ? grid : a->prank;
    for (int i = 0; i < key_rank; i++) {
        if (*key < '0' || *key > '9' || (key[0] == '0' && key[1] >= '0' && key[1] <= '9')) return -1;
        uint64_t n = 0;
        while (*key >= '0' && *key <= '9') {
            if (n > (UINT64_MAX - 9) / 10) return -1;
            n = n * 10 + (uint64_t)(*key++ - '0');
        }
        uint64_t chunks_here = (a->pshape[i] + a->pchunks[i] - 1) / a->pchunks[i];
        if (n >= chunks_here) return -1;
        if (i < grid) index[i] = n;
        if (i + 1 < key_rank) {
            if (*key != a->z.separator) return -1;
            key++;
        }
    }
    return *key ? -1 : 0;
}

/* The archive's key of the object holding the chunk at index (relative to the array), in the array's
 * format. */
static void archive_chunk_key(const mzv_array *a, const uint64_t *index, char *out, size_t size) {
    if (a->z.format == 3) mzv_v3_chunk_key(&a->z, index, out, size);
    else mzv_v2_chunk_key(&a->z, index, out, size);
}

/* The archive entry of the object holding the chunk at index, malloc'ed (NULL when memory runs out). */
static char *chunk_entry(const mzv_view *v, const mzv_array *a, const uint64_t *index) {
    char akey[MZV_MAX_RANK * 21 + 4];
    archive_chunk_key(a, index, akey, sizeof akey);
    size_t plen = strlen(a->path);
    char *relative = malloc(plen + strlen(akey) + 2);
    if (!relative) return NULL;
    snprintf(relative, plen + strlen(akey) + 2, "%s/%s", a->path, akey);
    char *entry = mzv_entry_name(v, relative);
    free(relative);
    return entry;
}

/* The stored bytes of the chunk at index, in the archive's mapping: the entry itself, or (v3) the part of
 * it that the format says holds the chunk. 0 with *bytes, 1 if there is none (missing entry, or the format
 * says empty: fill), or -1 with err. */
static int stored_chunk(mzv_view *v, const mzv_array *a, const char *entry, const uint64_t *index,
                        const unsigned char **bytes, size_t *len, char *err, size_t err_len) {
    const void *stored;
    uint64_t stored_len;
    int st = mmzip_get(v->archive, entry, &stored, &stored_len);
    if (st == MMZIP_ENOTFOUND) return 1;
    if (st != MMZIP_OK) {
        snprintf(err, err_len, "cannot read the chunk: %s", mmzip_last_error());
        return -1;
    }
    if (a->z.format == 3)
        return mzv_v3_chunk_in_object(&a->z, stored, (size_t)stored_len, index, bytes, len, err, err_len);
    *bytes = stored;
    *len = (size_t)stored_len;
    return 0;
}

/* The permutation the stored chunks of a are in, for view_layout.h (NULL: C order). */
static const int *stored_order(const mzv_array *a, int *buf) {
    if (a->z.transposed) return a->z.order;
    if (!a->z.fortran_order) return NULL;
    for (int k = 0; k < a->z.rank; k++) buf[k] = a->z.rank - 1 - k;
    return buf;
}

int mzv_chunk_decode_at(mzv_view *v, const mzv_array *a, const uint64_t *index, mzv_bytes *dec, char *err,
                        size_t err_len) {
    dec->data = NULL;
    dec->len = 0;
    char *entry = chunk_entry(v, a, index);
    if (!entry) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    const unsigned char *stored;
    size_t stored_len;
    int rc = stored_chunk(v, a, entry, index, &stored, &stored_len, err, err_len);
    free(entry);
    if (rc != 0) return rc;
    size_t limit = a->conversion == MZV_CONV_VLEN ? (size_t)1 << 31 : (size_t)a->chunk_elements * a->z.dtype.itemsize + 4096;
    return mzv_chain_decode(&a->chain, stored, stored_len, limit, dec, err, err_len) != 0 ? -1 : 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Fill chunks                                                                                            */

static int base64_bytes(const char *s, mzv_bytes *out) {
    char err[64];
    return mzv_base64_decode((const unsigned char *)s, strlen(s), strlen(s), out, err, sizeof err);
}

/* Writes the presented form of the Zarr fill value into one element (elem_out bytes, pre-zeroed). Numbers
 * take the presented fill_value (an empty array's is netCDF's default fill), the rest the archive's. */
static void fill_element(const mzv_array *a, unsigned char *elem) {
    const mzj_value *f = a->z.fill_value;
    if (a->zarray.json && a->z.dtype.cls != MZV_DT_COMPLEX) {
        const mzj_value *shown = mzj_get(a->zarray.json, "fill_value");
        if (shown && shown->kind != MZJ_NULL) f = shown;
    }
    if (!f || f->kind == MZJ_NULL) return;
    mzv_dtype p;
    char err[64];
    const char *s = mzj_string(f);
    switch (a->z.dtype.cls) {
    case MZV_DT_BOOL:
    case MZV_DT_INT:
    case MZV_DT_UINT:
    case MZV_DT_DATETIME:
    case MZV_DT_TIMEDELTA: {
        int64_t i;
        uint64_t u;
        mzv_number n = {.kind = MZV_NUM_UINT};
        if (f->kind == MZJ_BOOL) n.v.u = (uint64_t)f->u.boolean;
        else if (mzj_as_int64(f, &i)) n.kind = MZV_NUM_INT, n.v.i = i;
        else if (mzj_as_uint64(f, &u)) n.v.u = u;
        else return;
        if (mzv_dtype_parse_string(a->pdtype, &p, err, sizeof err) == 0) mzv_store_number(&p, elem, n);
        return;
    }
    case MZV_DT_FLOAT:
    case MZV_DT_COMPLEX: {
        double parts[2] = {0, 0};
        if (f->kind == MZJ_ARRAY && f->u.array.count == 2) {
            if (!mzj_as_double(f->u.array.items[0], &parts[0]) || !mzj_as_double(f->u.array.items[1], &parts[1])) return;
        } else if (!mzj_as_double(f, &parts[0])) {
            return;
        }
        if (mzv_dtype_parse_string(a->pdtype, &p, err, sizeof err) != 0) return;
        int count = a->z.dtype.cls == MZV_DT_COMPLEX ? 2 : 1;
        for (int k = 0; k < count; k++) {
            mzv_number n = {.kind = MZV_NUM_DOUBLE, .v.d = parts[k]};
            mzv_store_number(&p, elem + (size_t)k * p.itemsize, n);
        }
        return;
    }
    case MZV_DT_BYTES:
    case MZV_DT_OPAQUE: {
        /* Zarr v2 writes fixed-width byte fill values as base64. */
        mzv_bytes b;
        if (!s || base64_bytes(s, &b) != 0) return;
        memcpy(elem, b.data, b.len < a->elem_out ? b.len : a->elem_out);
        free(b.data);
        return;
    }
    case MZV_DT_UNICODE:
    case MZV_DT_OBJECT: {
        if (!s) return;
        size_t n = strlen(s);
        memcpy(elem, s, n < a->elem_out ? n : a->elem_out);
        return;
    }
    }
}

const unsigned char *mzv_fill_chunk(mzv_array *a) {
    if (a->fill_chunk) return a->fill_chunk;
    unsigned char *c = calloc(1, a->chunk_bytes ? a->chunk_bytes : 1);
    if (!c) return NULL;
    if (a->chunk_bytes) {
        fill_element(a, c);
        for (size_t o = a->elem_out; o < a->chunk_bytes; o += a->elem_out) memcpy(c + o, c, a->elem_out);
    }
    a->fill_chunk = c;
    return c;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Translation                                                                                            */

/* Converts decoded elements (archive dtype, archive order) into presented elements. Takes ownership of
 * dec; returns the converted buffer or NULL with a message in err. */
static unsigned char *convert_elements(const mzv_array *a, mzv_bytes *dec, char *err, size_t err_len) {
    uint64_t n = a->chunk_elements;
    if (a->conversion == MZV_CONV_VLEN) {
        mzv_vlen_items items;
        if (mzv_vlen_parse(dec->data, dec->len, n, &items, err, err_len) != 0) return NULL;
        unsigned char *rows = calloc(1, (size_t)n * a->elem_out + 1);
        if (!rows) {
            mzv_vlen_free(&items);
            snprintf(err, err_len, "out of memory");
            return NULL;
        }
        for (uint64_t i = 0; i < n; i++) {
            if (items.lengths[i] > a->row_width) {
                mzv_vlen_free(&items);
                free(rows);
                snprintf(err, err_len, "a string is longer than the presented width (the archive changed since open?)");
                return NULL;
            }
            memcpy(rows + i * a->elem_out, dec->data + items.offsets[i], items.lengths[i]);
        }
        mzv_vlen_free(&items);
        return rows;
    }
    size_t item = decoded_item_size(a);
    if (dec->len != n * item) {
        snprintf(err, err_len, "decoded chunk has %zu bytes, the chunk shape needs %" PRIu64, dec->len, n * item);
        return NULL;
    }
    switch (a->conversion) {
    case MZV_CONV_NONE: {
        unsigned char *same = dec->data;
        dec->data = NULL;
        return same;
    }
    case MZV_CONV_BYTESWAP: {
        mzv_byteswap(dec->data, dec->len / a->swap_size, a->swap_size);
        unsigned char *same = dec->data;
        dec->data = NULL;
        return same;
    }
    case MZV_CONV_HALF: {
        unsigned char *out = malloc((size_t)n * 4 + 1);
        if (!out) break;
        for (uint64_t i = 0; i < n; i++) {
            const unsigned char *h = dec->data + 2 * i;
            uint16_t bits = a->z.dtype.big_endian ? (uint16_t)(h[0] << 8 | h[1]) : (uint16_t)(h[1] << 8 | h[0]);
            float f = mzv_half_to_float(bits);
            uint32_t fb;
            memcpy(&fb, &f, 4);
            /* Presented little-endian whatever the host. */
            out[4 * i] = (unsigned char)fb, out[4 * i + 1] = (unsigned char)(fb >> 8);
            out[4 * i + 2] = (unsigned char)(fb >> 16), out[4 * i + 3] = (unsigned char)(fb >> 24);
        }
        return out;
    }
    case MZV_CONV_UCS4: {
        unsigned char *rows = malloc((size_t)n * a->elem_out + 1);
        if (!rows) break;
        for (uint64_t i = 0; i < n; i++) {
            if (mzv_ucs4_to_row(dec->data + i * item, a->z.dtype.width, a->z.dtype.big_endian, rows + i * a->elem_out,
                                a->elem_out) != 0) {
                free(rows);
                snprintf(err, err_len, "a string is longer than the presented width (the archive changed since open?)");
                return NULL;
            }
        }
        return rows;
    }
    default: break;
    }
    snprintf(err, err_len, "out of memory");
    return NULL;
}

int mzv_chunk_translate(mzv_view *v, mzv_array *a, const uint64_t *index, const char *entry, unsigned char **out,
                        size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    char err[512];
    if (a->broken) {
        /* Only an existing chunk is an error: a missing one is fill either way. */
        const unsigned char *stored;
        size_t stored_len;
        int rc = stored_chunk(v, a, entry, index, &stored, &stored_len, err, sizeof err);
        if (rc == 1) return 1;
        return mzv_fail(v, NC_EFILTER, entry, "cannot present this chunk: %s", a->broken);
    }
    mzv_bytes dec;
    int rc = mzv_chunk_decode_at(v, a, index, &dec, err, sizeof err);
    if (rc == 1) return 1;
    if (rc != 0) return mzv_fail(v, NC_EFILTER, entry, "%s", err);
    unsigned char *elements = convert_elements(a, &dec, err, sizeof err);
    free(dec.data);
    if (!elements) return mzv_fail(v, NC_EFILTER, entry, "%s", err);
    int obuf[MZV_MAX_RANK];
    const int *order = stored_order(a, obuf);
    if (mzv_block_is_identity_order(a->z.rank, a->z.chunks, a->pchunks, order)) {
        *out = elements;
        *out_len = a->chunk_bytes;
        return 0;
    }
    unsigned char *laid = malloc(a->chunk_bytes ? a->chunk_bytes : 1);
    if (!laid) {
        free(elements);
        return mzv_fail(v, NC_ENOMEM, entry, "out of memory");
    }
    mzv_copy_block_order(laid, elements, a->z.rank, a->z.chunks, a->pchunks, order, a->elem_out);
    free(elements);
    *out = laid;
    *out_len = a->chunk_bytes;
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Cache                                                                                                  */

static mzv_cached_chunk *cache_find(mzv_view *v, const char *key) {
    for (size_t i = 0; i < v->cache_count; i++)
        if (strcmp(v->cache[i].key, key) == 0) return &v->cache[i];
    return NULL;
}

static void cache_drop(mzv_view *v, size_t i) {
    mzv_cached_chunk *c = &v->cache[i];
    if (!c->borrowed) {
        free(c->data);
        v->cache_bytes -= c->len;
    }
    free(c->key);
    v->cache[i] = v->cache[--v->cache_count];
}

/* Evicts least recently used entries until one more of `incoming` bytes fits; never the newest. */
static void cache_make_room(mzv_view *v, size_t incoming) {
    while (v->cache_count > 0 &&
           (v->cache_count >= MZV_CACHE_ENTRIES || v->cache_bytes + incoming > v->cache_budget)) {
        size_t oldest = 0;
        for (size_t i = 1; i < v->cache_count; i++)
            if (v->cache[i].last_use < v->cache[oldest].last_use) oldest = i;
        cache_drop(v, oldest);
    }
}

/* Takes ownership of data (unless borrowed). Returns the stored entry, or NULL when memory runs out. */
static mzv_cached_chunk *cache_put(mzv_view *v, const char *key, unsigned char *data, size_t len, int borrowed) {
    cache_make_room(v, borrowed ? 0 : len);
    if (v->cache_count == v->cache_cap) {
        size_t cap = v->cache_cap ? 2 * v->cache_cap : MZV_CACHE_ENTRIES;
        mzv_cached_chunk *c = realloc(v->cache, cap * sizeof *c);
        if (!c) return NULL;
        v->cache = c;
        v->cache_cap = cap;
    }
    char *k = strdup(key);
    if (!k) return NULL;
    mzv_cached_chunk *c = &v->cache[v->cache_count++];
    *c = (mzv_cached_chunk){k, data, len, borrowed, ++v->clock};
    if (!borrowed) v->cache_bytes += len;
    return c;
}

void mzv_cache_free(mzv_view *v) {
    while (v->cache_count) cache_drop(v, v->cache_count - 1);
    free(v->cache);
    v->cache = NULL;
    v->cache_cap = 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Serving                                                                                                */

static int serve_fill(mzv_view *v, mzv_array *a, const char *key, const void **data, size_t *len) {
    const unsigned char *f = mzv_fill_chunk(a);
    if (!f) return mzv_fail(v, NC_ENOMEM, key, "out of memory");
    *data = f;
    *len = a->chunk_bytes;
    return 1;
}

int mzv_chunk_get(mzv_view *v, mzv_array *a, const char *chunk_key, const void **data, size_t *len) {
    uint64_t index[MZV_MAX_RANK + 1];
    if (mzv_chunk_key_parse(a, chunk_key, index) != 0) return 0; /* not one of its chunks */
    char *entry = chunk_entry(v, a, index);
    if (!entry) return mzv_fail(v, NC_ENOMEM, a->path, "out of memory");
    int rc;

    if (a->broken && !a->data_translated) {
        rc = mzv_fail(v, NC_EFILTER, entry, "cannot present this chunk: %s", a->broken);
        free(entry);
        return rc;
    }
    if (!a->data_translated) {
        /* The map serves it; make sure 4.9.0 will not read past it (it trusts the length). */
        uint64_t size;
        rc = 0;
        if (mmzip_size(v->archive, entry, &size) == MMZIP_OK && size != a->chunk_bytes)
            rc = mzv_fail(v, NC_ENCZARR, entry, "stored chunk has %" PRIu64 " bytes, the array needs %zu", size,
                          a->chunk_bytes);
        free(entry);
        return rc;
    }
    if (a->empty) {
        free(entry);
        return serve_fill(v, a, chunk_key, data, len);
    }
    /* Cached under the presented key: the inner chunks of a shard share its entry. */
    size_t klen = strlen(a->path) + strlen(chunk_key) + 2;
    char *cache_key = malloc(klen);
    if (!cache_key) {
        free(entry);
        return mzv_fail(v, NC_ENOMEM, a->path, "out of memory");
    }
    snprintf(cache_key, klen, "%s/%s", a->path, chunk_key);
    mzv_cached_chunk *hit = cache_find(v, cache_key);
    if (hit) {
        hit->last_use = ++v->clock;
        *data = hit->data;
        *len = hit->len;
        free(entry);
        free(cache_key);
        return 1;
    }
    int obuf[MZV_MAX_RANK];
    if (!a->broken && mzv_chain_is_identity(&a->chain) && a->conversion == MZV_CONV_NONE &&
        mzv_block_is_identity_order(a->z.rank, a->z.chunks, a->pchunks, stored_order(a, obuf))) {
        /* Renamed but unchanged (a "|S<n>" chunk under its presented key, a v3 chunk, an inner chunk of a
         * shard stored as it is): serve the mapping itself. */
        const unsigned char *stored;
        size_t size;
        char err[512];
        int st = stored_chunk(v, a, entry, index, &stored, &size, err, sizeof err);
        if (st == 1) rc = serve_fill(v, a, chunk_key, data, len);
        else if (st != 0) rc = mzv_fail(v, NC_EFILTER, entry, "%s", err);
        else if (size != a->chunk_bytes)
            rc = mzv_fail(v, NC_ENCZARR, entry, "stored chunk has %zu bytes, the array needs %zu", size, a->chunk_bytes);
        else if (!(hit = cache_put(v, cache_key, (unsigned char *)stored, size, 1)))
            rc = mzv_fail(v, NC_ENOMEM, chunk_key, "out of memory");
        else {
            *data = stored;
            *len = a->chunk_bytes;
            rc = 1;
        }
        free(entry);
        free(cache_key);
        return rc;
    }
    unsigned char *bytes;
    size_t n;
    rc = mzv_chunk_translate(v, a, index, entry, &bytes, &n);
    free(entry);
    if (rc == 1) {
        free(cache_key);
        return serve_fill(v, a, chunk_key, data, len);
    }
    if (rc < 0) {
        free(cache_key);
        return rc;
    }
    mzv_cached_chunk *c = cache_put(v, cache_key, bytes, n, 0);
    free(cache_key);
    if (!c) {
        free(bytes);
        return mzv_fail(v, NC_ENOMEM, chunk_key, "out of memory");
    }
    *data = c->data;
    *len = c->len;
    return 1;
}

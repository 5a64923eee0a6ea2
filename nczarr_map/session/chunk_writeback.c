/* chunk_writeback.c - write-back of updated existing chunks for netCDF-C 4.9.0 - 4.9.2. */
#include "chunk_writeback.h"

#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "nc_api.h"
#include "put_regions.h"
#include "registry.h"

/* One existing chunk the put touches. */
typedef struct touched_chunk {
    char *key;
    size_t index[NC_MAX_VAR_DIMS];
} touched_chunk;

struct mzn_writeback {
    mzn_session *session;
    int ncid, varid;
    int rank;           /* netCDF rank; NCZarr stores a scalar as one chunk "0" of one element */
    size_t type_size;
    size_t dim_len[NC_MAX_VAR_DIMS];
    size_t chunk[NC_MAX_VAR_DIMS];
    size_t chunk_bytes;
    char var_name[NC_MAX_NAME + 1];
    touched_chunk *chunks;
    size_t n_chunks, cap_chunks;
};

mzn_session *mzn_put_session(int ncid) {
    mzn_session *s = mzn_registry_find(ncid);
    return s && s->writable ? s : NULL;
}

mzn_session *mzn_writeback_session(int ncid) {
    mzn_session *s = mzn_put_session(ncid);
    return s && s->release->loses_chunk_updates ? s : NULL;
}

static void free_plan(mzn_writeback *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_chunks; i++) free(p->chunks[i].key);
    free(p->chunks);
    free(p);
}

/* The NCZarr key prefix of the variable: "/grp/sub/var/" ("/var/" in the root group). */
static int variable_key_prefix(int ncid, const char *var_name, char **out) {
    size_t len;
    int rc = mzn_nc_inq_grpname_full(ncid, &len, NULL);
    if (rc) return rc;
    char *grp = malloc(len + 1);
    if (!grp) return NC_ENOMEM;
    if ((rc = mzn_nc_inq_grpname_full(ncid, &len, grp))) {
        free(grp);
        return rc;
    }
    grp[len] = '\0';
    size_t n = len + strlen(var_name) + 3;
    *out = malloc(n);
    if (*out) snprintf(*out, n, "%s/%s/", strcmp(grp, "/") == 0 ? "" : grp, var_name);
    free(grp);
    return *out ? NC_NOERR : NC_ENOMEM;
}

/* key = prefix + chunk indices joined by sep. */
static char *chunk_key(const char *prefix, const size_t *index, int rank, char sep) {
    size_t n = strlen(prefix) + (size_t)(rank ? rank : 1) * 21 + 1;
    char *key = malloc(n);
    if (!key) return NULL;
    size_t o = (size_t)snprintf(key, n, "%s", prefix);
    if (rank == 0) snprintf(key + o, n - o, "0");
    for (int d = 0; d < rank; d++) {
        if (d) key[o++] = sep;
        o += (size_t)snprintf(key + o, n - o, "%zu", index[d]);
    }
    return key;
}

static int add_chunk(mzn_writeback *p, char *key, const size_t *index) {
    if (p->n_chunks == p->cap_chunks) {
        size_t cap = p->cap_chunks ? p->cap_chunks * 2 : 8;
        touched_chunk *c = realloc(p->chunks, cap * sizeof *c);
        if (!c) return NC_ENOMEM;
        p->chunks = c;
        p->cap_chunks = cap;
    }
    touched_chunk *t = &p->chunks[p->n_chunks++];
    t->key = key;
    memcpy(t->index, index, (size_t)(p->rank ? p->rank : 1) * sizeof *index);
    return NC_NOERR;
}

/* Records the chunk at index if it exists (with '.' or '/' as dimension separator), or if netCDF-C flushed
 * it as a fill chunk that was dropped (session_state.h); checks an existing chunk's size. */
static int consider_chunk(mzn_writeback *p, const char *prefix, const size_t *index) {
    static const char separators[] = {'.', '/'};
    for (size_t i = 0; i < sizeof separators; i++) {
        if (p->rank < 2 && i > 0) break; /* the separator only appears between two indices */
        char *key = chunk_key(prefix, index, p->rank, separators[i]);
        if (!key) return NC_ENOMEM;
        mzn_size64 size;
        int rc = mzn_session_len(p->session, key, &size);
        if (rc == NC_EEMPTY && mzn_keymap_has(&p->session->dropped_fill_chunks, key)) {
            rc = NC_NOERR;
            size = p->chunk_bytes;
        }
        if (rc == NC_EEMPTY) {
            free(key);
            continue;
        }
        if (rc == NC_NOERR && size != p->chunk_bytes) {
            mzn_diag("%s: %s: cannot update this chunk of variable '%s': it holds %llu bytes where netCDF-C 4.9 "
                     "writes %zu (it is compressed or filtered), and netCDF-C 4.9.0-4.9.2 would silently drop "
                     "the update; the write was refused",
                     p->session->archive_path, key, p->var_name, size, p->chunk_bytes);
            rc = NC_ENCZARR;
        }
        if (rc == NC_NOERR) rc = add_chunk(p, key, index);
        if (rc != NC_NOERR) free(key);
        return rc;
    }
    return NC_NOERR;
}

/* Fills the variable's shape, type and chunking; returns 1 if write-back applies to it. */
static int describe_variable(mzn_writeback *p, int *applies) {
    nc_type xtype;
    int dimids[NC_MAX_VAR_DIMS];
    int rc = mzn_nc_inq_var(p->ncid, p->varid, p->var_name, &xtype, &p->rank, dimids, NULL);
    if (rc) return rc;
    /* NCZarr 4.9 has no string or user-defined variables. */
    *applies = xtype > NC_NAT && xtype <= NC_MAX_ATOMIC_TYPE && xtype != NC_STRING;
    if (!*applies) return NC_NOERR;
    if ((rc = mzn_nc_inq_type(p->ncid, xtype, NULL, &p->type_size))) return rc;
    for (int d = 0; d < p->rank; d++)
        if ((rc = mzn_nc_inq_dimlen(p->ncid, dimids[d], &p->dim_len[d]))) return rc;
    int storage = NC_CHUNKED;
    if (p->rank > 0 && (rc = mzn_nc_inq_var_chunking(p->ncid, p->varid, &storage, p->chunk))) return rc;
    p->chunk_bytes = p->type_size;
    for (int d = 0; d < p->rank; d++) {
        /* NCZarr stores a contiguous variable as one chunk of the whole shape. */
        if (storage != NC_CHUNKED) p->chunk[d] = p->dim_len[d];
        if (p->chunk[d] == 0 || p->dim_len[d] == 0) *applies = 0;
        else p->chunk_bytes *= p->chunk[d];
    }
    return NC_NOERR;
}

/*
 * A put in define mode leaves it first (netCDF-4's implicit nc_enddef, libnczarr/zvar.c check_for_vara), and
 * leaving it flushes the chunk cache: a chunk written earlier in the session only in the cache (or read while
 * missing) is stored then, inside the put, after the plan was made, and the put's own change to it is lost
 * (an attribute set in data mode, as netCDF4-python's setncattr does, enters define mode: an outside review).
 * So define mode is left before the plan, as the put would; a classic-model dataset refuses the put instead.
 */
static void leave_define_mode(int ncid) {
    int format = 0;
    if (mzn_nc_inq_format(ncid, &format) == NC_NOERR && format == NC_FORMAT_NETCDF4_CLASSIC) return;
    int rc = mzn_nc_enddef(ncid);
    if (rc != NC_NOERR && rc != NC_ENOTINDEFINE) mzn_trace("nc_enddef before a put: netCDF error %d", rc);
}

/* The box of chunk indices [first[d], last[d]] a put's region touches; 0 if it writes nothing (or its region is
 * invalid, which the real put reports). */
static int chunk_box(const mzn_writeback *p, mzn_region_kind kind, const size_t *start, const size_t *count,
                     const ptrdiff_t *stride, size_t *first, size_t *last) {
    for (int d = 0; d < p->rank; d++) {
        size_t lo = 0, hi = p->dim_len[d] - 1;
        if (kind != MZN_REGION_ALL) {
            if (!start) return 0;
            lo = start[d];
            hi = lo;
            if (kind == MZN_REGION_BOX) {
                if (!count || count[d] == 0) return 0; /* writes nothing */
                ptrdiff_t st = stride ? stride[d] : 1;
                if (st < 1) return 0;
                hi = lo + (count[d] - 1) * (size_t)st;
            }
        }
        if (lo >= p->dim_len[d]) return 0;
        if (hi >= p->dim_len[d]) hi = p->dim_len[d] - 1;
        first[d] = lo / p->chunk[d];
        last[d] = hi / p->chunk[d];
    }
    return 1;
}

int mzn_note_put_region(mzn_session *s, int ncid, int varid, mzn_region_kind kind, const size_t *start,
                        const size_t *count, const ptrdiff_t *stride) {
    mzn_writeback p = {.session = s, .ncid = ncid, .varid = varid};
    int applies = 0;
    size_t first[NC_MAX_VAR_DIMS], last[NC_MAX_VAR_DIMS];
    if (describe_variable(&p, &applies) != NC_NOERR || !applies || !chunk_box(&p, kind, start, count, stride, first, last))
        return NC_NOERR;
    char *prefix = NULL;
    if (variable_key_prefix(ncid, p.var_name, &prefix) != NC_NOERR) return NC_NOERR;
    uint64_t f[NC_MAX_VAR_DIMS], l[NC_MAX_VAR_DIMS];
    for (int d = 0; d < p.rank; d++) f[d] = first[d], l[d] = last[d];
    if (p.rank == 0) f[0] = l[0] = 0;
    int rc = mzn_put_regions_add(s, prefix, p.rank, f, l) == 0 ? NC_NOERR : NC_ENOMEM;
    free(prefix);
    return rc;
}

int mzn_writeback_prepare(mzn_session *s, int ncid, int varid, mzn_region_kind kind, const size_t *start,
                          const size_t *count, const ptrdiff_t *stride, mzn_writeback **plan) {
    *plan = NULL;
    leave_define_mode(ncid);
    mzn_writeback *p = calloc(1, sizeof *p);
    if (!p) return NC_ENOMEM;
    p->session = s;
    p->ncid = ncid;
    p->varid = varid;
    int applies = 0;
    char *prefix = NULL;
    /* Errors describing the variable or its region are left for the real put to report. */
    if (describe_variable(p, &applies) != NC_NOERR || !applies) goto nothing;

    size_t first[NC_MAX_VAR_DIMS], last[NC_MAX_VAR_DIMS], index[NC_MAX_VAR_DIMS] = {0};
    if (!chunk_box(p, kind, start, count, stride, first, last)) goto nothing;
    for (int d = 0; d < p->rank; d++) index[d] = first[d];
    int rc = variable_key_prefix(ncid, p->var_name, &prefix);
    if (rc != NC_NOERR) goto nothing;
    /* Odometer over the chunk indices of the bounding box. */
    for (;;) {
        if ((rc = consider_chunk(p, prefix, index)) != NC_NOERR) {
            free(prefix);
            free_plan(p);
            return rc;
        }
        int d = p->rank - 1;
        while (d >= 0 && index[d] == last[d]) index[d] = first[d], d--;
        if (d < 0) break;
        index[d]++;
    }
    free(prefix);
    prefix = NULL;
    if (p->n_chunks == 0) goto nothing;
    *plan = p;
    return NC_NOERR;
nothing:
    free(prefix);
    free_plan(p);
    return NC_NOERR;
}

/* Copies the packed in-bounds part (count elements per dimension) into the chunk buffer. */
static void scatter(const mzn_writeback *p, const unsigned char *part, const size_t *count, unsigned char *chunk) {
    if (p->rank == 0) {
        memcpy(chunk, part, p->type_size);
        return;
    }
    size_t row = count[p->rank - 1] * p->type_size;
    size_t rows = 1;
    for (int d = 0; d < p->rank - 1; d++) rows *= count[d];
    size_t pos[NC_MAX_VAR_DIMS] = {0};
    for (size_t r = 0; r < rows; r++) {
        size_t offset = 0;
        for (int d = 0; d < p->rank - 1; d++) offset = (offset + pos[d]) * p->chunk[d + 1];
        memcpy(chunk + offset * p->type_size, part + r * row, row);
        for (int d = p->rank - 2; d >= 0; d--) {
            if (++pos[d] < count[d]) break;
            pos[d] = 0;
        }
    }
}

/* The bytes the chunk holds before the put: the stored ones, or the fill chunk netCDF-C flushed for it. */
static int chunk_before(mzn_writeback *p, const touched_chunk *t, unsigned char *chunk) {
    const void *stored;
    size_t stored_len;
    int rc = mzn_session_peek(p->session, t->key, &stored, &stored_len);
    if (rc == NC_EEMPTY) {
        const mzn_blob *fill = mzn_keymap_get(&p->session->dropped_fill_chunks, t->key);
        if (!fill || fill->len == 0 || p->chunk_bytes % fill->len) return NC_EEMPTY;
        for (size_t o = 0; o < p->chunk_bytes; o += fill->len) memcpy(chunk + o, fill->bytes, fill->len);
        return NC_NOERR;
    }
    if (rc != NC_NOERR) return rc;
    if (stored_len != p->chunk_bytes) return NC_ENCZARR; /* checked in prepare; the view may differ now */
    memcpy(chunk, stored, p->chunk_bytes);
    return NC_NOERR;
}

static int write_back_chunk(mzn_writeback *p, const touched_chunk *t, unsigned char *chunk, unsigned char *part) {
    /* The bytes before the put keep the part of an edge chunk beyond the array. */
    int rc = chunk_before(p, t, chunk);
    if (rc != NC_NOERR) return rc;
    size_t cstart[NC_MAX_VAR_DIMS], ccount[NC_MAX_VAR_DIMS];
    for (int d = 0; d < p->rank; d++) {
        cstart[d] = t->index[d] * p->chunk[d];
        size_t left = p->dim_len[d] - cstart[d];
        ccount[d] = left < p->chunk[d] ? left : p->chunk[d];
    }
    /* Read back through netCDF-C: its cache holds the chunk with the new values. */
    if ((rc = mzn_nc_get_vara(p->ncid, p->varid, cstart, ccount, part))) return rc;
    scatter(p, part, ccount, chunk);
    mzn_trace("write-back of updated chunk %s", t->key);
    return mzn_session_write(p->session, t->key, chunk, p->chunk_bytes);
}

int mzn_writeback_finish(mzn_writeback *p, int put_status) {
    if (!p) return put_status;
    int rc = put_status;
    if (rc == NC_NOERR) {
        unsigned char *chunk = malloc(p->chunk_bytes);
        unsigned char *part = malloc(p->chunk_bytes);
        if (!chunk || !part) rc = NC_ENOMEM;
        for (size_t i = 0; rc == NC_NOERR && i < p->n_chunks; i++)
            rc = write_back_chunk(p, &p->chunks[i], chunk, part);
        if (rc != NC_NOERR)
            mzn_diag("%s: variable '%s': the update of an existing chunk could not be stored (netCDF error %d); "
                     "it will not reach the archive",
                     p->session->archive_path, p->var_name, rc);
        free(chunk);
        free(part);
    }
    free_plan(p);
    return rc;
}

/* session_write.c - the write operation of the storage map: buffered metadata, appended chunks. */
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>

#include "abi_version.h"
#include "byte_order.h"
#include "diag.h"
#include "metadata_guard.h"
#include "put_regions.h"
#include "root_slot.h"
#include "session.h"
#include "status.h"

/* Metadata objects (.zgroup, .zarray, .zattrs, .zmetadata, .nczarr) are named with a leading '.'; chunk
 * names never are. */
static int is_metadata_key(const char *key) {
    const char *last = strrchr(key, '/');
    return last && last[1] == '.';
}

static int has_suffix(const char *key, const char *suffix) {
    size_t n = strlen(key), m = strlen(suffix);
    return n >= m && strcmp(key + n - m, suffix) == 0;
}

/* The archived bytes of the entry of key, or MMZIP_ENOTFOUND / another mmzip status. */
static int archived_object(mzn_session *s, const char *key, const void **data, uint64_t *len) {
    char *name = mzn_session_entry_name(s, key);
    if (!name) return MMZIP_ENOMEM;
    int st = mmzip_get(s->archive, name, data, len);
    free(name);
    return st;
}

/* The archived sibling of a .zattrs key ("/g/v/.zattrs" -> "/g/v/.zarray"), or MMZIP_ENOTFOUND. */
static int archived_sibling(mzn_session *s, const char *attrs_key, const char *sibling, const void **data,
                            uint64_t *len) {
    size_t dir = strlen(attrs_key) - strlen(".zattrs");
    char *key = malloc(dir + strlen(sibling) + 1);
    if (!key) return MMZIP_ENOMEM;
    memcpy(key, attrs_key, dir);
    strcpy(key + dir, sibling);
    int st = archived_object(s, key, data, len);
    free(key);
    return st;
}

/*
 * The bytes to buffer for a metadata write: the incoming ones, or, for a rewrite of an archived .zattrs
 * or .zarray, what metadata_guard.h makes of it (a deliberate .zattrs rewrite reduced to netCDF-C's own
 * change, a blind one merged, a .zarray kept). Sets *owned when *bytes was allocated here, and *drop when
 * nothing is to be stored (an empty .zattrs netCDF-C 4.9.3+ writes for an archived group or array that
 * had none).
 */
static int metadata_bytes(mzn_session *s, const char *key, const void *data, size_t len, const void **bytes,
                          size_t *out_len, char **owned, int *drop) {
    *bytes = data;
    *out_len = len;
    *owned = NULL;
    *drop = 0;
    int attrs = has_suffix(key, "/.zattrs"), array = has_suffix(key, "/.zarray");
    if ((!attrs && !array) || mzn_keymap_has(&s->created_metadata, key)) return NC_NOERR;
    const void *archived, *zarray = NULL;
    uint64_t archived_len, zarray_len = 0;
    int st = archived_object(s, key, &archived, &archived_len);
    if (st != MMZIP_OK && st != MMZIP_ENOTFOUND) {
        mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    int owner = 0; /* a .zattrs of a group or array the archive holds */
    if (attrs) {
        int za = archived_sibling(s, key, ".zarray", &zarray, &zarray_len);
        if (za != MMZIP_OK) zarray = NULL;
        owner = zarray || archived_sibling(s, key, ".zgroup", &(const void *){NULL}, &(uint64_t){0}) == MMZIP_OK;
    }
    if (st == MMZIP_ENOTFOUND && !owner) {
        /* This session's own object: what it writes to it later is authoritative (a merge would resurrect
         * attributes it deletes after an nc_sync published the object). */
        return mzn_keymap_put(&s->created_metadata, key, s, NULL) == 0 ? NC_NOERR : NC_ENOMEM;
    }
    size_t merged_len;
    int lossy = 0, m;
    if (attrs && (st == MMZIP_ENOTFOUND || mzn_keymap_has(&s->attrs_read, key))) {
        m = mzn_exact_attributes(st == MMZIP_OK ? archived : NULL, st == MMZIP_OK ? (size_t)archived_len : 0, data,
                                 len, zarray, (size_t)zarray_len, owned, &merged_len);
        if (m == 2) {
            mzn_trace("%s: %s: no attribute set: not created", s->archive_path, key);
            *drop = 1;
            return NC_NOERR;
        }
    } else if (attrs) {
        m = mzn_merge_blind_attributes(archived, (size_t)archived_len, data, len, owned, &merged_len);
        if (m == 1) mzn_trace("%s: %s rewritten without being read: merged into the archived attributes",
                              s->archive_path, key);
    } else {
        m = mzn_guard_array_rewrite(archived, (size_t)archived_len, data, len, owned, &merged_len, &lossy);
    }
    if (m < 0) return NC_ENOMEM;
    if (m == 1) {
        if (lossy) mzn_trace("%s: %s rewritten with a changed definition (codecs or keys netCDF-C does not "
                             "know): the archived definition is kept", s->archive_path, key);
        *bytes = *owned;
        *out_len = merged_len;
    }
    return NC_NOERR;
}

static int buffer_metadata(mzn_session *s, const char *key, const void *data, size_t len) {
    mzn_blob *b = mzn_blob_new(data, len);
    if (!b) return NC_ENOMEM;
    void *old = NULL;
    if (mzn_keymap_put(&s->pending_metadata, key, b, &old) != 0) {
        free(b);
        return NC_ENOMEM;
    }
    free(old);
    return NC_NOERR;
}

/*
 * netCDF-C 4.9.0 - 4.9.2 (mislabels_byte_order in netcdf_releases.c) declare a big-endian dtype for a
 * variable defined big-endian but write native bytes (byte_order.h): the .zarray of an array this session creates declares the machine's byte order
 * instead, so that what the archive says matches what it holds. Arrays already archived are not
 * relabelled (their chunks may come from another writer); the view refuses writes into those that are
 * not in the machine's byte order.
 */
static int declare_written_byte_order(mzn_session *s, const char *key, const void **bytes, size_t *len,
                                      char **owned) {
    if (!s->release->mislabels_byte_order || !has_suffix(key, "/.zarray") || !mzn_keymap_has(&s->created_metadata, key))
        return NC_NOERR;
    char *fixed;
    size_t fixed_len;
    int r = mzn_native_dtype(*bytes, *len, &fixed, &fixed_len);
    if (r < 0) return NC_ENOMEM;
    if (r == 0) return NC_NOERR;
    mzn_trace("%s: %s: dtype relabelled to the machine's byte order, which netCDF-C %s writes",
              s->archive_path, key, mzn_abi_version_string());
    free(*owned);
    *owned = fixed;
    *bytes = fixed;
    *len = fixed_len;
    return NC_NOERR;
}

/* Asks the view whether the bytes may be stored: 0 store, 1 drop (unchanged), 2 store mzv_replacement()
 * instead, or its error. written: a chunk this session's puts wrote into (put_regions.h). */
static int view_allows(mzn_session *s, const char *key, const void *data, size_t len, int written) {
    int r = mzv_check_chunk_write(s->view, key, data, len, written);
    if (r < 0)
        mzn_diag("%s: %s: write refused: the object is presented translated by the compatibility view (or belongs "
                 "to an array that is), and the archive keeps its original form (netCDF error %d)",
                 s->archive_path, key, r);
    return r;
}

/* The shortest element (1, 2, 4 or 8 bytes) that data repeats, or 0. */
static size_t repeated_element(const unsigned char *data, size_t len) {
    for (size_t n = 1; n <= 8; n *= 2) {
        if (len < n || len % n) return 0;
        size_t o = n;
        while (o < len && memcmp(data + o, data, n) == 0) o += n;
        if (o == len) return n;
    }
    return 0;
}

/*
 * A chunk write the view dropped as netCDF-C's fill chunk for a chunk the archive does not hold: a netCDF-C
 * that loses chunk updates has now flushed that cache entry, and the writes it takes next stay in its cache
 * (chunk_writeback.h). Remembers the fill element so that the write-back can rebuild the chunk around them.
 */
static int remember_dropped_fill(mzn_session *s, const char *key, const void *data, size_t len) {
    if (!s->release->loses_chunk_updates) return NC_NOERR;
    const void *archived;
    uint64_t archived_len;
    int st = archived_object(s, key, &archived, &archived_len);
    if (st == MMZIP_OK) return NC_NOERR; /* an archived chunk rewritten unchanged: the write-back finds it */
    size_t n = repeated_element(data, len);
    if (st != MMZIP_ENOTFOUND || n == 0) return NC_NOERR; /* the view drops only uniform fill chunks */
    mzn_blob *b = mzn_blob_new(data, n);
    void *old = NULL;
    if (!b || mzn_keymap_put(&s->dropped_fill_chunks, key, b, &old) != 0) {
        free(b);
        return NC_ENOMEM;
    }
    free(old);
    return NC_NOERR;
}

int mzn_session_write(mzn_session *s, const char *key, const void *data, size_t len) {
    if (!key || key[0] != '/') return NC_EINVAL;
    if (!s->writable) {
        mzn_diag("%s: %s: cannot write: the dataset is open read-only", s->archive_path, key);
        return NC_EPERM;
    }
    mzn_trace("write %s (%zu bytes)", key, len);
    if (is_metadata_key(key)) {
        const void *bytes;
        size_t n;
        char *owned;
        int drop;
        int rc = metadata_bytes(s, key, data, len, &bytes, &n, &owned, &drop);
        if (rc == NC_NOERR && drop) {
            free(mzn_keymap_remove(&s->pending_metadata, key));
            return NC_NOERR;
        }
        if (rc == NC_NOERR) rc = declare_written_byte_order(s, key, &bytes, &n, &owned);
        if (rc == NC_NOERR) {
            int r = view_allows(s, key, bytes, n, 0);
            if (r == 1) free(mzn_keymap_remove(&s->pending_metadata, key)); /* back to the presented form */
            if (r == 2) { /* a translated .zattrs: only netCDF's own changes, applied to the archive's */
                mzn_trace("%s: %s: netCDF's changes merged into the archived attributes", s->archive_path, key);
                bytes = mzv_replacement(s->view, &n);
            }
            rc = r < 0 ? r : r == 1 ? NC_NOERR : buffer_metadata(s, key, bytes, n);
            if (rc == NC_NOERR && r == 0) rc = mzn_root_slot_reserve(s, key, n);
        }
        free(owned);
        return rc;
    }
    int r = view_allows(s, key, data, len, mzn_put_regions_cover(s, key));
    if (r == 1) return remember_dropped_fill(s, key, data, len);
    if (r != 0) return r;
    free(mzn_keymap_remove(&s->dropped_fill_chunks, key));
    char *name = mzn_session_entry_name(s, key);
    if (!name) return NC_ENOMEM;
    int st = mmzip_put(s->archive, name, data, len, 0);
    free(name);
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    return mzn_keymap_put(&s->pending_chunks, key, s, NULL) == 0 ? NC_NOERR : NC_ENOMEM;
}

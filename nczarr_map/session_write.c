/* session_write.c - the write operation of the storage map: buffered metadata, appended chunks. */
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "diag.h"
#include "metadata_guard.h"
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

/*
 * The bytes to buffer for a metadata write: the incoming ones, or, for a rewrite of an archived .zattrs
 * or .zarray, their merge into the archived object (metadata_guard.h). Sets *owned when *bytes was
 * allocated here.
 */
static int metadata_bytes(mzn_session *s, const char *key, const void *data, size_t len, const void **bytes,
                          size_t *out_len, char **owned) {
    *bytes = data;
    *out_len = len;
    *owned = NULL;
    int attrs = has_suffix(key, "/.zattrs"), array = has_suffix(key, "/.zarray");
    if ((!attrs && !array) || mzn_keymap_has(&s->created_metadata, key)) return NC_NOERR;
    if (attrs && mzn_keymap_has(&s->attrs_read, key)) return NC_NOERR; /* a deliberate rewrite */
    char *name = mzn_session_entry_name(s, key);
    if (!name) return NC_ENOMEM;
    const void *archived;
    uint64_t archived_len;
    int st = mmzip_get(s->archive, name, &archived, &archived_len);
    free(name);
    if (st == MMZIP_ENOTFOUND) {
        /* This session's own object: what it writes to it later is authoritative (a merge would resurrect
         * attributes it deletes after an nc_sync published the object). */
        return mzn_keymap_put(&s->created_metadata, key, s, NULL) == 0 ? NC_NOERR : NC_ENOMEM;
    }
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    size_t merged_len;
    int lossy = 0;
    int m = attrs ? mzn_merge_blind_attributes(archived, (size_t)archived_len, data, len, owned, &merged_len)
                  : mzn_guard_array_rewrite(archived, (size_t)archived_len, data, len, owned, &merged_len, &lossy);
    if (m < 0) return NC_ENOMEM;
    if (m == 1) {
        if (attrs) mzn_trace("%s: %s rewritten without being read: merged into the archived attributes",
                             s->archive_path, key);
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
 * netCDF-C 4.9.0 - 4.9.2 declare a big-endian dtype for a variable defined big-endian but write native
 * bytes (byte_order.h): the .zarray of an array this session creates declares the machine's byte order
 * instead, so that what the archive says matches what it holds. Arrays already archived are not
 * relabelled (their chunks may come from another writer); the view refuses writes into those that are
 * not in the machine's byte order.
 */
static int declare_written_byte_order(mzn_session *s, const char *key, const void **bytes, size_t *len,
                                      char **owned) {
    if (s->abi != MZN_ABI_V490 || !has_suffix(key, "/.zarray") || !mzn_keymap_has(&s->created_metadata, key))
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
 * instead, or its error. */
static int view_allows(mzn_session *s, const char *key, const void *data, size_t len) {
    int r = mzv_check_write(s->view, key, data, len);
    if (r < 0)
        mzn_diag("%s: %s: write refused: the object is presented translated by the compatibility view (or belongs "
                 "to an array that is), and the archive keeps its original form (netCDF error %d)",
                 s->archive_path, key, r);
    return r;
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
        int rc = metadata_bytes(s, key, data, len, &bytes, &n, &owned);
        if (rc == NC_NOERR) rc = declare_written_byte_order(s, key, &bytes, &n, &owned);
        if (rc == NC_NOERR) {
            int r = view_allows(s, key, bytes, n);
            if (r == 1) free(mzn_keymap_remove(&s->pending_metadata, key)); /* back to the presented form */
            if (r == 2) { /* a translated .zattrs: only netCDF's own changes, applied to the archive's */
                mzn_trace("%s: %s: netCDF's changes merged into the archived attributes", s->archive_path, key);
                bytes = mzv_replacement(s->view, &n);
            }
            rc = r < 0 ? r : r == 1 ? NC_NOERR : buffer_metadata(s, key, bytes, n);
        }
        free(owned);
        return rc;
    }
    int r = view_allows(s, key, data, len);
    if (r != 0) return r < 0 ? r : NC_NOERR;
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

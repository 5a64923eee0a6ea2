/*
 * session_state.h - what one open dataset session holds, and the names of its entries: the bottom of the
 * session layer, which its operations (session.h), its writes and its publishing (publish.h) all take
 * from, so that none of them needs another (session.h has the model).
 *
 * Keys are NCZarr keys ("/grp/var/.zarray"); the archive entry of a key is the dataset prefix (layout.h)
 * followed by the key without its leading '/'.
 */
#ifndef MZN_SESSION_STATE_H
#define MZN_SESSION_STATE_H

#include <stddef.h>

#include "keymap.h"
#include "mmzip.h"
#include "netcdf_releases.h"
#include "stats.h"
#include "view.h"
#include "zmap_abi.h"

typedef struct mzn_session {
    mzn_zmap base;            /* first member: netCDF-C holds a pointer to it as its NCZMAP */
    const mzn_release *release; /* the running netCDF-C's row of the release table (netcdf_releases.h) */
    mmzip_t *archive;
    char *archive_path;
    char *prefix;             /* dataset prefix of entry names: "" or "dir/", or a sub-dataset's "grp/sub/" */
    char *group;              /* the sub-dataset's group path ("grp/sub"), or NULL for the whole archive */
    size_t prefix_len;
    int writable;
    int created;              /* made by nczmap_create */
    int discard;              /* nc_abort(): roll back instead of publishing at close */
    int published;            /* a commit of this session reached the disk (a created archive now exists) */
    mzv_view *view;
    mzn_keymap pending_metadata; /* key -> mzn_blob*: metadata written this session, not yet published */
    mzn_keymap pending_chunks;   /* chunk keys written since the last publish (publish.h, sync rule) */
    mzn_keymap attrs_read;       /* .zattrs keys read in this session */
    mzn_keymap created_metadata; /* metadata keys absent from the archive when this session first wrote
                                  * them: its own, rewritten freely (others: metadata_guard.h) */
    mzn_keymap put_regions;      /* variable key prefix ("/g/v/") -> mzn_put_boxes*: the chunks this session's
                                  * nc_put_var* calls wrote into (chunk_writeback.h), which hold data whatever
                                  * their values */
    mzn_keymap dropped_fill_chunks; /* chunk key -> mzn_blob* (one fill element): chunks the archive lacks
                                     * whose fill chunk netCDF-C flushed and the view dropped; on a netCDF-C
                                     * that loses chunk updates, its cache takes later writes to them without
                                     * writing them (chunk_writeback.h) */
    mzn_stats stats;             /* time spent in this map's calls (stats.h; kept only when enabled) */
    void *root_slot;             /* an open reservation of the root ".zgroup", the archive's first entry, that
                                  * publishing fills (root_slot.h); or NULL */
    size_t root_slot_capacity;
} mzn_session;

/* An owned byte string. */
typedef struct mzn_blob {
    size_t len;
    unsigned char bytes[];
} mzn_blob;

/* A copy of len bytes, or NULL if out of memory. */
mzn_blob *mzn_blob_new(const void *bytes, size_t len);

/* The archive entry name of key (malloc'ed), or NULL if key does not start with '/' or out of memory. */
char *mzn_session_entry_name(const mzn_session *s, const char *key);

#endif

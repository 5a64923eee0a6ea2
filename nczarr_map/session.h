/*
 * session.h - one open NCZarr dataset in one archive: the storage map the plugin hands to netCDF-C.
 *
 * A session lives from nczmap_open/nczmap_create to the map's close. It owns an mmzip handle on the
 * archive ("r" for read-only opens, "r+" for NC_WRITE, "w" with MMZIP_PUBLISH_ON_COMMIT for create, all with
 * MMZIP_COMMIT_MANUAL) and the compatibility view (view/view.h).
 *
 * Keys are NCZarr keys ("/grp/var/.zarray"); the archive entry of a key is the dataset prefix (layout.h)
 * followed by the key without its leading '/'.
 *
 * Reads are served, in this order, by the view (translated objects), by the metadata written earlier in
 * this session, and by the archive (committed entries, and chunks written earlier in this session, which
 * the writer's handle sees while they are pending).
 *
 * Writes: NCZarr rewrites group and array metadata at every enddef, sync and close, so metadata objects
 * (names starting with '.') are held in memory, the latest write winning, and written to the archive only
 * when the session publishes (publish.h); chunks go to the archive at once, as pending entries. Nothing a
 * session writes is visible to other handles before it publishes, and a process that dies first leaves
 * the archive at its previous commit (or, for a create, leaves no archive).
 *
 * Not thread-safe: netCDF-C calls a map from one thread at a time.
 */
#ifndef MZN_SESSION_H
#define MZN_SESSION_H

#include <stddef.h>

#include "abi_version.h"
#include "keymap.h"
#include "mmzip.h"
#include "stats.h"
#include "view.h"
#include "zmap_abi.h"

typedef struct mzn_session {
    mzn_zmap base;            /* first member: netCDF-C holds a pointer to it as its NCZMAP */
    mzn_abi abi;
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
    mzn_stats stats;             /* time spent in this map's calls (stats.h; kept only when enabled) */
    void *root_slot;             /* an open reservation of the root ".zgroup", the archive's first entry, that
                                  * publishing fills (session_write.c, lead_with_root_metadata); or NULL */
    size_t root_slot_capacity;
} mzn_session;

/* An owned byte string. */
typedef struct mzn_blob {
    size_t len;
    unsigned char bytes[];
} mzn_blob;

/* A copy of len bytes, or NULL if out of memory. */
mzn_blob *mzn_blob_new(const void *bytes, size_t len);

/*
 * Opens (create == 0) or creates (create == 1) the session for the URL NCZarr passes to the map, with the
 * netCDF mode flags and NCZarr control flags it passes. Returns NC_NOERR and sets *out, or a netCDF error
 * (after printing what went wrong): NC_EURL, ENOENT, EBUSY (another writer), NC_EEXIST (NC_NOCLOBBER),
 * NC_ENOTNC (not a ZIP archive), NC_ENCZARR, NC_ENOMEM. The session registers itself with the registry
 * (registry.h) so that the interposed nc_open/nc_create can bind it to the ncid.
 */
int mzn_session_open(const char *url, int mode, mzn_size64 flags, mzn_abi abi, int create, mzn_session **out);

/*
 * Publishes everything (unless discarding), closes the archive and frees the session. deleteit != 0 (an
 * aborted create) discards the session's writes. If nothing of the create was ever published the path is left
 * as it was before (absent, or the archive the create was to replace); if an nc_sync published it, the
 * archive is removed, as netCDF's nc_abort does.
 * Returns NC_NOERR or the netCDF error of a failed publish, in which case nothing of this session after
 * its last publish reaches the archive.
 */
int mzn_session_close(mzn_session *s, int deleteit);

/* The five read operations of the storage map. Return NC_NOERR, NC_EEMPTY (absent, or a directory), or a
 * netCDF error. */
int mzn_session_exists(mzn_session *s, const char *key);
int mzn_session_len(mzn_session *s, const char *key, mzn_size64 *size);
int mzn_session_read(mzn_session *s, const char *key, mzn_size64 start, mzn_size64 count, void *content);
/* Appends (with nclistpush) the malloc'ed names of the children of prefix ("/" or "/a/b"): objects and
 * directories, each once. A prefix with no children gives an empty list and NC_NOERR. */
int mzn_session_search(mzn_session *s, const char *prefix, void *nclist);

/*
 * Zero-copy access to the current bytes of key (view, then this session's metadata, then the archive),
 * valid until the next write or publish of the session. NC_EEMPTY if absent.
 */
int mzn_session_peek(mzn_session *s, const char *key, const void **data, size_t *len);

/*
 * Stores a whole object. Refused with NC_EPERM on a read-only session, and with the view's error if the
 * view refuses it (a write to a translated array). A write the view reports as unchanged is dropped.
 * Metadata objects are buffered (see above); rewrites of archived .zattrs and .zarray objects are merged
 * into the archived versions as metadata_guard.h describes. Chunks are appended to the archive as pending
 * entries.
 */
int mzn_session_write(mzn_session *s, const char *key, const void *data, size_t len);

/*
 * Publishing's side of the first-entry reservation of a created archive's root .zgroup (see root_slot):
 * stores bytes there and completes it (*filled = 1), or, if they do not fit, gives the reservation up
 * (*filled = 0: the caller puts the object as usual). Does nothing without a reservation. NC_NOERR or the
 * netCDF error of a failed patch.
 */
int mzn_fill_root_slot(mzn_session *s, const void *bytes, size_t len, int *filled);

/* The archive entry name of key (malloc'ed), or NULL if key does not start with '/' or out of memory. */
char *mzn_session_entry_name(const mzn_session *s, const char *key);

#endif

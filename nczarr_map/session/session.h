/*
 * session.h - one open NCZarr dataset in one archive: the storage map the plugin hands to netCDF-C.
 *
 * A session lives from nczmap_open/nczmap_create to the map's close. It owns an mmzip handle on the
 * archive ("r" for read-only opens, "r+" for NC_WRITE, "w" with MMZIP_PUBLISH_ON_COMMIT for create, all with
 * MMZIP_COMMIT_MANUAL) and the compatibility view (view/view.h).
 *
 * Keys are NCZarr keys ("/grp/var/.zarray"); session_state.h has the session's fields and its entry names.
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

#include "session_state.h"

/*
 * Opens (create == 0) or creates (create == 1) the session for the URL NCZarr passes to the map, with the
 * netCDF mode flags and NCZarr control flags it passes. Returns NC_NOERR and sets *out, or a netCDF error
 * (after printing what went wrong): NC_EURL, ENOENT, EBUSY (another writer), NC_EEXIST (NC_NOCLOBBER),
 * NC_ENOTNC (not a ZIP archive), NC_ENCZARR, NC_ENOMEM. The session registers itself with the registry
 * (registry.h) so that the interposed nc_open/nc_create can bind it to the ncid. release is the running
 * netCDF-C's row (abi_version.h), which the view is given too.
 */
int mzn_session_open(const char *url, int mode, mzn_size64 flags, const mzn_release *release, int create,
                     mzn_session **out);

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

#endif

/*
 * publish.h - making a session's writes visible: buffered metadata into the archive, then one commit.
 *
 * At close everything is published. At nc_sync, netCDF-C 4.9 has rewritten group metadata that lists new
 * variables, and flushed their chunks, but not yet written their .zarray (it writes array metadata only
 * at close). A reader that finds a group listing an array without metadata crashes (ncdump segfaults),
 * and chunks published without their array would be found by a later array of the same name. So a sync
 * publishes only a state in which every group listing (_NCZARR_GROUP / _nczarr_group) names arrays and
 * groups whose metadata is in the archive, and every chunk written since the last publish belongs to an
 * array whose .zarray is; otherwise it publishes nothing and the session's writes wait for the next
 * publish (at the latest, close). What a sync publishes is thereby a dataset readers can open.
 *
 * Metadata that means the same as the archived version (mzj_equal, json/json.h) is not written
 * again: opening a dataset for writing and closing it unchanged adds zero bytes.
 */
#ifndef MZN_PUBLISH_H
#define MZN_PUBLISH_H

#include "session_state.h"

typedef enum mzn_publish_kind {
    MZN_PUBLISH_SYNC = 0,  /* nc_sync: hold back incomplete group listings */
    MZN_PUBLISH_FINAL = 1  /* close: everything */
} mzn_publish_kind;

/*
 * Writes the buffered metadata (as allowed by kind) and commits the archive. Returns NC_NOERR, or a netCDF
 * error after printing the cause; nothing is committed then, and the session's writes stay pending (close
 * rolls them back, a failed sync leaves them for the next publish). A read-only session publishes nothing
 * and returns NC_NOERR.
 */
int mzn_publish(mzn_session *s, mzn_publish_kind kind);

#endif

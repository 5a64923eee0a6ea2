/*
 * put_regions.h - which chunks a session's nc_put_var* calls wrote into.
 *
 * netCDF-C writes back, at a sync or a close, a chunk of fill values for a missing chunk it merely read; the
 * view drops such a write (view.h). A chunk a put wrote into is data whatever its values (netCDF's default
 * fill in an array whose fill_value is null, or the fill itself written on purpose), so the session records
 * the chunk-index box of every put (chunk_writeback.h computes it) and asks here before a chunk write is
 * dropped. Boxes are kept per variable, in its NCZarr key prefix ("/g/v/"); a box equal to the one before it
 * is not kept twice. Not thread-safe (a session is used by one thread at a time).
 */
#ifndef MZN_PUT_REGIONS_H
#define MZN_PUT_REGIONS_H

#include <stdint.h>

#include "session_state.h"

/* Records the box [first[d], last[d]] of chunk indices (rank 0: the one chunk "0") of the variable whose keys
 * start with prefix. Returns 0, or -1 if out of memory. */
int mzn_put_regions_add(mzn_session *s, const char *prefix, int rank, const uint64_t *first, const uint64_t *last);

/* 1 if a recorded box holds the chunk of key ("/g/v/0.1" or "/g/v/0/1"), else 0. */
int mzn_put_regions_cover(const mzn_session *s, const char *key);

#endif

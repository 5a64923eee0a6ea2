/*
 * root_slot.h - the first entry of an archive a session creates at the root: its root .zgroup.
 *
 * netCDF-C's own zip backend (4.9.x / 4.10.x built with libzip) takes the first segment of the name of the
 * archive's first entry for the directory of the dataset (NCZarr's own layout, "name/.zgroup" first). In
 * an archive whose dataset is at the root, a first entry "time/0" would make it read the array "time" as
 * the dataset: no variables, time's attributes shown as global ones, exit status 0. So an archive this map
 * creates at the root begins with the root's .zgroup, and that backend, finding a name without a directory
 * first, refuses the archive ("Unknown file format"). netCDF-C writes the root .zgroup before any chunk (at
 * its first enddef) but may change it later (4.9.0 lists the variables there), and a replaced entry moves
 * to the end of the directory: so the first write reserves the first entry (the write side of the session
 * calls mzn_root_slot_reserve), and publishing fills it with the final bytes (mzn_root_slot_fill). Only a
 * root .zgroup that outgrows the reservation, or changes after an nc_sync published it, leaves the first
 * place (docs/netcdf-guide.md, "Limits").
 *
 * Here, below both the writes and publishing, so that neither calls the other. The reservation is the
 * session's root_slot (session_state.h). Not thread-safe (one session, one thread).
 */
#ifndef MZN_ROOT_SLOT_H
#define MZN_ROOT_SLOT_H

#include <stddef.h>

#include "session_state.h"

/*
 * After a buffered metadata write of len bytes to key: reserves the archive's first entry for the root
 * .zgroup if this is the first write of a root .zgroup into an empty archive that the session creates at the
 * archive's root (room for four times len plus 4 KiB); otherwise does nothing. NC_NOERR or the netCDF error
 * of a failed reservation (printed).
 */
int mzn_root_slot_reserve(mzn_session *s, const char *key, size_t len);

/*
 * Publishing's side: stores bytes in the reservation and completes it (*filled = 1), or, if they do not
 * fit, gives the reservation up (*filled = 0: the caller puts the object as usual). Does nothing without a
 * reservation. NC_NOERR or the netCDF error of a failed patch (printed).
 */
int mzn_root_slot_fill(mzn_session *s, const void *bytes, size_t len, int *filled);

/* At close, after a successful final publish: gives up a reservation that was never filled (a dataset
 * without a root .zgroup), so that no empty entry is left. Does nothing without a reservation. */
void mzn_root_slot_abandon(mzn_session *s);

#endif

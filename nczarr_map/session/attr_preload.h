/*
 * attr_preload.h - the workaround for netCDF-C 4.9's attribute loss on NC_WRITE opens.
 *
 * netCDF-C reads attributes lazily but rewrites every .zattrs at close (metadata_guard.h explains the
 * loss). Asking for the attribute count of every group and variable right after an NC_WRITE open makes it
 * read them all, so that what it writes back at close is complete. metadata_guard.h remains as the
 * safety net for whatever this misses.
 */
#ifndef MZN_ATTR_PRELOAD_H
#define MZN_ATTR_PRELOAD_H

/* Reads the attributes of every group and variable of the dataset ncid (recursively). Returns NC_NOERR
 * or the first netCDF error. Not thread-safe with other calls on the same ncid. */
int mzn_preload_attributes(int ncid);

#endif

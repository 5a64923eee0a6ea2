/*
 * abi_version.h - which netCDF-C release the process runs, from nc_inq_libvers(): its row of the release
 * table (netcdf_releases.h), which names its storage-map ABI and everything else it needs.
 *
 * The zmap tables carry no usable version number (zmap_abi.h), so the library version string is the only
 * reliable signal. It is read once per process, on first use.
 */
#ifndef MZN_ABI_VERSION_H
#define MZN_ABI_VERSION_H

#include "netcdf_releases.h"

/*
 * Parses a netCDF-C version string such as "4.9.0 of Aug  7 2022 23:41:41 $" or "4.10.1-development".
 * Returns the release's row, or NULL for a release the table has no row for (or no version). Sets *major,
 * *minor and *patch when the string starts with three dot-separated numbers (NULL pointers are allowed).
 * Pure; thread-safe.
 */
const mzn_release *mzn_release_from_string(const char *version, int *major, int *minor, int *patch);

/*
 * The row of the netCDF-C this process runs, from nc_inq_libvers(), computed once; NULL for a release the
 * plugin does not serve (then mzn_abi_refuse()). Thread-safe.
 */
const mzn_release *mzn_release_current(void);

/* The version string the release was detected from ("" before the first mzn_release_current()). */
const char *mzn_abi_version_string(void);

/*
 * Prints, once per process, why the running netCDF-C is refused, and returns the netCDF error code to
 * hand back (NC_ENOTBUILT).
 */
int mzn_abi_refuse(void);

#endif

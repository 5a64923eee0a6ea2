/*
 * nc_api.h - the netCDF-C functions the plugin calls, bound at run time to the libnetcdf in the process.
 *
 * The plugin links no libnetcdf (it has no DT_NEEDED entry for any soname): netCDF-C 4.9.0 - 4.9.2 ship
 * libnetcdf.so.19 and 4.9.3 / 4.10.x ship libnetcdf.so.22, and one build of the plugin serves all of them.
 * Each function below looks its namesake up on first use with dlsym(RTLD_DEFAULT) - the global scope, where
 * libnetcdf is when the plugin is preloaded or linked before it - and otherwise in the libnetcdf already
 * mapped into the process (netCDF4-python loads it RTLD_LOCAL). A lookup that fails is retried on the next
 * call (libnetcdf may be loaded after the plugin, as in Python). When libnetcdf is not loaded at all, the
 * function prints, once, which symbol is missing and fails with NC_ENOTBUILT (NULL for nc_inq_libvers,
 * a fixed message for nc_strerror): it never calls through a null pointer.
 *
 * Every function has the contract of its netCDF-C namesake (netcdf.h). Thread-safe.
 */
#ifndef MZN_NC_API_H
#define MZN_NC_API_H

#include <stddef.h>

const char *mzn_nc_inq_libvers(void);
const char *mzn_nc_strerror(int ncerr);
int mzn_nc_inq_natts(int ncid, int *nattsp);
int mzn_nc_inq_varids(int ncid, int *nvars, int *varids);
int mzn_nc_inq_varnatts(int ncid, int varid, int *nattsp);
int mzn_nc_inq_grps(int ncid, int *numgrps, int *ncids);
int mzn_nc_inq_grpname_full(int ncid, size_t *lenp, char *full_name);
int mzn_nc_inq_var(int ncid, int varid, char *name, int *xtypep, int *ndimsp, int *dimidsp, int *nattsp);
int mzn_nc_inq_type(int ncid, int xtype, char *name, size_t *size);
int mzn_nc_inq_dimlen(int ncid, int dimid, size_t *lenp);
int mzn_nc_inq_var_chunking(int ncid, int varid, int *storagep, size_t *chunksizesp);
int mzn_nc_get_vara(int ncid, int varid, const size_t *startp, const size_t *countp, void *ip);
int mzn_nc_inq_format(int ncid, int *formatp);
int mzn_nc_enddef(int ncid);

/* nclistpush() of libdispatch/nclist.c (exported by every libnetcdf, not declared in netcdf.h): appends
 * elem to an NClist; returns non-zero on success, 0 on failure or when libnetcdf is not loaded. */
int mzn_nclistpush(void *list, const void *elem);

#endif

/* nc_api.c - run-time binding to the libnetcdf in the process (see nc_api.h for why). */
#include "nc_api.h"

#include <netcdf.h>
#include <pthread.h>

#include "diag.h"
#include "forward.h"
#include "netcdf_releases.h"

/* Reports a missing netCDF-C function once per process: every later failure has the same cause. */
static pthread_once_t missing_once = PTHREAD_ONCE_INIT;
static const char *missing_name;

static void print_missing(void) {
    mzn_diag("netCDF-C function %s() not found in this process: libmmzip_nczarr links no libnetcdf and "
             "uses the one the program loads; load libnetcdf (%s) before calling into the plugin",
             missing_name, mzn_releases_served());
}

static void report_missing(const char *name) {
    missing_name = name;
    pthread_once(&missing_once, print_missing);
}

/* Defines mzn_<name>, forwarding to <name> of the loaded libnetcdf, or returning `fail`. */
#define MZN_NC_BIND(ret, name, params, args, fail)                                                        \
    ret mzn_##name params {                                                                              \
        static void *slot;                                                                               \
        ret(*f) params = (ret(*) params)mzn_netcdf_symbol_cached(&slot, #name);                          \
        if (!f) {                                                                                        \
            report_missing(#name);                                                                       \
            return fail;                                                                                 \
        }                                                                                                \
        return f args;                                                                                   \
    }

MZN_NC_BIND(const char *, nc_inq_libvers, (void), (), NULL)
MZN_NC_BIND(const char *, nc_strerror, (int ncerr), (ncerr), "unknown netCDF error (libnetcdf not loaded)")
MZN_NC_BIND(int, nc_inq_natts, (int ncid, int *nattsp), (ncid, nattsp), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_varids, (int ncid, int *nvars, int *varids), (ncid, nvars, varids), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_varnatts, (int ncid, int varid, int *nattsp), (ncid, varid, nattsp), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_grps, (int ncid, int *numgrps, int *ncids), (ncid, numgrps, ncids), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_grpname_full, (int ncid, size_t *lenp, char *full_name), (ncid, lenp, full_name),
            NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_var,
            (int ncid, int varid, char *name, int *xtypep, int *ndimsp, int *dimidsp, int *nattsp),
            (ncid, varid, name, xtypep, ndimsp, dimidsp, nattsp), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_type, (int ncid, int xtype, char *name, size_t *size), (ncid, xtype, name, size),
            NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_dimlen, (int ncid, int dimid, size_t *lenp), (ncid, dimid, lenp), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_var_chunking, (int ncid, int varid, int *storagep, size_t *chunksizesp),
            (ncid, varid, storagep, chunksizesp), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_get_vara, (int ncid, int varid, const size_t *startp, const size_t *countp, void *ip),
            (ncid, varid, startp, countp, ip), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_inq_format, (int ncid, int *formatp), (ncid, formatp), NC_ENOTBUILT)
MZN_NC_BIND(int, nc_enddef, (int ncid), (ncid), NC_ENOTBUILT)
MZN_NC_BIND(int, nclistpush, (void *list, const void *elem), (list, elem), 0)

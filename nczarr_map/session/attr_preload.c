/* attr_preload.c - force netCDF-C to load every attribute of a dataset. */
#include "attr_preload.h"
#include "nc_api.h"

#include <netcdf.h>
#include <stdlib.h>

static int preload_group(int grpid, int depth) {
    /* netCDF-4 nesting is bounded in practice; the bound only protects the stack from a hostile file. */
    if (depth > 1024) return NC_ENCZARR;
    int natts, rc;
    if ((rc = mzn_nc_inq_natts(grpid, &natts))) return rc;
    int nvars = 0;
    if ((rc = mzn_nc_inq_varids(grpid, &nvars, NULL))) return rc;
    int *ids = malloc(((size_t)nvars + 1) * sizeof *ids);
    if (!ids) return NC_ENOMEM;
    rc = mzn_nc_inq_varids(grpid, &nvars, ids);
    for (int i = 0; rc == NC_NOERR && i < nvars; i++) rc = mzn_nc_inq_varnatts(grpid, ids[i], &natts);
    free(ids);
    if (rc) return rc;
    int ngrps = 0;
    if ((rc = mzn_nc_inq_grps(grpid, &ngrps, NULL))) return rc;
    int *grps = malloc(((size_t)ngrps + 1) * sizeof *grps);
    if (!grps) return NC_ENOMEM;
    rc = mzn_nc_inq_grps(grpid, &ngrps, grps);
    for (int i = 0; rc == NC_NOERR && i < ngrps; i++) rc = preload_group(grps[i], depth + 1);
    free(grps);
    return rc;
}

int mzn_preload_attributes(int ncid) { return preload_group(ncid, 0); }

/* status.c - translation of mmzip status codes. */
#include "status.h"

#include <errno.h>
#include <netcdf.h>

#include "mmzip.h"

int mzn_nc_error(int mmzip_status) {
    switch (mmzip_status) {
    case MMZIP_OK: return NC_NOERR;
    case MMZIP_ENOTFOUND: return NC_EEMPTY;
    case MMZIP_ENOENT: return ENOENT;
    case MMZIP_EBUSY: return EBUSY;
    case MMZIP_EIO: return EIO;
    case MMZIP_ENOTZIP: return NC_ENOTNC;
    case MMZIP_EREADONLY: return NC_EPERM;
    case MMZIP_ENOMEM: return NC_ENOMEM;
    default: return NC_ENCZARR;
    }
}

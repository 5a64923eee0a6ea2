/* status.h - mmzip status codes as netCDF error codes. */
#ifndef MZN_STATUS_H
#define MZN_STATUS_H

/*
 * The netCDF error code to return for an mmzip status: MMZIP_ENOENT gives ENOENT and MMZIP_EBUSY gives
 * EBUSY (netCDF-C returns errno values for file-level failures, and nc_strerror prints them),
 * MMZIP_ENOTZIP gives NC_ENOTNC, MMZIP_EREADONLY NC_EPERM, MMZIP_ENOMEM NC_ENOMEM, MMZIP_ENOTFOUND
 * NC_EEMPTY, MMZIP_EIO EIO, and every other failure NC_ENCZARR. MMZIP_OK gives NC_NOERR. Pure.
 */
int mzn_nc_error(int mmzip_status);

#endif

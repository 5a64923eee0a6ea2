/*
 * path_routing.h - which names given to nc_open/nc_create this plugin serves, and as what URL.
 *
 * Served (rewritten to "file:///abs/path#mode=nczarr,zip" or kept with a corrected mode list):
 *   - a local path ending in ".zip": for nc_create always; for nc_open only if the archive holds Zarr
 *     metadata (layout.h), so that archives holding HDF5/netCDF-4 members reach the HDF5 driver's own
 *     interposers (H5Fopen and the fopen of netCDF-C's format sniff);
 *   - "x.zip#mode=..." (a fragment without the file:// scheme);
 *   - file:// URLs whose mode selects zip (mzn_url_fix_zip_mode makes the mode list safe for netCDF-C 4.9.0);
 *   - "x.zip#/group/sub" where the archive holds a Zarr group (or, for nc_create, nothing yet and a name
 *     without an HDF5 suffix): rewritten to "file:///abs/x.zip#mode=nczarr,zip&group=/group/sub", the
 *     sub-dataset rooted at that group (subdataset.h has the precedence).
 * Which file a bare name holding "#/" means (the file as written, or an archive and a path in it) is the core's
 * rule, mmzip_split_name (mmzip.h), shared with every other route; a name it finds ambiguous is refused
 * with its message (NC_EINVAL), one that means nothing with ENOENT.
 * Everything else, including "archive.zip#/member.h5", is passed on unchanged (to the HDF5 driver's
 * interposers, reached through netCDF-C, or to netCDF-C), except an "#/" address that names neither an
 * HDF5 member nor a Zarr group, which is refused with a message.
 */
#ifndef MZN_PATH_ROUTING_H
#define MZN_PATH_ROUTING_H

typedef enum mzn_route_kind { MZN_ROUTE_OPEN = 0, MZN_ROUTE_CREATE = 1 } mzn_route_kind;

/*
 * Returns the malloc'ed name to hand to netCDF-C instead of path, or NULL to pass path on unchanged (not
 * ours, or out of memory). If the name must not reach netCDF-C at all (an "#/" address naming neither an
 * HDF5 member nor a Zarr group), returns NULL with *refusal set to the netCDF error to return (the reason
 * is printed on stderr); *refusal is NC_NOERR otherwise. Thread-safe; it opens the archive read-only to
 * look for Zarr metadata or the "#/" target.
 */
char *mzn_route_path(const char *path, mzn_route_kind kind, int *refusal);

/*
 * For the file-name checks some programs make before nc_open (file_interpose.c): if path is a local
 * "x.zip#/group/sub" (no URL scheme) where the archive x.zip exists and holds a Zarr group at group/sub (or
 * "x.zip#/" of an archive holding Zarr), returns the malloc'ed archive path "x.zip"; otherwise NULL (not
 * such an address, an HDF5 member, nothing there, out of memory). Prints nothing. Thread-safe; opens the
 * archive read-only.
 */
char *mzn_route_zarr_group_archive(const char *path);

#endif

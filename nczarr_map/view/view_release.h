/*
 * view_release.h - the conventions of the netCDF-C release the view presents to.
 *
 * One process runs one libnetcdf, so the release is process-wide: the storage map states it (its row of the
 * release table, nczarr_map/netcdf/netcdf_releases.h, from nc_inq_libvers()) before it opens a view. Which
 * release follows which convention is a column of that table; what the conventions are:
 *
 *   type table in .zattrs   4.9.0 - 4.9.2 read "_NCZARR_ATTR" (4.9.1/4.9.2 read both spellings); 4.9.3 and
 *                           4.10.x read only "_nczarr_attr" (zsync.c, NCZ_V2_ATTR) and show "_NCZARR_ATTR"
 *                           as a user attribute holding its JSON text.
 *
 *   char attribute type   4.9.0 "<U1", 4.9.3+ ">S1" (each release refuses the other's spelling).
 *   strings               4.9.0 reads "<U1" as char (the view shows strings as char rows with a trailing
 *                         length dimension); 4.9.3 and 4.10.x reject every "U" dtype (zutil.c,
 *                         ncz_dtype2nctype) and read pure Zarr's "|S<n>" as an NC_STRING of at most n bytes
 *                         per element (NUL-padded, the very bytes of the char rows).
 *   integer attributes    4.9.0 types a JSON integer (list) by its first value's smallest type (and fails
 *   without a type table  on [1, 1000]); 4.9.3 and 4.10.x take int: the view states the type the release
 *                         itself would show (4.9.0: the smallest type holding every element).
 *   chunks longer than    4.9.0 refuses them (NC_EINVAL); 4.9.3 and 4.10.x read and write them, and make
 *   the dimension         them by default for record variables (chunk 512 or 1024 of a dimension holding
 *                         fewer records): the view must present those as they are.
 *
 * Archives may hold either spelling (written by either release); both are read as NCZarr's type table and
 * neither is ever shown as a user attribute. Thread-safe (an atomic pointer).
 */
#ifndef MMZIP_VIEW_RELEASE_H
#define MMZIP_VIEW_RELEASE_H

#include "netcdf_releases.h"

/* Sets the release: its row of the release table (NULL, and the default: the oldest, 4.9.0). */
void mzv_set_netcdf_release(const mzn_release *release);

/* The key under which the running release reads attribute types: "_NCZARR_ATTR" or "_nczarr_attr". */
const char *mzv_types_key(void);

/* 1 if the running release reads strings as "|S<n>" NC_STRING only (4.9.3+), not as "<U1" char. */
int mzv_fixed_strings(void);

/* 1 if the running release reads NCZarr's lower-case metadata (_nczarr_superblock, _nczarr_array...: 4.9.3+;
 * 4.9.1/4.9.2 are not told apart from 4.9.0 here, they are shown such datasets as plain Zarr). */
int mzv_reads_lowercase_nczarr(void);

/* 1 if the running release types integer attributes without a type table as int (4.9.3+), not as the
 * smallest type holding the value (4.9.0). */
int mzv_infers_int_attributes(void);

/* 1 if the running release reads chunks longer than their dimension (4.9.3+); 4.9.0 is shown them
 * clamped to the dimension. */
int mzv_reads_long_chunks(void);

/* An attribute type of an archive's type table as the running release names it: 4.9.3+ write char as
 * ">S1", which 4.9.0 refuses (NC_EINVAL for the whole open) and calls "<U1". Others unchanged. */
const char *mzv_release_attr_type(const char *type);

/* 1 if the running release reads the NCZarr attribute type (the dtype of an _NCZARR_ATTR / _nczarr_attr
 * "types" entry). 4.9.0-4.9.2 fail the whole open with NC_EINVAL on 4.9.3+'s "|S<n>" (NC_STRING) and "|J0"
 * (JSON): such attributes are presented by their JSON value instead (a list of strings as its JSON text). */
int mzv_release_reads_attr_type(const char *type);

/* 1 if an NCZarr dataset whose root _NCProperties attribute is props ("version=2,netcdf=4.9.0,...") says it
 * was written by a release that stores native bytes under a big-endian dtype (mislabels_byte_order in the
 * release table: 4.9.0 - 4.9.2). 0 for NULL or a props naming no such release. */
int mzv_written_with_mislabelled_byte_order(const char *props);

/* 1 if key is a spelling of NCZarr's attribute type table ("_NCZARR_ATTR" or "_nczarr_attr"). */
int mzv_is_types_key(const char *key);

/* The archive's type table ({"types": {...}} under either spelling, the running release's first); NULL. */
#include "json.h"
const mzj_value *mzv_archive_types_table(const mzj_value *attrs);

#endif

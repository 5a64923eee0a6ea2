/*
 * view_dims.h - dimension names for the presented arrays.
 *
 * netCDF-C 4.9.0 reads Zarr dimension names from each array's "_ARRAY_DIMENSIONS" and creates every
 * dimension in the root group, keyed by name only: a second array that uses a name with another length
 * silently gets the first length (wrong values, reference §4.2). The registry below hands out names so
 * that one name always means one length: a name already taken with another length gets "_<length>"
 * appended (then "_2", "_3", ... in the unlikely case that is taken too).
 *
 * Where names come from (docs/compat-view.md, "Dimension names"):
 *   - the archive's own _ARRAY_DIMENSIONS (xarray), when it is a list of one string per dimension;
 *   - DataAxesFormats' layout (a group holding the array "daf" and the group "axes", the dataset root or
 *     any group): axes, vectors and matrices are named after their axes, sparse parts after their property;
 *   - otherwise "_zdim_<length>", the name 4.9.0 itself gives anonymous dimensions.
 * Not thread-safe (one registry per view).
 */
#ifndef MMZIP_VIEW_DIMS_H
#define MMZIP_VIEW_DIMS_H

#include <stddef.h>
#include <stdint.h>

/* Longest dimension name the view generates or accepts, NUL included. */
#define MZV_DIM_NAME_MAX 256

typedef struct mzv_dims mzv_dims;

mzv_dims *mzv_dims_new(void);
void mzv_dims_free(mzv_dims *d);

/*
 * Claims a dimension called `wanted` of `length`. Returns the name to use (owned by the registry, valid
 * until mzv_dims_free): `wanted` itself, made safe for netCDF (no '/', not empty), or a suffixed variant
 * if the name is taken with another length. NULL only when memory runs out.
 */
const char *mzv_dims_claim(mzv_dims *d, const char *wanted, uint64_t length);

/*
 * The DataAxesFormats names of the `rank` dimensions of the array at path (relative to its data set's
 * group, e.g. "matrices/cell/gene/UMIs"), written to names[0..rank-1]. Returns 1 if the layout names this array,
 * 0 if it does not (the caller falls back to generic names).
 *
 *   daf                                    daf_version
 *   scalars/<name>                         _scalar_
 *   axes/<axis>                            <axis>
 *   vectors/<axis>/<name>                  <axis>
 *   vectors/<axis>/<name>/nzind|nzval      <axis>_<name>_nnz
 *   matrices/<rows>/<cols>/<name>          <cols>, <rows>   (Zarr shape [n_cols, n_rows]: Julia's
 *                                                            column-major matrix, as zarr-python sees it)
 *   matrices/<rows>/<cols>/<name>/colptr   <rows>_<cols>_<name>_colptr
 *   matrices/<rows>/<cols>/<name>/rowval|nzval   <rows>_<cols>_<name>_nnz
 */
int mzv_daf_dim_names(const char *path, int rank, char names[][MZV_DIM_NAME_MAX]);

#endif

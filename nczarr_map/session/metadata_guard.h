/*
 * metadata_guard.h - keeping netCDF-C 4.9's lossy metadata rewrites out of the archive.
 *
 * netCDF-C rewrites the metadata of every group and array at each close of a writable dataset, from what
 * it holds in memory. Two things it holds are incomplete, and the rewrite would destroy archived data:
 *
 *   - Attributes are read lazily. A variable whose attributes were never asked for gets its .zattrs
 *     rewritten with only _ARRAY_DIMENSIONS and an empty type table: every attribute is lost (observed
 *     with netCDF-C 4.9.0). Such a "blind" rewrite (of a .zattrs not read in the session) is merged into
 *     the archived attributes: archived attributes are kept, those in the new content are added or
 *     replace archived ones, and nested objects (the _NCZARR_ATTR / _nczarr_attr type tables) are merged
 *     the same way.
 *
 *   - An array's definition is re-serialised from what netCDF-C understood of it. A netCDF-C without the
 *     codec of a compressed array (Debian's has none) writes "compressor": null, which would make every
 *     Zarr reader take the compressed chunks for raw data; keys it does not know are dropped. netCDF
 *     cannot change an existing array's type, chunks, codecs or order, only (4.9.3+, unlimited
 *     dimensions) its shape. So a rewrite of an archived .zarray keeps the archived definition, takes the
 *     new shape, and adds members the archive lacks.
 *
 * Both return the archived bytes unchanged when the result means the same, so that opening a dataset for
 * writing and closing it adds nothing. Pure functions; thread-safe.
 */
#ifndef MZN_METADATA_GUARD_H
#define MZN_METADATA_GUARD_H

#include <stddef.h>

/*
 * Merges a blind .zattrs rewrite (incoming) into the archived one. Returns 1 and sets *merged (malloc'ed)
 * and *merged_len; returns 0 if either side is not a JSON object (store the incoming bytes as they are);
 * -1 if out of memory.
 */
int mzn_merge_blind_attributes(const void *archived, size_t archived_len, const void *incoming,
                               size_t incoming_len, char **merged, size_t *merged_len);

/*
 * A deliberate .zattrs rewrite (the attributes were read in the session) reduced to netCDF-C's own change:
 * netCDF-C writes back every attribute it holds, in its own rendering, plus what it makes up for an
 * archived array: a _FillValue attribute materialised from the array's fill value, _ARRAY_DIMENSIONS, and
 * (4.9.3+) an empty object for a group or array that had no .zattrs. The result is the archived object
 * with only the attributes netCDF-C added, gave another value or deleted (and their entries in the archived
 * type table, _NCZARR_ATTR / _nczarr_attr, or a new table holding only those), every other member as
 * archived; and exactly the archived bytes when nothing changed.
 *
 * archived may be NULL (the group or array has no .zattrs yet); zarray is the array's archived .zarray, or
 * NULL for a group. Returns 1 and sets *out (malloc'ed) and *out_len; 2 if archived is NULL and netCDF-C
 * set no attribute (store nothing; *out NULL); 0 if a side is not a JSON object (store the incoming bytes
 * as they are); -1 if out of memory.
 */
int mzn_exact_attributes(const void *archived, size_t archived_len, const void *incoming, size_t incoming_len,
                         const void *zarray, size_t zarray_len, char **out, size_t *out_len);

/*
 * The .zarray to store when netCDF-C rewrites an archived one: the archived definition with the incoming
 * "shape" and the incoming members the archived one lacks. Returns 1 and sets *out (malloc'ed) and
 * *out_len; sets *lossy to 1 if the rewrite would have changed or dropped an archived member other than
 * the shape (for a diagnostic). Returns 0 if either side is not a JSON object, -1 if out of memory.
 */
int mzn_guard_array_rewrite(const void *archived, size_t archived_len, const void *incoming, size_t incoming_len,
                            char **out, size_t *out_len, int *lossy);

#endif

/*
 * attribute_merge.h - protection against netCDF-C 4.9's attribute loss.
 *
 * NCZarr reads a variable's .zattrs lazily, when its attributes are first asked for, but rewrites every
 * variable's .zattrs at every close of a writable dataset. A dataset opened NC_WRITE whose attributes
 * were never read therefore gets .zattrs rewritten with only _ARRAY_DIMENSIONS and an empty type table:
 * every attribute of every variable is lost (netCDF-C 4.9.0, observed; see docs/netcdf-guide.md).
 *
 * The plugin recognises such a write: a .zattrs rewritten in a session that never read it. Its new
 * content cannot be based on the archived attributes, so it is merged into them instead of replacing
 * them: archived attributes are kept, attributes in the new content are added or replace archived ones,
 * and nested objects (the _NCZARR_ATTR / _nczarr_attr type tables) are merged the same way.
 */
#ifndef MZN_ATTRIBUTE_MERGE_H
#define MZN_ATTRIBUTE_MERGE_H

#include <stddef.h>

/*
 * Merges a blind rewrite (incoming) into the archived .zattrs. Returns 1 and sets *merged (malloc'ed) and
 * *merged_len to the result; when the result means the same as archived, it is archived byte for byte (so
 * that an unchanged dataset is not rewritten). Returns 0 if either side is not a JSON object (the incoming
 * bytes are then stored as they are), -1 if out of memory. Pure; thread-safe.
 */
int mzn_merge_blind_attributes(const void *archived, size_t archived_len, const void *incoming,
                               size_t incoming_len, char **merged, size_t *merged_len);

#endif

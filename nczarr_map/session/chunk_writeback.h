/*
 * chunk_writeback.h - making writes into existing chunks land, on netCDF-C 4.9.0 - 4.9.2.
 *
 * NCZarr 4.9 marks a cached chunk "modified" only when it creates it (the chunk did not exist); a write
 * into a chunk it read from the store, or into one it already flushed (at nc_sync or nc_enddef), updates
 * the cache and is then silently dropped: the chunk is never written back. netCDF-C 4.9.3 fixed this
 * (NCZ_chunk_cache_modify).
 *
 * The plugin interposes the nc_put_var* functions (put_interpose.c). For a dataset it serves on an
 * affected netCDF-C, a put is bracketed:
 *   - before: the chunks the put touches (the bounding box of its region) that already exist in the
 *     archive are listed; each must be stored as netCDF-C 4.9 writes chunks, uncompressed and of exactly
 *     chunk-size bytes, or the put is refused with NC_ENCZARR and a message, before anything changes;
 *   - the real put runs and updates netCDF-C's cache, converting types as usual;
 *   - after: each listed chunk is read back through netCDF-C (nc_get_vara of the chunk's part of the
 *     array: the cache, with the new values, in the variable's own type) over the stored chunk's bytes,
 *     and written to the archive as a pending chunk, published with the session.
 * Chunks that do not exist yet are left to netCDF-C, which writes them correctly.
 */
#ifndef MZN_CHUNK_WRITEBACK_H
#define MZN_CHUNK_WRITEBACK_H

#include <stddef.h>

#include "session.h"

/* The part of a variable a put writes. */
typedef enum mzn_region_kind {
    MZN_REGION_ALL = 0,  /* nc_put_var*: the whole variable */
    MZN_REGION_ONE = 1,  /* nc_put_var1*: the element at start */
    MZN_REGION_BOX = 2   /* nc_put_vara/vars/varm*: start, count, stride (stride NULL = 1) */
} mzn_region_kind;

typedef struct mzn_writeback mzn_writeback;

/* The writable session serving ncid, or NULL (not a dataset we serve, or read-only). Thread-safe. */
mzn_session *mzn_put_session(int ncid);

/* The session whose chunk updates the running netCDF-C would lose for ncid, or NULL (not a dataset we
 * serve, read-only, or a netCDF-C without the bug). Thread-safe. */
mzn_session *mzn_writeback_session(int ncid);

/*
 * Records the chunks a put writes into (the bounding box of its region, in chunk indices; put_regions.h),
 * every release: a chunk a put wrote into holds data whatever its values, which the view must not take for
 * the fill chunk netCDF-C writes back for a missing chunk it merely read (view.h, mzv_check_chunk_write).
 * Errors describing the variable or its region are left for the real put; out of memory is NC_ENOMEM.
 */
int mzn_note_put_region(mzn_session *s, int ncid, int varid, mzn_region_kind kind, const size_t *start,
                        const size_t *count, const ptrdiff_t *stride);


/*
 * Lists the existing chunks a put will touch. Returns NC_NOERR and sets *plan (NULL when there is nothing
 * to write back), or a netCDF error (printed) if an existing chunk cannot be rewritten: the caller then
 * refuses the put with that error. An invalid region is not an error here: the real put reports it.
 */
int mzn_writeback_prepare(mzn_session *s, int ncid, int varid, mzn_region_kind kind, const size_t *start,
                          const size_t *count, const ptrdiff_t *stride, mzn_writeback **plan);

/*
 * After the real put returned put_status: if it succeeded, writes the listed chunks back and returns
 * NC_NOERR or the netCDF error of a failed write-back (printed); otherwise returns put_status. Frees the
 * plan (NULL is allowed and returns put_status).
 */
int mzn_writeback_finish(mzn_writeback *plan, int put_status);

#endif

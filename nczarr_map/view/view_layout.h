/*
 * view_layout.h - re-laying out the elements of one chunk: Fortran to C order, and cutting a chunk down to
 * the part inside the array (netCDF-C 4.9.0 refuses chunk lengths larger than the dimension).
 *
 * Both are one operation: copy the block of `count` elements per dimension that starts at the chunk's
 * origin, from a source chunk of `chunk` elements per dimension in C or F order, to a dense C-order
 * destination. Elements are opaque runs of elem_size bytes. Reentrant; no global state.
 */
#ifndef MMZIP_VIEW_LAYOUT_H
#define MMZIP_VIEW_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/*
 * dst gets prod(count) * elem_size bytes. src holds prod(chunk) elements laid out in Fortran order if
 * fortran, else C order. count[i] <= chunk[i] for every i. rank 0 copies one element.
 */
void mzv_copy_block(unsigned char *dst, const unsigned char *src, int rank, const uint64_t *chunk,
                    const uint64_t *count, int fortran, size_t elem_size);

/*
 * The same for any permutation: the source chunk is stored as the C-order array of dimensions
 * chunk[order[0]], chunk[order[1]], ... (Zarr v3's transpose codec with that order); order NULL is C.
 */
void mzv_copy_block_order(unsigned char *dst, const unsigned char *src, int rank, const uint64_t *chunk,
                          const uint64_t *count, const int *order, size_t elem_size);

/* 1 if that copy is the identity. */
int mzv_block_is_identity_order(int rank, const uint64_t *chunk, const uint64_t *count, const int *order);

/* 1 if the copy is the identity (C order and count == chunk): the source bytes can be served as they are. */
int mzv_block_is_identity(int rank, const uint64_t *chunk, const uint64_t *count, int fortran);

#endif

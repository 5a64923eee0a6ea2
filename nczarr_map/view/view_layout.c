/* view_layout.c - chunk re-layout: F to C order and clamping (see view_layout.h). */
#include "view_layout.h"

#include <string.h>

#include "view_zarr.h"

int mzv_block_is_identity(int rank, const uint64_t *chunk, const uint64_t *count, int fortran) {
    int spread = 0; /* dimensions longer than 1: Fortran and C order agree when there is at most one */
    for (int i = 0; i < rank; i++) {
        if (count[i] != chunk[i]) return 0;
        if (chunk[i] > 1) spread++;
    }
    return !fortran || spread <= 1;
}

int mzv_block_is_identity_order(int rank, const uint64_t *chunk, const uint64_t *count, const int *order) {
    int last = -1; /* the stored order is C's if the dimensions longer than 1 keep their order */
    for (int i = 0; i < rank; i++)
        if (count[i] != chunk[i]) return 0;
    for (int k = 0; order && k < rank; k++) {
        if (chunk[order[k]] <= 1) continue;
        if (order[k] < last) return 0;
        last = order[k];
    }
    return 1;
}

void mzv_copy_block(unsigned char *dst, const unsigned char *src, int rank, const uint64_t *chunk,
                    const uint64_t *count, int fortran, size_t elem_size) {
    int reversed[MZV_MAX_RANK];
    for (int k = 0; k < rank; k++) reversed[k] = rank - 1 - k;
    mzv_copy_block_order(dst, src, rank, chunk, count, fortran ? reversed : NULL, elem_size);
}

void mzv_copy_block_order(unsigned char *dst, const unsigned char *src, int rank, const uint64_t *chunk,
                          const uint64_t *count, const int *order, size_t elem_size) {
    uint64_t stride[MZV_MAX_RANK], index[MZV_MAX_RANK] = {0};
    if (rank == 0) {
        memcpy(dst, src, elem_size);
        return;
    }
    for (int i = 0; i < rank; i++)
        if (count[i] == 0) return;
    /* Source strides in elements: the stored dimension k (C order) is the array's dimension order[k]. */
    uint64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        int d = order ? order[k] : k;
        stride[d] = s, s *= chunk[d];
    }
    /* The innermost destination run, when it is contiguous in the source too. */
    int last = rank - 1;
    size_t run = (chunk[last] == 1 || stride[last] == 1) ? (size_t)count[last] : 1;
    uint64_t src_offset = 0;
    for (;;) {
        if (run == count[last]) {
            memcpy(dst, src + src_offset * elem_size, run * elem_size);
            dst += run * elem_size;
            index[last] = count[last] - 1;
            src_offset += (count[last] - 1) * stride[last];
        } else {
            memcpy(dst, src + src_offset * elem_size, elem_size);
            dst += elem_size;
        }
        /* Odometer increment, keeping src_offset in step. */
        int d = last;
        while (d >= 0) {
            if (++index[d] < count[d]) {
                src_offset += stride[d];
                break;
            }
            src_offset -= (count[d] - 1) * stride[d];
            index[d] = 0;
            d--;
        }
        if (d < 0) return;
    }
}

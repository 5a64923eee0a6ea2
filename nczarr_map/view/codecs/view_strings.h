/*
 * view_strings.h - Zarr string elements turned into the fixed-width UTF-8 char rows that netCDF-C 4.9.0
 * reads as NC_CHAR ("<U1", one byte per element).
 *
 * Sources: numpy "<U<n>"/">U<n>" elements (n UCS-4 code points, NUL-padded) and the numcodecs vlen-utf8 /
 * vlen-bytes encoding (u32 count, then per item a u32 byte length and the bytes; all little-endian).
 * Rows are NUL-padded to the presented width. Reentrant; no global state.
 */
#ifndef MMZIP_VIEW_STRINGS_H
#define MMZIP_VIEW_STRINGS_H

#include <stddef.h>
#include <stdint.h>

/* UTF-8 length of one UCS-4 element of width code points (trailing NULs are padding and not counted).
 * Code points that are not Unicode scalar values count as U+FFFD (3 bytes). */
size_t mzv_ucs4_utf8_length(const unsigned char *element, size_t width, int big_endian);

/* Writes the UTF-8 form of one UCS-4 element into row (row_width bytes, NUL-padded). Returns 0, or -1 if
 * it does not fit (the caller sized row_width with mzv_ucs4_utf8_length). */
int mzv_ucs4_to_row(const unsigned char *element, size_t width, int big_endian, unsigned char *row, size_t row_width);

/* A parsed vlen chunk: item i is bytes [offsets[i], offsets[i] + lengths[i]) of the chunk. */
typedef struct mzv_vlen_items {
    size_t count;
    size_t *offsets;
    uint32_t *lengths;
    size_t max_length;
} mzv_vlen_items;

/*
 * Parses a decoded vlen-utf8 / vlen-bytes chunk of exactly `expected` items. Returns 0 (free with
 * mzv_vlen_free), or -1 with a message in err (wrong count, lengths running past the end, trailing bytes).
 */
int mzv_vlen_parse(const unsigned char *data, size_t len, uint64_t expected, mzv_vlen_items *out, char *err,
                   size_t err_len);

void mzv_vlen_free(mzv_vlen_items *items);

#endif

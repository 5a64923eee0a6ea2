/*
 * view_convert.h - element conversions between numeric dtypes, with numpy's semantics.
 *
 * Used by the filters (delta, astype, quantize, fixedscaleoffset) and by the presentation of dtypes that
 * netCDF-C 4.9.0 reads wrong (big-endian, float16). Every conversion is the one numpy's astype() does on
 * x86-64, so values match what zarr-python returns bit for bit:
 *   - integer to integer wraps modulo 2^bits (two's complement);
 *   - integer to float rounds once, to nearest (a direct int64 -> float32 conversion, not via double);
 *   - float to float rounds to nearest; float16 widens exactly;
 *   - float to integer is refused by the callers (numpy's result is undefined out of range).
 * Reentrant; no global state.
 */
#ifndef MMZIP_VIEW_CONVERT_H
#define MMZIP_VIEW_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "view_zarr.h"

/* A numeric value loaded from an element: integers keep all 64 bits, floats stay in their own width. */
typedef struct mzv_number {
    enum { MZV_NUM_INT, MZV_NUM_UINT, MZV_NUM_FLOAT, MZV_NUM_DOUBLE } kind;
    union {
        int64_t i;
        uint64_t u;
        float f;
        double d;
    } v;
} mzv_number;

/* 1 if the dtype is BOOL, INT, UINT or FLOAT (the dtypes the numeric conversions handle). */
int mzv_dtype_is_numeric(const mzv_dtype *d);

/* Loads the element at p (of numeric dtype d, in its byte order). float16 loads as a float. */
mzv_number mzv_load_number(const mzv_dtype *d, const unsigned char *p);

/* Stores n into the element at p as numeric dtype d (in its byte order), numpy astype semantics.
 * Returns 0, or -1 for a float-to-integer conversion or a float16 target (not supported). */
int mzv_store_number(const mzv_dtype *d, unsigned char *p, mzv_number n);

/* The value as a double (for arithmetic in filters). */
double mzv_number_as_double(mzv_number n);

/* Reverses the bytes of count items of size bytes each, in place. */
void mzv_byteswap(unsigned char *p, size_t count, size_t size);

/* IEEE binary16 to binary32; exact for every value, NaN payloads and infinities included. */
float mzv_half_to_float(uint16_t h);

#endif

/*
 * byte_order.h - the dtype that netCDF-C 4.9.0 - 4.9.2 should have written for the bytes it writes.
 *
 * Those releases label a variable with a non-native byte order (nc_def_var_endian, CDL
 * `_Endianness = "big"`, netCDF4-python `endian='big'`, or `nccopy` of such a netCDF-4 variable) with a
 * big-endian dtype (">i4") in its .zarray, but copy the caller's native bytes into the chunks unswapped:
 * their swapping code (libnczarr/zwalk.c, transfern) is compiled out. Every Zarr reader then swaps the
 * bytes and reads 16777216 for 1. 4.9.3 compiles it in and writes what it declares.
 *
 * The storage map therefore rewrites the byte-order character of the dtype of an array that such a
 * netCDF-C creates to the byte order of the machine, which is the order of the bytes it writes. The
 * archive then says "<i4" over little-endian bytes, and every reader (netCDF, zarr-python, xarray) reads
 * the true values; only the netCDF-level `_Endianness` preference is lost. Pure; thread-safe.
 */
#ifndef MZN_BYTE_ORDER_H
#define MZN_BYTE_ORDER_H

#include <stddef.h>

/* '<' on little-endian machines, '>' on big-endian ones. */
char mzn_native_order_char(void);

/*
 * If zarray (a .zarray document) declares a multi-byte number dtype ("<i4", ">f8", ">c16"...) whose byte
 * order is not the machine's, returns 1 and sets *out (malloc'ed) and *out_len to the document with the
 * machine's byte order; otherwise returns 0 (keep the bytes: not JSON, not such a dtype, already native).
 * Returns -1 if out of memory.
 */
int mzn_native_dtype(const void *zarray, size_t len, char **out, size_t *out_len);

/*
 * 1 if zarray (a .zarray document) declares a multi-byte number dtype in a byte order other than the
 * machine's: bytes that a 4.9.0 - 4.9.2 writer puts into its chunks would be wrong.
 */
int mzn_dtype_foreign_order(const void *zarray, size_t len);

#endif

/*
 * view_attrs.h - attributes (.zattrs) in the form netCDF-C 4.9.0 reads correctly.
 *
 * 4.9.0 types a JSON attribute by its value: string -> char, integer -> the smallest integer type,
 * real -> double, bool -> ubyte, dict -> its JSON text as char. It types a list by its FIRST element (so
 * [1, 1000] fails with NC_ERANGE and [1, 2.5] reads as bytes 1, 2), and it fails the whole open on lists
 * of strings, mixed lists, null and []. It also reads "_NCZARR_ATTR": {"types": {name: dtype}} in pure
 * Zarr, which lets the view state a type explicitly. The presented attributes therefore are:
 *
 *   string, integer, real, bool, dict        as they are (strings re-encoded as raw UTF-8)
 *   list of numbers                          as it is, typed by an _NCZARR_ATTR entry that fits every
 *                                            element ("<f8" if any is real)
 *   list of bools                            as it is (ubyte values)
 *   anything else (null, [], lists of        a char attribute holding the value's JSON text
 *   strings, mixed or nested lists, integers
 *   beyond 64 bits)
 *   _FillValue                               typed as the variable (or renamed _ZARR_FillValue, as JSON
 *                                            text, when it cannot be a fill value of that variable)
 *   _ARRAY_DIMENSIONS                        replaced by the view's dimension names
 *
 * Reentrant; no global state.
 */
#ifndef MMZIP_VIEW_ATTRS_H
#define MMZIP_VIEW_ATTRS_H

#include "json.h"

typedef struct mzv_attr_plan {
    const char *const *dim_names; /* array: the presented dimension names; NULL for a group */
    int rank;
    const char *fill_type;        /* numeric array: its presented dtype (types _FillValue); NULL otherwise */
    int char_variable;            /* the array is presented as char */
    const mzj_value *additions;   /* object: attributes the view adds when the archive has none of that name */
    const mzj_value *zarr_fill;   /* numeric array following xarray's convention: its Zarr fill_value, presented
                                   * as _FillValue (typed as the variable) when the archive has no _FillValue,
                                   * as xarray's Zarr reader does; NULL otherwise */
    int xarray_v3_fill;           /* Zarr v3 array: a string _FillValue of a floating variable is xarray's
                                   * encoding (its FillValueCoder: base64 of the little-endian float64), which
                                   * xarray's reader decodes and masks; shown decoded, as the number */
} mzv_attr_plan;

/* The presented .zattrs object for archive_attrs (NULL = no .zattrs in the archive). NULL on allocation
 * failure. */
mzj_value *mzv_attrs_present(const mzj_value *archive_attrs, const mzv_attr_plan *plan);

/* 1 if value needs no rewriting to be read correctly by 4.9.0 (and gets no explicit type). */
int mzv_attr_value_is_plain(const mzj_value *value);

#endif

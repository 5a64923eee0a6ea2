/*
 * view_zarr.h - the array model every format reader fills (mzv_zarray: shape, chunks, dtype, fill value,
 * chunk keys) and the numpy dtype strings that Zarr v2 and the numcodecs filters use. The readers of each
 * format (v2/, v3/) parse their documents into it.
 *
 * Everything here is a pure function of the JSON text; nothing reads the archive. Errors are returned as
 * -1 with a message in a caller-supplied buffer that names the problem (the caller adds file and entry).
 * Reentrant; no global state.
 */
#ifndef MMZIP_VIEW_ZARR_H
#define MMZIP_VIEW_ZARR_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

/* numpy allows 32 dimensions; netCDF allows more, but nothing real uses them. */
#define MZV_MAX_RANK 32

typedef enum mzv_dtype_class {
    MZV_DT_BOOL,      /* |b1 */
    MZV_DT_INT,       /* i1 i2 i4 i8 */
    MZV_DT_UINT,      /* u1 u2 u4 u8 */
    MZV_DT_FLOAT,     /* f2 f4 f8 */
    MZV_DT_COMPLEX,   /* c8 c16: two floats per element */
    MZV_DT_BYTES,     /* |S<n>: n bytes, NUL-padded */
    MZV_DT_UNICODE,   /* <U<n> >U<n>: n UCS-4 code points, NUL-padded */
    MZV_DT_OBJECT,    /* |O: Python objects, stored through an object codec (vlen-utf8, ...) */
    MZV_DT_DATETIME,  /* M8[unit]: int64 counts of unit since 1970-01-01 */
    MZV_DT_TIMEDELTA, /* m8[unit]: int64 counts of unit */
    MZV_DT_OPAQUE     /* V<n>, structured dtypes, f16/c32: fixed-size records we do not interpret */
} mzv_dtype_class;

typedef struct mzv_dtype {
    mzv_dtype_class cls;
    int big_endian;  /* '>' byte order (only meaningful for multi-byte items) */
    size_t itemsize; /* bytes per element in a decoded chunk; 0 for OBJECT */
    size_t width;    /* BYTES: bytes per element; UNICODE: code points per element */
    char unit[16];   /* DATETIME / TIMEDELTA unit, e.g. "ns", "D", "10s" */
} mzv_dtype;

/*
 * Parses a Zarr v2 dtype (a numpy type string such as "<f8", or a structured dtype list). Returns 0, or
 * -1 with a message in err.
 */
int mzv_dtype_parse(const mzj_value *dtype, mzv_dtype *out, char *err, size_t err_len);

/* Parses a plain numpy type string (no structured list), e.g. the "dtype" of a delta filter. */
int mzv_dtype_parse_string(const char *s, mzv_dtype *out, char *err, size_t err_len);

/* Zarr v3's sharding_indexed codec: known to the v3 reader only (v3/v3_read.h). */
struct mzv_sharding;

/* A parsed and validated array document (.zarray, or a v3 zarr.json). */
typedef struct mzv_zarray {
    int rank;
    uint64_t shape[MZV_MAX_RANK];
    uint64_t chunks[MZV_MAX_RANK];  /* the chunks netCDF reads (the inner chunks of a sharded array) */
    mzv_dtype dtype;
    int fortran_order;            /* "order": "F" (v2), or a v3 transpose that reverses the dimensions */
    int transposed;               /* v3 transpose by another permutation: see order */
    int order[MZV_MAX_RANK];      /* transposed: stored chunk dimension k is array dimension order[k] */
    char separator;               /* '.' or '/' */
    int format;                   /* 2 or 3 (zarr.json) */
    int key_prefix_c;             /* v3 "default" chunk key encoding: keys "c/0/1" ("c" for 0-d) */
    struct mzv_sharding *sharding; /* v3/: NULL unless the chunks are stored in shards (one malloc'ed block) */
    const mzj_value *fill_value;  /* into json; NULL when absent */
    const mzj_value *compressor;  /* into json; NULL for null / absent */
    const mzj_value *filters;     /* into json; an array, or NULL for null / absent / [] */
    const mzj_value *dtype_json;  /* into json: the dtype (v3: data_type) as written */
    mzj_value *json;              /* the whole document, owned */
} mzv_zarray;

/* Parses a list of non-negative integers (a shape or chunk shape, at most MZV_MAX_RANK long; `what` names it
 * in the message). Returns 0 and sets dims and *rank, or -1 with err. */
int mzv_parse_shape(const mzj_value *list, const char *what, uint64_t *dims, int *rank, char *err, size_t err_len);

void mzv_zarray_free(mzv_zarray *z);

/* Number of elements in one chunk (the product of chunks), or 0 if it overflows or a chunk length is 0. */
uint64_t mzv_chunk_elements(const mzv_zarray *z);

/* 1 if any dimension has length 0. */
int mzv_zarray_is_empty(const mzv_zarray *z);

#endif

/*
 * view_filters.h - the numcodecs filters whose decoding the view can reproduce exactly.
 *
 *   shuffle           byte unshuffle by elementsize (numcodecs' own Shuffle, not Blosc's)
 *   delta             cumulative sum; integers wrap as numpy's cumsum does; floats only without astype
 *   astype            numpy astype from encode_dtype to decode_dtype (no float -> integer)
 *   quantize          decoding is astype(astype -> dtype)
 *   fixedscaleoffset  enc / scale + offset in numpy's arithmetic, for a floating-point dtype
 *   bitround          decoding is the identity
 *   packbits          bit-unpacking of a bool array (first byte: number of padding bits)
 *   crc32, adler32    4-byte little-endian checksum prefix, verified and removed
 *   base64            standard base64, non-alphabet bytes skipped as Python's b64decode does
 * and, for the Zarr v3 pipelines (v3/), two bytes-to-bytes steps that numcodecs 0.11 does not have:
 *   crc32c            Zarr v3's crc32c codec: a 4-byte little-endian CRC-32C (Castagnoli) suffix, verified
 *                     and removed
 *   decompress        one of the compressors of view_compressors.h, as a step of the chain (gzip, zstd,
 *                     blosc in v3, where several bytes-to-bytes codecs may follow each other)
 *
 * Anything else (json2, msgpack2, pickle, categorize, zfpy, vlen-array, ...) is refused by
 * mzv_filter_parse with a message, so that the chunk is reported as an error rather than served raw.
 * Reentrant; no global state.
 */
#ifndef MMZIP_VIEW_FILTERS_H
#define MMZIP_VIEW_FILTERS_H

#include <stddef.h>
#include <stdint.h>

#include "view_compressors.h"
#include "json.h"
#include "view_zarr.h"

typedef enum mzv_filter_kind {
    MZV_FILTER_SHUFFLE,
    MZV_FILTER_DELTA,
    MZV_FILTER_ASTYPE,
    MZV_FILTER_QUANTIZE,
    MZV_FILTER_FIXEDSCALEOFFSET,
    MZV_FILTER_BITROUND,
    MZV_FILTER_PACKBITS,
    MZV_FILTER_CRC32,
    MZV_FILTER_ADLER32,
    MZV_FILTER_BASE64,
    MZV_FILTER_CRC32C,
    MZV_FILTER_DECOMPRESS
} mzv_filter_kind;

typedef struct mzv_filter {
    mzv_filter_kind kind;
    size_t elementsize;  /* shuffle */
    mzv_dtype decoded;   /* delta/quantize/fixedscaleoffset "dtype", astype "decode_dtype" */
    mzv_dtype encoded;   /* delta/quantize/fixedscaleoffset "astype", astype "encode_dtype" */
    double scale, offset; /* fixedscaleoffset */
    mzv_compressor compressor; /* decompress */
} mzv_filter;

/* Parses one filter configuration. Returns 0, or -1 with a message in err for an unknown or unsupported
 * filter or bad parameters. */
int mzv_filter_parse(const mzj_value *config, mzv_filter *out, char *err, size_t err_len);

/* The CRC-32C (Castagnoli, reflected, as iSCSI and Zarr v3 use it) of len bytes, continuing crc (0 to
 * start). */
uint32_t mzv_crc32c(uint32_t crc, const unsigned char *data, size_t len);

/* Decodes in into out (malloc'ed; the caller frees both). Returns 0, or -1 with a message in err. */
int mzv_filter_decode(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err,
                      size_t err_len);

#endif

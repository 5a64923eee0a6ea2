/*
 * view_compressors.h - decoders for the numcodecs compressors, framed exactly as numcodecs 0.11 frames
 * them, on Debian's C libraries:
 *
 *   blosc  a Blosc 1.x frame (16-byte header), libblosc
 *   zlib   a zlib stream (RFC 1950)                       gzip  one or more gzip members (RFC 1952), zlib
 *   bz2    one or more bzip2 streams, libbz2               lzma  .xz (format 1) or .lzma (format 2), liblzma
 *   zstd   one or more zstd frames, libzstd                lz4   4-byte little-endian decoded size + one LZ4
 *                                                                block (numcodecs' own framing), liblz4
 *
 * Every decoder refuses to produce more than `limit` bytes (decompression bombs, corrupt headers), checks
 * that the input is consumed as the format requires, and never returns partial output as a success.
 * Reentrant: no library global state is used (blosc through its _ctx API, one thread).
 */
#ifndef MMZIP_VIEW_COMPRESSORS_H
#define MMZIP_VIEW_COMPRESSORS_H

#include <stddef.h>

/* A malloc'ed byte buffer handed from one decoding step to the next. */
typedef struct mzv_bytes {
    unsigned char *data;
    size_t len;
} mzv_bytes;

typedef enum mzv_compressor {
    MZV_COMP_BLOSC,
    MZV_COMP_ZLIB,
    MZV_COMP_GZIP,
    MZV_COMP_BZ2,
    MZV_COMP_LZMA_XZ,
    MZV_COMP_LZMA_ALONE,
    MZV_COMP_ZSTD,
    MZV_COMP_LZ4
} mzv_compressor;

/*
 * Decodes len bytes at in into out->data (malloc'ed, owned by the caller on success). Returns 0, or -1
 * with a message in err naming the codec and the problem (out->data is NULL then).
 */
int mzv_decompress(mzv_compressor kind, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                   size_t err_len);

/* The numcodecs id of a compressor ("blosc", "zlib", ...). */
const char *mzv_compressor_name(mzv_compressor kind);

#endif

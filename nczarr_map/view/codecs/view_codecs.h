/*
 * view_codecs.h - the decoding pipeline of one array: compressor, then filters in reverse order. Each format's
 * reader builds it from its metadata (v2/v2_chain.c); running it is the same for all.
 *
 * Zarr v2 encodes a chunk by applying "filters" in list order and then the "compressor"; decoding runs the
 * other way. An object dtype's codec (vlen-utf8, vlen-bytes) is the first filter; the pipeline stops
 * before it and reports it, so that the caller turns the remaining bytes into strings itself.
 *
 * A pipeline that cannot be built (an unknown codec) is not an error of the metadata: the array is still
 * presented, and every chunk read fails with the message saved here - never raw bytes.
 * Reentrant; a built chain is read-only.
 */
#ifndef MMZIP_VIEW_CODECS_H
#define MMZIP_VIEW_CODECS_H

#include <stddef.h>

#include "view_compressors.h"
#include "view_filters.h"
#include "view_zarr.h"

typedef enum mzv_object_codec { MZV_OBJECT_NONE, MZV_OBJECT_VLEN_UTF8, MZV_OBJECT_VLEN_BYTES } mzv_object_codec;

typedef struct mzv_codec_chain {
    int has_compressor;
    mzv_compressor compressor;
    mzv_filter *filters;     /* in decoding order (the reverse of the .zarray list), object codec excluded */
    size_t filter_count;
    mzv_object_codec object_codec;
    char *unsupported;       /* non-NULL: why chunks of this array cannot be decoded */
} mzv_codec_chain;

void mzv_chain_free(mzv_codec_chain *c);

/* 1 if decoding is the identity (no compressor, no filters): stored chunks are the array's bytes. */
int mzv_chain_is_identity(const mzv_codec_chain *c);

/*
 * Decodes one stored chunk. limit bounds every intermediate and the final size. On success returns 0 and
 * *out holds the decoded bytes (malloc'ed, caller frees): the array's elements for fixed-size dtypes, or
 * the object codec's encoding for object dtypes. Returns -1 with a message in err otherwise.
 */
int mzv_chain_decode(const mzv_codec_chain *c, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len);

#endif

/*
 * view_codecs.h - the decoding pipeline of one array: a list of codec steps (codec.h) that each format's
 * reader builds from its metadata, through the codec table (codec_table.h): v2/v2_chain.c from the
 * .zarray's "compressor" and "filters", v3/v3_array.c from the zarr.json's "codecs". Running it is the same
 * for all.
 *
 * Zarr v2 encodes a chunk by applying "filters" in list order and then the "compressor"; decoding runs the
 * other way, as it runs Zarr v3's bytes-to-bytes codecs backwards. An object dtype's codec (vlen-utf8,
 * vlen-bytes) is the last to decode; the pipeline stops before it and reports it, so that the caller turns
 * the remaining bytes into strings itself (view_strings.h).
 *
 * A pipeline that cannot be built (an unknown codec) is not an error of the metadata: the array is still
 * presented, and every chunk read fails with the message saved here - never raw bytes.
 * Reentrant; a built chain is read-only.
 */
#ifndef MMZIP_VIEW_CODECS_H
#define MMZIP_VIEW_CODECS_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

typedef struct mzv_codec_chain {
    mzv_step *steps;         /* in decoding order, the object codec excluded */
    size_t step_count;
    mzv_object_codec object_codec;
    char *unsupported;       /* non-NULL: why chunks of this array cannot be decoded */
} mzv_codec_chain;

void mzv_chain_free(mzv_codec_chain *c);

/* Appends step to the decoding order. 0, or -1 when memory runs out. */
int mzv_chain_push(mzv_codec_chain *c, const mzv_step *step);

/* 1 if decoding is the identity (no steps): stored chunks are the array's bytes. */
int mzv_chain_is_identity(const mzv_codec_chain *c);

/*
 * Decodes one stored chunk. limit bounds every intermediate and the final size (and the stored size
 * itself, unless the first step is a compressor). On success returns 0 and *out holds the decoded bytes
 * (malloc'ed, caller frees): the array's elements for fixed-size dtypes, or the object codec's encoding for
 * object dtypes. Returns -1 with a message in err otherwise.
 */
int mzv_chain_decode(const mzv_codec_chain *c, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len);

/* Runs one step on len bytes at in (see mzv_codec.decode); out->data is NULL after a failure. */
int mzv_step_decode(const mzv_step *s, const void *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len);

/* Two codecs' arithmetic that the rest of the view uses outside a pipeline. */
/* The CRC-32C (Castagnoli, reflected, as iSCSI and Zarr v3 use it) of len bytes, continuing crc (0 to
 * start) (crc32c.c; v3 shard indexes). */
uint32_t mzv_crc32c(uint32_t crc, const unsigned char *data, size_t len);
/* Standard base64 as Python's b64decode reads it (base64.c; Zarr v2 fill values of fixed-width bytes).
 * 0 with out malloc'ed, or -1 with err. */
int mzv_base64_decode(const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err, size_t err_len);

#endif

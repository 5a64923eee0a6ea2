/*
 * v2_read.h - the Zarr v2 reader of the compatibility view: .zarray, .zattrs and .zgroup documents parsed
 * into the view's array model (view_zarr.h) and codec pipeline (view_codecs.h, its codecs found in
 * codec_table.h by their numcodecs id), and where the chunks of a v2 array are stored (v2_chunks.c).
 *
 * Parsing is a pure function of the JSON text; mzv_v2_read is the only part that reads the archive.
 * Errors are -1 with a message in a caller-supplied buffer (the caller adds file and entry), or a netCDF
 * error code for mzv_v2_read (which reports through mzv_fail).
 */
#ifndef MMZIP_VIEW_V2_READ_H
#define MMZIP_VIEW_V2_READ_H

#include <stddef.h>
#include <stdint.h>

#include "view_codecs.h"
#include "view_zarr.h"

typedef struct mzv_view mzv_view;

/*
 * Parses the text of a .zarray. Checks: zarr_format 2; shape and chunks lists of non-negative integers of
 * equal length (at most MZV_MAX_RANK); a chunk length of 0 only where the shape is 0 (DataAxesFormats'
 * empty arrays); a known dtype; order "C" or "F"; separator "." or "/"; compressor an object or null;
 * filters a list of objects or null. Returns 0 (caller frees with mzv_zarray_free), or -1 with err.
 */
int mzv_zarray_parse(const char *text, size_t len, mzv_zarray *out, char *err, size_t err_len);

/* Parses one entry of a .zarray's "filters" (not the object codec) into a step of the pipeline: its id
 * looked up among the table's filters (codec_table.h), its parameters read. 0, or -1 with a message in err
 * naming the filter (unknown, a compressor, or parameters that cannot be decoded exactly). */
int mzv_v2_filter_parse(const mzj_value *config, mzv_step *out, char *err, size_t err_len);

/* Builds the chain of z. Returns 0 (unsupported codecs are recorded in out->unsupported, not returned as
 * errors), or -1 only when memory runs out. */
int mzv_chain_build(const mzv_zarray *z, mzv_codec_chain *out);

/* The key, relative to the array, of the object holding the chunk at grid index (v2_chunks.c): "0.1" or
 * "0/1" by the array's separator, "0" for a 0-d array. out has room for MZV_MAX_RANK * 21 + 4 bytes. */
void mzv_v2_chunk_key(const mzv_zarray *z, const uint64_t *index, char *out, size_t size);
/* 1 if key (relative to the array) has the form of a chunk key of z: z->rank decimal indices joined by its
 * separator ("0" for 0-d), whatever their range. */
int mzv_v2_is_chunk_key(const mzv_zarray *z, const char *key);

/*
 * Reads every .zarray, .zattrs and .zgroup under the view's dataset prefix into v->arrays (sorted by path,
 * chains built) and v->groups (sorted by path). Returns 0, NC_ENOMEM, or NC_ENCZARR when a document is not
 * valid JSON / Zarr v2 (the message names the entry).
 */
int mzv_v2_read(mzv_view *v);

#endif

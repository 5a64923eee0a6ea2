/*
 * v3_read.h - the Zarr v3 reader of the compatibility view: zarr.json documents (groups and arrays, or the
 * inline consolidated metadata of the root) parsed into the view's array model (view_zarr.h) and codec
 * pipeline (view_codecs.h), and where the chunks of a v3 array are stored: its chunk key encoding and the
 * shards of the sharding_indexed codec (v3_chunks.c). Nothing outside v3/ knows sharding.
 *
 * What is translated, and how, is listed in docs/compat-view.md (section "Zarr v3"). In short: the data
 * types that map onto a numpy dtype the view already presents (bool, int*, uint*, float16/32/64,
 * complex64/128, string, bytes, r<bits>, numpy.datetime64/timedelta64), the regular chunk grid, the
 * "default" and "v2" chunk key encodings, the codecs bytes, transpose, gzip, zstd, blosc, crc32c,
 * vlen-utf8, vlen-bytes and sharding_indexed (one level, inner codecs from that list).
 *
 * Parsing is a pure function of the JSON value; mzv_v3_read is the only part that reads the archive.
 * A document the view cannot model (unknown data type or chunk grid, a storage transformer, an extension
 * that must be understood) fails the open with NC_ENCZARR and a message naming the entry, as a bad v2
 * .zarray does. A codec that cannot be decoded only breaks the array's chunks (every read fails with a
 * message naming the array and the codec), as for v2.
 */
#ifndef MMZIP_VIEW_V3_READ_H
#define MMZIP_VIEW_V3_READ_H

#include <stddef.h>
#include <stdint.h>

#include "view_codecs.h"
#include "view_zarr.h"

typedef struct mzv_view mzv_view;

/*
 * Parses the array document doc (a zarr.json object with node_type "array"; borrowed, not modified) into
 * out (which owns a copy of it, with fill_value normalised to the JSON spelling the v2 code reads) and its
 * codec pipeline into chain. Returns 0 (free both), or -1 with a message in err (out and chain are then
 * empty). Unsupported codecs are recorded in chain->unsupported, not returned as errors.
 */
int mzv_v3_array_parse(const mzj_value *doc, mzv_zarray *out, mzv_codec_chain *chain, char *err, size_t err_len);

/* Zarr v3's sharding_indexed codec: each stored object (shard) holds a grid of inner chunks and an index
 * of (offset, nbytes) little- or big-endian u64 pairs, 2^64-1 twice for an empty inner chunk. The array's
 * chunks (mzv_zarray.chunks) are the inner chunks; the shard's shape is here. */
typedef struct mzv_sharding {
    uint64_t shard_shape[MZV_MAX_RANK]; /* elements per shard */
    int index_at_start;                 /* index_location "start" (default "end") */
    int index_big_endian;               /* the index's bytes codec */
    int index_crc32c;                   /* the index ends with a CRC-32C of its pairs */
} mzv_sharding;

/*
 * Finds inner chunk `inner` (indices within the shard) in a shard of len bytes. Returns 0 with *chunk and
 * *chunk_len pointing into shard, 1 if the inner chunk is empty (fill value), or -1 with a message in err
 * (a short shard, an index checksum mismatch, a range outside the shard).
 */
int mzv_shard_locate(const mzv_zarray *z, const unsigned char *shard, size_t len, const uint64_t *inner,
                     const unsigned char **chunk, size_t *chunk_len, char *err, size_t err_len);

/* Where a chunk of a v3 array is stored (v3_chunks.c). index is the chunk's position in the grid of the
 * chunks netCDF reads (the inner chunks, for a sharded array). */
/* The key, relative to the array, of the object holding the chunk: "c/0/1" ("c" for 0-d) with the default
 * encoding, "0.1" ("0") with the v2 one, each with its separator; for a sharded array, the key of its shard.
 * out has room for MZV_MAX_RANK * 21 + 4 bytes. */
void mzv_v3_chunk_key(const mzv_zarray *z, const uint64_t *index, char *out, size_t size);
/* The stored bytes of the chunk within the object (len bytes) that holds it: the object itself, or the
 * inner chunk's range of the shard. 0 with *chunk and *chunk_len pointing into object, 1 if the inner
 * chunk is empty (fill value), or -1 with a message in err. */
int mzv_v3_chunk_in_object(const mzv_zarray *z, const unsigned char *object, size_t len, const uint64_t *index,
                           const unsigned char **chunk, size_t *chunk_len, char *err, size_t err_len);
/* 1 if the chunks are stored as Zarr v2 stores them: one object per chunk under the v2 key ("0.1", the v2
 * chunk key encoding), no shards. */
int mzv_v3_chunks_stored_as_v2(const mzv_zarray *z);

/* 1 if the dataset under the view's prefix is Zarr v3 (it has a root zarr.json). */
int mzv_v3_detect(mzv_view *v);

/*
 * Reads the dataset's zarr.json documents into v->arrays (sorted, chains built) and v->groups (sorted): the
 * root's inline consolidated metadata when it has one (as zarr-python does: the consolidated listing is the
 * hierarchy), otherwise every zarr.json under the prefix. Returns 0, NC_ENOMEM, or NC_ENCZARR with a
 * message naming the entry.
 */
int mzv_v3_read(mzv_view *v);

#endif

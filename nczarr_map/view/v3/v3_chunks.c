/* v3_chunks.c - where the chunks of a Zarr v3 array are stored (see v3_read.h): the object key of each
 * chunk encoding, and the inner chunks of Zarr v3's sharding_indexed codec within their shard.
 *
 * A shard's index is a C-order grid of (offset, nbytes) u64 pairs, one per inner chunk, encoded by the
 * index codecs (bytes, optionally crc32c: a CRC-32C of the pairs follows them), at the start or the end of
 * the shard. Both fields 2^64-1 mark an empty inner chunk. Chunks may be stored in any order, with gaps. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "v3_read.h"
#include "view_codecs.h"

/* Inner chunks per shard along each dimension (shard_shape / chunks). */
static void shard_grid(const mzv_zarray *z, uint64_t *per_shard) {
    for (int i = 0; i < z->rank; i++)
        per_shard[i] = z->chunks[i] ? z->sharding->shard_shape[i] / z->chunks[i] : 1;
}

static uint64_t read_u64(const unsigned char *p, int big_endian) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[big_endian ? 7 - i : i] << (8 * i);
    return v;
}

int mzv_shard_locate(const mzv_zarray *z, const unsigned char *shard, size_t len, const uint64_t *inner,
                     const unsigned char **chunk, size_t *chunk_len, char *err, size_t err_len) {
    const mzv_sharding *sh = z->sharding;
    uint64_t per[MZV_MAX_RANK], count = 1, linear = 0;
    shard_grid(z, per);
    for (int i = 0; i < z->rank; i++) {
        if (inner[i] >= per[i]) {
            snprintf(err, err_len, "sharding_indexed: inner chunk index out of the shard");
            return -1;
        }
        if (per[i] && count > UINT64_MAX / per[i]) {
            snprintf(err, err_len, "sharding_indexed: more inner chunks per shard than an index can hold");
            return -1;
        }
        linear = linear * per[i] + inner[i];
        count *= per[i];
    }
    if (count > (SIZE_MAX - 4) / 16 || len < 16 * count + (sh->index_crc32c ? 4 : 0)) {
        snprintf(err, err_len, "sharding_indexed: the shard (%zu bytes) is shorter than its index", len);
        return -1;
    }
    size_t pairs = (size_t)(16 * count), index_len = pairs + (sh->index_crc32c ? 4 : 0);
    const unsigned char *index = sh->index_at_start ? shard : shard + len - index_len;
    if (sh->index_crc32c) {
        const unsigned char *s = index + pairs;
        uint32_t want = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
        if (mzv_crc32c(0, index, pairs) != want) {
            snprintf(err, err_len, "sharding_indexed: index crc32c mismatch (corrupt shard)");
            return -1;
        }
    }
    uint64_t offset = read_u64(index + 16 * linear, sh->index_big_endian);
    uint64_t nbytes = read_u64(index + 16 * linear + 8, sh->index_big_endian);
    if (offset == UINT64_MAX && nbytes == UINT64_MAX) return 1;
    if (offset > len || nbytes > len - offset) {
        snprintf(err, err_len, "sharding_indexed: inner chunk at bytes %llu+%llu outside the %zu-byte shard",
                 (unsigned long long)offset, (unsigned long long)nbytes, len);
        return -1;
    }
    *chunk = shard + offset;
    *chunk_len = (size_t)nbytes;
    return 0;
}

void mzv_v3_chunk_key(const mzv_zarray *z, const uint64_t *index, char *out, size_t size) {
    uint64_t per[MZV_MAX_RANK];
    size_t n = 0;
    if (z->sharding) shard_grid(z, per);
    if (z->key_prefix_c) n = (size_t)snprintf(out, size, "c");
    if (z->rank == 0) {
        if (!z->key_prefix_c) snprintf(out, size, "0");
        return;
    }
    for (int i = 0; i < z->rank && n < size; i++) {
        uint64_t at = z->sharding ? index[i] / per[i] : index[i];
        n += (size_t)snprintf(out + n, size - n, "%s%" PRIu64, i || z->key_prefix_c ? (char[]){z->separator, 0} : "",
                              at);
    }
}

int mzv_v3_chunk_in_object(const mzv_zarray *z, const unsigned char *object, size_t len, const uint64_t *index,
                           const unsigned char **chunk, size_t *chunk_len, char *err, size_t err_len) {
    if (!z->sharding) {
        *chunk = object;
        *chunk_len = len;
        return 0;
    }
    uint64_t per[MZV_MAX_RANK], inner[MZV_MAX_RANK];
    shard_grid(z, per);
    for (int i = 0; i < z->rank; i++) inner[i] = index[i] % per[i];
    return mzv_shard_locate(z, object, len, inner, chunk, chunk_len, err, err_len);
}

int mzv_v3_chunks_stored_as_v2(const mzv_zarray *z) { return !z->key_prefix_c && !z->sharding; }

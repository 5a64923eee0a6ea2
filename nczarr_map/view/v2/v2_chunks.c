/* v2_chunks.c - where the chunks of a Zarr v2 array are stored (see v2_read.h): one object per chunk, under
 * its grid indices joined by the dimension separator ("0.1", "0/1"), "0" for a 0-d array. */
#include <inttypes.h>
#include <stdio.h>

#include "v2_read.h"

void mzv_v2_chunk_key(const mzv_zarray *z, const uint64_t *index, char *out, size_t size) {
    size_t n = 0;
    if (z->rank == 0) {
        snprintf(out, size, "0");
        return;
    }
    for (int i = 0; i < z->rank && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%" PRIu64, i ? (char[]){z->separator, 0} : "", index[i]);
}

int mzv_v2_is_chunk_key(const mzv_zarray *z, const char *key) {
    int parts = 0;
    for (;;) {
        if (*key < '0' || *key > '9') return 0;
        while (*key >= '0' && *key <= '9') key++;
        parts++;
        if (!*key) break;
        if (*key != z->separator) return 0;
        key++;
    }
    return parts == (z->rank ? z->rank : 1);
}

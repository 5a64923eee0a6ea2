/* blosc.c - numcodecs' Blosc and Zarr v3's blosc codec: a Blosc 1.x frame (16-byte header), decoded with
 * libblosc (codec.h). The frame says how it was compressed, so the configuration does not matter here. */
#include <blosc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

MZV_CODEC_DECODER(mzv_blosc_decode);

int mzv_blosc_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                     size_t err_len) {
    /* numcodecs decodes the frame its header describes and ignores bytes after it (some writers pad chunk
     * files), so the frame is validated at the length the header gives, which must fit in the chunk. */
    size_t nbytes = 0, cbytes = 0, blocksize = 0;
    if (len < BLOSC_MIN_HEADER_LENGTH) return mzv_codec_fail(s, err, err_len, "not a valid Blosc frame (too short)");
    blosc_cbuffer_sizes(in, &nbytes, &cbytes, &blocksize);
    if (cbytes > len) return mzv_codec_fail(s, err, err_len, "truncated frame (its header says it is longer)");
    if (blosc_cbuffer_validate(in, cbytes, &nbytes) != 0)
        return mzv_codec_fail(s, err, err_len, "not a valid Blosc frame");
    if (nbytes > limit) return mzv_codec_fail(s, err, err_len, "decoded size exceeds the chunk size");
    out->data = malloc(nbytes ? nbytes : 1);
    if (!out->data) return mzv_codec_fail(s, err, err_len, "out of memory");
    if (nbytes) {
        int n = blosc_decompress_ctx(in, out->data, nbytes, 1);
        if (n < 0 || (size_t)n != nbytes) {
            free(out->data);
            out->data = NULL;
            return mzv_codec_fail(s, err, err_len, "corrupt frame, or a codec this libblosc was built without "
                                                   "(see blosc_list_compressors)");
        }
    }
    out->len = nbytes;
    return 0;
}

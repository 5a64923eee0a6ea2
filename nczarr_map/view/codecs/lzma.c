/* lzma.c - numcodecs' LZMA: format 1, .xz (the default), or format 2, .lzma ("alone"), decoded with
 * liblzma (codec.h). Format 3 (raw, with a filter list in the configuration) is refused. */
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

MZV_CODEC_CONFIGURE(mzv_lzma_configure);
MZV_CODEC_DECODER(mzv_lzma_decode);

static int fail(const mzv_step *s, char *err, size_t err_len, const char *problem) {
    return mzv_codec_failf(err, err_len, "%s (%s) decoding failed: %s", mzv_codec_label(s->codec),
                           s->variant == 2 ? "alone" : "xz", problem);
}

int mzv_lzma_configure(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len) {
    (void)format;
    int64_t f = 1;
    const mzj_value *v = mzj_get(config, "format");
    if (v && v->kind != MZJ_NULL && !mzj_as_int64(v, &f)) f = -1;
    if (f != 1 && f != 2)
        return mzv_codec_failf(err, err_len, "compressor %s: only formats 1 (xz) and 2 (alone) are decoded",
                               mzv_codec_label(s->codec));
    s->variant = (int)f;
    return 0;
}

int mzv_lzma_decode(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len) {
    lzma_stream ls = LZMA_STREAM_INIT;
    lzma_ret init = s->variant != 2 ? lzma_stream_decoder(&ls, UINT64_MAX, LZMA_CONCATENATED)
                                             : lzma_alone_decoder(&ls, UINT64_MAX);
    if (init != LZMA_OK) return fail(s, err, err_len, "decoder initialisation failed");
    mzv_grow_buf g = {NULL, 0, 0, limit};
    const char *why = NULL;
    ls.next_in = in;
    ls.avail_in = len;
    for (;;) {
        if (mzv_grow(&g) != 0) {
            why = "decoded size exceeds the limit";
            break;
        }
        ls.next_out = g.data + g.len;
        ls.avail_out = g.cap - g.len;
        size_t before = ls.avail_out;
        /* LZMA_FINISH once all input is given: lets the concatenated xz decoder end. */
        lzma_ret rc = lzma_code(&ls, LZMA_FINISH);
        g.len += before - ls.avail_out;
        if (rc == LZMA_STREAM_END) {
            if (ls.avail_in != 0) why = "data after the end of the stream";
            break;
        }
        if (rc == LZMA_BUF_ERROR && ls.avail_out != 0) {
            why = "truncated stream";
            break;
        }
        if (rc != LZMA_OK && rc != LZMA_BUF_ERROR) {
            why = rc == LZMA_FORMAT_ERROR ? "not in the expected format" : "corrupt stream";
            break;
        }
    }
    lzma_end(&ls);
    if (why || mzv_grow_finish(&g, out) != 0) {
        free(g.data);
        return fail(s, err, err_len, why ? why : "out of memory");
    }
    return 0;
}

/* base64.c - numcodecs' Base64 filter: standard base64, non-alphabet bytes skipped as Python's b64decode
 * does (codec.h). mzv_base64_decode also decodes Zarr v2's fill values of fixed-width bytes (view_chunks.c). */
#include <stdint.h>

#include "codec.h"
#include "view_codecs.h"

MZV_CODEC_DECODER(mzv_base64_step);

static int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int mzv_base64_decode(const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    size_t data = 0, pad = 0;
    for (size_t i = 0; i < len; i++) {
        if (base64_value(in[i]) >= 0) data++;
        else if (in[i] == '=') pad++;
    }
    if (data % 4 == 1 || (data % 4 && (data + pad) % 4))
        return mzv_codec_failf(err, err_len, "base64: incorrect padding");
    if (mzv_codec_alloc(out, data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0), limit, err, err_len) != 0) return -1;
    uint32_t acc = 0;
    size_t k = 0, o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = base64_value(in[i]);
        if (v < 0) continue;
        acc = acc << 6 | (uint32_t)v;
        if (++k % 4 == 0) {
            out->data[o++] = (unsigned char)(acc >> 16);
            out->data[o++] = (unsigned char)(acc >> 8);
            out->data[o++] = (unsigned char)acc;
            acc = 0;
        }
    }
    if (k % 4 == 2) out->data[o++] = (unsigned char)(acc >> 4);
    if (k % 4 == 3) {
        out->data[o++] = (unsigned char)(acc >> 10);
        out->data[o++] = (unsigned char)(acc >> 2);
    }
    return 0;
}

int mzv_base64_step(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                    size_t err_len) {
    (void)s;
    return mzv_base64_decode(in, len, limit, out, err, err_len);
}

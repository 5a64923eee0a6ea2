/* view_filters.c - exact decoders for numcodecs filters (see view_filters.h). */
#include "view_filters.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "view_convert.h"

static int failf(char *err, size_t err_len, const char *fmt, const char *a) {
    if (err && err_len) snprintf(err, err_len, fmt, a ? a : "");
    return -1;
}

static int dtype_field(const mzj_value *config, const char *key, mzv_dtype *out, char *err, size_t err_len) {
    const char *s = mzj_string(mzj_get(config, key));
    char sub[200];
    if (!s) return failf(err, err_len, "filter parameter \"%s\" missing or not a string", key);
    if (mzv_dtype_parse_string(s, out, sub, sizeof sub) != 0 || !mzv_dtype_is_numeric(out))
        return failf(err, err_len, "filter parameter has an unsupported dtype: %s", s);
    return 0;
}

static int is_float(const mzv_dtype *d) { return d->cls == MZV_DT_FLOAT; }

int mzv_filter_parse(const mzj_value *config, mzv_filter *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    const char *id = mzj_string(mzj_get(config, "id"));
    if (!id) return failf(err, err_len, "filter without an id", NULL);
    if (strcmp(id, "shuffle") == 0) {
        uint64_t es = 4; /* numcodecs' default */
        const mzj_value *v = mzj_get(config, "elementsize");
        if (v && (!mzj_as_uint64(v, &es) || es > 1024))
            return failf(err, err_len, "shuffle: bad elementsize", NULL);
        out->kind = MZV_FILTER_SHUFFLE;
        out->elementsize = (size_t)es;
        return 0;
    }
    if (strcmp(id, "delta") == 0 || strcmp(id, "quantize") == 0 || strcmp(id, "fixedscaleoffset") == 0) {
        out->kind = id[0] == 'd' ? MZV_FILTER_DELTA : id[0] == 'q' ? MZV_FILTER_QUANTIZE : MZV_FILTER_FIXEDSCALEOFFSET;
        if (dtype_field(config, "dtype", &out->decoded, err, err_len) != 0) return -1;
        if (mzj_get(config, "astype")) {
            if (dtype_field(config, "astype", &out->encoded, err, err_len) != 0) return -1;
        } else {
            out->encoded = out->decoded;
        }
        if (out->kind == MZV_FILTER_DELTA && (is_float(&out->decoded) || is_float(&out->encoded)) &&
            (out->decoded.itemsize != out->encoded.itemsize || out->decoded.cls != out->encoded.cls ||
             out->decoded.itemsize == 2))
            return failf(err, err_len, "delta: floating-point with a different astype is not decoded exactly", NULL);
        if (out->kind == MZV_FILTER_QUANTIZE &&
            (!is_float(&out->decoded) || !is_float(&out->encoded) || out->decoded.itemsize == 2))
            return failf(err, err_len, "quantize: only float32/float64 are supported", NULL);
        if (out->kind == MZV_FILTER_FIXEDSCALEOFFSET) {
            if (!is_float(&out->decoded) || out->decoded.itemsize == 2 ||
                (is_float(&out->encoded) && out->encoded.itemsize == 2))
                return failf(err, err_len, "fixedscaleoffset: only float32/float64 results are supported", NULL);
            if (!mzj_as_double(mzj_get(config, "scale"), &out->scale) ||
                !mzj_as_double(mzj_get(config, "offset"), &out->offset))
                return failf(err, err_len, "fixedscaleoffset: scale or offset missing", NULL);
        }
        return 0;
    }
    if (strcmp(id, "astype") == 0) {
        out->kind = MZV_FILTER_ASTYPE;
        if (dtype_field(config, "encode_dtype", &out->encoded, err, err_len) != 0 ||
            dtype_field(config, "decode_dtype", &out->decoded, err, err_len) != 0)
            return -1;
        if (is_float(&out->encoded) && !is_float(&out->decoded))
            return failf(err, err_len, "astype: float to integer is not decoded (numpy's result is undefined)", NULL);
        if (is_float(&out->decoded) && out->decoded.itemsize == 2)
            return failf(err, err_len, "astype: float16 results are not supported", NULL);
        return 0;
    }
    if (strcmp(id, "bitround") == 0) return out->kind = MZV_FILTER_BITROUND, 0;
    if (strcmp(id, "packbits") == 0) return out->kind = MZV_FILTER_PACKBITS, 0;
    if (strcmp(id, "crc32") == 0) return out->kind = MZV_FILTER_CRC32, 0;
    if (strcmp(id, "adler32") == 0) return out->kind = MZV_FILTER_ADLER32, 0;
    if (strcmp(id, "base64") == 0) return out->kind = MZV_FILTER_BASE64, 0;
    return failf(err, err_len, "filter \"%s\" cannot be decoded by the view", id);
}

static int alloc_out(mzv_bytes *out, size_t len, size_t limit, char *err, size_t err_len) {
    if (len > limit) return failf(err, err_len, "decoded size exceeds the limit", NULL);
    out->data = malloc(len ? len : 1);
    out->len = len;
    if (!out->data) return failf(err, err_len, "out of memory", NULL);
    return 0;
}

static int unshuffle(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    size_t es = f->elementsize;
    if (alloc_out(out, in->len, limit, err, err_len) != 0) return -1;
    if (es <= 1) {
        memcpy(out->data, in->data, in->len);
        return 0;
    }
    if (in->len % es) return failf(err, err_len, "shuffle: chunk length is not a multiple of elementsize", NULL);
    size_t count = in->len / es;
    for (size_t i = 0; i < count; i++)
        for (size_t b = 0; b < es; b++) out->data[i * es + b] = in->data[b * count + i];
    return 0;
}

static int delta(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    size_t esz = f->encoded.itemsize, dsz = f->decoded.itemsize;
    if (in->len % esz) return failf(err, err_len, "delta: chunk length is not a multiple of the encoded item size", NULL);
    size_t n = in->len / esz;
    if (n > SIZE_MAX / dsz || alloc_out(out, n * dsz, limit, err, err_len) != 0) return -1;
    if (is_float(&f->decoded)) {
        /* numpy's cumsum accumulates floats sequentially in their own precision. */
        float accf = 0;
        double accd = 0;
        for (size_t i = 0; i < n; i++) {
            mzv_number x = mzv_load_number(&f->encoded, in->data + i * esz), r;
            if (x.kind == MZV_NUM_FLOAT) accf += x.v.f, r.kind = MZV_NUM_FLOAT, r.v.f = accf;
            else accd += x.v.d, r.kind = MZV_NUM_DOUBLE, r.v.d = accd;
            mzv_store_number(&f->decoded, out->data + i * dsz, r);
        }
        return 0;
    }
    /* Integers: numpy accumulates in 64 bits and casts; modular arithmetic gives the same low bits. */
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        mzv_number x = mzv_load_number(&f->encoded, in->data + i * esz);
        acc += x.kind == MZV_NUM_INT ? (uint64_t)x.v.i : x.v.u;
        mzv_number r = {.kind = MZV_NUM_UINT, .v.u = acc};
        mzv_store_number(&f->decoded, out->data + i * dsz, r);
    }
    return 0;
}

static int convert_all(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err,
                       size_t err_len) {
    size_t esz = f->encoded.itemsize, dsz = f->decoded.itemsize;
    if (in->len % esz) return failf(err, err_len, "astype: chunk length is not a multiple of the encoded item size", NULL);
    size_t n = in->len / esz;
    if (n > SIZE_MAX / dsz || alloc_out(out, n * dsz, limit, err, err_len) != 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (mzv_store_number(&f->decoded, out->data + i * dsz, mzv_load_number(&f->encoded, in->data + i * esz)) != 0)
            return failf(err, err_len, "astype: unsupported conversion", NULL);
    return 0;
}

static int scale_offset(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err,
                        size_t err_len) {
    size_t esz = f->encoded.itemsize, dsz = f->decoded.itemsize;
    if (in->len % esz) return failf(err, err_len, "fixedscaleoffset: chunk length is not a multiple of the item size", NULL);
    size_t n = in->len / esz;
    if (n > SIZE_MAX / dsz || alloc_out(out, n * dsz, limit, err, err_len) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        mzv_number x = mzv_load_number(&f->encoded, in->data + i * esz), r;
        /* numpy 1.24 value-based casting: a float32 array stays float32 against Python scalars; integer
         * arrays divide in float64. */
        if (x.kind == MZV_NUM_FLOAT) {
            float q = x.v.f / (float)f->scale;
            r.kind = MZV_NUM_FLOAT, r.v.f = q + (float)f->offset;
        } else {
            double q = mzv_number_as_double(x) / f->scale;
            r.kind = MZV_NUM_DOUBLE, r.v.d = q + f->offset;
        }
        mzv_store_number(&f->decoded, out->data + i * dsz, r);
    }
    return 0;
}

static int unpack_bits(const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    if (in->len < 1) return failf(err, err_len, "packbits: empty chunk", NULL);
    size_t padding = in->data[0], bits = (in->len - 1) * 8;
    if (padding > 7 || padding > bits) return failf(err, err_len, "packbits: bad padding count", NULL);
    if (alloc_out(out, bits - padding, limit, err, err_len) != 0) return -1;
    for (size_t i = 0; i < bits - padding; i++) out->data[i] = (in->data[1 + i / 8] >> (7 - i % 8)) & 1;
    return 0;
}

static int checksum(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    const char *name = f->kind == MZV_FILTER_CRC32 ? "crc32" : "adler32";
    if (in->len < 4) return failf(err, err_len, "%s: chunk shorter than its checksum", name);
    uint32_t expect = (uint32_t)in->data[0] | (uint32_t)in->data[1] << 8 | (uint32_t)in->data[2] << 16 |
                      (uint32_t)in->data[3] << 24;
    const unsigned char *p = in->data + 4;
    size_t n = in->len - 4;
    uLong sum = f->kind == MZV_FILTER_CRC32 ? crc32(0L, Z_NULL, 0) : adler32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt step = n > (1u << 30) ? (1u << 30) : (uInt)n;
        sum = f->kind == MZV_FILTER_CRC32 ? crc32(sum, p, step) : adler32(sum, p, step);
        p += step;
        n -= step;
    }
    if ((uint32_t)sum != expect) return failf(err, err_len, "%s: checksum mismatch (corrupt chunk)", name);
    if (alloc_out(out, in->len - 4, limit, err, err_len) != 0) return -1;
    memcpy(out->data, in->data + 4, in->len - 4);
    return 0;
}

uint32_t mzv_crc32c(uint32_t crc, const unsigned char *data, size_t len) {
    uint32_t table[256]; /* built per call: 2 K steps, nothing next to decoding a chunk, and no global state */
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    crc = ~crc;
    for (size_t i = 0; i < len; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static int crc32c_suffix(const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    if (in->len < 4) return failf(err, err_len, "crc32c: chunk shorter than its checksum", NULL);
    size_t n = in->len - 4;
    const unsigned char *s = in->data + n;
    uint32_t expect = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
    if (mzv_crc32c(0, in->data, n) != expect) return failf(err, err_len, "crc32c: checksum mismatch (corrupt chunk)", NULL);
    if (alloc_out(out, n, limit, err, err_len) != 0) return -1;
    memcpy(out->data, in->data, n);
    return 0;
}

static int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static int base64(const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err, size_t err_len) {
    size_t data = 0, pad = 0;
    for (size_t i = 0; i < in->len; i++) {
        if (base64_value(in->data[i]) >= 0) data++;
        else if (in->data[i] == '=') pad++;
    }
    if (data % 4 == 1 || (data % 4 && (data + pad) % 4))
        return failf(err, err_len, "base64: incorrect padding", NULL);
    if (alloc_out(out, data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0), limit, err, err_len) != 0) return -1;
    uint32_t acc = 0;
    size_t k = 0, o = 0;
    for (size_t i = 0; i < in->len; i++) {
        int v = base64_value(in->data[i]);
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

int mzv_filter_decode(const mzv_filter *f, const mzv_bytes *in, size_t limit, mzv_bytes *out, char *err,
                      size_t err_len) {
    out->data = NULL;
    out->len = 0;
    int rc;
    switch (f->kind) {
    case MZV_FILTER_SHUFFLE: rc = unshuffle(f, in, limit, out, err, err_len); break;
    case MZV_FILTER_DELTA: rc = delta(f, in, limit, out, err, err_len); break;
    case MZV_FILTER_ASTYPE:
    case MZV_FILTER_QUANTIZE: rc = convert_all(f, in, limit, out, err, err_len); break;
    case MZV_FILTER_FIXEDSCALEOFFSET: rc = scale_offset(f, in, limit, out, err, err_len); break;
    case MZV_FILTER_BITROUND:
        rc = alloc_out(out, in->len, limit, err, err_len);
        if (rc == 0) memcpy(out->data, in->data, in->len);
        break;
    case MZV_FILTER_PACKBITS: rc = unpack_bits(in, limit, out, err, err_len); break;
    case MZV_FILTER_CRC32:
    case MZV_FILTER_ADLER32: rc = checksum(f, in, limit, out, err, err_len); break;
    case MZV_FILTER_BASE64: rc = base64(in, limit, out, err, err_len); break;
    case MZV_FILTER_CRC32C: rc = crc32c_suffix(in, limit, out, err, err_len); break;
    case MZV_FILTER_DECOMPRESS: rc = mzv_decompress(f->compressor, in->data, in->len, limit, out, err, err_len); break;
    default: rc = failf(err, err_len, "unknown filter", NULL); break;
    }
    if (rc != 0) {
        free(out->data);
        out->data = NULL;
        out->len = 0;
    }
    return rc;
}

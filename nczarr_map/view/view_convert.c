/* view_convert.c - numeric element conversions with numpy's semantics (see view_convert.h). */
#include "view_convert.h"

#include <string.h>

int mzv_dtype_is_numeric(const mzv_dtype *d) {
    return d->cls == MZV_DT_BOOL || d->cls == MZV_DT_INT || d->cls == MZV_DT_UINT || d->cls == MZV_DT_FLOAT;
}

void mzv_byteswap(unsigned char *p, size_t count, size_t size) {
    if (size < 2) return;
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

float mzv_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13); /* infinity, or NaN keeping its payload */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13); /* rebias 15 -> 127 */
    } else if (mant == 0) {
        bits = sign; /* signed zero */
    } else {
        /* Subnormal half: normalise the mantissa; every one is a normal float. */
        int shift = 0;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            shift++;
        }
        bits = sign | ((uint32_t)(113 - shift) << 23) | ((mant & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int host_is_big_endian(void) {
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 0;
}

/* Copies an element into a buffer in the host's byte order. */
static void load_native(const mzv_dtype *d, const unsigned char *p, unsigned char *out) {
    memcpy(out, p, d->itemsize);
    if (d->big_endian != host_is_big_endian()) mzv_byteswap(out, 1, d->itemsize);
}

static void store_native(const mzv_dtype *d, unsigned char *p, const unsigned char *in) {
    memcpy(p, in, d->itemsize);
    if (d->big_endian != host_is_big_endian()) mzv_byteswap(p, 1, d->itemsize);
}

mzv_number mzv_load_number(const mzv_dtype *d, const unsigned char *p) {
    unsigned char b[8];
    mzv_number n;
    load_native(d, p, b);
    switch (d->cls) {
    case MZV_DT_BOOL:
        n.kind = MZV_NUM_UINT;
        n.v.u = b[0] != 0;
        return n;
    case MZV_DT_INT:
        n.kind = MZV_NUM_INT;
        switch (d->itemsize) {
        case 1: n.v.i = (int8_t)b[0]; break;
        case 2: { int16_t x; memcpy(&x, b, 2); n.v.i = x; } break;
        case 4: { int32_t x; memcpy(&x, b, 4); n.v.i = x; } break;
        default: memcpy(&n.v.i, b, 8); break;
        }
        return n;
    case MZV_DT_UINT:
        n.kind = MZV_NUM_UINT;
        switch (d->itemsize) {
        case 1: n.v.u = b[0]; break;
        case 2: { uint16_t x; memcpy(&x, b, 2); n.v.u = x; } break;
        case 4: { uint32_t x; memcpy(&x, b, 4); n.v.u = x; } break;
        default: memcpy(&n.v.u, b, 8); break;
        }
        return n;
    default:
        if (d->itemsize == 2) {
            uint16_t h;
            memcpy(&h, b, 2);
            n.kind = MZV_NUM_FLOAT;
            n.v.f = mzv_half_to_float(h);
        } else if (d->itemsize == 4) {
            n.kind = MZV_NUM_FLOAT;
            memcpy(&n.v.f, b, 4);
        } else {
            n.kind = MZV_NUM_DOUBLE;
            memcpy(&n.v.d, b, 8);
        }
        return n;
    }
}

double mzv_number_as_double(mzv_number n) {
    switch (n.kind) {
    case MZV_NUM_INT: return (double)n.v.i;
    case MZV_NUM_UINT: return (double)n.v.u;
    case MZV_NUM_FLOAT: return n.v.f;
    default: return n.v.d;
    }
}

int mzv_store_number(const mzv_dtype *d, unsigned char *p, mzv_number n) {
    unsigned char b[8];
    int is_float_src = n.kind == MZV_NUM_FLOAT || n.kind == MZV_NUM_DOUBLE;
    if (d->cls == MZV_DT_FLOAT) {
        if (d->itemsize == 4) {
            float f;
            /* One rounding from the source type, as numpy does. */
            switch (n.kind) {
            case MZV_NUM_INT: f = (float)n.v.i; break;
            case MZV_NUM_UINT: f = (float)n.v.u; break;
            case MZV_NUM_FLOAT: f = n.v.f; break;
            default: f = (float)n.v.d; break;
            }
            memcpy(b, &f, 4);
        } else if (d->itemsize == 8) {
            double x = mzv_number_as_double(n);
            memcpy(b, &x, 8);
        } else {
            return -1;
        }
        store_native(d, p, b);
        return 0;
    }
    if (is_float_src) return -1;
    if (d->cls == MZV_DT_BOOL) {
        b[0] = n.kind == MZV_NUM_INT ? n.v.i != 0 : n.v.u != 0;
        store_native(d, p, b);
        return 0;
    }
    if (d->cls != MZV_DT_INT && d->cls != MZV_DT_UINT) return -1;
    /* Two's complement wrap: keep the low bytes of the 64-bit pattern. */
    uint64_t bits = n.kind == MZV_NUM_INT ? (uint64_t)n.v.i : n.v.u;
    switch (d->itemsize) {
    case 1: b[0] = (unsigned char)bits; break;
    case 2: { uint16_t x = (uint16_t)bits; memcpy(b, &x, 2); } break;
    case 4: { uint32_t x = (uint32_t)bits; memcpy(b, &x, 4); } break;
    default: memcpy(b, &bits, 8); break;
    }
    store_native(d, p, b);
    return 0;
}

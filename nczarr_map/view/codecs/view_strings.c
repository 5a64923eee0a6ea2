/* view_strings.c - UCS-4 and vlen string elements to fixed-width UTF-8 rows (see view_strings.h). */
#include "view_strings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t load_u32(const unsigned char *p, int big_endian) {
    if (big_endian) return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* numpy pads with NUL code points; a string cannot end in NUL, so every trailing NUL is padding. */
static size_t used_code_points(const unsigned char *element, size_t width, int big_endian) {
    while (width > 0 && load_u32(element + 4 * (width - 1), big_endian) == 0) width--;
    return width;
}

static size_t utf8_len(uint32_t cp) {
    if (cp < 0x80) return 1;
    if (cp < 0x800) return 2;
    if (cp < 0x10000) return 3;
    return 4;
}

static uint32_t scalar_value(uint32_t cp) {
    return (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) ? 0xFFFD : cp;
}

size_t mzv_ucs4_utf8_length(const unsigned char *element, size_t width, int big_endian) {
    size_t n = used_code_points(element, width, big_endian), total = 0;
    for (size_t i = 0; i < n; i++) total += utf8_len(scalar_value(load_u32(element + 4 * i, big_endian)));
    return total;
}

int mzv_ucs4_to_row(const unsigned char *element, size_t width, int big_endian, unsigned char *row, size_t row_width) {
    size_t n = used_code_points(element, width, big_endian), o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = scalar_value(load_u32(element + 4 * i, big_endian));
        size_t k = utf8_len(cp);
        if (o + k > row_width) return -1;
        switch (k) {
        case 1: row[o] = (unsigned char)cp; break;
        case 2:
            row[o] = (unsigned char)(0xC0 | cp >> 6);
            row[o + 1] = (unsigned char)(0x80 | (cp & 0x3F));
            break;
        case 3:
            row[o] = (unsigned char)(0xE0 | cp >> 12);
            row[o + 1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            row[o + 2] = (unsigned char)(0x80 | (cp & 0x3F));
            break;
        default:
            row[o] = (unsigned char)(0xF0 | cp >> 18);
            row[o + 1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            row[o + 2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            row[o + 3] = (unsigned char)(0x80 | (cp & 0x3F));
            break;
        }
        o += k;
    }
    memset(row + o, 0, row_width - o);
    return 0;
}

int mzv_vlen_parse(const unsigned char *data, size_t len, uint64_t expected, mzv_vlen_items *out, char *err,
                   size_t err_len) {
    memset(out, 0, sizeof *out);
    if (len < 4) {
        snprintf(err, err_len, "vlen chunk shorter than its 4-byte item count");
        return -1;
    }
    uint32_t count = load_u32(data, 0);
    if (count != expected) {
        snprintf(err, err_len, "vlen chunk holds %u items, the chunk shape needs %llu", count,
                 (unsigned long long)expected);
        return -1;
    }
    /* Every item needs at least its 4-byte length: a count the data cannot hold is corrupt, and checking
     * it first bounds the allocations below. */
    if ((uint64_t)count * 4 > len - 4) {
        snprintf(err, err_len, "vlen chunk too short for %u items", count);
        return -1;
    }
    out->offsets = malloc((count ? count : 1) * sizeof *out->offsets);
    out->lengths = malloc((count ? count : 1) * sizeof *out->lengths);
    if (!out->offsets || !out->lengths) {
        mzv_vlen_free(out);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    size_t pos = 4;
    for (uint32_t i = 0; i < count; i++) {
        if (len - pos < 4) goto truncated;
        uint32_t n = load_u32(data + pos, 0);
        pos += 4;
        if (len - pos < n) goto truncated;
        out->offsets[i] = pos;
        out->lengths[i] = n;
        if (n > out->max_length) out->max_length = n;
        pos += n;
    }
    if (pos != len) {
        snprintf(err, err_len, "vlen chunk has %zu bytes after its last item", len - pos);
        mzv_vlen_free(out);
        return -1;
    }
    out->count = count;
    return 0;
truncated:
    snprintf(err, err_len, "vlen chunk item runs past the end of the chunk");
    mzv_vlen_free(out);
    return -1;
}

void mzv_vlen_free(mzv_vlen_items *items) {
    free(items->offsets);
    free(items->lengths);
    memset(items, 0, sizeof *items);
}

/*
 * codec_table.c - the one table of the codecs the view decodes (see codec_table.h).
 *
 * To add a codec: write its file here in codecs/ (configure and decode, as codec.h describes; the files
 * beside it are the examples, and the build takes every .c of this folder), declare its functions below
 * with MZV_CODEC_DECODER / MZV_CODEC_CONFIGURE as its file does, and add its row; a codec in a file not
 * named after it says so at its row. Nothing else names codecs: the v2 reader (v2/v2_chain.c) and the v3
 * reader (v3/v3_array.c) look them up here by their full name.
 * The Zarr v3 codecs that lay out a chunk rather than transform its bytes (bytes, transpose,
 * sharding_indexed) are the v3 reader's, not rows here.
 */
#include <string.h>

#include "codec_table.h"

/* The codec files' functions (no header each: this table is their only user). */
MZV_CODEC_DECODER(mzv_blosc_decode);
MZV_CODEC_DECODER(mzv_zlib_decode);
MZV_CODEC_DECODER(mzv_gzip_decode);
MZV_CODEC_DECODER(mzv_bz2_decode);
MZV_CODEC_CONFIGURE(mzv_lzma_configure);
MZV_CODEC_DECODER(mzv_lzma_decode);
MZV_CODEC_DECODER(mzv_zstd_decode);
MZV_CODEC_DECODER(mzv_lz4_decode);
MZV_CODEC_CONFIGURE(mzv_shuffle_configure);
MZV_CODEC_DECODER(mzv_shuffle_decode);
MZV_CODEC_CONFIGURE(mzv_delta_configure);
MZV_CODEC_DECODER(mzv_delta_decode);
MZV_CODEC_CONFIGURE(mzv_astype_configure);
MZV_CODEC_CONFIGURE(mzv_quantize_configure);
MZV_CODEC_DECODER(mzv_astype_decode);
MZV_CODEC_CONFIGURE(mzv_fixedscaleoffset_configure);
MZV_CODEC_DECODER(mzv_fixedscaleoffset_decode);
MZV_CODEC_DECODER(mzv_bitround_decode);
MZV_CODEC_DECODER(mzv_packbits_decode);
MZV_CODEC_DECODER(mzv_crc32_decode);
MZV_CODEC_DECODER(mzv_adler32_decode);
MZV_CODEC_DECODER(mzv_base64_step);
MZV_CODEC_DECODER(mzv_crc32c_decode);

#define COMPRESSOR MZV_CODEC_COMPRESSOR, MZV_OBJECT_NONE
#define FILTER MZV_CODEC_FILTER, MZV_OBJECT_NONE
#define OBJECT(codec) MZV_CODEC_OBJECT, MZV_OBJECT_##codec

/* Rows: v2 id (numcodecs), v3 name, role, configure, decode; a codec whose file is not named after it has the
 * file at the end of its row. */
static const mzv_codec table[] = {
    /* Compressors: a v2 array's "compressor", bytes-to-bytes codecs in v3. */
    {"blosc",            "blosc",      COMPRESSOR,         NULL, mzv_blosc_decode},
    {"zlib",             NULL,         COMPRESSOR,         NULL, mzv_zlib_decode},
    {"gzip",             "gzip",       COMPRESSOR,         NULL, mzv_gzip_decode}, /* zlib.c */
    {"bz2",              NULL,         COMPRESSOR,         NULL, mzv_bz2_decode},
    {"lzma",             NULL,         COMPRESSOR,         mzv_lzma_configure, mzv_lzma_decode},
    {"zstd",             "zstd",       COMPRESSOR,         NULL, mzv_zstd_decode},
    {"lz4",              NULL,         COMPRESSOR,         NULL, mzv_lz4_decode},
    /* numcodecs filters: entries of a v2 array's "filters"; crc32c is a v3 bytes-to-bytes codec. */
    {"shuffle",          NULL,         FILTER,             mzv_shuffle_configure, mzv_shuffle_decode},
    {"delta",            NULL,         FILTER,             mzv_delta_configure, mzv_delta_decode},
    {"astype",           NULL,         FILTER,             mzv_astype_configure, mzv_astype_decode},
    {"quantize",         NULL,         FILTER,             mzv_quantize_configure, mzv_astype_decode}, /* astype.c */
    {"fixedscaleoffset", NULL,         FILTER,             mzv_fixedscaleoffset_configure, mzv_fixedscaleoffset_decode},
    {"bitround",         NULL,         FILTER,             NULL, mzv_bitround_decode},
    {"packbits",         NULL,         FILTER,             NULL, mzv_packbits_decode},
    {"crc32",            NULL,         FILTER,             NULL, mzv_crc32_decode}, /* checksum32.c */
    {"adler32",          NULL,         FILTER,             NULL, mzv_adler32_decode}, /* checksum32.c */
    {"base64",           NULL,         FILTER,             NULL, mzv_base64_step},
    {NULL,               "crc32c",     FILTER,             NULL, mzv_crc32c_decode},
    /* Object codecs: their items become strings in view_strings.c, not through a step. */
    {"vlen-utf8",        "vlen-utf8",  OBJECT(VLEN_UTF8),  NULL, NULL},
    {"vlen-bytes",       "vlen-bytes", OBJECT(VLEN_BYTES), NULL, NULL},
};

const mzv_codec *mzv_codec_find_v2(const char *name) {
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (table[i].v2_id && strcmp(table[i].v2_id, name) == 0) return &table[i];
    return NULL;
}

const mzv_codec *mzv_codec_find_v3(const char *name) {
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (table[i].v3_name && strcmp(table[i].v3_name, name) == 0) return &table[i];
    return NULL;
}

int mzv_codec_configure(const mzv_codec *c, const mzj_value *config, int format, mzv_step *out, char *err,
                        size_t err_len) {
    memset(out, 0, sizeof *out);
    out->codec = c;
    return c->configure ? c->configure(config, format, out, err, err_len) : 0;
}

size_t mzv_codec_count(void) { return sizeof table / sizeof table[0]; }

const mzv_codec *mzv_codec_at(size_t i) { return i < mzv_codec_count() ? &table[i] : NULL; }

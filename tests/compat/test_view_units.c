/*
 * test_view_units.c - unit tests of the compatibility view's parts (dtypes, codecs, filters, layouts,
 * strings, dimension names, attributes) and of the view itself over small archives written here. Its JSON
 * has a test of its own (test_view_json.c).
 * The end-to-end tests with zarr-python data and the netCDF tools are the Python tests beside this file.
 */
#define _GNU_SOURCE
#include <blosc.h>
#include <bzlib.h>
#include <lz4.h>
#include <lzma.h>
#include <math.h>
#include <netcdf.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "codec_table.h"
#include "nczarr_ctest.h"
#include "v2_read.h"
#include "v3_read.h"
#include "view_attrs.h"
#include "view_codecs.h"
#include "view_convert.h"
#include "view_dims.h"
#include "view_internal.h"
#include "json.h"
#include "view_layout.h"
#include "view_strings.h"
#include "view_zarr.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Dtypes and .zarray                                                                                     */

static void test_dtypes(void) {
    mzv_dtype d;
    char err[200];
    CHECK(mzv_dtype_parse_string(">i4", &d, err, sizeof err) == 0 && d.cls == MZV_DT_INT && d.big_endian && d.itemsize == 4);
    CHECK(mzv_dtype_parse_string("|b1", &d, err, sizeof err) == 0 && d.cls == MZV_DT_BOOL);
    CHECK(mzv_dtype_parse_string("<U7", &d, err, sizeof err) == 0 && d.cls == MZV_DT_UNICODE && d.itemsize == 28 && d.width == 7);
    CHECK(mzv_dtype_parse_string("|S3", &d, err, sizeof err) == 0 && d.cls == MZV_DT_BYTES && d.itemsize == 3);
    CHECK(mzv_dtype_parse_string("|O", &d, err, sizeof err) == 0 && d.cls == MZV_DT_OBJECT);
    CHECK(mzv_dtype_parse_string("<M8[ns]", &d, err, sizeof err) == 0 && d.cls == MZV_DT_DATETIME && !strcmp(d.unit, "ns"));
    CHECK(mzv_dtype_parse_string("<c16", &d, err, sizeof err) == 0 && d.cls == MZV_DT_COMPLEX && d.itemsize == 16);
    CHECK(mzv_dtype_parse_string("<f2", &d, err, sizeof err) == 0 && d.cls == MZV_DT_FLOAT && d.itemsize == 2);
    CHECK(mzv_dtype_parse_string("<f16", &d, err, sizeof err) == 0 && d.cls == MZV_DT_OPAQUE && d.itemsize == 16);
    CHECK(mzv_dtype_parse_string("<i3", &d, err, sizeof err) != 0);
    CHECK(mzv_dtype_parse_string("x", &d, err, sizeof err) != 0);
    mzj_value *rec;
    const char *structured = "[[\"a\", \"<i4\"], [\"b\", \"<f8\", [2, 3]], [\"c\", [[\"d\", \"|u1\"]]]]";
    CHECK(mzj_parse(structured, strlen(structured), &rec, err, sizeof err) == 0);
    CHECK(mzv_dtype_parse(rec, &d, err, sizeof err) == 0 && d.cls == MZV_DT_OPAQUE && d.itemsize == 4 + 48 + 1);
    mzj_free(rec);

    mzv_zarray z;
    const char *ok = "{\"zarr_format\": 2, \"shape\": [4, 0], \"chunks\": [2, 0], \"dtype\": \"<f8\", "
                     "\"order\": \"F\", \"fill_value\": \"NaN\", \"compressor\": null, \"filters\": null, "
                     "\"dimension_separator\": \"/\"}";
    CHECK(mzv_zarray_parse(ok, strlen(ok), &z, err, sizeof err) == 0);
    CHECK(z.rank == 2 && z.fortran_order && z.separator == '/' && mzv_zarray_is_empty(&z));
    /* Chunk location (v2_chunks.c): one object per chunk, keyed by its indices and the separator. */
    char key[MZV_MAX_RANK * 21 + 4];
    mzv_v2_chunk_key(&z, (const uint64_t[]){12, 0}, key, sizeof key);
    CHECK(strcmp(key, "12/0") == 0);
    CHECK(mzv_v2_is_chunk_key(&z, "12/0") && !mzv_v2_is_chunk_key(&z, "12.0") && !mzv_v2_is_chunk_key(&z, "1") &&
          !mzv_v2_is_chunk_key(&z, "1/2/3") && !mzv_v2_is_chunk_key(&z, "1/x"));
    z.rank = 0;
    mzv_v2_chunk_key(&z, NULL, key, sizeof key);
    CHECK(strcmp(key, "0") == 0 && mzv_v2_is_chunk_key(&z, "0") && !mzv_v2_is_chunk_key(&z, "0/0"));
    mzv_zarray_free(&z);
    const char *bad[] = {
        "{\"zarr_format\": 3, \"shape\": [], \"chunks\": [], \"dtype\": \"<f8\"}",
        "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [0], \"dtype\": \"<f8\"}",
        "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2, 2], \"dtype\": \"<f8\"}",
        "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<f8\", \"order\": \"X\"}",
        "{\"zarr_format\": 2, \"shape\": [-1], \"chunks\": [2], \"dtype\": \"<f8\"}",
        "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"|O\", \"filters\": null}",
        "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(mzv_zarray_parse(bad[i], strlen(bad[i]), &z, err, sizeof err) != 0);
        CHECK(err[0] != '\0');
    }
}

/* ---------------------------------------------------------------------------------------------------- */
/* Compressors                                                                                            */

static unsigned char sample[10000];

static void fill_sample(void) {
    for (size_t i = 0; i < sizeof sample; i++) sample[i] = (unsigned char)((i * 7) % 13 + (i / 100));
}

/* The step of the compressor with numcodecs id `id` and no parameters. */
static mzv_step compressor(const char *id) {
    mzv_step s;
    char err[200];
    const mzv_codec *c = mzv_codec_find_v2(id);
    CHECK(c && c->role == MZV_CODEC_COMPRESSOR && mzv_codec_configure(c, NULL, 2, &s, err, sizeof err) == 0);
    return s;
}

static void check_decodes(const char *id, const void *enc, size_t len, const char *what) {
    mzv_step s = compressor(id);
    mzv_bytes out;
    char err[200];
    int rc = mzv_step_decode(&s, enc, len, sizeof sample, &out, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s: %s\n", what, err);
    CHECK(rc == 0 && out.len == sizeof sample && memcmp(out.data, sample, sizeof sample) == 0);
    free(out.data);
    /* One byte short of the decoded size: refused, not truncated. */
    CHECK(mzv_step_decode(&s, enc, len, sizeof sample - 1, &out, err, sizeof err) != 0 && out.data == NULL);
    /* Truncated input: an error. */
    CHECK(mzv_step_decode(&s, enc, len / 2, sizeof sample, &out, err, sizeof err) != 0 && out.data == NULL);
}

static void test_compressors(void) {
    fill_sample();
    unsigned char enc[sizeof sample * 2 + 1024];
    uLongf zlen = sizeof enc;
    CHECK(compress2(enc, &zlen, sample, sizeof sample, 6) == Z_OK);
    check_decodes("zlib", enc, zlen, "zlib");

    /* gzip, written as two members (Python's GzipFile reads both). */
    size_t glen = 0;
    for (int member = 0; member < 2; member++) {
        z_stream zs = {0};
        CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
        zs.next_in = sample + member * 5000;
        zs.avail_in = 5000;
        zs.next_out = enc + glen;
        zs.avail_out = (uInt)(sizeof enc - glen);
        CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
        glen += zs.total_out;
        deflateEnd(&zs);
    }
    check_decodes("gzip", enc, glen, "gzip");

    unsigned int blen = sizeof enc;
    CHECK(BZ2_bzBuffToBuffCompress((char *)enc, &blen, (char *)sample, sizeof sample, 9, 0, 0) == BZ_OK);
    check_decodes("bz2", enc, blen, "bz2");

    size_t xlen = 0;
    CHECK(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, sample, sizeof sample, enc, &xlen, sizeof enc) == LZMA_OK);
    check_decodes("lzma", enc, xlen, "xz");

    size_t zs = ZSTD_compress(enc, sizeof enc, sample, sizeof sample, 3);
    CHECK(!ZSTD_isError(zs));
    check_decodes("zstd", enc, zs, "zstd");

    /* numcodecs' LZ4 framing: 4-byte little-endian size, then the block. */
    enc[0] = sizeof sample & 0xff, enc[1] = (sizeof sample >> 8) & 0xff, enc[2] = 0, enc[3] = 0;
    int l4 = LZ4_compress_default((const char *)sample, (char *)enc + 4, sizeof sample, (int)sizeof enc - 4);
    CHECK(l4 > 0);
    check_decodes("lz4", enc, (size_t)l4 + 4, "lz4");

    int bl = blosc_compress_ctx(5, 1, 4, sizeof sample, sample, enc, sizeof enc, "lz4", 0, 1);
    CHECK(bl > 0);
    check_decodes("blosc", enc, (size_t)bl, "blosc");

    mzv_bytes out;
    char err[200];
    mzv_step zl = compressor("zlib"), bs = compressor("blosc");
    CHECK(mzv_step_decode(&zl, "garbage!", 8, 100, &out, err, sizeof err) != 0 && strstr(err, "zlib decoding failed"));
    CHECK(mzv_step_decode(&bs, "garbage!garbage!garbage!", 24, 100, &out, err, sizeof err) != 0);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Filters                                                                                                */

static mzv_step filter(const char *json) {
    mzv_step f;
    mzj_value *v;
    char err[200];
    CHECK(mzj_parse(json, strlen(json), &v, err, sizeof err) == 0);
    int rc = mzv_v2_filter_parse(v, &f, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", json, err);
    CHECK(rc == 0);
    mzj_free(v);
    return f;
}

static int refused(const char *json) {
    mzv_step f;
    mzj_value *v;
    char err[200];
    CHECK(mzj_parse(json, strlen(json), &v, err, sizeof err) == 0);
    int rc = mzv_v2_filter_parse(v, &f, err, sizeof err);
    mzj_free(v);
    return rc != 0 && err[0];
}

static mzv_bytes run_filter(const char *json, const void *in, size_t len) {
    mzv_step f = filter(json);
    mzv_bytes out;
    char err[200];
    if (mzv_step_decode(&f, in, len, 1 << 20, &out, err, sizeof err) != 0) fprintf(stderr, "%s: %s\n", json, err);
    return out;
}

static void test_filters(void) {
    /* shuffle of two 4-byte elements 0x04030201, 0x08070605 */
    const unsigned char shuffled[] = {1, 5, 2, 6, 3, 7, 4, 8};
    mzv_bytes o = run_filter("{\"id\": \"shuffle\", \"elementsize\": 4}", shuffled, 8);
    const unsigned char plain[] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(o.len == 8 && memcmp(o.data, plain, 8) == 0);
    free(o.data);

    /* delta int16 <- int8 with wrap-around: 100, +2, +2 ... and -128 steps */
    const signed char deltas[] = {100, 2, 2, -128, -128};
    o = run_filter("{\"id\": \"delta\", \"dtype\": \"<i2\", \"astype\": \"|i1\"}", deltas, 5);
    int16_t want_delta[] = {100, 102, 104, -24, -152};
    CHECK(o.len == 10 && memcmp(o.data, want_delta, 10) == 0);
    free(o.data);

    /* astype: big-endian u2 -> f8 */
    const unsigned char be[] = {0x01, 0x00, 0xff, 0xff};
    o = run_filter("{\"id\": \"astype\", \"encode_dtype\": \">u2\", \"decode_dtype\": \"<f8\"}", be, 4);
    double want_as[] = {256.0, 65535.0};
    CHECK(o.len == 16 && memcmp(o.data, want_as, 16) == 0);
    free(o.data);

    /* fixedscaleoffset: u1 codes / 10 + 1000 in float64 */
    const unsigned char codes[] = {0, 5, 255};
    o = run_filter("{\"id\": \"fixedscaleoffset\", \"scale\": 10, \"offset\": 1000, \"dtype\": \"<f8\", \"astype\": \"|u1\"}", codes, 3);
    double want_fso[] = {1000.0, 1000.5, 1025.5};
    CHECK(o.len == 24 && memcmp(o.data, want_fso, 24) == 0);
    free(o.data);

    /* crc32 prefix: verified and stripped; a flipped byte is an error */
    unsigned char chk[9] = {0};
    uint32_t crc = (uint32_t)crc32(0, plain, 5);
    chk[0] = crc & 0xff, chk[1] = (crc >> 8) & 0xff, chk[2] = (crc >> 16) & 0xff, chk[3] = crc >> 24;
    memcpy(chk + 4, plain, 5);
    o = run_filter("{\"id\": \"crc32\"}", chk, 9);
    CHECK(o.len == 5 && memcmp(o.data, plain, 5) == 0);
    free(o.data);
    chk[6] ^= 1;
    mzv_step f = filter("{\"id\": \"crc32\"}");
    char err[200];
    CHECK(mzv_step_decode(&f, chk, 9, 100, &o, err, sizeof err) != 0 && strstr(err, "crc32: checksum mismatch"));

    /* packbits: 10 bools, 6 bits of padding */
    const unsigned char packed[] = {6, 0xA5, 0xC0};
    o = run_filter("{\"id\": \"packbits\"}", packed, 3);
    const unsigned char bits[] = {1, 0, 1, 0, 0, 1, 0, 1, 1, 1};
    CHECK(o.len == 10 && memcmp(o.data, bits, 10) == 0);
    free(o.data);

    o = run_filter("{\"id\": \"base64\"}", "aGVs\nbG8=", 9);
    CHECK(o.len == 5 && memcmp(o.data, "hello", 5) == 0);
    free(o.data);

    CHECK(refused("{\"id\": \"pickle\"}"));
    CHECK(refused("{\"id\": \"zfpy\"}"));
    CHECK(refused("{\"id\": \"astype\", \"encode_dtype\": \"<f8\", \"decode_dtype\": \"<i4\"}"));
    CHECK(refused("{\"id\": \"delta\", \"dtype\": \"<f8\", \"astype\": \"<f4\"}"));
}

/* ---------------------------------------------------------------------------------------------------- */
/* Conversions, layouts, strings                                                                          */

static void test_conversions(void) {
    CHECK(mzv_half_to_float(0x3C00) == 1.0f);
    CHECK(mzv_half_to_float(0xC000) == -2.0f);
    CHECK(mzv_half_to_float(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    CHECK(mzv_half_to_float(0x7BFF) == 65504.0f);
    CHECK(isinf(mzv_half_to_float(0xFC00)) && mzv_half_to_float(0xFC00) < 0);
    CHECK(isnan(mzv_half_to_float(0x7E00)));
    unsigned char sw[] = {1, 2, 3, 4, 5, 6, 7, 8};
    mzv_byteswap(sw, 2, 4);
    const unsigned char swapped[] = {4, 3, 2, 1, 8, 7, 6, 5};
    CHECK(memcmp(sw, swapped, 8) == 0);

    /* A 2x3 chunk in Fortran order (elements 0..5 numbered by C position). */
    const unsigned char f_order[] = {0, 3, 1, 4, 2, 5};
    unsigned char c[6];
    uint64_t shape[] = {2, 3};
    mzv_copy_block(c, f_order, 2, shape, shape, 1, 1);
    const unsigned char c_order[] = {0, 1, 2, 3, 4, 5};
    CHECK(memcmp(c, c_order, 6) == 0);
    /* Clamping a 4x4 C chunk to 2x3. */
    unsigned char big[16], cut[6];
    for (int i = 0; i < 16; i++) big[i] = (unsigned char)i;
    uint64_t chunk[] = {4, 4}, count[] = {2, 3};
    mzv_copy_block(cut, big, 2, chunk, count, 0, 1);
    const unsigned char want_cut[] = {0, 1, 2, 4, 5, 6};
    CHECK(memcmp(cut, want_cut, 6) == 0);
    CHECK(mzv_block_is_identity(2, shape, shape, 0));
    CHECK(!mzv_block_is_identity(2, shape, shape, 1));
    CHECK(!mzv_block_is_identity(2, chunk, count, 0));

    /* "<U3" element "aé" and its UTF-8 row */
    const unsigned char ucs4[] = {'a', 0, 0, 0, 0xE9, 0, 0, 0, 0, 0, 0, 0};
    CHECK(mzv_ucs4_utf8_length(ucs4, 3, 0) == 3);
    unsigned char row[5];
    CHECK(mzv_ucs4_to_row(ucs4, 3, 0, row, 5) == 0 && memcmp(row, "a\xc3\xa9\0\0", 5) == 0);
    CHECK(mzv_ucs4_to_row(ucs4, 3, 0, row, 2) != 0);

    /* vlen-utf8: count 2, "ab", "" */
    const unsigned char vlen[] = {2, 0, 0, 0, 2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0};
    mzv_vlen_items items;
    char err[200];
    CHECK(mzv_vlen_parse(vlen, sizeof vlen, 2, &items, err, sizeof err) == 0 && items.max_length == 2 &&
          items.lengths[1] == 0);
    mzv_vlen_free(&items);
    CHECK(mzv_vlen_parse(vlen, sizeof vlen, 3, &items, err, sizeof err) != 0);
    CHECK(mzv_vlen_parse(vlen, sizeof vlen - 1, 2, &items, err, sizeof err) != 0);
    const unsigned char hostile[] = {0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0};
    CHECK(mzv_vlen_parse(hostile, sizeof hostile, 0x7fffffff, &items, err, sizeof err) != 0);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Dimension names and attributes                                                                         */

static void test_dims(void) {
    mzv_dims *d = mzv_dims_new();
    CHECK_STR(mzv_dims_claim(d, "x", 6), "x");
    CHECK_STR(mzv_dims_claim(d, "x", 6), "x");
    CHECK_STR(mzv_dims_claim(d, "x", 4), "x_4");
    CHECK_STR(mzv_dims_claim(d, "x", 4), "x_4");
    CHECK_STR(mzv_dims_claim(d, "a/b", 2), "a_b");
    CHECK_STR(mzv_dims_claim(d, "", 9), "_zdim_9");
    mzv_dims_free(d);

    char names[MZV_MAX_RANK][MZV_DIM_NAME_MAX];
    CHECK(mzv_daf_dim_names("matrices/cell/gene/UMIs", 2, names) && !strcmp(names[0], "gene") && !strcmp(names[1], "cell"));
    CHECK(mzv_daf_dim_names("matrices/cell/gene/UMIs/colptr", 1, names) && !strcmp(names[0], "cell_gene_UMIs_colptr"));
    CHECK(mzv_daf_dim_names("matrices/cell/gene/UMIs/rowval", 1, names) && !strcmp(names[0], "cell_gene_UMIs_nnz"));
    CHECK(mzv_daf_dim_names("vectors/gene/marker/nzind", 1, names) && !strcmp(names[0], "gene_marker_nnz"));
    CHECK(mzv_daf_dim_names("vectors/cell/age", 1, names) && !strcmp(names[0], "cell"));
    CHECK(mzv_daf_dim_names("axes/cell", 1, names) && !strcmp(names[0], "cell"));
    CHECK(mzv_daf_dim_names("scalars/version", 1, names) && !strcmp(names[0], "_scalar_"));
    CHECK(!mzv_daf_dim_names("other/thing", 1, names));
    CHECK(!mzv_daf_dim_names("axes/cell", 2, names));
}

static void test_attrs(void) {
    const char *in = "{\"names\": [\"a\", \"b\"], \"none\": null, \"empty\": [], \"mixed\": [1, \"x\"], "
                     "\"ints\": [1, 1000], \"reals\": [1, 2.5], \"neg\": [-1, 200], \"flag\": true, "
                     "\"dict\": {\"k\": [\"v\"]}, \"s\": \"caf\\u00e9\", \"_FillValue\": -1, "
                     "\"_ARRAY_DIMENSIONS\": [\"old\"], \"huge\": 123456789012345678901234567890}";
    mzj_value *attrs, *extra = mzj_new_object();
    char err[200];
    CHECK(mzj_parse(in, strlen(in), &attrs, err, sizeof err) == 0);
    mzj_object_set(extra, "_Encoding", mzj_new_cstring("utf-8"));
    const char *dims[] = {"cell", "cell_strlen"};
    mzv_attr_plan plan = {dims, 2, "<f4", 0, extra, NULL, 0};
    mzj_value *out = mzv_attrs_present(attrs, &plan);
    char *text = mzj_to_text(out, NULL);
    CHECK_STR(text, "{\"names\": \"[\\\"a\\\", \\\"b\\\"]\", \"none\": \"null\", \"empty\": \"[]\", "
                    "\"mixed\": \"[1, \\\"x\\\"]\", \"ints\": [1, 1000], \"reals\": [1, 2.5], \"neg\": [-1, 200], "
                    "\"flag\": true, \"dict\": {\"k\": [\"v\"]}, \"s\": \"caf\xc3\xa9\", \"_FillValue\": -1, "
                    "\"huge\": \"123456789012345678901234567890\", "
                    "\"_ARRAY_DIMENSIONS\": [\"cell\", \"cell_strlen\"], \"_Encoding\": \"utf-8\", "
                    "\"_NCZARR_ATTR\": {\"types\": {\"ints\": \"<i2\", \"reals\": \"<f8\", \"neg\": \"<i2\", "
                    "\"_FillValue\": \"<f4\"}}}");
    free(text);
    mzj_free(out);
    mzj_free(attrs);
    mzj_free(extra);
}

/* ---------------------------------------------------------------------------------------------------- */
/* The view over small archives                                                                           */

static char archive_path[256];

static void put(mmzip_t *h, const char *key, const void *data, size_t len) {
    int st = mmzip_put(h, key, data, len, 0);
    if (st != MMZIP_OK) fprintf(stderr, "put %s: %s\n", key, mmzip_last_error());
    CHECK(st == MMZIP_OK);
}

static void put_text(mmzip_t *h, const char *key, const char *text) { put(h, key, text, strlen(text)); }

static const char *zarray(const char *shape, const char *chunks, const char *dtype, const char *extra) {
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"zarr_format\": 2, \"shape\": %s, \"chunks\": %s, \"dtype\": \"%s\", \"compressor\": null, "
             "\"fill_value\": 0, \"filters\": null, \"order\": \"C\"%s}",
             shape, chunks, dtype, extra ? extra : "");
    return buf;
}

/* Builds a small DataAxesFormats-like archive with the awkward cases, written by mmzip itself. */
static void build_archive(void) {
    snprintf(archive_path, sizeof archive_path, "/tmp/mmzip-view-units-%d.zarr.zip", (int)getpid());
    unlink(archive_path);
    mmzip_t *h;
    CHECK(mmzip_open(archive_path, "w", NULL, &h) == MMZIP_OK);
    put_text(h, ".zgroup", "{\"zarr_format\": 2}");
    put_text(h, ".zattrs", "{\"tags\": [\"x\", \"y\"]}");
    put_text(h, "daf/.zarray", zarray("[2]", "[2]", "|u1", NULL));
    put(h, "daf/0", "\1\0", 2);
    put_text(h, "axes/.zgroup", "{\"zarr_format\": 2}");
    /* axes/cell: vlen-utf8 "A", "BBB" */
    put_text(h, "axes/cell/.zarray",
             "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"|O\", \"compressor\": null, "
             "\"fill_value\": null, \"filters\": [{\"id\": \"vlen-utf8\"}], \"order\": \"C\"}");
    const unsigned char cells[] = {2, 0, 0, 0, 1, 0, 0, 0, 'A', 3, 0, 0, 0, 'B', 'B', 'B'};
    put(h, "axes/cell/0", cells, sizeof cells);
    put_text(h, "axes/gene/.zarray", zarray("[0]", "[0]", "|O", ", \"filters\": [{\"id\": \"vlen-utf8\"}]"));
    put(h, "axes/gene/0", "", 0);
    put_text(h, "vectors/.zgroup", "{\"zarr_format\": 2}");
    put_text(h, "vectors/cell/.zgroup", "{\"zarr_format\": 2}");
    put_text(h, "vectors/cell/big/.zarray", zarray("[2]", "[2]", ">i4", NULL));
    put(h, "vectors/cell/big/0", "\0\0\1\0\xff\xff\xff\xfe", 8);
    put_text(h, "vectors/cell/ok/.zarray", zarray("[2]", "[2]", "|b1", NULL));
    put(h, "vectors/cell/ok/0", "\1\0", 2);
    put_text(h, "vectors/cell/half/.zarray", zarray("[2]", "[5]", "<f2", NULL));
    put(h, "vectors/cell/half/0", "\x00\x3c\x00\xc0\x00\x00\x00\x00\x00\x00", 10);
    put_text(h, "matrices/.zgroup", "{\"zarr_format\": 2}");
    put_text(h, "matrices/cell/.zgroup", "{\"zarr_format\": 2}");
    put_text(h, "matrices/cell/cell/.zgroup", "{\"zarr_format\": 2}");
    put_text(h, "matrices/cell/cell/F/.zarray", zarray("[2, 2]", "[2, 2]", "<i2", NULL));
    put(h, "matrices/cell/cell/F/0.0", "\1\0\2\0\3\0\4\0", 8);
    put_text(h, "scalars/.zgroup", "{\"zarr_format\": 2}");
    put_text(h, "scalars/zero_d/.zarray", zarray("[]", "[]", "<f8", NULL));
    double pi = 3.25;
    put(h, "scalars/zero_d/0", &pi, 8);
    put_text(h, "scalars/label/.zarray", zarray("[1]", "[1]", "|S3", ", \"dimension_separator\": \"/\""));
    put(h, "scalars/label/0", "xyz", 3);
    put_text(h, "scalars/fortran/.zarray",
             "{\"zarr_format\": 2, \"shape\": [2, 3], \"chunks\": [2, 3], \"dtype\": \"|u1\", \"compressor\": "
             "{\"id\": \"zlib\", \"level\": 1}, \"fill_value\": 7, \"filters\": null, \"order\": \"F\"}");
    const unsigned char f_order[] = {0, 3, 1, 4, 2, 5};
    unsigned char z[64];
    uLongf zl = sizeof z;
    CHECK(compress2(z, &zl, f_order, 6, 1) == Z_OK);
    put(h, "scalars/fortran/0.0", z, zl);
    put_text(h, "scalars/secret/.zarray", zarray("[2]", "[2]", "<i4", ", \"filters\": [{\"id\": \"pickle\"}]"));
    put(h, "scalars/secret/0", "whatever", 8);
    CHECK(mmzip_close(h) == MMZIP_OK);
}

static int get(mzv_view *v, const char *key, const void **data, size_t *len) { return mzv_get(v, key, data, len); }

static char *get_text(mzv_view *v, const char *key) {
    const void *d;
    size_t n;
    if (get(v, key, &d, &n) != 1) return NULL;
    return strndup(d, n);
}

static void test_view(void) {
    build_archive();
    mmzip_t *h;
    CHECK(mmzip_open(archive_path, "r", NULL, &h) == MMZIP_OK);
    mzv_view *v;
    CHECK(mzv_open(h, "", 1, &v) == NC_NOERR);
    CHECK(mzv_active(v));
    char *s;
    const void *d;
    size_t n;

    CHECK_STR(s = get_text(v, "/.zgroup"), "{\"zarr_format\": 2}");
    free(s);
    CHECK_STR(s = get_text(v, "/.zattrs"), "{\"tags\": \"[\\\"x\\\", \\\"y\\\"]\"}");
    free(s);
    CHECK_STR(s = get_text(v, "/daf/.zattrs"), "{\"_ARRAY_DIMENSIONS\": [\"daf_version\"]}");
    free(s);
    /* vlen strings: char rows of the longest string, a trailing length dimension, keys gain ".0" */
    CHECK_STR(s = get_text(v, "/axes/cell/.zarray"),
              "{\"zarr_format\": 2, \"shape\": [2, 3], \"chunks\": [2, 3], \"dtype\": \"<U1\", \"fill_value\": null, "
              "\"order\": \"C\", \"compressor\": null, \"filters\": null, \"dimension_separator\": \".\"}");
    free(s);
    CHECK_STR(s = get_text(v, "/axes/cell/.zattrs"),
              "{\"_ARRAY_DIMENSIONS\": [\"cell\", \"cell_strlen\"], \"_ZARR_DTYPE\": \"|O\", \"_Encoding\": \"utf-8\"}");
    free(s);
    CHECK(get(v, "/axes/cell/0.0", &d, &n) == 1 && n == 6 && memcmp(d, "A\0\0BBB", 6) == 0);
    CHECK(get(v, "/axes/cell/0", &d, &n) == 0); /* not a presented chunk key */
    /* the empty axis: one element of fill, dimension named after the axis */
    CHECK_STR(s = get_text(v, "/axes/gene/.zarray"),
              "{\"zarr_format\": 2, \"shape\": [1, 1], \"chunks\": [1, 1], \"dtype\": \"<U1\", \"fill_value\": null, "
              "\"order\": \"C\", \"compressor\": null, \"filters\": null, \"dimension_separator\": \".\"}");
    free(s);
    CHECK_STR(s = get_text(v, "/axes/gene/.zattrs"),
              "{\"_ARRAY_DIMENSIONS\": [\"gene\", \"gene_strlen\"], \"_ZARR_DTYPE\": \"|O\", \"_Encoding\": \"utf-8\", "
              "\"_ZARR_SHAPE\": \"[0]\"}");
    free(s);
    CHECK(get(v, "/axes/gene/0.0", &d, &n) == 1 && n == 1 && ((const char *)d)[0] == 0);
    /* big-endian: swapped */
    int32_t want_big[] = {256, -2};
    CHECK(get(v, "/vectors/cell/big/0", &d, &n) == 1 && n == 8 && memcmp(d, want_big, 8) == 0);
    /* bool: same bytes, served by the map (0), presented as "<u1" */
    CHECK(get(v, "/vectors/cell/ok/0", &d, &n) == 0);
    CHECK((s = get_text(v, "/vectors/cell/ok/.zarray")) && strstr(s, "\"dtype\": \"<u1\""));
    free(s);
    /* float16 with chunks longer than the shape: widened, and cut to the shape */
    float want_half[] = {1.0f, -2.0f};
    CHECK(get(v, "/vectors/cell/half/0", &d, &n) == 1 && n == 8 && memcmp(d, want_half, 8) == 0);
    CHECK((s = get_text(v, "/vectors/cell/half/.zarray")) && strstr(s, "\"shape\": [2], \"chunks\": [2], \"dtype\": \"<f4\""));
    free(s);
    /* DataAxesFormats matrix dims are (columns axis, rows axis) */
    CHECK((s = get_text(v, "/matrices/cell/cell/F/.zattrs")) && strstr(s, "[\"cell\", \"cell\"]"));
    free(s);
    /* 0-d: shape [1] on the "_scalar_" dimension, the chunk served by the map */
    CHECK((s = get_text(v, "/scalars/zero_d/.zarray")) && strstr(s, "\"shape\": [1], \"chunks\": [1]"));
    free(s);
    CHECK((s = get_text(v, "/scalars/zero_d/.zattrs")) && strstr(s, "\"_ARRAY_DIMENSIONS\": [\"_scalar_\"]") &&
          strstr(s, "\"_ZARR_SHAPE\": \"[]\""));
    free(s);
    CHECK(get(v, "/scalars/zero_d/0", &d, &n) == 0);
    /* |S3 with "/" separators: renamed chunk key, bytes straight from the mapping */
    CHECK(get(v, "/scalars/label/0/0", &d, &n) == 1 && n == 3 && memcmp(d, "xyz", 3) == 0);
    /* zlib + Fortran order: decompressed and transposed */
    const unsigned char c_order[] = {0, 1, 2, 3, 4, 5};
    CHECK(get(v, "/scalars/fortran/0.0", &d, &n) == 1 && n == 6 && memcmp(d, c_order, 6) == 0);
    CHECK((s = get_text(v, "/scalars/fortran/.zarray")) && strstr(s, "\"fill_value\": 7") &&
          strstr(s, "\"compressor\": null"));
    free(s);
    /* an undecodable filter: the metadata is presented, every chunk read is an error naming the filter */
    CHECK(get(v, "/scalars/secret/.zarray", &d, &n) == 1);
    CHECK(get(v, "/scalars/secret/0", &d, &n) == NC_EFILTER && strstr(mzv_last_error(v), "pickle"));
    /* keys the view does not know */
    CHECK(get(v, "/nope/.zarray", &d, &n) == 0);
    CHECK(get(v, "/.nczarr", &d, &n) == 0);

    /* Writes: the presented form back is a no-op; anything else on a translated array is refused. */
    char *zarr = get_text(v, "/axes/cell/.zarray");
    CHECK(mzv_check_write(v, "/axes/cell/.zarray", zarr, strlen(zarr)) == 1);
    free(zarr);
    /* 4.9.0's own spelling of the same document, without _ARRAY_DIMENSIONS (sub-group variable) */
    const char *rewritten = "{\"zarr_format\": 2, \"shape\": [2, 3], \"dtype\": \"<U1\", \"chunks\": [2, 3], "
                            "\"fill_value\": null, \"order\": \"C\", \"compressor\": null, \"filters\": null}";
    CHECK(mzv_check_write(v, "/axes/cell/.zarray", rewritten, strlen(rewritten)) == 1);
    const char *attrs_back = "{\"_Encoding\": \"utf-8\", \"_ZARR_DTYPE\": \"|O\"}";
    CHECK(mzv_check_write(v, "/axes/cell/.zattrs", attrs_back, strlen(attrs_back)) == 1);
    /* a change to translated attributes: only that change, applied to the archive's (none here), is stored;
     * the view's _ZARR_DTYPE is not */
    const char *attrs_changed = "{\"_Encoding\": \"latin-1\", \"_ZARR_DTYPE\": \"|O\"}";
    size_t rn;
    const void *rd;
    CHECK(mzv_check_write(v, "/axes/cell/.zattrs", attrs_changed, strlen(attrs_changed)) == 2);
    CHECK((rd = mzv_replacement(v, &rn)) && rn == 24 && memcmp(rd, "{\"_Encoding\": \"latin-1\"}", 24) == 0);
    CHECK(mzv_check_write(v, "/axes/cell/0.0", "A\0\0BBB", 6) == 1);
    CHECK(mzv_check_write(v, "/axes/cell/0.0", "A\0\0BBC", 6) == NC_EPERM);
    CHECK(mzv_check_write(v, "/vectors/cell/big/0", want_big, 8) == 1);
    /* root attributes: the list of strings comes back as its JSON text (no-op), a real change is refused */
    const char *root_back = "{\"tags\": \"[\\\"x\\\", \\\"y\\\"]\"}";
    CHECK(mzv_check_write(v, "/.zattrs", root_back, strlen(root_back)) == 1);
    const char *root_changed = "{\"tags\": \"z\", \"n\": 1}";
    CHECK(mzv_check_write(v, "/.zattrs", root_changed, strlen(root_changed)) == 2);
    CHECK((rd = mzv_replacement(v, &rn)) && rn == strlen(root_changed) && memcmp(rd, root_changed, rn) == 0);
    CHECK(mzv_check_write(v, "/.zgroup", "{\"zarr_format\": 2}", 18) == 1);
    /* new objects are not the view's business */
    CHECK(mzv_check_write(v, "/newvar/.zarray", "{}", 2) == 0);
    CHECK(mzv_check_write(v, "/newvar/0", "x", 1) == 0);
    mzv_close(v);

    /* Switched off: nothing is translated. */
    CHECK(mzv_open(h, "", 0, &v) == NC_NOERR);
    CHECK(!mzv_active(v));
    CHECK(get(v, "/axes/cell/.zarray", &d, &n) == 0);
    CHECK(get(v, "/vectors/cell/big/0", &d, &n) == 0);
    CHECK(mzv_check_write(v, "/axes/cell/0.0", "x", 1) == 0);
    mzv_close(v);
    CHECK(mmzip_close(h) == MMZIP_OK);
    unlink(archive_path);
}

/* An untranslated array in a write session: genuine changes are stored, rewrites and fill chunks are not. */
static void test_untranslated_writes(void) {
    snprintf(archive_path, sizeof archive_path, "/tmp/mmzip-view-units-plain-%d.zarr.zip", (int)getpid());
    unlink(archive_path);
    mmzip_t *h;
    CHECK(mmzip_open(archive_path, "w", NULL, &h) == MMZIP_OK);
    put_text(h, ".zgroup", "{\"zarr_format\": 2}");
    put_text(h, "x/.zarray", zarray("[4]", "[2]", "<i4", NULL));
    put_text(h, "x/.zattrs", "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"scale\": 0.123456789}");
    int32_t first[] = {1, 2};
    put(h, "x/0", first, 8);
    /* An array with no fill value: netCDF-C (no_fill) reads a missing chunk as zeros, every release. */
    put_text(h, "y/.zarray", "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [2], \"dtype\": \"<i4\", "
                             "\"compressor\": null, \"fill_value\": null, \"filters\": null, \"order\": \"C\"}");
    put_text(h, "y/.zattrs", "{\"_ARRAY_DIMENSIONS\": [\"x\"]}");
    mzv_view *v;
    CHECK(mzv_open(h, "", 1, &v) == NC_NOERR);
    CHECK(!mzv_active(v));
    const void *d;
    size_t n;
    CHECK(get(v, "/x/0", &d, &n) == 0);
    CHECK(mzv_check_write(v, "/x/0", first, 8) == 1);
    int32_t zeros[] = {0, 0}, dflt[] = {NC_FILL_INT, NC_FILL_INT}, other[] = {5, 6};
    CHECK(mzv_check_write(v, "/x/1", zeros, 8) == 1); /* the fill_value (0) of a missing chunk, as 4.9.0 read it */
    CHECK(mzv_check_write(v, "/x/1", dflt, 8) == 0);  /* netCDF's default fill is data here: stored */
    CHECK(mzv_check_write(v, "/x/1", other, 8) == 0);
    CHECK(mzv_check_write(v, "/x/0", other, 8) == 0);
    /* 4.9.0 prints doubles with %lg: the same attributes, not a change */
    const char *lossy = "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"scale\": 0.123457, \"_FillValue\": 0}";
    CHECK(mzv_check_write(v, "/x/.zattrs", lossy, strlen(lossy)) == 1);
    const char *changed = "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"scale\": 2}";
    CHECK(mzv_check_write(v, "/x/.zattrs", changed, strlen(changed)) == 0);
    CHECK(get(v, "/x/.zattrs", &d, &n) == 0); /* superseded: the map serves what was written */
    const char *zarray_back = "{\"zarr_format\": 2, \"shape\": [4], \"dtype\": \"<i4\", \"chunks\": [2], "
                              "\"fill_value\": 0, \"order\": \"C\", \"compressor\": null, \"filters\": null}";
    CHECK(mzv_check_write(v, "/x/.zarray", zarray_back, strlen(zarray_back)) == 1);
    CHECK(mzv_check_write(v, "/y/1", zeros, 8) == 1); /* the zeros netCDF-C read a missing chunk as */
    CHECK(mzv_check_write(v, "/y/1", dflt, 8) == 0);  /* netCDF's default fill is data there: stored */
    CHECK(mzv_check_chunk_write(v, "/y/1", zeros, 8, 1) == 0); /* zeros a put wrote: data, stored */
    CHECK(mzv_check_chunk_write(v, "/x/1", zeros, 8, 1) == 0); /* the fill value a put wrote: stored too */
    mzv_close(v);
    CHECK(mmzip_close(h) == MMZIP_OK);
    unlink(archive_path);
}

/* Metadata that would make a naive reader allocate or index wildly: refused per array, never a crash. */
static void test_hostile_archive(void) {
    snprintf(archive_path, sizeof archive_path, "/tmp/mmzip-view-units-hostile-%d.zarr.zip", (int)getpid());
    unlink(archive_path);
    mmzip_t *h;
    CHECK(mmzip_open(archive_path, "w", NULL, &h) == MMZIP_OK);
    put_text(h, ".zgroup", "{\"zarr_format\": 2}");
    put_text(h, "huge/.zarray", zarray("[4611686018427387904, 4611686018427387904]",
                                      "[4611686018427387904, 4611686018427387904]", "<f8", NULL));
    put(h, "huge/0.0", "x", 1);
    put_text(h, "dims/.zarray", zarray("[3]", "[3]", "<i2", NULL));
    put_text(h, "dims/.zattrs", "{\"_ARRAY_DIMENSIONS\": [1, null]}");
    put(h, "dims/0", "\1\0\2\0", 4); /* one element short */
    /* a vlen chunk that claims 2^31 items */
    put_text(h, "strs/.zarray",
             "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"|O\", \"compressor\": null, "
             "\"fill_value\": null, \"filters\": [{\"id\": \"vlen-utf8\"}], \"order\": \"C\"}");
    put(h, "strs/0", "\xff\xff\xff\x7f\1\0\0\0a", 9);
    /* a Blosc frame whose header lies about its size */
    put_text(h, "lying/.zarray",
             "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [4], \"dtype\": \"<i4\", \"compressor\": "
             "{\"id\": \"blosc\"}, \"fill_value\": 0, \"filters\": null, \"order\": \"C\"}");
    unsigned char frame[64];
    int n = blosc_compress_ctx(5, 1, 4, 16, "0123456789abcdef", frame, sizeof frame, "lz4", 0, 1);
    CHECK(n > 16);
    frame[4] = 0xff, frame[5] = 0xff, frame[6] = 0xff, frame[7] = 0x7f; /* nbytes: 2 GiB */
    put(h, "lying/0", frame, (size_t)n);
    CHECK(mmzip_close(h) == MMZIP_OK);

    CHECK(mmzip_open(archive_path, "r", NULL, &h) == MMZIP_OK);
    mzv_view *v;
    CHECK(mzv_open(h, "", 1, &v) == NC_NOERR);
    const void *d;
    size_t len;
    CHECK(get(v, "/huge/.zarray", &d, &len) == 1);
    CHECK(get(v, "/huge/0.0", &d, &len) < 0 && strstr(mzv_last_error(v), "2^40"));
    char *s = get_text(v, "/dims/.zattrs");
    CHECK(s && strstr(s, "\"_ARRAY_DIMENSIONS\": [\"_zdim_3\"]"));
    free(s);
    CHECK(get(v, "/dims/0", &d, &len) == NC_ENCZARR && strstr(mzv_last_error(v), "stored chunk has 4 bytes"));
    CHECK(get(v, "/strs/0.0", &d, &len) == NC_EFILTER);
    CHECK(get(v, "/lying/0", &d, &len) == NC_EFILTER && strstr(mzv_last_error(v), "blosc"));
    mzv_close(v);
    CHECK(mmzip_close(h) == MMZIP_OK);
    unlink(archive_path);
}

/* Zarr v3: the crc32c codec, general transposes, the shard index, and zarr.json documents. */
static void test_v3(void) {
    /* CRC-32C check value (RFC 3720 / the Castagnoli polynomial's catalogue entry). */
    CHECK(mzv_crc32c(0, (const unsigned char *)"123456789", 9) == 0xE3069283u);
    CHECK(mzv_crc32c(mzv_crc32c(0, (const unsigned char *)"1234", 4), (const unsigned char *)"56789", 5) == 0xE3069283u);
    mzv_step f;
    char err[256];
    CHECK(mzv_codec_find_v3("crc32c") && !mzv_codec_find_v2("crc32c"));
    CHECK(mzv_codec_configure(mzv_codec_find_v3("crc32c"), NULL, 3, &f, err, sizeof err) == 0);
    unsigned char framed[] = {'a', 'b', 'c', 0, 0, 0, 0};
    uint32_t crc = mzv_crc32c(0, framed, 3);
    for (int i = 0; i < 4; i++) framed[3 + i] = (unsigned char)(crc >> (8 * i));
    mzv_bytes out;
    CHECK(mzv_step_decode(&f, framed, 7, 64, &out, err, sizeof err) == 0 && out.len == 3 && memcmp(out.data, "abc", 3) == 0);
    free(out.data);
    framed[1] ^= 1;
    CHECK(mzv_step_decode(&f, framed, 7, 64, &out, err, sizeof err) != 0 && strstr(err, "crc32c: checksum mismatch"));

    /* transpose order [2, 0, 1] of a 2x3x4 chunk: stored as the C array of shape (4, 2, 3). */
    unsigned char stored[24], laid[24];
    uint64_t shape[] = {2, 3, 4};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++) stored[c * 6 + a * 3 + b] = (unsigned char)(a * 12 + b * 4 + c);
    const int order[] = {2, 0, 1};
    mzv_copy_block_order(laid, stored, 3, shape, shape, order, 1);
    int in_order = 1;
    for (int i = 0; i < 24; i++) in_order &= laid[i] == i;
    CHECK(in_order);
    CHECK(!mzv_block_is_identity_order(3, shape, shape, order));
    const int trivial[] = {1, 0, 2};
    uint64_t flat[] = {1, 3, 4};
    CHECK(mzv_block_is_identity_order(3, flat, flat, trivial)); /* only a length-1 dimension moves */

    /* A zarr.json with a shard of 2x2 inner chunks, index at the start with its crc32c. */
    const char *doc_text =
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4,4],\"data_type\":\"float32\","
        "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[4,4]}},"
        "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":\"0xbfc00000\","
        "\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,2],"
        "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}],"
        "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},\"crc32c\"],"
        "\"index_location\":\"start\"}}],\"attributes\":{}}";
    mzj_value *doc;
    CHECK(mzj_parse(doc_text, strlen(doc_text), &doc, err, sizeof err) == 0);
    mzv_zarray z;
    mzv_codec_chain chain;
    CHECK(mzv_v3_array_parse(doc, &z, &chain, err, sizeof err) == 0);
    double fill;
    CHECK(z.sharding && z.sharding->index_at_start && z.sharding->index_crc32c && z.key_prefix_c && z.separator == '/');
    CHECK(z.chunks[0] == 2 && z.chunks[1] == 2 && z.sharding->shard_shape[0] == 4 && z.dtype.big_endian);
    CHECK(mzj_as_double(z.fill_value, &fill) && fill == -1.5);
    CHECK(mzv_chain_is_identity(&chain));
    /* Index: inner chunk (0,1) at 68+0, 16 bytes; the others empty. */
    unsigned char shard[68 + 16];
    memset(shard, 0xFF, 64);
    memset(shard + 68, 7, 16);
    uint64_t at = 68, n = 16;
    for (int i = 0; i < 8; i++) shard[16 + i] = (unsigned char)(at >> (8 * i)), shard[24 + i] = (unsigned char)(n >> (8 * i));
    crc = mzv_crc32c(0, shard, 64);
    for (int i = 0; i < 4; i++) shard[64 + i] = (unsigned char)(crc >> (8 * i));
    const unsigned char *chunk;
    size_t chunk_len;
    uint64_t inner[] = {0, 1}, empty[] = {1, 1}, outside[] = {2, 0};
    CHECK(mzv_shard_locate(&z, shard, sizeof shard, inner, &chunk, &chunk_len, err, sizeof err) == 0 &&
          chunk == shard + 68 && chunk_len == 16);
    CHECK(mzv_shard_locate(&z, shard, sizeof shard, empty, &chunk, &chunk_len, err, sizeof err) == 1);
    CHECK(mzv_shard_locate(&z, shard, sizeof shard, outside, &chunk, &chunk_len, err, sizeof err) == -1);
    CHECK(mzv_shard_locate(&z, shard, 40, inner, &chunk, &chunk_len, err, sizeof err) == -1);
    shard[16] = 69; /* now past the end, and the index checksum no longer matches */
    CHECK(mzv_shard_locate(&z, shard, sizeof shard, inner, &chunk, &chunk_len, err, sizeof err) == -1 &&
          strstr(err, "crc32c"));
    shard[16] = 68;
    /* Chunk location (v3_chunks.c): grid index (3, 1) is inner chunk (1, 1) of the shard "c/1/0"; (2, 3) is
     * inner chunk (0, 1) of the shard "c/1/1". */
    char key[MZV_MAX_RANK * 21 + 4];
    mzv_v3_chunk_key(&z, (const uint64_t[]){3, 1}, key, sizeof key);
    CHECK(strcmp(key, "c/1/0") == 0);
    CHECK(mzv_v3_chunk_in_object(&z, shard, sizeof shard, (const uint64_t[]){3, 1}, &chunk, &chunk_len, err,
                                 sizeof err) == 1);
    CHECK(mzv_v3_chunk_in_object(&z, shard, sizeof shard, (const uint64_t[]){2, 3}, &chunk, &chunk_len, err,
                                 sizeof err) == 0 && chunk == shard + 68 && chunk_len == 16);
    CHECK(!mzv_v3_chunks_stored_as_v2(&z));
    mzv_chain_free(&chain);
    mzv_zarray_free(&z);
    mzj_free(doc);

    /* Documents the view cannot model fail with a message; undecodable codecs only break the chunks. */
    const char *bad[] = {
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"float8_e4m3\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[\"bytes\"]}",
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"rectilinear\"},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[\"bytes\"]}",
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[\"bytes\"],\"ext\":{\"must_understand\":true}}",
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"float32\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":\"0x12\",\"codecs\":[\"bytes\"]}",
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[\"gzip\"]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(mzj_parse(bad[i], strlen(bad[i]), &doc, err, sizeof err) == 0);
        err[0] = 0;
        CHECK(mzv_v3_array_parse(doc, &z, &chain, err, sizeof err) != 0 && err[0]);
        mzj_free(doc);
    }
    const char *odd = "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"v2\"},\"fill_value\":0,\"codecs\":[\"bytes\",\"lz4\"]}";
    CHECK(mzj_parse(odd, strlen(odd), &doc, err, sizeof err) == 0);
    CHECK(mzv_v3_array_parse(doc, &z, &chain, err, sizeof err) == 0 && chain.unsupported &&
          strstr(chain.unsupported, "\"lz4\"") && !z.key_prefix_c && z.separator == '.');
    /* The v2 chunk key encoding without shards: stored as v2 stores them, the object is the chunk. */
    mzv_v3_chunk_key(&z, (const uint64_t[]){1}, key, sizeof key);
    CHECK(strcmp(key, "1") == 0 && mzv_v3_chunks_stored_as_v2(&z));
    CHECK(mzv_v3_chunk_in_object(&z, shard, 5, (const uint64_t[]){1}, &chunk, &chunk_len, err, sizeof err) == 0 &&
          chunk == shard && chunk_len == 5);
    mzv_chain_free(&chain);
    mzv_zarray_free(&z);
    mzj_free(doc);
}

/* ---------------------------------------------------------------------------------------------------- */
/* The codec table                                                                                        */

/* The table: names unique per format, every codec reachable by its full name only, and a name that is
 * not a codec's (or is another role's) never taken for another codec: the array's chunks fail naming the
 * array and the codec. */
static void test_codec_table(void) {
    size_t n = mzv_codec_count();
    CHECK(n >= 19);
    for (size_t i = 0; i < n; i++) {
        const mzv_codec *c = mzv_codec_at(i);
        CHECK(c->v2_id || c->v3_name);
        CHECK(c->role == MZV_CODEC_OBJECT ? c->object != MZV_OBJECT_NONE && !c->decode
                                           : c->object == MZV_OBJECT_NONE && c->decode != NULL);
        CHECK(!c->v2_id || mzv_codec_find_v2(c->v2_id) == c);
        CHECK(!c->v3_name || mzv_codec_find_v3(c->v3_name) == c);
    }
    CHECK(mzv_codec_at(n) == NULL);
    const char *not_v2[] = {"z", "zli", "zlib2", "ZLIB", "gzip ", "crc32c", "bytes", "", NULL};
    for (size_t i = 0; i < sizeof not_v2 / sizeof not_v2[0]; i++) CHECK(mzv_codec_find_v2(not_v2[i]) == NULL);
    const char *not_v3[] = {"g", "gz", "gzipx", "zlib", "zstd2", "blosc2", "b", "crc32", "numcodecs.zstd", "", NULL};
    for (size_t i = 0; i < sizeof not_v3 / sizeof not_v3[0]; i++) CHECK(mzv_codec_find_v3(not_v3[i]) == NULL);
    CHECK(mzv_codec_find_v2("gzip") == mzv_codec_find_v3("gzip") && mzv_codec_find_v2("zstd") != mzv_codec_find_v2("zlib"));

    /* A v3 bytes-to-bytes codec unknown by its full name is recorded, never decoded as another one. */
    const char *names[] = {"gzipx", "zstd2", "blosc2", "zlib", "g", "numcodecs.gzip"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char doc_text[600], err[256], want[64];
        snprintf(doc_text, sizeof doc_text,
                 "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"int8\",\"chunk_grid\":{\"name\":"
                 "\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"default\"},"
                 "\"fill_value\":0,\"codecs\":[\"bytes\",{\"name\":\"%s\",\"configuration\":{\"level\":1}}]}", names[i]);
        mzj_value *doc;
        mzv_zarray z;
        mzv_codec_chain chain;
        CHECK(mzj_parse(doc_text, strlen(doc_text), &doc, err, sizeof err) == 0);
        CHECK(mzv_v3_array_parse(doc, &z, &chain, err, sizeof err) == 0);
        snprintf(want, sizeof want, "codec \"%s\" cannot be decoded by the view", names[i]);
        CHECK(chain.unsupported && strcmp(chain.unsupported, want) == 0 && chain.step_count == 0);
        mzv_chain_free(&chain);
        mzv_zarray_free(&z);
        mzj_free(doc);
    }

    /* Through the view: a v2 compressor named as a filter, a filter named as the compressor, a v3 codec
     * known only to v2 - each chunk read fails naming the chunk's entry and the codec; the good arrays read. */
    snprintf(archive_path, sizeof archive_path, "/tmp/mmzip-view-units-codecs-%d.zarr.zip", (int)getpid());
    unlink(archive_path);
    mmzip_t *h;
    CHECK(mmzip_open(archive_path, "w", NULL, &h) == MMZIP_OK);
    put_text(h, ".zgroup", "{\"zarr_format\": 2}");
    const unsigned char data[] = {1, 0, 0, 0, 2, 0, 0, 0};
    unsigned char gz[64];
    uLongf gz_len = sizeof gz;
    CHECK(compress2(gz, &gz_len, data, sizeof data, 6) == Z_OK); /* a zlib stream */
    put_text(h, "good/.zarray", "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"<i4\", "
                                "\"compressor\": {\"id\": \"zlib\", \"level\": 6}, \"fill_value\": 0, \"filters\": null, "
                                "\"order\": \"C\"}");
    put(h, "good/0", gz, gz_len);
    put_text(h, "as_filter/.zarray", "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"<i4\", "
                                     "\"compressor\": null, \"fill_value\": 0, \"filters\": [{\"id\": \"zlib\"}], "
                                     "\"order\": \"C\"}");
    put(h, "as_filter/0", gz, gz_len);
    put_text(h, "as_comp/.zarray", "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"<i4\", "
                                   "\"compressor\": {\"id\": \"shuffle\"}, \"fill_value\": 0, \"filters\": null, "
                                   "\"order\": \"C\"}");
    put(h, "as_comp/0", data, sizeof data);
    put_text(h, "near/.zarray", "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [2], \"dtype\": \"<i4\", "
                                "\"compressor\": {\"id\": \"zlibx\"}, \"fill_value\": 0, \"filters\": null, "
                                "\"order\": \"C\"}");
    put(h, "near/0", gz, gz_len);
    CHECK(mmzip_close(h) == MMZIP_OK);
    CHECK(mmzip_open(archive_path, "r", NULL, &h) == MMZIP_OK);
    mzv_view *v;
    CHECK(mzv_open(h, "", 1, &v) == NC_NOERR);
    const void *d;
    size_t len;
    CHECK(get(v, "/good/0", &d, &len) == 1 && len == sizeof data && memcmp(d, data, sizeof data) == 0);
    CHECK(get(v, "/as_filter/0", &d, &len) == NC_EFILTER &&
          strstr(mzv_last_error(v), "as_filter/0: cannot present this chunk: filter \"zlib\" cannot be decoded"));
    CHECK(get(v, "/as_comp/0", &d, &len) == NC_EFILTER &&
          strstr(mzv_last_error(v), "as_comp/0: cannot present this chunk: compressor \"shuffle\" cannot be decoded"));
    CHECK(get(v, "/near/0", &d, &len) == NC_EFILTER &&
          strstr(mzv_last_error(v), "near/0: cannot present this chunk: compressor \"zlibx\" cannot be decoded"));
    mzv_close(v);
    CHECK(mmzip_close(h) == MMZIP_OK);
    unlink(archive_path);
}

/* A Zarr v3 chunk whose first decoding step is a compressor is bounded by what it decodes to, not by its
 * stored size (which numcodecs' padding or an incompressible chunk's overhead may make larger); without a
 * compressor the stored size is bounded too. */
static void test_v3_stored_size(void) {
    snprintf(archive_path, sizeof archive_path, "/tmp/mmzip-view-units-v3size-%d.zarr.zip", (int)getpid());
    unlink(archive_path);
    mmzip_t *h;
    CHECK(mmzip_open(archive_path, "w", NULL, &h) == MMZIP_OK);
    put_text(h, "zarr.json", "{\"zarr_format\": 3, \"node_type\": \"group\", \"attributes\": {}}");
    const char *array = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8], \"data_type\": \"int8\", "
                        "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [8]}}, "
                        "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": "
                        "[{\"name\": \"bytes\"}, {\"name\": \"%s\"}], \"attributes\": {}}";
    char doc[600];
    snprintf(doc, sizeof doc, array, "gzip");
    put_text(h, "padded/zarr.json", doc);
    snprintf(doc, sizeof doc, array, "crc32c");
    put_text(h, "checked/zarr.json", doc);
    const unsigned char data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static unsigned char stored[8192];
    z_stream zs = {0};
    CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = (unsigned char *)data;
    zs.avail_in = sizeof data;
    zs.next_out = stored;
    zs.avail_out = sizeof stored;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t member = zs.total_out;
    deflateEnd(&zs);
    put(h, "padded/c/0", stored, member + 6000); /* a gzip member, then zero padding (Python's gzip skips it) */
    memset(stored, 0, sizeof stored);
    memcpy(stored, data, sizeof data);
    uint32_t crc = mzv_crc32c(0, stored, 6000);
    for (int i = 0; i < 4; i++) stored[6000 + i] = (unsigned char)(crc >> (8 * i));
    put(h, "checked/c/0", stored, 6004); /* a valid crc32c suffix, but 6000 bytes for 8 */
    CHECK(mmzip_close(h) == MMZIP_OK);

    CHECK(mmzip_open(archive_path, "r", NULL, &h) == MMZIP_OK);
    mzv_view *v;
    CHECK(mzv_open(h, "", 1, &v) == NC_NOERR);
    const void *d;
    size_t len;
    CHECK(get(v, "/padded/0", &d, &len) == 1 && len == sizeof data && memcmp(d, data, sizeof data) == 0);
    CHECK(get(v, "/checked/0", &d, &len) == NC_EFILTER &&
          strstr(mzv_last_error(v), "checked/c/0: stored chunk larger than the limit"));
    mzv_close(v);
    CHECK(mmzip_close(h) == MMZIP_OK);
    unlink(archive_path);
}

int main(void) {
    RUN(test_v3_stored_size);
    RUN(test_codec_table);
    RUN(test_v3);
    RUN(test_dtypes);
    RUN(test_compressors);
    RUN(test_filters);
    RUN(test_conversions);
    RUN(test_dims);
    RUN(test_attrs);
    RUN(test_view);
    RUN(test_untranslated_writes);
    RUN(test_hostile_archive);
    return ctest_result();
}

/*
 * test_metadata_guard.c - what keeps netCDF-C 4.9's lossy metadata rewrites out of the archive: the blind
 * .zattrs it writes at close after an NC_WRITE open that never read them, merged into the archived one;
 * and its re-serialised .zarray (without the codecs it cannot decode), which keeps the archived definition.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata_guard.h"
#include "nczarr_ctest.h"
#include "json.h"

static mzj_value *parse(const char *text, size_t len) {
    mzj_value *v;
    char err[200];
    if (mzj_parse(text, len, &v, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
    return v;
}

/* What netCDF-C 4.9.0 wrote for "temp" with nccopy, and what it writes back after an NC_WRITE open. */
static const char archived[] =
    "{\"long_name\": \"temperature\", \"_FillValue\": -999, \"_ARRAY_DIMENSIONS\": [\"time\",\"x\"], "
    "\"_NCZARR_ATTR\": {\"types\": {\"long_name\": \"<U1\", \"_FillValue\": \"<f4\"}}}";
static const char blind[] = "{\"_ARRAY_DIMENSIONS\": [\"time\",\"x\"], \"_NCZARR_ATTR\": {}}";

static void test_blind_rewrite_keeps_archive_bytes(void) {
    char *merged;
    size_t len;
    CHECK(mzn_merge_blind_attributes(archived, strlen(archived), blind, strlen(blind), &merged, &len) == 1);
    /* Nothing new: the archived bytes, byte for byte, so that an unchanged dataset is not rewritten. */
    CHECK_EQ_U64(len, strlen(archived));
    CHECK(merged && memcmp(merged, archived, len) == 0);
    free(merged);
}

static void test_blind_rewrite_with_new_attribute(void) {
    const char incoming[] = "{\"_ARRAY_DIMENSIONS\": [\"time\",\"x\"], \"note\": \"added\", "
                            "\"_NCZARR_ATTR\": {\"types\": {\"note\": \"<U1\"}}}";
    char *merged;
    size_t len;
    CHECK(mzn_merge_blind_attributes(archived, strlen(archived), incoming, strlen(incoming), &merged, &len) == 1);
    mzj_value *got = parse(merged, len);
    const char want_text[] =
        "{\"long_name\": \"temperature\", \"_FillValue\": -999, \"_ARRAY_DIMENSIONS\": [\"time\",\"x\"], "
        "\"note\": \"added\", \"_NCZARR_ATTR\": {\"types\": {\"long_name\": \"<U1\", \"_FillValue\": \"<f4\", "
        "\"note\": \"<U1\"}}}";
    mzj_value *want = parse(want_text, strlen(want_text));
    CHECK(got && want && mzj_equal(got, want));
    mzj_free(got);
    mzj_free(want);
    free(merged);
}

static void test_merge_keeps_numbers_as_written(void) {
    /* A merged document is printed anew: its numbers must not lose or gain digits, and a trailing NUL that
     * some writers store after the archived text must not stop the merge. */
    const char old[] = "{\"scale\": 0.1000000000000000055511, \"big\": 18446744073709551615, \"e\": 1.50E+1}";
    const char incoming[] = "{\"_ARRAY_DIMENSIONS\": [\"x\"]}";
    char *merged;
    size_t len;
    CHECK(mzn_merge_blind_attributes(old, sizeof old, incoming, strlen(incoming), &merged, &len) == 1);
    CHECK_STR(merged, "{\"scale\": 0.1000000000000000055511, \"big\": 18446744073709551615, \"e\": 1.50E+1, "
                      "\"_ARRAY_DIMENSIONS\": [\"x\"]}");
    CHECK_EQ_U64(len, merged ? strlen(merged) : 0);
    free(merged);
}

static void test_unparsable_sides_are_not_merged(void) {
    char *merged;
    size_t len;
    CHECK(mzn_merge_blind_attributes("{broken", 7, blind, strlen(blind), &merged, &len) == 0 && !merged);
    CHECK(mzn_merge_blind_attributes(archived, strlen(archived), "[1]", 3, &merged, &len) == 0 && !merged);
}

/* zarr-python's definition of a Zlib-compressed array, and netCDF-C 4.9.0's rewrite of it (observed). */
static const char zlib_array[] = "{\n    \"chunks\": [\n        4\n    ],\n    \"compressor\": {\n        \"id\": "
                                 "\"zlib\",\n        \"level\": 1\n    },\n    \"dtype\": \"<i4\",\n    "
                                 "\"fill_value\": 0,\n    \"filters\": null,\n    \"order\": \"C\",\n    "
                                 "\"shape\": [\n        8\n    ],\n    \"zarr_format\": 2\n}";
static const char rewritten[] = "{\"zarr_format\": 2, \"shape\": [8], \"dtype\": \"<i4\", \"chunks\": [4], "
                                "\"fill_value\": 0, \"order\": \"C\", \"compressor\": null, \"filters\": null}";

static void test_array_rewrite_keeps_codecs(void) {
    char *out;
    size_t len;
    int lossy;
    CHECK(mzn_guard_array_rewrite(zlib_array, strlen(zlib_array), rewritten, strlen(rewritten), &out, &len,
                                  &lossy) == 1);
    CHECK(lossy);
    CHECK_EQ_U64(len, strlen(zlib_array));
    CHECK(out && memcmp(out, zlib_array, len) == 0);
    free(out);
}

static void test_array_rewrite_takes_shape_and_new_members(void) {
    /* 4.9.3+ grows unlimited dimensions; NCZarr adds its own member to arrays it did not create. */
    const char grown[] = "{\"zarr_format\": 2, \"shape\": [12], \"dtype\": \"<i4\", \"chunks\": [4], "
                         "\"fill_value\": 0, \"order\": \"C\", \"compressor\": null, \"filters\": null, "
                         "\"_nczarr_array\": {\"dimrefs\": [\"/n\"]}}";
    char *out;
    size_t len;
    int lossy;
    CHECK(mzn_guard_array_rewrite(zlib_array, strlen(zlib_array), grown, strlen(grown), &out, &len, &lossy) == 1);
    mzj_value *got = parse(out, len);
    CHECK(got != NULL);
    const mzj_value *shape = mzj_get(got, "shape");
    int64_t extent = 0;
    CHECK(shape && shape->kind == MZJ_ARRAY && shape->u.array.count == 1 &&
          mzj_as_int64(shape->u.array.items[0], &extent) && extent == 12);
    const mzj_value *codec = mzj_get(got, "compressor");
    CHECK(codec && codec->kind == MZJ_OBJECT);
    CHECK(mzj_get(got, "_nczarr_array") != NULL);
    mzj_free(got);
    free(out);
    /* An identical rewrite is not lossy and returns the archived bytes. */
    size_t n = strlen(rewritten);
    CHECK(mzn_guard_array_rewrite(rewritten, n, rewritten, n, &out, &len, &lossy) == 1);
    CHECK(!lossy && len == strlen(rewritten) && memcmp(out, rewritten, len) == 0);
    free(out);
}

/* zarr-python's .zattrs of a float array with a NaN fill, and netCDF-C 4.9.0's rewrite after one attribute
 * was set: the materialised _FillValue (bare NaN) and the reordered members are not netCDF-C's change. */
static const char zp_attrs[] = "{\n    \"_ARRAY_DIMENSIONS\": [\n        \"x\"\n    ],\n    \"scale\": 0.1\n}";
static const char zp_array[] = "{\"dtype\": \"<f4\", \"fill_value\": \"NaN\", \"shape\": [6], \"chunks\": [3]}";

static void test_exact_keeps_bytes_when_unchanged(void) {
    const char rewrite[] = "{\"scale\": 0.1, \"_FillValue\": NaN, \"_ARRAY_DIMENSIONS\": [\"x\"]}";
    char *out;
    size_t len;
    CHECK(mzn_exact_attributes(zp_attrs, strlen(zp_attrs), rewrite, strlen(rewrite), zp_array, strlen(zp_array),
                               &out, &len) == 1);
    CHECK_EQ_U64(len, strlen(zp_attrs));
    CHECK(out && memcmp(out, zp_attrs, len) == 0);
    free(out);
}

static void test_exact_takes_only_the_change(void) {
    /* 4.9.3+ spell the fill "NaN"; 0.1 printed with "%lg" is the same value */
    const char rewrite[] = "{\"scale\": 0.1, \"_FillValue\": \"NaN\", \"note\": \"set\", \"_ARRAY_DIMENSIONS\": [\"x\"]}";
    char *out;
    size_t len;
    CHECK(mzn_exact_attributes(zp_attrs, strlen(zp_attrs), rewrite, strlen(rewrite), zp_array, strlen(zp_array),
                               &out, &len) == 1);
    CHECK_STR(out, "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"scale\": 0.1, \"note\": \"set\"}");
    free(out);
    /* a deleted attribute goes, with its type; an added one gets netCDF-C's type in the archived table */
    const char typed[] = "{\"a\": 1, \"b\": [1, 2], \"_nczarr_attr\": {\"types\": {\"a\": \"<i4\", \"b\": \"<i2\"}}}";
    const char rewrite2[] = "{\"b\": [1, 2], \"c\": \"t\", \"_nczarr_attr\": {\"types\": {\"b\": \"<i2\", \"c\": \"<U1\"}}}";
    CHECK(mzn_exact_attributes(typed, strlen(typed), rewrite2, strlen(rewrite2), NULL, 0, &out, &len) == 1);
    CHECK_STR(out, "{\"b\": [1, 2], \"_nczarr_attr\": {\"types\": {\"b\": \"<i2\", \"c\": \">S1\"}}, \"c\": \"t\"}");
    free(out);
}

static void test_exact_creates_no_empty_attributes(void) {
    char *out;
    size_t len;
    CHECK(mzn_exact_attributes(NULL, 0, "{}", 2, NULL, 0, &out, &len) == 2 && !out);
    const char rewrite[] = "{\"_FillValue\": 0, \"_ARRAY_DIMENSIONS\": [\"_zdim_4\"]}";
    const char zarray[] = "{\"dtype\": \"<i2\", \"fill_value\": 0}";
    CHECK(mzn_exact_attributes(NULL, 0, rewrite, strlen(rewrite), zarray, strlen(zarray), &out, &len) == 2);
    const char one[] = "{\"_FillValue\": 0, \"comment\": \"x\"}";
    CHECK(mzn_exact_attributes(NULL, 0, one, strlen(one), zarray, strlen(zarray), &out, &len) == 1);
    CHECK_STR(out, "{\"comment\": \"x\"}");
    free(out);
}

int main(void) {
    RUN(test_exact_keeps_bytes_when_unchanged);
    RUN(test_exact_takes_only_the_change);
    RUN(test_exact_creates_no_empty_attributes);
    RUN(test_blind_rewrite_keeps_archive_bytes);
    RUN(test_blind_rewrite_with_new_attribute);
    RUN(test_merge_keeps_numbers_as_written);
    RUN(test_unparsable_sides_are_not_merged);
    RUN(test_array_rewrite_keeps_codecs);
    RUN(test_array_rewrite_takes_shape_and_new_members);
    return ctest_result();
}

/*
 * test_attribute_merge.c - the merge that keeps netCDF-C 4.9 from dropping variable attributes: the blind
 * .zattrs netCDF-C writes at close after an NC_WRITE open that never read them, merged into the archived
 * one.
 */
#include <stdlib.h>
#include <string.h>

#include "attribute_merge.h"
#include "json.h"
#include "nczarr_ctest.h"

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
    mzn_json *got = mzn_json_parse(merged, len);
    const char want_text[] =
        "{\"long_name\": \"temperature\", \"_FillValue\": -999, \"_ARRAY_DIMENSIONS\": [\"time\",\"x\"], "
        "\"note\": \"added\", \"_NCZARR_ATTR\": {\"types\": {\"long_name\": \"<U1\", \"_FillValue\": \"<f4\", "
        "\"note\": \"<U1\"}}}";
    mzn_json *want = mzn_json_parse(want_text, strlen(want_text));
    CHECK(got && want && mzn_json_equal(got, want));
    mzn_json_free(got);
    mzn_json_free(want);
    free(merged);
}

static void test_unparsable_sides_are_not_merged(void) {
    char *merged;
    size_t len;
    CHECK(mzn_merge_blind_attributes("{broken", 7, blind, strlen(blind), &merged, &len) == 0 && !merged);
    CHECK(mzn_merge_blind_attributes(archived, strlen(archived), "[1]", 3, &merged, &len) == 0 && !merged);
}

int main(void) {
    RUN(test_blind_rewrite_keeps_archive_bytes);
    RUN(test_blind_rewrite_with_new_attribute);
    RUN(test_unparsable_sides_are_not_merged);
    return ctest_result();
}

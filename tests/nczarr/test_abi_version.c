/*
 * test_abi_version.c - which row of the release table (netcdf_releases.h) each netCDF-C version string
 * selects, what the rows say, and that the compatibility view takes its conventions from the row it is given.
 */
#include <string.h>

#include "abi_version.h"
#include "nczarr_ctest.h"
#include "view_release.h"

static void test_versions(void) {
    static const struct {
        const char *version;
        const char *row; /* the row's versions, NULL: not served */
        mzn_abi abi;
    } cases[] = {
        {"4.9.0 of Aug  7 2022 23:41:41 $", "4.9.0-4.9.2", MZN_ABI_V490},
        {"4.9.1", "4.9.0-4.9.2", MZN_ABI_V490},
        {"4.9.2-development", "4.9.0-4.9.2", MZN_ABI_V490},
        {"4.9.3", "4.9.3", MZN_ABI_V493},
        {"4.9.3-rc2", "4.9.3", MZN_ABI_V493},
        {"4.10.0", "4.10.x", MZN_ABI_V410},
        {"4.10.1 of Jan  1 2026", "4.10.x", MZN_ABI_V410},
        {"4.10.150", "4.10.x", MZN_ABI_V410},
        {"4.9.4", NULL, MZN_ABI_UNKNOWN},  /* no such release: its layout is unknown */
        {"4.9.100", NULL, MZN_ABI_UNKNOWN}, /* not 4.10.0 */
        {"4.8.1", NULL, MZN_ABI_UNKNOWN},
        {"4.11.0", NULL, MZN_ABI_UNKNOWN},
        {"5.0.0", NULL, MZN_ABI_UNKNOWN},
        {"4.9", NULL, MZN_ABI_UNKNOWN},
        {"", NULL, MZN_ABI_UNKNOWN},
        {"garbage", NULL, MZN_ABI_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mzn_release *r = mzn_release_from_string(cases[i].version, NULL, NULL, NULL);
        const char *got = r ? r->versions : NULL;
        int same = got && cases[i].row ? strcmp(got, cases[i].row) == 0 : got == cases[i].row;
        if (!same)
            fprintf(stderr, "version \"%s\": row %s, want %s\n", cases[i].version, got ? got : "none",
                    cases[i].row ? cases[i].row : "none");
        CHECK(same);
        CHECK((r ? r->abi : MZN_ABI_UNKNOWN) == cases[i].abi);
    }
    CHECK(mzn_release_from_string(NULL, NULL, NULL, NULL) == NULL);
    int ma = 0, mi = 0, pa = 0;
    mzn_release_from_string("4.10.1", &ma, &mi, &pa);
    CHECK(ma == 4 && mi == 10 && pa == 1);
    CHECK(mzn_release_find(4, 9, 1) == mzn_release_find(4, 9, 0));
    CHECK(mzn_release_find(4, 10, 1) == mzn_release_find(4, 10, 0));
    CHECK(mzn_release_oldest() == mzn_release_find(4, 9, 0));
    CHECK_STR(mzn_releases_served(), "4.9.0-4.9.2, 4.9.3, 4.10.x");
}

/* What each release needs of the storage map: only 4.9.0-4.9.2 lose chunk updates (fixed in 4.9.3) and
 * declare a byte order they do not write. */
static void test_map_columns(void) {
    const mzn_release *v490 = mzn_release_find(4, 9, 0), *v493 = mzn_release_find(4, 9, 3),
                      *v410 = mzn_release_find(4, 10, 1);
    CHECK(v490 && v493 && v410);
    CHECK(v490->loses_chunk_updates && v490->mislabels_byte_order);
    CHECK(!v493->loses_chunk_updates && !v493->mislabels_byte_order);
    CHECK(!v410->loses_chunk_updates && !v410->mislabels_byte_order);
}

/* The view's conventions follow the row it is given, and 4.9.0's before it is given one. */
static void test_view_takes_the_row(void) {
    mzv_set_netcdf_release(NULL);
    CHECK_STR(mzv_types_key(), "_NCZARR_ATTR");
    CHECK_STR(mzv_release_attr_type(">S1"), "<U1");
    CHECK_STR(mzv_release_attr_type("<U1"), "<U1");
    CHECK_STR(mzv_release_attr_type("<i4"), "<i4");
    CHECK(!mzv_release_reads_attr_type("|J0") && !mzv_release_reads_attr_type("|S8"));
    CHECK(mzv_release_reads_attr_type("|S1") && mzv_release_reads_attr_type("<f8"));
    CHECK(!mzv_fixed_strings() && !mzv_infers_int_attributes() && !mzv_reads_long_chunks() &&
          !mzv_reads_lowercase_nczarr());
    mzv_set_netcdf_release(mzn_release_find(4, 9, 2));
    CHECK_STR(mzv_types_key(), "_NCZARR_ATTR");
    CHECK(!mzv_fixed_strings());
    for (int minor = 9; minor <= 10; minor++) {
        mzv_set_netcdf_release(mzn_release_find(4, minor, minor == 9 ? 3 : 1));
        CHECK_STR(mzv_types_key(), "_nczarr_attr");
        CHECK_STR(mzv_release_attr_type("<U1"), ">S1");
        CHECK_STR(mzv_release_attr_type(">S1"), ">S1");
        CHECK(mzv_release_reads_attr_type("|J0") && mzv_release_reads_attr_type("|S8"));
        CHECK(mzv_fixed_strings() && mzv_infers_int_attributes() && mzv_reads_long_chunks() &&
              mzv_reads_lowercase_nczarr());
    }
    mzv_set_netcdf_release(NULL);
    CHECK_STR(mzv_types_key(), "_NCZARR_ATTR");
}

/* The view tells from an archive's _NCProperties whether its writer stored native bytes under a big-endian
 * dtype, by the same column of the table. */
static void test_writer_byte_order(void) {
    static const struct {
        const char *props;
        int mislabelled;
    } cases[] = {
        {"version=2,netcdf=4.9.0,nczarr=2.0.0", 1},
        {"version=2,netcdf=4.9.1", 1},
        {"netcdf=4.9.2-development,nczarr=2.0.0", 1},
        {"version=2,netcdf=4.9.3,nczarr=2.0.0", 0},
        {"version=2,netcdf=4.10.1,nczarr=3.0.0", 0},
        {"netcdf=4.9.10", 0},
        {"netcdf=4.9.", 0},
        {"netcdf=4.9", 0},
        {"version=2,hdf5=1.10.8", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = mzv_written_with_mislabelled_byte_order(cases[i].props);
        if (got != cases[i].mislabelled) fprintf(stderr, "_NCProperties \"%s\": %d\n", cases[i].props, got);
        CHECK(got == cases[i].mislabelled);
    }
    CHECK(!mzv_written_with_mislabelled_byte_order(NULL));
}

int main(void) {
    RUN(test_versions);
    RUN(test_map_columns);
    RUN(test_view_takes_the_row);
    RUN(test_writer_byte_order);
    return ctest_result();
}

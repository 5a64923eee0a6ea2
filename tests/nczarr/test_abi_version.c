/* test_abi_version.c - which storage-map ABI each netCDF-C version string selects. */
#include "abi_version.h"
#include "nczarr_ctest.h"

static void test_versions(void) {
    static const struct {
        const char *version;
        mzn_abi abi;
    } cases[] = {
        {"4.9.0 of Aug  7 2022 23:41:41 $", MZN_ABI_V490},
        {"4.9.1", MZN_ABI_V490},
        {"4.9.2-development", MZN_ABI_V490},
        {"4.9.3", MZN_ABI_V493},
        {"4.9.3-rc2", MZN_ABI_V493},
        {"4.10.0", MZN_ABI_V410},
        {"4.10.1 of Jan  1 2026", MZN_ABI_V410},
        {"4.9.4", MZN_ABI_UNKNOWN},  /* no such release: its layout is unknown */
        {"4.8.1", MZN_ABI_UNKNOWN},
        {"4.11.0", MZN_ABI_UNKNOWN},
        {"5.0.0", MZN_ABI_UNKNOWN},
        {"4.9", MZN_ABI_UNKNOWN},
        {"", MZN_ABI_UNKNOWN},
        {"garbage", MZN_ABI_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mzn_abi got = mzn_abi_from_string(cases[i].version, NULL, NULL, NULL);
        if (got != cases[i].abi)
            fprintf(stderr, "version \"%s\": ABI %d, want %d\n", cases[i].version, got, cases[i].abi);
        CHECK(got == cases[i].abi);
    }
    CHECK(mzn_abi_from_string(NULL, NULL, NULL, NULL) == MZN_ABI_UNKNOWN);
    int ma = 0, mi = 0, pa = 0;
    mzn_abi_from_string("4.10.1", &ma, &mi, &pa);
    CHECK(ma == 4 && mi == 10 && pa == 1);
    /* Only 4.9.0-4.9.2 lose chunk updates (fixed in 4.9.3). */
    CHECK(mzn_abi_loses_chunk_updates(MZN_ABI_V490));
    CHECK(!mzn_abi_loses_chunk_updates(MZN_ABI_V493));
    CHECK(!mzn_abi_loses_chunk_updates(MZN_ABI_V410));
}

int main(void) {
    RUN(test_versions);
    return ctest_result();
}

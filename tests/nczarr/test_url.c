/*
 * test_url.c - the URLs of zip datasets: parsing what NCZarr hands to the map, building URLs for local
 * paths, and making mode lists safe for netCDF-C 4.9.0 (whose nc_open loops forever when the last mode
 * token is zarr, xarray or noxarray).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nczarr_ctest.h"
#include "url.h"

static void check_fix(const char *in, const char *want) {
    char *got = mzn_url_fix_zip_mode(in);
    CHECK_STR(got, want);
    free(got);
}

static void test_parse(void) {
    mzn_url u;
    CHECK(mzn_url_parse("file:///data/x.zarr.zip#mode=nczarr,nczarr,zip,zip", &u) == NC_NOERR);
    CHECK_STR(u.path, "/data/x.zarr.zip");
    CHECK(!u.view_raw);
    mzn_url_clear(&u);
    CHECK(mzn_url_parse("file:///a%20b/c%23d%25.zip#mode=zarr,zip&mmzip=raw", &u) == NC_NOERR);
    CHECK_STR(u.path, "/a b/c#d%.zip");
    CHECK(u.view_raw);
    mzn_url_clear(&u);
    CHECK(mzn_url_parse("FILE://localhost/x.zip", &u) == NC_NOERR);
    CHECK_STR(u.path, "/x.zip");
    mzn_url_clear(&u);
    CHECK(mzn_url_parse("s3://bucket/x.zip#mode=zip", &u) == NC_EURL);
    CHECK(mzn_url_parse("/plain/path.zip", &u) == NC_EURL);
    CHECK(mzn_url_parse("file://#mode=zip", &u) == NC_EURL);
}

static void test_for_path(void) {
    char *url = mzn_url_for_path("/d/a b#c?%.zip", "mode=nczarr,zip");
    CHECK_STR(url, "file:///d/a b%23c%3F%25.zip#mode=nczarr,zip");
    /* The encoding round-trips through the parser. */
    mzn_url u;
    CHECK(mzn_url_parse(url, &u) == NC_NOERR);
    CHECK_STR(u.path, "/d/a b#c?%.zip");
    mzn_url_clear(&u);
    free(url);
    char cwd[4096], want[4200];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(want, sizeof want, "file://%s/rel/x.zip", strcmp(cwd, "/") == 0 ? "" : cwd);
    url = mzn_url_for_path("./rel/x.zip", NULL);
    CHECK_STR(url, want);
    free(url);
}

static void test_names(void) {
    CHECK(mzn_url_names_zip("a/b.zarr.zip"));
    CHECK(mzn_url_names_zip("B.ZIP"));
    CHECK(mzn_url_names_zip("file:///x.zip#mode=nczarr,zip"));
    CHECK(mzn_url_names_zip("a.zip#/member.h5"));
    CHECK(!mzn_url_names_zip("a.zip.nc"));
    CHECK(!mzn_url_names_zip("zip"));
    CHECK(mzn_url_has_scheme("file:///x"));
    CHECK(!mzn_url_has_scheme("x.zip#mode=a://b"));
    CHECK(mzn_url_selects_zip("file:///x.zip#mode=nczarr,zip"));
    CHECK(!mzn_url_selects_zip("file:///x.zarr#mode=nczarr,file"));
    CHECK(!mzn_url_selects_zip("file:///x.zip"));
}

static void test_fix_mode(void) {
    /* Already safe: unchanged. */
    check_fix("file:///x.zip#mode=nczarr,zip", NULL);
    check_fix("file:///x.zip#mode=zarr,zip", NULL);
    /* zarr last would hang netCDF-C 4.9.0: zip moves to the end. */
    check_fix("file:///x.zip#mode=zip,zarr", "file:///x.zip#mode=zarr,zip");
    check_fix("file:///x.zip#mode=zip,xarray&log", "file:///x.zip#mode=xarray,zip&log");
    /* zip alone does not select NCZarr. */
    check_fix("file:///x.zip#mode=zip", "file:///x.zip#mode=nczarr,zip");
    /* A .zip path with a format but no storage gets zip. */
    check_fix("file:///x.zip#mode=zarr", "file:///x.zip#mode=zarr,zip");
    check_fix("file:///x.zip#log&mode=nczarr&mmzip=raw", "file:///x.zip#log&mode=nczarr,zip&mmzip=raw");
    /* Not ours: other storages and paths are left alone. */
    check_fix("file:///x.zarr#mode=zarr", NULL);
    check_fix("file:///x.zip#mode=nczarr,file", NULL);
    check_fix("file:///x.zip", NULL);
}

/* Sub-datasets: "group=/a/b" in the fragment, percent-decoded and normalised; the builder encodes what would
 * break the fragment, and the parser gets the group back. */
static void test_group(void) {
    mzn_url u;
    CHECK(mzn_url_parse("file:///d/x.zip#mode=nczarr,zip&group=/lung/sub", &u) == NC_NOERR);
    CHECK_STR(u.path, "/d/x.zip");
    CHECK_STR(u.group, "lung/sub");
    mzn_url_clear(&u);
    CHECK(mzn_url_parse("file:///d/x.zip#group=//a%26b/c%20d//&mode=zarr,zip", &u) == NC_NOERR);
    CHECK_STR(u.group, "a&b/c d");
    mzn_url_clear(&u);
    CHECK(mzn_url_parse("file:///d/x.zip#mode=nczarr,zip", &u) == NC_NOERR);
    CHECK(u.group == NULL);
    mzn_url_clear(&u);
    CHECK(mzn_url_parse("file:///d/x.zip#mode=nczarr,zip&group=/", &u) == NC_EURL);
    CHECK(mzn_url_parse("file:///d/x.zip#mode=nczarr,zip&group=/a/../b", &u) == NC_EURL);
    CHECK(mzn_url_parse("file:///d/x.zip#mode=nczarr,zip&group=./a", &u) == NC_EURL);
    char *built = mzn_url_for_subdataset("/d/x#1.zip", "g&h/100%/q?");
    CHECK_STR(built, "file:///d/x%231.zip#mode=nczarr,zip&group=/g%26h/100%25/q%3F");
    CHECK(mzn_url_parse(built, &u) == NC_NOERR);
    CHECK_STR(u.path, "/d/x#1.zip");
    CHECK_STR(u.group, "g&h/100%/q?");
    mzn_url_clear(&u);
    free(built);
}

int main(void) {
    RUN(test_parse);
    RUN(test_group);
    RUN(test_for_path);
    RUN(test_names);
    RUN(test_fix_mode);
    return ctest_result();
}

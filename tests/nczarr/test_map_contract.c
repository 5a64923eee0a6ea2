/*
 * test_map_contract.c - the storage map's contract with NCZarr, driven directly through nczmap_create /
 * nczmap_open and the operations table (with the ABI of the netCDF-C installed here):
 *   - keys, NC_EEMPTY for absent objects and directories, reads at an offset, reads past the end;
 *   - search returns each child once, including metadata written but not yet published;
 *   - writes are invisible to other handles until close publishes them; an aborted create leaves nothing;
 *   - read-only sessions refuse writes; NC_NOCLOBBER refuses an existing file;
 *   - a blind rewrite of .zattrs (never read in the session) keeps the archived attributes, adding zero
 *     bytes, while a rewrite after reading replaces them (a deliberate deletion);
 *   - metadata rewritten with the same meaning but other bytes adds nothing;
 *   - NCZarr's own layout (everything under "<name>/") is read and appended to under its directory.
 *
 * usage: test_map_contract WORKDIR
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nczarr_ctest.h"
#include "zmap_calls.h"

static char dir[400];

static const char *path_of(const char *name) { return ctest_path_in(dir, name); }

static const char *url_of(const char *name) {
    static char u[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(u[k], sizeof u[k], "file://%s/%s#mode=nczarr,zip", dir, name);
    return u[k];
}

static long long file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

static void put_text(mzn_zmap *m, const char *key, const char *text) { NC_OK(zc_write(m, key, text, strlen(text))); }

/* The archived bytes of an entry, as a NUL-terminated string (static buffer). */
static const char *archived(const char *archive, const char *entry) {
    static char buf[4096];
    mmzip_t *a;
    OK(mmzip_open(archive, "r", NULL, &a));
    const void *data;
    uint64_t n;
    buf[0] = '\0';
    if (mmzip_get(a, entry, &data, &n) == MMZIP_OK && n < sizeof buf) {
        memcpy(buf, data, n);
        buf[n] = '\0';
    } else {
        snprintf(buf, sizeof buf, "(no entry %s)", entry);
    }
    OK(mmzip_close(a));
    return buf;
}

/* Names from a 4.9-layout NClist search, joined by ' '. */
/* netCDF-C's NClist, which search() fills through libnetcdf's nclistpush: its layout changed in 4.10. */
typedef struct list_v49 {
    size_t alloc, length;
    void **content;
} list_v49;
typedef struct list_v410 {
    void **content;
    size_t alloc, length;
    int extendible;
} list_v410;

static void search_names(mzn_zmap *map, const char *prefix, char *out, size_t cap) {
    int major = 0, minor = 0;
    mzn_release_from_string(nc_inq_libvers(), &major, &minor, NULL);
    list_v49 l49 = {0, 0, NULL};
    list_v410 l410 = {NULL, 0, 0, 1};
    int v410 = major > 4 || (major == 4 && minor >= 10);
    CHECK_RC(zc_search(map, prefix, v410 ? (void *)&l410 : (void *)&l49), NC_NOERR);
    void **content = v410 ? l410.content : l49.content;
    size_t length = v410 ? l410.length : l49.length;
    out[0] = '\0';
    for (size_t i = 0; i < length; i++) {
        if (i) strncat(out, " ", cap - strlen(out) - 1);
        strncat(out, content[i], cap - strlen(out) - 1);
        free(content[i]);
    }
    free(content);
}

static const char attrs[] = "{\"units\": \"m\", \"_ARRAY_DIMENSIONS\": [\"x\"], "
                            "\"_NCZARR_ATTR\": {\"types\": {\"units\": \"<U1\"}}}";
static const int chunk0[4] = {1, 2, 3, 4};
/* A .zarray as netCDF-C 4.9.0 writes it. */
static const char zarray[] = "{\"zarr_format\": 2, \"shape\": [4], \"dtype\": \"<i4\", \"chunks\": [4], "
                             "\"fill_value\": null, \"order\": \"C\", \"compressor\": null, \"filters\": null}";

static void make_dataset(const char *name) {
    mzn_zmap *m;
    NC_OK(nczmap_create(MZN_IMPL_ZIP, url_of(name), NC_NETCDF4, 8, NULL, &m));
    put_text(m, "/.zgroup", "{\"zarr_format\": 2}");
    put_text(m, "/v/.zarray", zarray);
    put_text(m, "/v/.zattrs", attrs);
    NC_OK(zc_write(m, "/v/0", chunk0, sizeof chunk0));
    /* Nothing is on disk before close publishes (the archive is created at its first commit). */
    CHECK(file_size(path_of(name)) == -1);
    char names[256];
    search_names(m, "/", names, sizeof names);
    CHECK_STR(names, ".zgroup v");
    search_names(m, "/v", names, sizeof names);
    CHECK_STR(names, ".zarray .zattrs 0");
    search_names(m, "/nothing", names, sizeof names);
    CHECK_STR(names, "");
    NC_OK(zc_close(m, 0));
    CHECK(file_size(path_of(name)) > 0);
}

static void test_reads(void) {
    make_dataset("reads.zip");
    mzn_zmap *m;
    NC_OK(nczmap_open(MZN_IMPL_ZIP, url_of("reads.zip"), NC_NETCDF4, 8, NULL, &m));
    mzn_size64 n = 99;
    CHECK_RC(zc_len(m, "/missing", &n), NC_EEMPTY);
    CHECK_EQ_U64(n, 0);
    CHECK_RC(zc_exists(m, "/v"), NC_EEMPTY);
    CHECK_RC(zc_exists(m, "/"), NC_EEMPTY);
    CHECK_RC(zc_exists(m, "/v/0"), NC_NOERR);
    NC_OK(zc_len(m, "/v/0", &n));
    CHECK_EQ_U64(n, 16);
    int tail[2];
    NC_OK(zc_read(m, "/v/0", 8, 8, tail));
    CHECK(tail[0] == 3 && tail[1] == 4);
    CHECK_RC(zc_read(m, "/v/0", 12, 8, tail), NC_EEDGE);
    CHECK_RC(zc_read(m, "/missing", 0, 1, tail), NC_EEMPTY);
    /* Read-only: writes are refused and change nothing. */
    CHECK_RC(zc_write(m, "/v/0", chunk0, 4), NC_EPERM);
    NC_OK(zc_close(m, 0));
    CHECK_STR(archived(path_of("reads.zip"), "v/.zattrs"), attrs);
}

static void test_create_rules(void) {
    mzn_zmap *m = NULL;
    make_dataset("exists.zip");
    CHECK_RC(nczmap_create(MZN_IMPL_ZIP, url_of("exists.zip"), NC_NETCDF4 | NC_NOCLOBBER, 8, NULL, &m), NC_EEXIST);
    /* An aborted create (deleteit) leaves no file behind, like nc_abort of an nc_create. */
    NC_OK(nczmap_create(MZN_IMPL_ZIP, url_of("aborted.zip"), NC_NETCDF4, 8, NULL, &m));
    put_text(m, "/.zgroup", "{\"zarr_format\": 2}");
    NC_OK(zc_close(m, 1));
    CHECK(file_size(path_of("aborted.zip")) == -1);
    /* Until it is closed, a create does not touch the archive it replaces. */
    long long before = file_size(path_of("exists.zip"));
    NC_OK(nczmap_create(MZN_IMPL_ZIP, url_of("exists.zip"), NC_NETCDF4, 8, NULL, &m));
    put_text(m, "/.zgroup", "{\"zarr_format\": 2, \"other\": 1}");
    CHECK(file_size(path_of("exists.zip")) == before);
    CHECK_STR(archived(path_of("exists.zip"), ".zgroup"), "{\"zarr_format\": 2}");
    NC_OK(zc_close(m, 0));
    CHECK_STR(archived(path_of("exists.zip"), ".zgroup"), "{\"zarr_format\": 2, \"other\": 1}");
    /* A missing archive cannot be opened. */
    CHECK(nczmap_open(MZN_IMPL_ZIP, url_of("missing.zip"), NC_NETCDF4, 8, NULL, &m) != NC_NOERR);
}

static void test_blind_attribute_rewrite(void) {
    make_dataset("attrs.zip");
    long long before = file_size(path_of("attrs.zip"));
    /* What netCDF-C 4.9.0 writes at close after an NC_WRITE open that never read the attributes. */
    mzn_zmap *m;
    NC_OK(nczmap_open(MZN_IMPL_ZIP, url_of("attrs.zip"), NC_NETCDF4 | NC_WRITE, 8, NULL, &m));
    put_text(m, "/v/.zattrs", "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"_NCZARR_ATTR\": {}}");
    /* Same meaning, other bytes: not a change. */
    put_text(m, "/v/.zarray", "{\"filters\": null, \"compressor\": null, \"order\": \"C\", \"fill_value\": null, "
                              "\"dtype\": \"<i4\", \"chunks\": [4], \"shape\": [4.0], \"zarr_format\": 2}");
    NC_OK(zc_close(m, 0));
    CHECK_STR(archived(path_of("attrs.zip"), "v/.zattrs"), attrs);
    CHECK(file_size(path_of("attrs.zip")) == before);

    /* A blind rewrite that adds an attribute keeps the archived ones too. */
    NC_OK(nczmap_open(MZN_IMPL_ZIP, url_of("attrs.zip"), NC_NETCDF4 | NC_WRITE, 8, NULL, &m));
    put_text(m, "/v/.zattrs", "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"note\": \"n\", "
                              "\"_NCZARR_ATTR\": {\"types\": {\"note\": \"<U1\"}}}");
    NC_OK(zc_close(m, 0));
    CHECK_STR(archived(path_of("attrs.zip"), "v/.zattrs"),
              "{\"units\": \"m\", \"_ARRAY_DIMENSIONS\": [\"x\"], \"_NCZARR_ATTR\": {\"types\": {\"units\": "
              "\"<U1\", \"note\": \"<U1\"}}, \"note\": \"n\"}");

    /* After reading the attributes, a rewrite is deliberate: a deleted attribute stays deleted, and the
     * archived object keeps what netCDF-C did not change (its type table, less the deleted entries). */
    NC_OK(nczmap_open(MZN_IMPL_ZIP, url_of("attrs.zip"), NC_NETCDF4 | NC_WRITE, 8, NULL, &m));
    char buf[512];
    mzn_size64 n;
    NC_OK(zc_len(m, "/v/.zattrs", &n));
    NC_OK(zc_read(m, "/v/.zattrs", 0, n, buf));
    const char reduced[] = "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"_NCZARR_ATTR\": {}}";
    put_text(m, "/v/.zattrs", reduced);
    const char stored[] = "{\"_ARRAY_DIMENSIONS\": [\"x\"], \"_NCZARR_ATTR\": {\"types\": {}}}";
    /* Reads in the session see what the latest write stores. */
    NC_OK(zc_len(m, "/v/.zattrs", &n));
    CHECK_EQ_U64(n, strlen(stored));
    NC_OK(zc_close(m, 0));
    CHECK_STR(archived(path_of("attrs.zip"), "v/.zattrs"), stored);
}

static void test_nczarr_layout(void) {
    /* The layout `zip -r ds.zip ds.zarr` gives: a directory entry first, everything under it. */
    const char *p = path_of("own.zip");
    mmzip_t *a;
    OK(mmzip_open(p, "w", NULL, &a));
    OK(mmzip_put(a, "ds.zarr/", "", 0, 0));
    OK(mmzip_put(a, "ds.zarr/.zgroup", "{\"zarr_format\": 2}", 18, 0));
    OK(mmzip_put(a, "ds.zarr/v/.zarray", zarray, strlen(zarray), 0));
    OK(mmzip_put(a, "ds.zarr/v/0", chunk0, sizeof chunk0, 0));
    OK(mmzip_close(a));
    mzn_zmap *m;
    NC_OK(nczmap_open(MZN_IMPL_ZIP, url_of("own.zip"), NC_NETCDF4 | NC_WRITE, 8, NULL, &m));
    mzn_size64 n;
    NC_OK(zc_len(m, "/v/0", &n));
    CHECK_EQ_U64(n, sizeof chunk0);
    CHECK_RC(zc_exists(m, "/ds.zarr/v/0"), NC_EEMPTY);
    char names[256];
    search_names(m, "/", names, sizeof names);
    CHECK_STR(names, ".zgroup v");
    NC_OK(zc_write(m, "/w/0", chunk0, sizeof chunk0));
    NC_OK(zc_close(m, 0));
    OK(mmzip_open(p, "r", NULL, &a));
    CHECK(mmzip_exists(a, "ds.zarr/w/0"));
    CHECK(!mmzip_exists(a, "w/0"));
    OK(mmzip_close(a));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    static const char *const used[] = {"reads.zip", "exists.zip", "aborted.zip", "attrs.zip", "own.zip"};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) unlink(path_of(used[i]));
    zc_abi = zc_abi_of(nc_inq_libvers());
    RUN(test_reads);
    RUN(test_create_rules);
    RUN(test_blind_attribute_rewrite);
    RUN(test_nczarr_layout);
    return ctest_result();
}

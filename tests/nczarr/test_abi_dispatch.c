/*
 * test_abi_dispatch.c - the plugin serves the storage-map ABI of the netCDF-C version it runs with.
 *
 * Only netCDF-C 4.9.0 is installed here, so this program stands in for the others: it defines its own
 * nc_inq_libvers() (which the plugin's call binds to, the executable coming first in symbol lookup) and
 * its own nclistpush() with the NClist layout of that version (4.10 re-laid NClist out), and then drives
 * the map exactly as that netCDF-C would: through the write() signature of its NCZMAP_API (4.9.3 dropped the
 * start argument), its search() list, and nczmap_truncate (4.9.3+). An unknown version must be refused with
 * NC_ENOTBUILT and a message on stderr.
 *
 * usage: test_abi_dispatch VERSION WORKDIR      (VERSION: 4.9.0, 4.9.3, 4.10.1, or an unknown one)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nczarr_ctest.h"
#include "zmap_calls.h"

static const char *fake_version;

/* Replaces libnetcdf's for the whole process: the plugin detects its ABI from this string. */
const char *nc_inq_libvers(void) { return fake_version; }

/* NClist as 4.9.x and 4.10.x lay it out (libdispatch/nclist.h). */
typedef struct list_v49 {
    size_t alloc;
    size_t length;
    void **content;
} list_v49;
typedef struct list_v410 {
    void **content;
    size_t alloc;
    size_t length;
    int extendible;
} list_v410;

static int push(void ***content, size_t *alloc, size_t *length, const void *elem) {
    if (*length == *alloc) {
        size_t cap = *alloc ? *alloc * 2 : 4;
        void **c = realloc(*content, cap * sizeof *c);
        if (!c) return 0;
        *content = c;
        *alloc = cap;
    }
    (*content)[(*length)++] = (void *)elem;
    return 1;
}

/* Replaces libnetcdf's: the layout follows the faked version, as the real one would. */
int nclistpush(void *list, const void *elem) {
    if (zc_abi == MZN_ABI_V410) {
        list_v410 *l = list;
        return push(&l->content, &l->alloc, &l->length, elem);
    }
    list_v49 *l = list;
    return push(&l->content, &l->alloc, &l->length, elem);
}

/* The names a search returned, joined by ' ', from the list layout of the faked version. */
static void search_names(mzn_zmap *map, const char *prefix, char *out, size_t cap) {
    list_v49 l49 = {0, 0, NULL};
    list_v410 l410 = {NULL, 0, 0, 1};
    void *list = zc_abi == MZN_ABI_V410 ? (void *)&l410 : (void *)&l49;
    CHECK_RC(zc_search(map, prefix, list), NC_NOERR);
    void **content = zc_abi == MZN_ABI_V410 ? l410.content : l49.content;
    size_t n = zc_abi == MZN_ABI_V410 ? l410.length : l49.length;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i) strncat(out, " ", cap - strlen(out) - 1);
        strncat(out, content[i], cap - strlen(out) - 1);
        free(content[i]);
    }
    free(content);
}

static void test_refused(const char *url) {
    /* Capture stderr to check the message. */
    char log[] = "/tmp/nczarr-abi-XXXXXX";
    int fd = mkstemp(log);
    int saved = dup(2);
    dup2(fd, 2);
    mzn_zmap *map = NULL;
    int rc = nczmap_create(MZN_IMPL_ZIP, url, NC_NETCDF4, 8, NULL, &map);
    dup2(saved, 2);
    close(saved);
    char msg[1024] = "";
    ssize_t n = pread(fd, msg, sizeof msg - 1, 0);
    msg[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(log);
    CHECK_RC(rc, NC_ENOTBUILT);
    CHECK(map == NULL);
    fprintf(stderr, "message: %s", msg);
    CHECK(strstr(msg, "is not supported") != NULL);
    CHECK(strstr(msg, fake_version) != NULL);
}

static void test_served(const char *dir, const char *url) {
    mzn_zmap *map = NULL;
    NC_OK(nczmap_create(MZN_IMPL_ZIP, url, NC_NETCDF4, 8, NULL, &map));
    CHECK(map != NULL && map->format == MZN_IMPL_ZIP);
    CHECK(map->api != NULL && zc_v490(map)->version == MZN_MAP_API_VERSION);
    const char zgroup[] = "{\"zarr_format\": 2}";
    const char zarray[] = "{\"zarr_format\": 2, \"shape\": [4], \"chunks\": [4], \"dtype\": \"<i4\"}";
    const int chunk[4] = {1, 2, 3, 4};
    NC_OK(zc_write(map, "/.zgroup", zgroup, strlen(zgroup)));
    NC_OK(zc_write(map, "/v/.zarray", zarray, strlen(zarray)));
    NC_OK(zc_write(map, "/v/0", chunk, sizeof chunk));
    if (zc_abi == MZN_ABI_V490)
        CHECK_RC(zc_v490(map)->write(map, "/v/0", 4, 4, chunk), NC_EEDGE); /* partial writes: refused */
    mzn_size64 n = 0;
    NC_OK(zc_len(map, "/v/0", &n));
    CHECK_EQ_U64(n, sizeof chunk);
    int middle[2] = {0, 0};
    NC_OK(zc_read(map, "/v/0", 4, 8, middle));
    CHECK(middle[0] == 2 && middle[1] == 3);
    CHECK_RC(zc_exists(map, "/v"), NC_EEMPTY); /* a directory is not an object */
    char names[256];
    search_names(map, "/", names, sizeof names);
    CHECK_STR(names, ".zgroup v");
    search_names(map, "/v", names, sizeof names);
    CHECK_STR(names, ".zarray 0");
    NC_OK(zc_close(map, 0));

    /* The archive holds exactly what was written, at the root. */
    char path[512];
    snprintf(path, sizeof path, "%s/abi.zip", dir);
    mmzip_t *a;
    OK(mmzip_open(path, "r", NULL, &a));
    CHECK_EQ_U64(mmzip_count(a), 3);
    const void *data;
    uint64_t size;
    OK(mmzip_get(a, "v/0", &data, &size));
    CHECK(size == sizeof chunk && memcmp(data, chunk, sizeof chunk) == 0);
    OK(mmzip_get(a, ".zgroup", &data, &size));
    CHECK(size == strlen(zgroup) && memcmp(data, zgroup, size) == 0);
    OK(mmzip_close(a));

    CHECK_EQ_U64(nczmap_features(MZN_IMPL_ZIP), zc_abi == MZN_ABI_V490 ? MZN_FEATURE_ZEROSTART : 0);
    if (zc_abi != MZN_ABI_V490) {
        /* 4.9.3+ "truncate": the archive stays, empty and valid. */
        NC_OK(nczmap_truncate(MZN_IMPL_ZIP, url));
        OK(mmzip_open(path, "r", NULL, &a));
        CHECK_EQ_U64(mmzip_count(a), 0);
        OK(mmzip_close(a));
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s VERSION WORKDIR\n", argv[0]);
        return 2;
    }
    fake_version = argv[1];
    zc_abi = zc_abi_of(fake_version);
    char url[600];
    snprintf(url, sizeof url, "file://%s/abi.zip#mode=nczarr,zip", argv[2]);
    char path[512];
    snprintf(path, sizeof path, "%s/abi.zip", argv[2]);
    unlink(path);
    if (zc_abi == MZN_ABI_UNKNOWN) test_refused(url);
    else test_served(argv[2], url);
    return ctest_result();
}

/*
 * test_c_api.c - issue point 7: the C API of the driver (H5FD_mmzip_init, H5Pset_fapl_mmzip,
 * H5Pget_fapl_mmzip) through HDF5's own C API, H5FD_MMZIP_VERIFY refusing a damaged member, and the plugin
 * entry points: exported against HDF5 >= 1.13.2 headers, absent against older ones.
 */
#include <dlfcn.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if H5_VERSION_GE(1, 13, 2)
#include <H5PLextern.h>
#endif

#include "H5FDmmzip.h"
#include "mmzip.h"

static int failures;

#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                          \
            fprintf(stderr, __VA_ARGS__);                                                                      \
            fputc('\n', stderr);                                                                               \
            failures++;                                                                                        \
        }                                                                                                      \
    } while (0)

enum { N = 4096 };

/* An archive holding one other entry, made with the core API. */
static void make_archive(const char *path) {
    mmzip_t *z;
    CHECK(mmzip_open(path, "w", NULL, &z) == MMZIP_OK, "%s", mmzip_last_error());
    CHECK(mmzip_put(z, "notes.txt", "hello", 5, 0) == MMZIP_OK, "%s", mmzip_last_error());
    CHECK(mmzip_close(z) == MMZIP_OK, "%s", mmzip_last_error());
}

static void test_registration(void) {
    hid_t a = H5FD_mmzip_init(), b = H5FD_MMZIP;
    CHECK(a >= 0, "H5FD_mmzip_init failed");
    CHECK(a == b, "second init gave another id (%lld vs %lld)", (long long)a, (long long)b);
    CHECK(H5Iget_type(a) == H5I_VFL, "the id is not a driver id");
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mmzip(fapl, "/dir/x.h5", H5FD_MMZIP_DURABLE) >= 0, "H5Pset_fapl_mmzip failed");
    CHECK(H5Pget_driver(fapl) == a, "the FAPL does not use the driver");
    char *member = NULL;
    unsigned flags = 0;
    CHECK(H5Pget_fapl_mmzip(fapl, &member, &flags) >= 0, "H5Pget_fapl_mmzip failed");
    CHECK(member && strcmp(member, "/dir/x.h5") == 0, "member read back as %s", member ? member : "NULL");
    CHECK(flags == H5FD_MMZIP_DURABLE, "flags read back as %u", flags);
    free(member);
    /* A copy of the FAPL carries a deep copy of the settings. */
    hid_t copy = H5Pcopy(fapl);
    H5Pclose(fapl);
    CHECK(H5Pget_fapl_mmzip(copy, &member, NULL) >= 0 && member && strcmp(member, "/dir/x.h5") == 0,
          "copied FAPL lost the member");
    free(member);
    H5Pclose(copy);

    /* Refusals. */
    hid_t bad = H5Pcreate(H5P_FILE_ACCESS);
    H5E_BEGIN_TRY {
        CHECK(H5Pset_fapl_mmzip(bad, NULL, 0x80) < 0, "unknown flags accepted");
        CHECK(H5Pset_fapl_mmzip(H5P_DATASET_XFER_DEFAULT, NULL, 0) < 0, "a transfer property list accepted");
        CHECK(H5Pget_fapl_mmzip(bad, &member, &flags) < 0, "H5Pget_fapl_mmzip on a sec2 FAPL succeeded");
    } H5E_END_TRY;
    H5Pclose(bad);
}

static void test_write_and_read(const char *dir) {
    char archive[4096], named[4200];
    snprintf(archive, sizeof archive, "%s/c-api.zip", dir);
    snprintf(named, sizeof named, "%s#/sub/data.h5", archive);
    make_archive(archive);

    int values[N];
    for (int i = 0; i < N; i++) values[i] = i * 3 - 7;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mmzip(fapl, "sub/data.h5", 0) >= 0, "set fapl");
    hid_t f = H5Fcreate(archive, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(f >= 0, "H5Fcreate of a member failed");
    hsize_t dims[1] = {N};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dset = H5Dcreate2(f, "values", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0, "H5Dwrite");
    H5Dclose(dset);
    H5Sclose(space);
    CHECK(H5Fclose(f) >= 0, "H5Fclose");
    H5Pclose(fapl);

    /* The member is a committed, stored entry beside the other one. */
    mmzip_t *z;
    CHECK(mmzip_open(archive, "r", NULL, &z) == MMZIP_OK, "%s", mmzip_last_error());
    mmzip_entry_info info;
    CHECK(mmzip_stat(z, "sub/data.h5", &info) == MMZIP_OK, "member missing: %s", mmzip_last_error());
    CHECK(info.method == 0 && info.data_offset % 4096 == 0, "method %u offset %llu", info.method,
          (unsigned long long)info.data_offset);
    CHECK(mmzip_exists(z, "notes.txt"), "the other entry is gone");
    const void *bytes;
    uint64_t size;
    CHECK(mmzip_get(z, "sub/data.h5", &bytes, &size) == MMZIP_OK && size > 8 &&
              memcmp(bytes, "\211HDF\r\n\032\n", 8) == 0,
          "the member does not start with the HDF5 signature");
    mmzip_close(z);

    /* Reopen by "archive#/member" with no member in the FAPL, durable flag on; append; read back. */
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mmzip(fapl, NULL, H5FD_MMZIP_DURABLE) >= 0, "set fapl");
    f = H5Fopen(named, H5F_ACC_RDWR, fapl);
    CHECK(f >= 0, "H5Fopen of archive#/member failed");
    hid_t got_fapl = H5Fget_access_plist(f);
    char *member = NULL;
    unsigned flags = 0;
    CHECK(H5Pget_fapl_mmzip(got_fapl, &member, &flags) >= 0, "H5Pget_fapl_mmzip on an open file's FAPL");
    CHECK(member && strcmp(member, "sub/data.h5") == 0, "open file reports member %s", member ? member : "NULL");
    CHECK(flags == H5FD_MMZIP_DURABLE, "open file reports flags %u", flags);
    free(member);
    H5Pclose(got_fapl);
    hid_t attr_space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(f, "answer", H5T_STD_I32LE, attr_space, H5P_DEFAULT, H5P_DEFAULT);
    int answer = 42;
    CHECK(H5Awrite(attr, H5T_NATIVE_INT, &answer) >= 0, "H5Awrite");
    H5Aclose(attr);
    H5Sclose(attr_space);
    CHECK(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush");
    CHECK(H5Fclose(f) >= 0, "H5Fclose");

    f = H5Fopen(named, H5F_ACC_RDONLY, fapl);
    CHECK(f >= 0, "reopen read-only");
    int back[N];
    memset(back, 0, sizeof back);
    dset = H5Dopen2(f, "values", H5P_DEFAULT);
    CHECK(H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0, "H5Dread");
    CHECK(memcmp(back, values, sizeof values) == 0, "values differ after the round trip");
    H5Dclose(dset);
    attr = H5Aopen(f, "answer", H5P_DEFAULT);
    answer = 0;
    CHECK(H5Aread(attr, H5T_NATIVE_INT, &answer) >= 0 && answer == 42, "attribute read back as %d", answer);
    H5Aclose(attr);
    H5Fclose(f);
    H5Pclose(fapl);
    unlink(archive);
}

static hid_t create_member(const char *archive, const char *member, const int *values) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mmzip(fapl, member, H5FD_MMZIP_VERIFY) >= 0, "set fapl with H5FD_MMZIP_VERIFY");
    hid_t f = H5Fcreate(archive, H5F_ACC_TRUNC, H5P_DEFAULT, fapl); /* created: nothing to check */
    CHECK(f >= 0, "H5Fcreate of %s with H5FD_MMZIP_VERIFY failed", member);
    hsize_t dims[1] = {N};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dset = H5Dcreate2(f, "values", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0, "H5Dwrite");
    H5Dclose(dset);
    H5Sclose(space);
    CHECK(H5Fclose(f) >= 0, "H5Fclose");
    return fapl;
}

/* H5FD_MMZIP_VERIFY: an undamaged member opens and reads; one flipped byte in a member fails its open. */
static void test_verify_flag(const char *dir) {
    char archive[4096];
    snprintf(archive, sizeof archive, "%s/verify.zip", dir);
    make_archive(archive);
    int values[N];
    for (int i = 0; i < N; i++) values[i] = i * 5 + 1;
    hid_t fapl_bad = create_member(archive, "bad.h5", values);
    hid_t fapl_good = create_member(archive, "good.h5", values);
    unsigned flags = 0;
    CHECK(H5Pget_fapl_mmzip(fapl_good, NULL, &flags) >= 0 && flags == H5FD_MMZIP_VERIFY, "flags read back as %u",
          flags);

    mmzip_t *z;
    mmzip_entry_info info;
    CHECK(mmzip_open(archive, "r", NULL, &z) == MMZIP_OK, "%s", mmzip_last_error());
    CHECK(mmzip_stat(z, "bad.h5", &info) == MMZIP_OK && info.data_offset > 0, "%s", mmzip_last_error());
    mmzip_close(z);
    FILE *fp = fopen(archive, "r+b");
    CHECK(fp != NULL, "fopen %s", archive);
    if (!fp) return;
    long at = (long)(info.data_offset + info.size - 1); /* the member's last byte */
    CHECK(fseek(fp, at, SEEK_SET) == 0, "seek");
    int c = fgetc(fp);
    CHECK(fseek(fp, at, SEEK_SET) == 0 && fputc(c ^ 0x21, fp) != EOF && fclose(fp) == 0, "flip a byte");

    hid_t f;
    H5E_BEGIN_TRY {
        f = H5Fopen(archive, H5F_ACC_RDONLY, fapl_bad);
    } H5E_END_TRY;
    CHECK(f < 0, "the damaged member opened with H5FD_MMZIP_VERIFY");
    if (f >= 0) H5Fclose(f);

    f = H5Fopen(archive, H5F_ACC_RDONLY, fapl_good);
    CHECK(f >= 0, "the undamaged member did not open with H5FD_MMZIP_VERIFY");
    if (f >= 0) {
        int back[N];
        memset(back, 0, sizeof back);
        hid_t dset = H5Dopen2(f, "values", H5P_DEFAULT);
        CHECK(H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0, "H5Dread");
        CHECK(memcmp(back, values, sizeof values) == 0, "values differ");
        H5Dclose(dset);
        H5Fclose(f);
    }
    H5Pclose(fapl_bad);
    H5Pclose(fapl_good);
    unlink(archive);
}

/* HDF5 drops registered drivers at H5close(); the next use registers the driver again. */
static void test_reinit_after_close(void) {
    hid_t before = H5FD_mmzip_init();
    H5close();
    H5open();
    hid_t after = H5FD_mmzip_init();
    CHECK(after >= 0 && H5Iget_type(after) == H5I_VFL, "no valid driver id after H5close (%lld, before %lld)",
          (long long)after, (long long)before);
}

static void test_plugin_entry_points(void) {
    void *lib = dlopen(MMZIP_H5FD_PATH, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "dlopen %s: %s", MMZIP_H5FD_PATH, dlerror());
    if (!lib) return;
    void *type_fn = dlsym(lib, "H5PLget_plugin_type");
    void *info_fn = dlsym(lib, "H5PLget_plugin_info");
#if H5_VERSION_GE(1, 13, 2)
    CHECK(type_fn && info_fn, "the plugin entry points are not exported against HDF5 %d.%d.%d", H5_VERS_MAJOR,
          H5_VERS_MINOR, H5_VERS_RELEASE);
    if (type_fn && info_fn) {
        H5PL_type_t (*get_type)(void) = (H5PL_type_t(*)(void))type_fn;
        const void *(*get_info)(void) = (const void *(*)(void))info_fn;
        CHECK(get_type() == H5PL_TYPE_VFD, "plugin type %d", (int)get_type());
        const H5FD_class_t *cls = get_info();
        CHECK(cls && cls->version == H5FD_CLASS_VERSION && strcmp(cls->name, H5FD_MMZIP_NAME) == 0 &&
                  cls->value == H5FD_MMZIP_VALUE,
              "plugin class does not describe the mmzip driver");
    }
#else
    CHECK(!type_fn && !info_fn, "plugin entry points exported against HDF5 %d.%d.%d, which cannot load VFD "
          "plugins", H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE);
#endif
    CHECK(dlsym(lib, "H5FD_mmzip_init") && dlsym(lib, "H5Pset_fapl_mmzip") && dlsym(lib, "H5Pget_fapl_mmzip"),
          "the public API is not exported");
    /* Internals stay hidden. */
    CHECK(!dlsym(lib, "h5mz_member_open") && !dlsym(lib, "h5mz_archive_acquire"), "internal symbols exported");
    dlclose(lib);
}

int main(void) {
    char dir[] = "/tmp/mmzip-h5fd-capi-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_registration();
    test_write_and_read(dir);
    test_verify_flag(dir);
    test_reinit_after_close();
    test_plugin_entry_points();
    rmdir(dir);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all passed\n");
    return 0;
}

/*
 * libzip_write - writes an archive with libzip (an independent writer for the tests), each entry compressed
 * with the method asked for.
 *
 *   usage: libzip_write ARCHIVE METHOD NAME FILE [NAME FILE ...]
 *
 * METHOD is a ZIP method number (0 stored, 8 deflate, 12 bzip2, 14 LZMA, 93 zstd, 95 xz). Exit status 2 if
 * this libzip cannot write that method (the caller then says so), 1 on any other failure.
 */
#include <zip.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 5 || argc % 2 != 1) {
        fprintf(stderr, "usage: libzip_write ARCHIVE METHOD NAME FILE [NAME FILE ...]\n");
        return 1;
    }
    int method = atoi(argv[2]);
    if (!zip_compression_method_supported(method, 1)) {
        fprintf(stderr, "libzip_write: libzip %s cannot write method %d\n", zip_libzip_version(), method);
        return 2;
    }
    int err;
    zip_t *z = zip_open(argv[1], ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!z) {
        fprintf(stderr, "libzip_write: cannot create %s (libzip error %d)\n", argv[1], err);
        return 1;
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        zip_source_t *src = zip_source_file(z, argv[i + 1], 0, -1);
        zip_int64_t idx = src ? zip_file_add(z, argv[i], src, ZIP_FL_OVERWRITE) : -1;
        if (idx < 0 || zip_set_file_compression(z, (zip_uint64_t)idx, method, 0) != 0) {
            fprintf(stderr, "libzip_write: %s: %s\n", argv[i], zip_strerror(z));
            if (idx < 0 && src) zip_source_free(src);
            zip_discard(z);
            return 1;
        }
    }
    if (zip_close(z) != 0) {
        fprintf(stderr, "libzip_write: cannot write %s: %s\n", argv[1], zip_strerror(z));
        zip_discard(z);
        return 1;
    }
    return 0;
}

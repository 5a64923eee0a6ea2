/*
 * view_probe.c - prints what the compatibility view presents for one key of an archive, without netCDF:
 *
 *   view_probe [--raw] [--prefix P] ARCHIVE KEY      the presented bytes on stdout
 *   view_probe --check-write [--prefix P] ARCHIVE KEY FILE   mzv_check_write's verdict for FILE's bytes
 *
 * Exit status: 0 the view serves KEY (bytes written) / the write is a no-op; 3 the view does not translate
 * KEY (the storage map would serve the archive entry) / the write may be stored; 2 an error (message on
 * stderr, e.g. an undecodable filter or a refused write); 1 bad usage.
 * The Python tests use it to compare the view's translation of every codec and dtype with zarr-python.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmzip.h"
#include "view.h"

static int usage(void) {
    fprintf(stderr, "usage: view_probe [--raw] [--prefix P] ARCHIVE KEY\n"
                    "       view_probe --check-write [--prefix P] ARCHIVE KEY FILE\n");
    return 1;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    int raw = 0, check_write = 0, i = 1;
    const char *prefix = "";
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--raw") == 0) raw = 1;
        else if (strcmp(argv[i], "--check-write") == 0) check_write = 1;
        else if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc) prefix = argv[++i];
        else return usage();
    }
    if (argc - i != (check_write ? 3 : 2)) return usage();
    const char *archive = argv[i], *key = argv[i + 1];
    mmzip_t *h;
    if (mmzip_open(archive, "r", NULL, &h) != MMZIP_OK) {
        fprintf(stderr, "view_probe: %s\n", mmzip_last_error());
        return 2;
    }
    mzv_view *v;
    int rc = mzv_open(h, prefix, !raw, &v);
    if (rc != NC_NOERR) {
        fprintf(stderr, "view_probe: mzv_open: %s\n", nc_strerror(rc));
        mmzip_close(h);
        return 2;
    }
    int status;
    if (check_write) {
        size_t len;
        char *data = slurp(argv[i + 2], &len);
        if (!data) {
            fprintf(stderr, "view_probe: cannot read %s\n", argv[i + 2]);
            status = 1;
        } else {
            rc = mzv_check_write(v, key, data, len);
            status = rc == 1 ? 0 : rc == 0 ? 3 : 2;
            if (rc < 0) fprintf(stderr, "view_probe: %s\n", nc_strerror(rc));
            free(data);
        }
    } else {
        const void *data;
        size_t len;
        rc = mzv_get(v, key, &data, &len);
        if (rc == 1) {
            status = fwrite(data, 1, len, stdout) == len ? 0 : 2;
        } else {
            status = rc == 0 ? 3 : 2;
            if (rc < 0) fprintf(stderr, "view_probe: %s\n", nc_strerror(rc));
        }
    }
    mzv_close(v);
    mmzip_close(h);
    return status;
}

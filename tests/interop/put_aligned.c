/*
 * put_aligned - writes entries with per-entry alignments through the C API (mmzip_put's alignment
 * argument), in one batch, so that the interop tests can check the local-header layout of each.
 *
 *   usage: put_aligned ARCHIVE ALIGN:KEY:FILE [ALIGN:KEY:FILE ...]
 *
 * ALIGN 0 means the archive's default. The archive is created if missing. Exit status 0 on success, 1 with
 * the library's message otherwise.
 */
#include "mmzip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = n > 0 ? (size_t)n : 0;
    return buf;
}

static int fail(const char *what, int status) {
    fprintf(stderr, "put_aligned: %s: %s (%s)\n", what, mmzip_last_error(), mmzip_strerror(status));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: put_aligned ARCHIVE ALIGN:KEY:FILE...\n");
        return 2;
    }
    mmzip_t *h;
    int st = mmzip_open(argv[1], "w+", NULL, &h);
    if (st) return fail("open", st);
    if ((st = mmzip_begin(h)) != MMZIP_OK) return fail("begin", st);
    for (int i = 2; i < argc; i++) {
        char *spec = argv[i], *key = strchr(spec, ':'), *file = key ? strchr(key + 1, ':') : NULL;
        if (!file) {
            fprintf(stderr, "put_aligned: '%s' is not ALIGN:KEY:FILE\n", spec);
            mmzip_rollback(h);
            mmzip_close(h);
            return 2;
        }
        *key++ = '\0';
        *file++ = '\0';
        size_t len;
        unsigned char *data = slurp(file, &len);
        if (!data) {
            perror(file);
            mmzip_rollback(h);
            mmzip_close(h);
            return 1;
        }
        st = mmzip_put(h, key, data, len, (uint32_t)strtoul(spec, NULL, 10));
        free(data);
        if (st) {
            fail(key, st);
            mmzip_rollback(h);
            mmzip_close(h);
            return 1;
        }
    }
    if ((st = mmzip_commit(h)) != MMZIP_OK) return fail("commit", st);
    if ((st = mmzip_close(h)) != MMZIP_OK) return fail("close", st);
    return 0;
}

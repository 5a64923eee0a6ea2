/*
 * libzip_poll - polls an archive that another process is appending to, the way a libzip user would, and
 * checks every byte it is given.
 *
 *   usage: libzip_poll ARCHIVE STOP_FILE
 *
 * Until STOP_FILE exists: zip_open(ARCHIVE, ZIP_RDONLY | ZIP_CHECKCONS), list the entries, read the newest
 * one (the greatest name) in full through zip_fread, which checks its CRC-32 after the last byte, and
 * compare it with the content its name implies (readers_during_append.py: the name followed by '|',
 * repeated and cut at the size the name ends with). One line per poll on stdout, after the times the poll
 * started and ended (CLOCK_MONOTONIC seconds, the clock of the writers' logs), "T0 T1 ":
 *   ok
 *   fail <libzip's message>        the archive or the entry was refused
 *   crc <name>                     libzip read bytes whose CRC-32 is wrong
 *   wrong <name>                   libzip handed out bytes that differ from what was written
 * ZIP_CHECKCONS makes libzip compare every local header with its directory record and the end records with
 * the file's layout, the strictest reading of the archive a third-party reader does.
 */
#include <zip.h>

#include "entry_content.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void poll_once(const char *path, FILE *out) {
    int err = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        fprintf(out, "fail zip_open: %s\n", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return;
    }
    zip_int64_t n = zip_get_num_entries(za, 0);
    const char *newest = NULL;
    zip_uint64_t newest_i = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        const char *nm = zip_get_name(za, (zip_uint64_t)i, 0);
        if (!nm) {
            fprintf(out, "fail zip_get_name: %s\n", zip_strerror(za));
            zip_discard(za);
            return;
        }
        if (!newest || strcmp(nm, newest) > 0) {
            newest = nm;
            newest_i = (zip_uint64_t)i;
        }
    }
    if (!newest) {
        fprintf(out, "ok\n");
        zip_discard(za);
        return;
    }
    char name[512];
    snprintf(name, sizeof name, "%s", newest);
    zip_stat_t zs;
    long long want = entry_name_size(name);
    if (zip_stat_index(za, newest_i, 0, &zs) != 0 || want < 0 || (zs.valid & ZIP_STAT_SIZE) == 0 ||
        zs.size != (zip_uint64_t)want) {
        fprintf(out, "wrong %s (size %llu, expected %lld)\n", name, (unsigned long long)zs.size, want);
        zip_discard(za);
        return;
    }
    unsigned char *buf = malloc(zs.size + 1);
    zip_file_t *zf = buf ? zip_fopen_index(za, newest_i, 0) : NULL;
    if (!zf) {
        fprintf(out, "fail zip_fopen: %s\n", zip_strerror(za));
        free(buf);
        zip_discard(za);
        return;
    }
    zip_uint64_t got = 0;
    for (;;) {
        zip_int64_t r = zip_fread(zf, buf + got, zs.size - got + 1 > 65536 ? 65536 : zs.size - got + 1);
        if (r < 0) {
            zip_error_t *e = zip_file_get_error(zf);
            if (zip_error_code_zip(e) == ZIP_ER_CRC) fprintf(out, "crc %s\n", name);
            else fprintf(out, "fail zip_fread: %s\n", zip_error_strerror(e));
            zip_fclose(zf);
            free(buf);
            zip_discard(za);
            return;
        }
        if (r == 0) break;
        got += (zip_uint64_t)r;
        if (got > zs.size) break;
    }
    zip_fclose(zf);
    if (got != zs.size || !entry_content_ok(name, buf, got)) fprintf(out, "wrong %s\n", name);
    else fprintf(out, "ok\n");
    free(buf);
    zip_discard(za);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: libzip_poll ARCHIVE STOP_FILE\n");
        return 2;
    }
    while (access(argv[2], F_OK) != 0) {
        if (access(argv[1], F_OK) != 0) {
            usleep(1000);
            continue;
        }
        /* The poll's line is built in memory and printed with its times once the poll is over. */
        char *line = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&line, &len);
        if (!mem) return 1;
        double t0 = now();
        poll_once(argv[1], mem);
        double t1 = now();
        fclose(mem);
        printf("%.6f %.6f %s", t0, t1, line);
        fflush(stdout);
        free(line);
    }
    return 0;
}

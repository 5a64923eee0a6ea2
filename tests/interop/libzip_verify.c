/*
 * libzip_verify - opens an archive with libzip's consistency check (ZIP_CHECKCONS) and reads every entry,
 * comparing its bytes with the file of the same name under an expected-content directory.
 *
 *   usage: libzip_verify [--default] ARCHIVE EXPECTED_DIR
 *          libzip_verify [--default] ARCHIVE -   (reads every entry, checking its CRC-32, compares with nothing)
 *
 * --default opens without ZIP_CHECKCONS, as most programs do.
 *
 * ZIP_CHECKCONS makes libzip compare each local header with its central-directory record and reject
 * duplicates; zip_fread checks each entry's CRC-32 when the last byte is read. Prints one line per entry
 * ("name size method") for the calling test to compare with what it wrote. Exit status 0 if every entry
 * matches, 1 otherwise, with the reason on stderr.
 */
#include <zip.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file into a malloc'ed buffer; NULL (errno set) on failure. */
static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            unsigned char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Reads entry i through libzip in odd-sized pieces, so that short reads and the final CRC check run. */
static int read_entry(zip_t *za, zip_uint64_t i, const char *name, unsigned char *out, zip_uint64_t size) {
    zip_file_t *zf = zip_fopen_index(za, i, 0);
    if (!zf) {
        fprintf(stderr, "libzip_verify: zip_fopen_index('%s'): %s\n", name, zip_strerror(za));
        return -1;
    }
    zip_uint64_t got = 0;
    for (;;) {
        zip_uint64_t want = size - got < 65521 ? size - got : 65521;
        zip_int64_t r = zip_fread(zf, out + got, want ? want : 1);
        if (r < 0) {
            fprintf(stderr, "libzip_verify: zip_fread('%s'): %s\n", name, zip_file_strerror(zf));
            zip_fclose(zf);
            return -1;
        }
        if (r == 0) break;
        got += (zip_uint64_t)r;
        if (got > size) break;
    }
    zip_fclose(zf);
    if (got != size) {
        fprintf(stderr, "libzip_verify: '%s': read %llu bytes, zip_stat says %llu\n", name,
                (unsigned long long)got, (unsigned long long)size);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    /* --default: libzip's default open, which takes among the end records in the file's last 64 KiB the one
     * whose directory spans the most, where ZIP_CHECKCONS accepts only the one that ends the file. */
    int flags = ZIP_RDONLY | ZIP_CHECKCONS;
    if (argc == 4 && strcmp(argv[1], "--default") == 0) {
        flags = ZIP_RDONLY;
        argv++;
        argc--;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: libzip_verify [--default] ARCHIVE EXPECTED_DIR\n");
        return 2;
    }
    int err = 0;
    zip_t *za = zip_open(argv[1], flags, &err);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        fprintf(stderr, "libzip_verify: zip_open('%s', %s): %s\n", argv[1],
                flags & ZIP_CHECKCONS ? "ZIP_CHECKCONS" : "default flags", zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return 1;
    }
    int bad = 0;
    zip_int64_t n = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) != 0) {
            fprintf(stderr, "libzip_verify: zip_stat_index(%lld): %s\n", (long long)i, zip_strerror(za));
            bad = 1;
            continue;
        }
        if (strcmp(argv[2], "-") == 0) {
            unsigned char *got = malloc(st.size ? st.size : 1);
            if (!got || read_entry(za, (zip_uint64_t)i, st.name, got, st.size) != 0) bad = 1;
            printf("%s %llu %u\n", st.name, (unsigned long long)st.size, (unsigned)st.comp_method);
            free(got);
            continue;
        }
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", argv[2], st.name);
        size_t want_len;
        unsigned char *want = read_file(path, &want_len);
        if (!want) {
            fprintf(stderr, "libzip_verify: '%s': no expected content at %s (%s)\n", st.name, path, strerror(errno));
            bad = 1;
            continue;
        }
        unsigned char *got = malloc(st.size ? st.size : 1);
        if (!got || read_entry(za, (zip_uint64_t)i, st.name, got, st.size) != 0) bad = 1;
        else if (st.size != want_len || memcmp(got, want, want_len) != 0) {
            fprintf(stderr, "libzip_verify: '%s': libzip reads %llu bytes that differ from the %zu expected\n",
                    st.name, (unsigned long long)st.size, want_len);
            bad = 1;
        }
        printf("%s %llu %u\n", st.name, (unsigned long long)st.size, (unsigned)st.comp_method);
        free(got);
        free(want);
    }
    zip_discard(za);
    return bad;
}

/*
 * tail_probe - the fastest reader of an archive that another process is appending to: it measures the
 * windows of the file itself, apart from those of the readers' own slowness.
 *
 *   usage: tail_probe ARCHIVE STOP_FILE [PAUSE_US]
 *
 * A third-party reader takes the file's size, reads the end records, then the directory, then an entry, in
 * separate system calls; if the file changes between two of them it fails, and the slower the reader (libzip
 * with ZIP_CHECKCONS reads every local header: 10-90 ms a poll) the more writer steps fall inside one poll.
 * This probe does the least any reader can: open, fstat, one pread of the tail, one of the directory, one of
 * the newest entry (about 0.1 ms for 1,500 entries), and accepts only what every reader accepts
 * (docs/protocol.md §3.2): the end record exactly at the end of the file (libzip's rule), the ZIP64 end records
 * right before it, the directory right before those (zipfile's rule: it reads the directory at "end records
 * minus directory size"), every directory record well formed and counted, and the newest entry's local header
 * naming it, its bytes what its name implies (readers_during_append.py: the name and '|', repeated, cut at the
 * size the name ends with) and their CRC-32 the recorded one. So a failed probe poll means the file was not
 * a valid archive for every reader for some of those 0.1 ms (or changed between its reads), and a burst of
 * failed probe polls is, to within one poll, how long the file had no valid tail.
 *
 * Until STOP_FILE exists it polls, pausing PAUSE_US microseconds (default 100) between polls so that it
 * takes a fraction of a core from the writer and the other readers. One line per poll on stdout, as
 * libzip_poll prints them: "T0 T1 ok", "T0 T1 fail <what>", "T0 T1 crc <name>", "T0 T1 wrong <name>"
 * (CLOCK_MONOTONIC seconds, the clock of the writers' logs).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "entry_content.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32_of(const unsigned char *p, uint64_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t u64(const unsigned char *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

static int read_at(int fd, void *buf, uint64_t len, uint64_t off) {
    uint64_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r <= 0) return -1;
        got += (uint64_t)r;
    }
    return 0;
}

#define FAIL(...) do { fprintf(out, "fail " __VA_ARGS__); fputc('\n', out); goto done; } while (0)

static void poll_once(int fd, FILE *out) {
    unsigned char *tail = NULL, *cd = NULL, *data = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) FAIL("fstat");
    uint64_t size = (uint64_t)st.st_size;
    if (size < 22) FAIL("shorter than an end record (%llu bytes)", (unsigned long long)size);
    uint64_t tlen = size < 65535 + 22 + 20 + 56 ? size : 65535 + 22 + 20 + 56;
    tail = malloc(tlen);
    if (!tail || read_at(fd, tail, tlen, size - tlen)) FAIL("read of the tail");
    /* The end record whose comment ends the file exactly: libzip's rule, the strictest reader's. */
    int64_t e = -1;
    for (int64_t i = (int64_t)tlen - 22; i >= 0; i--)
        if (u32(tail + i) == 0x06054b50 && (uint64_t)i + 22 + u16(tail + i + 20) == tlen) {
            e = i;
            break;
        }
    if (e < 0) {
        /* What the file ends with instead, for the poll's line: where the last end record is, if any, and
         * whether the last 4 KiB read as zeros (a size moved before the bytes below it were written). */
        int64_t last = -1;
        for (int64_t i = (int64_t)tlen - 22; i >= 0 && last < 0; i--)
            if (u32(tail + i) == 0x06054b50) last = i;
        int zeros = 1;
        for (uint64_t i = tlen > 4096 ? tlen - 4096 : 0; i < tlen && zeros; i++) zeros = tail[i] == 0;
        FAIL("no end record ends the file (size %llu, last end record %lld bytes before the end, last 4 KiB %s)",
             (unsigned long long)size, last < 0 ? -1LL : (long long)(tlen - (uint64_t)last),
             zeros ? "zeros" : "not zeros");
    }
    uint64_t eocd = size - tlen + (uint64_t)e, n = u16(tail + e + 10), cd_size = u32(tail + e + 12),
             cd_off = u32(tail + e + 16), ends_at = eocd;
    if (e >= 20 && u32(tail + e - 20) == 0x07064b50) {
        /* ZIP64: zipfile takes the ZIP64 end record to be exactly 56 bytes before the locator. */
        if (e < 76 || u32(tail + e - 76) != 0x06064b50) FAIL("no ZIP64 end record right before its locator");
        if (u64(tail + e - 20 + 8) != eocd - 76) FAIL("ZIP64 locator points elsewhere");
        const unsigned char *z = tail + e - 76;
        n = u64(z + 32);
        cd_size = u64(z + 40);
        cd_off = u64(z + 48);
        ends_at = eocd - 76;
    }
    if (cd_off + cd_size != ends_at) FAIL("directory not right before the end records");
    cd = malloc(cd_size ? cd_size : 1);
    if (!cd || read_at(fd, cd, cd_size, cd_off)) FAIL("read of the directory");
    char newest[512] = "";
    uint64_t nw_off = 0, nw_size = 0, p = 0;
    uint32_t nw_crc = 0;
    for (uint64_t k = 0; k < n; k++) {
        if (p + 46 > cd_size || u32(cd + p) != 0x02014b50) FAIL("directory record %llu malformed", (unsigned long long)k);
        uint16_t nl = u16(cd + p + 28), xl = u16(cd + p + 30), cl = u16(cd + p + 32);
        if (p + 46 + nl + xl + cl > cd_size) FAIL("directory record %llu runs past the directory", (unsigned long long)k);
        char name[512];
        if (nl >= sizeof name) FAIL("name too long");
        memcpy(name, cd + p + 46, nl);
        name[nl] = 0;
        if (strncmp(name, "k/", 2) == 0 && strcmp(name, newest) > 0) {
            uint64_t usize = u32(cd + p + 24), off = u32(cd + p + 42);
            /* ZIP64 extra: the fields that are all ones, in order. */
            for (uint64_t x = p + 46 + nl; x + 4 <= p + 46 + nl + xl;) {
                uint16_t id = u16(cd + x), len = u16(cd + x + 2);
                if (id == 1) {
                    const unsigned char *f = cd + x + 4;
                    if (usize == 0xFFFFFFFFu) { usize = u64(f); f += 8; }
                    if (u32(cd + p + 20) == 0xFFFFFFFFu) f += 8;
                    if (off == 0xFFFFFFFFu) off = u64(f);
                }
                x += 4 + (uint64_t)len;
            }
            if (u16(cd + p + 10) != 0) FAIL("entry not stored");
            snprintf(newest, sizeof newest, "%s", name);
            nw_off = off;
            nw_size = usize;
            nw_crc = u32(cd + p + 16);
        }
        p += 46 + (uint64_t)nl + xl + cl;
    }
    if (p != cd_size) FAIL("directory size does not match its records");
    if (!newest[0]) {
        fprintf(out, "ok\n");
        goto done;
    }
    if ((long long)nw_size != entry_name_size(newest)) {
        fprintf(out, "wrong %s (size %llu)\n", newest, (unsigned long long)nw_size);
        goto done;
    }
    unsigned char lfh[30];
    if (read_at(fd, lfh, 30, nw_off) || u32(lfh) != 0x04034b50) FAIL("no local header for the newest entry");
    uint64_t data_off = nw_off + 30 + u16(lfh + 26) + u16(lfh + 28), nl = u16(lfh + 26);
    data = malloc(nw_size + nl + 1);
    if (!data || read_at(fd, data, nl, nw_off + 30)) FAIL("read of the local header's name");
    if (nl != strlen(newest) || memcmp(data, newest, nl) != 0) FAIL("local header names another entry");
    if (read_at(fd, data, nw_size, data_off)) FAIL("read of the newest entry's bytes");
    if (crc32_of(data, nw_size) != nw_crc) fprintf(out, "crc %s\n", newest);
    else if (!entry_content_ok(newest, data, nw_size)) fprintf(out, "wrong %s\n", newest);
    else fprintf(out, "ok\n");
done:
    free(tail);
    free(cd);
    free(data);
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: tail_probe ARCHIVE STOP_FILE [PAUSE_US]\n");
        return 2;
    }
    long pause_us = argc == 4 ? atol(argv[3]) : 100;
    crc_init();
    while (access(argv[2], F_OK) != 0) {
        char *line = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&line, &len);
        if (!mem) return 1;
        double t0 = now();
        int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0) { /* start "none": nothing to read until the first commit names the file */
            fclose(mem);
            free(line);
            usleep(1000);
            continue;
        }
        poll_once(fd, mem);
        close(fd);
        double t1 = now();
        fclose(mem);
        printf("%.6f %.6f %s", t0, t1, line);
        fflush(stdout);
        free(line);
        if (pause_us > 0) usleep((useconds_t)pause_us);
    }
    return 0;
}

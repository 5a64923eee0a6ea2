/*
 * test_view_mutations.c - hostile archives: every metadata document and chunk of a small archive is
 * mutated (bytes flipped, truncated, duplicated) many times over, deterministically, and the view must
 * answer every key with one of its documented results - never crash, never read out of bounds (run under
 * the ASan+UBSan configuration), and only ever serve JSON that parses as metadata.
 */
#define _GNU_SOURCE
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "mmzip.h"
#include "view.h"
#include "json.h"

typedef struct entry {
    const char *name;
    unsigned char data[256];
    size_t len;
} entry;

static entry originals[32];
static size_t n_originals;

static void add(const char *name, const void *data, size_t len) {
    entry *e = &originals[n_originals++];
    e->name = name;
    memcpy(e->data, data, len);
    e->len = len;
}

static void add_text(const char *name, const char *text) { add(name, text, strlen(text)); }

static void build_originals(void) {
    add_text(".zgroup", "{\"zarr_format\": 2}");
    add_text(".zattrs", "{\"a\": [\"x\", 1], \"b\": {\"c\": null}, \"d\": \"\\u00e9\"}");
    add_text("s/.zarray", "{\"zarr_format\": 2, \"shape\": [3], \"chunks\": [2], \"dtype\": \"|O\", \"compressor\": "
                          "null, \"fill_value\": null, \"filters\": [{\"id\": \"vlen-utf8\"}], \"order\": \"C\"}");
    const unsigned char vlen[] = {2, 0, 0, 0, 1, 0, 0, 0, 'a', 2, 0, 0, 0, 'b', 'c'};
    add("s/0", vlen, sizeof vlen);
    add_text("z/.zarray", "{\"zarr_format\": 2, \"shape\": [2, 3], \"chunks\": [2, 2], \"dtype\": \">i4\", "
                          "\"compressor\": {\"id\": \"zlib\"}, \"fill_value\": 5, \"filters\": null, \"order\": \"F\"}");
    add_text("z/.zattrs", "{\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"], \"_FillValue\": [5]}");
    const int32_t values[] = {1, 2, 3, 4};
    unsigned char packed[64];
    uLongf plen = sizeof packed;
    compress2(packed, &plen, (const Bytef *)values, sizeof values, 6);
    add("z/0.0", packed, plen);
    add("z/0.1", packed, plen);
    add_text("u/.zarray", "{\"zarr_format\": 2, \"shape\": [2], \"chunks\": [4], \"dtype\": \"<U2\", "
                          "\"compressor\": null, \"fill_value\": \"\", \"filters\": null, \"order\": \"C\"}");
    const unsigned char ucs4[32] = {'h', 0, 0, 0, 'i', 0, 0, 0, 0xE9, 0, 0, 0};
    add("u/0", ucs4, sizeof ucs4);
    add_text("e/.zarray", "{\"zarr_format\": 2, \"shape\": [0], \"chunks\": [0], \"dtype\": \"<f2\", "
                          "\"compressor\": null, \"fill_value\": null, \"filters\": null, \"order\": \"C\"}");
}

static const char *const keys[] = {"/.zgroup", "/.zattrs", "/s/.zarray", "/s/.zattrs", "/s/0.0", "/s/1.0",
                                   "/z/.zarray", "/z/.zattrs", "/z/0.0", "/z/0.1", "/z/1.0", "/u/.zarray",
                                   "/u/0.0", "/e/.zarray", "/e/0", "/e/0.0", "/nope/0"};

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int failures, opened, served;

/* Writes the originals with entry `victim` mutated. */
static void write_mutant(const char *path, size_t victim) {
    mmzip_t *h;
    unlink(path);
    if (mmzip_open(path, "w", NULL, &h) != MMZIP_OK) {
        fprintf(stderr, "cannot create %s: %s\n", path, mmzip_last_error());
        exit(1);
    }
    mmzip_begin(h);
    for (size_t i = 0; i < n_originals; i++) {
        unsigned char buf[512];
        size_t len = originals[i].len;
        memcpy(buf, originals[i].data, len);
        if (i == victim) {
            switch (next() % 4) {
            case 0: /* flip a few bytes */
                for (int k = 0; k < 1 + (int)(next() % 3) && len; k++) buf[next() % len] ^= (unsigned char)(1 + next() % 255);
                break;
            case 1: /* truncate */
                len = len ? next() % len : 0;
                break;
            case 2: /* duplicate a slice onto the end */
                if (len) {
                    size_t from = next() % len, n = 1 + next() % (len - from);
                    memcpy(buf + len, buf + from, n);
                    len += n;
                }
                break;
            default: /* replace a digit with a huge number */
                for (size_t k = 0; k < len; k++)
                    if (buf[k] >= '0' && buf[k] <= '9') {
                        memmove(buf + k + 19, buf + k + 1, len - k - 1);
                        memcpy(buf + k, "9999999999999999999", 19);
                        len += 18;
                        break;
                    }
                break;
            }
        }
        mmzip_put(h, originals[i].name, buf, len, 0);
    }
    mmzip_commit(h);
    mmzip_close(h);
}

static void probe(const char *path, int round) {
    mmzip_t *h;
    if (mmzip_open(path, "r", NULL, &h) != MMZIP_OK) return;
    mzv_view *v;
    int rc = mzv_open(h, "", 1, &v);
    if (rc != NC_NOERR) {
        if (rc != NC_ENCZARR && rc != NC_ENOMEM) {
            fprintf(stderr, "round %d: mzv_open returned %d\n", round, rc);
            failures++;
        }
        mmzip_close(h);
        return;
    }
    opened++;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const void *data;
        size_t len;
        rc = mzv_get(v, keys[k], &data, &len);
        if (rc == 1) {
            served++;
            /* every served byte must be readable; metadata must be JSON 4.9.0 can parse */
            volatile unsigned char sum = 0;
            for (size_t i = 0; i < len; i++) sum ^= ((const unsigned char *)data)[i];
            (void)sum;
            if (strstr(keys[k], "/.z")) {
                mzj_value *j;
                char err[128];
                if (mzj_parse(data, len, &j, err, sizeof err) != 0) {
                    fprintf(stderr, "round %d: %s served invalid JSON: %s\n", round, keys[k], err);
                    failures++;
                }
                mzj_free(j);
            }
            if (mzv_check_write(v, keys[k], data, len) != 1) {
                fprintf(stderr, "round %d: %s: writing back what was served is not a no-op\n", round, keys[k]);
                failures++;
            }
        } else if (rc != 0 && rc != NC_EFILTER && rc != NC_ENCZARR && rc != NC_ENOMEM) {
            fprintf(stderr, "round %d: %s: unexpected result %d\n", round, keys[k], rc);
            failures++;
        }
    }
    mzv_close(v);
    mmzip_close(h);
}

int main(void) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/mmzip-view-mutations-%d.zarr.zip", (int)getpid());
    build_originals();
    write_mutant(path, (size_t)-1);
    probe(path, -1);
    int rounds = 1500;
    for (int round = 0; round < rounds; round++) {
        write_mutant(path, (size_t)(next() % n_originals));
        probe(path, round);
    }
    unlink(path);
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    /* A mutated chunk does not spoil the rest: a good part of the mutants must still open (a broken
     * metadata document fails the open, by design). */
    if (opened < rounds / 4 || served < rounds) {
        fprintf(stderr, "only %d of %d views opened, %d objects served\n", opened, rounds, served);
        return 1;
    }
    printf("%d mutated archives: %d views opened, %d objects served, all as documented\n", rounds, opened, served);
    return 0;
}

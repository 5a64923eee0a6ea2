/*
 * fuzz_view.c - the fuzz target of the netCDF compatibility view: archive metadata is untrusted input.
 *
 * An input is a list of archive entries, each "name\n" followed by its bytes, entries separated by the line
 * "\n@@\n" (a text format, so that libFuzzer's mutations of JSON stay meaningful). The entries are stored in
 * a ZIP archive in a memfd, which the view analyses as netCDF-C's storage map would open it. Then:
 *   - every key the view knows (.zarray, .zattrs, .zgroup, and the first chunks of each array) is served;
 *   - writing back exactly what the view presents is a no-op (mzv_check_write returns 1): an idle netCDF
 *     write session must store nothing;
 *   - every entry is parsed with the view's JSON parser; a value that parses must print (raw UTF-8 and
 *     ASCII-escaped) to text that parses back to an equal value.
 * A broken invariant aborts, which libFuzzer and the replay driver report as a crash.
 *
 * The view reports every refusal on stderr: run libFuzzer with -close_fd_mask=2 (its own reports survive).
 *
 * Built twice: with clang -fsanitize=fuzzer,address,undefined as the libFuzzer target fuzz_view (CMake option
 * MMZIP_FUZZ), and with the normal compiler into fuzz_view_replay, which CTest runs over view_corpus/.
 */
#define _GNU_SOURCE /* memfd_create */
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mmzip.h"
#include "view.h"
#include "view_internal.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ENTRIES 48
#define SEPARATOR "\n@@\n"
/* Chunks above this are not requested: a hostile shape may make the view allocate up to 2^40 bytes, which
 * it is allowed to try (malloc fails cleanly outside the fuzzer); libFuzzer would report it as a crash. */
#define MAX_CHUNK_BYTES ((size_t)16 << 20)

static void invariant(int ok, const char *what, const char *detail) {
    if (ok) return;
    fprintf(stderr, "fuzz_view: invariant broken: %s (%s)\n", what, detail ? detail : "");
    abort();
}

typedef struct entry {
    char name[256];
    const uint8_t *data;
    size_t len;
} entry;

/* A usable entry name: relative, printable, no empty or ".." segment. */
static int name_ok(const char *n) {
    if (!n[0] || n[0] == '/' || strstr(n, "//") || strstr(n, "..")) return 0;
    for (const char *p = n; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '\\') return 0;
    return n[strlen(n) - 1] != '/';
}

static size_t split(const uint8_t *data, size_t size, entry *out) {
    size_t n = 0, pos = 0, sep = strlen(SEPARATOR);
    while (pos < size && n < MAX_ENTRIES) {
        const uint8_t *end = memmem(data + pos, size - pos, SEPARATOR, sep);
        size_t rec_len = end ? (size_t)(end - (data + pos)) : size - pos;
        const uint8_t *nl = memchr(data + pos, '\n', rec_len);
        if (nl) {
            size_t name_len = (size_t)(nl - (data + pos));
            if (name_len < sizeof out[n].name) {
                memcpy(out[n].name, data + pos, name_len);
                out[n].name[name_len] = '\0';
                if (name_ok(out[n].name) && !memchr(out[n].name, '\0', name_len)) {
                    out[n].data = nl + 1;
                    out[n].len = rec_len - name_len - 1;
                    n++;
                }
            }
        }
        pos += rec_len + (end ? sep : 0);
    }
    return n;
}

static void check_json(const uint8_t *data, size_t len) {
    mzj_value *v;
    if (mzj_parse((const char *)data, len, &v, NULL, 0) != 0) return;
    for (int ascii = 0; ascii < 2; ascii++) {
        size_t n;
        char *text = ascii ? mzj_to_ascii_text(v, &n) : mzj_to_text(v, &n);
        invariant(text != NULL, "a parsed value prints", NULL);
        if (ascii)
            for (size_t i = 0; i < n; i++) invariant((unsigned char)text[i] < 0x80, "ASCII output is ASCII", text);
        mzj_value *back;
        char err[128];
        invariant(mzj_parse(text, n, &back, err, sizeof err) == 0, "printed JSON parses back", err);
        invariant(mzj_equal(v, back), "printed JSON parses back to an equal value", text);
        mzj_free(back);
        free(text);
    }
    mzj_free(v);
}

/* Serves key; if the view presents it, writing the same bytes back must be a no-op. */
static void serve_and_write_back(mzv_view *v, const char *key) {
    const void *shown;
    size_t len;
    if (mzv_get(v, key, &shown, &len) != 1) return;
    void *copy = malloc(len ? len : 1);
    if (!copy) return;
    memcpy(copy, shown, len);
    int r = mzv_check_write(v, key, copy, len);
    if (r != 1) fprintf(stderr, "fuzz_view: %s presented as %zu bytes: %.*s\n", key, len, (int)len, (const char *)shown);
    invariant(r == 1, "writing back what the view presents is a no-op", key);
    free(copy);
}

static void exercise_view(mzv_view *v) {
    char key[600];
    for (size_t i = 0; i < v->group_count; i++) {
        const char *p = v->groups[i].path;
        snprintf(key, sizeof key, "/%s%s.zgroup", p, p[0] ? "/" : "");
        serve_and_write_back(v, key);
        snprintf(key, sizeof key, "/%s%s.zattrs", p, p[0] ? "/" : "");
        serve_and_write_back(v, key);
    }
    static const char *const chunks[] = {"0", "0.0", "0.0.0", "1", "0.1", "1.0", "0/0", "0.0.0.0"};
    for (size_t i = 0; i < v->array_count; i++) {
        const mzv_array *a = &v->arrays[i];
        snprintf(key, sizeof key, "/%s/.zarray", a->path);
        serve_and_write_back(v, key);
        snprintf(key, sizeof key, "/%s/.zattrs", a->path);
        serve_and_write_back(v, key);
        uint64_t decoded = a->chunk_elements * (uint64_t)(a->z.dtype.itemsize ? a->z.dtype.itemsize : 1);
        if (a->chunk_bytes > MAX_CHUNK_BYTES || decoded > MAX_CHUNK_BYTES) continue;
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            snprintf(key, sizeof key, "/%s/%s", a->path, chunks[c]);
            serve_and_write_back(v, key);
        }
    }
    (void)mzv_active(v);
    (void)mzv_last_error(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setenv("MMZIP_NCZARR_VIEW_CACHE_MB", "16", 0);
    entry *entries = calloc(MAX_ENTRIES, sizeof *entries);
    if (!entries) return 0;
    size_t n = split(data, size, entries);
    for (size_t i = 0; i < n; i++) check_json(entries[i].data, entries[i].len);

    int fd = memfd_create("fuzz_view.zip", MFD_CLOEXEC);
    if (fd < 0) {
        free(entries);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    mmzip_t *w;
    int stored = 0;
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags = (o.flags & ~(uint32_t)MMZIP_DURABLE) | MMZIP_NO_LOCK; /* a memfd: no fsync, no lock file */
    int st = mmzip_open(path, "w+", &o, &w);
    if (getenv("FUZZ_VIEW_VERBOSE") && st != MMZIP_OK) fprintf(stderr, "fuzz_view: open w: %s\n", mmzip_last_error());
    if (st == MMZIP_OK) {
        for (size_t i = 0; i < n; i++)
            if (mmzip_put(w, entries[i].name, entries[i].data, entries[i].len, 0) == MMZIP_OK) stored++;
        stored = mmzip_close(w) == MMZIP_OK ? stored : 0;
    }
    mmzip_t *r;
    if (stored && mmzip_open(path, "r", &o, &r) == MMZIP_OK) {
        mzv_view *v;
        int rc = mzv_open(r, "", 1, &v);
        if (getenv("FUZZ_VIEW_VERBOSE"))
            fprintf(stderr, "fuzz_view: %zu entries stored, view open: %d, %zu arrays, %zu groups\n", n, rc,
                    rc ? (size_t)0 : v->array_count, rc ? (size_t)0 : v->group_count);
        if (rc == NC_NOERR) {
            exercise_view(v);
            mzv_close(v);
        }
        mmzip_close(r);
    }
    close(fd);
    free(entries);
    return 0;
}

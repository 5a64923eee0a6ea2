/*
 * fuzz_archive.c - the fuzz target: arbitrary bytes as an archive file, through every reading path of the
 * core and through a writable open (recovery) followed by an append.
 *
 * The bytes go into a memfd (no disk, no name clashes between runs) that mmzip opens by its /proc path, so
 * the store maps a real file exactly as it would a regular one. Read-only: open, info, list, stat, get (every
 * byte touched), typed view, partial reads, check. Writable: open "r+" (which recovers a torn tail), append
 * one entry, commit, close; then a fresh read-only open must list the entry with its exact bytes, every
 * entry the first read-only open could read must read the same, and an archive that passed mmzip_check
 * before must pass it after. A broken invariant aborts, which libFuzzer and
 * the replay driver report as a crash.
 *
 * Built twice: with clang -fsanitize=fuzzer,address as the libFuzzer target (CMake option MMZIP_FUZZ), and
 * with the normal compiler into fuzz_replay, which CTest runs over the committed corpus.
 */
#define _GNU_SOURCE /* memfd_create */
#include "mmzip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NEW_KEY "fuzz/appended.bin"

static void invariant(int ok, const char *what, const char *path) {
    if (ok) return;
    fprintf(stderr, "fuzz_archive: invariant broken: %s (%s; last error: %s)\n", what, path, mmzip_last_error());
    abort();
}

typedef struct {
    char **names;
    size_t n, cap;
} name_list;

static int collect_name(const mmzip_entry_info *info, void *ctx) {
    name_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **bigger = realloc(l->names, cap * sizeof *bigger);
        if (!bigger) return 1;
        l->names = bigger;
        l->cap = cap;
    }
    char *copy = malloc(info->name_len + 1);
    if (!copy) return 1;
    memcpy(copy, info->name, info->name_len);
    copy[info->name_len] = '\0';
    l->names[l->n++] = copy;
    return 0;
}

static void free_names(name_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
}

/* Touches every byte so that a view reaching past the mapping faults here, under the fuzzer. */
static unsigned touch(const void *p, uint64_t n) {
    const volatile unsigned char *b = p;
    unsigned sum = 0;
    for (uint64_t i = 0; i < n; i++) sum += b[i];
    return sum;
}

static void read_everything(mmzip_t *h) {
    mmzip_info info;
    mmzip_get_info(h, &info);
    name_list l = {0};
    mmzip_list_ex(h, NULL, 0, collect_name, &l);
    for (size_t i = 0; i < l.n; i++) {
        const char *key = l.names[i];
        mmzip_entry_info st;
        if (mmzip_stat(h, key, &st) != MMZIP_OK) continue;
        const void *p;
        uint64_t n;
        if (mmzip_get(h, key, &p, &n) == MMZIP_OK) {
            touch(p, n);
            invariant(n == st.size, "mmzip_get size equals mmzip_stat size", key);
        }
        const void *typed = mmzip_get_typed(h, key, 4, 4, st.size / 4);
        if (typed) touch(typed, st.size / 4 * 4);
        unsigned char buf[64];
        size_t got;
        if (mmzip_read(h, key, st.size > 10 ? st.size - 10 : 0, buf, sizeof buf, &got) == MMZIP_OK)
            invariant(got <= sizeof buf, "mmzip_read stays within its buffer", key);
    }
    /* Prefix listing walks the sorted index from a binary-searched start. */
    if (l.n) {
        name_list sub = {0};
        mmzip_list_ex(h, l.names[l.n / 2], 0, collect_name, &sub);
        free_names(&sub);
    }
    free_names(&l);
}

/* What a read-only open could read: every listed entry that mmzip_get hands out, by name, size and hash. A
 * writable open (recovery) and an append must keep each of them, byte for byte: mmzip never drops what it did
 * not write (docs/reliability.md). */
typedef struct {
    name_list names;
    uint64_t *size, *hash;
} readable_set;

static uint64_t fnv(const void *p, uint64_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void collect_readable(mmzip_t *h, readable_set *r) {
    name_list l = {0};
    mmzip_list_ex(h, NULL, 0, collect_name, &l);
    r->size = calloc(l.n ? l.n : 1, sizeof *r->size);
    r->hash = calloc(l.n ? l.n : 1, sizeof *r->hash);
    for (size_t i = 0; i < l.n && r->size && r->hash; i++) {
        const void *p;
        uint64_t n;
        if (strcmp(l.names[i], NEW_KEY) == 0 || mmzip_get(h, l.names[i], &p, &n) != MMZIP_OK) continue;
        collect_name(&(mmzip_entry_info){.name = l.names[i], .name_len = strlen(l.names[i])}, &r->names);
        r->size[r->names.n - 1] = n;
        r->hash[r->names.n - 1] = fnv(p, n);
    }
    free_names(&l);
}

static void write_then_verify(const char *path, int checked_ok, const readable_set *before) {
    mmzip_options o;
    mmzip_options_init(&o);
    o.max_file_size = 1ull << 32;
    o.max_decoded_size = 16u << 20;
    mmzip_t *h;
    if (mmzip_open(path, "r+", &o, &h) != MMZIP_OK) return;
    read_everything(h);
    static const char payload[] = "appended by the fuzz target, to be read back exactly";
    int put = mmzip_put(h, NEW_KEY, payload, sizeof payload, 0);
    int closed = mmzip_close(h);
    if (put != MMZIP_OK || closed != MMZIP_OK) return;

    invariant(mmzip_open(path, "r", &o, &h) == MMZIP_OK, "the archive opens after a committed append", path);
    const void *p;
    uint64_t n;
    invariant(mmzip_get(h, NEW_KEY, &p, &n) == MMZIP_OK && n == sizeof payload && memcmp(p, payload, n) == 0,
              "the appended entry reads back with its bytes", path);
    if (checked_ok) invariant(mmzip_check(h, NULL, NULL) == MMZIP_OK, "a sound archive stays sound", path);
    for (size_t i = 0; before && i < before->names.n; i++) {
        const char *key = before->names.names[i];
        invariant(mmzip_get(h, key, &p, &n) == MMZIP_OK && n == before->size[i] && fnv(p, n) == before->hash[i],
                  "every entry readable before a writable open and an append reads the same after", key);
    }
    mmzip_close(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.zip", MFD_CLOEXEC);
    if (fd < 0) return 0;
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return 0;
        }
        off += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    mmzip_options o;
    mmzip_options_init(&o);
    /* Keep a claimed size from making one input decode gigabytes: the limit itself is under test. */
    o.max_decoded_size = 16u << 20;
    mmzip_t *h;
    int checked_ok = 0;
    readable_set before = {0};
    if (mmzip_open(path, "r", &o, &h) == MMZIP_OK) {
        read_everything(h);
        checked_ok = mmzip_check(h, NULL, NULL) == MMZIP_OK;
        collect_readable(h, &before);
        mmzip_refresh(h);
        mmzip_close(h);
    }
    write_then_verify(path, checked_ok, &before);
    free_names(&before.names);
    free(before.size);
    free(before.hash);
    close(fd);
    return 0;
}

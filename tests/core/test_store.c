/*
 * test_store.c - the core store's contract: modes, put/get/list/exists/size, pointer stability across
 * growth, typed views, replacement, identical rewrites, batches, reservations, removal, alignment, the one-
 * writer rule, shared stores, refresh, and bounded dead space.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mmzip.h"
#include "mmzip_ctest.h"

static char dir[256];

static const char *path_of(const char *name) { return ctest_path_in(dir, name); }

static uint64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void fill(uint8_t *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

/* Entry key holds exactly size bytes, the first size bytes of fill(seed). */
/* Creates (or replaces) the archive at path holding the one entry key = value. */
static void archive_with(const char *path, const char *key, const char *value) {
    mmzip_t *h;
    OK(mmzip_open(path, "w", NULL, &h));
    OK(mmzip_put(h, key, value, strlen(value), 0));
    OK(mmzip_close(h));
}

static void expect_filled(mmzip_t *h, const char *key, uint64_t size, unsigned seed) {
    const void *d;
    uint64_t n;
    OK(mmzip_get(h, key, &d, &n));
    uint8_t *want = malloc(size ? (size_t)size : 1);
    CHECK(want != NULL);
    fill(want, (size_t)size, seed);
    CHECK_EQ_U64(n, size);
    CHECK(n == size && memcmp(d, want, (size_t)size) == 0);
    free(want);
}

/* Every one of the n bytes at p is zero (what names them in a failure). */
static void expect_zeros(const uint8_t *p, size_t n, const char *what) {
    size_t i = 0;
    while (i < n && p[i] == 0) i++;
    if (i < n) fprintf(stderr, "%s: byte %zu of %zu is %u, not 0\n", what, i, n, p[i]);
    CHECK(i == n);
}

/* Whether the handle can write, as mmzip_get_info says. */
static int handle_writable(mmzip_t *h) {
    mmzip_info info;
    OK(mmzip_get_info(h, &info));
    return info.writable;
}

static void test_modes(void) {
    const char *p = path_of("modes.zip");
    mmzip_t *h;
    FAILS_WITH(mmzip_open(p, "r", NULL, &h), MMZIP_ENOENT, "modes.zip");
    FAILS_WITH(mmzip_open(p, "r+", NULL, &h), MMZIP_ENOENT, "no such archive");
    FAILS_WITH(mmzip_open(p, "a", NULL, &h), MMZIP_EINVAL, "unknown mode");
    OK(mmzip_open(p, "w+", NULL, &h));
    CHECK(handle_writable(h));
    CHECK_EQ_U64(mmzip_count(h), 0);
    OK(mmzip_put(h, "a", "alpha", 5, 0));
    OK(mmzip_close(h));
    /* w+ on an existing archive keeps it. */
    OK(mmzip_open(p, "w+", NULL, &h));
    CHECK(mmzip_exists(h, "a"));
    OK(mmzip_close(h));
    /* r refuses writes. */
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(!handle_writable(h));
    FAILS_WITH(mmzip_put(h, "b", "x", 1, 0), MMZIP_EREADONLY, "read-only");
    OK(mmzip_close(h));
    /* w discards. */
    OK(mmzip_open(p, "w", NULL, &h));
    CHECK(!mmzip_exists(h, "a"));
    CHECK_EQ_U64(mmzip_count(h), 0);
    OK(mmzip_close(h));
    CHECK_EQ_U64(file_size(p), 22); /* an empty archive is just the plain end record (7-Zip refuses ZIP64 ones) */
    /* A file that is not an archive is refused, named, and left alone. */
    const char *junk = path_of("junk.zip");
    FILE *f = fopen(junk, "w");
    fputs("this is not a zip archive at all", f);
    fclose(f);
    FAILS_WITH(mmzip_open(junk, "r+", NULL, &h), MMZIP_ENOTZIP, "junk.zip");
    CHECK_EQ_U64(file_size(junk), 32);
}

static void test_put_get_list(void) {
    const char *p = path_of("basic.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "grp/.zgroup", "{\"zarr_format\": 2}", 18, 0));
    OK(mmzip_put(h, "grp/v/0", "\x01\x02\x03", 3, 0));
    OK(mmzip_put(h, "empty", "", 0, 0));
    OK(mmzip_put(h, "z", "zz", 2, 0));
    CHECK_EQ_U64(mmzip_count(h), 4);
    CHECK(mmzip_exists(h, "grp/v/0"));
    CHECK(!mmzip_exists(h, "grp/v"));
    CHECK(!mmzip_exists(h, "grp/v/1"));
    uint64_t n;
    OK(mmzip_size(h, "grp/.zgroup", &n));
    CHECK_EQ_U64(n, 18);
    FAILS_WITH(mmzip_size(h, "nope", &n), MMZIP_ENOTFOUND, "nope");
    const void *d;
    OK(mmzip_get(h, "empty", &d, &n));
    CHECK(d != NULL);
    CHECK_EQ_U64(n, 0);
    OK(mmzip_close(h));

    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_get(h, "grp/v/0", &d, &n));
    CHECK_EQ_U64(n, 3);
    CHECK(memcmp(d, "\x01\x02\x03", 3) == 0);
    char buf[8];
    size_t got;
    OK(mmzip_read(h, "grp/.zgroup", 1, buf, 5, &got));
    CHECK_EQ_U64(got, 5);
    CHECK(memcmp(buf, "\"zarr", 5) == 0);
    OK(mmzip_read(h, "grp/.zgroup", 16, buf, 8, &got));
    CHECK_EQ_U64(got, 2);
    mmzip_entry_info info;
    OK(mmzip_stat(h, "grp/v/0", &info));
    CHECK_EQ_U64(info.method, 0);
    CHECK_EQ_U64(info.data_offset % 64, 0);
    CHECK_EQ_U64(info.alignment >= 64, 1);
    OK(mmzip_close(h));
}

/* Large reads into memory the process has never touched (what an allocator hands out for a big buffer) take
 * a different path: the whole pages they will fill are faulted in first, in one call. The bytes around the
 * range, in pages the read only partly covers, must not change; nor may a read that ends mid-page. Checked
 * for both ways of copying: pread (large) and the mapping (smaller). */
/* Reads [offset, offset + len) of key into fresh, untouched memory, with mmzip_read or (by_copy) with
 * mmzip_copy from the pointer mmzip_get gives, and checks the bytes against src. Only the page the buffer
 * starts in and the one it ends in are touched beforehand, as by a malloc header; the bytes there outside
 * the buffer must survive. Returns the page faults this thread took and the faults the whole process took
 * (helper threads included) during the read. */
static void check_read_into_fresh(mmzip_t *h, const char *key, uint64_t offset, size_t len, const uint8_t *src,
                                  int by_copy, long *thread_faults, long *process_faults) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE), span = len + 4 * pg;
    uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    uint8_t *dst = m + pg + 100, *end = dst + len;
    memset(m + pg, 0xA5, 100);
    uint8_t *last_page = (uint8_t *)((uintptr_t)end & ~(uintptr_t)(pg - 1));
    memset(end, 0x5A, (size_t)(last_page + pg - end));
    struct rusage t0, p0, t1, p1;
    size_t got = 0;
    const void *view = NULL;
    uint64_t view_len = 0;
    if (by_copy) OK(mmzip_get(h, key, &view, &view_len));
    getrusage(RUSAGE_THREAD, &t0);
    getrusage(RUSAGE_SELF, &p0);
    if (by_copy) {
        mmzip_copy(h, dst, (const uint8_t *)view + offset, len);
        got = offset + len <= view_len ? len : 0;
    } else {
        OK(mmzip_read(h, key, offset, dst, len, &got));
    }
    getrusage(RUSAGE_THREAD, &t1);
    getrusage(RUSAGE_SELF, &p1);
    CHECK_EQ_U64(got, len);
    CHECK(memcmp(dst, src + offset, len) == 0);
    for (size_t i = 0; i < 100; i++) CHECK(m[pg + i] == 0xA5);
    for (uint8_t *q = end; q < last_page + pg; q++) CHECK(*q == 0x5A);
    munmap(m, span);
    if (thread_faults) *thread_faults = t1.ru_minflt - t0.ru_minflt;
    if (process_faults) *process_faults = p1.ru_minflt - p0.ru_minflt;
}

static void test_read_into_untouched_memory(void) {
    const char *p = path_of("fresh.zip");
    const size_t big = (600u << 10) + 123, small = (100u << 10) + 7;
    uint8_t *src = malloc(big);
    CHECK(src != NULL);
    fill(src, big, 11);
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "big", src, big, 0));
    OK(mmzip_put(h, "small", src, small, 0));
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    check_read_into_fresh(h, "big", 0, big, src, 0, NULL, NULL);
    check_read_into_fresh(h, "big", 3333, big - 5000, src, 0, NULL, NULL);
    check_read_into_fresh(h, "small", 0, small, src, 0, NULL, NULL);
    check_read_into_fresh(h, "small", 77, small - 99, src, 0, NULL, NULL);
    check_read_into_fresh(h, "small", 77, small - 99, src, 1, NULL, NULL);
    check_read_into_fresh(h, "small", 5, 3000, src, 1, NULL, NULL);
    OK(mmzip_close(h));
    free(src);
}

/* Large reads and copies are split over helper threads: every split gives the same bytes, and the helpers,
 * not the caller, take the page faults of their pieces. */
/* 1 if the page holding p is mapped in this process's page tables (bit 63 of its /proc/self/pagemap entry). */
static int page_present(const void *p) {
    const long pg = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    uint64_t entry = 0;
    CHECK(fd >= 0 && pread(fd, &entry, sizeof entry, (off_t)((uintptr_t)p / (uintptr_t)pg * sizeof entry)) ==
                         (ssize_t)sizeof entry);
    if (fd >= 0) close(fd);
    return (int)(entry >> 63);
}

/* mmzip_copy in a store open for writing reads copies under 64 KiB from the file, leaving the mapping
 * untouched (its pages not made present), and gets the bytes an in-place edit just wrote; larger copies, and
 * every copy of a read-only store, go through the mapping. */
static void test_copy_in_a_writer_reads_the_file(void) {
    const char *p = path_of("copy_writer.zip");
    const size_t size = 1u << 20;
    uint8_t *src = malloc(size), dst[300], *big = malloc(128u << 10);
    CHECK(src && big);
    fill(src, size, 5);
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "e", src, size, 4096));
    OK(mmzip_put(h, "tail", "t", 1, 0));
    OK(mmzip_close(h));

    OK(mmzip_open(p, "r+", NULL, &h));
    const void *view;
    uint64_t len;
    OK(mmzip_get(h, "e", &view, &len));
    const uint8_t *v = view;
    CHECK(!page_present(v + (256u << 10)));
    mmzip_copy(h, dst, v + (256u << 10) + 10, 200);
    CHECK(memcmp(dst, src + (256u << 10) + 10, 200) == 0);
    CHECK(!page_present(v + (256u << 10)));

    void *ev;
    uint64_t room;
    mmzip_edit_t *ed;
    OK(mmzip_edit_begin(h, "e", 0, &ed));
    OK(mmzip_edit_map(ed, &ev, NULL, &room));
    CHECK(ev == view);
    uint8_t now[300];
    memset(now, 0xE7, sizeof now);
    OK(mmzip_edit_write(ed, (512u << 10) + 3, now, sizeof now));
    mmzip_copy(h, dst, v + (512u << 10), sizeof dst);
    CHECK(memcmp(dst, src + (512u << 10), 3) == 0 && memcmp(dst + 3, now, sizeof dst - 3) == 0);
    CHECK(!page_present(v + (512u << 10)));
    OK(mmzip_edit_publish(ed, size));
    OK(mmzip_edit_end(ed));

    mmzip_copy(h, big, v + (768u << 10), 128u << 10); /* not small: through the mapping */
    CHECK(memcmp(big, src + (768u << 10), 128u << 10) == 0);
    CHECK(page_present(v + (768u << 10)));
    OK(mmzip_close(h));

    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_get(h, "e", &view, &len));
    v = view;
    mmzip_copy(h, dst, v + (128u << 10), 200); /* a reader copies through the mapping */
    CHECK(memcmp(dst, src + (128u << 10), 200) == 0);
    CHECK(page_present(v + (128u << 10)));
    OK(mmzip_close(h));

    /* A mapping kept for the next writer of the file is read through: its pages are made already. */
    const char *q = path_of("copy_writer_kept.zip");
    mmzip_options keep;
    mmzip_options_init(&keep);
    keep.flags |= MMZIP_KEEP_MAPPING;
    OK(mmzip_open(q, "w", NULL, &h));
    OK(mmzip_put(h, "e", src, size, 4096));
    OK(mmzip_close(h));
    OK(mmzip_open(q, "r+", &keep, &h));
    OK(mmzip_get(h, "e", &view, &len));
    v = view;
    mmzip_copy(h, dst, v + (256u << 10), 200);
    CHECK(memcmp(dst, src + (256u << 10), 200) == 0);
    CHECK(!page_present(v + (256u << 10))); /* new: read from the file */
    OK(mmzip_close(h));
    OK(mmzip_open(q, "r+", &keep, &h));
    OK(mmzip_get(h, "e", &view, &len));
    CHECK(view == v);
    mmzip_copy(h, dst, v + (256u << 10), 200);
    CHECK(memcmp(dst, src + (256u << 10), 200) == 0);
    CHECK(page_present(v + (256u << 10))); /* kept: through the mapping */
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h)); /* another archive: the kept mapping goes */
    OK(mmzip_close(h));
    free(src);
    free(big);
}

static void test_large_read_split(void) {
    const char *p = path_of("split.zip");
    const size_t big = (6u << 20) + 4321;
    uint8_t *src = malloc(big);
    CHECK(src != NULL);
    fill(src, big, 23);
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "big", src, big, 0));
    OK(mmzip_close(h));
    mmzip_options o;
    mmzip_options_init(&o);
    o.copy_threads = 17;
    CHECK(mmzip_open(p, "r", &o, &h) == MMZIP_EINVAL);
    CHECK(strstr(mmzip_last_error(), "copy_threads 17") != NULL);
    const unsigned threads[] = {1, 2, 3, 16, 0};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        o.copy_threads = threads[t];
        OK(mmzip_open(p, "r", &o, &h));
        /* mmzip_read reads from the file; mmzip_copy copies from the mapping. Both split the same way. */
        for (int by_copy = 0; by_copy <= 1; by_copy++) {
            long mine = 0, all = 0;
            check_read_into_fresh(h, "big", 0, big, src, by_copy, &mine, &all);
            /* 1536 fresh pages were faulted in: all by the caller alone, about half of them with two threads. */
            CHECK(all >= 1536);
            if (threads[t] == 1) CHECK(mine >= all - 16);
            if (threads[t] == 2) CHECK(mine <= all * 3 / 4 && mine >= all / 4);
            if (threads[t] == 16) CHECK(mine <= all / 4); /* 6 pieces of at least 1 MiB */
            check_read_into_fresh(h, "big", 5555, big - 7777, src, by_copy, NULL, NULL);
            check_read_into_fresh(h, "big", big - (2u << 20), 2u << 20, src, by_copy, NULL, NULL);
            check_read_into_fresh(h, "big", 1, (2u << 20) - 1, src, by_copy, NULL, NULL); /* below the split */
        }
        OK(mmzip_close(h));
    }
    /* Without a handle, mmzip_copy is one thread's copy. */
    uint8_t *dst = malloc(big);
    CHECK(dst != NULL);
    mmzip_copy(NULL, dst, src, big);
    CHECK(memcmp(dst, src, big) == 0);
    free(dst);
    free(src);
}

typedef struct {
    char names[16][64];
    int n;
} listing;

static int collect(const mmzip_entry_info *info, void *ctx) {
    listing *l = ctx;
    if (l->n < 16) snprintf(l->names[l->n++], 64, "%.*s", (int)info->name_len, info->name);
    return 0;
}

static void test_list_prefix(void) {
    const char *p = path_of("list.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    const char *keys[] = {"b/2", "a", "b/1", "c/x", "b/10", "bb"};
    for (int i = 0; i < 6; i++) OK(mmzip_put(h, keys[i], keys[i], strlen(keys[i]), 0));
    listing l = {0};
    OK(mmzip_list_ex(h, NULL, 0, collect, &l));
    CHECK_EQ_U64(l.n, 6);
    CHECK(strcmp(l.names[0], "a") == 0 && strcmp(l.names[1], "b/1") == 0 && strcmp(l.names[2], "b/10") == 0 &&
          strcmp(l.names[3], "b/2") == 0 && strcmp(l.names[4], "bb") == 0 && strcmp(l.names[5], "c/x") == 0);
    listing m = {0};
    OK(mmzip_list_ex(h, "b/", 0, collect, &m));
    CHECK_EQ_U64(m.n, 3);
    CHECK(strcmp(m.names[0], "b/1") == 0 && strcmp(m.names[2], "b/2") == 0);
    OK(mmzip_close(h));
}

typedef struct {
    int n;
    int with_offset; /* entries whose data_offset and alignment are set */
} offset_count;

static int count_offsets(const mmzip_entry_info *info, void *ctx) {
    offset_count *c = ctx;
    c->n++;
    if (info->data_offset && info->alignment) c->with_offset++;
    return 0;
}

static long process_minor_faults(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

/* MMZIP_LIST_NO_DATA_OFFSET lists the same entries without reading their local headers: on a fresh handle
 * of an archive of 64 KiB entries, a full listing faults in a page per entry, the names-only one none. */
static void test_list_without_data_offsets(void) {
    const char *p = path_of("names.zip");
    const size_t n = 256, size = (64u << 10) + 1;
    uint8_t *b = malloc(size);
    CHECK(b != NULL);
    fill(b, size, 5);
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    /* A commit per entry: one write per entry, so that the page cache holds small folios, mapped page by
     * page. A batch would be written in whole 2 MiB blocks (write.c), mapped with one fault per block, and
     * the faults would no longer tell which listing read the local headers. */
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "v/%zu", i);
        OK(mmzip_put(h, key, b, size, 0));
    }
    OK(mmzip_close(h));
    free(b);

    OK(mmzip_open(p, "r", NULL, &h));
    offset_count names = {0, 0}, full = {0, 0};
    long f0 = process_minor_faults();
    OK(mmzip_list_ex(h, "v/", MMZIP_LIST_NO_DATA_OFFSET, count_offsets, &names));
    long f1 = process_minor_faults();
    OK(mmzip_list_ex(h, "v/", 0, count_offsets, &full));
    long f2 = process_minor_faults();
    CHECK_EQ_U64(names.n, n);
    CHECK_EQ_U64(names.with_offset, 0);
    CHECK_EQ_U64(full.n, n);
    CHECK_EQ_U64(full.with_offset, n);
    CHECK(f1 - f0 < 16);
    CHECK(f2 - f1 >= (long)n / 2);
    FAILS_WITH(mmzip_list_ex(h, NULL, 2, count_offsets, &names), MMZIP_EINVAL, "unknown flags");
    OK(mmzip_close(h));
}

/* A pointer handed out stays valid and unmoved while later appends grow the file by far more than a page. */
static void test_pointer_stability(void) {
    const char *p = path_of("stable.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    uint8_t first[1000];
    fill(first, sizeof first, 7);
    OK(mmzip_put(h, "first", first, sizeof first, 0));
    const void *d0;
    uint64_t n0;
    OK(mmzip_get(h, "first", &d0, &n0));
    size_t big = 3u << 20;
    uint8_t *chunk = malloc(big);
    for (int i = 0; i < 24; i++) { /* 72 MiB of growth: thousands of pages, many relocations */
        fill(chunk, big, (unsigned)i);
        char k[32];
        snprintf(k, sizeof k, "chunk/%d", i);
        OK(mmzip_put(h, k, chunk, big, 4096));
        const void *d;
        uint64_t n;
        OK(mmzip_get(h, "first", &d, &n));
        CHECK(d == d0);
        CHECK(memcmp(d0, first, sizeof first) == 0);
    }
    CHECK(file_size(p) > 70u << 20);
    /* Every chunk still reads back, from its own stable address. */
    for (int i = 0; i < 24; i++) {
        char k[32];
        snprintf(k, sizeof k, "chunk/%d", i);
        const void *d;
        uint64_t n;
        OK(mmzip_get(h, k, &d, &n));
        fill(chunk, big, (unsigned)i);
        CHECK_EQ_U64(n, big);
        CHECK(memcmp(d, chunk, big) == 0);
        CHECK_EQ_U64((uintptr_t)d % 4096, 0);
    }
    free(chunk);
    OK(mmzip_close(h));
}

/* 1 if reading (or, with write, writing) the byte at p kills a child process with SIGSEGV or SIGBUS. */
static int access_faults(const void *p, int write) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* die by the signal even under a sanitizer's handler */
        signal(SIGBUS, SIG_DFL);
        if (write) *(volatile char *)p = 'X';
        else (void)*(const volatile char *)p;
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
}

/* Views are read-only memory: a stray write through one faults instead of corrupting the archive. */
static void test_views_read_only(void) {
    const char *p = path_of("ro.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "k", "precious", 8, 0));
    const void *d;
    uint64_t n;
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(access_faults(d, 1));
    CHECK(memcmp(d, "precious", 8) == 0);
    OK(mmzip_close(h));
}

/* 1 if /proc/self/maps shows a mapping of the file at path. */
static int file_is_mapped(const char *path) {
    char real[PATH_MAX], line[PATH_MAX + 128];
    if (!realpath(path, real)) return 0;
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        char *name = strchr(line, '/');
        if (name) name[strcspn(name, "\n")] = '\0';
        found = name && strcmp(name, real) == 0;
    }
    if (f) fclose(f);
    return found;
}

/* A closed store's address reservation is kept for the next open of the same file (mapping.c): the file is
 * no longer mapped, a pointer kept past the close faults, the same file gets the same addresses back, and
 * another file never does (a stale pointer must not read another archive's bytes). */
static void test_reservation_kept_for_the_same_file(void) {
    const char *pa = strdup(path_of("kept_a.zip")), *pb = strdup(path_of("kept_b.zip"));
    mmzip_t *h;
    const void *d;
    uint64_t n;
    archive_with(pa, "k", "archive a");
    archive_with(pb, "k", "archive b");

    OK(mmzip_open(pa, "r+", NULL, &h));
    OK(mmzip_get(h, "k", &d, &n));
    const void *first = d;
    CHECK(n == 9 && memcmp(d, "archive a", 9) == 0);
    OK(mmzip_close(h));
    CHECK(!file_is_mapped(pa));
    CHECK(access_faults(first, 0));

    OK(mmzip_open(pb, "r", NULL, &h)); /* another file: fresh addresses */
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(d != first && n == 9 && memcmp(d, "archive b", 9) == 0);
    CHECK(access_faults(first, 0));
    OK(mmzip_close(h));

    OK(mmzip_open(pa, "r", NULL, &h)); /* b's close evicted a's reservation: fresh again, and correct */
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(n == 9 && memcmp(d, "archive a", 9) == 0);
    const void *second = d;
    OK(mmzip_close(h));
    OK(mmzip_open(pa, "r", NULL, &h)); /* the same file right after: its reservation back */
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(d == second && memcmp(d, "archive a", 9) == 0);
    OK(mmzip_close(h));

    /* Deleted, and a new file soon gets its inode number: that is another archive, which must not get the
     * addresses a stale pointer into the old one may hold (file systems here reuse a freed inode number for
     * the next file made in the directory; where they do not, this part checks nothing). */
    struct stat st;
    CHECK(stat(pa, &st) == 0);
    CHECK(unlink(pa) == 0);
    char pc[PATH_MAX];
    int reused = 0;
    for (int i = 0; i < 8 && !reused; i++) {
        snprintf(pc, sizeof pc, "%s", path_of(i % 2 ? "kept_c1.zip" : "kept_c0.zip"));
        fflush(NULL);
        pid_t pid = fork(); /* made by another process: a store closed here would replace the kept one */
        if (pid == 0) {
            archive_with(pc, "k", "archive c");
            _exit(0);
        }
        waitpid(pid, NULL, 0);
        struct stat sc;
        reused = stat(pc, &sc) == 0 && sc.st_ino == st.st_ino && sc.st_dev == st.st_dev;
    }
    if (reused) {
        OK(mmzip_open(pc, "r", NULL, &h));
        OK(mmzip_get(h, "k", &d, &n));
        CHECK(d != second && n == 9 && memcmp(d, "archive c", 9) == 0);
        CHECK(access_faults(second, 0));
        OK(mmzip_close(h));
    } else {
        printf("   (no inode number reused: the deleted-file case was not exercised)\n");
    }
    free((void *)pa);
    free((void *)pb);
}

/* 1 if /proc/self/maps shows a mapping of the file that was at path, even one deleted since. */
static int file_or_deleted_is_mapped(const char *real) {
    char line[PATH_MAX + 128];
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;
    size_t n = strlen(real);
    while (f && !found && fgets(line, sizeof line, f)) {
        char *name = strchr(line, '/');
        found = name && strncmp(name, real, n) == 0 && (name[n] == '\n' || name[n] == ' ');
    }
    if (f) fclose(f);
    return found;
}

/* The number of descriptors this process has open. */
static int open_descriptors(void) {
    int n = 0;
    for (int fd = 0; fd < 1024; fd++) n += fcntl(fd, F_GETFD) != -1;
    return n;
}

/* A child process opens the archive for writing, puts key = value, and closes: 0 if all of it worked. */
static int child_puts(const char *path, const char *key, const char *value) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *c;
        if (mmzip_open(path, "r+", NULL, &c) != MMZIP_OK) _exit(2);
        if (mmzip_put(c, key, value, strlen(value), 0) != MMZIP_OK) _exit(3);
        _exit(mmzip_close(c) == MMZIP_OK ? 0 : 4);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

/* MMZIP_KEEP_MAPPING (the HDF5 driver's sessions): after the close the file stays mapped, through a descriptor
 * that holds no lock (a writer in this process and one in another open it at once), and the next open of the
 * same file takes the mapping over - same addresses, and what other writers committed meanwhile is read
 * correctly, past the old end and after a truncation. Opening another archive, or an open without the flag,
 * drops it; a file deleted before its close is not kept. */
static void test_mapping_kept_on_request(void) {
    char pa[PATH_MAX], pb[PATH_MAX];
    snprintf(pa, sizeof pa, "%s", path_of("keepmap_a.zip"));
    snprintf(pb, sizeof pb, "%s", path_of("keepmap_b.zip"));
    mmzip_options keep;
    mmzip_options_init(&keep);
    keep.flags |= MMZIP_KEEP_MAPPING;
    mmzip_t *h;
    const void *d;
    uint64_t n;
    archive_with(pb, "k", "archive b");
    int fds_before = open_descriptors();

    archive_with(pa, "k", "archive a");
    OK(mmzip_open(pa, "r+", &keep, &h));
    OK(mmzip_close(h));
    char real[PATH_MAX];
    CHECK(realpath(pa, real) != NULL);
    CHECK(file_is_mapped(pa));
    CHECK_EQ_U64(open_descriptors(), fds_before + 1);

    /* No lock is held: another process writes, then a writer in this process. */
    CHECK_EQ_U64(child_puts(pa, "from_child", "written by another process"), 0);
    OK(mmzip_open(pa, "r+", &keep, &h));
    OK(mmzip_get(h, "k", &d, &n));
    const void *first = d;
    CHECK(n == 9 && memcmp(d, "archive a", 9) == 0);
    OK(mmzip_get(h, "from_child", &d, &n));
    CHECK(n == 26 && memcmp(d, "written by another process", 26) == 0);
    OK(mmzip_close(h));
    CHECK(file_is_mapped(pa));

    /* The next open takes the same mapping, and sees a larger archive written meanwhile. */
    uint8_t *big = malloc(3u << 20);
    fill(big, 3u << 20, 7);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *c;
        if (mmzip_open(pa, "r+", NULL, &c) || mmzip_put(c, "big", big, 3u << 20, 0) || mmzip_close(c)) _exit(1);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(mmzip_open(pa, "r", &keep, &h));
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(d == first && memcmp(d, "archive a", 9) == 0);
    expect_filled(h, "big", 3u << 20, 7);
    OK(mmzip_close(h));

    /* Another process removes the big entry, then puts a small one: the directory moves under the kept
     * mapping. */
    pid = fork();
    if (pid == 0) {
        mmzip_t *c;
        _exit(mmzip_open(pa, "r+", NULL, &c) || mmzip_remove(c, "big") || mmzip_close(c));
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_U64(child_puts(pa, "after", "after the removal"), 0);
    OK(mmzip_open(pa, "r+", &keep, &h));
    CHECK(mmzip_exists(h, "big") == 0);
    OK(mmzip_get(h, "after", &d, &n));
    CHECK(n == 17 && memcmp(d, "after the removal", 17) == 0);
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(d == first && n == 9 && memcmp(d, "archive a", 9) == 0);
    OK(mmzip_close(h));
    free(big);

    /* Another process packs it: a new file under the name. The old one's mapping is not taken over. */
    pid = fork();
    if (pid == 0) _exit(mmzip_pack(pa, NULL, NULL) != MMZIP_OK);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(file_or_deleted_is_mapped(real));
    OK(mmzip_open(pa, "r", &keep, &h));
    CHECK_EQ_U64(mmzip_count(h), 3);
    OK(mmzip_get(h, "from_child", &d, &n));
    CHECK(n == 26 && memcmp(d, "written by another process", 26) == 0);
    OK(mmzip_close(h));
    CHECK_EQ_U64(open_descriptors(), fds_before + 1);

    /* Given back on request, and taken up again by the next open. */
    mmzip_release_kept();
    CHECK(!file_is_mapped(pa));
    CHECK_EQ_U64(open_descriptors(), fds_before);
    OK(mmzip_open(pa, "r", &keep, &h));
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(n == 9 && memcmp(d, "archive a", 9) == 0);
    OK(mmzip_close(h));
    CHECK(file_is_mapped(pa));
    CHECK_EQ_U64(open_descriptors(), fds_before + 1);

    /* Another archive: the kept mapping is dropped with its descriptor. */
    OK(mmzip_open(pb, "r", &keep, &h));
    CHECK(!file_is_mapped(pa));
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(n == 9 && memcmp(d, "archive b", 9) == 0);
    OK(mmzip_close(h));
    CHECK(file_is_mapped(pb));
    CHECK_EQ_U64(open_descriptors(), fds_before + 1);

    /* An open of that file without the flag: not held after its close. */
    OK(mmzip_open(pb, "r", NULL, &h));
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(n == 9 && memcmp(d, "archive b", 9) == 0);
    OK(mmzip_close(h));
    CHECK(!file_is_mapped(pb));
    CHECK_EQ_U64(open_descriptors(), fds_before);

    /* Deleted before its close: not kept, so its space is freed. */
    OK(mmzip_open(pa, "r+", &keep, &h));
    CHECK(realpath(pa, real) != NULL);
    CHECK(unlink(pa) == 0);
    OK(mmzip_close(h));
    CHECK(!file_or_deleted_is_mapped(real));
    CHECK_EQ_U64(open_descriptors(), fds_before);
}

/* The pid of a process that has exited. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    return pid;
}

static const char *touch_temp(const char *archive, const char *kind) {
    static char p[760];
    snprintf(p, sizeof p, "%s.mmzip-%s-%ld", archive, kind, (long)dead_pid());
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) close(fd);
    return p;
}

/* Temporary files of dead packs and creations cost disk space, never correctness: mmzip_recover and
 * mmzip_pack remove them, a writable open does not look (a directory listing at every process's first open
 * cost 3 ms beside 20 000 files). A live process's file stays. */
static void test_stale_temps_removed_by_maintenance(void) {
    char p[600], t[760], live[760];
    snprintf(p, sizeof p, "%s", path_of("stale.zip"));
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "k", "v", 1, 0));
    OK(mmzip_close(h));
    snprintf(live, sizeof live, "%s.mmzip-pack-%ld", p, (long)getppid());
    int fd = open(live, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    for (int how = 0; how < 2; how++) {
        snprintf(t, sizeof t, "%s", touch_temp(p, how ? "new" : "pack"));
        OK(mmzip_open(p, "r+", NULL, &h));
        OK(mmzip_put(h, "w", "x", 1, 0));
        OK(mmzip_close(h));
        CHECK(access(t, F_OK) == 0); /* a writer does not look */
        if (how == 0) OK(mmzip_recover(p, NULL, NULL, NULL));
        else OK(mmzip_pack(p, NULL, NULL));
        CHECK(access(t, F_OK) != 0); /* removed */
        CHECK(access(live, F_OK) == 0);
    }
    unlink(live);
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK_EQ_U64(mmzip_count(h), 2);
    OK(mmzip_close(h));
}

static void test_typed_view(void) {
    const char *p = path_of("typed.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    double v[100];
    for (int i = 0; i < 100; i++) v[i] = i * 0.5;
    OK(mmzip_put(h, "f8", v, sizeof v, 64));
    OK(mmzip_put(h, "odd", v, 7, 1)); /* alignment 1: data may land on any byte */
    const double *t = mmzip_get_typed(h, "f8", sizeof(double), 8, 100);
    CHECK(t != NULL);
    if (t) CHECK(t[99] == 49.5);
    CHECK(mmzip_get_typed(h, "f8", sizeof(double), 8, 99) == NULL);   /* wrong size */
    CHECK(mmzip_get_typed(h, "f8", 4, 4, 200) != NULL);               /* same bytes as float32 */
    CHECK(mmzip_get_typed(h, "f8", 3, 4, 0) == NULL);                 /* size mismatch */
    CHECK(mmzip_get_typed(h, "missing", 8, 8, 1) == NULL);
    CHECK(mmzip_get_typed(h, "f8", 8, 3, 100) == NULL);               /* alignment not a power of two */
    /* An entry whose data is not 8-aligned gives NULL for doubles, a pointer for bytes. */
    mmzip_entry_info info;
    OK(mmzip_stat(h, "odd", &info));
    if (info.data_offset % 8) CHECK(mmzip_get_typed(h, "odd", 7, 8, 1) == NULL);
    CHECK(mmzip_get_typed(h, "odd", 1, 1, 7) != NULL);
    OK(mmzip_close(h));
}

static void test_alignment(void) {
    const char *p = path_of("align.zip");
    mmzip_options o;
    mmzip_options_init(&o);
    o.alignment = 256;
    mmzip_t *h;
    OK(mmzip_open(p, "w", &o, &h));
    uint32_t aligns[] = {0, 1, 8, 512, 4096};
    for (int i = 0; i < 5; i++) {
        char k[16];
        snprintf(k, sizeof k, "e%d", i);
        OK(mmzip_put(h, k, "abcdefghij", 3 + (uint64_t)i, aligns[i]));
        mmzip_entry_info info;
        OK(mmzip_stat(h, k, &info));
        uint32_t want = aligns[i] ? aligns[i] : 256;
        CHECK_EQ_U64(info.data_offset % want, 0);
    }
    FAILS_WITH(mmzip_put(h, "bad", "x", 1, 48), MMZIP_EINVAL, "alignment 48");
    FAILS_WITH(mmzip_put(h, "bad", "x", 1, 1u << 16), MMZIP_EINVAL, "power of two");
    OK(mmzip_close(h));
    /* The mapping starts on a 2 MiB boundary, so that file offsets and addresses share their 2 MiB
     * alignment (large page-cache folios are mapped whole only then: mapping.c, reserve_va). */
    const char *modes[] = {"r", "r+"};
    for (int m = 0; m < 2; m++) {
        OK(mmzip_open(p, modes[m], NULL, &h));
        const void *d;
        uint64_t n;
        mmzip_entry_info info;
        OK(mmzip_get(h, "e4", &d, &n));
        OK(mmzip_stat(h, "e4", &info));
        CHECK_EQ_U64(((uintptr_t)d - info.data_offset) % (2u << 20), 0);
        OK(mmzip_close(h));
    }
    o.alignment = 3;
    FAILS_WITH(mmzip_open(path_of("bad-align.zip"), "w", &o, &h), MMZIP_EINVAL, "alignment 3");
}

/* An outside review: x put, x removed, y put (the same length), x put again, in one uncommitted session: the
 * second x reused the first one's space, which y had taken, and y's bytes were overwritten (zipfile: "File
 * name in directory 'y' and header b'x' differ"). With a batch and without. */
static void test_removed_pending_space_is_not_reused_over_another(void) {
    for (int batch = 0; batch < 2; batch++) {
        const char *p = path_of(batch ? "reuse-batch.zip" : "reuse.zip");
        mmzip_t *h;
        mmzip_options o;
        mmzip_options_init(&o);
        o.commit_policy = MMZIP_COMMIT_MANUAL;
        OK(mmzip_open(p, "w", &o, &h));
        if (batch) OK(mmzip_begin(h));
        char x1[100], y[100], x2[100];
        memset(x1, 'X', sizeof x1);
        memset(y, 'Y', sizeof y);
        memset(x2, 'Z', sizeof x2);
        OK(mmzip_put(h, "x", x1, sizeof x1, 0));
        OK(mmzip_remove(h, "x"));
        OK(mmzip_put(h, "y", y, sizeof y, 0));
        OK(mmzip_put(h, "x", x2, sizeof x2, 0));
        if (batch) OK(mmzip_commit(h));
        OK(mmzip_close(h));
        OK(mmzip_open(p, "r", NULL, &h));
        const void *d;
        uint64_t n;
        OK(mmzip_get(h, "y", &d, &n));
        CHECK(n == sizeof y && memcmp(d, y, sizeof y) == 0);
        OK(mmzip_get(h, "x", &d, &n));
        CHECK(n == sizeof x2 && memcmp(d, x2, sizeof x2) == 0);
        OK(mmzip_verify(h, "y"));
        OK(mmzip_verify(h, "x"));
        OK(mmzip_close(h));
    }
}

static void test_replace_and_identical(void) {
    const char *p = path_of("replace.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "k", "version one", 11, 0));
    OK(mmzip_put(h, "other", "o", 1, 0));
    uint64_t before = file_size(p);
    OK(mmzip_put(h, "k", "version one", 11, 0)); /* identical: no byte written */
    CHECK_EQ_U64(file_size(p), before);
    /* Identical bytes at a stricter alignment than they lie at: written again, aligned (an outside review
     * found MMZIP_OK with the data left where it was). */
    mmzip_entry_info ei;
    OK(mmzip_stat(h, "k", &ei));
    if (ei.data_offset % 4096) {
        OK(mmzip_put(h, "k", "version one", 11, 4096));
        OK(mmzip_stat(h, "k", &ei));
        CHECK_EQ_U64(ei.data_offset % 4096, 0);
        CHECK(mmzip_get_typed(h, "k", 1, 4096, 11) != NULL);
    }
    /* A NULL key is an invalid argument for every call that writes one, not a crash. */
    void *view;
    FAILS_WITH(mmzip_put(h, NULL, "x", 1, 0), MMZIP_EINVAL, "NULL key");
    FAILS_WITH(mmzip_remove(h, NULL), MMZIP_EINVAL, "NULL key");
    FAILS_WITH(mmzip_reserve(h, NULL, 8, 0, 0, &view), MMZIP_EINVAL, "NULL key");
    FAILS_WITH(mmzip_patch(h, NULL, 0), MMZIP_EINVAL, "NULL key");
    FAILS_WITH(mmzip_unreserve(h, NULL), MMZIP_EINVAL, "NULL key");
    FAILS_WITH(mmzip_reserve_resize(h, NULL, 8, &view), MMZIP_EINVAL, "NULL key");
    before = file_size(p);
    OK(mmzip_put(h, "k", "version two!", 12, 0));
    CHECK_EQ_U64(mmzip_count(h), 2);
    listing l = {0};
    OK(mmzip_list_ex(h, NULL, 0, collect, &l));
    CHECK_EQ_U64(l.n, 2); /* listed once */
    const void *d;
    uint64_t n;
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(n == 12 && memcmp(d, "version two!", 12) == 0);
    OK(mmzip_close(h));
    /* The central directory holds one record per name: Python's zipfile and unzip see one "k". */
    OK(mmzip_open(p, "r", NULL, &h));
    mmzip_info info;
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.entries, 2);
    CHECK(info.dead_bytes > 0); /* the first version's bytes, until pack */
    OK(mmzip_close(h));
    OK(mmzip_pack(p, NULL, NULL));
    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.dead_bytes, 0);
    OK(mmzip_get(h, "k", &d, &n));
    CHECK(n == 12 && memcmp(d, "version two!", 12) == 0);
    OK(mmzip_close(h));
}

static void test_batch_and_rollback(void) {
    const char *p = path_of("batch.zip");
    mmzip_t *w, *r;
    OK(mmzip_open(p, "w", NULL, &w));
    OK(mmzip_put(w, "base", "b", 1, 0));
    OK(mmzip_open(p, "r", NULL, &r)); /* a reader sharing the writer's store */
    OK(mmzip_begin(w));
    FAILS_WITH(mmzip_begin(w), MMZIP_EINVAL, "already open");
    OK(mmzip_put(w, "p1", "one", 3, 0));
    OK(mmzip_put(w, "base", "B2", 2, 0));
    OK(mmzip_remove(w, "p1"));
    OK(mmzip_put(w, "p2", "two", 3, 0));
    /* The writer sees its pending state; the reader sees the last commit. */
    CHECK(mmzip_exists(w, "p2") && !mmzip_exists(r, "p2"));
    const void *d;
    uint64_t n;
    OK(mmzip_get(r, "base", &d, &n));
    CHECK(n == 1 && memcmp(d, "b", 1) == 0);
    OK(mmzip_get(w, "base", &d, &n));
    CHECK(n == 2 && memcmp(d, "B2", 2) == 0);
    OK(mmzip_rollback(w));
    CHECK(!mmzip_exists(w, "p2"));
    OK(mmzip_get(w, "base", &d, &n));
    CHECK(n == 1 && memcmp(d, "b", 1) == 0);
    OK(mmzip_begin(w));
    OK(mmzip_put(w, "p3", "three", 5, 0));
    OK(mmzip_remove(w, "base"));
    OK(mmzip_commit(w));
    CHECK(mmzip_exists(r, "p3") && !mmzip_exists(r, "base"));
    OK(mmzip_close(r));
    OK(mmzip_close(w));
    OK(mmzip_open(p, "r", NULL, &r));
    CHECK_EQ_U64(mmzip_count(r), 1);
    FAILS_WITH(mmzip_get(r, "base", &d, &n), MMZIP_ENOTFOUND, "base");
    OK(mmzip_close(r));
}

static void test_manual_policy_commits_at_close(void) {
    const char *p = path_of("manual.zip");
    mmzip_options o;
    mmzip_options_init(&o);
    o.commit_policy = MMZIP_COMMIT_MANUAL;
    mmzip_t *h;
    OK(mmzip_open(p, "w", &o, &h));
    for (int i = 0; i < 100; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%03d", i);
        OK(mmzip_put(h, k, k, 4, 0));
    }
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK_EQ_U64(mmzip_count(h), 100);
    OK(mmzip_close(h));
}

static void test_reserve_patch(void) {
    const char *p = path_of("reserve.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "before", "b", 1, 0));
    void *v;
    OK(mmzip_reserve(h, "big", 1u << 20, 4096, 0, &v));
    CHECK_EQ_U64((uintptr_t)v % 4096, 0);
    CHECK(!mmzip_exists(h, "big")); /* invisible until patched */
    uint8_t *b = v;
    expect_zeros(b, 1u << 20, "a new reservation");
    OK(mmzip_reserve_resize(h, "big", 3u << 20, &v));
    CHECK(v == (void *)b);
    fill(b, 3u << 20, 42);
    OK(mmzip_commit(h)); /* publishes nothing new; the reservation stays open, its space kept */
    CHECK(!mmzip_exists(h, "big"));
    OK(mmzip_patch(h, "big", (3u << 20) - 5));
    const void *d;
    uint64_t n;
    OK(mmzip_get(h, "big", &d, &n));
    CHECK_EQ_U64(n, (3u << 20) - 5);
    CHECK(memcmp(d, b, (size_t)n) == 0);
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_check(h, NULL, NULL));
    expect_filled(h, "big", (3u << 20) - 5, 42);
    OK(mmzip_close(h));
    /* Closing with an unpatched reservation drops it and keeps everything else. */
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_reserve(h, "abandoned", 4096, 0, 0, &v));
    memset(v, 0xAB, 4096);
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(!mmzip_exists(h, "abandoned") && mmzip_exists(h, "big") && mmzip_exists(h, "before"));
    mmzip_info info;
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.dead_bytes, 0);
    OK(mmzip_close(h));
}

/* Reservations are independent: other entries are put and committed while one is open, two can be open at
 * once and be patched in either order, and an open reservation survives commits with its bytes intact. */
static void test_independent_reservations(void) {
    const char *p = path_of("two-reservations.zip");
    mmzip_t *h, *r;
    OK(mmzip_open(p, "w", NULL, &h));
    void *va, *vb;
    OK(mmzip_reserve(h, "a", 100000, 4096, 0, &va));
    fill(va, 100000, 1);
    OK(mmzip_put(h, "small", "committed at once", 17, 0)); /* MMZIP_COMMIT_EACH: committed right away */
    OK(mmzip_open(p, "r", NULL, &r));
    CHECK(mmzip_exists(r, "small") && !mmzip_exists(r, "a"));
    OK(mmzip_reserve(h, "b", 50000, 64, 0, &vb));
    fill(vb, 50000, 2);
    OK(mmzip_commit(h));
    FAILS_WITH(mmzip_reserve_resize(h, "a", 200000, &va), MMZIP_EBUSY, "cannot be resized");
    OK(mmzip_patch(h, "b", 50000));
    CHECK(mmzip_exists(r, "b") && !mmzip_exists(r, "a"));
    OK(mmzip_patch(h, "a", 99999));
    OK(mmzip_close(r));
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_check(h, NULL, NULL));
    expect_filled(h, "a", 99999, 1);
    expect_filled(h, "b", 50000, 2);
    CHECK_EQ_U64(mmzip_count(h), 3);
    OK(mmzip_close(h));
}

/* One reservation among several is abandoned: the others, and what the abandoned one would have replaced,
 * are untouched; the name can be reserved again at once. */
static void test_unreserve(void) {
    const char *p = path_of("unreserve.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "kept", "old version", 11, 0));
    void *va, *vk, *vb;
    OK(mmzip_reserve(h, "a", 20000, 4096, 0, &va));
    fill(va, 20000, 7);
    OK(mmzip_reserve(h, "kept", 30000, 64, 0, &vk));
    memset(vk, 0xEE, 30000);
    OK(mmzip_reserve(h, "b", 10000, 64, 0, &vb));
    fill(vb, 10000, 8);
    FAILS_WITH(mmzip_unreserve(h, "nothing"), MMZIP_EINVAL, "not reserved");
    OK(mmzip_unreserve(h, "kept"));
    /* Its neighbours share pages with it, and stay writable in full. */
    fill(va, 20000, 7);
    fill(vb, 10000, 8);
    FAILS_WITH(mmzip_unreserve(h, "kept"), MMZIP_EINVAL, "not reserved");
    FAILS_WITH(mmzip_patch(h, "kept", 10), MMZIP_EINVAL, "not reserved");
    const void *d;
    uint64_t n;
    OK(mmzip_get(h, "kept", &d, &n));
    CHECK(n == 11 && memcmp(d, "old version", 11) == 0);
    OK(mmzip_unreserve(h, "b")); /* the last thing written: its space is reused by the next one */
    OK(mmzip_reserve(h, "b", 5000, 64, 0, &vb));
    expect_zeros(vb, 5000, "a reservation in the space of an unreserved one");
    fill(vb, 5000, 9);
    OK(mmzip_patch(h, "b", 5000));
    OK(mmzip_patch(h, "a", 20000));
    OK(mmzip_commit(h));
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_check(h, NULL, NULL));
    CHECK_EQ_U64(mmzip_count(h), 3);
    OK(mmzip_get(h, "kept", &d, &n));
    CHECK(n == 11 && memcmp(d, "old version", 11) == 0);
    expect_filled(h, "a", 20000, 7);
    expect_filled(h, "b", 5000, 9);
    OK(mmzip_close(h));
}

static void test_one_writer(void) {
    const char *p = path_of("lock.zip");
    mmzip_t *w, *w2, *r;
    OK(mmzip_open(p, "w", NULL, &w));
    OK(mmzip_put(w, "x", "1", 1, 0));
    FAILS_WITH(mmzip_open(p, "r+", NULL, &w2), MMZIP_EBUSY, "already open for writing in this process");
    OK(mmzip_open(p, "r", NULL, &r));
    /* Shared store: the same entry is the same memory. */
    const void *a, *b;
    uint64_t n;
    OK(mmzip_get(w, "x", &a, &n));
    OK(mmzip_get(r, "x", &b, &n));
    CHECK(a == b);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* Another process: the writer lock refuses at once, a reader is welcome. */
        mmzip_t *c;
        int st = mmzip_open(p, "r+", NULL, &c);
        int ok = st == MMZIP_EBUSY && strstr(mmzip_last_error(), "another process");
        st = mmzip_open(p, "r", NULL, &c);
        ok = ok && st == MMZIP_OK && mmzip_exists(c, "x");
        if (st == MMZIP_OK) {
            mmzip_info info;
            mmzip_get_info(c, &info);
            ok = ok && info.writer_locked;
            mmzip_close(c);
        }
        _exit(ok ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(mmzip_close(r));
    OK(mmzip_close(w));
    /* Released: a new writer may open; a read-only store in this process blocks an upgrade. */
    OK(mmzip_open(p, "r", NULL, &r));
    FAILS_WITH(mmzip_open(p, "r+", NULL, &w2), MMZIP_EBUSY, "read-only in this process");
    OK(mmzip_close(r));
    OK(mmzip_open(p, "r+", NULL, &w2));
    OK(mmzip_close(w2));
}

/* A reader in another process picks up new commits with refresh, and old pointers stay valid. */
static void test_refresh_across_processes(void) {
    const char *p = path_of("refresh.zip");
    mmzip_t *w;
    OK(mmzip_open(p, "w", NULL, &w));
    OK(mmzip_put(w, "a", "AAAA", 4, 0));
    int go[2], done[2];
    CHECK(pipe(go) == 0 && pipe(done) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *c;
        int ok = mmzip_open(p, "r", NULL, &c) == MMZIP_OK;
        const void *d0 = NULL;
        uint64_t n;
        ok = ok && mmzip_get(c, "a", &d0, &n) == MMZIP_OK && !mmzip_exists(c, "b");
        char ch = 'g';
        ok = ok && write(done[1], &ch, 1) == 1 && read(go[0], &ch, 1) == 1;
        ok = ok && !mmzip_exists(c, "b") && mmzip_refresh(c) == MMZIP_OK && mmzip_exists(c, "b");
        const void *d;
        ok = ok && mmzip_get(c, "b", &d, &n) == MMZIP_OK && n == 1 << 20 && ((const char *)d)[100] == 'b';
        ok = ok && memcmp(d0, "AAAA", 4) == 0;
        mmzip_close(c);
        _exit(ok ? 0 : 1);
    }
    char ch;
    CHECK(read(done[0], &ch, 1) == 1);
    char *big = malloc(1 << 20);
    memset(big, 'b', 1 << 20);
    OK(mmzip_put(w, "b", big, 1 << 20, 0));
    free(big);
    CHECK(write(go[1], "g", 1) == 1);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(mmzip_close(w));
}

/* 10,000 single-entry commits leave no dead space: the file is exactly its entries, the slack below the
 * directory (a hole, bounded by a multiple of the directory's size, not by the number of commits), the
 * directory and end records. */
static void test_dead_space_bounded(void) {
    const char *p = path_of("many.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    for (int i = 0; i < 10000; i++) {
        char k[32], v[64];
        snprintf(k, sizeof k, "arr/%d", i);
        int len = snprintf(v, sizeof v, "value %d", i * 7);
        OK(mmzip_put(h, k, v, (uint64_t)len, 0));
        if (i % 2500 == 2499) {
            mmzip_info info;
            OK(mmzip_get_info(h, &info));
            CHECK_EQ_U64(info.dead_bytes, 0);
            CHECK_EQ_U64(info.entries, (uint64_t)i + 1);
            CHECK_EQ_U64(info.file_size, info.live_bytes + info.free_bytes + info.directory_bytes);
            CHECK(info.free_bytes <= 33 * info.directory_bytes + (64u << 10) + info.file_size / 4);
            CHECK(info.end_follows_directory);
            struct stat st;
            CHECK(stat(p, &st) == 0);
            /* The slack takes no disk: what is allocated is the entries and directories, to a block or two
             * per region. */
            CHECK((uint64_t)st.st_blocks * 512 <= info.live_bytes + info.directory_bytes + (64u << 10));
        }
    }
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK_EQ_U64(mmzip_count(h), 10000);
    OK(mmzip_check(h, NULL, NULL));
    mmzip_info info;
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.dead_bytes, 0);
    OK(mmzip_close(h));
}

/* Giving up: discard drops what is pending, and a store created to be published at its first commit that never
 * committed is never published - not even as an empty archive over the one it was to replace. */
static void test_discard(void) {
    const char *p = path_of("discard.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "keep", "precious", 8, 0));
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_begin(h));
    OK(mmzip_put(h, "pending", "p", 1, 0));
    OK(mmzip_discard(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(mmzip_exists(h, "keep") && !mmzip_exists(h, "pending"));
    OK(mmzip_close(h));
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_PUBLISH_ON_COMMIT;
    o.commit_policy = MMZIP_COMMIT_MANUAL;
    OK(mmzip_open(p, "w", &o, &h));
    OK(mmzip_put(h, "replacement", "r", 1, 0));
    OK(mmzip_discard(h));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(mmzip_exists(h, "keep") && !mmzip_exists(h, "replacement"));
    OK(mmzip_close(h));
    const char *fresh = path_of("never-published.zip");
    OK(mmzip_open(fresh, "w+", &o, &h));
    OK(mmzip_put(h, "x", "x", 1, 0));
    OK(mmzip_discard(h));
    CHECK(access(fresh, F_OK) != 0);
    /* close, by contrast, publishes: "w" means start afresh. */
    OK(mmzip_open(fresh, "w+", &o, &h));
    OK(mmzip_close(h));
    CHECK(access(fresh, F_OK) == 0);
}

static void test_names(void) {
    const char *p = path_of("names.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    FAILS_WITH(mmzip_put(h, "/abs", "x", 1, 0), MMZIP_EINVAL, "/abs");
    FAILS_WITH(mmzip_put(h, "a/../b", "x", 1, 0), MMZIP_EINVAL, "a/../b");
    FAILS_WITH(mmzip_put(h, "", "x", 1, 0), MMZIP_EINVAL, "invalid entry name");
    OK(mmzip_put(h, "ünïcödé/ключ", "u", 1, 0));
    OK(mmzip_put(h, "a..b/.hidden", "ok", 2, 0));
    CHECK(mmzip_exists(h, "ünïcödé/ключ"));
    OK(mmzip_close(h));
}

/* Which read paths check a stored entry's CRC-32 (mmzip.h, mmzip_get): a byte of two entries is flipped on
 * disk behind mmzip's back, one small (read from the mapping) and one of 4 MiB (read with pread). */
static void test_crc_paths(void) {
    const char *p = path_of("crc.zip");
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    size_t big = 4u << 20;
    uint8_t *b = malloc(big);
    CHECK(b != NULL);
    fill(b, big, 7);
    OK(mmzip_put(h, "small", b, 1000, 0));
    OK(mmzip_put(h, "big", b, big, 0));
    OK(mmzip_put(h, "good", b, 5000, 0));
    mmzip_entry_info si, bi;
    OK(mmzip_stat(h, "small", &si));
    OK(mmzip_stat(h, "big", &bi));
    OK(mmzip_close(h));
    int fd = open(p, O_RDWR);
    CHECK(fd >= 0);
    uint8_t x = (uint8_t)(b[500] ^ 0x10), y = (uint8_t)(b[big / 2] ^ 0x10);
    CHECK(pwrite(fd, &x, 1, (off_t)(si.data_offset + 500)) == 1);
    CHECK(pwrite(fd, &y, 1, (off_t)(bi.data_offset + big / 2)) == 1);
    close(fd);

    OK(mmzip_open(p, "r", NULL, &h));
    const void *d;
    uint64_t n;
    /* Zero-copy without the option: handed out unread (no pass over the data). */
    OK(mmzip_get(h, "small", &d, &n));
    uint8_t *buf = malloc(big);
    CHECK(buf != NULL);
    size_t got;
    /* Whole-entry reads check, on both paths, and name the entry. */
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_read(h, "small", 0, buf, big, &got), MMZIP_ECRC);
    CHECK(strstr(mmzip_last_error(), "'small'") && strstr(mmzip_last_error(), "CRC-32 mismatch"));
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_read(h, "big", 0, buf, big, &got), MMZIP_ECRC);
    CHECK(strstr(mmzip_last_error(), "'big'") != NULL);
    /* A partial read cannot check, and does not. */
    OK(mmzip_read(h, "big", 1, buf, 100, &got));
    CHECK(got == 100 && memcmp(buf, b + 1, 100) == 0);
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_verify(h, "small"), MMZIP_ECRC);
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_verify(h, "big"), MMZIP_ECRC);
    OK(mmzip_verify(h, "good"));
    OK(mmzip_read(h, "good", 0, buf, big, &got));
    CHECK(got == 5000 && memcmp(buf, b, 5000) == 0);
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_verify(h, "absent"), MMZIP_ENOTFOUND);
    OK(mmzip_close(h));

    /* MMZIP_VERIFY_CRC: zero-copy reads check once, before the first pointer. */
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_VERIFY_CRC;
    OK(mmzip_open(p, "r", &o, &h));
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_get(h, "small", &d, &n), MMZIP_ECRC);
    CHECK_EQ_U64((uint64_t)(int64_t)mmzip_get(h, "big", &d, &n), MMZIP_ECRC);
    CHECK(mmzip_get_typed(h, "big", 1, 1, big) == NULL);
    OK(mmzip_get(h, "good", &d, &n));
    CHECK(n == 5000 && memcmp(d, b, 5000) == 0);
    OK(mmzip_get(h, "good", &d, &n)); /* the second time costs nothing: remembered */
    OK(mmzip_close(h));
    free(buf);
    free(b);
}

/* mmzip_generation: moves at every change lookups can see (put, commit, remove, rollback), not at reads or at a
 * refresh that finds nothing new; a reader sharing the writer's store sees the commit move it. */
static void test_generation(void) {
    const char *p = path_of("generation.zip");
    mmzip_t *w, *r;
    OK(mmzip_open(p, "w", NULL, &w));
    OK(mmzip_put(w, "k", "one", 3, 0));
    const uint64_t *gw = mmzip_generation(w);
    CHECK(gw != NULL);
    CHECK_EQ_U64(*mmzip_generation(NULL), 0);
    OK(mmzip_open(p, "r", NULL, &r));
    const uint64_t *gr = mmzip_generation(r);
    uint64_t g = __atomic_load_n(gr, __ATOMIC_ACQUIRE);
    const void *d;
    uint64_t n;
    mmzip_entry_info info;
    OK(mmzip_get(r, "k", &d, &n));
    OK(mmzip_stat(w, "k", &info));
    CHECK(mmzip_count(r) == 1 && mmzip_exists(w, "k"));
    OK(mmzip_refresh(r));
    CHECK_EQ_U64(*gr, g); /* reads, and a refresh with nothing new, leave it */
    OK(mmzip_begin(w));
    OK(mmzip_put(w, "k", "two", 3, 0));
    CHECK(*gw > g);
    g = *gw;
    OK(mmzip_get(r, "k", &d, &n));
    CHECK(n == 3 && memcmp(d, "one", 3) == 0); /* the reader still sees the commit */
    OK(mmzip_commit(w));
    CHECK(*gr > g);
    g = *gr;
    OK(mmzip_get(r, "k", &d, &n));
    CHECK(n == 3 && memcmp(d, "two", 3) == 0);
    OK(mmzip_begin(w));
    OK(mmzip_remove(w, "k"));
    CHECK(*gw > g);
    g = *gw;
    OK(mmzip_rollback(w));
    CHECK(*gw > g);
    CHECK(mmzip_exists(r, "k") && mmzip_exists(w, "k"));
    OK(mmzip_close(r));
    OK(mmzip_close(w));
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mmzip-core-XXXXXX");
    if (!mkdtemp(dir)) return 2;
    RUN(test_modes);
    RUN(test_put_get_list);
    RUN(test_read_into_untouched_memory);
    RUN(test_copy_in_a_writer_reads_the_file);
    RUN(test_large_read_split);
    RUN(test_list_prefix);
    RUN(test_list_without_data_offsets);
    RUN(test_pointer_stability);
    RUN(test_views_read_only);
    RUN(test_reservation_kept_for_the_same_file);
    RUN(test_mapping_kept_on_request);
    RUN(test_stale_temps_removed_by_maintenance);
    RUN(test_typed_view);
    RUN(test_alignment);
    RUN(test_replace_and_identical);
    RUN(test_removed_pending_space_is_not_reused_over_another);
    RUN(test_batch_and_rollback);
    RUN(test_manual_policy_commits_at_close);
    RUN(test_reserve_patch);
    RUN(test_unreserve);
    RUN(test_independent_reservations);
    RUN(test_one_writer);
    RUN(test_refresh_across_processes);
    RUN(test_dead_space_bounded);
    RUN(test_discard);
    RUN(test_names);
    RUN(test_crc_paths);
    RUN(test_generation);
    if (!getenv("MMZIP_KEEP_TMP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return ctest_result();
}

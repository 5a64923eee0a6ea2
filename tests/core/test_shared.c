/* test_shared.c - shared appending (MMZIP_SHARED): threads with handles of their own and forked processes
 * write one archive in turn; every value is compared afterwards, a name that several writers put is one entry
 * holding the last commit's bytes, a batch is published whole, a bounded wait fails with MMZIP_EBUSY naming
 * the archive, a shared handle sees other writers' commits at its next transaction or refresh, and what the
 * mode refuses is refused. The archive is checked by mmzip_check (no "error:" finding, no name more than
 * once); tests/python/test_shared_writers.py checks such archives with zipfile and unzip. */
#define _GNU_SOURCE
#include "mmzip_ctest.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[512];

/* The bytes of key's version v: len bytes that depend on both. */
static void content(const char *key, unsigned v, uint8_t *buf, size_t len) {
    uint32_t x = 2166136261u ^ v;
    for (const char *p = key; *p; p++) x = (x ^ (uint8_t)*p) * 16777619u;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
}

static size_t len_of(unsigned w, unsigned j) { return (size_t)(37 * w + 1013 * j) % 70000; }

static mmzip_options shared_opts(uint32_t wait_ms) {
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_SHARED;
    o.lock_wait_ms = wait_ms;
    o.max_file_size = 1u << 30; /* small archives; a smaller reservation lets valgrind run the test */
    return o;
}

/* One writer: puts "w<w>/<j>" for j < n, and after every 10th put "meta" (version w * 1000 + j), which every
 * writer replaces; every 25th step a batch of 3 entries "b<w>/<j>/<i>" committed together. */
typedef struct {
    const char *path;
    unsigned w, n;
    int status;
} writer_arg;

static int write_all(const char *path, unsigned w, unsigned n) {
    mmzip_options o = shared_opts(MMZIP_WAIT_FOREVER);
    mmzip_t *h;
    int st = mmzip_open(path, "w+", &o, &h);
    if (st) return st;
    uint8_t *buf = malloc(70000);
    char key[64];
    for (unsigned j = 0; j < n && !st; j++) {
        snprintf(key, sizeof key, "w%u/%u", w, j);
        content(key, 1, buf, len_of(w, j));
        st = mmzip_put(h, key, buf, len_of(w, j), 0);
        if (!st && j % 10 == 9) {
            content("meta", w * 1000 + j, buf, 100);
            st = mmzip_put(h, "meta", buf, 100, 0);
        }
        if (!st && j % 25 == 0) {
            st = mmzip_begin(h);
            for (unsigned i = 0; i < 3 && !st; i++) {
                snprintf(key, sizeof key, "b%u/%u/%u", w, j, i);
                content(key, 1, buf, 500 + i);
                st = mmzip_put(h, key, buf, 500 + i, 0);
            }
            if (!st) st = mmzip_commit(h);
        }
    }
    free(buf);
    int cst = mmzip_close(h);
    return st ? st : cst;
}

static void *writer_thread(void *p) {
    writer_arg *a = p;
    a->status = write_all(a->path, a->w, a->n);
    if (a->status) fprintf(stderr, "writer %u: %s\n", a->w, mmzip_last_error());
    return NULL;
}

/* Errors, and names that appear more than once. (Other interop findings are not this mode's: a replaced
 * first entry leaves dead headers before the live ones, whichever writer replaced it.) */
static void report_bad(const char *message, void *ctx) {
    if (strncmp(message, "error:", 6) == 0 || strstr(message, "more than once")) {
        fprintf(stderr, "check: %s\n", message);
        ++*(int *)ctx;
    }
}

static int count_entry(const mmzip_entry_info *info, void *ctx) {
    (void)info;
    ++*(unsigned *)ctx;
    return 0;
}

/* Every writer's entries, byte for byte; "meta" one of the versions written; nothing else. */
static void verify(const char *path, unsigned writers, unsigned n) {
    mmzip_t *h;
    OK(mmzip_open(path, "r", NULL, &h));
    uint8_t *want = malloc(70000);
    char key[64];
    unsigned expected = 1, bad = 0;
    for (unsigned w = 0; w < writers; w++)
        for (unsigned j = 0; j < n; j++) {
            snprintf(key, sizeof key, "w%u/%u", w, j);
            const void *d;
            uint64_t size;
            content(key, 1, want, len_of(w, j));
            if (mmzip_get(h, key, &d, &size) != MMZIP_OK || size != len_of(w, j) || memcmp(d, want, size) != 0)
                bad++;
            expected++;
            if (j % 25 == 0)
                for (unsigned i = 0; i < 3; i++) {
                    snprintf(key, sizeof key, "b%u/%u/%u", w, j, i);
                    content(key, 1, want, 500 + i);
                    if (mmzip_get(h, key, &d, &size) != MMZIP_OK || size != 500 + i || memcmp(d, want, size) != 0)
                        bad++;
                    expected++;
                }
        }
    CHECK_EQ_U64(bad, 0);
    const void *d;
    uint64_t size;
    OK(mmzip_get(h, "meta", &d, &size));
    CHECK_EQ_U64(size, 100);
    int meta_ok = 0;
    for (unsigned w = 0; w < writers && !meta_ok; w++)
        for (unsigned j = 9; j < n && !meta_ok; j += 10) {
            content("meta", w * 1000 + j, want, 100);
            meta_ok = memcmp(d, want, 100) == 0;
        }
    CHECK(meta_ok);
    unsigned listed = 0;
    OK(mmzip_list_ex(h, NULL, 0, count_entry, &listed));
    CHECK_EQ_U64(listed, expected);
    mmzip_info info;
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.entries, expected);
    int problems = 0;
    OK(mmzip_check(h, report_bad, &problems));
    CHECK_EQ_U64(problems, 0);
    free(want);
    mmzip_close(h);
}

static void test_threads(void) {
    const char *path = ctest_path_in(dir, "threads.zip");
    enum { W = 4, N = 150 };
    pthread_t t[W];
    writer_arg a[W];
    for (unsigned w = 0; w < W; w++) {
        a[w] = (writer_arg){path, w, N, -1};
        CHECK(pthread_create(&t[w], NULL, writer_thread, &a[w]) == 0);
    }
    for (unsigned w = 0; w < W; w++) {
        pthread_join(t[w], NULL);
        CHECK_EQ_U64(a[w].status, 0);
    }
    verify(path, W, N);
}

static void test_processes(void) {
    const char *path = ctest_path_in(dir, "procs.zip");
    enum { W = 3, N = 120 };
    pid_t pid[W];
    for (unsigned w = 0; w < W; w++) {
        pid[w] = fork();
        if (pid[w] == 0) {
            int st = write_all(path, w, N);
            if (st) fprintf(stderr, "process %u: %s\n", w, mmzip_last_error());
            _exit(st ? 1 : 0);
        }
        CHECK(pid[w] > 0);
    }
    for (unsigned w = 0; w < W; w++) {
        int status = -1;
        CHECK(waitpid(pid[w], &status, 0) == pid[w]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    verify(path, W, N);
}

/* A writer in a transaction holds the lock: another's bounded wait ends in MMZIP_EBUSY naming the archive,
 * and succeeds once the transaction commits. A single-writer open holds it from open to close. */
static void test_wait_and_timeout(void) {
    const char *path = ctest_path_in(dir, "wait.zip");
    mmzip_options o = shared_opts(0), quick = shared_opts(150);
    mmzip_t *a, *b, *solo;
    OK(mmzip_open(path, "w+", &o, &a));
    OK(mmzip_open(path, "r+", &quick, &b));
    OK(mmzip_begin(a));
    OK(mmzip_put(a, "x", "1", 1, 0));
    FAILS_WITH(mmzip_put(b, "y", "2", 1, 0), MMZIP_EBUSY, path);
    FAILS_WITH(mmzip_put(b, "y", "2", 1, 0), MMZIP_EBUSY, "waited 150 ms for the writer lock");
    OK(mmzip_commit(a));
    OK(mmzip_put(b, "y", "2", 1, 0));
    /* b's view has a's commit: it came with b's transaction. */
    CHECK(mmzip_exists(b, "x"));
    /* a does not see y until its next transaction, or a refresh. */
    CHECK(!mmzip_exists(a, "y"));
    OK(mmzip_refresh(a));
    CHECK(mmzip_exists(a, "y"));
    /* A single writer holds the lock for its whole life. */
    mmzip_options single;
    mmzip_options_init(&single);
    single.max_file_size = 1u << 30;
    OK(mmzip_open(path, "r+", &single, &solo));
    FAILS_WITH(mmzip_put(b, "z", "3", 1, 0), MMZIP_EBUSY, "single-writer open");
    FAILS_WITH(mmzip_refresh(b), MMZIP_EBUSY, path);
    OK(mmzip_put(solo, "s", "4", 1, 0));
    OK(mmzip_close(solo));
    OK(mmzip_put(b, "z", "3", 1, 0));
    CHECK(mmzip_exists(b, "s"));
    /* A rolled back transaction lets the lock go too. */
    OK(mmzip_begin(a));
    OK(mmzip_put(a, "gone", "5", 1, 0));
    OK(mmzip_rollback(a));
    OK(mmzip_put(b, "after", "6", 1, 0));
    OK(mmzip_close(a));
    OK(mmzip_close(b));
    mmzip_t *r;
    OK(mmzip_open(path, "r", NULL, &r));
    unsigned n = 0;
    OK(mmzip_list_ex(r, NULL, 0, count_entry, &n));
    CHECK_EQ_U64(n, 5); /* x y s z after */
    CHECK(!mmzip_exists(r, "gone"));
    const void *d;
    uint64_t size;
    OK(mmzip_get(r, "z", &d, &size));
    CHECK(size == 1 && memcmp(d, "3", 1) == 0);
    mmzip_close(r);
}

/* Two writers put one name from stale views: one entry, the last commit's bytes; a removal by one of a name
 * the other replaced removes the replacement (the lookup is made under the lock, on the current directory). */
static void test_same_name(void) {
    const char *path = ctest_path_in(dir, "same.zip");
    mmzip_options o = shared_opts(0);
    mmzip_t *a, *b;
    OK(mmzip_open(path, "w+", &o, &a));
    OK(mmzip_open(path, "r+", &o, &b));
    OK(mmzip_put(a, ".zarray", "{\"a\":1}", 7, 0));
    OK(mmzip_put(b, ".zarray", "{\"b\":22}", 8, 0));
    OK(mmzip_put(a, ".zattrs", "{}", 2, 0));
    OK(mmzip_put(b, "k", "v", 1, 0));
    OK(mmzip_put(a, "k", "w", 1, 0));
    OK(mmzip_remove(b, "k"));
    OK(mmzip_close(a));
    OK(mmzip_close(b));
    mmzip_t *r;
    OK(mmzip_open(path, "r", NULL, &r));
    const void *d;
    uint64_t size;
    OK(mmzip_get(r, ".zarray", &d, &size));
    CHECK(size == 8 && memcmp(d, "{\"b\":22}", 8) == 0);
    CHECK(!mmzip_exists(r, "k"));
    unsigned n = 0;
    OK(mmzip_list_ex(r, NULL, 0, count_entry, &n));
    CHECK_EQ_U64(n, 2);
    mmzip_info info;
    OK(mmzip_get_info(r, &info));
    CHECK_EQ_U64(info.entries, 2);
    int problems = 0;
    OK(mmzip_check(r, report_bad, &problems));
    CHECK_EQ_U64(problems, 0);
    mmzip_close(r);
}

/* MMZIP_DURABLE with MMZIP_SHARED: the same barriers per commit; two handles interleave, a batch of one is
 * taken in by the other as additions, a replacement by a full reload. */
static void test_durable(void) {
    const char *path = ctest_path_in(dir, "durable.zip");
    mmzip_options o = shared_opts(0);
    o.flags |= MMZIP_DURABLE;
    mmzip_t *a, *b;
    OK(mmzip_open(path, "w+", &o, &a));
    OK(mmzip_open(path, "r+", &o, &b));
    OK(mmzip_begin(a));
    OK(mmzip_put(a, "a1", "11", 2, 0));
    OK(mmzip_put(a, "a2", "22", 2, 0));
    OK(mmzip_commit(a));
    OK(mmzip_put(b, "b1", "33", 2, 0));
    CHECK(mmzip_exists(b, "a1") && mmzip_exists(b, "a2"));
    OK(mmzip_put(a, "b1", "44", 2, 0));
    OK(mmzip_put(b, "b2", "55", 2, 0));
    const void *d;
    uint64_t size;
    OK(mmzip_get(b, "b1", &d, &size));
    CHECK(size == 2 && memcmp(d, "44", 2) == 0);
    mmzip_info info;
    OK(mmzip_get_info(b, &info));
    CHECK_EQ_U64(info.entries, 4);
    CHECK(info.durable);
    OK(mmzip_close(a));
    OK(mmzip_close(b));
}

/* Turns: a writer that commits and comes straight back does not keep a waiting one out. A puts in a loop, and
 * stops when its view (brought up to date by each of its transactions) shows B's entry; B puts once while A
 * runs. B must get in while A is still writing (a liveness check with a generous bound, not a measure: how
 * many puts A makes first depends on scheduling; with the turnstile it was 1 to 3 here, without it, when
 * B's polls had to hit A's gaps between transactions, about 200). */
typedef struct {
    const char *path;
    volatile int a_started;
    int a_puts, status;
} turns_arg;

static void *turns_a(void *p) {
    turns_arg *t = p;
    mmzip_options o = shared_opts(MMZIP_WAIT_FOREVER);
    mmzip_t *h;
    if ((t->status = mmzip_open(t->path, "w+", &o, &h)) != MMZIP_OK) return NULL;
    char key[32];
    for (t->a_puts = 0; t->a_puts < 20000; t->a_puts++) {
        snprintf(key, sizeof key, "a/%d", t->a_puts);
        if ((t->status = mmzip_put(h, key, key, strlen(key), 0)) != MMZIP_OK) break;
        __atomic_store_n(&t->a_started, 1, __ATOMIC_RELEASE);
        if (mmzip_exists(h, "b")) break;
    }
    mmzip_close(h);
    return NULL;
}

static void test_turns(void) {
    turns_arg t = {ctest_path_in(dir, "turns.zip"), 0, 0, -1};
    mmzip_t *seed;
    mmzip_options o = shared_opts(MMZIP_WAIT_FOREVER);
    OK(mmzip_open(t.path, "w+", &o, &seed));
    OK(mmzip_close(seed));
    pthread_t a;
    CHECK(pthread_create(&a, NULL, turns_a, &t) == 0);
    while (!__atomic_load_n(&t.a_started, __ATOMIC_ACQUIRE)) sched_yield();
    mmzip_t *b;
    OK(mmzip_open(t.path, "r+", &o, &b));
    OK(mmzip_put(b, "b", "b", 1, 0));
    OK(mmzip_close(b));
    pthread_join(a, NULL);
    CHECK_EQ_U64(t.status, 0);
    CHECK(t.a_puts < 20000); /* A saw b: B got the lock while A kept asking for it */
    fprintf(stderr, "   b got in after %d of a's puts\n", t.a_puts);
}

static void test_refused(void) {
    const char *path = ctest_path_in(dir, "refused.zip");
    mmzip_options o = shared_opts(0);
    mmzip_t *h;
    o.flags |= MMZIP_NO_LOCK;
    FAILS_WITH(mmzip_open(path, "w+", &o, &h), MMZIP_EINVAL, "MMZIP_NO_LOCK");
    o = shared_opts(0);
    OK(mmzip_open(path, "w+", &o, &h));
    OK(mmzip_put(h, "e", "abc", 3, 0));
    mmzip_edit_t *ed = NULL;
    FAILS_WITH(mmzip_edit_begin(h, "e", 0, &ed), MMZIP_EUNSUPPORTED, "shared writer");
    FAILS_WITH(mmzip_edit_begin(h, "e", MMZIP_EDIT_MAP, &ed), MMZIP_EUNSUPPORTED, "shared writer");
    CHECK(ed == NULL);
    /* A child that inherited the handle neither writes nor refreshes through it: it shares the parent's OFD
     * lock and inotify queue (shared_writer.c, mz_shared_refresh). */
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        int r1 = mmzip_refresh(h), r2 = mmzip_put(h, "g", "x", 1, 0);
        _exit(r1 == MMZIP_EBUSY && r2 == MMZIP_EBUSY ? 0 : 1);
    }
    int wst = 0;
    CHECK(child > 0 && waitpid(child, &wst, 0) == child);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    OK(mmzip_refresh(h)); /* the parent still can */
    /* The archive replaced under the name (a pack): the next transaction says so instead of writing into a
     * file nobody will read. */
    OK(mmzip_pack(path, NULL, &o));
    FAILS_WITH(mmzip_put(h, "f", "x", 1, 0), MMZIP_ESTALE, "replaced on disk");
    OK(mmzip_close(h));
    /* Mode "r" ignores the flag: a reader. */
    OK(mmzip_open(path, "r", &o, &h));
    mmzip_info ri;
    OK(mmzip_get_info(h, &ri));
    CHECK(!ri.writable);
    mmzip_close(h);
}

/* Offset of the flags field of key's central directory record in the file at path (0 if not found). */
static off_t record_flags_at(const char *path, const char *key) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    static uint8_t img[1 << 20];
    size_t n = fread(img, 1, sizeof img, f);
    fclose(f);
    size_t kl = strlen(key);
    off_t found = 0;
    for (size_t i = 0; i + 46 + kl <= n; i++)
        if (memcmp(img + i, "PK\1\2", 4) == 0 && img[i + 28] == kl && img[i + 29] == 0 &&
            memcmp(img + i + 46, key, kl) == 0)
            found = (off_t)(i + 8);
    return found;
}

static uint16_t flags_of(mmzip_t *h, const char *key) {
    mmzip_entry_info info;
    return mmzip_stat(h, key, &info) == MMZIP_OK ? info.flags : 0xFFFF;
}

/* How a shared handle learns that the file changed between its transactions: on a local file system an
 * inotify watch (every write, truncate and punch makes an event; none means nothing changed, and the
 * comparison of the directory is skipped), elsewhere, or with MMZIP_SHARED_NO_WATCH set, the comparison.
 * A foreign program changes one byte of a directory record in place with pwrite, the file's size and every
 * end record staying the same (what no mmzip writer does, and the hardest change to see): the next
 * transaction sees it either way. That the watch is what decides where it is on: the crash point
 * shared.quiet, reached only then (tests/crash/test_shared_kill.py). */
static void test_foreign_byte(int watch) {
    const char *path = ctest_path_in(dir, watch ? "foreign_watch.zip" : "foreign_nowatch.zip");
    if (watch) unsetenv("MMZIP_SHARED_NO_WATCH");
    else setenv("MMZIP_SHARED_NO_WATCH", "1", 1);
    mmzip_options o = shared_opts(MMZIP_WAIT_FOREVER);
    mmzip_t *h;
    OK(mmzip_open(path, "w+", &o, &h));
    OK(mmzip_put(h, "k1", "one", 3, 0));
    OK(mmzip_put(h, "k2", "two", 3, 0));
    uint16_t f1 = flags_of(h, "k1"), f2 = flags_of(h, "k2");
    CHECK(f1 != 0xFFFF && f2 != 0xFFFF);
    /* pwrite: bit 11 (UTF-8 names, harmless for ASCII ones) set in k2's record. */
    off_t at = record_flags_at(path, "k2");
    CHECK(at > 0);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    uint16_t nf = (uint16_t)(f2 ^ 0x0800);
    uint8_t le[2] = {(uint8_t)nf, (uint8_t)(nf >> 8)};
    CHECK(pwrite(fd, le, 2, at) == 2);
    OK(mmzip_put(h, "k3", "three", 5, 0));
    CHECK_EQ_U64(flags_of(h, "k2"), nf);
    close(fd);
    OK(mmzip_put(h, "k4", "four", 4, 0));
    CHECK_EQ_U64(flags_of(h, "k2"), nf);
    CHECK_EQ_U64(flags_of(h, "k1"), f1);
    CHECK_EQ_U64(mmzip_count(h), 4);
    OK(mmzip_close(h));
    unsetenv("MMZIP_SHARED_NO_WATCH");
}

static void test_watch(void) { test_foreign_byte(1); }
static void test_no_watch(void) { test_foreign_byte(0); }

/* Runs the tests named on the command line, or all of them (valgrind runs skip test_turns, whose writer A
 * loops while valgrind's one-thread-at-a-time scheduler keeps B from its turn). */
int main(int argc, char **argv) {
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/mmzip_shared_XXXXXX", base);
    if (!mkdtemp(dir)) return 2;
    static const struct { const char *name; void (*fn)(void); } tests[] = {
        {"test_wait_and_timeout", test_wait_and_timeout}, {"test_same_name", test_same_name},
        {"test_refused", test_refused}, {"test_durable", test_durable}, {"test_turns", test_turns},
        {"test_threads", test_threads}, {"test_processes", test_processes}, {"test_watch", test_watch},
        {"test_no_watch", test_no_watch}};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int want = argc < 2;
        for (int a = 1; a < argc; a++) want |= strcmp(argv[a], tests[i].name) == 0;
        if (!want) continue;
        fprintf(stderr, "-- %s\n", tests[i].name);
        tests[i].fn();
    }
    int r = ctest_result();
    if (!r) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) return 1;
    }
    return r;
}

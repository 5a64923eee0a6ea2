/* test_inplace.c - mmzip_edit_*: in-place edits of stored entries, mapped (MMZIP_EDIT_MAP: the CRC refresh at
 * commit, what a writer killed between a write and the commit leaves, markers of older versions) and journaled
 * (the undo journal, growth, the CRC at the cost of the change, holds). */
#define _GNU_SOURCE
#include "mmzip_ctest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[512];

/* Plain bitwise CRC-32 (ZIP's), independent of the library's. */
static uint32_t crc32_ref(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return c ^ 0xFFFFFFFFu;
}


static mmzip_edit_t *ed;  /* the journaled edit under test */
static mmzip_edit_t *med; /* the mapped edit under test */

/* A journaled edit of key, and its read-only view. */
static int jbegin(mmzip_t *h, const char *key, const void **v, uint64_t *room) {
    void *view = NULL;
    int st = mmzip_edit_begin(h, key, 0, &ed);
    if (!st) st = mmzip_edit_map(ed, &view, NULL, room);
    *v = view;
    return st;
}

/* A mapped edit of key, and its writable view. */
static int mbegin(mmzip_t *h, const char *key, void **v, uint64_t *n) {
    int st = mmzip_edit_begin(h, key, MMZIP_EDIT_MAP, &med);
    if (!st) st = mmzip_edit_map(med, v, n, NULL);
    return st;
}

/* 1 if the marker file beside the archive (docs/format.md section 9) names key, read here byte by byte: magic
 * "MMZIPIP1", device, inode, count, then per entry the local-header offset, the CRC, the name's length, the
 * name. 0 if there is no marker file or it does not name key. */
static int marked(const char *path, const char *key) {
    char q[4096];
    snprintf(q, sizeof q, "%s.mmzip-inplace", path);
    FILE *f = fopen(q, "rb");
    if (!f) return 0;
    uint8_t b[65536];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    CHECK(n >= 28 && memcmp(b, "MMZIPIP1", 8) == 0);
    uint32_t count = (uint32_t)b[24] | (uint32_t)b[25] << 8 | (uint32_t)b[26] << 16 | (uint32_t)b[27] << 24;
    size_t at = 28, klen = strlen(key);
    int found = 0;
    for (uint32_t i = 0; i < count && at + 14 <= n; i++) {
        size_t len = (size_t)b[at + 12] | (size_t)b[at + 13] << 8;
        if (len == klen && at + 14 + len <= n && memcmp(b + at + 14, key, len) == 0) found = 1;
        at += 14 + len;
    }
    CHECK(at == n);
    return found;
}

typedef struct { const char *key; int kind; } unfinished_probe;
static int probe(const mmzip_unfinished_edit *u, void *ctx) {
    unfinished_probe *p = ctx;
    if (strcmp(u->key, p->key) == 0) p->kind = u->kind;
    return 0;
}

/* The kind of unfinished edit a read-only open lists for key (mmzip_unfinished_edits), 0 if none. */
static int unfinished_kind(const char *path, const char *key) {
    mmzip_t *h;
    OK(mmzip_open(path, "r", NULL, &h));
    unfinished_probe p = {key, 0};
    CHECK(mmzip_unfinished_edits(h, probe, &p) >= 0);
    mmzip_close(h);
    return p.kind;
}

static int crc_problems; /* reports of a CRC mismatch of entry 'a' */
static void report(const char *msg, void *ctx) {
    (void)ctx;
    if (strstr(msg, "entry 'a': CRC-32 mismatch")) crc_problems++;
}

/* MMZIP_ECRC if mmzip_check reports a CRC mismatch of 'a', else MMZIP_OK. Only the CRC verdict is taken:
 * since main's 8e471ae, mmzip_check also calls "the central directory is not behind the last entry" the dead
 * bytes that any removal of the physically last entry leaves (here: the marker), which is not what this
 * test is about (reported to the coordinator). */
static int check_archive(const char *path) {
    mmzip_t *h;
    OK(mmzip_open(path, "r", NULL, &h));
    crc_problems = 0;
    (void)mmzip_check(h, report, NULL);
    mmzip_close(h);
    return crc_problems ? MMZIP_ECRC : MMZIP_OK;
}

static uint32_t stored_crc(const char *path, const char *key) {
    mmzip_t *h;
    mmzip_entry_info info;
    OK(mmzip_open(path, "r", NULL, &h));
    OK(mmzip_stat(h, key, &info));
    mmzip_close(h);
    return info.crc32;
}

/* Waits for a child that was to die of SIGKILL in the middle of its work, and checks that it did. */
static void check_killed(pid_t pid) {
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
}

static int file_exists_suffixed(const char *path, const char *suffix) {
    char q[4096];
    snprintf(q, sizeof q, "%s%s", path, suffix);
    struct stat st;
    return stat(q, &st) == 0;
}

static const char *make(const char *name) {
    const char *p = ctest_path_in(dir, name);
    mmzip_t *h;
    uint8_t buf[10000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 7);
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "a", buf, sizeof buf, 64));
    OK(mmzip_put(h, "b", "bbbb", 4, 0));
    OK(mmzip_close(h));
    return p;
}

static void test_edit_commit_end(void) {
    const char *p = make("basic.zip");
    mmzip_t *h;
    void *v, *v2;
    uint64_t n;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mbegin(h, "a", &v, &n));
    CHECK_EQ_U64(n, 10000);
    CHECK(((uintptr_t)v & 63) == 0);
    /* The marker is a file beside the archive, not an entry that other readers would list. */
    CHECK(marked(p, "a") == 1);
    CHECK(marked(p, "b") == 0);
    CHECK(mmzip_count(h) == 2 && !mmzip_exists(h, ".mmzip/edit/a"));
    CHECK(file_exists_suffixed(p, ".mmzip-inplace"));
    memset(v, 0x11, 100);
    /* Before the commit, the CRC is stale and a check says so. */
    FAILS_WITH(check_archive(p), MMZIP_ECRC, "");
    OK(mmzip_commit(h));
    CHECK_EQ_U64(check_archive(p), MMZIP_OK);
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(v, 10000));
    /* The readers' view (a read-only handle of the same store) sees the bytes. */
    const void *r;
    uint64_t rn;
    OK(mmzip_get(h, "a", &r, &rn));
    CHECK(((const uint8_t *)r)[0] == 0x11 && ((const uint8_t *)r)[99] == 0x11 && ((const uint8_t *)r)[100] == 100 * 7 % 256);
    OK(mmzip_edit_map(med, &v2, NULL, NULL));
    CHECK(v2 == v);
    mmzip_edit_t *again = NULL;
    FAILS_WITH(mmzip_edit_begin(h, "a", MMZIP_EDIT_MAP, &again), MMZIP_EBUSY, "already being edited");
    FAILS_WITH(mmzip_edit_begin(h, "a", 0, &again), MMZIP_EBUSY, "through a writable view");
    FAILS_WITH(mmzip_edit_write(med, 0, "x", 1), MMZIP_EINVAL, "write through its view");
    FAILS_WITH(mmzip_edit_publish(med, 5), MMZIP_EINVAL, "cannot change size");
    ((uint8_t *)v)[5000] = 0xEE;
    mmzip_info info;
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.edits_open, 1);
    OK(mmzip_edit_end(med));
    CHECK(marked(p, "a") == 0);
    CHECK(!file_exists_suffixed(p, ".mmzip-inplace"));
    OK(mmzip_get_info(h, &info));
    CHECK_EQ_U64(info.edits_open, 0);
    OK(mmzip_close(h));
    CHECK_EQ_U64(check_archive(p), MMZIP_OK);
    uint8_t want[10000];
    for (size_t i = 0; i < sizeof want; i++) want[i] = (uint8_t)(i * 7);
    memset(want, 0x11, 100);
    want[5000] = 0xEE;
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(want, sizeof want));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK_EQ_U64(mmzip_count(h), 2); /* no marker left */
    OK(mmzip_get(h, "a", &r, &rn));
    CHECK(memcmp(r, want, sizeof want) == 0);
    mmzip_close(h);
}

static void test_refusals(void) {
    const char *p = make("refuse.zip");
    mmzip_t *h;
    void *v;
    OK(mmzip_open(p, "r", NULL, &h));
    FAILS_WITH(mbegin(h, "a", &v, NULL), MMZIP_EREADONLY, "read-only");
    mmzip_close(h);
    OK(mmzip_open(p, "r+", NULL, &h));
    FAILS_WITH(mbegin(h, "zz", &v, NULL), MMZIP_ENOTFOUND, "zz");
    FAILS_WITH(mbegin(h, ".mmzip/edit/a", &v, NULL), MMZIP_EINVAL, "marker");
    OK(mmzip_begin(h));
    OK(mmzip_put(h, "c", "cc", 2, 0));
    FAILS_WITH(mbegin(h, "c", &v, NULL), MMZIP_EBUSY, "pending");
    OK(mmzip_commit(h));
    OK(mmzip_close(h));
}

/* Damage in an entry's bytes is refused before an edit starts: the commit's new CRC over the bytes as they
 * then are would otherwise make it look valid to every later check. */
static void test_damage_not_laundered(void) {
    const char *p = make("damaged.zip");
    mmzip_t *h;
    mmzip_entry_info info;
    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_stat(h, "a", &info));
    mmzip_close(h);
    int fd = open(p, O_RDWR);
    CHECK(fd >= 0);
    uint8_t b;
    CHECK(pread(fd, &b, 1, (off_t)info.data_offset + 4321) == 1);
    b ^= 0x40;
    CHECK(pwrite(fd, &b, 1, (off_t)info.data_offset + 4321) == 1);
    close(fd);
    FAILS_WITH(check_archive(p), MMZIP_ECRC, "");
    void *v;
    OK(mmzip_open(p, "r+", NULL, &h));
    FAILS_WITH(mbegin(h, "a", &v, NULL), MMZIP_ECRC, "entry 'a': CRC-32 mismatch");
    CHECK(marked(p, "a") == 0);
    OK(mbegin(h, "b", &v, NULL)); /* an undamaged entry still can be */
    OK(mmzip_close(h));
    FAILS_WITH(check_archive(p), MMZIP_ECRC, ""); /* the damage stays visible */
    CHECK_EQ_U64(stored_crc(p, "a"), info.crc32);
}

/* Discarding cannot undo bytes already written in place: their CRC is published, the marker removed. */
static void test_discard_publishes_crc(void) {
    const char *p = make("discard.zip");
    mmzip_t *h;
    void *v;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mbegin(h, "a", &v, NULL));
    memset(v, 0x22, 10000);
    OK(mmzip_begin(h));
    OK(mmzip_put(h, "dropped", "x", 1, 0));
    OK(mmzip_discard(h));
    CHECK_EQ_U64(check_archive(p), MMZIP_OK);
    uint8_t want[10000];
    memset(want, 0x22, sizeof want);
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(want, sizeof want));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK_EQ_U64(mmzip_count(h), 2);
    CHECK(!mmzip_exists(h, "dropped"));
    mmzip_close(h);
}

/* A child edits, writes, and is killed before committing. `how` recovers: 0 mmzip_recover, 1 an r+ open. */
static void test_killed_between_write_and_commit(int how) {
    const char *p = make(how ? "killed_open.zip" : "killed_recover.zip");
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *h;
        void *v;
        if (mmzip_open(p, "r+", NULL, &h) || mbegin(h, "a", &v, NULL)) _exit(3);
        memset(v, 0x5A, 6000); /* part of the array: the rest keeps its old bytes */
        raise(SIGKILL);
        _exit(4);
    }
    check_killed(pid);
    uint8_t want[10000];
    for (size_t i = 0; i < sizeof want; i++) want[i] = (uint8_t)(i * 7);
    memset(want, 0x5A, 6000);
    /* What it left: the bytes written, the stale CRC, the marker; a check reports the entry. */
    mmzip_t *h;
    const void *r;
    uint64_t rn;
    CHECK(marked(p, "a") == 1);
    CHECK_EQ_U64(unfinished_kind(p, "a"), MMZIP_UNFINISHED_INPLACE);
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK(mmzip_count(h) == 2 && !mmzip_exists(h, ".mmzip/edit/a"));
    OK(mmzip_get(h, "a", &r, &rn));
    CHECK(rn == sizeof want && memcmp(r, want, sizeof want) == 0);
    mmzip_close(h);
    FAILS_WITH(check_archive(p), MMZIP_ECRC, "");
    CHECK(stored_crc(p, "a") != crc32_ref(want, sizeof want));
    if (how == 0) {
        OK(mmzip_recover(p, NULL, NULL, NULL));
    } else {
        mmzip_info info;
        OK(mmzip_open(p, "r+", NULL, &h));
        OK(mmzip_get_info(h, &info));
        CHECK_EQ_U64(info.edits_recovered, 1);
        CHECK_EQ_U64(info.edits_restored, 0);
        CHECK(marked(p, "a") == 0);
        OK(mmzip_close(h));
    }
    CHECK_EQ_U64(check_archive(p), MMZIP_OK);
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(want, sizeof want));
    OK(mmzip_open(p, "r", NULL, &h));
    CHECK_EQ_U64(mmzip_count(h), 2);
    mmzip_close(h);
}

/* A writer killed while growing an entry into its room leaves its bytes there; recovery clears them (the
 * room reads as zeros for the next edit). An edit skips writes that change nothing, and does not take that
 * for granted: bytes found in the room anyway (written there by another program, say) are compared, so that
 * zeros written over them are written. */
static void test_edit_zeros_over_killed_growth(void) {
    char p[600];
    snprintf(p, sizeof p, "%s/killed_growth.zip", dir);
    mmzip_t *h;
    void *view;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_reserve(h, "m", 65536, 64, MMZIP_RESERVE_ROOM, &view));
    memset(view, 'a', 4096);
    OK(mmzip_patch(h, "m", 4096));
    OK(mmzip_put(h, "after", "x", 1, 0)); /* m is not the last entry: it grows into its room */
    OK(mmzip_close(h));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *c;
        const void *v;
        uint64_t room;
        uint8_t junk[4096];
        memset(junk, 'J', sizeof junk);
        if (mmzip_open(p, "r+", NULL, &c) || jbegin(c, "m", &v, &room) ||
            mmzip_edit_write(ed, 8192, junk, sizeof junk))
            _exit(1);
        kill(getpid(), SIGKILL);
        _exit(2);
    }
    check_killed(pid);

    OK(mmzip_open(p, "r+", NULL, &h)); /* recovers */
    mmzip_entry_info info;
    OK(mmzip_stat(h, "m", &info));
    CHECK(info.size == 4096);
    FILE *f = fopen(p, "r+b");
    uint8_t left[4096];
    memset(left, 1, sizeof left);
    CHECK(f && fseek(f, (long)(info.data_offset + 8192), SEEK_SET) == 0 && fread(left, 1, sizeof left, f) == sizeof left);
    static const uint8_t zeros[8192];
    CHECK(memcmp(left, zeros, sizeof left) == 0); /* the killed writer's growth was cleared */
    memset(left, 'J', sizeof left);                 /* another program's bytes where the room should be zeros */
    CHECK(f && fseek(f, (long)(info.data_offset + 8192), SEEK_SET) == 0 && fwrite(left, 1, sizeof left, f) == sizeof left);
    if (f) fclose(f);
    const void *v;
    uint64_t room;
    OK(jbegin(h, "m", &v, &room));
    OK(mmzip_edit_write(ed, 4096, zeros, sizeof zeros));
    OK(mmzip_edit_publish(ed, 12288));
    OK(mmzip_edit_end(ed));
    OK(mmzip_close(h));

    OK(mmzip_open(p, "r", NULL, &h));
    uint8_t buf[12288];
    size_t n = 0;
    OK(mmzip_read(h, "m", 0, buf, sizeof buf, &n));
    CHECK(n == sizeof buf);
    uint8_t want[12288];
    memset(want, 'a', 4096);
    memset(want + 4096, 0, 8192);
    CHECK(memcmp(buf, want, sizeof want) == 0);
    OK(mmzip_stat(h, "m", &info));
    CHECK(info.crc32 == crc32_ref(want, sizeof want));
    OK(mmzip_close(h));
}

/* A publish takes the CRC of the growth from what the edit wrote (kept per extent, concatenated) and reads
 * back only what it does not know: writes in order, out of order, rewritten in part, left as gaps, skipped as
 * unchanged zeros, cut by the published size, and more extents than are kept. Each publish's CRC must be that
 * of the bytes the entry then holds, and those bytes what was written. For the last entry (growth moves the
 * directory) and for one with room before the next entry. */
enum { GROW_CAP = 1 << 17 };
static uint8_t grow_model[GROW_CAP], grow_known[GROW_CAP], grow_buf[GROW_CAP];

static void grow_write(uint64_t off, uint64_t len, uint8_t seed) {
    uint8_t piece[8192];
    CHECK(len <= sizeof piece && off + len <= GROW_CAP);
    for (uint64_t i = 0; i < len; i++) piece[i] = seed ? (uint8_t)(seed + i * 13 + (i >> 7)) : 0;
    OK(mmzip_edit_write(ed, off, piece, (size_t)len));
    memcpy(grow_model + off, piece, (size_t)len);
    memset(grow_known + off, 1, (size_t)len);
}

static void grow_publish_and_check(mmzip_t *h, uint64_t size) {
    OK(mmzip_edit_publish(ed, size));
    mmzip_entry_info info;
    OK(mmzip_stat(h, "m", &info));
    CHECK(info.size == size);
    size_t n = 0;
    OK(mmzip_read(h, "m", 0, grow_buf, (size_t)size, &n));
    CHECK(n == size);
    CHECK(info.crc32 == crc32_ref(grow_buf, (size_t)size));
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < size; i++) wrong += grow_known[i] && grow_buf[i] != grow_model[i];
    CHECK(wrong == 0);
    /* What was written past the published size is not the entry's any more. */
    memset(grow_known + size, 0, GROW_CAP - size);
}

static void test_growth_crc_from_writes_in(int last) {
    char p[600];
    snprintf(p, sizeof p, "%s/growth_crc_%d.zip", dir, last);
    mmzip_t *h;
    void *view;
    memset(grow_known, 0, sizeof grow_known);
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_reserve(h, "m", GROW_CAP, 64, MMZIP_RESERVE_ROOM, &view));
    for (int i = 0; i < 4096; i++) ((uint8_t *)view)[i] = grow_model[i] = (uint8_t)(i * 7 + 1);
    memset(grow_known, 1, 4096);
    OK(mmzip_patch(h, "m", 4096));
    if (!last) OK(mmzip_put(h, "after", "x", 1, 0));
    OK(mmzip_close(h));

    OK(mmzip_open(p, "r+", NULL, &h));
    const void *v;
    uint64_t room;
    OK(jbegin(h, "m", &v, &room));
    grow_write(4096, 4096, 11);  /* in order: one extent */
    grow_write(8192, 4096, 12);
    grow_write(20000, 1000, 13); /* out of order: joined from below */
    grow_write(19000, 1000, 14);
    grow_write(5000, 100, 15);   /* a rewrite inside the first extent: read back */
    grow_write(4000, 200, 16);   /* across the committed size: journal and growth */
    grow_write(30000, 100, 0);   /* zeros over the room's zeros: skipped as unchanged */
    memset(grow_known + 12288, 0, 19000 - 12288); /* never written: the room, read back */
    grow_publish_and_check(h, 20500); /* cuts [19000, 21000) */

    for (int k = 0; k < 70; k++) grow_write(21000 + (uint64_t)k * 100, 50, (uint8_t)(20 + k)); /* > 64 extents */
    grow_write(100, 300, 17);
    grow_publish_and_check(h, 21000 + 70 * 100);

    srand(20261124);
    uint64_t size = 21000 + 70 * 100;
    for (int round = 0; round < 6; round++) {
        uint64_t next = size + (uint64_t)(rand() % 20000);
        for (int w = 0; w < 150; w++) {
            uint64_t len = 1 + (uint64_t)(rand() % 3000);
            uint64_t off = (uint64_t)rand() % (next + 2000 - len);
            grow_write(off, len, (uint8_t)(rand() % 255 + 1));
        }
        grow_publish_and_check(h, next);
        size = next;
    }
    OK(mmzip_edit_end(ed));
    OK(mmzip_close(h));
    CHECK(check_archive(p) == MMZIP_OK);
    CHECK(stored_crc(p, "m") == crc32_ref(grow_buf, (size_t)size));
}

static void test_growth_crc_from_writes(void) {
    test_growth_crc_from_writes_in(1);
    test_growth_crc_from_writes_in(0);
}

/* Read system calls this process has made (/proc/self/io), or -1 where the kernel does not count them. */
static long read_calls(void) {
    FILE *f = fopen("/proc/self/io", "r");
    long n = -1;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "syscr: %ld", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

/* A publish takes the change that small writes made to committed bytes from the writes themselves (crc_delta
 * in edit.c): overwrites of overwrites, writes back to the committed value, unchanged ones, across blocks,
 * at the first and last byte. A large write leaves the delta unknown and the publish reads the journal
 * instead; the next version starts known again. Each published CRC must be that of the bytes then held, and
 * a publish of the noted delta must not read the changed blocks back. */
static void test_crc_delta_of_overwrites(void) {
    enum { SIZE = 300000 };
    char p[600];
    snprintf(p, sizeof p, "%s/crc_delta.zip", dir);
    static uint8_t model[SIZE], back[SIZE], piece[70000];
    for (size_t i = 0; i < SIZE; i++) model[i] = (uint8_t)(i * 31 + (i >> 9));
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "a", model, SIZE, 64));
    OK(mmzip_put(h, "b", "bbbb", 4, 0));
    OK(mmzip_close(h));
    OK(mmzip_open(p, "r+", NULL, &h));
    const void *v;
    uint64_t room;
    OK(jbegin(h, "a", &v, &room));
    srand(20261124);
    for (int round = 0; round < 8; round++) {
        int large = round == 3 || round == 6;
        for (int w = 0; w < 40; w++) {
            size_t len = 1 + (size_t)(rand() % 5000);
            size_t off = (size_t)rand() % (SIZE - len);
            if (w == 0) off = 0;
            if (w == 1) off = SIZE - len;
            if (w % 7 == 3) { /* the bytes as they are now: unchanged, no write */
                memcpy(piece, model + off, len);
            } else if (w % 7 == 5) { /* back to what an earlier write replaced: the deltas must cancel */
                OK(mmzip_edit_write(ed, off, model + off, len));
                for (size_t i = 0; i < len; i++) piece[i] = (uint8_t)(model[off + i] ^ 0x5a);
                OK(mmzip_edit_write(ed, off, piece, len));
                for (size_t i = 0; i < len; i++) piece[i] ^= 0x5a;
            } else {
                for (size_t i = 0; i < len; i++) piece[i] = (uint8_t)(rand() >> 7);
            }
            OK(mmzip_edit_write(ed, off, piece, len));
            memcpy(model + off, piece, len);
        }
        if (large) { /* past the small-write size: not noted */
            size_t off = (size_t)rand() % (SIZE - sizeof piece);
            for (size_t i = 0; i < sizeof piece; i++) piece[i] = (uint8_t)(i * 3 + round);
            OK(mmzip_edit_write(ed, off, piece, sizeof piece));
            memcpy(model + off, piece, sizeof piece);
        }
        long r0 = read_calls();
        OK(mmzip_edit_publish(ed, SIZE));
        long reads = read_calls() - r0;
        /* 40 writes touch some 50 blocks: reading them back takes three reads each. */
        if (r0 >= 0 && !large) CHECK(reads < 10);
        mmzip_entry_info info;
        OK(mmzip_stat(h, "a", &info));
        size_t n = 0;
        OK(mmzip_read(h, "a", 0, back, SIZE, &n));
        CHECK(n == SIZE && memcmp(back, model, SIZE) == 0);
        CHECK_EQ_U64(info.crc32, crc32_ref(model, SIZE));
    }
    OK(mmzip_edit_end(ed));
    OK(mmzip_close(h));
    CHECK(check_archive(p) == MMZIP_OK);
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(model, SIZE));
}

/* An edit and a hold of the same entry exclude each other, in this process and across processes, and the
 * end of an edit lets holds in again (the edit's lock is on the store's descriptor, which stays open). */
static void test_hold_and_edit_exclude(void) {
    const char *p = make("hold.zip");
    mmzip_t *h;
    mmzip_hold_t *hold = NULL, *other = NULL;
    const void *v;
    uint64_t room;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_hold(h, "a", &hold));
    FAILS_WITH(jbegin(h, "a", &v, &room), MMZIP_EBUSY, "held by a reader");
    mmzip_release(hold);
    OK(jbegin(h, "a", &v, &room));
    FAILS_WITH(mmzip_hold(h, "a", &hold), MMZIP_EBUSY, "being written in place");
    OK(mmzip_hold(h, "b", &other)); /* another entry */
    mmzip_release(other);
    int ready[2], done[2];
    CHECK(pipe(ready) == 0 && pipe(done) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* a reader in another process: refused during the edit, let in after it */
        mmzip_t *r;
        mmzip_hold_t *rh = NULL;
        char c = 0;
        if (mmzip_open(p, "r", NULL, &r) != MMZIP_OK) _exit(1);
        int during = mmzip_hold(r, "a", &rh);
        if (write(ready[1], "x", 1) != 1 || read(done[0], &c, 1) != 1) _exit(2);
        int after = mmzip_hold(r, "a", &rh);
        mmzip_release(rh);
        mmzip_close(r);
        _exit(during == MMZIP_EBUSY && after == MMZIP_OK ? 0 : 3);
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    OK(mmzip_edit_end(ed));
    CHECK(write(done[1], "x", 1) == 1);
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    OK(mmzip_hold(h, "a", &hold));
    mmzip_release(hold);
    OK(mmzip_close(h));
}

/* After a publish the journal is stale until the next change resets it (or the end removes it). A writer
 * killed right after a publish leaves the published version; one killed after writing again, before the next
 * publish, leaves the first published version too: the write must have reset the journal to it first (a
 * stale journal would be deleted without being applied, and the second write would stay, with a wrong CRC). */
static void test_killed_after_publish(int write_again) {
    char p[600];
    snprintf(p, sizeof p, "%s/after_publish_%d.zip", dir, write_again);
    uint8_t want[10000], later[3000];
    for (size_t i = 0; i < sizeof want; i++) want[i] = (uint8_t)(i * 7);
    mmzip_t *h;
    OK(mmzip_open(p, "w", NULL, &h));
    OK(mmzip_put(h, "a", want, sizeof want, 64));
    OK(mmzip_put(h, "b", "bbbb", 4, 0));
    OK(mmzip_close(h));
    memset(want + 1000, 0x11, 2000);
    memset(later, 0x22, sizeof later);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *c;
        const void *v;
        uint64_t room;
        if (mmzip_open(p, "r+", NULL, &c) || jbegin(c, "a", &v, &room) ||
            mmzip_edit_write(ed, 1000, want + 1000, 2000) || mmzip_edit_publish(ed, sizeof want))
            _exit(1);
        if (write_again && (mmzip_edit_write(ed, 500, later, sizeof later) ||
                            mmzip_edit_write(ed, 9000, later, 1000)))
            _exit(2);
        raise(SIGKILL);
        _exit(3);
    }
    check_killed(pid);
    char journal[700];
    snprintf(journal, sizeof journal, "%s.mmzip-undo", p);
    CHECK(access(journal, F_OK) == 0); /* left by the kill */
    /* Hot only if the kill came after a write that followed the publish; the open that repairs counts it. */
    CHECK_EQ_U64(unfinished_kind(p, "a"), write_again ? MMZIP_UNFINISHED_UNDO : 0);
    mmzip_info ri;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_get_info(h, &ri));
    CHECK_EQ_U64(ri.edits_recovered, write_again ? 1 : 0);
    CHECK_EQ_U64(ri.edits_restored, write_again ? 1 : 0);
    CHECK_EQ_U64(ri.journal_restored, write_again ? 4096 + (sizeof want - 8192) : 0); /* blocks 0 and 2 */
    OK(mmzip_close(h));
    CHECK(access(journal, F_OK) != 0);
    CHECK_EQ_U64(check_archive(p), MMZIP_OK);
    OK(mmzip_open(p, "r", NULL, &h));
    const void *r;
    uint64_t rn;
    OK(mmzip_get(h, "a", &r, &rn));
    CHECK(rn == sizeof want && memcmp(r, want, sizeof want) == 0);
    mmzip_close(h);
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(want, sizeof want));
}

static void test_killed_after_publish_only(void) { test_killed_after_publish(0); }
static void test_killed_after_publish_and_write(void) { test_killed_after_publish(1); }

static void test_killed_recover(void) { test_killed_between_write_and_commit(0); }
static void test_killed_open(void) { test_killed_between_write_and_commit(1); }

/* A marker file left beside an archive that was replaced since (mode "w" here) names entries of another file:
 * it is removed untouched, never used to refresh the CRC of an entry of the new archive that happens to lie at
 * the same offset under the same name (that would pass bad bytes off as good). */
static void test_stale_marker_file_ignored(void) {
    const char *p = make("stale_marker.zip");
    pid_t pid = fork();
    if (pid == 0) {
        mmzip_t *h;
        void *v;
        if (mmzip_open(p, "r+", NULL, &h) || mbegin(h, "a", &v, NULL)) _exit(3);
        memset(v, 0x5A, 100);
        raise(SIGKILL);
        _exit(4);
    }
    check_killed(pid);
    CHECK(file_exists_suffixed(p, ".mmzip-inplace"));
    /* Copy the marker aside, replace the archive (the same layout: "a" at the same offset), put it back. */
    char mk[4096], saved[4200], cmd[9000];
    snprintf(mk, sizeof mk, "%s.mmzip-inplace", p);
    snprintf(saved, sizeof saved, "%s.saved", mk);
    CHECK(rename(mk, saved) == 0);
    make("stale_marker.zip");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", saved, mk);
    CHECK(system(cmd) == 0);
    /* Damage a byte of the new "a": only a check may tell, never a recovery. */
    mmzip_t *h;
    mmzip_entry_info info;
    OK(mmzip_open(p, "r", NULL, &h));
    OK(mmzip_stat(h, "a", &info));
    CHECK(marked(p, "a") == 1);
    CHECK_EQ_U64(unfinished_kind(p, "a"), 0); /* another file's marker */
    mmzip_close(h);
    FILE *f = fopen(p, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, (long)info.data_offset + 10, SEEK_SET);
        fputc(0xEE, f);
        fclose(f);
    }
    mmzip_info mi;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_get_info(h, &mi));
    CHECK_EQ_U64(mi.edits_recovered, 0);
    OK(mmzip_close(h));
    CHECK(!file_exists_suffixed(p, ".mmzip-inplace"));
    FAILS_WITH(check_archive(p), MMZIP_ECRC, "");
}

/* An archive left by an older mmzip killed mid-edit holds a marker entry ".mmzip/edit/<key>" (12 bytes: local
 * header offset, CRC before) instead of a marker file: a writable open still refreshes the CRC and drops it. */
static void test_legacy_marker_entry(void) {
    const char *p = make("legacy_marker.zip");
    mmzip_t *h;
    mmzip_entry_info info;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_stat(h, "a", &info));
    uint8_t marker[12];
    for (int i = 0; i < 8; i++) marker[i] = (uint8_t)(info.header_offset >> (8 * i));
    for (int i = 0; i < 4; i++) marker[8 + i] = (uint8_t)(info.crc32 >> (8 * i));
    OK(mmzip_put(h, ".mmzip/edit/a", marker, sizeof marker, 0));
    OK(mmzip_close(h));
    CHECK_EQ_U64(unfinished_kind(p, "a"), MMZIP_UNFINISHED_INPLACE);
    /* The edit the old writer made before dying: bytes changed under the committed CRC. */
    FILE *f = fopen(p, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, (long)info.data_offset, SEEK_SET);
        fputs("edited", f);
        fclose(f);
    }
    FAILS_WITH(check_archive(p), MMZIP_ECRC, "");
    mmzip_info mi;
    OK(mmzip_open(p, "r+", NULL, &h));
    OK(mmzip_get_info(h, &mi));
    CHECK_EQ_U64(mi.edits_recovered, 1);
    CHECK(!mmzip_exists(h, ".mmzip/edit/a"));
    CHECK_EQ_U64(mmzip_count(h), 2);
    OK(mmzip_close(h));
    CHECK_EQ_U64(check_archive(p), MMZIP_OK);
    uint8_t want[10000];
    for (size_t i = 0; i < sizeof want; i++) want[i] = (uint8_t)(i * 7);
    memcpy(want, "edited", 6);
    CHECK_EQ_U64(stored_crc(p, "a"), crc32_ref(want, sizeof want));
}

int main(void) {
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/mmzip_inplace_XXXXXX", base);
    if (!mkdtemp(dir)) return 2;
    RUN(test_edit_commit_end);
    RUN(test_refusals);
    RUN(test_discard_publishes_crc);
    RUN(test_damage_not_laundered);
    RUN(test_killed_recover);
    RUN(test_killed_open);
    RUN(test_stale_marker_file_ignored);
    RUN(test_legacy_marker_entry);
    RUN(test_edit_zeros_over_killed_growth);
    RUN(test_growth_crc_from_writes);
    RUN(test_crc_delta_of_overwrites);
    RUN(test_hold_and_edit_exclude);
    RUN(test_killed_after_publish_only);
    RUN(test_killed_after_publish_and_write);
    int r = ctest_result();
    if (!r) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) return 1;
    }
    return r;
}

/*
 * io.c - every write, truncate and sync of an archive goes through here.
 *
 * In the test build (MMZIP_TESTING) each operation is also a named crash point, so the crash tests can kill
 * the writer at every step of the protocol, in three ways:
 *   MMZIP_CRASH_AT=<name>        die before the operation
 *   MMZIP_CRASH_AT=<name>:torn   write the first half of the bytes, then die (a torn header or directory)
 *   MMZIP_CRASH_AT=<name>:grow   extend the file to the write's end with zeros, then die (zeros at EOF, as a
 *                                power loss can leave them)
 * MMZIP_CRASH_HIT=<n> picks the n-th time the point is reached (default 1). MMZIP_CRASH_LIST=<file> appends
 * the name of every point reached, so a harness can enumerate them. mmzip__set_io_trace() reports every
 * operation with its bytes, for the power-loss simulation of the durable mode.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

int mz_pread_full(int fd, void *buf, size_t len, uint64_t off) {
    uint8_t *p = buf;
    while (len) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) {
            errno = EIO; /* short: the file shrank under us */
            return -1;
        }
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int mz_fsync_dir_of(const char *path) {
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return -1;
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

int mz_read_fd(void *ctx, void *buf, size_t len, uint64_t off) {
    return mz_pread_full((int)(intptr_t)ctx, buf, len, off);
}

static int in_window(uint64_t w_off, uint32_t w_len, uint64_t off, size_t len) {
    return w_len && off >= w_off && len <= w_len && off - w_off <= w_len - len;
}

int mz_read_at(mz_store *s, void *buf, size_t len, uint64_t off) {
    struct mz_open_cache *c = &s->open_cache;
    if (c->on) {
        if (in_window(c->tail_off, c->tail_len, off, len)) {
            memcpy(buf, c->tail + (off - c->tail_off), len);
            return 0;
        }
        if (in_window(c->near_off, c->near_len, off, len)) {
            memcpy(buf, c->near + (off - c->near_off), len);
            return 0;
        }
        if (len <= MZ_NEAR_CACHE / 2 && off < s->file_size && s->file_size - off >= len) {
            uint32_t n = s->file_size - off < MZ_NEAR_CACHE ? (uint32_t)(s->file_size - off) : MZ_NEAR_CACHE;
            c->near_len = 0;
            if (mz_pread_full(s->fd, c->near, n, off) != 0) return -1;
            c->near_off = off;
            c->near_len = n;
            memcpy(buf, c->near, len);
            return 0;
        }
    }
    return mz_pread_full(s->fd, buf, len, off);
}

void mz_open_cache_start(mz_store *s) {
    struct mz_open_cache *c = &s->open_cache;
    uint32_t n = s->file_size < MZ_TAIL_CACHE ? (uint32_t)s->file_size : MZ_TAIL_CACHE;
    c->on = 1;
    c->near_len = c->tail_len = 0;
    c->tail_off = s->file_size - n;
    if (n && mz_pread_full(s->fd, c->tail, n, c->tail_off) == 0) c->tail_len = n;
}

void mz_open_cache_stop(mz_store *s) { s->open_cache.on = 0; }

#ifdef MMZIP_TESTING
static mmzip_io_trace_fn trace_fn;
static void *trace_ctx;

MMZIP_API void mmzip__set_io_trace(mmzip_io_trace_fn fn, void *ctx);
void mmzip__set_io_trace(mmzip_io_trace_fn fn, void *ctx) {
    trace_fn = fn;
    trace_ctx = ctx;
}

#define TRACE(op, off, data, len, what)                                                                     \
    do {                                                                                                   \
        if (trace_fn) trace_fn(trace_ctx, op, off, data, len, what);                                      \
    } while (0)

/* How many pages of [p, p+len) are not in memory (mincore), for the trace: a write from such a source is
 * copied into the page cache in pieces, each moving the size of a file it extends. */
static uint64_t pages_not_resident(const void *p, uint64_t len) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p / (uintptr_t)page * (uintptr_t)page, hi = (uintptr_t)p + len;
    size_t n = (size_t)((hi - lo + (uintptr_t)page - 1) / (uintptr_t)page);
    unsigned char vec[512];
    uint64_t missing = 0;
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof vec ? n - done : sizeof vec;
        if (mincore((void *)(lo + done * (uintptr_t)page), k * (size_t)page, vec) != 0) return 0;
        for (size_t j = 0; j < k; j++) missing += !(vec[j] & 1);
        done += k;
    }
    return missing;
}

typedef struct { char name[96]; unsigned hits; } hit_count;
static hit_count counts[256];
static int n_counts;
static pthread_mutex_t crash_mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned count_hit(const char *name) {
    pthread_mutex_lock(&crash_mu);
    unsigned h = 0;
    int i;
    for (i = 0; i < n_counts; i++)
        if (strcmp(counts[i].name, name) == 0) break;
    if (i == n_counts && n_counts < 256) {
        snprintf(counts[i].name, sizeof counts[i].name, "%s", name);
        counts[i].hits = 0;
        n_counts++;
    }
    if (i < 256) h = ++counts[i].hits;
    pthread_mutex_unlock(&crash_mu);
    return h;
}

/* Returns 0 (carry on), 1 (die before), 2 (tear), 3 (grow then die). */
static int crash_check(const char *name) {
    const char *list = getenv("MMZIP_CRASH_LIST");
    unsigned hit = count_hit(name);
    if (list && *list) {
        FILE *f = fopen(list, "a");
        if (f) {
            fprintf(f, "%s %u\n", name, hit);
            fclose(f);
        }
    }
    const char *at = getenv("MMZIP_CRASH_AT");
    if (!at || !*at) return 0;
    const char *colon = strchr(at, ':');
    size_t nlen = colon ? (size_t)(colon - at) : strlen(at);
    if (strlen(name) != nlen || strncmp(name, at, nlen) != 0) return 0;
    const char *want = getenv("MMZIP_CRASH_HIT");
    unsigned want_hit = want && *want ? (unsigned)strtoul(want, NULL, 10) : 1;
    if (hit != want_hit) return 0;
    if (!colon) return 1;
    if (strcmp(colon + 1, "torn") == 0) return 2;
    if (strcmp(colon + 1, "grow") == 0) return 3;
    return 1;
}

static void die(void) {
    /* SIGKILL, as the tests demand: no atexit handlers, no flushing, nothing the library could rely on. */
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

void mz_crashpoint(const char *name) {
    if (crash_check(name)) die();
}
#else
#define TRACE(op, off, data, len, what) ((void)0)
void mz_crashpoint(const char *name) { (void)name; }
#endif

int mz_io_write(mz_store *s, const void *buf, size_t len, uint64_t off, const char *what) {
    mmzip_iovec v = {buf, len};
    return mz_io_writev(s, &v, 1, off, what);
}

int mz_io_writev(mz_store *s, const mmzip_iovec *iov, int n, uint64_t off, const char *what) {
    mz_open_cache_stop(s);
    s->file_changes++;
    uint64_t total = 0;
    for (int i = 0; i < n; i++) total += iov[i].len;
    mz_io_grace(s, off, total);
#ifdef MMZIP_TESTING
    int mode = crash_check(what);
    if (mode == 1) die();
    if (mode == 3) {
        off_t cur = lseek(s->fd, 0, SEEK_END);
        if (cur >= 0 && (uint64_t)cur < off + total) {
            if (ftruncate(s->fd, (off_t)(off + total)) != 0) { /* best effort */ }
        }
        die();
    }
    if (mode == 2) total = total > 1 ? total / 2 : total;
    if (trace_fn)
        for (int j = 0; j < n; j++) {
            uint64_t missing = iov[j].len ? pages_not_resident(iov[j].base, iov[j].len) : 0;
            if (missing) TRACE(MZ_OP_SOURCE_NOT_RESIDENT, off, iov[j].base, missing, what);
        }
#endif
    /* One pwritev for a header and its data; the list is rebuilt as partial writes advance. */
    struct iovec v[16];
    int i = 0;
    uint64_t in_first = 0, pos = off, left = total;
    while (left) {
        int k = 0;
        uint64_t batch = 0;
        for (int j = i; j < n && k < 16 && batch < left; j++) {
            uint64_t skip = j == i ? in_first : 0, len = iov[j].len - skip;
            if (len > left - batch) len = left - batch;
            if (len == 0) continue;
            v[k].iov_base = (uint8_t *)iov[j].base + skip;
            v[k].iov_len = (size_t)len;
            batch += len;
            k++;
        }
        ssize_t w = pwritev(s->fd, v, k, (off_t)pos);
        if (w < 0) {
            if (errno == EINTR) continue;
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot write %s (%llu bytes at offset %llu)", s->path,
                                 what, (unsigned long long)left, (unsigned long long)pos);
        }
#ifdef MMZIP_TESTING
        for (int j = 0; j < k; j++) {
            TRACE(MZ_OP_WRITE, pos, v[j].iov_base, (uint64_t)w < v[j].iov_len ? (uint64_t)w : v[j].iov_len, what);
            if ((uint64_t)w <= v[j].iov_len) { pos += (uint64_t)w; left -= (uint64_t)w; w = 0; break; }
            pos += v[j].iov_len;
            left -= v[j].iov_len;
            w -= (ssize_t)v[j].iov_len;
        }
#else
        pos += (uint64_t)w;
        left -= (uint64_t)w;
#endif
        /* Find where the next write resumes. */
        uint64_t done = pos - off;
        i = 0;
        while (i < n && done >= iov[i].len) {
            done -= iov[i].len;
            i++;
        }
        in_first = done;
    }
#ifdef MMZIP_TESTING
    if (mode == 2) die();
#endif
    return MMZIP_OK;
}

int mz_io_write_fd(mz_store *s, int fd, const void *buf, size_t len, uint64_t off, const char *what) {
#ifdef MMZIP_TESTING
    int mode = crash_check(what);
    if (mode == 1) die();
    if (mode == 3) {
        off_t cur = lseek(fd, 0, SEEK_END);
        if (cur >= 0 && (uint64_t)cur < off + len) {
            if (ftruncate(fd, (off_t)(off + len)) != 0) { /* best effort */ }
        }
        die();
    }
    size_t full = len;
    if (mode == 2) len = len > 1 ? len / 2 : len;
#endif
    const uint8_t *p = buf;
    uint64_t at = off;
    size_t left = len;
    while (left) {
        ssize_t w = pwrite(fd, p, left, (off_t)at);
        if (w < 0) {
            if (errno == EINTR) continue;
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot write %s (%zu bytes)", s->path, what, left);
        }
        p += w;
        at += (uint64_t)w;
        left -= (size_t)w;
    }
#ifdef MMZIP_TESTING
    TRACE(MZ_OP_JWRITE, off, buf, len, what);
    if (mode == 2) die();
    (void)full;
#endif
    return MMZIP_OK;
}

void mz_io_trace_journal(mz_store *s, int op, uint64_t off, const char *what) {
    (void)s, (void)op, (void)off, (void)what;
    TRACE(op, off, NULL, 0, what);
}

void mz_io_grace(mz_store *s, uint64_t off, uint64_t len) {
    uint64_t waited_us = 0;
    int others = mz_grace_wait(s, off, len, &waited_us);
    if (others >= 0) TRACE(MZ_OP_WAIT, (uint64_t)others, NULL, waited_us, "relocate.reader_grace");
}

void mz_io_trace_mapped(mz_store *s, uint64_t off, uint64_t len, const char *what) {
    /* Bytes stored through a reservation's mapping reach the page cache without a write call; the trace
     * reports them at the point where they become part of an entry, so that the power-loss simulation knows
     * they are dirty until the next barrier. */
    (void)s, (void)off, (void)len, (void)what;
    TRACE(MZ_OP_WRITE, off, s->map.base + off, len, what);
}

int mz_io_zero(mz_store *s, uint64_t off, uint64_t len, const char *what) {
    if (len == 0) return MMZIP_OK;
    mz_open_cache_stop(s);
    s->file_changes++;
    mz_io_grace(s, off, len);
#ifdef FALLOC_FL_PUNCH_HOLE
    /* Punching a hole zeroes without writing (and frees the blocks). */
    if (fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0) {
        TRACE(MZ_OP_WRITE, off, NULL, len, what);
        return MMZIP_OK;
    }
#endif
    static const uint8_t zeros[65536];
    while (len) {
        size_t n = len < sizeof zeros ? (size_t)len : sizeof zeros;
        int st = mz_io_write(s, zeros, n, off, what);
        if (st) return st;
        off += n;
        len -= n;
    }
    return MMZIP_OK;
}

/* Where the last data extent of [lo, hi) ends: the dead bytes a writer left below its directory end there,
 * and the hole of the slack begins (hi where holes cannot be told, lo if it is all a hole). */
uint64_t mz_written_end(mz_store *s, uint64_t lo, uint64_t hi) {
    uint64_t end = lo;
    for (uint64_t off = lo; off < hi;) {
        off_t d = lseek(s->fd, (off_t)off, SEEK_DATA);
        if (d < 0 && errno == ENXIO) break;
        if (d < 0) return hi;
        if ((uint64_t)d >= hi) break;
        off_t h = lseek(s->fd, d, SEEK_HOLE);
        end = h < 0 || (uint64_t)h > hi ? hi : (uint64_t)h;
        if (end <= (uint64_t)d) return hi;
        off = end;
    }
    return end;
}

int mz_io_truncate(mz_store *s, uint64_t size, const char *what) {
    mz_open_cache_stop(s);
    s->file_changes++;
#ifdef MMZIP_TESTING
    if (crash_check(what)) die();
#endif
    while (ftruncate(s->fd, (off_t)size) != 0) {
        if (errno == EINTR) continue;
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot set the file size to %llu (%s)", s->path,
                             (unsigned long long)size, what);
    }
    TRACE(MZ_OP_TRUNCATE, size, NULL, 0, what);
    return MMZIP_OK;
}

int mz_io_barrier(mz_store *s, int full, const char *what) {
    if (!(s->opts.flags & MMZIP_DURABLE)) return MMZIP_OK;
#ifdef MMZIP_TESTING
    if (crash_check(what)) die();
#endif
    int r = full ? fsync(s->fd) : fdatasync(s->fd);
    if (r != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the archive to stable storage (%s)", s->path,
                             what);
    TRACE(full ? MZ_OP_FULLSYNC : MZ_OP_DATASYNC, 0, NULL, 0, what);
    return MMZIP_OK;
}

/* The gathered small puts (write.c gathers them) are written here, below everything that must see them in the
 * file first: a commit, a reader of a pending entry, an edit that moves the directory. */
int mz_flush_writes(mz_store *s) {
    if (!s->wbuf_len) return MMZIP_OK;
    int st = mz_io_write(s, s->wbuf, s->wbuf_len, s->wbuf_off, "put.entry");
    if (st) return st; /* the buffer stays, so a retried commit writes it again */
    s->wbuf_len = 0;
    __atomic_store_n(&s->written_end, UINT64_MAX, __ATOMIC_RELEASE);
    return MMZIP_OK;
}

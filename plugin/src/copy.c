/*
 * copy.c - copying large ranges out of the archive into the caller's buffer: mmzip_read's reads from the
 * file, and mmzip_copy's copies from the mapping for zero-copy readers such as the HDF5 driver.
 *
 * When a program reads a few MiB into memory it has just allocated (netCDF-C 4.9 allocates a fresh buffer
 * for every chunk it reads), most of the cost is not the copy but the kernel making the buffer's pages: a
 * zeroed page, a page-table update and a memory-cgroup charge for every 4 KiB. That work and the copy out
 * of the page cache are per page and touch disjoint pages, so a large copy is split into page-aligned pieces
 * that helper threads fault in and fill while the caller does its own piece. With two CPUs this takes about
 * 20% off netCDF-C's whole read of 4 MiB chunks (docs/performance.md).
 *
 * Helpers are created per call and joined before it returns: no thread outlives a read, none is left
 * behind in a forked child, and a store that is never read large costs nothing. Creating one costs tens of
 * microseconds, against about a millisecond of work per MiB piece.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A piece smaller than this is not worth a thread. */
#define MZ_COPY_PIECE_MIN (1u << 20)
/* More helpers than this stop paying: a copy is bound by memory bandwidth long before. */
#define MZ_COPY_THREADS_AUTO_MAX 4u

static pthread_once_t auto_once = PTHREAD_ONCE_INIT;
static unsigned auto_threads = 1;

static void resolve_auto_threads(void) {
    const char *env = getenv("MMZIP_COPY_THREADS");
    if (env && *env) {
        char *end;
        unsigned long v = strtoul(env, &end, 10);
        if (*end == 0 && v >= 1) {
            auto_threads = v > MZ_COPY_THREADS_MAX ? MZ_COPY_THREADS_MAX : (unsigned)v;
            return;
        }
    }
    /* The CPUs this process may run on, not the machine's: a job pinned to one core gains nothing. */
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    auto_threads = cpus < 1 ? 1 : (unsigned)cpus > MZ_COPY_THREADS_AUTO_MAX ? MZ_COPY_THREADS_AUTO_MAX : (unsigned)cpus;
}

static unsigned copy_threads_auto(void) {
    pthread_once(&auto_once, resolve_auto_threads);
    return auto_threads;
}

typedef struct copy_piece {
    int fd;             /* read from this file at off, or if negative ... */
    const uint8_t *src; /* ... copy from here */
    uint8_t *dst;
    size_t len;
    uint64_t off;
    int err; /* errno of a failed read, or 0 */
} copy_piece;

static void copy_piece_run(copy_piece *p) {
    mz_prefault_for_copy(p->dst, p->len);
    if (p->fd < 0) {
        memcpy(p->dst, p->src, p->len);
        p->err = 0;
        return;
    }
    p->err = mz_pread_full(p->fd, p->dst, p->len, p->off) == 0 ? 0 : (errno ? errno : EIO);
}

static void *copy_piece_thread(void *arg) {
    copy_piece_run(arg);
    return NULL;
}

int mz_copy_split(int fd, const void *src, void *buf, size_t len, uint64_t off, unsigned threads) {
    size_t pg = mz_page_size ? mz_page_size : 4096;
    unsigned n = threads ? threads : copy_threads_auto();
    if (n > MZ_COPY_THREADS_MAX) n = MZ_COPY_THREADS_MAX;
    if (n > len / MZ_COPY_PIECE_MIN) n = (unsigned)(len / MZ_COPY_PIECE_MIN);
    if (n <= 1) {
        copy_piece whole = {fd, src, buf, len, off, 0};
        copy_piece_run(&whole);
        errno = whole.err;
        return whole.err ? -1 : 0;
    }

    /* Piece boundaries fall on the destination's page boundaries, so no two threads fault the same page. */
    copy_piece piece[MZ_COPY_THREADS_MAX];
    pthread_t tid[MZ_COPY_THREADS_MAX];
    int started[MZ_COPY_THREADS_MAX] = {0};
    uintptr_t base = (uintptr_t)buf;
    size_t done = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t end = len;
        if (i + 1 < n) {
            uintptr_t cut = (base + len / n * (i + 1)) & ~(uintptr_t)(pg - 1);
            end = cut > base + done ? (size_t)(cut - base) : done;
        }
        piece[i] = (copy_piece){fd, fd < 0 ? (const uint8_t *)src + done : NULL, (uint8_t *)buf + done, end - done,
                                off + done, 0};
        done = end;
    }

    /* Helpers start with every signal blocked: a signal meant for the program (SIGINT under Python, a
     * profiler's SIGPROF) must reach one of its own threads, not a short-lived copier. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 1; i < n; i++)
        started[i] = piece[i].len && pthread_create(&tid[i], NULL, copy_piece_thread, &piece[i]) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    copy_piece_run(&piece[0]);
    int err = piece[0].err;
    for (unsigned i = 1; i < n; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else copy_piece_run(&piece[i]); /* no thread to be had: the caller does the piece itself */
        if (!err) err = piece[i].err;
    }
    errno = err;
    return err ? -1 : 0;
}

/*
 * A store open for writing is an editing session: it reads a few small pieces once (HDF5's metadata, before
 * it rewrites them), and a first touch of a page of a new mapping costs a page fault and, in a new process,
 * the page tables above it - 30 to 300 us on this project's VM, against 2 us for a pread of the same bytes
 * from the page cache the mapping shares. Measured on the first attribute session of new processes on a
 * 1 GiB member: 1.04-1.09 ms with the mapping's faults, 0.85-0.91 ms without. A mapping kept from an earlier
 * store of the file (MMZIP_KEEP_MAPPING) has the pages that store touched present, and is read as it is:
 * reading a kept one with pread cost repeated sessions 0.03-0.05 ms each.
 */
#define MZ_COPY_PREAD_BELOW (64u << 10)

/* 1 if [src, src + len) is the archive's own bytes, in the new mapping of a store open for writing, and was
 * read from the file into dst. */
static int copied_by_pread(const mz_store *s, void *dst, const void *src, size_t len) {
    const uint8_t *p = src, *base = s->map.base;
    if (!s->writable || s->map.warm || len >= MZ_COPY_PREAD_BELOW || !base || p < base) return 0;
    uint64_t off = (uint64_t)(p - base);
    if (off > s->map.mapped || len > s->map.mapped - off) return 0; /* a draft in the writable alias, say */
    return mz_pread_full(s->fd, dst, len, off) == 0; /* short: past the end of the file; the mapping decides */
}

void mmzip_copy(mmzip_t *h, void *dst, const void *src, size_t len) {
    if (h && copied_by_pread(h->s, dst, src, len)) return;
    (void)mz_copy_split(-1, src, dst, len, 0, h ? h->s->opts.copy_threads : 1); /* only a pread can fail */
}

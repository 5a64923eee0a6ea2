/*
 * mapping.c - the address-space reservation and the overlays of the archive file.
 *
 * A store reserves a range of address space once (anonymous, PROT_NONE: it costs no memory and no disk)
 * and overlays the file onto its start, read-only and shared. Growth maps only the new pages, at the same
 * base, so pointers handed out never move and pages already faulted in stay faulted in. Writable memory
 * exists only in a second, separate alias reservation, and only over the ranges of open reservations
 * (mmzip_reserve): a stray write through any other pointer faults.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

size_t mz_page_size;

static uint64_t page(void) {
    if (!mz_page_size) mz_page_size = (size_t)sysconf(_SC_PAGESIZE);
    return mz_page_size;
}

/* Below this many whole pages, one fault per page costs less than the system calls that would avoid them. */
#define MZ_PREFAULT_MIN_PAGES 8

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Replaces what is mapped at [p, p + len) by inaccessible memory, keeping the addresses reserved. 0 or -1. */
static int make_inaccessible(uint8_t *p, uint64_t len) {
    void *r = mmap(p, (size_t)len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    return r == MAP_FAILED ? -1 : 0;
}

/*
 * The reservation of the last store closed in this process is kept for the next store of the same file.
 * Tearing down a reservation the size of max_file_size (1 TiB by default) frees the upper page-table levels
 * that span it, and the next store's first touches allocate them again: measured on this project's VM, that
 * was a fifth of the fixed cost of a short HDF5 edit session through the driver (open, a few writes, commit,
 * close), and a third of an open and close. Only the same file (device, inode and path) gets it back.
 *
 * By default the file itself is not kept: the overlay is replaced by inaccessible memory, so a pointer kept
 * past mmzip_close() - the caller's error - faults until the next open of that file, and the process holds
 * nothing of the file. A store opened with MMZIP_KEEP_MAPPING keeps the overlay too, with the descriptor it
 * maps through: the next session of that file finds its page tables filled and maps nothing. That removes
 * the rest of the fixed cost of a short session (mapping the file at open, unmapping it at close, and the
 * page faults of the first reads, which on this VM cost more than the reads). The overlay holds the file
 * open, so it is dropped at the next open of any other file, and a file with no name left is never kept.
 * Such a store's caller keeps no pointer past the close, so its reservation may also go to another file
 * opened with the flag (without the overlay): unmapping a reservation and making a new one cost more than
 * the session that follows on this VM (a tool that opens a scratch archive first, then the real one).
 *
 * The overlay maps through its own read-only descriptor (map_fd), never the store's: a mapping keeps its
 * open file description alive, and the writer's lock belongs to the store's description, so an overlay made
 * through it would hold the lock past the close ("open for writing by another open in this process").
 */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kept_reservation {
    uint8_t *base;
    uint64_t len, dev, ino;
    uint64_t mapped; /* bytes of the file still overlaid (MMZIP_KEEP_MAPPING), 0 otherwise */
    int map_fd;      /* the descriptor the overlay maps through, or -1 */
    int recyclable;  /* released by a MMZIP_KEEP_MAPPING store: no pointer into it outlives the store */
    uint32_t path_hash; /* of the path it was opened by: see adopt_reservation */
} kept = {NULL, 0, 0, 0, 0, -1, 0, 0};

static void *reserve_va(uint64_t len);

static void drop_kept(struct kept_reservation *k) {
    if (k->base) munmap(k->base, (size_t)k->len);
    if (k->map_fd >= 0) close(k->map_fd);
    *k = (struct kept_reservation){NULL, 0, 0, 0, 0, -1, 0, 0};
}

/* Takes the kept reservation if it is for this file and size (or, for a store with MMZIP_KEEP_MAPPING, one
 * that such a store released); else reserves anew, and drops a kept overlay of another file (it holds that
 * file open). */
static void adopt_reservation(mz_mapping *m, uint64_t len, int at_least) {
    struct kept_reservation got = {NULL, 0, 0, 0, 0, -1, 0, 0}, stale = {NULL, 0, 0, 0, 0, -1, 0, 0};
    pthread_mutex_lock(&kept_mu);
    /* A kept overlay holds its file, so its inode number cannot have gone to another file; a bare
     * reservation's can have (deleted, and a new file created), so the path must match too. */
    int same_file = kept.dev == m->file_dev && kept.ino == m->file_ino &&
                    (kept.map_fd >= 0 || kept.path_hash == m->path_hash);
    int fits = kept.len == len || (at_least && kept.len > len);
    if (kept.base && fits && (same_file || (m->keep && kept.recyclable))) got = kept;
    else if (kept.map_fd >= 0) stale = kept;
    if (got.base || stale.base) kept = (struct kept_reservation){NULL, 0, 0, 0, 0, -1, 0, 0};
    pthread_mutex_unlock(&kept_mu);
    drop_kept(&stale);
    if (got.base && got.map_fd >= 0 && (!same_file || !m->keep)) {
        /* Another file's overlay: mz_map_init maps this file over it (one system call, where making it
         * inaccessible first would be two: each rebuilds page tables, slow on this VM). This file's, for a
         * store that must not hold it past its close: the overlay serves the store as it is (the same bytes),
         * and its close makes it inaccessible. Either way the descriptor is not needed any more. */
        if (!same_file) {
            m->stale_overlay = got.mapped;
            got.mapped = 0;
        }
        close(got.map_fd);
        got.map_fd = -1;
    }
    if (got.base) {
        m->base = got.base;
        m->reserved = got.len;
        m->mapped = got.mapped;
        m->map_fd = got.map_fd;
        return;
    }
    m->base = reserve_va(len);
    m->reserved = len;
}

/* Gives back the store's reservation: kept for its file (with the overlay if the store asked for it and the
 * file still has a name), or unmapped. */
static void release_reservation(mz_mapping *m) {
    int keep_overlay = m->keep && m->map_fd >= 0 && m->mapped > 0;
    if (keep_overlay) {
        struct stat st;
        keep_overlay = fstat(m->map_fd, &st) == 0 && st.st_nlink > 0;
    }
    if (!keep_overlay) {
        if (m->map_fd >= 0) close(m->map_fd);
        m->map_fd = -1;
        if (m->mapped && make_inaccessible(m->base, m->mapped) != 0) {
            munmap(m->base, (size_t)m->reserved);
            return;
        }
        m->mapped = 0;
    }
    pthread_mutex_lock(&kept_mu);
    struct kept_reservation evict = kept;
    kept = (struct kept_reservation){m->base,   m->reserved, m->file_dev, m->file_ino,
                                     m->mapped, m->map_fd,   m->keep,     m->path_hash};
    pthread_mutex_unlock(&kept_mu);
    drop_kept(&evict);
}

void mmzip_release_kept(void) {
    pthread_mutex_lock(&kept_mu);
    struct kept_reservation k = kept;
    kept = (struct kept_reservation){NULL, 0, 0, 0, 0, -1, 0, 0};
    pthread_mutex_unlock(&kept_mu);
    drop_kept(&k);
}

static void *reserve_va(uint64_t len) {
    /* Aligned to 2 MiB: the kernel maps a file's large page-cache folios (Linux 6.x) with one fault per folio,
     * or as one huge entry, only where the mapping's addresses line up with the file offsets' 2 MiB
     * boundaries. Unaligned, a zero-copy reader of large entries took about twice as many page faults as
     * Python's own mmap of the same file (which the kernel aligns), and was 2-3x slower reading 64 MiB.
     * Linux 6.7 and later align a large anonymous mapping by themselves: then one call is enough. (No
     * MADV_NOHUGEPAGE here: the file overlays that replace the reservation are new mappings, which would
     * not inherit it.) */
    const uint64_t huge = 2u << 20;
    uint8_t *raw = mmap(NULL, (size_t)len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    if (((uintptr_t)raw & (huge - 1)) == 0) return raw;
    munmap(raw, (size_t)len);
    uint64_t span = len + huge;
    raw = mmap(NULL, (size_t)span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    if (raw + span > p + len) munmap(p + len, (size_t)(raw + span - (p + len)));
    return p;
}

void mz_prefer_huge_pages(void *p, size_t len) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = 2u << 20;
    if (len < 2 * huge) return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + len) & ~(huge - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)len;
#endif
}

void mz_prefault_for_copy(void *dst, size_t len) {
#ifdef MADV_POPULATE_WRITE
    uintptr_t pg = (uintptr_t)page();
    uintptr_t lo = ((uintptr_t)dst + pg - 1) & ~(pg - 1), hi = ((uintptr_t)dst + len) & ~(pg - 1);
    if (hi < lo + MZ_PREFAULT_MIN_PAGES * pg) return;
    /* A buffer the caller reuses is already there: its first whole page tells, for one cheap call, and
     * saves a walk over every page table entry of the range. */
    unsigned char present = 0;
    if (mincore((void *)lo, (size_t)pg, &present) == 0 && (present & 1)) return;
    madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE); /* best effort: an error leaves the faults to the copy */
#else
    (void)dst, (void)len;
#endif
}

/* Makes what is left of another file's overlay in a reused reservation (past this file's) inaccessible: it
 * must not be read here, and it holds that file. Done at the first real cover, which maps this file over
 * the rest of it in the same system call. */
static int settle_stale_overlay(mz_mapping *m) {
    uint64_t from = m->mapped, to = m->stale_overlay;
    m->stale_overlay = 0;
    if (to <= from) return MMZIP_OK;
    return make_inaccessible(m->base + from, to - from) == 0 ? MMZIP_OK : MMZIP_ENOMEM;
}

int mz_map_init(mz_mapping *m, int fd, const struct stat *fd_stat, uint64_t file_size, uint64_t reserve,
                unsigned how, const char *name) {
    memset(m, 0, sizeof *m);
    m->map_fd = -1;
    if (reserve < file_size) reserve = file_size;
    reserve = round_up(reserve ? reserve : page(), page());
    struct stat st;
    if (fd_stat || fstat(fd, &st) == 0) {
        if (!fd_stat) fd_stat = &st;
        m->file_dev = (uint64_t)fd_stat->st_dev;
        m->file_ino = (uint64_t)fd_stat->st_ino;
        m->path_hash = name ? mz_hash(name, strlen(name)) : 0;
        m->keep = (how & MZ_MAP_KEEP) != 0;
    }
    if (m->file_ino) adopt_reservation(m, reserve, (how & MZ_MAP_AT_LEAST) != 0);
    else if ((m->base = reserve_va(reserve))) m->reserved = reserve;
    m->warm = m->mapped > 0;
    if (!m->base)
        return mz_fail_errno(MMZIP_ENOMEM, errno, "%s: cannot reserve %llu bytes of address space", name,
                             (unsigned long long)reserve);
    if (m->keep && m->map_fd < 0) {
        /* A new open file description of this very inode: by its name (a path walk through /proc costs
         * twice as much), or, if the name went to another file meanwhile, through /proc. Without either
         * the overlay maps through fd and is not kept. */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        for (int via_proc = name == NULL; via_proc < 2 && m->map_fd < 0; via_proc++) {
            m->map_fd = open(via_proc ? self : name, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO put there */
            struct stat mst;
            if (m->map_fd >= 0 && (fstat(m->map_fd, &mst) != 0 || (uint64_t)mst.st_dev != m->file_dev ||
                                   (uint64_t)mst.st_ino != m->file_ino)) {
                close(m->map_fd);
                m->map_fd = -1;
            }
        }
    }
    return mz_map_cover(m, fd, file_size, name);
}

int mz_map_cover(mz_mapping *m, int fd, uint64_t file_size, const char *name) {
    if (m->map_fd >= 0) fd = m->map_fd;
    uint64_t want = round_up(file_size, page());
    if (want <= m->mapped) return MMZIP_OK;
    if (want > m->reserved) {
        if (m->wbase)
            return mz_fail(MMZIP_ETOOBIG, "%s: the archive would grow to %llu bytes, past max_file_size (%llu)",
                           name, (unsigned long long)file_size, (unsigned long long)m->reserved);
        /* A read-only store outgrew its reservation: map the whole file afresh and keep the old mapping alive
         * until close, since callers may still hold pointers into it. */
        uint64_t res = round_up(want * 2, page());
        uint8_t *nb = reserve_va(res);
        if (!nb)
            return mz_fail_errno(MMZIP_ENOMEM, errno, "%s: cannot reserve %llu bytes of address space", name,
                                 (unsigned long long)res);
        if (mmap(nb, (size_t)want, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
            int err = errno;
            munmap(nb, (size_t)res);
            return mz_fail_errno(MMZIP_EIO, err, "%s: cannot map the archive", name);
        }
        struct mz_retired *r = realloc(m->retired, (size_t)(m->n_retired + 1) * sizeof *r);
        if (!r) {
            munmap(nb, (size_t)res);
            return mz_fail(MMZIP_ENOMEM, "%s: out of memory", name);
        }
        m->retired = r;
        r[m->n_retired].addr = m->base;
        r[m->n_retired].len = (size_t)m->reserved;
        m->n_retired++;
        m->base = nb;
        m->reserved = res;
        m->mapped = want;
        return MMZIP_OK;
    }
    if (mmap(m->base + m->mapped, (size_t)(want - m->mapped), PROT_READ, MAP_SHARED | MAP_FIXED, fd,
             (off_t)m->mapped) == MAP_FAILED) {
        int err = errno;
        (void)settle_stale_overlay(m);
        return mz_fail_errno(MMZIP_EIO, err, "%s: cannot map %llu bytes of the archive", name,
                             (unsigned long long)want);
    }
    m->mapped = want;
    if (m->stale_overlay && settle_stale_overlay(m) != MMZIP_OK)
        return mz_fail_errno(MMZIP_ENOMEM, errno, "%s: cannot clear the address space it reuses", name);
    return MMZIP_OK;
}

int mz_map_writable(mz_mapping *m, int fd, uint64_t off, uint64_t len, uint8_t **view, const char *name) {
    if (!m->wbase) {
        m->wbase = reserve_va(m->reserved);
        if (!m->wbase)
            return mz_fail_errno(MMZIP_ENOMEM, errno, "%s: cannot reserve address space for a writable view",
                                 name);
    }
    uint64_t lo = off / page() * page(), hi = round_up(off + (len ? len : 1), page());
    if (hi > m->reserved)
        return mz_fail(MMZIP_ETOOBIG, "%s: reservation past max_file_size", name);
    if (mmap(m->wbase + lo, (size_t)(hi - lo), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)lo) ==
        MAP_FAILED)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot map a writable view of %llu bytes", name,
                             (unsigned long long)len);
    *view = m->wbase + off;
    return MMZIP_OK;
}

int mz_map_seal(mz_mapping *m, uint64_t off, uint64_t len) {
    if (!m->wbase || len == 0) return MMZIP_OK;
    uint64_t lo = off / page() * page(), hi = round_up(off + len, page());
    return mprotect(m->wbase + lo, (size_t)(hi - lo), PROT_READ) == 0 ? MMZIP_OK : MMZIP_EIO;
}

void mz_map_drop_writable(mz_mapping *m, uint64_t off, uint64_t len) {
    if (!m->wbase) return;
    uint64_t lo = off / page() * page(), hi = round_up(off + (len ? len : 1), page());
    /* Back to reserved-but-inaccessible, so the range beyond a later truncation can never SIGBUS us. */
    (void)make_inaccessible(m->wbase + lo, hi - lo);
}

void mz_map_free(mz_mapping *m) {
    if (m->stale_overlay && settle_stale_overlay(m) != MMZIP_OK && m->base) {
        munmap(m->base, (size_t)m->reserved); /* the other file's bytes must go, reservation and all */
        m->base = NULL;
        if (m->map_fd >= 0) close(m->map_fd);
    }
    if (m->base && m->file_ino && !m->n_retired) release_reservation(m);
    else if (m->base) { /* map_fd is set once base is: a zeroed mapping never initialised has neither */
        munmap(m->base, (size_t)m->reserved);
        if (m->map_fd >= 0) close(m->map_fd);
    }
    if (m->wbase) munmap(m->wbase, (size_t)m->reserved);
    for (int i = 0; i < m->n_retired; i++) munmap(m->retired[i].addr, m->retired[i].len);
    free(m->retired);
    memset(m, 0, sizeof *m);
    m->map_fd = -1;
}

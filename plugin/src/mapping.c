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

/*
 * The reservation of the last store closed in this process is kept, without its file, for the next store of
 * the same file. Tearing down a reservation the size of max_file_size (1 TiB by default) frees the upper
 * page-table levels that span it, and the next store's first touches allocate them again: measured on this
 * project's VM, that was a fifth of the fixed cost of a short HDF5 edit session through the driver (open,
 * a few writes, commit, close), and a third of an open and close. Only the same file (device and inode)
 * gets it back, so that a pointer kept past mmzip_close() - the caller's error - can never read another
 * archive's bytes: until the next open it faults, as before, and after it reads this archive.
 */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *kept_base;
static uint64_t kept_len, kept_dev, kept_ino;

static void *reserve_va(uint64_t len);

static void *reserve_va_for(uint64_t len, uint64_t dev, uint64_t ino) {
    pthread_mutex_lock(&kept_mu);
    uint8_t *p = NULL;
    if (kept_base && kept_len == len && kept_dev == dev && kept_ino == ino) {
        p = kept_base;
        kept_base = NULL;
    }
    pthread_mutex_unlock(&kept_mu);
    return p ? p : reserve_va(len);
}

/* Gives back a reservation whose first `mapped` bytes overlay the file: kept for it, or unmapped. */
static void release_va(uint8_t *base, uint64_t len, uint64_t mapped, uint64_t dev, uint64_t ino) {
    if (mapped && mmap(base, (size_t)mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                       -1, 0) == MAP_FAILED) {
        munmap(base, (size_t)len);
        return;
    }
    pthread_mutex_lock(&kept_mu);
    uint8_t *evict = kept_base;
    uint64_t evict_len = kept_len;
    kept_base = base;
    kept_len = len;
    kept_dev = dev;
    kept_ino = ino;
    pthread_mutex_unlock(&kept_mu);
    if (evict) munmap(evict, (size_t)evict_len);
}

static void *reserve_va(uint64_t len) {
    /* Aligned to 2 MiB: the kernel maps a file's large page-cache folios (Linux 6.x) with one fault per folio,
     * or as one huge entry, only where the mapping's addresses line up with the file offsets' 2 MiB
     * boundaries. Unaligned, a zero-copy reader of large entries took about twice as many page faults as
     * Python's own mmap of the same file (which the kernel aligns), and was 2-3x slower reading 64 MiB. */
    const uint64_t huge = 2u << 20;
    uint64_t span = len + huge;
    uint8_t *raw = mmap(NULL, (size_t)span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    if (raw + span > p + len) munmap(p + len, (size_t)(raw + span - (p + len)));
#ifdef MADV_NOHUGEPAGE
    /* A transparent huge page would turn a one-byte touch of a small entry into a 2 MiB fault. */
    madvise(p, (size_t)len, MADV_NOHUGEPAGE);
#endif
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

int mz_map_init(mz_mapping *m, int fd, uint64_t file_size, uint64_t reserve, const char *name) {
    memset(m, 0, sizeof *m);
    if (reserve < file_size) reserve = file_size;
    reserve = round_up(reserve ? reserve : page(), page());
    struct stat st;
    if (fstat(fd, &st) == 0) {
        m->file_dev = (uint64_t)st.st_dev;
        m->file_ino = (uint64_t)st.st_ino;
    }
    m->base = reserve_va_for(reserve, m->file_dev, m->file_ino);
    if (!m->base)
        return mz_fail_errno(MMZIP_ENOMEM, errno, "%s: cannot reserve %llu bytes of address space", name,
                             (unsigned long long)reserve);
    m->reserved = reserve;
    return mz_map_cover(m, fd, file_size, name);
}

int mz_map_cover(mz_mapping *m, int fd, uint64_t file_size, const char *name) {
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
             (off_t)m->mapped) == MAP_FAILED)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot map %llu bytes of the archive", name,
                             (unsigned long long)want);
    m->mapped = want;
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
    mmap(m->wbase + lo, (size_t)(hi - lo), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
         -1, 0);
}

void mz_map_free(mz_mapping *m) {
    if (m->base && m->file_ino) release_va(m->base, m->reserved, m->mapped, m->file_dev, m->file_ino);
    else if (m->base) munmap(m->base, (size_t)m->reserved);
    if (m->wbase) munmap(m->wbase, (size_t)m->reserved);
    for (int i = 0; i < m->n_retired; i++) munmap(m->retired[i].addr, m->retired[i].len);
    free(m->retired);
    memset(m, 0, sizeof *m);
}

/*
 * shared_writer.c - shared appending (MMZIP_SHARED): many handles, in many processes and threads, write one
 * archive in turn, each holding the archive's writer lock for one transaction only.
 *
 * Why it is a mode of its own and not what every writer does: a single writer keeps the lock from open to
 * close, so its in-memory view of the directory is always the archive's, and nothing has to be checked before
 * a write. A shared writer gives the lock up after each commit; whoever takes it next may find a directory
 * that other writers changed, or debris that a writer killed while holding it left. So the first write of a
 * transaction takes the lock and then does what a writable open does after taking it (docs/protocol.md §6,
 * §11): reload the end records and the directory if they are not byte for byte what this store left or found,
 * and repair the file. Everything else - writing, committing, the crash safety of every step - is the single
 * writer's protocol unchanged, run by whichever writer holds the lock.
 *
 * The lock is the writer lock of locks.c (an OFD lock, dropped by the kernel when its holder dies). Waiting is
 * in turn: a writer first takes a turnstile lock (another byte), then the writer lock, then lets the turnstile
 * go. A writer that commits and comes straight back must pass the turnstile, which the longest-waiting writer
 * holds while it waits for the writer lock, so nobody is passed over again and again (locks.c:
 * mz_lock_writer_in_turn). Waits are bounded by mmzip_options.lock_wait_ms; an unbounded one
 * (MMZIP_WAIT_FOREVER) blocks in the kernel.
 *
 * The hooks called from the rest of the core are declared in internal.h (mz_shared_*); each is a no-op for a
 * store opened without MMZIP_SHARED. This file is a layer below write.c, which calls it (internal.h's map):
 * what it needs from above - the full reload of the directory and the repair of a writable open, which
 * store.c and recovery.c make - it calls through the reload function the open installs in the store
 * (mz_shared_set_reload), as SQLite's pager calls the busy handler it is given: never by name.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define MZ_SHARED_DEFAULT_WAIT_MS 60000u

struct mz_shared {
    uint32_t wait_ms;
    int held;              /* this store holds the writer lock: a transaction is open */
    /* The directory and end records as this store left them (its last commit) or found them (its last
     * reload): [seen_pos, seen_size) of a file of seen_size bytes, kept at buf + off (room before them, so
     * that records other writers' additions put in front are prepended without moving the rest). A
     * transaction whose file still holds exactly these bytes there has nothing to reload. */
    uint8_t *buf;
    uint64_t cap, off;
    uint64_t seen_pos, seen_size;
    uint64_t seen_trailer; /* the end records' length at the end of it */
    mz_shared_reload_fn reload; /* the full reload and repair, installed by the open (store.c) */
    /* An inotify watch on the file (-1: none), and whether it has been read empty since the file was last
     * in the state remembered above (see "The watch" below). */
    int watch;
    int quiet;
};

#define SEEN(sh) ((sh)->buf + (sh)->off)

/*
 * The watch. Whether the file is still as this store left it is a byte-for-byte comparison of its directory
 * (unchanged() below): O(entries) per transaction, the one cost of shared appending that grows with the
 * archive (a 1.5 MB memcmp at 16,384 entries). The kernel can say it for free: every write, truncate and
 * hole punch of a file queues an IN_MODIFY event to each inotify watch on it, before the system call
 * returns, and every change to a published directory or end records is one of those (mmzip never writes
 * them through a mapping). So a store that read its watch empty just before it let the lock go, with the
 * file in the state it remembers, and finds it still empty after it took the lock again, knows that nobody
 * changed a byte meanwhile. Only where the kernel sees every write: local file systems. On NFS, Lustre, CIFS
 * or FUSE another node's writes make no event here, so there the comparison stays. Any event (ours, another
 * writer's, a killed writer's debris, a queue overflow), a failed read, or no watch at all means: compare.
 * A handle inherited across fork() shares the watch's queue, but its writes and refreshes are refused
 * (write.c, mz_shared_refresh), so it never reads the queue.
 */
static int local_file_system(int fd) {
    struct statfs f;
    if (fstatfs(fd, &f) != 0) return 0;
    switch ((unsigned long)f.f_type) {
    case 0xEF53UL:     /* ext2, ext3, ext4 */
    case 0x58465342UL: /* XFS */
    case 0x9123683EUL: /* Btrfs */
    case 0x01021994UL: /* tmpfs */
    case 0xF2F52010UL: /* F2FS */
        return 1;
    default:
        return 0;
    }
}

static void watch_start(mz_store *s) {
    struct mz_shared *sh = s->shared;
    sh->watch = -1;
    sh->quiet = 0;
    if (getenv("MMZIP_SHARED_NO_WATCH") || !local_file_system(s->fd)) return;
    int w = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w < 0) return; /* out of inotify instances (fs.inotify.max_user_instances): compare instead */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", s->fd); /* this open file, whatever its name is now */
    if (inotify_add_watch(w, self, IN_MODIFY) < 0) {
        close(w);
        return;
    }
    sh->watch = w;
}

/* Reads the watch's queue empty. 1 if it held no event, 0 if it held some, -1 if it cannot be read (the
 * watch is given up). */
static int watch_drain(struct mz_shared *sh) {
    if (sh->watch < 0) return -1;
    int none = 1;
    for (;;) {
        char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t r = read(sh->watch, ev, sizeof ev);
        if (r > 0) {
            none = 0;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) return none;
        close(sh->watch);
        sh->watch = -1;
        return -1;
    }
}

/* The writer lock, in turn (see the top of the file). Messages name the archive and the wait. */
static int acquire(mz_store *s, int fd) {
    uint32_t ms = s->shared->wait_ms;
    int r = mz_lock_writer_in_turn(fd, ms);
    if (r == 0 || r == 1) return r;
    if (r == MMZIP_EBUSY)
        return mz_fail(MMZIP_EBUSY, "%s: waited %u ms for the writer lock in vain (other writers of the archive "
                       "kept it: shared writers' transactions, or a single-writer open that holds it until it "
                       "closes); raise mmzip_options.lock_wait_ms to wait longer", s->path, ms);
    return mz_fail_errno(MMZIP_EIO, -r, "%s: cannot take the writer lock", s->path);
}

int mz_shared_check_options(const char *path, mmzip_options *o, int writable) {
    if (!(o->flags & MMZIP_SHARED)) return MMZIP_OK;
    if (!writable) {
        o->flags &= ~(uint32_t)MMZIP_SHARED; /* a reader takes no writer lock in any mode */
        return MMZIP_OK;
    }
    if (o->flags & MMZIP_NO_LOCK)
        return mz_fail(MMZIP_EINVAL, "%s: MMZIP_SHARED needs the writer lock, which MMZIP_NO_LOCK turns off: "
                       "without it nothing orders the writers", path);
    /* Other writers must be able to open the archive: it is published by the open, not at its first commit. */
    o->flags &= ~(uint32_t)MMZIP_PUBLISH_ON_COMMIT;
    return MMZIP_OK;
}

int mz_shared_attach(mz_store *s) {
    if (!(s->opts.flags & MMZIP_SHARED) || !s->writable) return MMZIP_OK;
    s->shared = calloc(1, sizeof *s->shared);
    if (!s->shared) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    s->shared->wait_ms = s->opts.lock_wait_ms ? s->opts.lock_wait_ms : MZ_SHARED_DEFAULT_WAIT_MS;
    s->shared->watch = -1;
    return MMZIP_OK;
}

void mz_shared_free(mz_store *s) {
    if (!s->shared) return;
    if (s->shared->watch >= 0) close(s->shared->watch);
    free(s->shared->buf);
    free(s->shared);
    s->shared = NULL;
}

int mz_shared_lock_writer(mz_store *s, int fd) {
    if (!s->shared) return mz_lock_writer(fd);
    int r = acquire(s, fd);
    if (r == 0) s->shared->held = 1;
    if (r == 1) /* before anything is created or written: shared writers take turns by the lock or not at all */
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: the file system refuses the record locks shared writers take "
                       "turns by (MMZIP_SHARED, mmzip put --wait): Lustre without the flock mount option, NFS "
                       "without a lock manager; write from one process at a time instead", s->path);
    return r;
}

/* Remembers the directory and end records as they are on disk now (the caller holds the writer lock): read
 * whole, or, when the directory still ends where the one remembered did (a commit that only added records,
 * which go in front of the directory, docs/protocol.md §3.3 step 2), only the new records and the end
 * records. Only the store's own commits, and reloads that checked the rest, come here. */
static int remember(mz_store *s) {
    struct mz_shared *sh = s->shared;
    if (!sh) return MMZIP_OK;
    uint64_t len = s->file_size > s->cd_pos ? s->file_size - s->cd_pos : 0;
    uint64_t old_end = sh->seen_size - sh->seen_trailer;
    int prepend = sh->buf && sh->seen_size == s->file_size && sh->seen_trailer == s->trailer_len &&
                  s->cd_pos <= sh->seen_pos && s->cd_pos + s->cd_size == old_end;
    uint64_t add = prepend ? sh->seen_pos - s->cd_pos : len;
    if (!prepend || sh->off < add) {
        uint64_t keep = prepend ? sh->seen_size - sh->seen_pos : 0, cap = sh->cap ? sh->cap : 65536;
        while (cap < 2 * (keep + add)) cap *= 2;
        uint8_t *nb = malloc(cap);
        if (!nb) {
            free(sh->buf);
            sh->buf = NULL;
            return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        }
        if (keep) memcpy(nb + cap - keep, SEEN(sh), keep);
        free(sh->buf);
        sh->buf = nb;
        sh->cap = cap;
        sh->off = cap - keep;
    }
    int st = mz_pread_full(s->fd, sh->buf + sh->off - add, (size_t)add, s->cd_pos);
    uint64_t tail = prepend ? s->trailer_len : 0; /* the end records changed in place: read them again */
    if (!st && tail) st = mz_pread_full(s->fd, sh->buf + sh->cap - tail, (size_t)tail, s->file_size - tail);
    if (st) {
        free(sh->buf);
        sh->buf = NULL;
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the directory", s->path);
    }
    sh->off -= add;
    sh->seen_pos = s->cd_pos;
    sh->seen_size = s->file_size;
    sh->seen_trailer = s->trailer_len;
    return MMZIP_OK;
}

/* Remembers the file as it is now and reads the watch empty of this store's own writes, last: from here only
 * writers after this one can queue events, so an empty queue at the next transaction means the file is as
 * remembered. For the moment the lock goes (the end of a transaction, of the open). */
static int remember_quiet(mz_store *s) {
    int r = remember(s);
    s->shared->quiet = r == MMZIP_OK && watch_drain(s->shared) == 1;
    return r;
}

/* 1 if [lo, hi) of the file reads as zeros. Holes are skipped with SEEK_DATA; what holds data is read. */
static int reads_as_zeros(int fd, uint64_t lo, uint64_t hi) {
    static const uint8_t zero[65536];
    uint8_t buf[65536];
    while (lo < hi) {
        off_t d = lseek(fd, (off_t)lo, SEEK_DATA);
        if (d < 0 && errno == ENXIO) return 1;
        uint64_t from = d < 0 ? lo : (uint64_t)d;
        if (from >= hi) return 1;
        off_t h = d < 0 ? -1 : lseek(fd, d, SEEK_HOLE);
        uint64_t to = h < 0 || (uint64_t)h > hi || (uint64_t)h <= from ? hi : (uint64_t)h;
        for (uint64_t p = from; p < to;) {
            size_t n = to - p < sizeof buf ? (size_t)(to - p) : sizeof buf;
            if (mz_pread_full(fd, buf, n, p) != 0 || memcmp(buf, zero, n) != 0) return 0;
            p += n;
        }
        lo = to;
    }
    return 1;
}

/* 1 if the file's bytes [pos, pos + len) are those at p. Read through the store's mapping (the page cache,
 * no copy): the caller holds the writer lock, so the file cannot shrink under it. */
static int file_holds(mz_store *s, uint64_t pos, const uint8_t *p, uint64_t len, uint64_t size) {
    if (mz_map_cover(&s->map, s->fd, size, s->path) != MMZIP_OK) {
        mz_clear_error();
        return 0;
    }
    return memcmp(s->map.base + pos, p, (size_t)len) == 0;
}

/* 1 if the file is as this store last left or found it: the same size, the same directory and end records
 * byte for byte, and a slack that still reads as zeros (a writer killed while holding the lock may have
 * written entries, records or a directory copy into it without committing them). quiet: the watch saw no
 * write since this store left the file so (see "The watch"), which covers the slack too: every way mmzip
 * puts bytes there starts with a write call (a reservation's local header is written before its mapping
 * is handed out, write.c). */
static int unchanged(mz_store *s, uint64_t size, int quiet) {
    struct mz_shared *sh = s->shared;
    if (!sh->buf || size != sh->seen_size || sh->seen_pos != s->cd_pos || !s->clean) return 0;
    if (quiet) return 1;
    return file_holds(s, sh->seen_pos, SEEN(sh), size - sh->seen_pos, size) &&
           reads_as_zeros(s->fd, s->data_end, s->cd_pos);
}

/*
 * Other writers' commits since this store's view that only added entries (docs/protocol.md §3.3 step 2): the
 * file has the size it had, its end records differ from the remembered ones only in the counts and the
 * directory's size and offset, the directory still ends where the remembered one did and its last bytes are
 * the remembered directory, byte for byte; the new records lie in front of it. Then only those are read and
 * parsed, and added to the table: the result is the table a full reload would build (the same entries),
 * at the cost of the new records. Returns 1 if done, 0 if the change is not of that kind (the caller reloads
 * everything; nothing was changed here), or a negative status.
 */
static int take_additions(mz_store *s, uint64_t size) {
    struct mz_shared *sh = s->shared;
    uint64_t tlen = sh->seen_trailer, old_cd = sh->seen_size - tlen - sh->seen_pos;
    if (!sh->buf || size != sh->seen_size || sh->seen_pos != s->cd_pos || !s->clean || !s->zip64 ||
        tlen != s->trailer_len || tlen < MZ_TRAILER_FIXED || s->n != s->n_committed || s->concat || s->prefix)
        return 0;
    uint8_t tr[MZ_TRAILER_FIXED + 65535];
    if (mz_pread_full(s->fd, tr, (size_t)tlen, size - tlen) != 0) return 0;
    const uint8_t *was = SEEN(sh) + (size - tlen - sh->seen_pos);
    /* Everything but the ZIP64 end record's counts, directory size and offset (bytes 24..55) is as it was. */
    if (memcmp(tr, was, 24) != 0 || memcmp(tr + 56, was + 56, (size_t)tlen - 56) != 0) return 0;
    uint64_t count = mz_get64(tr + 32), cd_size = mz_get64(tr + 40), cd_pos = mz_get64(tr + 48);
    if (mz_get64(tr + 24) != count || cd_pos >= sh->seen_pos || cd_pos + cd_size != size - tlen ||
        count <= s->n_committed || count - s->n_committed > (sh->seen_pos - cd_pos) / MZ_CDH_FIXED)
        return 0;
    if (!file_holds(s, sh->seen_pos, SEEN(sh), old_cd, size)) return 0;
    mz_trailer t;
    memset(&t, 0, sizeof t);
    t.cd_pos = cd_pos;
    t.cd_size = sh->seen_pos - cd_pos;
    t.entries = count - s->n_committed;
    t.zip64 = 1;
    t.z64_pos = size - tlen;
    t.eocd_pos = size - tlen + MZ_Z64_EOCD_FIXED + MZ_Z64_LOC_FIXED;
    t.end = size;
    mz_source src = {mz_read_fd, (void *)(intptr_t)s->fd, size, s->path, s->fd};
    mz_cd cd;
    if (mz_cd_load(&src, &t, &cd) != MMZIP_OK) {
        mz_clear_error();
        return 0;
    }
    /* New names only (each once: checked as they go into the table), every one after this store's data,
     * stored, without room. */
    int ok = cd.count == t.entries && !cd.duplicates && !cd.unnamed && !cd.wrapped;
    uint32_t last = 0;
    for (uint32_t i = 0; ok && i < cd.count; i++) {
        mz_entry *e = &cd.entries[i];
        ok = e->lfh_off >= s->data_end && !e->room && e->method == 0 &&
             mz_lookup_head(s, (const char *)cd.image + e->cd_rec + MZ_CDH_FIXED, e->name_len) == MZ_NONE;
        if (e->lfh_off > cd.entries[last].lfh_off) last = i;
    }
    if (!ok) {
        mz_cd_free(&cd);
        return 0;
    }
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    int st = mz_entries_reserve(s, cd.count);
    if (!st) st = mz_cd_reserve(s, t.cd_size);
    uint64_t base = s->cd_len;
    if (!st) memcpy(s->cd + base, cd.image, (size_t)t.cd_size);
    for (uint32_t i = 0; i < cd.count && !st; i++) {
        mz_entry *e = &s->e[s->n];
        *e = cd.entries[i];
        e->cd_rec += base;
        if (mz_lookup_head(s, mz_name(s, e), e->name_len) != MZ_NONE) {
            st = MMZIP_ECORRUPT; /* a name twice among the new records: not mmzip's additions */
            break;
        }
        s->n++;
        st = mz_table_insert(s, s->n - 1);
    }
    uint32_t lastx = s->n - cd.count + last;
    s->n_committed = s->n;
    s->cd_len = s->cd_committed_len = base + (st ? 0 : t.cd_size);
    s->sorted_valid = 0;
    pthread_rwlock_unlock(&s->rw);
    mz_cd_free(&cd);
    /* The new entries' bytes end before the directory, mmzip wrote them (published after their bytes: no torn
     * tail to check), and the slack after them reads as zeros. If not, or anything failed, the table is
     * rebuilt by the full reload the caller makes now. */
    uint64_t end = 0;
    if (st == MMZIP_ECORRUPT) return 0;
    if (st || mz_map_cover(&s->map, s->fd, size, s->path) != MMZIP_OK ||
        mz_data_end_of(s, &s->e[lastx], &end) != MMZIP_OK || end > cd_pos ||
        !mz_written_by_mmzip(s, &s->e[lastx]) || !reads_as_zeros(s->fd, end, cd_pos)) {
        mz_clear_error();
        return 0;
    }
    pthread_rwlock_wrlock(&s->rw);
    s->cd_pos = cd_pos;
    s->cd_size = cd_size;
    s->locate_end = size;
    if (end > s->data_end) s->data_end = end;
    s->pending_end = s->zero_from = s->data_end;
    s->free_limit = cd_pos;
    s->compact = s->data_end == cd_pos;
    pthread_rwlock_unlock(&s->rw);
    return remember(s) ? -1 : 1;
}

/* Brings the store up to date, the writer lock held and nothing pending: a reload of the directory if it is
 * not what the store saw last, then the repair a writable open makes (recovery.c). */
static int bring_up_to_date(mz_store *s) {
    struct mz_shared *sh = s->shared;
    /* Nobody wrote to the file since this store left it as it remembers it (see "The watch"). */
    /* Read empty either way: the writes behind any events are done, their holder let the lock go. */
    int quiet = watch_drain(sh) == 1 && sh->quiet;
    sh->quiet = 0;
    if (quiet) mz_crashpoint("shared.quiet");
    struct stat st;
    if (fstat(s->fd, &st) != 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat", s->path);
    if (unchanged(s, (uint64_t)st.st_size, quiet)) return MMZIP_OK;
    int added = take_additions(s, (uint64_t)st.st_size);
    if (added == 1) return MMZIP_OK;
    if (added < 0 && !s->shared->buf) return MMZIP_ENOMEM; /* remember() said why */
    if ((uint64_t)st.st_size > s->opts.max_file_size)
        return mz_fail(MMZIP_ETOOBIG, "%s: the archive (%llu bytes) is larger than max_file_size (%llu)", s->path,
                       (unsigned long long)st.st_size, (unsigned long long)s->opts.max_file_size);
    if (!s->shared->reload) return mz_fail(MMZIP_EINVAL, "%s: a shared store without its reload", s->path);
    return s->shared->reload(s, &st);
}

int mz_shared_remember(mz_store *s) {
    if (!s->shared) return MMZIP_OK;
    s->shared->seen_size = 0; /* what it remembered was another state: read the directory whole */
    s->shared->quiet = 0;
    return remember(s);
}

void mz_shared_set_reload(mz_store *s, mz_shared_reload_fn fn) {
    if (s->shared) s->shared->reload = fn;
}

int mz_shared_enter(mz_store *s) {
    struct mz_shared *sh = s->shared;
    if (!sh || sh->held) return MMZIP_OK;
    int r = acquire(s, s->fd);
    if (r == 1) return mz_fail(MMZIP_EUNSUPPORTED, "%s: the file system refuses the record locks shared writers "
                               "take turns by (MMZIP_SHARED)", s->path);
    if (r) return r;
    sh->held = 1;
    mz_crashpoint("shared.locked");
    /* A pack, or a mode "w" open, may have put another file under the name: this store's file is no longer
     * the archive, and what it would append there nobody would see. */
    struct stat ps;
    if (stat(s->path, &ps) != 0 || ps.st_dev != s->dev || ps.st_ino != s->ino) {
        r = mz_fail(MMZIP_ESTALE, "%s: the archive was replaced on disk (mmzip pack, or an open with mode \"w\") "
                    "since this shared handle opened it; reopen it", s->path);
    } else {
        r = bring_up_to_date(s);
    }
    if (r) {
        mz_unlock_writer(s->fd);
        sh->held = 0;
    }
    return r;
}

void mz_shared_leave(mz_store *s) {
    struct mz_shared *sh = s->shared;
    if (!sh || !sh->held) return;
    if (s->batch || s->open_reservations || s->n_pending_live || s->n_shadowed || s->n_dead || s->n != s->n_committed ||
        s->wbuf_len)
        return; /* the transaction goes on: it holds the lock until its commit or rollback */
    /* If the directory cannot be read back now, the next transaction reloads it (no memory of it: not
     * "unchanged"). The lock goes either way. */
    (void)remember_quiet(s);
    mz_clear_error();
    mz_crashpoint("shared.release");
    mz_unlock_writer(s->fd);
    sh->held = 0;
}

int mz_shared_opened(mz_store *s) {
    struct mz_shared *sh = s->shared;
    if (!sh) return MMZIP_OK;
    if (!s->locks_supported)
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: the file system refuses the OFD locks shared writers take turns "
                       "by (MMZIP_SHARED); open without it, one writer at a time", s->path);
    /* The open holds the writer lock here, whichever way it took it (waiting in open_locked, or on the new
     * file of a creation), and has recovered the file. */
    pthread_mutex_lock(&s->wmu);
    watch_start(s);
    int r = remember_quiet(s);
    mz_unlock_writer(s->fd);
    sh->held = 0;
    pthread_mutex_unlock(&s->wmu);
    return r;
}

int mz_shared_refresh(mz_store *s) {
    if (!s->shared) return MMZIP_OK;
    /* A forked child shares the parent's open file, hence its OFD writer lock (taking it would succeed while
     * the parent holds it) and its watch's queue (reading it would take events the parent needs): a
     * transaction here could repair the file under the parent's feet, or make the parent skip a comparison
     * it needs. Writes and edits are refused the same way (write.c, edit.c). */
    int st = mz_refuse_inherited(s);
    if (st) return st;
    pthread_mutex_lock(&s->wmu);
    int r = mz_shared_enter(s);
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return r;
}

int mz_shared_refuse(mz_store *s, const char *what) {
    if (!s->shared) return MMZIP_OK;
    return mz_fail(MMZIP_EUNSUPPORTED, "%s: %s is not available to a shared writer (MMZIP_SHARED): an edit in "
                   "place spans transactions, and other writers would commit over it; open the archive without "
                   "MMZIP_SHARED to edit it", s->path, what);
}

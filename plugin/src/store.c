/*
 * store.c - opening and closing stores, the per-process registry, and handles; mmzip_recover.
 *
 * A store is one open archive in this process: one descriptor, one mapping, one entry table. Handles
 * point at stores; opening a file that is already open shares its store (keyed by device and inode). A
 * writable open repairs what a killed writer left (recovery.c), so mmzip_recover is a writable open, the
 * directory moved back behind the data, and a close: it lives here, above the repair it drives.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static mz_store *registry;

void mmzip_options_init(mmzip_options *o) {
    memset(o, 0, sizeof *o);
    o->max_file_size = MZ_DEFAULT_MAX_FILE_SIZE;
    o->alignment = MZ_DEFAULT_ALIGNMENT;
    o->commit_policy = MMZIP_COMMIT_EACH;
    o->max_decoded_size = MZ_DEFAULT_MAX_DECODED;
}

static int check_options(const char *path, mmzip_options *o) {
    if (!mz_page_size) mz_page_size = (size_t)sysconf(_SC_PAGESIZE);
    if (o->max_file_size == 0) o->max_file_size = MZ_DEFAULT_MAX_FILE_SIZE;
    if (o->alignment == 0) o->alignment = MZ_DEFAULT_ALIGNMENT;
    if (o->max_decoded_size == 0) o->max_decoded_size = MZ_DEFAULT_MAX_DECODED;
    if (o->copy_threads > MZ_COPY_THREADS_MAX)
        return mz_fail(MMZIP_EINVAL, "%s: copy_threads %u is more than %u", path, o->copy_threads,
                       MZ_COPY_THREADS_MAX);
    if ((o->alignment & (o->alignment - 1)) || o->alignment > MZ_MAX_ALIGNMENT || o->alignment > mz_page_size)
        return mz_fail(MMZIP_EINVAL, "%s: alignment %u is not a power of two between 1 and %u", path,
                       o->alignment, (unsigned)(mz_page_size < MZ_MAX_ALIGNMENT ? mz_page_size : MZ_MAX_ALIGNMENT));
    if (o->commit_policy > MMZIP_COMMIT_MANUAL)
        return mz_fail(MMZIP_EINVAL, "%s: unknown commit policy %u", path, o->commit_policy);
    return MMZIP_OK;
}

/*
 * Finds the end of the bytes of the physically last committed entry. An entry whose local header is missing
 * there (the torn tail of a writer that publishes the directory before the data, as the seed protocol
 * does) is hidden from every handle: it was never committed in any useful sense, and a writable open rolls
 * it back. Returns that entry (MZ_NONE if none) and sets *end to where new entries may start.
 */
static uint32_t entries_end(mz_store *s, uint64_t *end_out) {
    for (;;) {
        uint32_t last = MZ_NONE;
        for (uint32_t i = 0; i < s->n_committed; i++) {
            if (s->e[i].mark & MZ_MARK_BAD) continue;
            if (last == MZ_NONE || s->e[i].lfh_off > s->e[last].lfh_off) last = i;
        }
        uint64_t x;
        if (last == MZ_NONE) {
            /* No entries: new ones start where the archive starts. Our end records for an empty archive are
             * plain; ZIP64 ones with no entries come from a relocation that a crash interrupted, and the
             * bytes before them are its debris, not a stub to keep. */
            x = s->zip64 ? s->prefix : s->cd_pos;
        } else {
            if (mz_data_end_of(s, &s->e[last], &x) != MMZIP_OK) {
                s->e[last].mark |= MZ_MARK_BAD;
                s->sorted_valid = 0;
                continue;
            }
            /* The room kept after the last entry is its own, not free space for the next append. */
            x += mz_room_of(s, &s->e[last]);
        }
        /* Entries hidden for a missing or disagreeing local header stay in the directory (they are not
         * mmzip's to drop): new entries must go after every byte they may own. Without a local header to
         * read, that is up to the next entry or the directory, and at most what the largest header would
         * take. */
        for (uint32_t i = 0; i < s->n_committed; i++) {
            mz_entry *b = &s->e[i];
            if (!(b->mark & MZ_MARK_BAD)) continue;
            uint64_t most = b->lfh_off + MZ_LFH_FIXED + b->name_len + 0xFFFFu + b->csize + 24;
            uint64_t y = last == MZ_NONE || b->limit < most ? b->limit : most;
            if (y > x) x = y;
        }
        *end_out = x;
        return last;
    }
}

/* The last intact stored entry gets its CRC checked on first read, for the reason above - unless mmzip wrote
 * it, since mmzip never publishes an entry before its bytes. */
static int compute_layout(mz_store *s) {
    uint32_t last = entries_end(s, &s->data_end);
    if (last != MZ_NONE && s->e[last].method == 0 && !mz_written_by_mmzip(s, &s->e[last]))
        s->e[last].mark |= MZ_MARK_VERIFY;
    mz_clear_error();
    return MMZIP_OK;
}

/*
 * The last writer's close (alone in its process) and the bytes of entries its session removed from the end of
 * the data. The session kept them (its commits put nothing there) for the pointers it had handed out to them,
 * as a reader of an older commit in another process may still be reading them. No pointer of this process
 * outlives this close; if no other process has the file open either, nobody can be reading them, and they
 * become slack, which the close trims as any (an archive whose last entries were removed shrinks at once). While
 * another process has it open they stay where they are, dead bytes that no commit refers to, and later
 * writable opens keep them for as long as another process has the file open (recovery.c).
 */
int mz_release_removed_tail(mz_store *s) {
    if (!s->n_committed || s->foreign_hold || s->shared || s->unpublished || !s->clean || s->edit ||
        s->n_pending_live || s->pending_end != s->data_end)
        return MMZIP_OK;
    uint64_t x;
    entries_end(s, &x);
    if (x < mz_edit_floor(s)) x = mz_edit_floor(s);
    if (x >= s->data_end || mz_open_elsewhere(s->fd)) return MMZIP_OK;
    uint64_t was = s->data_end;
    /* The slack the close keeps must be a hole, as the next open expects of it (slack_is_hole). */
    int st = mz_io_zero(s, x, was - x, "close.release_removed");
    if (st) return st;
    s->data_end = s->pending_end = s->zero_from = x;
    s->compact = 0;
    return MMZIP_OK;
}

/*
 * Whether [lo, hi) reads as zeros: the slack every commit leaves below its directory is a hole (commit.c
 * punches whatever it does not need), found with one SEEK_DATA. Anything else there was written after the
 * last commit (entries of a batch that never committed, or the directory a relocation moved away) and the
 * next writable open compacts it away.
 */
static int zeros_at(mz_store *s, uint64_t lo, uint64_t hi) {
    static const uint8_t zero[65536];
    uint8_t buf[65536];
    while (lo < hi) {
        size_t n = hi - lo < sizeof buf ? (size_t)(hi - lo) : sizeof buf;
        if (mz_read_at(s, buf, n, lo) != 0 || memcmp(buf, zero, n) != 0) return 0;
        lo += n;
    }
    return 1;
}

/* 0 if [lo, hi) holds a nonzero byte; 2 if it is a hole (no whole block of it holds data), so that later
 * opens find that out with one SEEK_DATA again; 1 if it reads as zeros but had to be read to know (blocks
 * written with zeros, an archive copied without its holes): a commit should punch it. */
static int slack_is_hole(mz_store *s, uint64_t lo, uint64_t hi) {
    const uint64_t blk = 4096;
    int fd = s->fd;
    uint64_t a = (lo + blk - 1) / blk * blk, b = hi / blk * blk;
    if (a >= b) return zeros_at(s, lo, hi) ? 2 : 0;
    /* The partial blocks at both ends are read (a torn header may lie there); the whole blocks between
     * are a hole, or are read too. */
    if (!zeros_at(s, lo, a) || !zeros_at(s, b, hi)) return 0;
    /* Only the extents that hold data are read: a slack whose first blocks were allocated (a reservation
     * rounded up) is otherwise a hole, and reading all of it cost every open of a fresh archive. */
    int read_any = 0;
    for (uint64_t off = a; off < b;) {
        off_t d = lseek(fd, (off_t)off, SEEK_DATA);
        if (d < 0 && errno == ENXIO) break;
        if (d < 0) return zeros_at(s, off, b); /* no SEEK_DATA: read the rest */
        if ((uint64_t)d >= b) break;
        off_t h = lseek(fd, d, SEEK_HOLE);
        uint64_t end = h < 0 || (uint64_t)h > b ? b : (uint64_t)h;
        if (end <= (uint64_t)d) end = b;
        if (!zeros_at(s, (uint64_t)d, end)) return 0;
        read_any = 1;
        off = end;
    }
    return read_any ? 1 : 2;
}

int mz_store_install(mz_store *s, const mz_trailer *t, mz_cd *cd) {
    mz_table_free(s);
    s->e = cd->entries;
    s->n = s->n_committed = s->cap = cd->count;
    s->count_wrapped = cd->wrapped;
    s->count_differs = cd->count_recorded != cd->count;
    s->count_recorded = cd->count_recorded;
    s->comment_cut = cd->comment_cut;
    s->comment_cut_rec = cd->comment_cut_rec;
    s->comment_declared = t->comment_declared > t->comment_len ? t->comment_declared : 0;
    s->locate_end = t->end;
    s->cd = cd->image;
    s->cd_len = s->cd_committed_len = cd->image_len;
    s->cd_cap = cd->image_len;
    cd->entries = NULL;
    cd->image = NULL;
    free(s->comment);
    s->comment = t->comment;
    s->comment_len = t->comment_len;
    s->trailer_len = t->end - (t->zip64 ? t->z64_pos : t->eocd_pos);
    s->cd_pos = t->cd_pos;
    s->cd_size = t->cd_size;
    s->zip64 = t->zip64;
    s->prefix = t->concat; /* bytes prepended to the archive: neither live nor dead */
    s->n_pending_live = s->n_shadowed = s->n_dead = 0;
    int st = mz_table_rebuild(s);
    if (st) return st;
    st = compute_layout(s);
    if (st) return st;
    uint64_t records = t->zip64 ? t->z64_pos : t->eocd_pos;
    s->cd_adjacent = s->cd_pos + s->cd_size == records;
    s->concat = t->concat;
    s->end_follows_cd = s->cd_adjacent && t->end == s->file_size && t->concat == 0;
    int hole = s->cd_pos < s->data_end ? 0 : s->cd_pos == s->data_end ? 2 : slack_is_hole(s, s->data_end, s->cd_pos);
    s->slack_hole = hole != 0;
    s->clean = s->end_follows_cd && s->slack_hole;
    /* An archive without entries is clean only compact: ZIP64 end records with no entries above slack are a
     * relocation whose first commit never came, which the next writable open turns back into the plain end
     * record (unzip refuses the other form). */
    if (s->n == 0 && s->cd_pos != s->data_end) s->clean = 0;
    s->compact = s->clean && s->cd_pos == s->data_end;
    s->pending_end = s->data_end;
    s->free_limit = s->cd_pos;
    /* A slack found to be a hole reads as zeros: a commit need not punch it again (on a large archive that
     * punch walked hundreds of megabytes of hole at every session of an in-place edit). Zeros that had to
     * be read are punched by the next commit, which makes them a hole for the opens that follow. */
    s->zero_from = hole == 2 ? s->data_end : s->cd_pos;
    s->trailer_key[0] = t->end;
    s->trailer_key[1] = t->cd_pos ^ (t->cd_size << 20) ^ (t->entries << 40);
    s->cd_crc_pos = t->cd_pos;
    s->cd_crc_len = t->cd_size;
    s->cd_crc_known = s->map.base && t->cd_pos + t->cd_size <= s->file_size;
    s->cd_crc = s->cd_crc_known ? mz_crc32(0, s->map.base + t->cd_pos, (size_t)t->cd_size) : 0;
    if (!s->writable) mz_journal_mark(s);
    return MMZIP_OK;
}

static int read_store(void *ctx, void *buf, size_t len, uint64_t off) { return mz_read_at(ctx, buf, len, off); }

int mz_load_state(mz_store *s, int allow_scan_back, const struct stat *fd_stat, mz_trailer *t_out) {
    struct stat st;
    if (!fd_stat && fstat(s->fd, &st) != 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat", s->path);
    s->file_size = (uint64_t)(fd_stat ? fd_stat : &st)->st_size;
    int r = mz_map_cover(&s->map, s->fd, s->file_size, s->path);
    if (r) return r;
    mz_open_cache_start(s);
    mz_source src = {read_store, s, s->file_size, s->path, s->fd};
    mz_trailer t;
    mz_cd cd;
    r = mz_locate(&src, allow_scan_back, &t, &cd);
    if (r) return r;
    r = mz_store_install(s, &t, &cd);
    if (t_out) *t_out = t;
    t.comment = NULL; /* owned by the store now */
    mz_cd_free(&cd);
    return r;
}

static char *dir_of(const char *path) {
    char *d = strdup(path);
    if (!d) return NULL;
    char *slash = strrchr(d, '/');
    if (!slash) {
        free(d);
        return strdup(".");
    }
    if (slash == d) slash[1] = '\0';
    else *slash = '\0';
    return d;
}

static void store_free(mz_store *s) {
    if (!s) return;
    for (uint32_t i = 0; s->decoded && i <= s->decoded_mask; i++) free(s->decoded[i].data);
    free(s->decoded);
    mz_edit_free(s);
    mz_recovery_notes_free(s);
    mz_shared_free(s);
    mz_map_free(&s->map);
    mz_table_free(s);
    if (s->fd >= 0) close(s->fd);
    if (s->old_fd >= 0) close(s->old_fd);
    if (s->tmp_is_named && s->tmp_path && s->unpublished) unlink(s->tmp_path);
    free(s->tmp_path);
    free(s->comment);
    free(s->wbuf);
    free(s->path);
    pthread_mutex_destroy(&s->wmu);
    pthread_mutex_destroy(&s->decode_mu);
    pthread_rwlock_destroy(&s->rw);
    free(s);
}

static mz_store *store_new(const char *path, const mmzip_options *o, int writable) {
    mz_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->path = strdup(path);
    if (!s->path) {
        free(s);
        return NULL;
    }
    s->fd = s->old_fd = -1;
    s->owner = mz_current_pid();
    s->opts = *o;
    s->writable = writable;
    s->locks_supported = 1;
    s->trailer_len = MZ_TRAILER_FIXED;
    s->written_end = UINT64_MAX;
    pthread_mutex_init(&s->wmu, NULL);
    pthread_mutex_init(&s->decode_mu, NULL);
    pthread_rwlock_init(&s->rw, NULL);
    return s;
}

static int release(mmzip_t *h, int commit);

/* Opens the descriptor of a writer and takes its lock, making sure the path still names what we locked
 * (a pack may have renamed a new file over it while we waited). *st_out: the descriptor's fstat. */
static int open_locked(mz_store *s, int flags, int *fd_out, struct stat *st_out) {
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(s->path, flags | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == ENOENT) return mz_fail(MMZIP_ENOENT, "%s: no such archive", s->path);
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot open", s->path);
        }
        if (!(s->opts.flags & MMZIP_NO_LOCK)) {
            int l = mz_shared_lock_writer(s, fd); /* shared stores wait their turn */
            if (l < 0 && s->shared) { /* the message says how long it waited, or why it cannot */
                close(fd);
                return l;
            }
            if (l == MMZIP_EBUSY) {
                close(fd);
                return mz_fail(MMZIP_EBUSY, "%s: the archive is open for writing by another process (or "
                               "another open in this one); only one writer is allowed", s->path);
            }
            if (l == 1) s->locks_supported = 0;
            else if (l != 0) {
                close(fd);
                return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot take the writer lock", s->path);
            }
        }
        struct stat b;
        if (fstat(fd, st_out) == 0 && stat(s->path, &b) == 0 && st_out->st_dev == b.st_dev &&
            st_out->st_ino == b.st_ino) {
            *fd_out = fd;
            return MMZIP_OK;
        }
        close(fd);
    }
    return mz_fail(MMZIP_EBUSY, "%s: the archive keeps being replaced while opening", s->path);
}

static int create_unnamed(mz_store *s);

static int open_unpublished(mz_store *s, int path_exists) {
    if (path_exists) {
        /* Keep other writers off the archive we are about to replace. */
        struct stat st;
        int r = open_locked(s, O_RDWR, &s->old_fd, &st);
        if (r) return r;
    }
    return create_unnamed(s);
}

/* The unnamed file (or, without O_TMPFILE, a temporary name) of a new archive, locked. */
static int create_unnamed(mz_store *s) {
    char *dir = dir_of(s->path);
    if (!dir) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
#ifdef O_TMPFILE
    s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
#endif
    if (s->fd < 0) {
        /* No O_TMPFILE here: a named temporary file, removed if we close without committing. Those of
         * creations killed before are removed first: here is where they are left. */
        mz_remove_stale_temps(s->path, NULL, NULL);
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s.mmzip-new-%ld", s->path, (long)getpid());
        s->fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (s->fd >= 0) {
            s->tmp_is_named = 1;
            s->tmp_path = strdup(tmp);
        }
    }
    free(dir);
    if (s->fd < 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot create a new archive", s->path);
    if (!(s->opts.flags & MMZIP_NO_LOCK)) {
        int l = mz_shared_lock_writer(s, s->fd); /* a shared store refuses a file system without the locks */
        if (l < 0 && s->shared) return l;
    }
    s->unpublished = 1;
    return MMZIP_OK;
}

static int replace_empty(mz_store *s, unsigned keep);

/* Swaps the store over to a new unnamed file holding the plain end record, to be renamed over the archive at
 * publication (mz_publish), the old file's writer lock kept until then; with its permissions if `like` is
 * given. */
static int start_empty_replacement(mz_store *s, unsigned keep, const struct stat *like) {
    mz_map_free(&s->map);
    s->old_fd = s->fd;
    s->fd = -1;
    s->publish_replace = 1;
    int r = create_unnamed(s);
    if (!r && like && fchmod(s->fd, like->st_mode & 07777) != 0)
        r = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot set the mode of the new archive", s->path);
    if (!r) r = mz_map_init(&s->map, s->fd, NULL, 0, s->opts.max_file_size, keep, s->path);
    if (!r) r = mz_write_empty(s);
    return r;
}

static int store_open(mz_store *s, char mode, int path_exists) {
    int r;
    unsigned keep = (s->opts.flags & MMZIP_KEEP_MAPPING) ? MZ_MAP_KEEP : 0;
    if (!s->writable) {
        s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            if (errno == ENOENT) return mz_fail(MMZIP_ENOENT, "%s: no such archive", s->path);
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot open", s->path);
        }
        struct stat st;
        if (fstat(s->fd, &st) != 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat", s->path);
        uint64_t reserve = (uint64_t)st.st_size * 2;
        if (reserve < (64u << 20)) reserve = 64u << 20;
        r = mz_map_init(&s->map, s->fd, &st, 0, reserve, keep | MZ_MAP_AT_LEAST, s->path);
        if (r) return r;
        mz_lock_commit(s->fd, 0);
        r = mz_load_state(s, 1, NULL, NULL);
        mz_unlock_commit(s->fd);
        return r;
    }
    /* A new archive is built unnamed and linked into place (over the old one for "w"), so that a crash
     * during creation leaves no file, or the previous archive - never a half-written one. */
    if (mode == 'w' || (mode == 'W' && !path_exists)) {
        s->publish_replace = mode == 'w';
        r = open_unpublished(s, path_exists);
        if (r) return r;
        r = mz_map_init(&s->map, s->fd, NULL, 0, s->opts.max_file_size, keep, s->path);
        if (!r) r = mz_write_empty(s);
        if (r || (s->opts.flags & MMZIP_PUBLISH_ON_COMMIT)) return r;
        r = mz_publish(s);
        if (r != MMZIP_EEXIST) return r;
        /* Another process created it first: open theirs instead. */
        mz_map_free(&s->map);
        close(s->fd);
        s->fd = -1;
        s->unpublished = 0;
    }
    struct stat st;
    r = open_locked(s, O_RDWR, &s->fd, &st);
    if (r) return r;
    if ((uint64_t)st.st_size > s->opts.max_file_size)
        return mz_fail(MMZIP_ETOOBIG, "%s: the archive (%llu bytes) is larger than max_file_size (%llu)", s->path,
                       (unsigned long long)st.st_size, (unsigned long long)s->opts.max_file_size);
    r = mz_map_init(&s->map, s->fd, &st, 0, s->opts.max_file_size, keep, s->path);
    if (r) return r;
    if (st.st_size == 0) {
        /* Left by a crash of another program, or by an older mmzip: "w+" may start afresh in it. */
        if (mode == 'W') return mz_write_empty(s);
        return mz_fail(MMZIP_ENOTZIP, "%s: the file is empty (an archive whose creation was interrupted?); "
                       "open it with mode \"w+\" to start a new archive", s->path);
    }
    r = mz_load_state(s, 1, &st, NULL); /* we hold the writer lock: the size is still st's */
    if (r) return r;
    r = mz_recover_locked(s);
    if (r || !(s->opts.flags & MMZIP_PUBLISH_ON_COMMIT)) return r;
    return replace_empty(s, keep);
}

/* An archive with no entry cannot stay valid for every reader while a writer fills it: the first entry's
 * bytes go where its end record is, and 7-Zip and unzip reject an empty archive whose end record is anywhere
 * but at offset 0. With MMZIP_PUBLISH_ON_COMMIT, such an archive (the plain end record alone, nothing
 * prepended) is rebuilt as a new one would be, in an unnamed file renamed over it at the first commit: until
 * then, and if the writer dies, its 22 bytes stay as they are. The lock on it is kept until that rename. */
static int replace_empty(mz_store *s, unsigned keep) {
    if (s->n_committed || s->zip64 || s->prefix || s->foreign_hold || s->file_size != s->trailer_len ||
        s->cd_pos != 0)
        return MMZIP_OK;
    return start_empty_replacement(s, keep, NULL);
}

/* An archive whose every entry was removed keeps their dead bytes before its end record, and unzip and 7-Zip
 * refuse an archive of no entries with anything before its end record ("start of central directory not
 * found"). When the last writer closes it, it becomes the plain end record alone (with its comment), built as
 * a new archive over an old one is (replace_empty): an unnamed file renamed over the name. A reader of the
 * old file keeps it (mmzip's readers get MMZIP_ESTALE at their next refresh, as after a pack); a kill before
 * the rename leaves the last commit, and the next writer's close (mmzip recover) does this again. Only with
 * no other handle of this store in the process: the mapping is replaced, and their views would go with it.
 * Nothing foreign is touched: a prefixed archive, or one with bytes kept after its end records, stays. */
static int settle_emptied(mz_store *s) {
    if (s->n_committed || s->cd_size || s->prefix || s->concat || s->foreign_hold || s->unpublished ||
        !s->clean || !s->end_follows_cd || s->file_size <= s->trailer_len)
        return MMZIP_OK;
    mz_crashpoint("close.emptied");
    /* The archive keeps its permissions (an emptied private archive stays private). */
    struct stat old;
    if (fstat(s->fd, &old) != 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat", s->path);
    int r = start_empty_replacement(s, 0, &old);
    if (!r) r = mz_publish(s);
    return r;
}

/* A shared writer's transaction found the archive changed by more than additions (shared_writer.c): its view
 * is reloaded, and the file repaired, as a writable open does after taking the lock. */
static int shared_reload(mz_store *s, const struct stat *st) {
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    s->foreign_hold = 0;
    int r = mz_load_state(s, 1, st, NULL); /* the size is st's: the writer lock is held */
    mz_open_cache_stop(s);
    pthread_rwlock_unlock(&s->rw);
    mz_crashpoint("shared.reloaded");
    if (!r) r = mz_recover_locked(s);
    if (!r) r = mz_shared_remember(s);
    return r;
}

int mmzip_open(const char *path, const char *mode, const mmzip_options *opts, mmzip_t **out) {
    mz_clear_error();
    if (!path || !mode || !out) return mz_fail(MMZIP_EINVAL, "mmzip_open: NULL argument");
    *out = NULL;
    char m;
    if (strcmp(mode, "r") == 0) m = 'r';
    else if (strcmp(mode, "r+") == 0) m = '+';
    else if (strcmp(mode, "w+") == 0) m = 'W';
    else if (strcmp(mode, "w") == 0) m = 'w';
    else return mz_fail(MMZIP_EINVAL, "%s: unknown mode \"%s\" (use r, r+, w+ or w)", path, mode);
    int writable = m != 'r';
    mmzip_options o;
    if (opts) o = *opts;
    else mmzip_options_init(&o);
    int r = check_options(path, &o);
    if (!r) r = mz_shared_check_options(path, &o, writable);
    if (r) return r;

    mmzip_t *h = calloc(1, sizeof *h);
    if (!h) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", path);
    h->writable = writable;
    h->verify_get = (o.flags & MMZIP_VERIFY_CRC) != 0;
    h->progress = o.progress;
    h->progress_ctx = o.progress_ctx;

    pthread_mutex_lock(&registry_mu);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (!exists && (m == 'r' || m == '+')) {
        pthread_mutex_unlock(&registry_mu);
        free(h);
        return mz_fail(MMZIP_ENOENT, "%s: no such archive", path);
    }
    if (exists && S_ISDIR(st.st_mode)) {
        pthread_mutex_unlock(&registry_mu);
        free(h);
        return mz_fail_errno(MMZIP_EINVAL, EISDIR, "%s: not a ZIP archive", path);
    }
    mz_store *s = NULL;
    if (exists && !(o.flags & MMZIP_SHARED)) { /* a shared writer has a store of its own: it locks as a process does */
        for (s = registry; s; s = s->next)
            if (s->dev == st.st_dev && s->ino == st.st_ino && !s->unpublished && s->owner == mz_current_pid() &&
                !s->shared)
                break;
    }
    if (s) {
        const char *why = NULL;
        if (writable && !s->writable) why = "it is open read-only in this process; close those handles first";
        else if (writable && s->writer_handles) why = "it is already open for writing in this process";
        else if (m == 'w' && s->refs) why = "mode \"w\" would discard it while it is open in this process";
        if (why) {
            pthread_mutex_unlock(&registry_mu);
            free(h);
            return mz_fail(MMZIP_EBUSY, "%s: cannot open for writing: %s", path, why);
        }
        s->refs++;
        if (writable) s->writer_handles++;
        h->s = s;
        pthread_mutex_unlock(&registry_mu);
        *out = h;
        return MMZIP_OK;
    }
    s = store_new(path, &o, writable);
    if (!s) {
        pthread_mutex_unlock(&registry_mu);
        free(h);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", path);
    }
    r = mz_shared_attach(s);
    mz_shared_set_reload(s, shared_reload);
    if (!r) r = store_open(s, m, exists);
    mz_open_cache_stop(s);
    if (r) {
        pthread_mutex_unlock(&registry_mu);
        store_free(s);
        free(h);
        return r;
    }
    struct stat fst;
    if (s->map.file_ino) { /* mz_map_init's fstat of s->fd */
        s->dev = (dev_t)s->map.file_dev;
        s->ino = (ino_t)s->map.file_ino;
    } else if (fstat(s->fd, &fst) == 0) {
        s->dev = fst.st_dev;
        s->ino = fst.st_ino;
    }
    s->refs = 1;
    s->writer_handles = writable;
    s->next = registry;
    registry = s;
    h->s = s;
    pthread_mutex_unlock(&registry_mu);
    if (writable) {
        r = mz_recover_marked(s);
        if (!r) r = mz_shared_opened(s); /* a shared writer lets the lock go until its first write */
        if (r) {
            (void)release(h, 0);
            return r;
        }
    }
    *out = h;
    return MMZIP_OK;
}

int mmzip_close(mmzip_t *h) { return release(h, 1); }
int mmzip_discard(mmzip_t *h) { return release(h, 0); }

static int release(mmzip_t *h, int commit) {
    if (!h) return MMZIP_OK;
    mz_store *s = h->s;
    int r = MMZIP_OK;
    if (h->writable && s->owner == mz_current_pid() && s->edit && s->writer_handles == 1) {
        /* The last writer goes: what an in-place edit did not publish is undone, the journal removed. */
        pthread_mutex_lock(&s->wmu);
        r = mz_edit_end_locked(s);
        pthread_mutex_unlock(&s->wmu);
    }
    if (h->writable && s->owner == mz_current_pid() && !commit) {
        /* Giving up: nothing pending is kept, and an archive that never committed is never published. */
        pthread_mutex_lock(&s->wmu);
        r = mz_rollback_locked(s);
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
    }
    if (h->writable && s->owner == mz_current_pid() && s->n_views && s->writer_handles == 1) {
        /* Changes made through views are in the file already and cannot be rolled back: even a discard
         * publishes their CRCs; the marker file goes after that commit (edit.c). */
        int r2 = MMZIP_OK;
        mz_edit_maps_end_all(s);
        if (!commit) {
            pthread_mutex_lock(&s->wmu);
            if (!r2) r2 = mz_commit_locked(s, 0);
            pthread_mutex_unlock(&s->wmu);
        }
        if (!r) r = r2;
    }
    /* In a forked child an inherited handle is only let go of: the parent owns the pending state. */
    if (h->writable && s->owner == mz_current_pid() && commit) {
        pthread_mutex_lock(&s->wmu);
        if (s->open_reservations) {
            /* An unpatched reservation holds no promised data: drop it, keep the rest. */
            pthread_rwlock_wrlock(&s->rw);
            mz_table_changed(s);
            for (uint32_t i = s->n_committed; i < s->n; i++) {
                mz_entry *e = &s->e[i];
                if (!(e->mark & MZ_MARK_RESERVED)) continue;
                e->mark = (uint8_t)((e->mark & ~MZ_MARK_RESERVED) | MZ_MARK_DEAD);
                mz_map_drop_writable(&s->map, e->data_off, e->csize);
                s->n_dead++;
            }
            s->open_reservations = 0;
            pthread_rwlock_unlock(&s->rw);
        }
        s->batch = 0;
        r = mz_commit_locked(s, s->unpublished);
        if (r == MMZIP_OK && s->unpublished) r = mz_publish(s);
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
    }
    if (h->writable && s->owner == mz_current_pid() && s->n_views && s->writer_handles == 1 && r == MMZIP_OK)
        r = mz_edit_maps_sync(s); /* the final CRCs are committed: the marker file goes */
    if (h->writable && s->owner == mz_current_pid() && s->writer_handles == 1 && r == MMZIP_OK) {
        /* The last writer goes: the file at rest is its data, without the slack kept for growth. */
        pthread_mutex_lock(&registry_mu);
        int alone = s->refs == 1;
        pthread_mutex_unlock(&registry_mu);
        pthread_mutex_lock(&s->wmu);
        /* A shared writer settles under the lock, with a current view, and never replaces the file (other
         * writers have it open); if the lock cannot be had, the next writer's close settles instead. */
        int locked = mz_shared_enter(s);
        if (!locked) {
            if (alone) r = mz_release_removed_tail(s);
            if (!r) r = mz_settle_at_rest(s);
        } else if (locked != MMZIP_EBUSY && locked != MMZIP_ESTALE) {
            r = locked;
        }
        if (!r && alone && !s->shared) r = settle_emptied(s);
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
    }
    pthread_mutex_lock(&registry_mu);
    s->refs--;
    if (h->writable) s->writer_handles--;
    if (s->refs == 0) {
        for (mz_store **pp = &registry; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        store_free(s);
    }
    pthread_mutex_unlock(&registry_mu);
    free(h);
    return r;
}

const char *mmzip_path(mmzip_t *h) { return h ? h->s->path : NULL; }

const uint64_t *mmzip_generation(mmzip_t *h) {
    static const uint64_t none = 0;
    return h ? &h->s->generation : &none;
}

int mmzip_refresh(mmzip_t *h) {
    if (!h) return mz_fail(MMZIP_EINVAL, "mmzip_refresh: NULL handle");
    mz_store *s = h->s;
    if (s->writable) return mz_shared_refresh(s); /* a no-op but for a shared writer between transactions */
    struct stat ps;
    if (stat(s->path, &ps) != 0 || ps.st_dev != s->dev || ps.st_ino != s->ino)
        return mz_fail(MMZIP_ESTALE, "%s: the archive was replaced or removed on disk; reopen it", s->path);
    pthread_mutex_lock(&s->wmu);
    mz_lock_commit(s->fd, 0);
    struct stat fs;
    int r = MMZIP_OK;
    if (fstat(s->fd, &fs) != 0) {
        r = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat", s->path);
        goto out;
    }
    if ((uint64_t)fs.st_size == s->file_size && (uint64_t)fs.st_size == s->trailer_key[0]) {
        /* Commits that only add entries rewrite the end records in place and keep the size (protocol.md
         * §3.3): the size alone does not tell; the ZIP64 end record's counts and directory do. */
        uint8_t z[MZ_Z64_EOCD_FIXED];
        /* Nor do they: an edit in place changes one entry's CRC-32 in a directory of the same size at the same
         * place, which only the directory's own bytes tell. */
        if ((!s->zip64 || s->trailer_len < MZ_TRAILER_FIXED ||
             mz_pread_full(s->fd, z, sizeof z, s->file_size - s->trailer_len) != 0 ||
             mz_get32(z) != MZ_SIG_Z64_EOCD ||
             (mz_get64(z + 48) ^ (mz_get64(z + 40) << 20) ^ (mz_get64(z + 32) << 40)) == s->trailer_key[1]) &&
            (!s->cd_crc_known || mz_crc32(0, s->map.base + s->cd_crc_pos, (size_t)s->cd_crc_len) == s->cd_crc))
            goto out;
    }
    {
        mz_source src = {mz_read_fd, (void *)(intptr_t)s->fd, (uint64_t)fs.st_size, s->path, s->fd};
        mz_trailer t;
        mz_cd cd;
        r = mz_locate(&src, 1, &t, &cd);
        if (r) goto out;
        r = mz_map_cover(&s->map, s->fd, (uint64_t)fs.st_size, s->path);
        if (r) {
            mz_trailer_free(&t);
            mz_cd_free(&cd);
            goto out;
        }
        pthread_rwlock_wrlock(&s->rw);
        mz_table_changed(s);
        s->file_size = (uint64_t)fs.st_size;
        r = mz_store_install(s, &t, &cd);
        pthread_rwlock_unlock(&s->rw);
        mz_cd_free(&cd);
    }
out:
    if (r == MMZIP_OK) {
        /* An in-place edit may have begun, ended or been recovered without a new directory. */
        pthread_rwlock_wrlock(&s->rw);
        for (uint32_t i = 0; i < s->n; i++) s->e[i].mark &= (uint8_t)~MZ_MARK_EDITING;
        mz_journal_mark(s);
        pthread_rwlock_unlock(&s->rw);
    }
    mz_unlock_commit(s->fd);
    pthread_mutex_unlock(&s->wmu);
    return r;
}

uint64_t mz_stub_len(mz_store *s) {
    if (s->prefix) return s->prefix;
    uint64_t first = mz_first_lfh_off(s);
    if (first == UINT64_MAX || first == 0 || !s->map.base || first > s->file_size) return 0;
    /* mmzip's dead first entries (replaced or removed) start with the signature it clears in them
     * (format.md §8): dead bytes, not a stub. An intact local header there is another archive's (a ZIP in
     * its comment) or another writer's dead entry: kept, as a stub is. */
    if (first >= 4 && mz_get32(s->map.base) != MZ_SIG_LFH && mz_lfh_sig_or_cleared(s->map.base)) return 0;
    return first;
}

int mmzip_get_info(mmzip_t *h, mmzip_info *info) {
    if (!h || !info) return mz_fail(MMZIP_EINVAL, "mmzip_get_info: NULL argument");
    mz_store *s = h->s;
    memset(info, 0, sizeof *info);
    pthread_rwlock_rdlock(&s->rw);
    uint64_t live = 0;
    uint32_t min_align = 0;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        if (mz_lookup(s, mz_name(s, e), e->name_len, 0) != e) continue; /* shadowed duplicate */
        info->entries++;
        uint64_t end;
        if (mz_data_end_of(s, e, &end) == MMZIP_OK) live += end - e->lfh_off;
        info->reserved_bytes += mz_room_of(s, e);
        if (e->method == 0 && e->data_off) {
            uint32_t a = e->data_off ? (uint32_t)(e->data_off & (~e->data_off + 1)) : 1;
            if (a > MZ_MAX_ALIGNMENT || e->data_off == 0) a = MZ_MAX_ALIGNMENT;
            if (!min_align || a < min_align) min_align = a;
        }
    }
    info->pending = s->n_pending_live;
    info->file_size = s->file_size;
    info->live_bytes = live;
    info->directory_bytes = s->cd_size + s->trailer_len;
    info->prefix_bytes = mz_stub_len(s);
    info->free_bytes = s->cd_pos > s->data_end ? s->cd_pos - s->data_end : 0;
    info->end_follows_directory = s->end_follows_cd;
    info->kept_bytes = mz_kept_bytes(s);
    uint64_t accounted = live + info->directory_bytes + info->prefix_bytes + info->free_bytes + info->reserved_bytes +
                         info->kept_bytes;
    info->dead_bytes = s->file_size > accounted ? s->file_size - accounted : 0;
    info->alignment = s->opts.alignment;
    info->min_alignment = min_align ? min_align : s->opts.alignment;
    info->writable = h->writable;
    int held = mz_writer_lock_held(s->fd);
    info->writer_locked = s->writer_handles > 0 || held == 1;
    /* With no writer at work, what was written there and no commit refers to (entries removed from the end
     * while another process had the file open, what a killed writer left) is dead, not slack: the slack is a
     * hole. A writer's uncommitted entries are where it puts them. */
    if (!info->writer_locked && info->free_bytes && !s->slack_hole) {
        uint64_t written = mz_written_end(s, s->data_end, s->cd_pos) - s->data_end;
        info->free_bytes -= written;
        info->dead_bytes += written;
    }
    info->locks_supported = s->locks_supported && held != -1;
    info->zip64 = s->zip64;
    info->durable = (s->opts.flags & MMZIP_DURABLE) != 0;
    info->recovered_bytes = s->recovered_bytes;
    info->rolled_back = s->rolled_back;
    info->edits_recovered = s->edits_recovered;
    info->edits_restored = s->edits_restored;
    info->edits_open = mz_edits_open(s);
    for (uint32_t i = 0; i < s->n_committed; i++) {
        if (s->e[i].mark & MZ_MARK_BAD) info->torn_tail++;
        if (s->e[i].mark & MZ_MARK_NONAME) info->unnamed++;
    }
    info->append_from = s->foreign_hold;
    info->journal_restored = s->journal_restored;
    pthread_rwlock_unlock(&s->rw);
    int unfinished = mmzip_unfinished_edits(h, NULL, NULL);
    info->edits_unfinished = unfinished > 0 ? (uint64_t)unfinished : 0;
    return MMZIP_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Recovery as a whole: a writable open (which repairs, recovery.c), moving the directory back, a close     */

/* One writable open and close of mmzip_recover: what the open repaired, and the directory moved back. The
 * notes are handed to the caller (the store that holds them goes at the close); *changes counts the writes,
 * zeroings and truncates of the archive made up to the close (which writes nothing on a store with nothing
 * pending; the caller also compares the file's status before and after). */
static int recover_pass(const char *path, struct mz_recovery_note **notes, uint32_t *n, uint64_t *changes) {
    *notes = NULL;
    *n = 0;
    *changes = 0;
    mmzip_t *h;
    /* The size the caller saw: the open's own repairs may grow the file (a commit of recomputed CRCs that
     * relocates), and what the close cuts of that growth is no shrinking of the archive. */
    struct stat seen;
    uint64_t size_seen = stat(path, &seen) == 0 ? (uint64_t)seen.st_size : UINT64_MAX;
    int st = mmzip_open(path, "r+", NULL, &h);
    if (st) return st;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    if (!s->foreign_hold) {
        /* A relocated directory, or the slack of a writer that was killed before its close removed it. */
        uint64_t before = s->file_size < size_seen ? s->file_size : size_seen, changes = s->file_changes;
        st = s->clean ? mz_settle_at_rest(s) : mz_commit_locked(s, 1);
        if (!st && s->file_changes != changes) mz_recovery_note_directory(s, before);
    }
    pthread_mutex_unlock(&s->wmu);
    *notes = s->notes;
    *n = s->n_notes;
    s->notes = NULL;
    s->n_notes = 0;
    *changes = s->file_changes;
    int st2 = mmzip_close(h);
    return st ? st : st2;
}

static void notes_free(struct mz_recovery_note *notes, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        free(notes[i].entry);
        free(notes[i].message);
    }
    free(notes);
}

int mmzip_recover(const char *path, mmzip_recovery_fn fn, void *ctx, int *changed) {
    if (changed) *changed = 0;
    if (!path) return mz_fail(MMZIP_EINVAL, "mmzip_recover: NULL path");
    mz_remove_stale_temps(path, fn, ctx);
    struct stat b0, b1;
    int had = stat(path, &b0) == 0;
    struct mz_recovery_note *notes[2] = {NULL, NULL};
    uint32_t n[2] = {0, 0};
    uint64_t changes[2] = {0, 0};
    /* A second pass after a first that changed the file: the commits of the repairs (an in-place edit's CRC
     * and marker) leave the directory where a fresh open may find it away from the data, as `mmzip recover`
     * always moved it back. */
    int st = recover_pass(path, &notes[0], &n[0], &changes[0]);
    if (!st && changes[0]) st = recover_pass(path, &notes[1], &n[1], &changes[1]);
    int moved = had && stat(path, &b1) == 0 &&
                (b0.st_size != b1.st_size || b0.st_ino != b1.st_ino || b0.st_mtim.tv_sec != b1.st_mtim.tv_sec ||
                 b0.st_mtim.tv_nsec != b1.st_mtim.tv_nsec);
    if (changed) *changed = changes[0] || changes[1] || moved;
    for (int p = 0; p < 2; p++) {
        for (uint32_t i = 0; i < n[p] && fn; i++) {
            mmzip_recovery_action a = {notes[p][i].kind, notes[p][i].entry, notes[p][i].bytes, notes[p][i].offset,
                                       notes[p][i].message};
            /* The second pass finds again what the first kept as found: said once. */
            if (p == 1 && a.kind == MMZIP_RECOVERY_KEPT) continue;
            fn(&a, ctx);
        }
        notes_free(notes[p], n[p]);
    }
    return st;
}

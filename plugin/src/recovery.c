/*
 * recovery.c - repairing, at a writable open, what a killed writer left behind.
 *
 * Recovery undoes only what mmzip's own protocol can leave behind, and only where it can tell that mmzip
 * left it (docs/protocol.md §6, docs/reliability.md):
 *   1. Bytes after the last consistent end records (a commit or relocation that was cut short, zeros from a
 *      file extended before a power loss): cut off if those end records are mmzip's, or the bytes hold a
 *      record only mmzip writes.
 *   2. A directory that is not where it belongs (relocated, or forwarded, when the writer died): written back
 *      behind the last entry, if the end records are mmzip's.
 *   3. Anything else - bytes after foreign end records, gaps around a foreign directory, entries whose local
 *      header is missing or whose CRC is wrong (a torn tail of a writer that publishes its directory first,
 *      or plain damage) - is a foreign anomaly: reported, kept byte for byte, and new entries are appended
 *      after the end of the file so that every entry other readers could read is still there.
 *   4. Beside the archive, the named temporary file of a pack or a creation killed between naming it and
 *      renaming it over the archive (<archive>.mmzip-pack-<pid>, <archive>.mmzip-new-<pid>). mmzip_recover
 *      and mmzip_pack remove those whose process is gone, and so does a creation that has to name its own
 *      (mz_remove_stale_temps); a writable open does not look (a directory listing at every process's first
 *      open: 5 system calls, 3 ms beside 20 000 files, for files that cost disk space, never correctness).
 * Recovery is itself crash-safe: it is made of the same steps as a commit.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <limits.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 if the end records found at load were written by mmzip: ZIP64 end records with mmzip's fixed fields
 * (version made by 0x032D, needed 45, 44-byte record, no extensible data, every plain field at its
 * sentinel), or the plain record of an empty archive (nothing any reader could read). Only then can what
 * follows them, or a directory away from the data, be a state of mmzip's own protocol. */
static int end_records_ours(mz_store *s) {
    if (s->n_committed == 0 && !s->zip64) return 1;
    if (!s->zip64) return 0;
    uint64_t z = s->locate_end - s->trailer_len;
    if (z + MZ_TRAILER_FIXED > s->file_size) return 0;
    /* Read, not looked at through the mapping: nothing else touches this page of it at open, and a first
     * touch (a page fault, page tables for a new 2 MiB of the file) costs twenty reads on some VMs. */
    uint8_t rec[MZ_TRAILER_FIXED];
    return mz_read_at(s, rec, sizeof rec, z) == 0 && mz_our_end_records(rec);
}

/* 1 if [from, to) holds a record only mmzip writes: a stored local header with version 45, no data
 * descriptor, a ZIP64 field and then the 0xA11E alignment field (directly, or after a "UT" time field), or
 * ZIP64 end records made by it. That is what an interrupted first commit of mmzip into a foreign archive
 * leaves after the foreign end records. */
static int holds_mmzip_record(mz_store *s, uint64_t from, uint64_t to) {
    const uint8_t *b = s->map.base;
    for (uint64_t i = from; i + MZ_LFH_FIXED <= to; i++) {
        if (b[i] != 0x50 || b[i + 1] != 0x4b) continue;
        uint32_t sig = mz_get32(b + i);
        if (sig == MZ_SIG_Z64_EOCD && i + MZ_Z64_EOCD_FIXED <= to && mz_get64(b + i + 4) == MZ_Z64_EOCD_FIXED - 12 &&
            mz_get16(b + i + 12) == MZ_VERSION_MADE_BY)
            return 1;
        if (sig == MZ_SIG_LFH && mz_our_lfh(b + i, (size_t)(to - i), NULL)) return 1;
    }
    return 0;
}

/* The end of the last byte in [from, to) that is not zero, or from. */
static uint64_t last_nonzero_end(mz_store *s, uint64_t from, uint64_t to) {
    const uint8_t *b = s->map.base;
    uint64_t e = to;
    while (e > from && (e & 7)) {
        if (b[e - 1]) return e;
        e--;
    }
    while (e >= from + 8) {
        uint64_t w;
        memcpy(&w, b + e - 8, 8);
        if (w) break;
        e -= 8;
    }
    while (e > from && !b[e - 1]) e--;
    return e;
}

static int all_zero(mz_store *s, uint64_t from, uint64_t to) { return last_nonzero_end(s, from, to) == from; }

static void say(mmzip_report_fn report, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(mmzip_report_fn report, void *ctx, const char *fmt, ...) {
    if (!report) return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report(msg, ctx);
}

void mz_recovery_note(mz_store *s, int kind, const char *entry, size_t entry_len, uint64_t bytes, uint64_t offset,
                      const char *fmt, ...) {
    struct mz_recovery_note *g = realloc(s->notes, (s->n_notes + 1) * sizeof *g);
    if (!g) return;
    s->notes = g;
    char msg[1600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct mz_recovery_note *n = &s->notes[s->n_notes];
    n->kind = kind;
    n->bytes = bytes;
    n->offset = offset;
    n->entry = entry ? strndup(entry, entry_len) : NULL;
    n->message = strdup(msg);
    if (!n->message || (entry && !n->entry)) {
        free(n->entry);
        free(n->message);
        return;
    }
    s->n_notes++;
}

void mz_recovery_notes_free(mz_store *s) {
    for (uint32_t i = 0; i < s->n_notes; i++) {
        free(s->notes[i].entry);
        free(s->notes[i].message);
    }
    free(s->notes);
    s->notes = NULL;
    s->n_notes = 0;
}

int mz_plan_recovery(mz_store *s, mz_recovery_plan *p, mmzip_report_fn report, void *ctx) {
    memset(p, 0, sizeof *p);
    uint64_t end = s->locate_end ? s->locate_end : s->file_size;
    uint64_t records = end - s->trailer_len;
    p->ours = end_records_ours(s);
    int foreign = 0;
    if (end < s->file_size) {
        uint64_t n = s->file_size - end;
        if (p->ours || holds_mmzip_record(s, end, s->file_size)) {
            p->cut = 1;
            say(report, ctx, "cut the %llu bytes after the end records at %llu (an interrupted mmzip write)",
                (unsigned long long)n, (unsigned long long)end);
        } else {
            foreign = 1;
            say(report, ctx, "keep the %llu bytes%s after the end records at %llu: mmzip did not write them, "
                "so they are not an interrupted mmzip write", (unsigned long long)n,
                all_zero(s, end, s->file_size) ? " (zeros)" : "", (unsigned long long)end);
        }
    }
    int gap_end = s->cd_pos + s->cd_size != records;
    /* The slack below our directory (protocol.md §3.1) is the state every commit leaves when it is a hole,
     * or zeros (an archive copied without its holes); anything else there is what a killed writer left. */
    int gap_data = s->cd_pos != s->data_end &&
                   !(p->ours && s->n_committed > 0 && s->cd_pos > s->data_end && s->cd_pos <= s->file_size &&
                     s->slack_hole);
    if (gap_end || gap_data) {
        if (p->ours) {
            /* A relocated directory (protocol.md §3.2): rewritten behind the last entry. A foreign directory
             * with bytes prepended is not ours to move either: its gaps are kept like any other's. */
            p->move_directory = 1;
            say(report, ctx, "write the directory (%llu entries) behind the last entry at %llu, where it "
                "reclaims the bytes of removed entries or of an interrupted relocation (unless another process "
                "has the archive open then: bytes below a directory where a commit leaves it are kept for its "
                "reads, and new entries go after them)",
                (unsigned long long)s->n_committed, (unsigned long long)s->data_end);
        } else {
            foreign = 1;
            if (gap_data)
                say(report, ctx, "keep the %llu bytes between the end of the last entry (%llu) and the central "
                    "directory (%llu): mmzip did not leave them", (unsigned long long)(s->cd_pos - s->data_end),
                    (unsigned long long)s->data_end, (unsigned long long)s->cd_pos);
            if (gap_end)
                say(report, ctx, "keep the %llu bytes between the end of the central directory (%llu) and the "
                    "end records (%llu): mmzip did not leave them",
                    (unsigned long long)(records - s->cd_pos - s->cd_size),
                    (unsigned long long)(s->cd_pos + s->cd_size), (unsigned long long)records);
        }
    }
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        if (e->mark & MZ_MARK_BAD)
            say(report, ctx, "keep entry '%.*s' in the directory although its local header at %llu is missing "
                "or disagrees with it: mmzip never publishes such an entry, so it is not its to roll back",
                (int)(e->name_len > 300 ? 300 : e->name_len), mz_name(s, e), (unsigned long long)e->lfh_off);
    }
    if (foreign) {
        p->hold = s->file_size;
        say(report, ctx, "append new entries after the end of the file (%llu), so that every byte there stays "
            "as it is", (unsigned long long)s->file_size);
    }
    return MMZIP_OK;
}

/* Foreign archives with bytes prepended: rewrite every record with absolute offsets, so that relocated
 * directories (which cannot rely on "the directory ends where the end records begin") stay correct. */
static int absolutize(mz_store *s) {
    uint8_t *img = NULL;
    uint64_t len = 0, cap = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        mz_entry *e = &s->e[i];
        size_t rl;
        uint8_t *rec = mz_reencode_cdh(s->cd + e->cd_rec, e->cd_rec_len, e->lfh_off, e->csize, e->usize, &rl);
        if (!rec) {
            free(img);
            return mz_fail(MMZIP_ENOMEM, "%s: cannot re-encode the directory record of '%.*s'", s->path,
                           (int)e->name_len, mz_name(s, e));
        }
        if (len + rl > cap) {
            cap = (len + rl) * 2;
            uint8_t *p = realloc(img, cap);
            if (!p) {
                free(rec);
                free(img);
                return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            }
            img = p;
        }
        memcpy(img + len, rec, rl);
        free(rec);
        e->cd_rec = len;
        e->cd_rec_len = (uint32_t)rl;
        len += rl;
    }
    free(s->cd);
    s->cd = img;
    s->cd_len = s->cd_committed_len = s->cd_cap = len;
    s->concat = 0;
    return mz_table_rebuild(s);
}

/* The pid in a temporary name "<base><marker><pid>" beside the archive, or 0 if the name is not one. */
static pid_t temp_owner(const char *name, const char *base, size_t base_len, const char *marker) {
    size_t mlen = strlen(marker);
    if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, marker, mlen) != 0) return 0;
    const char *digits = name + base_len + mlen;
    if (!*digits) return 0;
    long pid = 0;
    for (const char *p = digits; *p; p++) {
        if (*p < '0' || *p > '9' || pid > 4194304) return 0;
        pid = pid * 10 + (*p - '0');
    }
    return (pid_t)pid;
}

/* Best effort: a leftover costs disk space, never correctness, so failures are ignored. A file whose pid
 * is alive (or reused) is left alone: it may be a pack or creation still at work. fn (if not NULL) hears of
 * each file removed. */
void mz_remove_stale_temps(const char *archive_path, mmzip_recovery_fn fn, void *ctx) {
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", archive_path) >= (int)sizeof dir) return;
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : archive_path;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    size_t base_len = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        pid_t pid = temp_owner(de->d_name, base, base_len, ".mmzip-pack-");
        if (!pid) pid = temp_owner(de->d_name, base, base_len, ".mmzip-new-");
        if (!pid || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
        struct stat sb;
        uint64_t size = fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)sb.st_size : 0;
        if (unlinkat(dirfd(d), de->d_name, 0) != 0 || !fn) continue;
        char path[PATH_MAX + 256], msg[PATH_MAX + 512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        snprintf(msg, sizeof msg, "%s: removed %s (%llu bytes), the temporary file of a %s killed before it was "
                 "renamed over the archive (process %ld is gone); the archive never depended on it", archive_path,
                 path, (unsigned long long)size, strstr(de->d_name + base_len, "pack") ? "pack" : "creation",
                 (long)pid);
        mmzip_recovery_action a = {MMZIP_RECOVERY_TEMP_FILE, path, size, 0, msg};
        fn(&a, ctx);
    }
    closedir(d);
}

static int neutralize_noted(mz_store *s);
static void note_kept(mz_store *s, const mz_recovery_plan *plan);

#define ENAME_J(e) (int)(e)->name_len, mz_name(s, (e))
static int recover_journal(mz_store *s) {
    char *jpath = mz_journal_path(s->path);
    if (!jpath) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    int fd = open(jpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        free(jpath);
        return err == ENOENT ? MMZIP_OK : mz_fail_errno(MMZIP_EIO, err, "%s: cannot open its undo journal", s->path);
    }
    mz_journal_head jh;
    int st = MMZIP_OK, whole = mz_journal_read_head(fd, &jh);
    mz_entry *e = whole ? mz_committed_at(s, jh.lfh_off, MZ_MARK_SHADOWED | MZ_MARK_BAD) : NULL;
    uint64_t written = 0, room = 0;
    if (whole && mz_journal_is_hot(s, &jh)) {
        st = mz_journal_apply(s, fd, &jh, e->lfh_off, e->data_off + e->csize, "recover.undo", &written);
        /* Growth into the entry's room was not journaled (nothing refers to it): it is cleared, so that
         * the room reads as zeros again for the next edit. */
        room = mz_room_of(s, e);
        if (!st && room) {
            mz_crashpoint("recover.clear_room");
            st = mz_io_zero(s, e->data_off + e->csize, room, "recover.clear_room");
        }
        s->journal_restored += written;
        if (written) s->edits_recovered++, s->edits_restored++;
        if (written)
            mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL, mz_name(s, e), e->name_len, written, e->lfh_off,
                             "%s: restored entry '%.*s' to its last commit (%llu bytes, crc %08x): wrote back %llu "
                             "bytes of that commit from the undo journal %s, left by an in-place edit whose writer "
                             "was killed before it published, and removed the journal%s", s->path, ENAME_J(e),
                             (unsigned long long)e->usize, e->crc, (unsigned long long)written, jpath,
                             room ? "; the room after it, where that edit may have grown it, reads as zeros again"
                                  : "");
        else
            mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL_GONE, mz_name(s, e), e->name_len, 0, e->lfh_off,
                             "%s: removed the undo journal %s of entry '%.*s': the in-place edit was killed before "
                             "it changed a committed byte, so the entry is at its last commit as it was", s->path,
                             jpath, ENAME_J(e));
    } else if (whole && e) {
        mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL_GONE, mz_name(s, e), e->name_len, 0, e->lfh_off,
                         "%s: removed the undo journal %s of entry '%.*s', which restores a version the directory "
                         "no longer names: the edit had published before its writer died; nothing to undo",
                         s->path, jpath, ENAME_J(e));
    } else {
        mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL_GONE, NULL, 0, 0, 0,
                         "%s: removed the undo journal %s, which %s: nothing to undo", s->path, jpath,
                         whole ? "names no committed entry (the edited entry was replaced or removed since)"
                               : "holds no whole header (an in-place edit killed while creating it)");
    }
    close(fd);
    if (!st) st = mz_journal_remove(s, jpath);
    free(jpath);
    return st;
}

/* Refreshes the CRC of the committed entry at lfh_off, if it is still there under the name (name, nlen) (or
 * under any name if name is NULL), over its bytes as they are, and notes what it did (mmzip_recover); marker
 * says which marker named it, for that note. */
static int recover_marked_one(mz_store *s, uint64_t lfh_off, const uint8_t *name, size_t nlen, const char *marker) {
    mz_entry *e = mz_committed_at(s, lfh_off, MZ_MARK_SHADOWED);
    if (!e || e->method != 0 || (name && (e->name_len != nlen || memcmp(mz_name(s, e), name, nlen) != 0))) {
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0, "%s: %s named %s%.*s%s at %llu, which was replaced "
                         "or removed since: nothing to refresh", s->path, marker, name ? "entry '" : "an entry",
                         name ? (int)nlen : 0, name ? (const char *)name : "", name ? "'" : "",
                         (unsigned long long)lfh_off);
        return MMZIP_OK;
    }
    /* The entry's CRC is stale by design here: resolve its bytes without mz_entry_bytes's tail check. */
    int st = mz_resolve_data(s, e);
    if (st) return st;
    uint32_t crc = mz_crc32(0, s->map.base + e->data_off, (size_t)e->usize), old = e->crc;
    if (crc != e->crc) {
        st = mz_set_entry_crc(s, e, crc);
        s->edits_recovered++;
        __atomic_fetch_and(&e->mark, (uint8_t)~(MZ_MARK_VERIFY | MZ_MARK_BAD), __ATOMIC_RELEASE);
    }
    if (st) return st;
    if (crc != old)
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, mz_name(s, e), e->name_len, e->usize, 1,
                         "%s: kept entry '%.*s' (%llu bytes) as the writer that was modifying it in place left it "
                         "when it died: its values may hold only part of that writer's changes; its CRC-32 was "
                         "recomputed over them (%08x, was %08x); %s", s->path, (int)e->name_len, mz_name(s, e),
                         (unsigned long long)e->usize, crc, old, marker);
    else
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, mz_name(s, e), e->name_len, e->usize, 0,
                         "%s: kept entry '%.*s' (%llu bytes) as it was: the writer that was modifying it in place had "
                         "committed its changes (its CRC-32 matches) before it died; %s", s->path, (int)e->name_len,
                         mz_name(s, e), (unsigned long long)e->usize, marker);
    return MMZIP_OK;
}

/* The marker file a dead writer of mapped edits left: the CRCs of the entries it names are refreshed and
 * committed, then the file goes. One that belongs to another file (the archive was replaced since) is removed
 * untouched. */
static int recover_marks_file(mz_store *s) {
    char *path = mz_marks_path(s->path, 0), *tmp = mz_marks_path(s->path, 1);
    if (!path || !tmp) {
        free(path);
        free(tmp);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    (void)unlink(tmp); /* a writer killed before its rename: that list never took effect */
    uint8_t *buf;
    size_t len;
    int st = mz_marks_read(s, path, &buf, &len);
    char marker[PATH_MAX + 96];
    snprintf(marker, sizeof marker, "the in-place marker file %s, which named it, was removed", path);
    if (st == MMZIP_OK) {
        mz_mark_rec m;
        for (size_t at = 0; !st && mz_marks_next(buf, len, &at, &m);)
            st = recover_marked_one(s, m.lfh_off, m.name, m.name_len, marker);
        if (!st) st = mz_commit_locked(s, 0);
    } else if (st == MMZIP_ESTALE) {
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0, "%s: removed the in-place marker file %s, which "
                         "belongs to another file (the archive was replaced or copied since): nothing to refresh",
                         s->path, path);
    }
    free(buf);
    if (st == MMZIP_OK || st == MMZIP_ESTALE) {
        st = MMZIP_OK;
        if (unlink(path) != 0 && errno != ENOENT)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot remove the in-place marker file %s", s->path, path);
    } else if (st == MMZIP_ENOENT) {
        st = MMZIP_OK;
    }
    free(path);
    free(tmp);
    return st;
}

/* Marker entries ".mmzip/edit/<key>" of an older mmzip: the CRCs of the entries they name are refreshed, then
 * the markers are removed from the directory, with one commit. */
static int recover_legacy_markers(mz_store *s) {
    int st = MMZIP_OK, found = 0;
    for (uint32_t i = 0; i < s->n_committed && !st; i++) {
        mz_entry *me = &s->e[i];
        if (!mz_legacy_marker(s, me)) continue;
        found = 1;
        char marker[400];
        int n = (int)(me->name_len > 300 ? 300 : me->name_len);
        snprintf(marker, sizeof marker, "the marker entry '%.*s' (of an older mmzip), which named it, was removed", n,
                 mz_name(s, me));
        uint64_t target;
        if (!mz_legacy_marker_target(s, me, &target)) {
            mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0, "%s: removed the marker entry '%.*s' (of an "
                             "older mmzip), which names no entry (unreadable, or not 12 bytes)", s->path, n,
                             mz_name(s, me));
            continue;
        }
        st = recover_marked_one(s, target, NULL, 0, marker);
    }
    if (st || !found) return st;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *me = &s->e[i];
        if (mz_legacy_marker(s, me) && !(me->mark & MZ_MARK_SHADOWED)) mz_remove_locked(s, me);
    }
    return mz_commit_locked(s, 0);
}

static int recover_structure(mz_store *s);

/*
 * Every unfinished in-place edit of a killed writer is repaired here, one way per kind of edit (edit.c): an
 * undo journal is written back first, before anything else reads the entry (the rest then sees committed
 * bytes), by mz_recover_locked; an entry that mapped edits changed is kept as left and its CRC recomputed by
 * mz_recover_marked, once the open is complete (that takes a commit of its own).
 */
int mz_recover_locked(mz_store *s) {
    int st = recover_journal(s);
    return st ? st : recover_structure(s);
}

int mz_recover_marked(mz_store *s) {
    pthread_mutex_lock(&s->wmu);
    int st = recover_marks_file(s);
    if (!st) st = recover_legacy_markers(s);
    if (!st) s->batch = 0;
    pthread_mutex_unlock(&s->wmu);
    return st;
}

static int recover_structure(mz_store *s) {
    mz_recovery_plan plan;
    int st = mz_plan_recovery(s, &plan, NULL, NULL);
    if (st) return st;
    s->rolled_back = 0;
    note_kept(s, &plan);
    if (plan.hold) {
        /* A foreign anomaly: nothing below the end of the file is ours to rewrite. The first commit writes
         * its entries, directory and end records after it. Prepended bytes still need absolute offsets. */
        if (s->concat) {
            st = absolutize(s);
            if (st) return st;
        }
        s->foreign_hold = plan.hold;
        s->data_end = s->pending_end = plan.hold;
        s->compact = s->clean = 0;
        return MMZIP_OK;
    }
    if (s->concat) {
        /* Bytes prepended to a foreign archive (a self-extractor's stub, an archive in a comment): its
         * records get absolute offsets in memory only, for the next commit's directory. The file stays
         * byte for byte as it is until something is written: recovery has nothing of mmzip's to repair
         * there. The directory on disk no longer matches the one in memory, so no commit may append
         * records to it (commit.c: commit_additions needs end_follows_cd). */
        st = absolutize(s);
        if (st) return st;
        s->end_follows_cd = 0;
        s->clean = !plan.cut && !plan.move_directory && s->slack_hole;
        s->compact = s->clean && s->cd_pos == s->data_end;
    }
    /* A writer killed right after its commit point may not have neutralized a dead first header. */
    if (!plan.cut && !plan.move_directory) {
        if (plan.ours && s->cd_pos >= s->data_end) {
            s->clean = s->slack_hole = 1; /* a slack of zeros is one */
            return neutralize_noted(s);
        }
        return MMZIP_OK;
    }
    if (plan.move_directory && !plan.cut && !s->concat && s->cd_adjacent && s->end_follows_cd &&
        s->cd_pos > s->data_end && mz_open_elsewhere(s->fd)) {
        /* Our directory, where a commit leaves it, with bytes below it that no commit refers to: entries a
         * session removed from the end of the data while another process had the file open (store.c:
         * mz_release_removed_tail), or what a killed writer had written. Another process has the file open
         * now: a reader of an older commit may be reading those entries through pointers it holds, and a
         * directory or entry written over them would change bytes under it. They stay; new entries go after
         * them. The next writable open that finds the file to itself reclaims them. */
        /* Up to the page of the last byte that is not zero: a relocation's gap is written zeros where it was not
         * punched, and taking it for kept bytes sent every shared writer's next entry past the directory, each
         * relocation then growing the file by a quarter of a file mostly of such zeros (two shared writers
         * made 845 GiB of 115 MB of data: an outside review). */
        uint64_t w = mz_page_up(last_nonzero_end(s, s->data_end, mz_written_end(s, s->data_end, s->cd_pos)));
        if (w > s->cd_pos) w = s->cd_pos;
        mz_recovery_note(s, MMZIP_RECOVERY_KEPT, NULL, 0, w - s->data_end, w,
                         "%s: kept the %llu bytes between the last entry (ending at %llu) and the directory that no "
                         "commit refers to (removed entries, or what a killed writer wrote): another process has the "
                         "archive open and may be reading them; new entries go after them (at %llu), and a writable "
                         "open or 'mmzip recover' made while no other process has it open reclaims them", s->path,
                         (unsigned long long)(w - s->data_end), (unsigned long long)s->data_end,
                         (unsigned long long)w);
        s->data_end = s->pending_end = s->zero_from = w;
        s->clean = s->slack_hole = 1;
        s->compact = 0;
        return neutralize_noted(s);
    }
    uint64_t before = s->file_size;
    uint64_t trailer_end = s->locate_end;
    if (plan.cut && !plan.move_directory && !s->concat) {
        /* [entries][directory][end records][debris]: cutting the debris off is the whole repair. */
        st = mz_io_truncate(s, trailer_end, "recover.truncate");
        if (st) return st;
        st = mz_io_barrier(s, 1, "recover.sync");
        if (st) return st;
        s->file_size = trailer_end;
        s->compact = s->cd_pos == s->data_end;
        s->clean = s->slack_hole = s->end_follows_cd = 1;
        mz_recovery_note(s, MMZIP_RECOVERY_CUT, NULL, 0, before - trailer_end, trailer_end,
                         "%s: cut the %llu bytes after the last commit's end records at %llu (an interrupted mmzip "
                         "write: nothing any commit refers to)", s->path, (unsigned long long)(before - trailer_end),
                         (unsigned long long)trailer_end);
        st = neutralize_noted(s);
        if (st) return st;
    } else {
        uint64_t cut = plan.cut ? before - trailer_end : 0;
        st = mz_commit_locked(s, 1);
        if (st) return st;
        if (cut)
            mz_recovery_note(s, MMZIP_RECOVERY_CUT, NULL, 0, cut, trailer_end,
                             "%s: removed the %llu bytes after the last commit's end records at %llu (an interrupted "
                             "mmzip write: nothing any commit refers to)", s->path, (unsigned long long)cut,
                             (unsigned long long)trailer_end);
        mz_recovery_note_directory(s, before - cut);
    }
    s->recovered_bytes = before > s->file_size ? before - s->file_size : 0;
    return MMZIP_OK;
}

/* Notes a directory written back behind the last entry by a commit that took the file from `before` bytes. */
void mz_recovery_note_directory(mz_store *s, uint64_t before) {
    uint64_t shrank = before > s->file_size ? before - s->file_size : 0;
    if (shrank)
        mz_recovery_note(s, MMZIP_RECOVERY_DIRECTORY, NULL, 0, shrank, s->cd_pos,
                         "%s: wrote the directory (%llu entries) back behind the last entry, at %llu; the file shrank "
                         "by %llu bytes that no committed entry refers to (removed or replaced entries, free slack, "
                         "or an interrupted relocation of the directory): no data was lost", s->path,
                         (unsigned long long)s->n_committed, (unsigned long long)s->cd_pos,
                         (unsigned long long)shrank);
    else
        mz_recovery_note(s, MMZIP_RECOVERY_DIRECTORY, NULL, 0, 0, s->cd_pos,
                         "%s: wrote the directory (%llu entries) back behind the last entry, at %llu", s->path,
                         (unsigned long long)s->n_committed, (unsigned long long)s->cd_pos);
}

/* mz_neutralize_dead_start, noting whether it cleared a signature. */
static int neutralize_noted(mz_store *s) {
    uint64_t changes = s->file_changes, from = s->neutralized_to > s->prefix ? s->neutralized_to : s->prefix;
    int st = mz_neutralize_dead_start(s);
    if (!st && s->file_changes != changes)
        mz_recovery_note(s, MMZIP_RECOVERY_DEAD_HEADER, NULL, 0, 4, from,
                         "%s: neutralized the signature of the dead local header(s) from %llu, before the first "
                         "live entry (entries replaced or removed by the last commits), so that readers that scan "
                         "local headers from the start skip them; no committed entry was touched", s->path,
                         (unsigned long long)from);
    return st;
}

/* Notes what the plan keeps as found: foreign anomalies and entries without their local header. */
static void note_kept(mz_store *s, const mz_recovery_plan *plan) {
    if (plan->hold)
        mz_recovery_note(s, MMZIP_RECOVERY_KEPT, NULL, 0, 0, plan->hold,
                         "%s: kept as found, not mmzip's to repair: bytes around the foreign end records or "
                         "directory; new entries are appended after them (at %llu); 'mmzip check' describes them",
                         s->path, (unsigned long long)plan->hold);
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        if (e->mark & MZ_MARK_BAD)
            mz_recovery_note(s, MMZIP_RECOVERY_KEPT, mz_name(s, e), e->name_len, 0, 0,
                             "%s: kept entry '%.*s' in the directory although its local header at %llu is missing "
                             "or disagrees with it (not mmzip's to roll back); it is not listed, and 'mmzip check' "
                             "reports it", s->path, (int)(e->name_len > 300 ? 300 : e->name_len), mz_name(s, e),
                             (unsigned long long)e->lfh_off);
    }
}

typedef struct {
    mz_entry **e;
    uint32_t n;
} gathered;

static int gather_marked(mz_store *s, mz_entry *e, const char *how, void *ctx) {
    (void)how;
    gathered *g = ctx;
    mz_entry **p = realloc(g->e, (g->n + 1) * sizeof *p);
    if (!p) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    g->e = p;
    g->e[g->n++] = e;
    return 0;
}

int mmzip_unfinished_edits(mmzip_t *h, mmzip_unfinished_fn fn, void *ctx) {
    if (!h) return mz_fail(MMZIP_EINVAL, "mmzip_unfinished_edits: NULL handle");
    mz_store *s = h->s;
    if (s->writable) return 0; /* the open repaired what killed writers left; the rest is this store's own */
    /* Gathered under the read lock, reported after it: fn may call back into the store. */
    typedef struct { char *key; int kind, alive; uint64_t bytes; } item;
    item *items = NULL;
    size_t n = 0, cap = 0;
    int st = MMZIP_OK;
    pthread_rwlock_rdlock(&s->rw);
    int writer = -1; /* whether a writer holds the archive now: looked up once, if a marker asks */
    mz_entry *je;
    uint64_t jbytes;
    int journal = mz_journal_pending(s, &je, &jbytes) && je;
    int jlive = journal && mz_edit_lock_held(s, je->lfh_off);
    gathered g = {NULL, 0};
    int marked = mz_marked_each(s, gather_marked, &g);
    if (marked < 0) st = marked;
    for (uint32_t i = 0; i < g.n + (uint32_t)journal && !st; i++) {
        mz_entry *e;
        item it = {NULL, 0, 0, 0};
        if (i == g.n) {
            e = je;
            it.kind = MMZIP_UNFINISHED_UNDO;
            it.alive = jlive;
            it.bytes = jbytes;
        } else {
            e = g.e[i];
            if (writer < 0) writer = mz_writer_lock_held(s->fd) == 1;
            it.kind = MMZIP_UNFINISHED_INPLACE;
            it.alive = writer;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            item *g = realloc(items, cap * sizeof *g);
            if (!g) {
                st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
                break;
            }
            items = g;
        }
        if (!(it.key = strndup(mz_name(s, e), e->name_len))) {
            st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            break;
        }
        items[n++] = it;
    }
    pthread_rwlock_unlock(&s->rw);
    free(g.e);
    int r = st ? st : (int)n;
    for (size_t i = 0; i < n; i++) {
        if (fn && r >= 0 && r == (int)n) {
            mmzip_unfinished_edit u = {items[i].key, items[i].kind, items[i].alive, items[i].bytes};
            int x = fn(&u, ctx);
            if (x) r = x;
        }
        free(items[i].key);
    }
    free(items);
    return r;
}

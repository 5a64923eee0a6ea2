/*
 * journal.c - what an in-place edit keeps beside the archive for recovery: the undo journal of a journaled
 * edit (<archive>.mmzip-undo) and the marker file of mapped edits (<archive>.mmzip-inplace), and how a reader
 * or recovery recognises what a killed editor left.
 *
 * Everything else in mmzip appends; an edit (edit.c) writes over committed bytes, so it leaves a record beside
 * the archive first (docs/protocol.md, "In-place edits", is the specification):
 *
 *   - The undo journal. Before a committed byte of the entry is first overwritten after the last publish, the
 *     block holding it is copied here. The journal names the entry (local-header offset) and the committed
 *     version it restores (size and CRC, as the directory states them), and every record carries the
 *     journal's nonce and a CRC of itself: a record is applied only if it is whole and belongs to this
 *     journal. A journal is "hot" when the committed directory still names exactly the version it restores:
 *     the edit never published, and recovery (recovery.c) writes its records back.
 *   - The marker file. A mapped edit hands out a writable view, so no write passes through mmzip and nothing
 *     can be journaled: the file names each entry being edited (local-header offset, CRC before the edit,
 *     name), replaced whole by a rename, and recovery keeps the bytes as left and recomputes the CRC. It is a
 *     file of its own, not an entry, because every entry is a member to other readers (numpy.load, zipfile,
 *     unzip would list it). Entries ".mmzip/edit/<key>" are what older versions of mmzip committed as
 *     markers; they are still recognised here.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MZ_UNDO_SUFFIX ".mmzip-undo"
#define MZ_UNDO_MAGIC "MMZUNDO1"
#define MZ_UNDO_REC_MAGIC 0x52555a4du /* "MZUR" */

static char *suffixed(const char *path, const char *suffix) {
    size_t n = strlen(path), m = strlen(suffix);
    char *p = malloc(n + m + 1);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, suffix, m + 1);
    }
    return p;
}

char *mz_journal_path(const char *archive) { return suffixed(archive, MZ_UNDO_SUFFIX); }

static uint64_t fresh_nonce(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)mz_current_pid() << 16);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x ? x : 1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The undo journal                                                                                      */

int mz_journal_sync(mz_store *s, const mz_journal *j, const char *what) {
    if (!(s->opts.flags & MMZIP_DURABLE)) return MMZIP_OK;
    mz_crashpoint(what);
    if (fdatasync(j->fd) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the undo journal (%s)", s->path, what);
    mz_io_trace_journal(s, MZ_OP_JSYNC, 0, what);
    return MMZIP_OK;
}

static void encode_header(uint8_t *h, const mz_journal_head *jh) {
    memcpy(h, MZ_UNDO_MAGIC, 8);
    mz_put64(h + 8, jh->nonce);
    mz_put64(h + 16, jh->lfh_off);
    mz_put64(h + 24, jh->data_off);
    mz_put64(h + 32, jh->size);
    mz_put32(h + 40, jh->crc);
    mz_put32(h + 44, mz_crc32(0, h, 44));
}

/* A new header (with a new nonce, so that no record of an older version can ever be taken for one of this
 * version, whatever order the header and the truncate reach the disk in), then cut after it. Not cut to zero
 * first: ext4 (auto_da_alloc) flushes a file truncated to zero when it is closed, which cost milliseconds per
 * session. */
int mz_journal_reset(mz_store *s, mz_journal *j, int empty) {
    j->h.nonce = fresh_nonce();
    uint8_t h[MZ_UNDO_HEADER];
    encode_header(h, &j->h);
    int st = mz_io_write_fd(s, j->fd, h, sizeof h, 0, "edit.journal_header");
    if (st) return st;
    mz_crashpoint("edit.journal_reset");
    /* A file just created empty is the header's length already (the trace still says so). */
    if (!empty && ftruncate(j->fd, MZ_UNDO_HEADER) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot reset the undo journal", s->path);
    mz_io_trace_journal(s, MZ_OP_JTRUNCATE, MZ_UNDO_HEADER, "edit.journal_reset");
    j->end = MZ_UNDO_HEADER;
    return MMZIP_OK;
}

int mz_journal_create(mz_store *s, mz_journal *j) {
    mz_crashpoint("edit.journal_create");
    /* Normally there is no journal (recovery at the open removed any): a new one needs no truncate. */
    int fresh = 1, st;
    j->fd = open(j->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (j->fd < 0 && errno == EEXIST) {
        fresh = 0;
        j->fd = open(j->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    }
    if (j->fd < 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot create the undo journal %s", s->path, j->path);
    st = mz_journal_reset(s, j, fresh);
    if (!st) st = mz_journal_sync(s, j, "edit.sync_journal_create");
    if (!st && (s->opts.flags & MMZIP_DURABLE) && mz_fsync_dir_of(j->path) != 0)
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, j->path);
    if (!st) mz_io_trace_journal(s, MZ_OP_JCREATE, 0, "edit.journal_create");
    if (st) unlink(j->path);
    return st;
}

int mz_journal_save(mz_store *s, mz_journal *j, uint64_t off, uint64_t len, const uint8_t *bytes) {
    uint8_t *rec = malloc(MZ_UNDO_REC_HEAD + len);
    if (!rec) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    mz_put32(rec, MZ_UNDO_REC_MAGIC);
    mz_put64(rec + 4, j->h.nonce);
    mz_put64(rec + 12, off);
    mz_put32(rec + 20, (uint32_t)len);
    if (bytes) memcpy(rec + MZ_UNDO_REC_HEAD, bytes, (size_t)len);
    /* Read, not copied from the mapping: a first touch of a page of the mapping costs a page fault. */
    else if (mz_pread_full(s->fd, rec + MZ_UNDO_REC_HEAD, (size_t)len, off) != 0) {
        free(rec);
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the committed bytes to save", s->path);
    }
    mz_put32(rec + 24, mz_crc32(mz_crc32(0, rec + 4, 20), rec + MZ_UNDO_REC_HEAD, (size_t)len));
    int st = mz_io_write_fd(s, j->fd, rec, MZ_UNDO_REC_HEAD + len, j->end, "edit.journal_record");
    free(rec);
    if (!st) j->end += MZ_UNDO_REC_HEAD + len;
    return st;
}

int mz_journal_read_head(int fd, mz_journal_head *jh) {
    uint8_t h[MZ_UNDO_HEADER];
    if (mz_pread_full(fd, h, sizeof h, 0) != 0) return 0;
    if (memcmp(h, MZ_UNDO_MAGIC, 8) != 0 || mz_get32(h + 44) != mz_crc32(0, h, 44)) return 0;
    jh->nonce = mz_get64(h + 8);
    jh->lfh_off = mz_get64(h + 16);
    jh->data_off = mz_get64(h + 24);
    jh->size = mz_get64(h + 32);
    jh->crc = mz_get32(h + 40);
    return 1;
}

/* Records past the first torn or foreign one were never followed by the overwrite they protect. */
int mz_journal_apply(mz_store *s, int fd, const mz_journal_head *jh, uint64_t lo, uint64_t hi, const char *what,
                     uint64_t *written) {
    struct stat stt;
    if (fstat(fd, &stt) != 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat the undo journal", s->path);
    uint64_t end = (uint64_t)stt.st_size, pos = MZ_UNDO_HEADER;
    uint8_t head[MZ_UNDO_REC_HEAD];
    uint8_t *buf = NULL;
    int st = MMZIP_OK;
    while (pos + MZ_UNDO_REC_HEAD <= end) {
        if (mz_pread_full(fd, head, sizeof head, pos) != 0) break;
        if (mz_get32(head) != MZ_UNDO_REC_MAGIC || mz_get64(head + 4) != jh->nonce) break;
        uint64_t off = mz_get64(head + 12), len = mz_get32(head + 20);
        if (len > (64u << 20) || pos + MZ_UNDO_REC_HEAD + len > end || off < lo || off + len > hi) break;
        uint8_t *nb = realloc(buf, (size_t)len + 1);
        if (!nb) {
            st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            break;
        }
        buf = nb;
        if (mz_pread_full(fd, buf, (size_t)len, pos + MZ_UNDO_REC_HEAD) != 0) break;
        if (mz_get32(head + 24) != mz_crc32(mz_crc32(0, head + 4, 20), buf, (size_t)len)) break;
        st = mz_io_write(s, buf, (size_t)len, off, what);
        if (st) break;
        if (written) *written += len;
        pos += MZ_UNDO_REC_HEAD + len;
    }
    free(buf);
    if (!st) st = mz_io_barrier(s, 0, "edit.sync_undo");
    return st;
}

int mz_journal_remove(mz_store *s, const char *jpath) {
    mz_crashpoint("edit.journal_remove");
    if (unlink(jpath) != 0 && errno != ENOENT)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot remove the undo journal %s", s->path, jpath);
    if ((s->opts.flags & MMZIP_DURABLE) && mz_fsync_dir_of(jpath) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, jpath);
    mz_io_trace_journal(s, MZ_OP_JREMOVE, 0, "edit.journal_remove");
    return MMZIP_OK;
}

int mz_journal_crc_change(mz_store *s, const mz_journal *j, uint32_t *crc) {
    uint64_t n0 = j->h.size;
    uint8_t head[MZ_UNDO_REC_HEAD];
    uint8_t *old = NULL, *cur = NULL;
    size_t cap = 0;
    int st = MMZIP_OK;
    for (uint64_t pos = MZ_UNDO_HEADER; pos + MZ_UNDO_REC_HEAD <= j->end;) {
        if (mz_pread_full(j->fd, head, sizeof head, pos) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read back the undo journal", s->path);
            break;
        }
        uint64_t off = mz_get64(head + 12);
        uint32_t len = mz_get32(head + 20);
        pos += MZ_UNDO_REC_HEAD + len;
        if (off < j->h.data_off) continue; /* the local header */
        if (len > cap) {
            free(old);
            free(cur);
            old = malloc(len);
            cur = malloc(len);
            cap = len;
            if (!old || !cur) {
                st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
                break;
            }
        }
        if (mz_pread_full(j->fd, old, len, pos - len) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read back the undo journal", s->path);
            break;
        }
        uint64_t at = off - j->h.data_off;
        /* Read rather than mapped: the edited pages have no page tables in the mapping yet. */
        if (mz_pread_full(s->fd, cur, len, off) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the edited bytes back", s->path);
            break;
        }
        for (uint32_t i = 0; i < len; i++) old[i] ^= cur[i];
        *crc ^= mz_crc0_shifted(old, len, n0 - at - len);
    }
    free(old);
    free(cur);
    return st;
}

int mz_journal_has_record(int fd, const mz_journal_head *jh) {
    uint8_t head[MZ_UNDO_REC_HEAD];
    if (mz_pread_full(fd, head, sizeof head, MZ_UNDO_HEADER) != 0) return 0;
    if (mz_get32(head) != MZ_UNDO_REC_MAGIC || mz_get64(head + 4) != jh->nonce) return 0;
    uint32_t len = mz_get32(head + 20);
    if (len > (64u << 20)) return 0;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return 1; /* cannot tell: assume the worst */
    int whole = mz_pread_full(fd, buf, len, MZ_UNDO_HEADER + MZ_UNDO_REC_HEAD) == 0 &&
                mz_get32(head + 24) == mz_crc32(mz_crc32(0, head + 4, 20), buf, len);
    free(buf);
    return whole;
}

int mz_journal_is_hot(mz_store *s, const mz_journal_head *jh) {
    mz_entry *e = mz_committed_at(s, jh->lfh_off, MZ_MARK_SHADOWED | MZ_MARK_BAD);
    if (!e || e->method != 0 || e->usize != jh->size || e->crc != jh->crc) return 0;
    if (mz_resolve_data(s, e) != MMZIP_OK) return 0;
    return e->data_off == jh->data_off;
}

int mz_journal_pending(mz_store *s, mz_entry **out, uint64_t *journal_bytes) {
    *out = NULL;
    *journal_bytes = 0;
    char *jpath = mz_journal_path(s->path);
    int fd = jpath ? open(jpath, O_RDONLY | O_CLOEXEC) : -1;
    free(jpath);
    if (fd < 0) return 0;
    mz_journal_head jh;
    struct stat st;
    int hot = mz_journal_read_head(fd, &jh) && mz_journal_is_hot(s, &jh) && mz_journal_has_record(fd, &jh);
    if (hot) {
        *out = mz_committed_at(s, jh.lfh_off, MZ_MARK_SHADOWED | MZ_MARK_BAD);
        *journal_bytes = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    close(fd);
    return hot;
}

void mz_journal_mark(mz_store *s) {
    mz_entry *e;
    uint64_t bytes;
    if (mz_journal_pending(s, &e, &bytes) && e) e->mark |= MZ_MARK_EDITING;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The marker file of mapped edits                                                                       */

/* Magic, device (8), inode (8), count (4); per entry: lfh offset (8), CRC before the edit (4), name length
 * (2), name. Little-endian (docs/format.md, section 9). */
#define MZ_MARKS_SUFFIX ".mmzip-inplace"
#define MZ_MARKS_NEW_SUFFIX ".mmzip-inplace.new"
static const char marks_magic[8] = {'M', 'M', 'Z', 'I', 'P', 'I', 'P', '1'};
#define MZ_MARKS_HEAD 28u
#define MZ_MARKS_REC 14u
#define MZ_MARKS_MAX (1u << 24) /* a file larger than this is not ours */
#define MZ_LEGACY_MARKER_LEN 12u /* an older mmzip's marker entry: lfh offset (8), CRC before the edit (4) */

char *mz_marks_path(const char *archive, int new_one) {
    return suffixed(archive, new_one ? MZ_MARKS_NEW_SUFFIX : MZ_MARKS_SUFFIX);
}

int mz_marks_write(mz_store *s, const mz_mark *marks, uint32_t count) {
    size_t len = MZ_MARKS_HEAD;
    for (uint32_t i = 0; i < count; i++) len += MZ_MARKS_REC + strlen(marks[i].key);
    char *path = mz_marks_path(s->path, 0), *tmp = mz_marks_path(s->path, 1);
    uint8_t *buf = malloc(len);
    int st = MMZIP_OK, durable = (s->opts.flags & MMZIP_DURABLE) != 0;
    if (!path || !tmp || !buf) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    if (count == 0) {
        if (unlink(path) != 0 && errno != ENOENT)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot remove the in-place marker file %s", s->path, path);
        else if (durable && mz_fsync_dir_of(path) != 0)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, path);
        goto out;
    }
    memcpy(buf, marks_magic, 8);
    mz_put64(buf + 8, (uint64_t)s->dev);
    mz_put64(buf + 16, (uint64_t)s->ino);
    mz_put32(buf + 24, count);
    size_t at = MZ_MARKS_HEAD;
    for (uint32_t i = 0; i < count; i++) {
        size_t n = strlen(marks[i].key);
        mz_put64(buf + at, marks[i].lfh_off);
        mz_put32(buf + at + 8, marks[i].crc);
        mz_put16(buf + at + 12, (uint16_t)n);
        memcpy(buf + at + MZ_MARKS_REC, marks[i].key, n);
        at += MZ_MARKS_REC + n;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot create the in-place marker file %s", s->path, tmp);
        goto out;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int err = done < len ? (errno ? errno : EIO) : 0;
    if (!err && durable && fsync(fd) != 0) err = errno;
    close(fd);
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        st = mz_fail_errno(MMZIP_EIO, err, "%s: cannot write the in-place marker file %s", s->path, path);
    } else if (durable && mz_fsync_dir_of(path) != 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, path);
    }
out:
    free(buf);
    free(path);
    free(tmp);
    return st;
}

int mz_marks_read(mz_store *s, const char *path, uint8_t **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return MMZIP_ENOENT;
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot open the in-place marker file %s", s->path, path);
    }
    struct stat st;
    int r = MMZIP_OK;
    if (fstat(fd, &st) != 0) r = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat %s", s->path, path);
    else if (st.st_size < (off_t)MZ_MARKS_HEAD || st.st_size > (off_t)MZ_MARKS_MAX)
        r = mz_fail(MMZIP_ECORRUPT, "%s: %s is not an mmzip in-place marker file (%lld bytes)", s->path, path,
                    (long long)st.st_size);
    else if (!(*buf = malloc((size_t)st.st_size))) r = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    else if (mz_pread_full(fd, *buf, (size_t)st.st_size, 0) != 0)
        r = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read %s", s->path, path);
    close(fd);
    if (r) goto fail;
    *len = (size_t)st.st_size;
    const uint8_t *b = *buf;
    uint32_t count = mz_get32(b + 24);
    size_t at = MZ_MARKS_HEAD;
    for (uint32_t i = 0; i < count && at + MZ_MARKS_REC <= *len; i++) at += MZ_MARKS_REC + mz_get16(b + at + 12);
    if (memcmp(b, marks_magic, 8) != 0 || at != *len || count == 0) {
        r = mz_fail(MMZIP_ECORRUPT, "%s: %s is not a complete mmzip in-place marker file; the entries it was to "
                    "name may have stale CRCs ('mmzip check' says which); remove the file to go on", s->path, path);
        goto fail;
    }
    if (mz_get64(b + 8) != (uint64_t)s->dev || mz_get64(b + 16) != (uint64_t)s->ino) return MMZIP_ESTALE;
    return MMZIP_OK;
fail:
    free(*buf);
    *buf = NULL;
    *len = 0;
    return r;
}

int mz_marks_next(const uint8_t *buf, size_t len, size_t *at, mz_mark_rec *m) {
    if (*at == 0) *at = MZ_MARKS_HEAD;
    if (*at + MZ_MARKS_REC > len) return 0;
    m->lfh_off = mz_get64(buf + *at);
    m->crc = mz_get32(buf + *at + 8);
    m->name_len = mz_get16(buf + *at + 12);
    m->name = buf + *at + MZ_MARKS_REC;
    *at += MZ_MARKS_REC + m->name_len;
    return 1;
}

/* From the name's first bytes kept in the entry (name_head): a walk of every entry for markers touches no byte
 * of the directory image (readers ask at every open: mmzip_unfinished_edits). */
int mz_legacy_marker(mz_store *s, const mz_entry *me) {
    (void)s;
    _Static_assert(MZ_EDIT_PREFIX_LEN <= sizeof me->name_head, "the marker prefix fits in name_head");
    return me->name_len > MZ_EDIT_PREFIX_LEN && memcmp(me->name_head, MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) == 0;
}

int mz_legacy_marker_target(mz_store *s, mz_entry *me, uint64_t *lfh_off) {
    if ((me->mark & (MZ_MARK_SHADOWED | MZ_MARK_BAD)) || me->method != 0 || me->usize != MZ_LEGACY_MARKER_LEN ||
        mz_resolve_data(s, me) != MMZIP_OK)
        return 0;
    *lfh_off = mz_get64(s->map.base + me->data_off);
    return 1;
}

int mz_marked_each(mz_store *s, mz_marked_fn fn, void *ctx) {
    int count = 0, r = 0;
    char *path = mz_marks_path(s->path, 0);
    if (!path) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint8_t *buf;
    size_t len;
    int st = mz_marks_read(s, path, &buf, &len);
    if (st == MMZIP_ENOENT || st == MMZIP_ESTALE) st = MMZIP_OK, len = 0; /* none of this archive */
    char how[PATH_MAX + 64];
    snprintf(how, sizeof how, "named in the in-place marker file %s", path);
    free(path);
    if (st) return st;
    mz_mark_rec m;
    for (size_t at = 0; !r && mz_marks_next(buf, len, &at, &m);) {
        mz_entry *e = mz_committed_at(s, m.lfh_off, MZ_MARK_SHADOWED);
        if (e && e->method == 0 && e->name_len == m.name_len && memcmp(mz_name(s, e), m.name, m.name_len) == 0) {
            count++;
            if (fn) r = fn(s, e, how, ctx);
        }
    }
    free(buf);
    for (uint32_t i = 0; i < s->n_committed && !r; i++) {
        mz_entry *me = &s->e[i];
        uint64_t target;
        if (!mz_legacy_marker(s, me) || !mz_legacy_marker_target(s, me, &target)) continue;
        mz_entry *e = mz_committed_at(s, target, MZ_MARK_SHADOWED);
        if (!e || e->method != 0) continue;
        char legacy[400];
        snprintf(legacy, sizeof legacy, "named by the marker entry '%.*s' (of an older mmzip)",
                 (int)(me->name_len > 300 ? 300 : me->name_len), mz_name(s, me));
        count++;
        if (fn) r = fn(s, e, legacy, ctx);
    }
    return r ? r : count;
}

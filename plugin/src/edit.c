/*
 * edit.c - editing a committed stored entry where it lies (mmzip_edit_*): one model with two ways to change the
 * bytes, a journaled one (mmzip_edit_write, undone by a crash) and a mapped one (a writable view, kept by a
 * crash with its CRC recomputed).
 *
 * Everything else in mmzip appends; this is the one place that writes over committed bytes (docs/protocol.md,
 * "In-place edits", is the specification). What each way leaves beside the archive for recovery is in
 * journal.c, the entry locks that keep readers away in locks.c and hold.c, the CRC algebra in crc32_combine.c,
 * and the repair after a crash in recovery.c. This file is the session:
 *
 *   Journaled (the HDF5 driver). Before a committed byte of the entry (its data, or its local header) is first
 *   overwritten after the last publish, the block holding it is copied to the undo journal. Bytes past the
 *   committed size (the entry's growth) are not committed: nobody refers to them, so they need no journal;
 *   when the entry is the physically last one they are obtained by moving the directory out of the way
 *   (mz_ensure_room). Publishing writes the new CRC and sizes into the local header (journaled first) and
 *   commits a directory whose record of the entry carries them: that commit's truncate is the commit point.
 *   The journal is then reset to the new version before the next change, or removed as it is if the edit ends
 *   first (journal_fresh). Durable mode: the journal is fdatasync'ed before every overwrite of bytes it
 *   protects, and its creation is made durable (file and directory) before the first one. The new CRC costs
 *   what changed, not the entry's size (crc_delta_note, grown_record).
 *
 *   Mapped (the Python package's r+ arrays). The entry is named in the marker file first; the caller writes
 *   through a shared writable mapping; every commit while the edit is open recomputes the entry's CRC and
 *   writes it into the local header (in place) and the new directory, so that each commit publishes data and
 *   a CRC that agree; the end makes the view read-only, commits the last CRC and drops the marker.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MZ_UNDO_BLOCK 4096u
/* Extents of the growth whose CRC an edit keeps. HDF5 appends in order, so they merge into a few; a session
 * that scatters more than this reads the rest back at its publish. */
#define MZ_GROWN_MAX 64u
#define ENAME(e) (int)(e)->name_len, mz_name(s, (e))

struct mmzip_edit {
    mz_view v;                           /* first: s->views points at it (mapped edits) */
    mz_store *s;
    char *key;
    int mapped;                          /* MMZIP_EDIT_MAP */
    uint64_t lfh_off, data_off;

    /* Journaled edits. */
    uint64_t lfh_len;                    /* the header bytes a publish rewrites (fixed + name + ZIP64) */
    uint8_t *lfh;                        /* those bytes as committed: read at the begin, then what publishes wrote */
    mz_journal j;                        /* j.h.size and j.h.crc: the committed version that the journal restores */
    uint64_t room_end;                   /* absolute: bytes below it are the entry's to write */
    uint64_t reach_end;                  /* absolute: the end of the entry's recorded room (MMZIP_RESERVE_ROOM) */
    uint64_t high;                       /* the highest byte written this version, relative to data_off */
    int last;                            /* the physically last entry: room comes from moving the directory */
    uint8_t *saved;                      /* one bit per MZ_UNDO_BLOCK of the committed version */
    uint64_t nblocks;
    int lfh_saved;
    int locked;                          /* the entry's lock is taken, on the store's descriptor */
    int dirty;                           /* overwritten or grown since the last publish */
    struct mz_grown {                    /* CRCs of bytes written past the committed size (see grown_record) */
        uint64_t off, len;               /* relative to data_off; sorted, disjoint */
        uint32_t crc;
    } grown[MZ_GROWN_MAX];
    unsigned n_grown;
    uint32_t crc_delta;                  /* what the writes since the last publish did to the CRC (crc_delta_note) */
    int crc_delta_known;                 /* 0 once a change to committed bytes went unnoted */
    int journal_stale;                   /* see journal_fresh */

    /* Mapped edits (and v): kept, read-only once ended, until the store closes (pointers into the view may
     * live). */
    uint32_t crc_before;                 /* its CRC when the edit began (recorded in the marker file) */
    uint8_t *map;                        /* its own shared writable mapping of the entry's pages (v.view is in it) */
    size_t map_len;
};

/* The mapped edit whose view record s->views holds (its first member). */
static struct mmzip_edit *edit_of(mz_view *v) { return (struct mmzip_edit *)v; }

static struct mmzip_edit *mapped_edit_of(mz_store *s, const char *key);

/* ---------------------------------------------------------------------------------------------------- */
/* The new CRC at the cost of the change (crc32_combine.c does the algebra)                                */

/*
 * The change to committed bytes, noted as it is written. By the same algebra, a write that turns bytes P
 * into N changes the entry's CRC by crc0(P ^ N) shifted to its place, and the changes of successive writes
 * add up (P ^ N, then N ^ M, is P ^ M). A small write has just read P to compare it, so the publish needs to
 * read nothing: before, it read each changed block back from the journal and from the file (three reads per
 * block, a third of a short HDF5 session's system calls). A write that did not read P (a large one) leaves
 * the delta unknown, and the publish falls back to the journal.
 */
static void crc_delta_note(struct mmzip_edit *ed, uint64_t at, uint8_t *prev, const uint8_t *now, size_t len) {
    for (size_t i = 0; i < len; i++) prev[i] ^= now[i];
    ed->crc_delta ^= mz_crc0_shifted(prev, len, ed->j.h.size - at - len);
}

/* Continues *crc over the file's bytes [off, off + len), read with pread: the bytes an edit just wrote are in
 * the page cache, but the mapping's page tables for them are not made yet, and a page fault costs about 30 us
 * on this project's VM (the growth of a 1 MiB dataset took 0.8 ms through the mapping). */
static int crc_of_file(mz_store *s, uint64_t off, uint64_t len, uint32_t *crc) {
    size_t cap = len < (256u << 10) ? (size_t)len : (256u << 10);
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    int st = MMZIP_OK;
    for (uint64_t done = 0; done < len;) {
        size_t k = len - done < cap ? (size_t)(len - done) : cap;
        if (mz_pread_full(s->fd, buf, k, off + done) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the edited bytes back", s->path);
            break;
        }
        *crc = mz_crc32(*crc, buf, k);
        done += k;
    }
    free(buf);
    return st;
}

/*
 * The CRC of the growth, taken as it is written. A publish needs the CRC of every byte past the committed
 * size; reading them back cost a second copy of everything the edit appended (0.1 ms of a 1 MiB dataset's
 * session, and an hour of appended data would be read twice). So a write past the committed size has the CRC
 * of those bytes computed from the caller's buffer, still in the CPU's cache, and kept per extent; extents
 * that touch are concatenated as they come, so data written in order stays one extent. A write over part of
 * an extent makes the whole extent unknown (its other bytes are only in the file), and the publish reads back
 * what no extent covers: a range never written (the room, zeros or a killed writer's bytes), a rewritten
 * one, one past MZ_GROWN_MAX extents.
 */
static void grown_forget(struct mmzip_edit *ed, uint64_t lo, uint64_t hi) {
    unsigned kept = 0;
    for (unsigned i = 0; i < ed->n_grown; i++) {
        const struct mz_grown *g = &ed->grown[i];
        if (g->off < hi && lo < g->off + g->len) continue;
        ed->grown[kept++] = *g;
    }
    ed->n_grown = kept;
}

/* Notes the CRC of data, which the entry now holds at [off, off + len), for its part past the committed size
 * (grown_forget has already dropped what it overlaps). */
static void grown_record(struct mmzip_edit *ed, uint64_t off, const uint8_t *data, uint64_t len) {
    if (off + len <= ed->j.h.size) return;
    if (off < ed->j.h.size) {
        data += ed->j.h.size - off;
        len -= ed->j.h.size - off;
        off = ed->j.h.size;
    }
    uint64_t end = off + len;
    uint32_t crc = mz_crc32(0, data, (size_t)len);
    unsigned i = 0;
    while (i < ed->n_grown && ed->grown[i].off < off) i++;
    struct mz_grown *prev = i > 0 && ed->grown[i - 1].off + ed->grown[i - 1].len == off ? &ed->grown[i - 1] : NULL;
    struct mz_grown *next = i < ed->n_grown && ed->grown[i].off == end ? &ed->grown[i] : NULL;
    if (prev) {
        prev->crc = mz_crc32_concat(prev->crc, crc, len);
        prev->len += len;
        if (next) {
            prev->crc = mz_crc32_concat(prev->crc, next->crc, next->len);
            prev->len += next->len;
            memmove(next, next + 1, (size_t)(ed->n_grown - i - 1) * sizeof *next);
            ed->n_grown--;
        }
    } else if (next) {
        next->crc = mz_crc32_concat(crc, next->crc, next->len);
        next->off = off;
        next->len += len;
    } else if (ed->n_grown < MZ_GROWN_MAX) {
        memmove(&ed->grown[i + 1], &ed->grown[i], (size_t)(ed->n_grown - i) * sizeof ed->grown[0]);
        ed->grown[i] = (struct mz_grown){off, len, crc};
        ed->n_grown++;
    }
}

/* Continues *crc over the entry's bytes [from, to), all past the committed size: from the extents that
 * grown_record kept where they cover it, read back where they do not. */
static int growth_crc(mz_store *s, const struct mmzip_edit *ed, uint64_t from, uint64_t to, uint32_t *crc) {
    uint64_t pos = from;
    for (unsigned i = 0; i < ed->n_grown && pos < to; i++) {
        const struct mz_grown *g = &ed->grown[i];
        if (g->off + g->len > to) break; /* cut by the published size: read back from here */
        if (g->off > pos) {
            int st = crc_of_file(s, ed->data_off + pos, g->off - pos, crc);
            if (st) return st;
        }
        *crc = mz_crc32_concat(*crc, g->crc, g->len);
        pos = g->off + g->len;
    }
    return pos < to ? crc_of_file(s, ed->data_off + pos, to - pos, crc) : MMZIP_OK;
}

/* The entry's CRC after the edit: from its committed CRC and the changes noted as they were written
 * (crc_delta), or, if some were not, from the journal's old blocks against the file; then the appended
 * bytes. A full computation if it shrank. */
static int edited_crc(mz_store *s, struct mmzip_edit *ed, uint64_t size, uint32_t *out) {
    const uint8_t *now = s->map.base + ed->data_off;
    if (size < ed->j.h.size) {
        *out = mz_crc32(0, now, (size_t)size);
        return MMZIP_OK;
    }
    uint32_t crc = ed->j.h.crc;
    int st = MMZIP_OK;
    if (ed->crc_delta_known) crc ^= ed->crc_delta;
    else st = mz_journal_crc_change(s, &ed->j, &crc);
    if (!st && size > ed->j.h.size) st = growth_crc(s, ed, ed->j.h.size, size, &crc);
    if (st) return st;
    *out = crc;
    return MMZIP_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The journal file                                                                                      */

/* What the edit knows of the journal, for a journal that holds nothing of the current committed version. */
static int journal_forget(mz_store *s, struct mmzip_edit *ed) {
    ed->j.end = MZ_UNDO_HEADER;
    ed->lfh_saved = 0;
    ed->dirty = 0;
    ed->n_grown = 0; /* the committed size moved: the growth starts afresh */
    ed->crc_delta = 0;
    ed->crc_delta_known = 1;
    uint64_t nb = (ed->j.h.size + MZ_UNDO_BLOCK - 1) / MZ_UNDO_BLOCK;
    uint8_t *bits = calloc((size_t)(nb + 7) / 8 + 1, 1);
    if (!bits) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    free(ed->saved);
    ed->saved = bits;
    ed->nblocks = nb;
    return MMZIP_OK;
}

static int journal_file_reset(mz_store *s, struct mmzip_edit *ed, int empty) {
    int st = mz_journal_reset(s, &ed->j, empty);
    if (!st) ed->journal_stale = 0;
    return st;
}

static int journal_reset(mz_store *s, struct mmzip_edit *ed, int empty) {
    int st = journal_file_reset(s, ed, empty);
    return st ? st : journal_forget(s, ed);
}

/* A publish leaves the journal as it was, stale: it restores a version the directory no longer names, which
 * recovery deletes without applying (the state a crash between the commit point and a reset always left).
 * It is reset before the next change, and an edit that ends instead - a session that publishes at its
 * close - just removes it: a write and a truncate of the journal saved per session. */
static int journal_fresh(mz_store *s, struct mmzip_edit *ed) {
    return ed->journal_stale ? journal_file_reset(s, ed, 0) : MMZIP_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Edits                                                                                                  */

static int check_editor(mmzip_t *h, const char *key, const char *fn) {
    if (!h || !key) return mz_fail(MMZIP_EINVAL, "%s: NULL argument", fn);
    if (!h->writable) return mz_fail(MMZIP_EREADONLY, "%s: opened read-only; cannot edit '%s'", h->s->path, key);
    return mz_refuse_inherited(h->s);
}

/* 1 if ed is an edit of s that has not ended. */
static int edit_open(mz_store *s, const struct mmzip_edit *ed) {
    if (!ed->mapped) return s->edit == ed;
    for (uint32_t i = 0; i < s->n_views; i++)
        if (s->views[i] == &ed->v) return ed->v.open;
    return 0;
}

/* ed with the writer mutex held, if it has not ended and is of the kind wanted (want_mapped: 1 mapped, 0
 * journaled, -1 either); or NULL with *st set and the mutex released. */
static struct mmzip_edit *lock_edit(mmzip_edit_t *ed, int want_mapped, const char *fn, int *st) {
    if (!ed) {
        *st = mz_fail(MMZIP_EINVAL, "%s: NULL edit", fn);
        return NULL;
    }
    mz_store *s = ed->s;
    if (s->owner != mz_current_pid()) {
        *st = mz_fail(MMZIP_EBUSY, "%s: this edit was inherited across fork(); open the archive again", s->path);
        return NULL;
    }
    pthread_mutex_lock(&s->wmu);
    if (!edit_open(s, ed)) {
        *st = mz_fail(MMZIP_EINVAL, "%s: %s: entry '%s' is not being edited in place (the edit has ended)", s->path,
                      fn, ed->key);
    } else if (want_mapped == 1 && !ed->mapped) {
        *st = mz_fail(MMZIP_EINVAL, "%s: %s: the edit of '%s' is journaled: change it with mmzip_edit_write",
                      s->path, fn, ed->key);
    } else if (want_mapped == 0 && ed->mapped) {
        *st = mz_fail(MMZIP_EINVAL, "%s: %s: the edit of '%s' is mapped (MMZIP_EDIT_MAP): write through its view",
                      s->path, fn, ed->key);
    } else {
        *st = MMZIP_OK;
        return ed;
    }
    pthread_mutex_unlock(&s->wmu);
    return NULL;
}

static void edit_free(mz_store *s, struct mmzip_edit *ed) {
    if (!ed) return;
    if (ed->j.fd >= 0) close(ed->j.fd);
    if (ed->locked) mz_unlock_entry(s->fd, ed->lfh_off);
    free(ed->j.path);
    free(ed->lfh);
    free(ed->saved);
    free(ed->key);
    free(ed);
}

/* What commits (the directory's floor) and holds (the entry locked) read of the journaled edit, kept in the
 * store after every change of it, so that neither calls up into this file. */
static void edit_sync(mz_store *s) {
    s->edit_floor = s->edit && s->edit->last ? s->edit->room_end : 0;
    s->edit_lfh_off = s->edit ? s->edit->lfh_off : 0;
}

/* Where the bytes after the entry stop being its own: the end of its recorded room (MMZIP_RESERVE_ROOM),
 * or, for the physically last entry, nothing (*last = 1: it grows by moving the directory). Dead bytes
 * between the room and the next entry are not room: a reader of an older directory may still read them. */
static uint64_t room_limit(mz_store *s, const mz_entry *e, int *last) {
    uint64_t end = e->data_off + e->csize + mz_room_of(s, e), next = UINT64_MAX;
    for (uint32_t i = 0; i < s->n; i++) {
        const mz_entry *o = &s->e[i];
        if (o == e || o->lfh_off < end) continue;
        if (o->state == MZ_PENDING && (o->mark & MZ_MARK_DEAD) && o->lfh_off >= s->pending_end) continue;
        if (o->lfh_off < next) next = o->lfh_off;
    }
    *last = next == UINT64_MAX && s->pending_end <= end;
    if (next == UINT64_MAX) next = *last ? end : s->pending_end;
    /* A committed directory between the entry and the next one is not room either. */
    if (s->cd_pos >= end && s->cd_pos < next && !*last) next = s->cd_pos;
    return next < end ? next : end;
}

static int begin_journaled(mz_store *s, const char *key, struct mmzip_edit **out) {
    size_t nlen = strlen(key);
    int st;
    pthread_mutex_lock(&s->wmu);
    struct mmzip_edit *ed = NULL;
    if (s->edit) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' is already being edited in place (one journaled edit at a time "
                     "per archive)", s->path, s->edit->key);
        goto fail;
    }
    if (mapped_edit_of(s, key)) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' is being edited through a writable view (MMZIP_EDIT_MAP)",
                     s->path, key);
        goto fail;
    }
    uint32_t head = mz_lookup_head(s, key, nlen);
    mz_entry *e = head == MZ_NONE ? NULL : &s->e[head];
    if (!e || !mz_visible(e, 1)) {
        st = mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
        goto fail;
    }
    if (e->state != MZ_COMMITTED) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' has a pending new version; commit it before editing in place",
                     s->path, key);
        goto fail;
    }
    if (e->method != 0 || (e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_DATA_DESCRIPTOR))) {
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%s' is compressed, encrypted or has a data descriptor: only "
                     "stored entries are edited in place", s->path, key);
        goto fail;
    }
    st = mz_resolve_data(s, e);
    if (st) goto fail;
    /* The local header must keep its sizes in a ZIP64 field (as mmzip writes it), so that a publish can
     * rewrite them where they are, whatever the new size. Read with pread, like all an edit compares or
     * saves (see unchanged() and copy.c's MZ_COPY_PREAD_BELOW). */
    uint8_t *lh = malloc(MZ_LFH_FIXED + nlen + MZ_LFH_ZIP64_EXTRA);
    if (!lh) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto fail;
    }
    if (mz_pread_full(s->fd, lh, MZ_LFH_FIXED + nlen + MZ_LFH_ZIP64_EXTRA, e->lfh_off) != 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the local header of '%s'", s->path, key);
        free(lh);
        goto fail;
    }
    uint16_t lnl = mz_get16(lh + 26), lxl = mz_get16(lh + 28);
    int zip64_sizes = lnl == nlen && lxl >= MZ_LFH_ZIP64_EXTRA && mz_get16(lh + 30 + nlen) == MZ_EXTRA_ZIP64 &&
                      mz_get16(lh + 32 + nlen) == 16 && mz_get32(lh + 18) == 0xFFFFFFFFu &&
                      mz_get32(lh + 22) == 0xFFFFFFFFu;
    if (!zip64_sizes) {
        free(lh);
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%s' has a local header without a ZIP64 size field (it was "
                     "not written by mmzip): it cannot be edited in place until it is rewritten", s->path, key);
        goto fail;
    }
    ed = calloc(1, sizeof *ed);
    if (!ed) {
        free(lh);
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto fail;
    }
    ed->lfh = lh; /* only this process writes it while the edit holds the writer lock */
    ed->s = s;
    if (!(ed->key = strdup(key)) || !(ed->j.path = mz_journal_path(s->path))) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto fail;
    }
    ed->j.fd = -1;
    ed->lfh_off = e->lfh_off;
    ed->data_off = e->data_off;
    ed->lfh_len = MZ_LFH_FIXED + nlen + MZ_LFH_ZIP64_EXTRA;
    ed->j.h.lfh_off = e->lfh_off;
    ed->j.h.data_off = e->data_off;
    ed->j.h.size = e->usize;
    ed->j.h.crc = e->crc;
    ed->room_end = room_limit(s, e, &ed->last);
    ed->reach_end = e->data_off + e->csize + mz_room_of(s, e);
    ed->high = e->usize;
    /* On the store's own descriptor: a hold opens one of its own (mmzip_hold), so that even a hold in this
     * process conflicts with the edit. */
    int locked = mz_lock_entry(s->fd, 1, ed->lfh_off);
    if (locked == 1) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' is held by a reader (mmzip_hold) in this or another process; "
                     "it cannot be edited in place while read", s->path, key);
        goto fail;
    }
    ed->locked = locked == 0;
    st = mz_journal_create(s, &ed->j);
    if (!st) st = journal_forget(s, ed);
    if (st) {
        unlink(ed->j.path);
        goto fail;
    }
    s->edit = ed;
    edit_sync(s);
    *out = ed;
    pthread_mutex_unlock(&s->wmu);
    return MMZIP_OK;
fail:
    edit_free(s, ed);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

static int grow_locked(mz_store *s, struct mmzip_edit *ed, uint64_t capacity) {
    uint64_t end = ed->data_off + capacity;
    if (end <= ed->room_end) return MMZIP_OK;
    if (!ed->last || s->pending_end > ed->room_end)
        return mz_fail(MMZIP_ETOOBIG, "%s: entry '%s' cannot grow to %llu bytes in place: the next entry starts "
                       "%llu bytes after its start; give it a new version at the end instead", s->path, ed->key,
                       (unsigned long long)capacity, (unsigned long long)(ed->room_end - ed->data_off));
    int st = mz_flush_writes(s);
    if (!st)
        st = mz_ensure_room(s, end + s->cd_len + mz_our_cdh_size(strlen(ed->key)) + mz_trailer_len(s->comment_len));
    if (st) return st;
    /* What lies between the old end and the new one (the directory, before it moved) must read as zeros. */
    if (ed->room_end < s->zero_from) {
        uint64_t stop = end < s->zero_from ? end : s->zero_from;
        st = mz_io_zero(s, ed->room_end, stop - ed->room_end, "edit.zero");
        if (st) return st;
    }
    ed->room_end = end;
    edit_sync(s);
    s->pending_end = end;
    if (end > s->zero_from) s->zero_from = end;
    return MMZIP_OK;
}

int mmzip_edit_grow(mmzip_edit_t *edit, uint64_t capacity) {
    int st;
    struct mmzip_edit *ed = lock_edit(edit, 0, "mmzip_edit_grow", &st);
    if (!ed) return st;
    st = journal_fresh(ed->s, ed);
    if (!st) st = grow_locked(ed->s, ed, capacity);
    pthread_mutex_unlock(&ed->s->wmu);
    return st;
}

/* 1 if the file holds data at [off, off + len) - 0 only for a hole (reads as zeros). */
static int file_has_data(int fd, uint64_t off, size_t len) {
    off_t next = lseek(fd, (off_t)off, SEEK_DATA);
    if (next < 0) return errno != ENXIO; /* ENXIO: no data after off; any other error: assume data */
    return (uint64_t)next < off + len;
}

/* 1 if the file's bytes at [off, off + len) equal data, read with pread rather than through the mapping: the
 * first touch of a page of a mapping is a page fault, about 30 us on this project's VM against 1-2 us for
 * the read. A hole (the room after an entry usually is one) is not read at all: reading it made the kernel
 * allocate and zero a read-ahead window of pages - on the first session in a process, half its time. */
static int file_equals(int fd, uint64_t off, const uint8_t *data, size_t len) {
    if (len == 0) return 1;
    if (!file_has_data(fd, off, len)) return data[0] == 0 && memcmp(data, data + 1, len - 1) == 0;
    for (size_t done = 0; done < len;) {
        uint8_t old[16384];
        size_t k = len - done < sizeof old ? len - done : sizeof old;
        if (mz_pread_full(fd, old, k, off + done) != 0 || memcmp(old, data + done, k) != 0) return 0;
        done += k;
    }
    return 1;
}

/* 1 if writing data at offset would change nothing: HDF5 rewrites much metadata as it was. Past what the
 * entry held and what this session wrote, the room should read as zeros, but a writer killed while growing
 * the entry (with nothing journaled) leaves its bytes there: so data that is not all zeros there counts as a
 * change without looking, and zeros are checked against the file. */
static int unchanged(mz_store *s, const struct mmzip_edit *ed, uint64_t offset, const void *data, size_t len) {
    uint64_t known = ed->j.h.size > ed->high ? ed->j.h.size : ed->high;
    size_t in_file = offset >= known ? 0 : (known - offset < len ? (size_t)(known - offset) : len);
    const uint8_t *rest = (const uint8_t *)data + in_file;
    size_t n = len - in_file;
    if (n && (rest[0] != 0 || memcmp(rest, rest + 1, n - 1) != 0)) return 0;
    return file_equals(s->fd, ed->data_off + offset, data, in_file) &&
           file_equals(s->fd, ed->data_off + offset + in_file, rest, n);
}

/* A write up to this size inside the committed bytes (HDF5's metadata: a superblock, an object header) reads
 * the blocks it touches once, for the comparison and for the journal: one pread, where the general path
 * makes a SEEK_DATA, a pread and a pread per block to journal. */
#define MZ_SMALL_EDIT (64u << 10)

int mmzip_edit_write(mmzip_edit_t *edit, uint64_t offset, const void *data, size_t len) {
    int st;
    struct mmzip_edit *ed = lock_edit(edit, 0, "mmzip_edit_write", &st);
    if (!ed) return st;
    mz_store *s = ed->s;
    const char *key = ed->key;
    uint8_t *old = NULL; /* the committed blocks of a small write, from old_lo */
    uint64_t old_lo = 0;
    if (len == 0) goto out;
    if (!data || offset > UINT64_MAX - len) {
        st = mz_fail(MMZIP_EINVAL, "%s: mmzip_edit_write: bad range", s->path);
        goto out;
    }
    st = journal_fresh(s, ed);
    if (!st) st = grow_locked(s, ed, offset + len);
    if (st) goto out;
    uint64_t end = offset + len;
    /* Unchanged bytes (HDF5 rewrites much metadata as it was) cost nothing but their CRC. */
    int same;
    if (end <= ed->j.h.size && len <= MZ_SMALL_EDIT) {
        old_lo = offset / MZ_UNDO_BLOCK * MZ_UNDO_BLOCK;
        uint64_t old_hi = (end + MZ_UNDO_BLOCK - 1) / MZ_UNDO_BLOCK * MZ_UNDO_BLOCK;
        if (old_hi > ed->j.h.size) old_hi = ed->j.h.size;
        if (!(old = malloc((size_t)(old_hi - old_lo)))) {
            st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            goto out;
        }
        if (mz_pread_full(s->fd, old, (size_t)(old_hi - old_lo), ed->data_off + old_lo) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read entry '%s' at %llu", s->path, key,
                               (unsigned long long)offset);
            goto out;
        }
        same = memcmp(old + (offset - old_lo), data, len) == 0;
    } else {
        same = unchanged(s, ed, offset, data, len);
    }
    if (!same && offset < ed->j.h.size) {
        uint64_t b0 = offset / MZ_UNDO_BLOCK, b1 = ((end < ed->j.h.size ? end : ed->j.h.size) - 1) / MZ_UNDO_BLOCK;
        int saved_any = 0;
        for (uint64_t b = b0; b <= b1;) {
            if (ed->saved[b >> 3] & (1u << (b & 7))) {
                b++;
                continue;
            }
            uint64_t r = b;
            while (r <= b1 && !(ed->saved[r >> 3] & (1u << (r & 7))) && r - b < 1024) r++;
            uint64_t lo = b * MZ_UNDO_BLOCK, hi = r * MZ_UNDO_BLOCK;
            if (hi > ed->j.h.size) hi = ed->j.h.size;
            st = mz_journal_save(s, &ed->j, ed->data_off + lo, hi - lo, old ? old + (lo - old_lo) : NULL);
            if (st) goto out;
            for (uint64_t k = b; k < r; k++) ed->saved[k >> 3] |= (uint8_t)(1u << (k & 7));
            saved_any = 1;
            b = r;
        }
        if (saved_any) {
            st = mz_journal_sync(s, &ed->j, "edit.sync_journal");
            if (st) goto out;
        }
    }
    grown_forget(ed, offset, end);
    if (!same) {
        st = mz_io_write(s, data, len, ed->data_off + offset, "edit.write");
        if (st) {
            ed->crc_delta_known = 0;
            goto out;
        }
        ed->dirty = 1;
        if (end > ed->high) ed->high = end;
        if (old) /* a small write, all inside the committed bytes: old holds them as they were */
            crc_delta_note(ed, offset, old + (offset - old_lo), data, len);
        else if (offset < ed->j.h.size)
            ed->crc_delta_known = 0;
    }
    grown_record(ed, offset, data, len);
out:
    free(old);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

/* Puts the committed version back (every journaled block) and forgets the growth. */
static int undo_locked(mz_store *s, struct mmzip_edit *ed) {
    if (!ed->dirty && !ed->lfh_saved) return MMZIP_OK;
    int st = mz_journal_apply(s, ed->j.fd, &ed->j.h, ed->lfh_off, ed->data_off + ed->j.h.size, "edit.undo", NULL);
    if (st) return st;
    /* Unpublished growth inside the room is cleared: the room must read as zeros for the next edit. */
    uint64_t hi = ed->data_off + ed->high < ed->reach_end ? ed->data_off + ed->high : ed->reach_end;
    if (hi > ed->data_off + ed->j.h.size) {
        mz_crashpoint("edit.clear_room");
        st = mz_io_zero(s, ed->data_off + ed->j.h.size, hi - ed->data_off - ed->j.h.size, "edit.clear_room");
        if (st) return st;
    }
    ed->high = ed->j.h.size;
    ed->dirty = 0;
    return journal_reset(s, ed, 0);
}

static int publish_journaled(struct mmzip_edit *ed, uint64_t size) {
    int st;
    mz_store *s = ed->s;
    const char *key = ed->key;
    size_t nlen = strlen(key);
    uint8_t *lh = NULL;
    if (!ed->dirty && size == ed->j.h.size) goto out;
    st = journal_fresh(s, ed);
    if (st) goto out;
    if (ed->data_off + size > ed->room_end) {
        st = grow_locked(s, ed, size);
        if (st) goto out;
    }
    uint32_t crc;
    st = edited_crc(s, ed, size, &crc);
    if (st) goto out;
    /* Room after the published size must read as zeros. Bytes written past both the committed and the new
     * size were never committed: they are cleared now, before the commit, with no journal. Committed bytes
     * that a shrink cuts off are not touched before the commit point; unless they are zeros already (the
     * HDF5 driver clears what it cuts), the entry keeps no room and they are dead bytes. */
    uint64_t reach = ed->reach_end - ed->data_off, room = reach > size ? reach - size : 0;
    {
        uint64_t lo = size > ed->j.h.size ? size : ed->j.h.size, hi = ed->high < reach ? ed->high : reach;
        if (hi > lo) {
            mz_crashpoint("edit.clear_room");
            st = mz_io_zero(s, ed->data_off + lo, hi - lo, "edit.clear_room");
            if (st) goto out;
        }
        const uint8_t *cut = s->map.base + ed->data_off;
        for (uint64_t i = size; room && i < ed->j.h.size; i++)
            if (cut[i]) room = 0;
    }
    /* The local header: its CRC and ZIP64 sizes change, where they are. Until the commit point the file holds
     * ed->lfh, or (a publish that failed after writing it) the journal does. */
    lh = malloc((size_t)ed->lfh_len);
    if (!lh) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    memcpy(lh, ed->lfh, (size_t)ed->lfh_len);
    if (!ed->lfh_saved) { /* the header as committed */
        st = mz_journal_save(s, &ed->j, ed->lfh_off, ed->lfh_len, lh);
        if (!st) st = mz_journal_sync(s, &ed->j, "edit.sync_journal_header");
        if (st) goto out;
        ed->lfh_saved = 1;
    }
    mz_put32(lh + 14, crc);
    mz_put64(lh + MZ_LFH_FIXED + nlen + 4, size);
    mz_put64(lh + MZ_LFH_FIXED + nlen + 12, size);
    st = mz_io_write(s, lh, (size_t)ed->lfh_len, ed->lfh_off, "edit.header");
    if (st) goto out;
    /* The directory record: a pending version of the entry at the same place replaces the committed one. */
    uint32_t head = mz_lookup_head(s, key, nlen);
    mz_entry ne;
    memset(&ne, 0, sizeof ne);
    ne.lfh_off = ed->lfh_off;
    ne.data_off = ed->data_off;
    ne.csize = ne.usize = size;
    ne.crc = crc;
    ne.limit = ed->data_off + size;
    /* What is left of the entry's room stays its room (growth past it, for the last entry, leaves none). */
    ne.room = room;
    ne.keeps_room = ne.room > 0;
    ne.cd_rec_len = (uint32_t)mz_our_cdh_size(nlen) + (ne.keeps_room ? MZ_ROOM_EXTRA : 0);
    ne.hash = mz_hash(key, nlen);
    ne.name_len = (uint16_t)nlen;
    mz_entry_set_name_head(&ne, key, nlen);
    ne.gp_flags = mz_name_flags(key, nlen);
    ne.state = MZ_PENDING;
    ne.alignment = 0;
    /* The local header keeps its time and attributes, and the record must agree with it: they are taken from
     * the committed record (an edit is a change of bytes, not a new entry). */
    mz_stamp stamp;
    if (head != MZ_NONE) mz_stamp_of_cdh(&stamp, s->cd + s->e[head].cd_rec);
    else mz_stamp_make(&stamp, key, nlen, MZ_STAMP_NOW, 0);
    st = mz_add_pending(s, &ne, key, head, 0, &stamp);
    if (st) goto out;
    /* Growth past the published size is not kept: for the last entry the directory goes right after it. */
    if (ed->last && s->pending_end == ed->room_end) {
        ed->room_end = ed->data_off + size > s->data_end ? ed->data_off + size : s->data_end;
        edit_sync(s);
        s->pending_end = ed->room_end;
    }
    s->bytes_since_commit += size;
    st = mz_commit_locked(s, 0);
    if (st) goto out;
    free(ed->lfh);
    ed->lfh = lh;
    lh = NULL;
    mz_crashpoint("edit.published");
    ed->j.h.size = size;
    ed->j.h.crc = crc;
    ed->high = size;
    ed->reach_end = ed->data_off + size + room;
    if (!ed->last && ed->room_end > ed->reach_end) ed->room_end = ed->reach_end;
    if (ed->last) ed->room_end = s->data_end > ed->data_off + size ? s->data_end : ed->data_off + size;
    edit_sync(s);
    ed->journal_stale = 1;
    st = journal_forget(s, ed);
out:
    free(lh);
    return st;
}

int mz_edit_end_locked(mz_store *s) {
    struct mmzip_edit *ed = s->edit;
    if (!ed) return MMZIP_OK;
    int st = undo_locked(s, ed);
    if (st) return st; /* the journal stays: the next writable open restores the entry */
    if (ed->last && s->pending_end == ed->room_end) {
        uint64_t x = s->data_end;
        for (uint32_t i = s->n_committed; i < s->n; i++) {
            mz_entry *e = &s->e[i];
            if (!(e->mark & MZ_MARK_DEAD) && e->data_off + e->csize > x) x = e->data_off + e->csize;
        }
        s->pending_end = x;
    }
    close(ed->j.fd);
    ed->j.fd = -1;
    st = mz_journal_remove(s, ed->j.path);
    s->edit = NULL;
    edit_sync(s);
    edit_free(s, ed);
    return st;
}


/* ---------------------------------------------------------------------------------------------------- */
/* Mapped edits                                                                                          */

/* The open mapped edit of key, or NULL. */
static struct mmzip_edit *mapped_edit_of(mz_store *s, const char *key) {
    for (uint32_t i = 0; i < s->n_views; i++) {
        struct mmzip_edit *d = edit_of(s->views[i]);
        if (d->v.open && strcmp(d->key, key) == 0) return d;
    }
    return NULL;
}

/* Replaces the marker file with the list of the mapped edits open now, plus `add` if not NULL; removes it if
 * the list is empty. s->wmu held. */
static int write_marks(mz_store *s, const mz_mark *add) {
    mz_mark *m = malloc((s->n_views + 1) * sizeof *m);
    if (!m) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n_views; i++) {
        struct mmzip_edit *d = edit_of(s->views[i]);
        if (d->v.open) m[n++] = (mz_mark){d->key, d->lfh_off, d->crc_before};
    }
    if (add) m[n++] = *add;
    int st = mz_marks_write(s, m, n);
    free(m);
    return st;
}

int mz_edit_maps_sync(mz_store *s) {
    pthread_mutex_lock(&s->wmu);
    int st = write_marks(s, NULL);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

/* Makes the edit read-only and queues its final refresh; the caller commits and drops the marker. */
static void end_mapped_locked(struct mmzip_edit *d) {
    mprotect(d->map, d->map_len, PROT_READ);
    d->v.open = 0;
    d->v.stale = 1;
}

void mz_edit_maps_end_all(mz_store *s) {
    pthread_mutex_lock(&s->wmu);
    for (uint32_t i = 0; i < s->n_views; i++)
        if (s->views[i]->open) end_mapped_locked(edit_of(s->views[i]));
    pthread_mutex_unlock(&s->wmu);
}

/* Everything pending goes out with the CRCs of the mapped edits (mmzip_commit without its handle). */
static int commit_all(mz_store *s) {
    pthread_mutex_lock(&s->wmu);
    int st = mz_commit_locked(s, 0);
    if (st == MMZIP_OK) s->batch = 0;
    pthread_mutex_unlock(&s->wmu);
    return st;
}

static int begin_mapped(mz_store *s, const char *key, struct mmzip_edit **out) {
    size_t klen = strlen(key);
    if (klen + MZ_EDIT_PREFIX_LEN > 65535 || strncmp(key, MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) == 0)
        return mz_fail(MMZIP_EINVAL, "%s: '%s' cannot be edited in place (invalid name, or a marker)", s->path, key);
    pthread_mutex_lock(&s->wmu);
    struct mmzip_edit *d = mapped_edit_of(s, key);
    if ((d && mz_committed_at(s, d->lfh_off, MZ_MARK_SHADOWED)) || (s->edit && strcmp(s->edit->key, key) == 0)) {
        pthread_mutex_unlock(&s->wmu);
        return mz_fail(MMZIP_EBUSY, "%s: '%s' is already being edited in place", s->path, key);
    }
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = mz_lookup(s, key, klen, 1);
    int st = MMZIP_OK;
    const uint8_t *p = NULL;
    uint64_t n = 0;
    if (!e) st = mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    else if (e->state != MZ_COMMITTED)
        st = mz_fail(MMZIP_EBUSY, "%s: '%s' is pending; commit it before editing it in place", s->path, key);
    else if (e->method != 0)
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: '%s' is compressed (method %u); only stored entries can be edited "
                     "in place", s->path, key, e->method);
    else if (e->gp_flags & MZ_FLAG_DATA_DESCRIPTOR)
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: '%s' has a data descriptor (its CRC follows the data); mmzip "
                     "edits in place only entries whose local header holds the CRC", s->path, key);
    else st = mz_entry_bytes(s, e, &p, &n);
    /* The commit recomputes the CRC over the bytes as they then are, which would make damage that was there
     * before the edit look valid: the bytes must match their CRC before they can be edited. */
    if (st == MMZIP_OK) st = mz_verify_stored_once(s, e);
    uint64_t lfh_off = e ? e->lfh_off : 0, data_off = e ? e->data_off : 0;
    uint32_t crc = e ? e->crc : 0;
    pthread_rwlock_unlock(&s->rw);
    pthread_mutex_unlock(&s->wmu);
    if (st) return st;

    /* What is pending goes out first (the contract); then the marker, before the view exists: from here on a
     * crash leaves something that says what happened. */
    st = commit_all(s);
    if (st) return st;

    pthread_mutex_lock(&s->wmu);
    mz_mark add = {key, lfh_off, crc};
    st = write_marks(s, &add);
    if (st) {
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
    uint64_t pg = mz_page_size, lo = data_off / pg * pg;
    size_t mlen = (size_t)((data_off + (n ? n : 1) + pg - 1) / pg * pg - lo);
    void *m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t)lo);
    if (m == MAP_FAILED) {
        pthread_mutex_unlock(&s->wmu);
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot map '%s' writable", s->path, key);
    }
    /* A new record; an earlier one of this key (of a version since replaced) keeps its mapping, read-only,
     * since pointers into it may live. */
    mz_view **g = realloc(s->views, (s->n_views + 1) * sizeof *g);
    if (g) s->views = g;
    d = calloc(1, sizeof *d);
    char *kc = strdup(key);
    if (!g || !d || !kc) {
        free(kc);
        free(d);
        munmap(m, mlen);
        pthread_mutex_unlock(&s->wmu);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    for (uint32_t i = 0; i < s->n_views; i++)
        if (s->views[i]->open && strcmp(edit_of(s->views[i])->key, key) == 0) end_mapped_locked(edit_of(s->views[i]));
    s->views[s->n_views++] = &d->v;
    d->s = s;
    d->key = kc;
    d->mapped = 1;
    d->j.fd = -1;
    d->lfh_off = d->v.lfh_off = lfh_off;
    d->data_off = data_off;
    d->crc_before = crc;
    d->v.len = n;
    d->map = m;
    d->map_len = mlen;
    d->v.view = (uint8_t *)m + (data_off - lo);
    d->v.open = 1;
    *out = d;
    pthread_mutex_unlock(&s->wmu);
    return MMZIP_OK;
}

void mz_edit_maps_free(mz_store *s) {
    for (uint32_t i = 0; i < s->n_views; i++) {
        struct mmzip_edit *d = edit_of(s->views[i]);
        if (d->map) munmap(d->map, d->map_len);
        free(d->key);
        free(d);
    }
    free(s->views);
    s->views = NULL;
    s->n_views = 0;
}

uint64_t mz_edits_open(const mz_store *s) {
    uint64_t n = s->edit != NULL;
    for (uint32_t i = 0; i < s->n_views; i++) n += s->views[i]->open != 0;
    return n;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The API                                                                                               */

int mmzip_edit_begin(mmzip_t *h, const char *key, unsigned flags, mmzip_edit_t **out) {
    int st = check_editor(h, key, "mmzip_edit_begin");
    if (!st) st = mz_shared_refuse(h->s, "mmzip_edit_begin"); /* both kinds keep state across transactions */
    if (st) return st;
    if (!out) return mz_fail(MMZIP_EINVAL, "mmzip_edit_begin: NULL out");
    *out = NULL;
    if (flags & ~(unsigned)MMZIP_EDIT_MAP) return mz_fail(MMZIP_EINVAL, "mmzip_edit_begin: unknown flag %#x", flags);
    if (!mz_name_ok(key, strlen(key)))
        return mz_fail(MMZIP_EINVAL, "%s: '%s' cannot be edited in place (invalid name)", h->s->path, key);
    return (flags & MMZIP_EDIT_MAP) ? begin_mapped(h->s, key, out) : begin_journaled(h->s, key, out);
}

int mmzip_edit_map(mmzip_edit_t *edit, void **view, uint64_t *size, uint64_t *room) {
    int st;
    struct mmzip_edit *ed = lock_edit(edit, -1, "mmzip_edit_map", &st);
    if (!ed) return st;
    mz_store *s = ed->s;
    if (ed->mapped) {
        if (view) *view = ed->v.view;
        if (size) *size = ed->v.len;
        if (room) *room = ed->v.len;
    } else {
        if (view) *view = (void *)(s->map.base + ed->data_off);
        if (size) *size = ed->j.h.size;
        if (room) *room = ed->last ? UINT64_MAX : ed->room_end - ed->data_off;
    }
    pthread_mutex_unlock(&s->wmu);
    return MMZIP_OK;
}

int mmzip_edit_publish(mmzip_edit_t *edit, uint64_t size) {
    int st;
    struct mmzip_edit *ed = lock_edit(edit, -1, "mmzip_edit_publish", &st);
    if (!ed) return st;
    mz_store *s = ed->s;
    if (!ed->mapped) {
        st = publish_journaled(ed, size);
    } else if (size != ed->v.len) {
        st = mz_fail(MMZIP_EINVAL, "%s: '%s' is edited through a view of %llu bytes, which cannot change size "
                     "(%llu asked)", s->path, ed->key, (unsigned long long)ed->v.len, (unsigned long long)size);
    } else {
        st = mz_commit_locked(s, 0); /* refreshes the CRC of every open view (commit.c: mz_views_refresh_locked) */
    }
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_edit_end(mmzip_edit_t *edit) {
    int st;
    struct mmzip_edit *ed = lock_edit(edit, -1, "mmzip_edit_end", &st);
    if (!ed) return st;
    mz_store *s = ed->s;
    if (!ed->mapped) {
        st = mz_edit_end_locked(s);
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
    end_mapped_locked(ed);
    pthread_mutex_unlock(&s->wmu);
    st = commit_all(s); /* the last CRC; only then may the marker go */
    if (!st) st = mz_edit_maps_sync(s);
    return st;
}

void mz_edit_free(mz_store *s) {
    edit_free(s, s->edit);
    s->edit = NULL;
    edit_sync(s);
    mz_edit_maps_free(s);
}

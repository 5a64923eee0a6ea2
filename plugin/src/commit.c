/*
 * commit.c - the commit protocol (docs/protocol.md is its specification and proof).
 *
 * At rest an archive is exactly [entries][central directory][trailer]. New entries must go where the
 * directory is, so before anything is written there the committed directory is *relocated* past the end of
 * the file, in three steps that each leave a complete, valid trailer as the last bytes of the file:
 *
 *   R1  forward trailer: one write, within one page, of a trailer placed at the new end of the file that
 *       points back at the directory where it is. The file grows and its last bytes are a trailer at every
 *       instant (a write within one page is never torn by SIGKILL).
 *   R2  copy: the directory is copied into the gap just before that trailer (bytes nobody refers to).
 *   R3  switch: the trailer is rewritten in place to point at the copy.
 *
 * Now the old directory is dead space and the entries, the new directory and the new trailer are written
 * into it (bytes nobody refers to). The commit point is one ftruncate that cuts the file just after the
 * new trailer: the relocated directory falls off the end, the new trailer becomes the last bytes. Readers
 * in other processes hold a shared lock while they read a trailer and directory; the writer holds it
 * exclusively only during R1-R3 and the truncate.
 *
 * Durable mode inserts the barriers: fdatasync after R2, after R3, after the new directory is written, and
 * fsync after the truncate.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MZ_MIN_GAP (64u << 10)

/* Trailer position at or after `at` such that it is 8-byte aligned and does not cross a page boundary. */
static uint64_t trailer_slot(uint64_t at, uint64_t tlen) {
    uint64_t pg = mz_page_size ? mz_page_size : 4096;
    uint64_t t = (at + 7) & ~(uint64_t)7;
    if (tlen <= pg && (t % pg) + tlen > pg) t = (t / pg + 1) * pg;
    return t;
}

int mz_ensure_room(mz_store *s, uint64_t end) {
    if (end <= s->free_limit) return MMZIP_OK;
    /* Leave a gap that grows with the batch, so that a long batch relocates the directory only
     * logarithmically often. The gap is a hole: it costs no disk and is cut off at commit. */
    uint64_t used = end - s->data_end;
    uint64_t gap = used > MZ_MIN_GAP ? used : MZ_MIN_GAP;
    uint64_t bmin = end + gap;
    if (bmin < s->file_size) bmin = s->file_size;
    uint64_t tlen = mz_trailer_len(s->comment_len); /* relocations always write ZIP64 end records */
    uint64_t cdl = s->cd_committed_len;
    uint64_t t0 = trailer_slot(bmin + cdl, tlen);
    uint64_t b = t0 - cdl, s1 = t0 + tlen;
    if (s1 > s->map.reserved) {
        /* Retry without the slack before giving up. */
        bmin = end > s->file_size ? end : s->file_size;
        t0 = trailer_slot(bmin + cdl, tlen);
        b = t0 - cdl;
        s1 = t0 + tlen;
        if (s1 > s->map.reserved)
            return mz_fail(MMZIP_ETOOBIG, "%s: the archive would grow to %llu bytes, past max_file_size (%llu); "
                           "reopen with a larger max_file_size", s->path, (unsigned long long)s1,
                           (unsigned long long)s->map.reserved);
    }
    uint8_t *tr = malloc(tlen);
    if (!tr) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint64_t old_size = s->file_size;
    int st;
    mz_lock_commit(s->fd, 1);
    /* R1: forward trailer at the new end, pointing at the directory where it lies now. */
    mz_write_trailer(tr, s->n_committed, s->cd_size, s->cd_pos, t0, s->comment, s->comment_len);
    st = mz_io_write(s, tr, tlen, t0, "relocate.forward_trailer");
    if (st) goto out;
    s->file_size = s1;
    /* R2: the copy of the directory. */
    st = mz_io_write(s, s->cd, cdl, b, "relocate.directory_copy");
    if (st) goto out;
    st = mz_io_barrier(s, 0, "relocate.sync_copy");
    if (st) goto out;
    /* R3: switch the trailer to the copy. */
    mz_write_trailer(tr, s->n_committed, cdl, b, t0, s->comment, s->comment_len);
    st = mz_io_write(s, tr, tlen, t0, "relocate.switch");
    if (st) goto out;
    st = mz_io_barrier(s, 0, "relocate.sync_switch");
    if (st) goto out;
    s->cd_pos = b;
    s->cd_size = cdl;
    s->free_limit = b;
    s->zero_from = old_size > s->pending_end ? old_size : s->pending_end;
    s->compact = 0;
    st = mz_map_cover(&s->map, s->fd, s->file_size, s->path);
out:
    mz_unlock_commit(s->fd);
    free(tr);
    return st;
}

/* Builds the directory image of the next commit: surviving committed records, then live pending ones. */
static int build_image(mz_store *s, uint8_t **img_out, uint64_t *len_out, uint32_t *count_out) {
    if (s->n_shadowed == 0 && s->n_dead == 0 && s->open_reservations == 0) {
        *img_out = NULL; /* the store's image is the new directory as it stands */
        *len_out = s->cd_len;
        *count_out = s->n;
        return MMZIP_OK;
    }
    uint8_t *img = malloc(s->cd_len ? s->cd_len : 1);
    if (!img) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint64_t o = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        mz_entry *e = &s->e[i];
        if (e->state == MZ_COMMITTED ? (e->mark & MZ_MARK_SHADOWED) : (e->mark & (MZ_MARK_DEAD | MZ_MARK_RESERVED)))
            continue;
        memcpy(img + o, s->cd + e->cd_rec, e->cd_rec_len);
        o += e->cd_rec_len;
        k++;
    }
    *img_out = img;
    *len_out = o;
    *count_out = k;
    return MMZIP_OK;
}

/* After the commit point: pending entries become committed, dropped ones vanish, and reservations that are
 * still being filled stay pending, behind the committed entries (their records behind the new directory). */
static int settle_table(mz_store *s, uint8_t *img, uint64_t img_len) {
    pthread_rwlock_wrlock(&s->rw);
    if (!img) {
        for (uint32_t i = s->n_committed; i < s->n; i++) {
            s->e[i].state = MZ_COMMITTED;
            s->e[i].replaces = MZ_NONE;
        }
        s->n_committed = s->n;
        s->cd_committed_len = s->cd_len;
        s->n_pending_live = s->n_shadowed = s->n_dead = 0;
        s->sorted_valid = 0;
        pthread_rwlock_unlock(&s->rw);
        return MMZIP_OK;
    }
    /* Save the open reservations (entries and records) before the table is compacted in place. */
    uint32_t nres = s->open_reservations, r = 0;
    mz_entry *held = NULL;
    uint32_t *moved = NULL; /* old index -> new index, to keep the reservations' `replaces` pointing right */
    uint64_t held_len = 0;
    if (nres) {
        held = malloc((size_t)nres * sizeof *held);
        moved = malloc((size_t)s->n * sizeof *moved);
        for (uint32_t i = s->n_committed; i < s->n; i++)
            if (s->e[i].mark & MZ_MARK_RESERVED) held_len += s->e[i].cd_rec_len;
        uint8_t *grown = realloc(img, img_len + held_len + 1);
        if (!held || !moved || !grown) {
            free(held);
            free(moved);
            free(grown ? grown : img);
            pthread_rwlock_unlock(&s->rw);
            return mz_fail(MMZIP_ENOMEM, "%s: out of memory after a commit", s->path);
        }
        img = grown;
        uint64_t o = img_len;
        for (uint32_t i = s->n_committed; i < s->n && r < nres; i++) {
            if (!(s->e[i].mark & MZ_MARK_RESERVED)) continue;
            held[r] = s->e[i];
            memcpy(img + o, s->cd + s->e[i].cd_rec, s->e[i].cd_rec_len);
            held[r].cd_rec = o;
            o += s->e[i].cd_rec_len;
            r++;
        }
    }
    uint32_t k = 0;
    uint64_t o = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        mz_entry e = s->e[i];
        if (moved) moved[i] = MZ_NONE;
        if (e.state == MZ_COMMITTED ? (e.mark & MZ_MARK_SHADOWED) : (e.mark & (MZ_MARK_DEAD | MZ_MARK_RESERVED)))
            continue;
        if (moved) moved[i] = k;
        e.cd_rec = o;
        o += e.cd_rec_len;
        e.state = MZ_COMMITTED;
        e.mark &= (uint8_t)~(MZ_MARK_SHADOWED | MZ_MARK_DEAD);
        e.replaces = MZ_NONE;
        s->e[k++] = e;
    }
    s->n_committed = k;
    for (uint32_t j = 0; j < r; j++) {
        if (held[j].replaces != MZ_NONE) held[j].replaces = moved[held[j].replaces];
        s->e[k++] = held[j];
    }
    s->n = k;
    free(held);
    free(moved);
    free(s->cd);
    s->cd = img;
    s->cd_committed_len = img_len;
    s->cd_len = img_len + held_len;
    s->cd_cap = img_len + held_len + 1;
    s->n_pending_live = s->n_shadowed = s->n_dead = 0;
    int st = mz_table_rebuild(s);
    s->sorted_valid = 0;
    pthread_rwlock_unlock(&s->rw);
    return st;
}

/*
 * When entries at the very start of the archive have been replaced or removed, their local headers stay there
 * as dead bytes. 7-Zip takes everything before the first live entry for a self-extractor stub, parses the
 * local headers it finds in it, and reports "Headers Error". Clearing the signatures of those dead headers
 * makes the stub opaque to it. Readers of an older snapshot that still lists such an entry keep working:
 * mmzip accepts a cleared signature when the name still matches (read.c); a Python zipfile opened before
 * the commit fails on that one superseded entry. Dead headers after the first live entry are left alone.
 */
int mz_neutralize_dead_start(mz_store *s) {
    uint64_t first_live = s->cd_pos;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->e[i].lfh_off < first_live) first_live = s->e[i].lfh_off;
    uint64_t pos = s->neutralized_to > s->prefix ? s->neutralized_to : s->prefix;
    while (pos + MZ_LFH_FIXED <= first_live) {
        const uint8_t *h = s->map.base + pos;
        if (!mz_lfh_sig_or_cleared(h)) break;
        uint32_t sig = mz_get32(h);
        uint16_t nlen = mz_get16(h + 26), xlen = mz_get16(h + 28), flags = mz_get16(h + 6);
        if (nlen == 0 || (flags & MZ_FLAG_DATA_DESCRIPTOR) || pos + MZ_LFH_FIXED + nlen + xlen > first_live) break;
        uint64_t csize = mz_get32(h + 18);
        const uint8_t *x = h + MZ_LFH_FIXED + nlen;
        for (uint32_t k = 0; csize == 0xFFFFFFFFu && k + 4 <= xlen;) {
            uint16_t id = mz_get16(x + k), len = mz_get16(x + k + 2);
            if (id == MZ_EXTRA_ZIP64 && len >= 16) csize = mz_get64(x + k + 12);
            k += 4u + len;
        }
        uint64_t next = pos + MZ_LFH_FIXED + nlen + xlen + csize;
        if (next > first_live || next <= pos) break;
        if (sig != 0) {
            static const uint8_t zero[4];
            int st = mz_io_write(s, zero, 4, pos, "commit.neutralize_dead_start");
            if (st) return st;
        }
        pos = next;
        s->neutralized_to = pos;
    }
    return MMZIP_OK;
}

int mz_commit_locked(mz_store *s, int force_compact) {
    int changes = s->n_pending_live || s->n_shadowed || s->n_dead;
    if (!changes && (s->compact || !force_compact)) {
        s->pending_end = s->data_end > mz_edit_floor(s) ? s->data_end : mz_edit_floor(s);
        return MMZIP_OK;
    }
    uint8_t *img = NULL;
    uint64_t img_len = 0;
    uint32_t count = 0;
    int st = build_image(s, &img, &img_len, &count);
    if (st) return st;
    st = mz_flush_writes(s); /* entries before any directory that names them */
    if (st) goto fail;
    const uint8_t *dir = img ? img : s->cd;
    /* Dead pending entries at the end of the pending region (dropped reservations, removals) are cut off:
     * the directory goes right after the last live byte. */
    uint64_t x = s->data_end; /* and past open reservations: their space is kept for them */
    for (uint32_t i = s->n_committed; i < s->n; i++) {
        mz_entry *e = &s->e[i];
        if (!(e->mark & MZ_MARK_DEAD) && e->data_off + e->csize > x) x = e->data_off + e->csize;
    }
    if (x < mz_edit_floor(s)) x = mz_edit_floor(s); /* an entry edited in place is growing there */
    s->pending_end = x;
    uint64_t tlen = mz_end_len(count, s->comment_len);
    uint64_t eof1 = x + img_len + tlen;
    st = mz_ensure_room(s, eof1);
    if (st) goto fail;
    uint8_t *buf = malloc(img_len + tlen);
    if (!buf) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory for a %llu-byte directory", s->path,
                     (unsigned long long)img_len);
        goto fail;
    }
    memcpy(buf, dir, img_len);
    mz_write_end(buf + img_len, count, img_len, x, s->comment, s->comment_len);
    st = mz_io_write(s, buf, img_len + tlen, x, "commit.directory");
    free(buf);
    if (st) goto fail;
    st = mz_io_barrier(s, 0, "commit.sync_directory");
    if (st) goto fail;
    /* The commit point. */
    mz_lock_commit(s->fd, 1);
    st = mz_io_truncate(s, eof1, "commit.truncate");
    mz_unlock_commit(s->fd);
    if (st) goto fail;
    st = mz_io_barrier(s, 1, "commit.sync_truncate");
    s->file_size = eof1;
    s->trailer_len = tlen;
    s->zip64 = count > 0;
    s->cd_pos = x;
    s->cd_size = img_len;
    s->data_end = s->pending_end = s->free_limit = s->zero_from = x;
    s->compact = 1;
    s->bytes_since_commit = 0;
    {
        int st2 = settle_table(s, img, img_len);
        if (!st) st = st2;
        st2 = mz_neutralize_dead_start(s);
        if (!st) st = st2;
    }
    if (s->unpublished) {
        int st2 = mz_publish(s);
        if (!st) st = st2;
    }
    return st;
fail:
    free(img);
    return st;
}

int mz_write_empty(mz_store *s) {
    uint8_t tr[MZ_TRAILER_FIXED + 65535];
    size_t tlen = mz_write_end(tr, 0, 0, 0, s->comment, s->comment_len);
    int st = mz_io_write(s, tr, tlen, 0, "create.trailer");
    if (st) return st;
    st = mz_io_barrier(s, 1, "create.sync");
    if (st) return st;
    s->file_size = tlen;
    s->trailer_len = tlen;
    s->cd_pos = s->cd_size = 0;
    s->data_end = s->pending_end = s->free_limit = s->zero_from = 0;
    s->compact = 1;
    s->zip64 = 0;
    return mz_map_cover(&s->map, s->fd, s->file_size, s->path);
}

/* Gives a file created with MMZIP_PUBLISH_ON_COMMIT its name, atomically, at its first commit. */
int mz_publish(mz_store *s) {
    mz_crashpoint("publish.link");
    if (s->tmp_is_named) {
        if (!s->publish_replace) {
            /* link() fails if the name exists, where rename() would silently replace someone else's archive. */
            if (link(s->tmp_path, s->path) != 0) {
                int err = errno;
                unlink(s->tmp_path);
                if (err == EEXIST)
                    return mz_fail(MMZIP_EEXIST, "%s: another process created this archive meanwhile", s->path);
                return mz_fail_errno(MMZIP_EIO, err, "%s: cannot give the new archive its name", s->path);
            }
            unlink(s->tmp_path);
        } else if (rename(s->tmp_path, s->path) != 0) {
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot move the new archive into place", s->path);
        }
    } else {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", s->fd);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, s->path, AT_SYMLINK_FOLLOW) != 0) {
            if (errno != EEXIST)
                return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot give the new archive its name", s->path);
            if (!s->publish_replace)
                return mz_fail(MMZIP_EEXIST, "%s: another process created this archive meanwhile", s->path);
            /* Replacing an existing archive ("w"): link under a temporary name, then rename over it. */
            char tmp[PATH_MAX];
            snprintf(tmp, sizeof tmp, "%s.mmzip-publish-%ld", s->path, (long)getpid());
            unlink(tmp);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0)
                return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot give the new archive its name", s->path);
            if (rename(tmp, s->path) != 0) {
                int err = errno;
                unlink(tmp);
                return mz_fail_errno(MMZIP_EIO, err, "%s: cannot move the new archive into place", s->path);
            }
        }
    }
    if ((s->opts.flags & MMZIP_DURABLE) && mz_fsync_dir_of(s->path) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory entry", s->path);
    s->unpublished = 0;
    free(s->tmp_path);
    s->tmp_path = NULL;
    if (s->old_fd >= 0) {
        close(s->old_fd); /* releases the lock held on the archive we replaced */
        s->old_fd = -1;
    }
    return MMZIP_OK;
}

/*
 * commit.c - the commit protocol (docs/protocol.md is its specification and proof).
 *
 * The file is always [entries][slack][central directory][end records]: the end records right after the
 * directory they describe, as the last bytes of the file, so that every ZIP reader (Python's zipfile
 * insists on it) can read every state a writer leaves, not only the committed ones. The slack is free
 * space (a hole) between the last entry and the directory; new entries go at its bottom.
 *
 * A commit writes the new directory and end records at the *top* of the slack, ending exactly where the
 * published directory begins, so that no byte a reader may still be reading is touched, then cuts the file
 * there with one ftruncate (the commit point): the published directory falls off the end, the new end
 * records become the last bytes. The slack shrinks by what the commit wrote.
 *
 * When the slack is too small, the directory is *relocated*: a complete copy of the directory followed by
 * end records that point at it is written past the end of the file with one write. Until that write ends,
 * the old end records and directory stay intact below; then the copy is the valid end of the file. The relocation leaves slack for MZ_SLACK_COMMITS commits of
 * the current directory size, so that it is rare: it is the one step during which a third-party reader that
 * looks only at the end of the file can find no end records there (docs/protocol.md §3.5).
 *
 * Readers in other processes that follow mmzip's rules hold a shared lock while they read end records and
 * directory; the writer holds it exclusively during a relocation and at the commit point. Durable mode
 * inserts the barriers: fdatasync after the relocation's copy, after the new directory is written, and
 * fsync after the truncate.
 *
 * A commit also publishes the CRC of every entry being edited through a writable view (edit.c's mapped edits,
 * listed in mz_store.views), recomputed over its bytes as they are: each commit publishes bytes and a CRC that
 * agree. That is done here, where the directory is written, rather than by a call up into edit.c.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MZ_MIN_GAP (64u << 10)
/* The close of a writer that appended keeps room for this many more sessions that write as much (within 1 %
 * of the file): the first commit of each would otherwise relocate the directory (docs/protocol.md §3.6). */
#define MZ_KEEP_SESSIONS 16u
/* A relocation leaves room for this many commits of the current directory: it is the protocol's only
 * window for third-party readers, and each commit consumes about one directory's size of slack. */
#define MZ_SLACK_COMMITS 32u

/* End records that lie within one 512-byte sector can be rewritten in place (the commit point of §3.3 of
 * docs/protocol.md): neither SIGKILL nor a power loss tears a write that does not cross a sector. */
#define MZ_SECTOR 512u
static int in_one_sector(uint64_t pos, uint64_t len) { return len <= MZ_SECTOR && pos % MZ_SECTOR + len <= MZ_SECTOR; }

/* The highest end of end records of length tlen at or below `end` that keeps them within one sector. */
static uint64_t sector_end_below(uint64_t end, uint64_t tlen) {
    if (tlen > MZ_SECTOR || in_one_sector(end - tlen, tlen)) return end;
    return end / MZ_SECTOR * MZ_SECTOR;
}

/* The largest block a relocation writes as one: Linux's page cache holds a file's bytes in folios of up to
 * 2 MiB (PMD order on x86-64) where the file system supports large folios (ext4 since Linux 6.16, XFS), and a
 * write that fills one naturally aligned folio past the end of the file copies it whole before the size
 * moves, once. Larger directories are written as one block anyway, and the file grows by parts. */
#define MZ_TAIL_BLOCK_MAX ((uint64_t)2 << 20)

/* The power-of-two block, of at least 4 KiB, that a relocation's copy and end records of len bytes end. */
static uint64_t tail_block(uint64_t len) {
    uint64_t p = 4096;
    while (p < len) p <<= 1;
    return p;
}

/*
 * Where a relocation writes the directory's copy and its end records (len bytes, to end the file): ideally
 * as the end of one naturally aligned power-of-two block of at least 4 KiB, zeros first, that lies wholly
 * past the current end of the file (size), at or above `end`, and puts the copy at least `gap` above `end`.
 * Third-party readers take the file's size, then read its tail: a write past the end of the file that the
 * kernel commits as one folio moves the size once, from the old complete tail to the new complete one
 * (measured on ext4, Linux 6.18: 0 intermediate sizes in 500 writes of each power of two from 4 KiB to
 * 2 MiB, against one in four unaligned writes), where a write of several pages shows every page's size in
 * turn, and a tail without end records, for as long as the writer is descheduled between two pages. Where
 * the kernel uses no large folios, the block grows the file page by page as any write does. The zeros
 * before the copy are slack, which the next commit's cleanup punches back into a hole.
 * Sets *w0 and *wlen, the block (for a directory too large for one block, just its copy and end records).
 */
static void place_tail(uint64_t size, uint64_t end, uint64_t gap, uint64_t cdl, uint64_t tlen, uint64_t *w0,
                       uint64_t *wlen) {
    uint64_t len = cdl + tlen, p = tail_block(len);
    if (p > MZ_TAIL_BLOCK_MAX) {
        uint64_t b = end + gap > size ? end + gap : size;
        /* The end records within one sector, so that the commits that follow can rewrite them in place. */
        if (!in_one_sector(b + cdl, tlen) && tlen <= MZ_SECTOR) b = ((b + cdl) / MZ_SECTOR + 1) * MZ_SECTOR - cdl;
        *w0 = b;
        *wlen = len;
        return;
    }
    uint64_t low = end > size ? end : size;
    if (end + gap > low + (p - len)) low = end + gap - (p - len); /* the copy starts p - len into the block */
    *w0 = (low + p - 1) / p * p;
    *wlen = p; /* ends on a multiple of 4096: end records of up to 512 bytes lie within its last sector */
}

/*
 * The relocation's block, zeroed in memory whose every page has been written. calloc returns a large block as
 * fresh anonymous memory that the kernel maps only when touched, and Linux (6.15 on) copies a write's source
 * into the page cache without faulting it in first: the first copy of the block then comes up empty, ext4's
 * write_end moves the file's size to the *start* of the write (the bytes copied: none), and the retry copies
 * the block in halves, moving the size each time. For the whole retry the file ends in zeros, with no end
 * records, even where the block is one large folio (measured: growth_probe's third column; the readers
 * benchmark saw files without a tail for 2-7 ms). explicit_bzero writes every byte, and cannot be turned back
 * into a calloc by the compiler.
 */
static uint8_t *relocation_buffer(size_t len) {
    uint8_t *buf = malloc(len);
    if (buf) explicit_bzero(buf, len);
    return buf;
}

/* The bytes kept tails may hold (kept_tail.c) in a file of `size` bytes: half of 1 % of it (without the 64 KiB
 * floor of the allowance, so that a small archive at rest stays its data to the byte). What they hold is free
 * space that only puts that fit in it use again, and it takes the slack's share of the allowance: the budget
 * caps both, and mz_kept_tail_allowed keeps no tail where the archive's entries would not fit in it. */
static uint64_t kept_budget(uint64_t size) { return size / 200; }

/* A put that a relocation lets keep the old tail (mz_ensure_room_for_put). */
typedef struct put_move {
    uint64_t lfh_off;    /* where the put's entry would start; where it starts */
    uint64_t need_moved; /* the room its commit needs if it starts past the old end of the file */
    uint64_t from, to;   /* the range it skips, once moved */
} put_move;

static int ensure_room(mz_store *s, uint64_t end, put_move *m);

int mz_ensure_room(mz_store *s, uint64_t end) { return ensure_room(s, end, NULL); }

int mz_ensure_room_for_put(mz_store *s, uint64_t lfh_off, uint64_t need, uint64_t need_moved, uint64_t *lfh_out,
                           uint64_t *kept_from, uint64_t *kept_to) {
    put_move m = {lfh_off, need_moved, 0, 0};
    int st = ensure_room(s, need, &m);
    *lfh_out = st ? lfh_off : m.lfh_off;
    *kept_from = m.from;
    *kept_to = m.to;
    return st;
}

static int ensure_room(mz_store *s, uint64_t end, put_move *m) {
    if (end <= s->free_limit) return MMZIP_OK;
    uint64_t tlen = mz_trailer_len(s->comment_len); /* relocations always write ZIP64 end records */
    uint64_t cdl = s->cd_committed_len;
    /* The slack grows with the batch (a long batch relocates only logarithmically often) and with the
     * directory (commits one by one relocate once every MZ_SLACK_COMMITS commits). It is a hole: it costs no
     * disk, and the commits fill it from both ends. */
    uint64_t used = end - s->data_end;
    uint64_t gap = (uint64_t)MZ_SLACK_COMMITS * (cdl + tlen);
    if (gap < used) gap = used;
    if (gap < MZ_MIN_GAP) gap = MZ_MIN_GAP;
    if (gap < s->file_size / 4) gap = s->file_size / 4; /* relocations logarithmic in the file's growth */
    uint64_t len = cdl + tlen, b, s1, w0, wlen;
    /* A put's entry goes past the old end of the file, so that the directory and end records the relocation
     * leaves below stay as they are for the readers reading them (kept_tail.c, §3.7). */
    uint64_t block = tail_block(len), old_cd = s->cd_pos, old_size = s->file_size, kept = 0;
    int keep_tail = m && mz_kept_tail_allowed(s, m->lfh_off, kept_budget(end + len), &kept);
    if (keep_tail) kept += mz_page_up(old_size) - m->lfh_off;
    /* A session's first relocation leaves only the slack its close would keep (§3.6), so that the close has
     * nothing to cut: a session of a few puts then changes the file's size once, not twice (a relocation
     * that grows it by a quarter, then a close that trims it back), and each size change fails the polls of
     * third-party readers in flight. A session that goes on writing does the same at its later relocations
     * where the file is large beside what it moves: the tail is kept (a growth fails no reader that reads
     * below the size it took, a truncate fails every libzip poll in flight, 130 ms each on a 1 GiB archive),
     * the slack holds as much again as this put, and the directory copied is at most a quarter of it (a
     * relocation per 1 % of growth, about 70 per doubling, each copying the directory: on archives whose
     * directory is a larger share of the data this would write more than the trim saves). After a relocation
     * that kept its tail, the next stays on the small gap also where the gap would not hold its put again (a
     * large batch) or where it cannot keep the tail itself but the kept-tail budget would hold its put (the
     * budget spent for the moment by the directories held, §3.7): sent to the full gap, such a relocation
     * left a slack that the close had to trim (on a 1 GiB archive 11 of 12 sessions in batches of 10 did, and
     * 2 of 12 committing every put: interop_session_slack). Otherwise it relocates with the full gap,
     * logarithmically often, and its close trims. The kept tail counts against the same allowance as the
     * slack. */
    int first = !s->relocated;
    if (!s->created && !s->shared && block <= MZ_TAIL_BLOCK_MAX) {
        /* end already counts a whole directory above the entry (room_for), and the copy lands up to one block
         * higher (place_tail): the slack the close finds is at most gap + len + block. The close keeps 16 times
         * the bytes this store added, its entries without that directory. */
        uint64_t size_after = end + len;
        uint64_t allow = mz_at_rest_allowance(size_after);
        uint64_t keep = mz_at_rest_keep(size_after, s->session_added + (used > len ? used - len : 0));
        uint64_t room = allow > kept + 2 * len + block ? allow - kept - 2 * len - block : 0; /* kept: §3.7 */
        if (keep > room) keep = room;
        /* Kept tails took the slack's share: still a page, rather than the full gap that the close would cut. */
        if (keep_tail && keep < 4096) keep = 4096;
        /* A small append (keep 0: less than 4 KiB would be kept) leaves the file its data to the byte: it
         * relocates as before and its close compacts the file. */
        int later_ok = keep >= 4 * len &&
                       (s->kept_to[0] ? keep_tail || kept_budget(size_after) >= used : keep_tail && keep >= used);
        if (keep >= 4096 && keep < gap && (first || later_ok)) gap = keep;
    }
    if (keep_tail) end = m->need_moved;
    place_tail(s->file_size, end, gap, cdl, tlen, &w0, &wlen);
    if (w0 + wlen > s->map.reserved) {
        /* Retry without the slack, then unaligned, before giving up. */
        place_tail(s->file_size, end, 0, cdl, tlen, &w0, &wlen);
        if (w0 + wlen > s->map.reserved) {
            w0 = end > s->file_size ? end : s->file_size;
            wlen = len;
        }
        if (w0 + wlen > s->map.reserved)
            return mz_fail(MMZIP_ETOOBIG, "%s: the archive would grow to %llu bytes, past max_file_size (%llu); "
                           "reopen with a larger max_file_size", s->path, (unsigned long long)(w0 + wlen),
                           (unsigned long long)s->map.reserved);
    }
    s1 = w0 + wlen;
    b = s1 - len;
    mz_kept_prune(s); /* before the copy: it carries the records that say which ranges are spent */
    uint8_t *buf = relocation_buffer((size_t)wlen);
    if (!buf) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    if (cdl) memcpy(buf + (b - w0), s->cd, cdl); /* an empty archive has no directory bytes (s->cd may be NULL) */
    mz_write_trailer(buf + (b - w0) + cdl, s->n_committed, cdl, b, b + cdl, s->comment, s->comment_len);
    int st;
    /* The slack this relocation frees below a kept tail may be the directory a relocation less than 20 ms
     * before left without keeping it: wait for its readers (reader_grace.c) now, not under the commit lock,
     * which mmzip's own readers take to load a commit. */
    if (keep_tail) mz_io_grace(s, m->lfh_off, old_cd - m->lfh_off);
    mz_lock_commit(s->fd, 1);
    /* The copy and its end records, in one write past the end of the file (the gap before it becomes a
     * hole), one aligned block (place_tail): the old end records and directory stay intact below, and the
     * file's tail is incomplete, if at all, for the duration of this one system call only - an ftruncate
     * first would expose zeros until the write, and a writer can be preempted in between. */
    st = mz_io_write(s, buf, (size_t)wlen, w0, "relocate.directory_copy");
    if (st) goto out;
    s->file_size = s1;
    /* Durable: the copy, its end records and the new size are on disk before any write reaches the old
     * directory, which is free space from now on. */
    st = mz_io_barrier(s, 0, "relocate.sync_copy");
    if (st) goto out;
    /* The zeros before the copy were written only to fill the block: their disk blocks go back (a hole
     * reads as the same zeros; the size does not change). */
    if (b / 4096 * 4096 > w0) {
        st = mz_io_zero(s, w0, b / 4096 * 4096 - w0, "relocate.clear_pad");
        if (st) goto out;
    }
    s->cd_pos = b;
    s->cd_size = cdl;
    s->trailer_len = tlen;
    s->zip64 = 1;
    s->free_limit = b;
    s->relocated = 1;
    s->zero_from = old_size > s->pending_end ? old_size : s->pending_end;
    s->compact = s->clean = s->slack_hole = 0; /* the old directory lies in the slack now */
    s->end_follows_cd = 1;
    st = mz_map_cover(&s->map, s->fd, s->file_size, s->path);
    /* The directories kept by relocations before the last two go back to free space (mz_kept_held). */
    mz_kept_free_forget(s);
    memmove(s->kept_to + 1, s->kept_to, sizeof s->kept_to - sizeof s->kept_to[0]);
    s->kept_to[0] = 0;
    if (!st) st = mz_release_kept_tails(s);
    /* Not kept: the next write there waits for the readers that found those end records (reader_grace.c).
     * Shared writers are other processes that have the file open: they would wait at every relocation. */
    if (!st && !keep_tail && !s->shared) mz_grace_guard(s, old_cd, old_size);
    if (!st && keep_tail) {
        /* The slack below the kept directory is free space from now on (a hole: it was slack). */
        mz_crashpoint("relocate.free_below_kept_tail");
        st = mz_io_zero(s, m->lfh_off, old_cd - m->lfh_off, "relocate.free_below_kept_tail");
        if (!st) {
            m->from = m->lfh_off;
            m->to = s->kept_to[0] = old_size;
            m->lfh_off = mz_page_up(old_size);
        }
    }
out:
    mz_unlock_commit(s->fd);
    free(buf);
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
    mz_table_changed(s);
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
 * as dead bytes. 7-Zip takes a local-header signature at offset 0 for the start of the archive and, finding
 * that no directory record begins there, walks the local headers from it: it lists the dead entries as
 * members and reports "Headers Error" at the first gap. Yet file-type sniffers (numpy.load, libmagic's `file`)
 * recognise a ZIP by its first four bytes only: "PK\3\4", or "PK\5\6" (an empty archive's end record).
 * So the dead header at offset 0 gets the signature "PK\5\6": numpy and `file` still take the file for a ZIP,
 * and 7-Zip, whose start-of-archive test wants a zero disk number after "PK\5\6" (here the header's nonzero
 * "version needed"), looks further and opens the archive at the first live entry (warning "open with offset",
 * status 0). The signatures of the further dead headers before the first live entry are cleared (4 zero
 * bytes). Readers of an older snapshot that still lists such an entry keep working: mmzip accepts either
 * signature when the name still matches (read.c); a Python zipfile opened before the commit fails on that one
 * superseded entry. Dead headers after the first live entry are left alone.
 */
static int dead_start(mz_store *s, int dry);

/* 1 if a local header mmzip wrote (it carries the 0xA11E alignment field) lies at pos, within [pos, limit). */
static int mmzip_header_at(mz_store *s, uint64_t pos, uint64_t limit) {
    if (pos + MZ_LFH_FIXED > limit) return 0;
    const uint8_t *h = s->map.base + pos;
    if (!mz_lfh_sig_or_cleared(h)) return 0;
    uint16_t nlen = mz_get16(h + 26), xlen = mz_get16(h + 28);
    if (pos + MZ_LFH_FIXED + nlen + xlen > limit) return 0;
    const uint8_t *x = h + MZ_LFH_FIXED + nlen;
    for (uint32_t k = 0; k + 4 <= xlen;) {
        uint16_t id = mz_get16(x + k), len = mz_get16(x + k + 2);
        if (id == MZ_EXTRA_ALIGN) return 1;
        k += 4u + len;
    }
    return 0;
}

/* 1 if [pos, limit) starts with a header mmzip wrote, as dead entries of this archive do where room after one
 * of them breaks their chain, and holds no end of central directory record: bytes that do are a whole archive
 * before this one (`cat a.zip b.zip`, two archives mmzip wrote), not its dead entries. */
static int mmzip_dead_start_at(mz_store *s, uint64_t pos, uint64_t limit) {
    static const uint8_t eocd[4] = {'P', 'K', 5, 6};
    return mmzip_header_at(s, pos, limit) &&
           memmem(s->map.base + pos, (size_t)(limit - pos), eocd, sizeof eocd) == NULL;
}

/*
 * Where the directory a relocation of this archive kept (protocol.md §3.7) ends, if one starts at pos, before
 * limit: its records, each naming a local header mmzip wrote below pos, then its end records (the ZIP64 ones, if
 * any, and the end of central directory record with its comment), then zeros up to a page boundary. 0 if
 * [pos, limit) does not start so. Such a directory lies among the dead entries once the entries after it are
 * superseded (7-Zip refused the archive for the intact local headers beyond it: an outside review); a foreign
 * archive's directory names headers without mmzip's alignment field, and another archive mmzip wrote, with
 * this one appended (`cat a.zip b.zip`), is followed by this one's first byte.
 */
static uint64_t kept_directory_end(mz_store *s, uint64_t pos, uint64_t limit) {
    const uint8_t *base = s->map.base, *end = base + limit;
    const uint8_t *p = base + pos;
    uint32_t records = 0;
    while (p + MZ_CDH_FIXED <= end && mz_get32(p) == MZ_SIG_CDH) {
        uint64_t lfh;
        if (!mz_cdh_lfh_offset(p, (size_t)(end - p), &lfh) || lfh > UINT64_MAX - s->prefix || lfh + s->prefix >= pos ||
            !mmzip_header_at(s, lfh + s->prefix, pos))
            return 0;
        p += MZ_CDH_FIXED + mz_get16(p + 28) + mz_get16(p + 30) + mz_get16(p + 32);
        records++;
    }
    if (p + 56 <= end && mz_get32(p) == MZ_SIG_Z64_EOCD) {
        uint64_t size = mz_get64(p + 4);
        if (size > (uint64_t)(end - p) - 12) return 0;
        p += 12 + size;
    }
    if (p + 20 <= end && mz_get32(p) == MZ_SIG_Z64_LOC) p += 20;
    if (p + 22 > end || mz_get32(p) != MZ_SIG_EOCD) return 0;
    p += 22;
    if (mz_get16(p - 2) > end - p) return 0;
    p += mz_get16(p - 2);
    if (!records) return 0;
    /* The put that kept it started its entry at the next page after the old end of the file (kept_tail.c); an
     * archive concatenated before this one is followed by it at once. */
    const uint8_t *next = p;
    while (next < end && *next == 0) next++;
    return (uint64_t)(next - base) % 4096 == 0 ? (uint64_t)(p - base) : 0;
}

int mz_neutralize_dead_start(mz_store *s) { return dead_start(s, 0); }

int mz_dead_start_pending(mz_store *s) {
    uint64_t first_live = s->cd_pos, start = s->neutralized_to > s->prefix ? s->neutralized_to : s->prefix;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->e[i].lfh_off < first_live) first_live = s->e[i].lfh_off;
    return (dead_start(s, 2) == 2 || mmzip_dead_start_at(s, start, first_live)) && dead_start(s, 1) == 1;
}

/* Walks the dead local headers before the first live entry, clearing their signatures (dry 1: returns 1 at the
 * first one that still has it, writing nothing; dry 2: returns 2 if they chain up to the first live entry). */
static int dead_start(mz_store *s, int dry) {
    uint64_t first_live = s->cd_pos;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->e[i].lfh_off < first_live) first_live = s->e[i].lfh_off;
    uint64_t start = s->neutralized_to > s->prefix ? s->neutralized_to : s->prefix;
    /* Dead entries are a chain of local headers and data from the start up to the first live entry (or, with
     * room kept after one of them, start with a header mmzip wrote). Bytes before an archive whose offsets
     * were made absolute (a self-extractor's stub, another archive: its local headers are followed by its own
     * directory) are no such chain: they are foreign, and kept. */
    if (!dry && dead_start(s, 2) != 2 && !mmzip_dead_start_at(s, start, first_live)) return MMZIP_OK;
    uint64_t pos = start;
    while (pos + MZ_LFH_FIXED <= first_live) {
        const uint8_t *h = s->map.base + pos;
        if (!mz_lfh_sig_or_cleared(h) || mz_get16(h + 26) == 0) {
            /* Zeros between two dead entries: the hole a kept tail's directory or the slack below it left
             * (protocol.md §3.7), which later entries went past. The chain goes on at the next header, whose
             * signature may be cleared already; 7-Zip takes an intact one for the archive's start. */
            uint64_t q = pos;
            while (q < first_live && s->map.base[q] == 0) q++;
            if (q == first_live && q > pos) {
                pos = first_live;
                break;
            }
            uint64_t after = q + 4 <= first_live && mz_get32(s->map.base + q) == MZ_SIG_CDH
                                 ? kept_directory_end(s, q, first_live) : 0;
            if (after > pos) { /* a kept directory among the dead entries: they go on after its end records */
                pos = after;
                continue;
            }
            uint64_t next = q + 4 <= first_live && mz_get32(s->map.base + q) == MZ_SIG_LFH ? q
                            : q >= pos + 4 && q + MZ_LFH_FIXED - 4 <= first_live ? q - 4 : pos;
            if (next <= pos || next + MZ_LFH_FIXED > first_live || mz_get16(s->map.base + next + 26) == 0) break;
            pos = next;
            continue;
        }
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
        static const uint8_t zero[4], end_sig[4] = {0x50, 0x4b, 0x05, 0x06};
        const uint8_t *want = pos == 0 && mz_get16(h + 4) != 0 ? end_sig : zero;
        if (memcmp(h, want, 4) != 0 && dry != 2) {
            if (dry) return 1;
            int st = mz_io_write(s, want, 4, pos, "commit.neutralize_dead_start");
            if (st) return st;
        }
        pos = next;
        if (!dry) s->neutralized_to = pos;
    }
    return dry == 2 && pos == first_live && pos > start ? 2 : MMZIP_OK;
}

/*
 * The commit of a batch that only adds entries (§3.3 of docs/protocol.md): their directory records are written
 * just below the published directory, which they extend downwards, and the end records are rewritten in
 * place, within one sector, to take them in. The file keeps its size and no byte a reader may be reading
 * changes, except the end records themselves, whose old and new forms both describe a complete directory.
 * Returns MMZIP_OK with *done = 0 when the batch or the file does not allow it.
 */
static int commit_additions(mz_store *s, uint64_t x, int *done) {
    *done = 0;
    uint64_t r = s->cd_len - s->cd_committed_len, tlen = s->trailer_len, tpos = s->cd_pos + s->cd_size;
    if (s->n_shadowed || s->n_dead || s->open_reservations || !s->n_pending_live || !s->n_committed ||
        !s->zip64 || !s->end_follows_cd || tlen != mz_trailer_len(s->comment_len) || tpos + tlen != s->file_size ||
        !in_one_sector(tpos, tlen))
        return MMZIP_OK;
    /* Only new names: a record of a replaced entry left behind the new one would win in readers that take
     * the last record of a name (zipfile, zarr-python). Whatever path marked the replacement, look at the
     * pending entries. A committed entry a pending one shadows is counted in n_shadowed, checked above, by
     * every path that marks it (write.c), so the committed ones are not scanned: that scan made every commit
     * O(entries), and a run of commits O(entries^2). */
    for (uint32_t i = s->n_committed; i < s->n; i++)
        if (s->e[i].replaces != MZ_NONE || (s->e[i].mark & (MZ_MARK_DEAD | MZ_MARK_RESERVED))) return MMZIP_OK;
    int st = mz_ensure_room(s, x + r);
    if (st) return st;
    tpos = s->cd_pos + s->cd_size; /* a relocation moved them */
    if (tpos + tlen != s->file_size || !in_one_sector(tpos, tlen) || s->cd_pos < x + r) return MMZIP_OK;
    uint64_t xd = s->cd_pos - r;
    st = mz_io_write(s, s->cd + s->cd_committed_len, r, xd, "commit.records");
    if (st) return st;
    st = mz_io_barrier(s, 0, "commit.sync_records");
    if (st) return st;
    uint8_t tr[MZ_SECTOR];
    mz_write_trailer(tr, s->n, s->cd_size + r, xd, tpos, s->comment, s->comment_len);
    /* The commit point. */
    mz_lock_commit(s->fd, 1);
    st = mz_io_write(s, tr, tlen, tpos, "commit.switch");
    mz_unlock_commit(s->fd);
    if (st) return st;
    st = mz_io_barrier(s, 1, "commit.sync_switch");
    *done = 1;
    uint64_t junk_end = s->zero_from < xd ? s->zero_from : xd;
    if (!st && junk_end > x) st = mz_io_zero(s, x, junk_end - x, "commit.clear_slack");
    s->cd_pos = xd;
    s->cd_size += r;
    if (x > s->data_end) s->session_added += x - s->data_end;
    s->data_end = s->pending_end = s->zero_from = x;
    s->free_limit = xd;
    s->compact = xd == x;
    s->clean = s->slack_hole = s->end_follows_cd = 1;
    s->bytes_since_commit = 0;
    int st2 = settle_table(s, NULL, 0);
    if (!st) st = st2;
    if (s->unpublished) {
        st2 = mz_publish(s);
        if (!st) st = st2;
    }
    return st;
}

/* Where the close puts a directory of img_len bytes and end records of tlen bytes above data ending at x:
 * mz_at_rest_keep bytes higher, as far as the published directory allows, with the end records within one
 * sector (so that the next session's additions can rewrite them in place). */
static uint64_t settle_position(mz_store *s, uint64_t x, uint64_t img_len, uint64_t tlen, uint32_t count,
                                uint64_t kept) {
    if (!count) return x; /* an archive left empty ends with the plain end record alone, as 7-Zip wants */
    /* A writer that created the archive (mmzip put new.zip, savez) leaves it compact: a one-off, as far as
     * it can tell. One that appended to an archive leaves room for as much again: appenders come back. The
     * bytes kept tails hold below the data share the allowance with that slack. */
    uint64_t keep = s->created ? 0 : mz_at_rest_keep(x + img_len + tlen, s->session_added);
    uint64_t allow = mz_at_rest_allowance(x + img_len + tlen);
    uint64_t share = allow > kept ? allow - kept : 0;
    if (keep > share) keep = share;
    if (keep < 4096) keep = 0;
    uint64_t need = x + img_len + tlen + MZ_SECTOR;
    uint64_t room = s->free_limit > need ? s->free_limit - need : 0;
    if (keep > room) keep = room;
    uint64_t top = sector_end_below(x + keep + img_len + tlen, tlen);
    return top >= x + img_len + tlen ? top - tlen - img_len : x;
}

/* Writes crc as the entry's CRC-32: its local header in place (unless a data descriptor carries it) and
 * its record in the directory image, which the next commit writes out. */
static int set_crc(mz_store *s, mz_entry *e, uint32_t crc) {
    if (e->crc == crc) return MMZIP_OK;
    uint8_t le[4];
    mz_put32(le, crc);
    int st = mz_io_write(s, le, 4, e->lfh_off + 14, "inplace.local_crc");
    if (st) return st;
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    mz_put32(s->cd + e->cd_rec + 16, crc);
    e->crc = crc;
    pthread_rwlock_unlock(&s->rw);
    s->cd_changed = 1;
    return MMZIP_OK;
}

int mz_set_entry_crc(mz_store *s, mz_entry *e, uint32_t crc) { return set_crc(s, e, crc); }

/* A commit publishes bytes and a CRC that agree: the CRC of every entry being edited through a view (or ended
 * since the last commit) is recomputed over its bytes as they are now, and patched into its local header and
 * the directory image; s->cd_changed is set when one changed. */
static int views_refresh_locked(mz_store *s) {
    for (uint32_t i = 0; i < s->n_views; i++) {
        mz_view *v = s->views[i];
        if (!v->open && !v->stale) continue;
        mz_entry *e = mz_committed_at(s, v->lfh_off, MZ_MARK_SHADOWED);
        if (e) {
            int st = set_crc(s, e, mz_crc32(0, v->view, (size_t)v->len));
            if (st) return st;
        }
        v->stale = 0;
    }
    return MMZIP_OK;
}


int mz_commit_locked(mz_store *s, int force_compact) {
    if (s->n_views) {
        int est = views_refresh_locked(s); /* CRCs of entries edited through views go out with this directory */
        if (est) return est;
    }
    int changes = s->n_pending_live || s->n_shadowed || s->n_dead || s->cd_changed;
    if (!changes && (s->compact || !force_compact)) {
        s->pending_end = s->data_end > mz_edit_floor(s) ? s->data_end : mz_edit_floor(s);
        return MMZIP_OK;
    }
    if (!force_compact) {
        int done, st = mz_flush_writes(s); /* entries before any directory that names them */
        if (st) return st;
        uint64_t x = s->data_end;
        for (uint32_t i = s->n_committed; i < s->n; i++)
            if (s->e[i].data_off + s->e[i].csize + s->e[i].room > x) x = s->e[i].data_off + s->e[i].csize + s->e[i].room;
        st = commit_additions(s, x, &done);
        if (st || done) return st;
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
        if (!(e->mark & MZ_MARK_DEAD) && e->data_off + e->csize + e->room > x) x = e->data_off + e->csize + e->room;
    }
    if (x < mz_edit_floor(s)) x = mz_edit_floor(s); /* an entry edited in place is growing there */
    s->pending_end = x;
    uint64_t tlen = mz_end_len(count, s->comment_len);
    st = mz_ensure_room(s, x + img_len + tlen + MZ_SECTOR);
    if (st) goto fail;
    /* The new directory goes at the top of the slack, ending where the published one begins, which stays
     * untouched until the truncate. Compaction (recovery, and an archive left empty, whose plain end record
     * 7-Zip wants alone) puts it right after the data instead. */
    int low = force_compact || count == 0;
    uint64_t xd = low ? x : sector_end_below(s->free_limit, tlen) - tlen - img_len;
    if (low && s->settling) {
        /* The close of a writer that appended keeps a slack of MZ_KEEP_SESSIONS times what it added, within
         * 1 % (none for a small archive or a small append, so that such a file at rest is its data to the
         * byte): a next session that writes as much goes into it instead of relocating the directory, whose
         * copy past the end of the file is the window in which third-party readers find no end records
         * (docs/protocol.md §3.2, §3.6). It stays a hole, and below the published directory, so the close
         * never relocates for it. */
        xd = settle_position(s, x, img_len, tlen, count, mz_kept_bytes(s));
    }
    uint64_t eof1 = xd + img_len + tlen;
    uint8_t *buf = malloc(img_len + tlen);
    if (!buf) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory for a %llu-byte directory", s->path,
                     (unsigned long long)img_len);
        goto fail;
    }
    memcpy(buf, dir, img_len);
    mz_write_end(buf + img_len, count, img_len, xd, s->comment, s->comment_len);
    st = mz_io_write(s, buf, img_len + tlen, xd, s->settling ? "close.directory" : "commit.directory");
    free(buf);
    if (st) goto fail;
    st = mz_io_barrier(s, 0, s->settling ? "close.sync_directory" : "commit.sync_directory");
    if (st) goto fail;
    /* The commit point. */
    mz_lock_commit(s->fd, 1);
    st = mz_io_truncate(s, eof1, s->settling ? "close.truncate" : "commit.truncate");
    mz_unlock_commit(s->fd);
    if (st) goto fail;
    st = mz_io_barrier(s, 1, s->settling ? "close.sync_truncate" : "commit.sync_truncate");
    s->file_size = eof1;
    s->trailer_len = tlen;
    s->zip64 = count > 0;
    s->cd_pos = xd;
    s->cd_size = img_len;
    /* Bytes left in the slack (entries dropped from this commit, an older directory) become a hole again,
     * so that the slack never holds anything a tool scanning the file could take for a record. */
    uint64_t junk_end = s->zero_from < xd ? s->zero_from : xd;
    if (!st && junk_end > x) st = mz_io_zero(s, x, junk_end - x, s->settling ? "close.clear_slack" : "commit.clear_slack");
    /* A commit that replaced or removed entries has moved the file's end under the readers anyway; the
     * directories kept before (§3.7) go now. Left, one could list an entry this commit removed to a reader
     * that picks among end records by the span of their directories (libzip without ZIP_CHECKCONS). The
     * range this store's own last relocation kept stays: its readers took the size a moment ago. */
    if (!st) st = mz_release_kept_tails(s);
    if (x > s->data_end) s->session_added += x - s->data_end;
    s->data_end = s->pending_end = s->zero_from = x;
    s->free_limit = xd;
    s->compact = xd == x;
    s->clean = s->slack_hole = s->end_follows_cd = 1;
    s->bytes_since_commit = 0;
    s->cd_changed = 0;
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

uint64_t mz_at_rest_allowance(uint64_t size) {
    uint64_t a = size / 100;
    return a > MZ_MIN_GAP ? a : MZ_MIN_GAP;
}

uint64_t mz_at_rest_keep(uint64_t size, uint64_t added) {
    uint64_t k = size / 100;
    if (added < k / MZ_KEEP_SESSIONS) k = added * MZ_KEEP_SESSIONS;
    return k >= 4096 ? k : 0;
}

/* The slack exists for the writer: it lets commits add records and directories without moving anything a
 * reader may be reading. Once the last writer goes, it is zeros that every copy that ignores holes (rsync
 * without -S, tar, cat, uploads, object stores) moves and bills, and that `ls -l` counts. So the close
 * puts the directory right after the data, as recovery does, or, after a writer that appended, the little
 * above it that mz_at_rest_keep grants the next session (docs/protocol.md §3.6): the new directory is
 * written into the slack, below the published one, and one truncate is the commit point; a kill at any
 * step leaves the last commit, with or without its slack. A slack within the allowance is left alone: it
 * costs at most 1 % and saves a directory write per close. */
uint64_t mz_settle_would_remove(mz_store *s) {
    /* Around a foreign anomaly (s->foreign_hold) the slack is above it, the writer's own: it goes too. So does
     * the slack of a writer that relocated and then wrote nothing it kept (a put interrupted while it read its
     * input, rolled back): what lies in it is junk the commit clears. */
    if (s->unpublished || !s->end_follows_cd || (!s->clean && (s->n_pending_live || s->pending_end != s->data_end)) ||
        s->data_end < s->foreign_hold)
        return 0;
    if (s->cd_pos + s->cd_size + s->trailer_len != s->file_size) return 0;
    uint64_t slack = s->cd_pos > s->data_end ? s->cd_pos - s->data_end : 0;
    uint64_t allow = mz_at_rest_allowance(s->file_size - slack);
    uint64_t kept = mz_kept_bytes(s);
    if (slack + kept <= allow) return 0;
    uint64_t end = settle_position(s, s->data_end, s->cd_size, s->trailer_len, s->n_committed, kept) + s->cd_size +
                   s->trailer_len;
    return s->file_size > end ? s->file_size - end : 0;
}

int mz_settle_at_rest(mz_store *s) {
    if (!mz_settle_would_remove(s)) return MMZIP_OK;
    s->settling = 1;
    int st = mz_commit_locked(s, 1);
    s->settling = 0;
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
    s->compact = s->clean = s->slack_hole = s->end_follows_cd = 1;
    s->zip64 = 0;
    s->created = 1;
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

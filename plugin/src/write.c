/*
 * write.c - put, reserve/patch, remove, and batches.
 *
 * Every write lands in the free region after the last entry (commit.c makes room by relocating the
 * directory first), so nothing a reader can reach changes. The entry's bytes are complete before any
 * directory names it: a commit only ever publishes entries that were fully written before it started.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/* The calls that name no entry (begin, commit, rollback) need a handle that may write. */
static int check_writable(mmzip_t *h, const char *fn) {
    if (!h) return mz_fail(MMZIP_EINVAL, "%s: NULL handle", fn);
    if (!h->writable) return mz_fail(MMZIP_EREADONLY, "%s: opened read-only; cannot %s", h->s->path, fn + 6);
    return mz_refuse_inherited(h->s);
}

/* A name with an empty or "." component ("a//b", "./a", "a/./b", ".") is another spelling of a name without
 * it: unzip, 7-Zip and zipfile's extractall write both to one file, one over the other. An archive from
 * another writer may hold such names (they are read, replaced and removed as they are); none is written anew. */
static int name_canonical(const char *key) {
    for (const char *c = key;;) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if ((n == 0 && slash) || (n == 1 && c[0] == '.')) return 0;
        if (!slash) return 1;
        c = slash + 1;
    }
}

/* The calls that write the entry `key`: a writable handle and a name every ZIP reader takes (and, for a put,
 * one that no other name extracts to). */
static int check_name(mmzip_t *h, const char *key, const char *fn);
static int folder_with_data(mz_store *s, const char *key, const char *what);

static int check_writer(mmzip_t *h, const char *key, const char *fn) {
    if (h && !key) return mz_fail(MMZIP_EINVAL, "%s: NULL key", fn);
    int st = check_writable(h, fn);
    return st ? st : check_name(h, key, fn);
}

int mmzip_check_name(mmzip_t *h, const char *key) {
    if (!h || !key) return mz_fail(MMZIP_EINVAL, "mmzip_check_name: NULL argument");
    int st = check_name(h, key, "mmzip_put");
    if (st == MMZIP_OK && key[0] && key[strlen(key) - 1] == '/') st = folder_with_data(h->s, key, "its bytes");
    return st;
}

static int check_name(mmzip_t *h, const char *key, const char *fn) {
    if (!mz_name_ok(key, strlen(key)))
        return mz_fail(MMZIP_EINVAL, "%s: invalid entry name '%s' (empty, too long, absolute, or with '..')",
                       h->s->path, key);
    if (strcmp(fn, "mmzip_remove") != 0 && !name_canonical(key)) {
        pthread_rwlock_rdlock(&h->s->rw);
        int exists = mz_lookup(h->s, key, strlen(key), 1) != NULL;
        pthread_rwlock_unlock(&h->s->rw);
        if (!exists)
            return mz_fail(MMZIP_EINVAL, "%s: invalid entry name '%s': an empty or '.' component ('a//b', './a', "
                           "'a/./b') names the same file as the name without it for unzip, 7-Zip and zipfile's "
                           "extractall, which would write one over the other", h->s->path, key);
    }
    return MMZIP_OK;
}

/* Every ZIP reader takes a name ending in '/' for a folder: unzip and 7-Zip make a folder of it and drop its
 * bytes, so data stored under such a name would be lost to them. */
static int folder_with_data(mz_store *s, const char *key, const char *what) {
    return mz_fail(MMZIP_EINVAL, "%s: '%s' ends in '/', which ZIP readers take for a folder: they would make a "
                   "folder of it and drop %s (a folder entry holds no data)", s->path, key, what);
}

static int check_alignment(mz_store *s, uint32_t *alignment) {
    if (*alignment == 0) *alignment = s->opts.alignment;
    uint32_t a = *alignment;
    if ((a & (a - 1)) || a > MZ_MAX_ALIGNMENT || a > mz_page_size)
        return mz_fail(MMZIP_EINVAL, "%s: alignment %u is not a power of two between 1 and %u", s->path, a,
                       (unsigned)(mz_page_size < MZ_MAX_ALIGNMENT ? mz_page_size : MZ_MAX_ALIGNMENT));
    return MMZIP_OK;
}

/*
 * Entries are written in pieces that end on 2 MiB boundaries of the file: whatever of the last entry lies
 * past the last boundary waits in the gathering buffer, and goes out with the next entry's bytes (or at the
 * commit, or when a reader of that pending entry asks). The kernel gives each 2 MiB block written by one call
 * from its start one large page-cache folio, and a mapping 2 MiB-aligned like ours (mapping.c) then maps
 * it with one huge entry. Blocks written by two calls (one entry's end, the next one's start) are split
 * into small folios that are mapped page by page: a zero-copy reader then pays a page-table entry and a
 * TLB miss per 4 KiB page, which on a virtual machine with software-managed page tables made reading
 * 4 MiB chunks of a fresh mapping twice as slow as read(2) (docs/performance.md).
 */
#define MZ_WRITE_BLOCK (2u << 20)
#define MZ_GATHER_BUFFER MZ_WRITE_BLOCK

/* Drops gathered bytes at and after `off` (their entries were superseded or rolled back). */
static void unwrite_from(mz_store *s, uint64_t off) {
    if (!s->wbuf_len || off >= s->wbuf_off + s->wbuf_len) return;
    s->wbuf_len = off > s->wbuf_off ? (size_t)(off - s->wbuf_off) : 0;
    if (!s->wbuf_len) __atomic_store_n(&s->written_end, UINT64_MAX, __ATOMIC_RELEASE);
}

/* Copies bytes [from, from + len) of the concatenation of v into the gathering buffer. */
static void gather(mz_store *s, const mmzip_iovec *v, int n, uint64_t from, uint64_t len) {
    for (int i = 0; i < n && len; i++) {
        if (from >= v[i].len) {
            from -= v[i].len;
            continue;
        }
        uint64_t k = v[i].len - from < len ? v[i].len - from : len;
        memcpy(s->wbuf + s->wbuf_len, (const uint8_t *)v[i].base + from, (size_t)k);
        s->wbuf_len += (size_t)k;
        len -= k;
        from = 0;
    }
}

/* The pieces of bytes [from, from + len) of the concatenation of v, into w (room for n); their count. */
static int slice(const mmzip_iovec *v, int n, uint64_t from, uint64_t len, mmzip_iovec *w) {
    int k = 0;
    for (int i = 0; i < n && len; i++) {
        if (from >= v[i].len) {
            from -= v[i].len;
            continue;
        }
        uint64_t l = v[i].len - from < len ? v[i].len - from : len;
        w[k++] = (mmzip_iovec){(const uint8_t *)v[i].base + from, l};
        len -= l;
        from = 0;
    }
    return k;
}

/*
 * Writes header + data of an entry at lfh_off (total bytes in v): see MZ_WRITE_BLOCK. With a handle that
 * wants progress (ph), the bytes go out in pieces of MZ_PROGRESS_STEP (a multiple of the block), each
 * reported as the second half of the put's work (data bytes: size).
 */
static int write_entry(mz_store *s, const mmzip_iovec *v, int n, uint64_t total, uint64_t lfh_off, mmzip_t *ph,
                       uint64_t size) {
    if (s->wbuf_len && s->wbuf_off + s->wbuf_len != lfh_off) {
        int st = mz_flush_writes(s);
        if (st) return st;
    }
    if (!s->wbuf) {
        s->wbuf = malloc(MZ_GATHER_BUFFER);
        if (!s->wbuf) return mz_io_writev(s, v, n, lfh_off, "put.entry");
        s->wbuf_cap = MZ_GATHER_BUFFER;
    }
    uint64_t start = s->wbuf_len ? s->wbuf_off : lfh_off, end = lfh_off + total;
    uint64_t cut = end / MZ_WRITE_BLOCK * MZ_WRITE_BLOCK;
    if (cut <= start) { /* within one block: gathered (it fits: a block is the buffer's size) */
        if (!s->wbuf_len) s->wbuf_off = lfh_off;
        gather(s, v, n, 0, total);
        __atomic_store_n(&s->written_end, s->wbuf_off, __ATOMIC_RELEASE);
        return MMZIP_OK;
    }
    /* [start, cut) in one call (or one per progress step): the gathered bytes, then the entry's own buffers
     * up to the boundary. */
    mmzip_iovec *w = malloc(((size_t)n + 1) * sizeof *w);
    if (!w) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    for (uint64_t pos = start; pos < cut;) {
        uint64_t stop = ph ? (pos / MZ_PROGRESS_STEP + 1) * MZ_PROGRESS_STEP : cut;
        if (stop > cut) stop = cut;
        int k = 0;
        if (s->wbuf_len) w[k++] = (mmzip_iovec){s->wbuf, s->wbuf_len};
        uint64_t from = pos > lfh_off ? pos - lfh_off : 0;
        k += slice(v, n, from, stop - lfh_off - from, w + k);
        int st = mz_io_writev(s, w, k, pos, "put.entry");
        if (st) {
            free(w);
            return st; /* the buffer is as it was: no byte of a failed put counts */
        }
        /* Later pieces start past the gathered bytes, which went out with the first. */
        s->wbuf_len = 0;
        pos = stop;
        if (ph) {
            uint64_t data_done = pos - lfh_off > total - size ? pos - lfh_off - (total - size) : 0;
            ph->progress(size + data_done, 2 * size, ph->progress_ctx);
        }
    }
    free(w);
    if (cut == end) {
        __atomic_store_n(&s->written_end, UINT64_MAX, __ATOMIC_RELEASE);
        return MMZIP_OK;
    }
    s->wbuf_off = cut;
    gather(s, v, n, cut - lfh_off, end - cut);
    __atomic_store_n(&s->written_end, s->wbuf_off, __ATOMIC_RELEASE);
    return MMZIP_OK;
}

static int maybe_autocommit(mz_store *s) {
    if (s->batch) return MMZIP_OK;
    switch (s->opts.commit_policy) {
    case MMZIP_COMMIT_EACH:
        return mz_commit_locked(s, 0);
    case MMZIP_COMMIT_AMORTIZED: {
        /* A commit copies the directory (twice when it must relocate it). Committing once the new bytes
         * reach its size bounds that overhead by a constant factor: N puts cost O(N) in total. */
        int due = s->bytes_since_commit >= s->cd_committed_len + 4096;
        if (s->opts.max_pending_entries && s->n_pending_live >= s->opts.max_pending_entries) due = 1;
        if (s->opts.max_pending_bytes && s->bytes_since_commit >= s->opts.max_pending_bytes) due = 1;
        return due ? mz_commit_locked(s, 0) : MMZIP_OK;
    }
    default:
        return MMZIP_OK;
    }
}

/* Room a commit after this write will need: the entry, the directory grown by one record, the trailer. */
static uint64_t room_for(mz_store *s, uint64_t entry_end, size_t name_len) {
    return entry_end + s->cd_len + mz_our_cdh_size(name_len) + mz_trailer_len(s->comment_len);
}

/*
 * Adds the table entry of a new pending entry whose bytes are on disk. The previous version of the name
 * is superseded: a committed one is shadowed (readers keep seeing it until the commit), a pending one dies.
 */
int mz_add_pending(mz_store *s, mz_entry *ne, const char *key, uint32_t head, int reserved, const mz_stamp *stamp) {
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    int st = mz_cd_reserve(s, ne->cd_rec_len);
    if (!st) st = mz_entries_reserve(s, 1);
    if (st) {
        pthread_rwlock_unlock(&s->rw);
        return st;
    }
    ne->cd_rec = s->cd_len;
    mz_write_cdh(s->cd + s->cd_len, key, ne->name_len, ne->crc, ne->csize, ne->lfh_off, stamp);
    if (ne->keeps_room) mz_set_cdh_room(s->cd + s->cd_len, ne->room, 1);
    ne->replaces = MZ_NONE;
    if (head != MZ_NONE) {
        mz_entry *o = &s->e[head];
        if (o->state == MZ_PENDING) {
            ne->replaces = o->replaces;
            if (!(o->mark & (MZ_MARK_DEAD | MZ_MARK_RESERVED))) {
                o->mark |= MZ_MARK_DEAD;
                s->n_dead++;
                s->n_pending_live--;
            }
        } else {
            ne->replaces = head;
        }
    }
    if (!reserved && ne->replaces != MZ_NONE) mz_shadow_committed(s, &s->e[ne->replaces]);
    uint32_t idx = s->n;
    s->e[idx] = *ne;
    s->n++;
    s->cd_len += ne->cd_rec_len;
    if (reserved) s->open_reservations++;
    else s->n_pending_live++;
    st = mz_table_insert(s, idx);
    pthread_rwlock_unlock(&s->rw);
    return st;
}

/* If the newest version of a key (head) is a pending entry at the very end of the pending region, its space
 * can be reused: it is about to be superseded anyway. */
static uint64_t reusable_start(mz_store *s, uint32_t head) {
    if (head == MZ_NONE) return s->pending_end;
    mz_entry *o = &s->e[head];
    /* A removed pending entry gave its space back when it was removed (mz_remove_locked): it is not its own
     * to reuse, even where an entry put since ends where it ended (x put, x removed, y put with x's length, x
     * put again wrote over y: an outside review). */
    if (o->state != MZ_PENDING || (o->mark & (MZ_MARK_RESERVED | MZ_MARK_DEAD))) return s->pending_end;
    if (o->data_off + o->csize == s->pending_end) return o->lfh_off;
    return s->pending_end;
}

int mmzip_putv(mmzip_t *h, const char *key, const mmzip_iovec *iov, int count, uint32_t alignment,
                const mmzip_attr *attr) {
    int st = check_writer(h, key, "mmzip_put");
    if (st) return st;
    if (count < 0 || (count > 0 && !iov)) return mz_fail(MMZIP_EINVAL, "mmzip_put: bad buffer list");
    mz_store *s = h->s;
    st = check_alignment(s, &alignment);
    if (st) return st;
    size_t nlen = strlen(key);
    uint64_t total = 0;
    uint32_t crc = 0;
    for (int i = 0; i < count; i++) {
        if (iov[i].len && !iov[i].base) return mz_fail(MMZIP_EINVAL, "mmzip_put: NULL data");
        total += iov[i].len;
    }
    if (total && key[nlen - 1] == '/') return folder_with_data(s, key, "its bytes");
    /* Progress counts the checksum pass and the write, one unit per byte each. */
    uint64_t done = 0;
    for (int i = 0; i < count; i++)
        for (uint64_t o = 0; o < iov[i].len;) {
            uint64_t k = iov[i].len - o < MZ_PROGRESS_STEP ? iov[i].len - o : MZ_PROGRESS_STEP;
            crc = mz_crc32(crc, (const uint8_t *)iov[i].base + o, (size_t)k);
            o += k;
            done += k;
            if (h->progress && total >= MZ_PROGRESS_STEP) h->progress(done, 2 * total, h->progress_ctx);
        }
    pthread_mutex_lock(&s->wmu);
    if ((st = mz_shared_enter(s)) != MMZIP_OK) { /* shared: the lock, and the archive as it is now */
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
    uint32_t head = mz_lookup_head(s, key, nlen);
    if (head != MZ_NONE && (s->e[head].mark & MZ_MARK_RESERVED)) {
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
        return mz_fail(MMZIP_EBUSY, "%s: entry '%s' is reserved and not yet patched", s->path, key);
    }
    /* Rewriting a key with the bytes it already holds is a no-op: no byte is written, where those bytes lie
     * as this put asks (aligned to it); else the put writes them again, aligned (a put of the same bytes with
     * a stricter alignment returned MMZIP_OK and left them unaligned: an outside review). */
    mz_entry *old = mz_visible_version(s, head, 1);
    if (old && old->state == MZ_PENDING && old->usize == total && old->crc == crc &&
        (st = mz_flush_writes(s)) != MMZIP_OK) {
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
    if (old && old->method == 0 && old->usize == total && old->crc == crc && mz_resolve_data(s, old) == MMZIP_OK &&
        (!total || old->data_off % alignment == 0)) {
        const uint8_t *p = s->map.base + old->data_off;
        int same = 1;
        for (int i = 0; i < count && same; i++) {
            same = memcmp(p, iov[i].base, (size_t)iov[i].len) == 0;
            p += iov[i].len;
        }
        if (same) {
            mz_shared_leave(s);
            pthread_mutex_unlock(&s->wmu);
            return MMZIP_OK;
        }
    }
    uint64_t lfh_off = reusable_start(s, head);
    unwrite_from(s, lfh_off);
    uint32_t pad = mz_align_padding(lfh_off, nlen, alignment);
    size_t hlen = mz_our_lfh_size(nlen, pad);
    uint64_t end = lfh_off + hlen + total;
    /* A batch that only adds names commits by writing its records just below the directory (docs/protocol.md
     * §3.3 step 2): it needs room for them, not for a whole new directory, which a commit that turns out to
     * need one makes room for itself (mz_commit_locked). Asking for no more before relocating lets the slack
     * a close kept (§3.6) take the next session's puts without moving the directory. */
    int adds_only = !old && !s->n_shadowed && !s->n_dead && !s->open_reservations;
    uint64_t records = (s->cd_len - s->cd_committed_len) + mz_our_cdh_size(nlen); /* the batch's, with this one */
    uint64_t kept_from = 0, kept_to = 0, at = lfh_off;
    /* Free space that relocations left below the data (kept_tail.c) takes the entry first, if its record fits
     * below the directory: the slack stays for what does not fit there, and relocations, which change the
     * file's size under third-party readers, come later. */
    int in_free = adds_only && s->pending_end + records <= s->free_limit &&
                  mz_kept_free_place(s, nlen, total, alignment, &at);
    if (!in_free && (!adds_only || end + records > s->free_limit)) {
        /* Relocating: room for a whole directory, as ever. If the old directory and end records may be kept for
         * the readers reading them, the entry starts past them, on the next page. */
        uint64_t moved = mz_page_up(s->file_size);
        uint64_t moved_end = moved + mz_our_lfh_size(nlen, mz_align_padding(moved, nlen, alignment)) + total;
        st = mz_ensure_room_for_put(s, lfh_off, room_for(s, end, nlen), room_for(s, moved_end, nlen) + MZ_KEPT_EXTRA,
                                    &at, &kept_from, &kept_to);
    }
    if (!st && at != lfh_off) {
        lfh_off = at;
        pad = mz_align_padding(lfh_off, nlen, alignment);
        hlen = mz_our_lfh_size(nlen, pad);
        end = lfh_off + hlen + total;
    }
    if (st) goto out;
    uint8_t *hdr = malloc(hlen);
    mmzip_iovec *v = malloc(((size_t)count + 1) * sizeof *v);
    if (!hdr || !v) {
        free(hdr);
        free(v);
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    mz_stamp stamp;
    mz_stamp_make(&stamp, key, nlen, attr ? attr->mtime : MZ_STAMP_NOW, attr ? attr->mode : 0);
    mz_write_lfh(hdr, key, nlen, crc, total, alignment, pad, &stamp);
    v[0].base = hdr;
    v[0].len = hlen;
    for (int i = 0; i < count; i++) v[i + 1] = iov[i];
    st = write_entry(s, v, count + 1, hlen + total, lfh_off,
                     h->progress && total >= MZ_PROGRESS_STEP ? h : NULL, total);
    free(hdr);
    free(v);
    if (end > s->zero_from) s->zero_from = end; /* a failed write may have left some of its bytes */
    if (st) goto out;
    mz_entry ne;
    memset(&ne, 0, sizeof ne);
    ne.lfh_off = lfh_off;
    ne.data_off = lfh_off + hlen;
    ne.csize = ne.usize = total;
    ne.limit = end;
    ne.cd_rec_len = (uint32_t)mz_our_cdh_size(nlen);
    ne.crc = crc;
    ne.hash = mz_hash(key, nlen);
    ne.name_len = (uint16_t)nlen;
    mz_entry_set_name_head(&ne, key, nlen);
    ne.gp_flags = mz_name_flags(key, nlen);
    ne.state = MZ_PENDING;
    ne.alignment = alignment;
    if (kept_to) {
        ne.cd_rec_len += MZ_KEPT_EXTRA;
        ne.kept_tail = 1;
    }
    st = mz_add_pending(s, &ne, key, head, 0, &stamp);
    if (st) goto out;
    if (kept_to) mz_add_cdh_kept(s->cd + s->e[s->n - 1].cd_rec, kept_from, kept_to);
    if (!in_free) s->pending_end = end;
    s->bytes_since_commit += hlen + total + ne.cd_rec_len;
    st = maybe_autocommit(s);
out:
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_put(mmzip_t *h, const char *key, const void *data, uint64_t size, uint32_t alignment) {
    mmzip_iovec v = {data, size};
    return mmzip_putv(h, key, &v, size ? 1 : 0, alignment, NULL);
}

int mmzip_remove(mmzip_t *h, const char *key) {
    int st = check_writer(h, key, "mmzip_remove");
    if (st) return st;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    if ((st = mz_shared_enter(s)) != MMZIP_OK) { /* shared: the lock, and the archive as it is now */
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
    mz_entry *e = mz_lookup(s, key, strlen(key), 1);
    if (!e) {
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
        return mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s' to remove", s->path, key);
    }
    mz_remove_locked(s, e);
    st = maybe_autocommit(s);
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

void mz_remove_locked(mz_store *s, mz_entry *e) {
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    if (e->state == MZ_PENDING) {
        e->mark |= MZ_MARK_DEAD;
        s->n_dead++;
        s->n_pending_live--;
        if (e->data_off + e->csize == s->pending_end) {
            s->pending_end = e->lfh_off;
            unwrite_from(s, e->lfh_off);
        }
    } else {
        mz_shadow_committed(s, e);
    }
    s->sorted_valid = 0;
    pthread_rwlock_unlock(&s->rw);
    s->bytes_since_commit += 64;
}

/* Makes [off, off+len) of the free region read as zeros and have blocks behind it, so that filling it
 * through the mapping can neither see stale bytes nor fault on a full disk. */
static int prepare_region(mz_store *s, uint64_t off, uint64_t len) {
    if (len == 0) return MMZIP_OK;
    if (off < s->zero_from) {
        uint64_t stop = off + len < s->zero_from ? off + len : s->zero_from;
        int st = mz_io_zero(s, off, stop - off, "reserve.zero");
        if (st) return st;
    }
    if (fallocate(s->fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) != 0 && errno != EOPNOTSUPP &&
        errno != ENOSYS && errno != EINVAL)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot allocate %llu bytes for a reservation", s->path,
                             (unsigned long long)len);
    return MMZIP_OK;
}

/*
 * Where the slack may stop reading as a hole after a reservation ending at end was filled through the
 * writable mapping. A shared mapping dirties whole page-cache folios, and the kernel uses folios of up to
 * 2 MiB for large files: the zeros after the data, up to the folio's end, get written back as allocated
 * blocks. The next commit punches them (commit.c, "clear_slack"), so that the next open finds the slack a
 * hole at once instead of reading 2 MiB of zeros and then punching the whole slack (1-2 ms at the first
 * edit session after `mmzip put`). Small reservations are left alone: their folios are small, and a punch
 * at every commit would cost more than it saves.
 */
static uint64_t dirty_reach(const mz_store *s, uint64_t end, uint64_t capacity) {
    const uint64_t folio = 2u << 20;
    if (capacity < folio) return end;
    uint64_t reach = (end + folio - 1) / folio * folio;
    return reach < s->free_limit ? reach : s->free_limit > end ? s->free_limit : end;
}

static mz_entry *find_reserved(mz_store *s, const char *key) {
    uint32_t head = mz_lookup_head(s, key, strlen(key));
    if (head == MZ_NONE) return NULL;
    mz_entry *e = &s->e[head];
    return (e->state == MZ_PENDING && (e->mark & MZ_MARK_RESERVED)) ? e : NULL;
}

/* The open reservation of key, with the writer mutex held; or NULL with *st set and the mutex released. */
static mz_entry *lock_reservation(mmzip_t *h, const char *key, const char *fn, int *st) {
    if ((*st = check_writer(h, key, fn)) != MMZIP_OK) return NULL;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    mz_entry *e = find_reserved(s, key);
    if (!e) {
        *st = mz_fail(MMZIP_EINVAL, "%s: entry '%s' is not reserved", s->path, key);
        pthread_mutex_unlock(&s->wmu);
    }
    return e;
}

static int reserve(mmzip_t *h, const char *key, uint64_t capacity, uint32_t alignment, void **data,
                   int keep_room) {
    int st = check_writer(h, key, "mmzip_reserve");
    if (st) return st;
    if (!data) return mz_fail(MMZIP_EINVAL, "mmzip_reserve: NULL data pointer");
    mz_store *s = h->s;
    st = check_alignment(s, &alignment);
    if (st) return st;
    size_t nlen = strlen(key);
    pthread_mutex_lock(&s->wmu);
    if ((st = mz_shared_enter(s)) != MMZIP_OK) { /* shared: the lock, and the archive as it is now */
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
    uint32_t head = mz_lookup_head(s, key, nlen);
    if (head != MZ_NONE && (s->e[head].mark & MZ_MARK_RESERVED)) {
        mz_shared_leave(s);
        pthread_mutex_unlock(&s->wmu);
        return mz_fail(MMZIP_EBUSY, "%s: entry '%s' is already reserved", s->path, key);
    }
    uint64_t lfh_off = s->pending_end;
    uint32_t pad = mz_align_padding(lfh_off, nlen, alignment);
    size_t hlen = mz_our_lfh_size(nlen, pad);
    uint64_t data_off = lfh_off + hlen, end = data_off + capacity;
    uint8_t *hdr = NULL, *view = NULL;
    st = mz_flush_writes(s);
    if (!st) st = mz_ensure_room(s, room_for(s, end, nlen));
    if (!st) mz_io_grace(s, lfh_off, end - lfh_off); /* the caller writes through a mapping */
    if (!st) st = prepare_region(s, data_off, capacity);
    if (st) goto out;
    hdr = malloc(hlen);
    if (!hdr) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    /* CRC 0 is a placeholder until mmzip_patch; the entry is invisible until then. The time is the
     * reservation's: mmzip_patch keeps it (it reads it back from the directory record). */
    mz_stamp stamp;
    mz_stamp_make(&stamp, key, nlen, MZ_STAMP_NOW, 0);
    mz_write_lfh(hdr, key, nlen, 0, capacity, alignment, pad, &stamp);
    st = mz_io_write(s, hdr, hlen, lfh_off, "reserve.header");
    if (st) goto out;
    st = mz_map_writable(&s->map, s->fd, data_off, capacity, &view, s->path);
    if (st) goto out;
    mz_entry ne;
    memset(&ne, 0, sizeof ne);
    ne.lfh_off = lfh_off;
    ne.data_off = data_off;
    ne.csize = ne.usize = capacity;
    ne.limit = end;
    ne.cd_rec_len = (uint32_t)mz_our_cdh_size(nlen) + (keep_room ? MZ_ROOM_EXTRA : 0);
    ne.keeps_room = (uint8_t)(keep_room != 0);
    ne.hash = mz_hash(key, nlen);
    ne.name_len = (uint16_t)nlen;
    mz_entry_set_name_head(&ne, key, nlen);
    ne.gp_flags = mz_name_flags(key, nlen);
    ne.state = MZ_PENDING;
    ne.mark = MZ_MARK_RESERVED;
    ne.alignment = alignment;
    st = mz_add_pending(s, &ne, key, head, 1, &stamp);
    if (st) {
        mz_map_drop_writable(&s->map, data_off, capacity);
        goto out;
    }
    s->pending_end = end;
    uint64_t reach = dirty_reach(s, end, capacity);
    if (reach > s->zero_from) s->zero_from = reach;
    *data = view;
out:
    free(hdr);
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_reserve(mmzip_t *h, const char *key, uint64_t capacity, uint32_t alignment, unsigned flags,
                  void **data) {
    if (flags & ~(unsigned)MMZIP_RESERVE_ROOM) return mz_fail(MMZIP_EINVAL, "mmzip_reserve: unknown flags %#x", flags);
    return reserve(h, key, capacity, alignment, data, (flags & MMZIP_RESERVE_ROOM) != 0);
}

int mmzip_reserve_resize(mmzip_t *h, const char *key, uint64_t capacity, void **data) {
    int st;
    mz_entry *e = lock_reservation(h, key, "mmzip_reserve_resize", &st);
    if (!e) return st;
    mz_store *s = h->s;
    if (e->data_off + e->csize != s->pending_end) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' cannot be resized: other entries were written after it",
                     s->path, key);
        goto out;
    }
    uint64_t old_end = e->data_off + e->csize, end = e->data_off + capacity;
    if (end > old_end) {
        st = mz_ensure_room(s, room_for(s, end, 0));
        if (!st) mz_io_grace(s, old_end, end - old_end);
        if (!st) st = prepare_region(s, old_end, end - old_end);
        uint8_t *view;
        if (!st) st = mz_map_writable(&s->map, s->fd, e->data_off, capacity, &view, s->path);
        if (st) goto out;
        uint64_t reach = dirty_reach(s, end, capacity);
        if (reach > s->zero_from) s->zero_from = reach;
    }
    e->csize = e->usize = capacity;
    e->limit = end;
    s->pending_end = end;
    *data = s->map.wbase + e->data_off;
out:
    pthread_mutex_unlock(&s->wmu);
    return st;
}

/*
 * The whole pages covering [lo, hi) minus the first and last if another open reservation has bytes in them:
 * changing the protection of what is left (sealing it, or dropping the writable view) cannot fault a writer
 * of another reservation. Sets *plo and *phi; empty if *plo >= *phi.
 */
static void own_pages(const mz_store *s, const mz_entry *e, uint64_t lo, uint64_t hi, uint64_t *plo,
                      uint64_t *phi) {
    uint64_t pg = mz_page_size;
    *plo = lo / pg * pg;
    *phi = (hi + pg - 1) / pg * pg;
    /* Callers have taken e out of the open reservations: with none left there is nobody to fault, and the
     * walk over every pending entry below would make a batch of n reserve+patch pairs cost O(n^2). */
    if (!s->open_reservations) return;
    for (uint32_t i = s->n_committed; i < s->n; i++) {
        const mz_entry *o = &s->e[i];
        if (o == e || !(o->mark & MZ_MARK_RESERVED)) continue;
        uint64_t olo = o->data_off / pg * pg, ohi = (o->data_off + o->csize + pg - 1) / pg * pg;
        if (olo <= *plo && *plo < ohi) *plo += pg;
        if (*phi > olo && *phi - pg < ohi && *phi > *plo) *phi -= pg;
    }
}

int mmzip_patch(mmzip_t *h, const char *key, uint64_t size) {
    int st;
    mz_entry *e = lock_reservation(h, key, "mmzip_patch", &st);
    if (!e) return st;
    mz_store *s = h->s;
    size_t nlen = strlen(key);
    if (size > e->csize) {
        st = mz_fail(MMZIP_EINVAL, "%s: entry '%s': size %llu exceeds the reserved capacity %llu", s->path, key,
                     (unsigned long long)size, (unsigned long long)e->csize);
        goto out;
    }
    if (size && key[nlen - 1] == '/') {
        st = folder_with_data(s, key, "its bytes");
        goto out;
    }
    uint32_t crc = mz_crc32(0, s->map.base + e->data_off, (size_t)size);
    mz_io_trace_mapped(s, e->data_off, size, "reserve.fill");
    uint32_t pad = (uint32_t)(e->data_off - e->lfh_off - MZ_OUR_LFH_OVERHEAD - nlen);
    size_t hlen = mz_our_lfh_size(nlen, pad);
    uint8_t *hdr = malloc(hlen);
    if (!hdr) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    mz_stamp stamp;
    mz_stamp_of_cdh(&stamp, s->cd + e->cd_rec);
    mz_write_lfh(hdr, key, nlen, crc, size, e->alignment, pad, &stamp);
    st = mz_io_write(s, hdr, hlen, e->lfh_off, "patch.header");
    free(hdr);
    if (st) goto out;
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    int last = e->data_off + e->csize == s->pending_end;
    uint64_t room = e->keeps_room ? e->csize - size : 0;
    e->crc = crc;
    e->csize = e->usize = size;
    e->limit = e->data_off + size;
    e->room = room;
    mz_patch_our_cdh(s->cd + e->cd_rec, crc, size);
    if (e->keeps_room) mz_set_cdh_room(s->cd + e->cd_rec, room, 0);
    e->mark &= (uint8_t)~MZ_MARK_RESERVED;
    s->open_reservations--;
    s->n_pending_live++;
    if (e->replaces != MZ_NONE) mz_shadow_committed(s, &s->e[e->replaces]);
    s->sorted_valid = 0;
    pthread_rwlock_unlock(&s->rw);
    /* A shrunken reservation that is still the last pending entry gives its slack back, unless a commit made
     * in the meantime already put the directory behind the whole reservation. */
    if (last && !room && e->data_off + size >= s->data_end) s->pending_end = e->data_off + size;
    uint64_t plo, phi;
    own_pages(s, e, e->data_off, e->data_off + size, &plo, &phi);
    if (plo < phi) mz_map_seal(&s->map, plo, phi - plo);
    /* Kept room reads as zeros, whatever the caller left past the size, and costs no disk until the entry
     * grows into it: the blocks allocated for the reservation go back (a hole). The caller's view of it is
     * dropped; the view stays valid, read-only, up to the size. */
    if (room) {
        own_pages(s, e, e->data_off + size, e->data_off + size + room, &plo, &phi);
        if (plo < e->data_off + size) plo += mz_page_size;
        if (plo < phi) mz_map_drop_writable(&s->map, plo, phi - plo);
        mz_crashpoint("patch.room");
        int zst = mz_io_zero(s, e->data_off + size, room, "patch.room");
        if (zst) {
            st = zst;
            goto out;
        }
    }
    s->bytes_since_commit += size + hlen;
    st = maybe_autocommit(s);
out:
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_unreserve(mmzip_t *h, const char *key) {
    int st;
    mz_entry *e = lock_reservation(h, key, "mmzip_unreserve", &st);
    if (!e) return st;
    mz_store *s = h->s;
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    /* The table keeps the entry, dead, as the head of its name: lookups fall through to the version it would
     * have replaced (mz_visible_version), and the next commit leaves it out of the directory. */
    e->mark = (uint8_t)((e->mark & ~MZ_MARK_RESERVED) | MZ_MARK_DEAD);
    s->open_reservations--;
    s->n_dead++;
    s->sorted_valid = 0;
    uint64_t end = e->data_off + e->csize, plo, phi;
    own_pages(s, e, e->data_off, end, &plo, &phi);
    if (plo < phi) mz_map_drop_writable(&s->map, plo, phi - plo);
    pthread_rwlock_unlock(&s->rw);
    /* The last thing written gives its space back, unless a commit already put the directory after it. */
    if (end == s->pending_end && e->lfh_off >= s->data_end) s->pending_end = e->lfh_off;
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_begin(mmzip_t *h) {
    int st = check_writable(h, "mmzip_begin");
    if (st) return st;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    if (s->batch) st = mz_fail(MMZIP_EINVAL, "%s: a batch is already open (batches do not nest)", s->path);
    else s->batch = 1;
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_commit(mmzip_t *h) {
    int st = check_writable(h, "mmzip_commit");
    if (st) return st;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    st = mz_commit_locked(s, 0);
    if (st == MMZIP_OK) s->batch = 0;
    mz_shared_leave(s); /* shared: the transaction is published, the lock goes */
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mmzip_rollback(mmzip_t *h) {
    int st = check_writable(h, "mmzip_rollback");
    if (st) return st;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    st = mz_rollback_locked(s);
    mz_shared_leave(s);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mz_rollback_locked(mz_store *s) {
    int st;
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    for (uint32_t i = s->n_committed; i < s->n; i++)
        if (s->e[i].mark & MZ_MARK_RESERVED) mz_map_drop_writable(&s->map, s->e[i].data_off, s->e[i].csize);
    for (uint32_t i = 0; i < s->n_committed; i++) s->e[i].mark &= (uint8_t)~MZ_MARK_SHADOWED;
    s->n = s->n_committed;
    s->cd_len = s->cd_committed_len;
    s->n_pending_live = s->n_shadowed = s->n_dead = 0;
    s->open_reservations = 0;
    s->pending_end = s->data_end > mz_edit_floor(s) ? s->data_end : mz_edit_floor(s);
    s->wbuf_len = 0;
    __atomic_store_n(&s->written_end, UINT64_MAX, __ATOMIC_RELEASE);
    s->bytes_since_commit = 0;
    s->batch = 0;
    st = mz_table_rebuild(s);
    pthread_rwlock_unlock(&s->rw);
    return st;
}

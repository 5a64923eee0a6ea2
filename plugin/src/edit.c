/*
 * edit.c - changing a committed stored entry where it lies, at the cost of the change (mmzip_edit_*), and the
 * entry holds that keep such changes away from readers (mmzip_hold).
 *
 * Everything else in mmzip appends; this is the one place that writes over committed bytes, so it carries
 * its own crash protocol (docs/protocol.md, "In-place edits", is the specification):
 *
 *   - Before a committed byte of the entry (its data, or its local header) is first overwritten after the
 *     last publish, the block holding it is copied to the undo journal, a file beside the archive
 *     (<archive>.mmzip-undo). The journal names the entry (local-header offset) and the committed version it
 *     restores (size and CRC, as the directory states them), and every record carries the journal's nonce
 *     and a CRC of itself: a record is applied only if it is whole and belongs to this journal.
 *   - Bytes past the committed size (the entry's growth) are not committed: nobody refers to them, so they
 *     need no journal. When the entry is the physically last one they are obtained by moving the directory
 *     out of the way (mz_ensure_room, the relocation every append already uses).
 *   - Publishing writes the new CRC and sizes into the local header (journaled first) and commits a directory
 *     whose record of the entry carries them: that commit's truncate is the commit point. The journal is then
 *     reset to the new version (truncated, then a new header with a new nonce) before the next change, or
 *     removed as it is if the edit ends first (journal_fresh).
 *   - Recovery (at every writable open, before anything else) finds a journal whose entry still has, in the
 *     committed directory, exactly the size and CRC the journal restores: the edit never published, and its
 *     records are written back. A journal that restores another version is stale (the crash came between the
 *     commit point and the reset) and is deleted. Applying the records twice is harmless.
 *   - Durable mode: the journal is fdatasync'ed before every overwrite of bytes it protects, and its creation
 *     is made durable (file and directory) before the first one.
 *
 * Readers of the entry itself would see bytes change under their pointers. Edits therefore take an
 * exclusive OFD lock on a byte of the archive file far past its end, derived from the entry's local-header
 * offset; mmzip_hold() takes it shared. An edit fails with MMZIP_EBUSY while someone holds the entry, a hold
 * fails while it is being edited (or while a journal of a killed editor still awaits recovery). Other
 * entries are never written, so their readers need nothing.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef F_OFD_SETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#endif

#define MZ_ENTRY_LOCK_BASE ((off_t)1 << 61) /* + local-header offset; the writer's bytes are at 1 << 62 */
#define MZ_UNDO_BLOCK 4096u
#define MZ_UNDO_SUFFIX ".mmzip-undo"
#define MZ_UNDO_MAGIC "MMZUNDO1"
#define MZ_UNDO_HEADER 48u   /* magic 8, nonce 8, lfh_off 8, data_off 8, size 8, crc 4, header crc 4 */
#define MZ_UNDO_REC_MAGIC 0x52555a4du /* "MZUR" */
#define MZ_UNDO_REC_HEAD 28u /* magic 4, nonce 8, offset 8, length 4, crc 4 (of the rest of the head + data) */
/* Extents of the growth whose CRC an edit keeps. HDF5 appends in order, so they merge into a few; a session
 * that scatters more than this reads the rest back at its publish. */
#define MZ_GROWN_MAX 64u
#define ENAME(e) (int)(e)->name_len, mz_name(s, (e))

struct mz_edit {
    char *key;
    uint64_t lfh_off, data_off, lfh_len; /* lfh_len: the header bytes a publish rewrites (fixed + name + ZIP64) */
    uint8_t *lfh;                        /* those bytes as committed: read at the begin, then what publishes wrote */
    uint64_t base_size;                  /* the committed version that the journal restores */
    uint32_t base_crc;
    uint64_t nonce;
    uint64_t room_end;                   /* absolute: bytes below it are the entry's to write */
    uint64_t reach_end;                  /* absolute: the end of the entry's recorded room (mmzip_reserve_room) */
    uint64_t high;                       /* the highest byte written this version, relative to data_off */
    int last;                            /* the physically last entry: room comes from moving the directory */
    int jfd;
    char *jpath;
    uint64_t jend;
    uint8_t *saved;                      /* one bit per MZ_UNDO_BLOCK of the committed version */
    uint64_t nblocks;
    int lfh_saved;
    int locked;                          /* the entry's lock is taken, on the store's descriptor */
    int dirty;                           /* overwritten or grown since the last publish */
    struct mz_grown {                    /* CRCs of bytes written past base_size (see grown_record) */
        uint64_t off, len;               /* relative to data_off; sorted, disjoint */
        uint32_t crc;
    } grown[MZ_GROWN_MAX];
    unsigned n_grown;
    uint32_t crc_delta;                  /* what the writes since the last publish did to the CRC (crc_delta_note) */
    int crc_delta_known;                 /* 0 once a change to committed bytes went unnoted */
    int journal_stale;                   /* see journal_fresh */
};

static char *journal_path(const char *path) {
    size_t n = strlen(path);
    char *p = malloc(n + sizeof MZ_UNDO_SUFFIX);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, MZ_UNDO_SUFFIX, sizeof MZ_UNDO_SUFFIX);
    }
    return p;
}

static int entry_lock(int fd, short type, uint64_t lfh_off) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = MZ_ENTRY_LOCK_BASE + (off_t)lfh_off;
    fl.l_len = 1;
    for (;;) {
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0) return 0;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EACCES) return 1;
        return -1; /* unsupported: no exclusion (the archive's writer lock says so in mmzip_info) */
    }
}

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
/* The new CRC at the cost of the change                                                                  */

/*
 * A publish must give the directory the CRC-32 of the whole entry, and reading a 1 GiB member to compute it
 * would make every session cost the member's size again. CRC-32 is affine over GF(2): for messages A, B of
 * one length, crc(B) = crc(A) ^ crc0(A ^ B), where crc0 is the pure polynomial remainder (no pre- or
 * post-conditioning). A ^ B is zero outside the changed blocks, whose old bytes the journal holds; each
 * block's crc0 is moved to its place by multiplying with x^(8 * bytes after it) mod P. Growth is then a
 * CRC concatenation with the appended bytes. So a publish reads what changed and what was appended, not the
 * entry. The arithmetic (polynomials in the reflected bit order of CRC-32) is the textbook one.
 */
#define MZ_CRC_POLY 0xedb88320u

static uint32_t gf2_mul(uint32_t a, uint32_t b) { /* a * b mod P, both reflected */
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ MZ_CRC_POLY : b >> 1;
    }
    return p;
}

/* x^(8n) mod P: x^(2^k) for k = 3.. by squaring, multiplied in for each bit of n. */
static uint32_t x8n_mod_p(uint64_t n) {
    uint32_t sq = 1u << 30; /* x^1 */
    for (int k = 0; k < 3; k++) sq = gf2_mul(sq, sq);
    uint32_t p = 1u << 31; /* x^0 */
    while (n) {
        if (n & 1) p = gf2_mul(sq, p);
        sq = gf2_mul(sq, sq);
        n >>= 1;
    }
    return p;
}

/* The remainder of data followed by `after` zero bytes, unconditioned: mz_crc32 inverts the register before
 * and after, so starting it from all ones runs the bare remainder. */
static uint32_t crc0_shifted(const uint8_t *data, size_t len, uint64_t after) {
    return gf2_mul(x8n_mod_p(after), ~mz_crc32(0xFFFFFFFFu, data, len));
}

/*
 * The change to committed bytes, noted as it is written. By the same algebra, a write that turns bytes P
 * into N changes the entry's CRC by crc0(P ^ N) shifted to its place, and the changes of successive writes
 * add up (P ^ N, then N ^ M, is P ^ M). A small write has just read P to compare it, so the publish needs to
 * read nothing: before, it read each changed block back from the journal and from the file (three reads per
 * block, a third of a short HDF5 session's system calls). A write that did not read P (a large one) leaves
 * the delta unknown, and the publish falls back to the journal.
 */
static void crc_delta_note(struct mz_edit *ed, uint64_t at, uint8_t *prev, const uint8_t *now, size_t len) {
    for (size_t i = 0; i < len; i++) prev[i] ^= now[i];
    ed->crc_delta ^= crc0_shifted(prev, len, ed->base_size - at - len);
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

/* crc(A || B) from crc(A), crc(B) and |B|: the conditioning of the two cancels (the textbook combination). */
static uint32_t crc_concat(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    return gf2_mul(x8n_mod_p(len_b), crc_a) ^ crc_b;
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
static void grown_forget(struct mz_edit *ed, uint64_t lo, uint64_t hi) {
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
static void grown_record(struct mz_edit *ed, uint64_t off, const uint8_t *data, uint64_t len) {
    if (off + len <= ed->base_size) return;
    if (off < ed->base_size) {
        data += ed->base_size - off;
        len -= ed->base_size - off;
        off = ed->base_size;
    }
    uint64_t end = off + len;
    uint32_t crc = mz_crc32(0, data, (size_t)len);
    unsigned i = 0;
    while (i < ed->n_grown && ed->grown[i].off < off) i++;
    struct mz_grown *prev = i > 0 && ed->grown[i - 1].off + ed->grown[i - 1].len == off ? &ed->grown[i - 1] : NULL;
    struct mz_grown *next = i < ed->n_grown && ed->grown[i].off == end ? &ed->grown[i] : NULL;
    if (prev) {
        prev->crc = crc_concat(prev->crc, crc, len);
        prev->len += len;
        if (next) {
            prev->crc = crc_concat(prev->crc, next->crc, next->len);
            prev->len += next->len;
            memmove(next, next + 1, (size_t)(ed->n_grown - i - 1) * sizeof *next);
            ed->n_grown--;
        }
    } else if (next) {
        next->crc = crc_concat(crc, next->crc, next->len);
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
static int growth_crc(mz_store *s, const struct mz_edit *ed, uint64_t from, uint64_t to, uint32_t *crc) {
    uint64_t pos = from;
    for (unsigned i = 0; i < ed->n_grown && pos < to; i++) {
        const struct mz_grown *g = &ed->grown[i];
        if (g->off + g->len > to) break; /* cut by the published size: read back from here */
        if (g->off > pos) {
            int st = crc_of_file(s, ed->data_off + pos, g->off - pos, crc);
            if (st) return st;
        }
        *crc = crc_concat(*crc, g->crc, g->len);
        pos = g->off + g->len;
    }
    return pos < to ? crc_of_file(s, ed->data_off + pos, to - pos, crc) : MMZIP_OK;
}

/* Applies to *crc the change of the committed bytes that the journal's old blocks show against the file: what
 * a publish reads when some write did not note its change (crc_delta_known == 0). */
static int journal_crc_change(mz_store *s, const struct mz_edit *ed, uint32_t *crc) {
    uint64_t n0 = ed->base_size;
    uint8_t head[MZ_UNDO_REC_HEAD];
    uint8_t *old = NULL, *cur = NULL;
    size_t cap = 0;
    int st = MMZIP_OK;
    for (uint64_t pos = MZ_UNDO_HEADER; pos + MZ_UNDO_REC_HEAD <= ed->jend;) {
        if (mz_pread_full(ed->jfd, head, sizeof head, pos) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read back the undo journal", s->path);
            break;
        }
        uint64_t off = mz_get64(head + 12);
        uint32_t len = mz_get32(head + 20);
        pos += MZ_UNDO_REC_HEAD + len;
        if (off < ed->data_off) continue; /* the local header */
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
        if (mz_pread_full(ed->jfd, old, len, pos - len) != 0) {
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read back the undo journal", s->path);
            break;
        }
        uint64_t at = off - ed->data_off;
        if (mz_pread_full(s->fd, cur, len, off) != 0) { /* see crc_of_file */
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the edited bytes back", s->path);
            break;
        }
        for (uint32_t i = 0; i < len; i++) old[i] ^= cur[i];
        *crc ^= crc0_shifted(old, len, n0 - at - len);
    }
    free(old);
    free(cur);
    return st;
}

/* The entry's CRC after the edit: from its committed CRC and the changes noted as they were written
 * (crc_delta), or, if some were not, from the journal's old blocks against the file; then the appended
 * bytes. A full computation if it shrank. */
static int edited_crc(mz_store *s, struct mz_edit *ed, uint64_t size, uint32_t *out) {
    const uint8_t *now = s->map.base + ed->data_off;
    if (size < ed->base_size) {
        *out = mz_crc32(0, now, (size_t)size);
        return MMZIP_OK;
    }
    uint32_t crc = ed->base_crc;
    int st = MMZIP_OK;
    if (ed->crc_delta_known) crc ^= ed->crc_delta;
    else st = journal_crc_change(s, ed, &crc);
    if (!st && size > ed->base_size) st = growth_crc(s, ed, ed->base_size, size, &crc);
    if (st) return st;
    *out = crc;
    return MMZIP_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The journal file                                                                                      */

static int jwrite(mz_store *s, int fd, const void *buf, size_t len, uint64_t off, const char *what) {
    return mz_io_write_fd(s, fd, buf, len, off, what);
}

static int jsync(mz_store *s, int fd, const char *what) {
    if (!(s->opts.flags & MMZIP_DURABLE)) return MMZIP_OK;
    mz_crashpoint(what);
    if (fdatasync(fd) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the undo journal (%s)", s->path, what);
    mz_io_trace_journal(s, MZ_OP_JSYNC, 0, what);
    return MMZIP_OK;
}

static void encode_header(uint8_t *h, const struct mz_edit *ed) {
    memcpy(h, MZ_UNDO_MAGIC, 8);
    mz_put64(h + 8, ed->nonce);
    mz_put64(h + 16, ed->lfh_off);
    mz_put64(h + 24, ed->data_off);
    mz_put64(h + 32, ed->base_size);
    mz_put32(h + 40, ed->base_crc);
    mz_put32(h + 44, mz_crc32(0, h, 44));
}

/* Starts the journal over for the current committed version: a new header (with a new nonce, so that no
 * record of an older version can ever be taken for one of this version, whatever order the header and the
 * truncate reach the disk in), then cut after it. Not cut to zero first: ext4 (auto_da_alloc) flushes a file
 * truncated to zero when it is closed, which cost milliseconds per session. */
static int journal_file_reset(mz_store *s, struct mz_edit *ed, int empty) {
    ed->nonce = fresh_nonce();
    uint8_t h[MZ_UNDO_HEADER];
    encode_header(h, ed);
    int st = jwrite(s, ed->jfd, h, sizeof h, 0, "edit.journal_header");
    if (st) return st;
    mz_crashpoint("edit.journal_reset");
    /* A file just created empty is the header's length already (the trace still says so). */
    if (!empty && ftruncate(ed->jfd, MZ_UNDO_HEADER) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot reset the undo journal", s->path);
    mz_io_trace_journal(s, MZ_OP_JTRUNCATE, MZ_UNDO_HEADER, "edit.journal_reset");
    ed->journal_stale = 0;
    return MMZIP_OK;
}

/* What the edit knows of the journal, for a journal that holds nothing of the current committed version. */
static int journal_forget(mz_store *s, struct mz_edit *ed) {
    ed->jend = MZ_UNDO_HEADER;
    ed->lfh_saved = 0;
    ed->dirty = 0;
    ed->n_grown = 0; /* the committed size moved: the growth starts afresh */
    ed->crc_delta = 0;
    ed->crc_delta_known = 1;
    uint64_t nb = (ed->base_size + MZ_UNDO_BLOCK - 1) / MZ_UNDO_BLOCK;
    uint8_t *bits = calloc((size_t)(nb + 7) / 8 + 1, 1);
    if (!bits) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    free(ed->saved);
    ed->saved = bits;
    ed->nblocks = nb;
    return MMZIP_OK;
}

static int journal_reset(mz_store *s, struct mz_edit *ed, int empty) {
    int st = journal_file_reset(s, ed, empty);
    return st ? st : journal_forget(s, ed);
}

/* A publish leaves the journal as it was, stale: it restores a version the directory no longer names, which
 * recovery deletes without applying (the state a crash between the commit point and a reset always left).
 * It is reset before the next change, and an edit that ends instead - a session that publishes at its
 * close - just removes it: a write and a truncate of the journal saved per session. */
static int journal_fresh(mz_store *s, struct mz_edit *ed) {
    return ed->journal_stale ? journal_file_reset(s, ed, 0) : MMZIP_OK;
}

/* Appends the committed bytes [off, off+len) of the archive (absolute) to the journal: `bytes` if the caller
 * has just read them, else read here. */
static int journal_save(mz_store *s, struct mz_edit *ed, uint64_t off, uint64_t len, const uint8_t *bytes) {
    uint8_t *rec = malloc(MZ_UNDO_REC_HEAD + len);
    if (!rec) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    mz_put32(rec, MZ_UNDO_REC_MAGIC);
    mz_put64(rec + 4, ed->nonce);
    mz_put64(rec + 12, off);
    mz_put32(rec + 20, (uint32_t)len);
    if (bytes) memcpy(rec + MZ_UNDO_REC_HEAD, bytes, (size_t)len);
    /* Read, not copied from the mapping: see unchanged(). */
    else if (mz_pread_full(s->fd, rec + MZ_UNDO_REC_HEAD, (size_t)len, off) != 0) {
        free(rec);
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the committed bytes to save", s->path);
    }
    mz_put32(rec + 24, mz_crc32(mz_crc32(0, rec + 4, 20), rec + MZ_UNDO_REC_HEAD, (size_t)len));
    int st = jwrite(s, ed->jfd, rec, MZ_UNDO_REC_HEAD + len, ed->jend, "edit.journal_record");
    free(rec);
    if (!st) ed->jend += MZ_UNDO_REC_HEAD + len;
    return st;
}

typedef struct journal_head {
    uint64_t nonce, lfh_off, data_off, size;
    uint32_t crc;
} journal_head;

/* 1 and *jh if fd holds a whole journal header, 0 if not. */
static int read_head(int fd, journal_head *jh) {
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

/* Writes every whole record of the journal back into the archive, in order, and flushes. Records past the
 * first torn or foreign one were never followed by the overwrite they protect. */
static int journal_apply(mz_store *s, int fd, const journal_head *jh, uint64_t lo, uint64_t hi,
                         const char *what, uint64_t *written) {
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

static int journal_remove(mz_store *s, const char *jpath) {
    mz_crashpoint("edit.journal_remove");
    if (unlink(jpath) != 0 && errno != ENOENT)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot remove the undo journal %s", s->path, jpath);
    if ((s->opts.flags & MMZIP_DURABLE) && mz_fsync_dir_of(jpath) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, jpath);
    mz_io_trace_journal(s, MZ_OP_JREMOVE, 0, "edit.journal_remove");
    return MMZIP_OK;
}

/* The committed entry whose local header is at lfh_off, or NULL. */
static mz_entry *committed_at(mz_store *s, uint64_t lfh_off) {
    for (uint32_t i = 0; i < s->n_committed; i++)
        if (s->e[i].lfh_off == lfh_off && !(s->e[i].mark & (MZ_MARK_SHADOWED | MZ_MARK_BAD))) return &s->e[i];
    return NULL;
}

/* 1 if the journal restores exactly the version of the entry that the committed directory names. */
static int journal_is_hot(mz_store *s, const journal_head *jh) {
    mz_entry *e = committed_at(s, jh->lfh_off);
    if (!e || e->method != 0 || e->usize != jh->size || e->crc != jh->crc) return 0;
    if (mz_resolve_data(s, e) != MMZIP_OK) return 0;
    return e->data_off == jh->data_off;
}

int mz_edit_recover(mz_store *s) {
    char *jpath = journal_path(s->path);
    if (!jpath) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    int fd = open(jpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        free(jpath);
        return err == ENOENT ? MMZIP_OK : mz_fail_errno(MMZIP_EIO, err, "%s: cannot open its undo journal", s->path);
    }
    journal_head jh;
    int st = MMZIP_OK, whole = read_head(fd, &jh);
    mz_entry *e = whole ? committed_at(s, jh.lfh_off) : NULL;
    uint64_t written = 0, room = 0;
    if (whole && journal_is_hot(s, &jh)) {
        st = journal_apply(s, fd, &jh, e->lfh_off, e->data_off + e->csize, "recover.undo", &written);
        /* Growth into the entry's room was not journaled (nothing refers to it): it is cleared, so that
         * the room reads as zeros again for the next edit. */
        room = mz_room_of(s, e);
        if (!st && room) {
            mz_crashpoint("recover.clear_room");
            st = mz_io_zero(s, e->data_off + e->csize, room, "recover.clear_room");
        }
        s->journal_restored += written;
        if (written)
            mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL, mz_name(s, e), e->name_len, written, e->lfh_off,
                             "%s: restored entry '%.*s' to its last commit (%llu bytes, crc %08x): wrote back %llu "
                             "bytes of that commit from the undo journal %s, left by an in-place edit whose writer "
                             "was killed before it published, and removed the journal%s", s->path, ENAME(e),
                             (unsigned long long)e->usize, e->crc, (unsigned long long)written, jpath,
                             room ? "; the room after it, where that edit may have grown it, reads as zeros again"
                                  : "");
        else
            mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL_GONE, mz_name(s, e), e->name_len, 0, e->lfh_off,
                             "%s: removed the undo journal %s of entry '%.*s': the in-place edit was killed before "
                             "it changed a committed byte, so the entry is at its last commit as it was", s->path,
                             jpath, ENAME(e));
    } else if (whole && e) {
        mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL_GONE, mz_name(s, e), e->name_len, 0, e->lfh_off,
                         "%s: removed the undo journal %s of entry '%.*s', which restores a version the directory "
                         "no longer names: the edit had published before its writer died; nothing to undo",
                         s->path, jpath, ENAME(e));
    } else {
        mz_recovery_note(s, MMZIP_RECOVERY_JOURNAL_GONE, NULL, 0, 0, 0,
                         "%s: removed the undo journal %s, which %s: nothing to undo", s->path, jpath,
                         whole ? "names no committed entry (the edited entry was replaced or removed since)"
                               : "holds no whole header (an in-place edit killed while creating it)");
    }
    close(fd);
    if (!st) st = journal_remove(s, jpath);
    free(jpath);
    return st;
}

/* 1 if the journal holds at least one whole record: only then can the entry differ from its committed
 * version (every overwrite follows the record of what it overwrites). */
static int journal_has_record(int fd, const journal_head *jh) {
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

int mz_edit_lock_held(mz_store *s, uint64_t lfh_off) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = MZ_ENTRY_LOCK_BASE + (off_t)lfh_off;
    fl.l_len = 1;
    if (s->edit && s->edit->lfh_off == lfh_off) return 1;
    return fcntl(s->fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

int mz_edit_pending(mz_store *s, mz_entry **out, uint64_t *journal_bytes, int *live) {
    *out = NULL;
    *journal_bytes = 0;
    *live = 0;
    char *jpath = journal_path(s->path);
    int fd = jpath ? open(jpath, O_RDONLY | O_CLOEXEC) : -1;
    free(jpath);
    if (fd < 0) return 0;
    journal_head jh;
    struct stat st;
    int hot = read_head(fd, &jh) && journal_is_hot(s, &jh) && journal_has_record(fd, &jh);
    if (hot) {
        *out = committed_at(s, jh.lfh_off);
        *journal_bytes = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
        *live = mz_edit_lock_held(s, jh.lfh_off);
    }
    close(fd);
    return hot;
}

void mz_edit_mark(mz_store *s) {
    char *jpath = journal_path(s->path);
    int fd = jpath ? open(jpath, O_RDONLY | O_CLOEXEC) : -1;
    free(jpath);
    if (fd < 0) return;
    journal_head jh;
    if (read_head(fd, &jh) && journal_is_hot(s, &jh) && journal_has_record(fd, &jh))
        committed_at(s, jh.lfh_off)->mark |= MZ_MARK_EDITING;
    close(fd);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Holds                                                                                                  */

struct mmzip_hold {
    int fd;
};

int mmzip_hold(mmzip_t *h, const char *key, mmzip_hold_t **out) {
    if (!h || !key || !out) return mz_fail(MMZIP_EINVAL, "mmzip_hold: NULL argument");
    *out = NULL;
    mz_store *s = h->s;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = mz_lookup(s, key, strlen(key), 0);
    uint64_t lfh_off = e ? e->lfh_off : 0;
    mz_entry copy;
    if (e) copy = *e;
    pthread_rwlock_unlock(&s->rw);
    if (!e) return mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot open it to hold '%s'", s->path, key);
    int r = entry_lock(fd, F_RDLCK, lfh_off);
    if (r == 1) {
        close(fd);
        return mz_fail(MMZIP_EBUSY, "%s: entry '%s' is being written in place by another process or handle; "
                       "it can be read again once that writer closes it (HDF5's own file locking refuses a "
                       "reader of a file open for writing the same way)", s->path, key);
    }
    char *jpath = journal_path(s->path);
    int jfd = jpath ? open(jpath, O_RDONLY | O_CLOEXEC) : -1;
    free(jpath);
    if (jfd >= 0) {
        journal_head jh;
        int hot = read_head(jfd, &jh) && jh.lfh_off == lfh_off && jh.size == copy.usize && jh.crc == copy.crc &&
                  journal_has_record(jfd, &jh);
        close(jfd);
        if (hot) {
            close(fd);
            return mz_fail(MMZIP_EBUSY, "%s: entry '%s' was being written in place when its writer was killed; its "
                           "committed version is restored by `mmzip recover %s` (or any writable open)", s->path,
                           key, s->path);
        }
    }
    mmzip_hold_t *hd = malloc(sizeof *hd);
    if (!hd) {
        close(fd);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    hd->fd = fd;
    *out = hd;
    return MMZIP_OK;
}

void mmzip_release(mmzip_hold_t *hold) {
    if (!hold) return;
    close(hold->fd);
    free(hold);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Edits                                                                                                  */

static int check_editor(mmzip_t *h, const char *key, const char *fn) {
    if (!h || !key) return mz_fail(MMZIP_EINVAL, "%s: NULL argument", fn);
    if (!h->writable) return mz_fail(MMZIP_EREADONLY, "%s: opened read-only; cannot edit '%s'", h->s->path, key);
    if (h->s->owner != mz_current_pid())
        return mz_fail(MMZIP_EBUSY, "%s: this handle was inherited across fork(); open the archive again",
                       h->s->path);
    return MMZIP_OK;
}

/* The edit of key, with the writer mutex held; or NULL with *st set and the mutex released. */
static struct mz_edit *lock_edit(mmzip_t *h, const char *key, const char *fn, int *st) {
    if ((*st = check_editor(h, key, fn)) != MMZIP_OK) return NULL;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    struct mz_edit *ed = s->edit;
    if (!ed || strcmp(ed->key, key) != 0) {
        *st = mz_fail(MMZIP_EINVAL, "%s: %s: entry '%s' is not being edited in place", s->path, fn, key);
        pthread_mutex_unlock(&s->wmu);
        return NULL;
    }
    return ed;
}

static void edit_free(mz_store *s, struct mz_edit *ed) {
    if (!ed) return;
    if (ed->jfd >= 0) close(ed->jfd);
    if (ed->locked) (void)entry_lock(s->fd, F_UNLCK, ed->lfh_off);
    free(ed->jpath);
    free(ed->lfh);
    free(ed->saved);
    free(ed->key);
    free(ed);
}

uint64_t mz_edit_floor(const mz_store *s) { return s->edit && s->edit->last ? s->edit->room_end : 0; }

/* Where the bytes after the entry stop being its own: the end of its recorded room (mmzip_reserve_room),
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

int mmzip_edit_begin(mmzip_t *h, const char *key, const void **view, uint64_t *room) {
    int st = check_editor(h, key, "mmzip_edit_begin");
    if (st) return st;
    if (!view) return mz_fail(MMZIP_EINVAL, "mmzip_edit_begin: NULL view");
    mz_store *s = h->s;
    size_t nlen = strlen(key);
    pthread_mutex_lock(&s->wmu);
    struct mz_edit *ed = NULL;
    if (s->edit) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' is already being edited in place (one at a time per archive)",
                     s->path, s->edit->key);
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
    if (!(ed->key = strdup(key)) || !(ed->jpath = journal_path(s->path))) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto fail;
    }
    ed->jfd = -1;
    ed->lfh_off = e->lfh_off;
    ed->data_off = e->data_off;
    ed->lfh_len = MZ_LFH_FIXED + nlen + MZ_LFH_ZIP64_EXTRA;
    ed->base_size = e->usize;
    ed->base_crc = e->crc;
    ed->room_end = room_limit(s, e, &ed->last);
    ed->reach_end = e->data_off + e->csize + mz_room_of(s, e);
    ed->high = e->usize;
    /* On the store's own descriptor: a hold opens one of its own (mmzip_hold), so that even a hold in this
     * process conflicts with the edit. */
    int locked = entry_lock(s->fd, F_WRLCK, ed->lfh_off);
    if (locked == 1) {
        st = mz_fail(MMZIP_EBUSY, "%s: entry '%s' is held by a reader (mmzip_hold) in this or another process; "
                     "it cannot be edited in place while read", s->path, key);
        goto fail;
    }
    ed->locked = locked == 0;
    mz_crashpoint("edit.journal_create");
    /* Normally there is no journal (recovery at the open removed any): a new one needs no truncate. */
    int fresh = 1;
    ed->jfd = open(ed->jpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (ed->jfd < 0 && errno == EEXIST) {
        fresh = 0;
        ed->jfd = open(ed->jpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    }
    if (ed->jfd < 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot create the undo journal %s", s->path, ed->jpath);
        goto fail;
    }
    st = journal_reset(s, ed, fresh);
    if (!st) st = jsync(s, ed->jfd, "edit.sync_journal_create");
    if (!st && (s->opts.flags & MMZIP_DURABLE) && mz_fsync_dir_of(ed->jpath) != 0)
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, ed->jpath);
    if (!st) mz_io_trace_journal(s, MZ_OP_JCREATE, 0, "edit.journal_create");
    if (st) {
        unlink(ed->jpath);
        goto fail;
    }
    s->edit = ed;
    *view = s->map.base + ed->data_off;
    if (room) *room = ed->last ? UINT64_MAX : ed->room_end - ed->data_off;
    pthread_mutex_unlock(&s->wmu);
    return MMZIP_OK;
fail:
    edit_free(s, ed);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

static int grow_locked(mz_store *s, struct mz_edit *ed, uint64_t capacity) {
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
    s->pending_end = end;
    if (end > s->zero_from) s->zero_from = end;
    return MMZIP_OK;
}

int mmzip_edit_grow(mmzip_t *h, const char *key, uint64_t capacity) {
    int st;
    struct mz_edit *ed = lock_edit(h, key, "mmzip_edit_grow", &st);
    if (!ed) return st;
    st = journal_fresh(h->s, ed);
    if (!st) st = grow_locked(h->s, ed, capacity);
    pthread_mutex_unlock(&h->s->wmu);
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
static int unchanged(mz_store *s, const struct mz_edit *ed, uint64_t offset, const void *data, size_t len) {
    uint64_t known = ed->base_size > ed->high ? ed->base_size : ed->high;
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

int mmzip_edit_write(mmzip_t *h, const char *key, uint64_t offset, const void *data, size_t len) {
    int st;
    struct mz_edit *ed = lock_edit(h, key, "mmzip_edit_write", &st);
    if (!ed) return st;
    mz_store *s = h->s;
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
    if (end <= ed->base_size && len <= MZ_SMALL_EDIT) {
        old_lo = offset / MZ_UNDO_BLOCK * MZ_UNDO_BLOCK;
        uint64_t old_hi = (end + MZ_UNDO_BLOCK - 1) / MZ_UNDO_BLOCK * MZ_UNDO_BLOCK;
        if (old_hi > ed->base_size) old_hi = ed->base_size;
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
    if (!same && offset < ed->base_size) {
        uint64_t b0 = offset / MZ_UNDO_BLOCK, b1 = ((end < ed->base_size ? end : ed->base_size) - 1) / MZ_UNDO_BLOCK;
        int saved_any = 0;
        for (uint64_t b = b0; b <= b1;) {
            if (ed->saved[b >> 3] & (1u << (b & 7))) {
                b++;
                continue;
            }
            uint64_t r = b;
            while (r <= b1 && !(ed->saved[r >> 3] & (1u << (r & 7))) && r - b < 1024) r++;
            uint64_t lo = b * MZ_UNDO_BLOCK, hi = r * MZ_UNDO_BLOCK;
            if (hi > ed->base_size) hi = ed->base_size;
            st = journal_save(s, ed, ed->data_off + lo, hi - lo, old ? old + (lo - old_lo) : NULL);
            if (st) goto out;
            for (uint64_t k = b; k < r; k++) ed->saved[k >> 3] |= (uint8_t)(1u << (k & 7));
            saved_any = 1;
            b = r;
        }
        if (saved_any) {
            st = jsync(s, ed->jfd, "edit.sync_journal");
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
        else if (offset < ed->base_size)
            ed->crc_delta_known = 0;
    }
    grown_record(ed, offset, data, len);
out:
    free(old);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

/* Puts the committed version back (every journaled block) and forgets the growth. */
static int undo_locked(mz_store *s, struct mz_edit *ed) {
    if (!ed->dirty && !ed->lfh_saved) return MMZIP_OK;
    journal_head jh = {ed->nonce, ed->lfh_off, ed->data_off, ed->base_size, ed->base_crc};
    int st = journal_apply(s, ed->jfd, &jh, ed->lfh_off, ed->data_off + ed->base_size, "edit.undo", NULL);
    if (st) return st;
    /* Unpublished growth inside the room is cleared: the room must read as zeros for the next edit. */
    uint64_t hi = ed->data_off + ed->high < ed->reach_end ? ed->data_off + ed->high : ed->reach_end;
    if (hi > ed->data_off + ed->base_size) {
        mz_crashpoint("edit.clear_room");
        st = mz_io_zero(s, ed->data_off + ed->base_size, hi - ed->data_off - ed->base_size, "edit.clear_room");
        if (st) return st;
    }
    ed->high = ed->base_size;
    ed->dirty = 0;
    return journal_reset(s, ed, 0);
}

int mmzip_edit_publish(mmzip_t *h, const char *key, uint64_t size) {
    int st;
    struct mz_edit *ed = lock_edit(h, key, "mmzip_edit_publish", &st);
    if (!ed) return st;
    mz_store *s = h->s;
    size_t nlen = strlen(key);
    uint8_t *lh = NULL;
    if (!ed->dirty && size == ed->base_size) goto out;
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
        uint64_t lo = size > ed->base_size ? size : ed->base_size, hi = ed->high < reach ? ed->high : reach;
        if (hi > lo) {
            mz_crashpoint("edit.clear_room");
            st = mz_io_zero(s, ed->data_off + lo, hi - lo, "edit.clear_room");
            if (st) goto out;
        }
        const uint8_t *cut = s->map.base + ed->data_off;
        for (uint64_t i = size; room && i < ed->base_size; i++)
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
        st = journal_save(s, ed, ed->lfh_off, ed->lfh_len, lh);
        if (!st) st = jsync(s, ed->jfd, "edit.sync_journal_header");
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
        s->pending_end = ed->room_end;
    }
    s->bytes_since_commit += size;
    st = mz_commit_locked(s, 0);
    if (st) goto out;
    free(ed->lfh);
    ed->lfh = lh;
    lh = NULL;
    mz_crashpoint("edit.published");
    ed->base_size = size;
    ed->base_crc = crc;
    ed->high = size;
    ed->reach_end = ed->data_off + size + room;
    if (!ed->last && ed->room_end > ed->reach_end) ed->room_end = ed->reach_end;
    if (ed->last) ed->room_end = s->data_end > ed->data_off + size ? s->data_end : ed->data_off + size;
    ed->journal_stale = 1;
    st = journal_forget(s, ed);
out:
    free(lh);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

int mz_edit_end_locked(mz_store *s) {
    struct mz_edit *ed = s->edit;
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
    close(ed->jfd);
    ed->jfd = -1;
    st = journal_remove(s, ed->jpath);
    s->edit = NULL;
    edit_free(s, ed);
    return st;
}

int mmzip_edit_end(mmzip_t *h, const char *key) {
    int st;
    struct mz_edit *ed = lock_edit(h, key, "mmzip_edit_end", &st);
    if (!ed) return st;
    st = mz_edit_end_locked(h->s);
    pthread_mutex_unlock(&h->s->wmu);
    return st;
}

void mz_edit_free(mz_store *s) {
    edit_free(s, s->edit);
    s->edit = NULL;
}

/*
 * internal.h - structures shared by the modules of libmmzip. Nothing here is part of the API.
 *
 * The files are layers, and a file calls only files listed below it (as SQLite's os.h -> pager.h -> btree.h):
 * nothing below knows what is above it. tests/tools/call_circles.py (the CTest layout_no_call_circles) reads
 * who calls whom from the built objects and fails on any circle. What a lower layer must know of a higher one
 * is kept in the store by the higher one (mz_store.edit_floor, edit_lfh_off, views), never asked by a call up.
 *
 *   9  pack.c         rewriting an archive without dead space (it opens the archive)
 *      check.c        full verification of an archive, interoperability findings, recovery dry run
 *      store.c        opening and closing stores, the per-process registry, handles, info; mmzip_recover (a
 *                     writable open, the directory moved back, a close)
 *   8  recovery.c     repairing a file left by a killed writer, at writable open: the undo journal, the
 *                     structure, then the marked entries of mapped edits; telling mmzip's leftovers from
 *                     foreign anomalies, which are kept; mmzip_unfinished_edits
 *   7  edit.c         editing a committed entry in place: one model (begin, map or write, publish, end),
 *                     journaled (undone by a crash) or mapped (a writable view, kept by a crash, CRC recomputed)
 *   6  write.c        put, reserve, patch, remove, begin, commit, rollback
 *   5  commit.c       the commit protocol: relocating the directory, publishing, the truncate commit point; the
 *                     CRCs of entries edited through views go out with each commit
 *      shared_writer.c shared appending (MMZIP_SHARED): the writer lock per transaction, waiting in turn, and
 *                     bringing a store up to date with what other writers committed (their additions here; a
 *                     full reload through the function store.c installs)
 *   4  kept_tail.c    the directory a relocation leaves, kept for the readers reading it; the free space it
 *                     and the slack below it become, released and handed out again
 *      read.c         get, read, typed views, inflate, CRC checks; why an entry awaiting recovery is refused
 *   3  hold.c         readers' holds on an entry against in-place edits (mmzip_hold)
 *      journal.c      what an edit leaves beside the archive for recovery: the undo journal, the marker file
 *   2  names.c        the names of a listing in one buffer, for bindings (mmzip_list_names)
 *      entry_table.c  the in-memory entry table: hash lookup, visibility, sorted listing, where data starts
 *      trailer.c      finding and validating the end-of-central-directory records, scanning back after a crash
 *      central_dir.c  parsing a central directory into entries, with every hostile-archive check
 *      copy.c         copying large ranges out to the caller (mmzip_read, mmzip_copy), split over helper threads
 *   1  io.c           every write, truncate and sync of the archive (crash points and tracing in test builds),
 *                     the gathered small puts written out
 *      mapping.c      the address-space reservation and the read-only / writable overlays of the file
 *      decode.c       the ZIP compression methods: one table of their numbers, names and decoders (bzip2,
 *                     LZMA, zstd and xz of foreign archives; a new method is one row there)
 *      member_names.c which file an "archive#/member" name means (mmzip_split_name)
 *      crc32_combine.c CRC-32 algebra: the CRC of a whole from its parts (an edit's new CRC at the cost of the change)
 *   0  crc32.c        the CRC-32 of ZIP
 *      reader_grace.c how long a write onto the directory a relocation left waits for third-party readers
 *      zip_format.c   byte layouts of the ZIP records we read and write
 *      locks.c        the cross-process writer lock (and its wait in turn), commit lock and entry edit locks (OFD
 *                     locks), the owning process, whether another process has the file open (a lease)
 *      errors.c       status codes and the per-thread error message
 */
#ifndef MMZIP_INTERNAL_H
#define MMZIP_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "mmzip.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------------------------------------- */
/* ZIP records                                                                                           */

#define MZ_SIG_LFH 0x04034b50u
#define MZ_SIG_CDH 0x02014b50u
#define MZ_SIG_EOCD 0x06054b50u
#define MZ_SIG_Z64_EOCD 0x06064b50u
#define MZ_SIG_Z64_LOC 0x07064b50u
#define MZ_SIG_DD 0x08074b50u

#define MZ_LFH_FIXED 30u
#define MZ_CDH_FIXED 46u
#define MZ_EOCD_FIXED 22u
#define MZ_Z64_EOCD_FIXED 56u
#define MZ_Z64_LOC_FIXED 20u
#define MZ_TRAILER_FIXED (MZ_Z64_EOCD_FIXED + MZ_Z64_LOC_FIXED + MZ_EOCD_FIXED) /* 98 */

#define MZ_EXTRA_ZIP64 0x0001u
#define MZ_EXTRA_ALIGN 0xA11Eu          /* "Data Stream Alignment" (Apache Commons Compress), registered */
#define MZ_EXTRA_ROOM 0x6D52u           /* mmzip's "room": bytes after the data kept for the entry's growth */
#define MZ_ROOM_EXTRA 12u               /* id, size, room (8) in a central-directory record */
#define MZ_EXTRA_KEPT 0x6D4Bu           /* mmzip's "kept tail": the range a put skipped to keep the directory a
                                         * relocation left (kept_tail.c, docs/format.md) */
#define MZ_KEPT_EXTRA 20u               /* id, size, from (8), to (8) in a central-directory record */
#define MZ_LFH_ZIP64_EXTRA 20u          /* id, size, usize, csize */
#define MZ_CDH_ZIP64_EXTRA 28u          /* id, size, usize, csize, local header offset */
#define MZ_ALIGN_EXTRA_MIN 6u           /* id, size, alignment word */
#define MZ_EXTRA_UT 0x5455u             /* "UT", Info-ZIP's extended timestamp */
#define MZ_UT_EXTRA 9u                  /* id, size, flags (1: mtime), mtime (4) - the same in both headers */
#define MZ_OUR_LFH_OVERHEAD (MZ_LFH_FIXED + MZ_LFH_ZIP64_EXTRA + MZ_UT_EXTRA + MZ_ALIGN_EXTRA_MIN) /* + name + padding */
#define MZ_OUR_CDH_OVERHEAD (MZ_CDH_FIXED + MZ_CDH_ZIP64_EXTRA + MZ_UT_EXTRA)                   /* + name */

#define MZ_VERSION_MADE_BY 0x032Du      /* Unix, spec 4.5 */
#define MZ_VERSION_NEEDED 45u           /* ZIP64 */
#define MZ_FLAG_ENCRYPTED 0x0001u
#define MZ_FLAG_DATA_DESCRIPTOR 0x0008u
#define MZ_FLAG_STRONG_ENCRYPTION 0x0040u
#define MZ_FLAG_UTF8 0x0800u
#define MZ_EXTERNAL_ATTR (0100644u << 16)              /* a regular file, rw-r--r-- */
#define MZ_EXTERNAL_ATTR_DIR ((040755u << 16) | 0x10u)  /* a folder ("x/"): rwxr-xr-x, and the MS-DOS bit */

#define MZ_MAX_ALIGNMENT 32768u         /* the 0xA11E field holds the alignment in 15 bits */
#define MZ_DEFAULT_ALIGNMENT 64u
#define MZ_DEFAULT_MAX_FILE_SIZE (1ull << 40)
#define MZ_DEFAULT_MAX_DECODED (16ull << 30)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define MZ_LE16(v) __builtin_bswap16(v)
#define MZ_LE32(v) __builtin_bswap32(v)
#define MZ_LE64(v) __builtin_bswap64(v)
#else
#define MZ_LE16(v) (v)
#define MZ_LE32(v) (v)
#define MZ_LE64(v) (v)
#endif
static inline uint16_t mz_get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return MZ_LE16(v); }
static inline uint32_t mz_get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return MZ_LE32(v); }
static inline uint64_t mz_get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return MZ_LE64(v); }
static inline void mz_put16(uint8_t *p, uint16_t v) { v = MZ_LE16(v); memcpy(p, &v, 2); }
static inline void mz_put32(uint8_t *p, uint32_t v) { v = MZ_LE32(v); memcpy(p, &v, 4); }
static inline void mz_put64(uint8_t *p, uint64_t v) { v = MZ_LE64(v); memcpy(p, &v, 8); }

/* A local-header signature, whole, cleared (wholly or in part), or turned into "PK\5\6" (wholly or in part),
 * by commit.c's neutralize_dead_start. */
static inline int mz_lfh_sig_or_cleared(const uint8_t *p) {
    static const uint8_t sig[4] = {0x50, 0x4b, 0x03, 0x04}, end_sig[4] = {0x50, 0x4b, 0x05, 0x06};
    int lfh = 1, end = 1;
    for (int i = 0; i < 4; i++) {
        if (p[i] != sig[i] && p[i] != 0) lfh = 0;
        if (p[i] != end_sig[i] && p[i] != sig[i]) end = 0;
    }
    return lfh || end;
}

/* zip_format.c: what we write. */
typedef struct mz_header_fields {
    uint16_t flags, method, dos_time, dos_date;
    uint32_t crc;
    uint64_t csize, usize;
    uint32_t external_attr;
    uint32_t mtime;        /* the "UT" field's modification time (Unix seconds, unsigned 32 bits) */
} mz_header_fields;
/* When and what an entry is: the DOS time and date, the "UT" time and the external attributes that go into
 * both of its headers. */
typedef struct mz_stamp {
    uint16_t dos_time, dos_date;
    uint32_t mtime, external_attr;
} mz_stamp;
/* The stamp of a new entry named name: modified at mtime (Unix seconds; MZ_STAMP_NOW for the time of the
 * call), with the Unix mode `mode` (its type and permission bits; 0 for the default, 0644 for a file and 0755
 * for a folder, a name ending in '/'). $SOURCE_DATE_EPOCH, if set, replaces the time of the call and is the
 * latest time any entry gets; the DOS fields are then UTC, so that the bytes do not depend on the time zone. */
#define MZ_STAMP_NOW INT64_MIN
void mz_stamp_make(mz_stamp *st, const char *name, size_t name_len, int64_t mtime, uint32_t mode);
/* The stamp in a central-directory record (the "UT" time if it has one, else the DOS time read as local time,
 * as unzip reads it). */
void mz_stamp_of_cdh(mz_stamp *st, const uint8_t *rec);
void mz_write_lfh_ex(uint8_t *out, const mz_header_fields *f, const char *name, size_t name_len,
                     uint32_t alignment, uint32_t padding);
void mz_write_cdh_ex(uint8_t *out, const mz_header_fields *f, const char *name, size_t name_len,
                     uint64_t lfh_off);
uint32_t mz_align_padding(uint64_t lfh_off, size_t name_len, uint32_t alignment);
/* The general-purpose flags of a name we write: bit 11 (UTF-8) only when the bytes are valid UTF-8. Names
 * are bytes; Python's zipfile decodes a flagged name strictly and refuses the whole archive when one is not
 * UTF-8, while an unflagged one reads (as CP437) everywhere. */
uint16_t mz_name_flags(const char *name, size_t len);
size_t mz_our_lfh_size(size_t name_len, uint32_t padding);
void mz_write_lfh(uint8_t *out, const char *name, size_t name_len, uint32_t crc, uint64_t size,
                  uint32_t alignment, uint32_t padding, const mz_stamp *st);
size_t mz_our_cdh_size(size_t name_len);
/* Our record with a room field (an MZ_ROOM_EXTRA more bytes): writes the field after the ZIP64 one, or
 * rewrites its value. */
void mz_set_cdh_room(uint8_t *rec, uint64_t room, int add);
void mz_write_cdh(uint8_t *out, const char *name, size_t name_len, uint32_t crc, uint64_t size,
                  uint64_t lfh_off, const mz_stamp *st);
/* Appends a kept-tail field (MZ_KEPT_EXTRA more bytes) to a record made by mz_write_cdh: the entry skipped
 * [from, to) to keep the directory and end records a relocation left there. */
void mz_add_cdh_kept(uint8_t *rec, uint64_t from, uint64_t to);
/* The range of a record's kept-tail field, if it has one (1), in a record of rec_len bytes. */
int mz_cdh_kept(const uint8_t *rec, uint64_t rec_len, uint64_t *from, uint64_t *to);
/* Rewrites the range of a record's kept-tail field in place (nothing if it has none). */
void mz_set_cdh_kept(uint8_t *rec, uint64_t rec_len, uint64_t from, uint64_t to);
/* Rewrites the CRC, sizes (stored: csize == usize) of a record made by mz_write_cdh, in place. */
void mz_patch_our_cdh(uint8_t *rec, uint32_t crc, uint64_t size);
/* A ZIP64 trailer: ZIP64 end record, locator, end record with comment. Returns its length. */
size_t mz_trailer_len(size_t comment_len);
void mz_write_trailer(uint8_t *out, uint64_t entries, uint64_t cd_size, uint64_t cd_off, uint64_t z64_off,
                      const uint8_t *comment, size_t comment_len);
#define MZ_TRAILER_CD_OFF_FIELD 48u
/* End records of a committed state (ZIP64 if there are entries, plain if none); returns the length. */
size_t mz_end_len(uint64_t entries, size_t comment_len);
size_t mz_write_end(uint8_t *out, uint64_t entries, uint64_t cd_size, uint64_t cd_off, const uint8_t *comment,
                    size_t comment_len); /* offset of the 8-byte CD offset inside our trailer */

/* Re-encodes a foreign central-directory record so that its local header offset is `lfh_off` (absolute),
 * adding or extending a ZIP64 field if needed. Returns a malloc'ed record and its length, or NULL. */
/* 1 if the avail bytes at b start with a local header only mmzip writes (signature not checked: a dead one may
 * have it cleared): version 45, stored, no data descriptor, a ZIP64 field, then the 0xA11E alignment field
 * (directly, or after a "UT" time field); sets *csize (if not NULL) from its ZIP64 field. */
int mz_our_lfh(const uint8_t *b, size_t avail, uint64_t *csize);
/* 1 if the MZ_TRAILER_FIXED bytes at rec are end records mmzip writes: ZIP64 end records with its fixed fields
 * (version made by 0x032D, needed 45, a 44-byte record, no extensible data, every plain field at its sentinel). */
int mz_our_end_records(const uint8_t *rec);
/* The local header offset (as recorded) of the directory record at rec, of which avail bytes may be read; 1, or
 * 0 if the record runs past them or its ZIP64 field lacks the offset. */
int mz_cdh_lfh_offset(const uint8_t *rec, size_t avail, uint64_t *off);
uint8_t *mz_reencode_cdh(const uint8_t *rec, size_t rec_len, uint64_t lfh_off, uint64_t csize,
                         uint64_t usize, size_t *out_len);

/* ---------------------------------------------------------------------------------------------------- */
/* Errors                                                                                                */

int mz_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mz_fail_errno(int status, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void mz_clear_error(void);

/* ---------------------------------------------------------------------------------------------------- */
/* Trailer and central directory                                                                        */

typedef struct mz_trailer {
    uint64_t eocd_pos;     /* position of the end-of-central-directory record */
    uint64_t end;          /* eocd_pos + 22 + comment length */
    uint64_t z64_pos;      /* position of the ZIP64 end record, or UINT64_MAX */
    uint64_t entries;
    uint64_t cd_size;
    uint64_t cd_pos;       /* absolute position of the central directory */
    uint64_t concat;       /* bytes prepended after the archive was written (added to recorded offsets) */
    uint16_t comment_len;  /* the bytes of the comment actually present */
    uint8_t *comment;      /* malloc'ed, or NULL */
    int zip64;
    uint16_t comment_declared; /* the end record's comment length (more than comment_len if it runs past EOF) */
    int lenient;           /* the end record at the end of the file: its directory may be read as zipfile does
                            * (central_dir.c), with each deviation noted; candidates scanned back are not */
} mz_trailer;

typedef struct mz_entry {
    uint64_t lfh_off;      /* absolute offset of the local header */
    uint64_t data_off;     /* absolute offset of the data; 0 until resolved from the local header */
    uint64_t csize;        /* stored bytes (for a reservation: capacity) */
    uint64_t usize;
    uint64_t limit;        /* the entry's bytes must end at or before this offset */
    uint64_t cd_rec;       /* offset of its central-directory record in the store's directory image */
    uint32_t cd_rec_len;
    uint32_t crc;
    uint32_t hash;
    uint32_t replaces;     /* pending entries: the committed entry they supersede, or MZ_NONE */
    uint16_t name_len;
    uint16_t method;
    uint16_t gp_flags;
    uint8_t state;         /* MZ_COMMITTED or MZ_PENDING */
    uint8_t mark;          /* MZ_MARK_* bits */
    uint32_t alignment;    /* data alignment we wrote (pending entries), 0 if unknown */
    uint8_t keeps_room;    /* its directory record carries a room field (MZ_EXTRA_ROOM) */
    uint8_t kept_tail;     /* its directory record carries a kept-tail field (MZ_EXTRA_KEPT) */
    uint8_t shadows_older; /* committed, and an earlier committed entry has the same name (another writer's
                            * duplicate, which this one wins over: mz_shadow_committed drops both) */
    uint64_t room;         /* bytes after the data reserved for the entry to grow into in place (edit.c); as
                            * recorded, mz_room_of() clips it to what lies free after the entry */
    /* The name's first bytes, zero-padded: most keys fit, so a lookup compares them without touching the
     * directory image (one cache miss fewer). */
    char name_head[24];
} mz_entry;

static inline void mz_entry_set_name_head(mz_entry *e, const char *name, size_t len) {
    size_t n = len < sizeof e->name_head ? len : sizeof e->name_head;
    memcpy(e->name_head, name, n);
    memset(e->name_head + n, 0, sizeof e->name_head - n);
}

/* Marks a freshly allocated, still untouched large array as wanting transparent huge pages: lookups hit
 * such arrays at random, and 4 KiB pages would make most of those hits TLB misses too. */
void mz_prefer_huge_pages(void *p, size_t len);

/* Faults in, writable, the whole pages of [dst, dst + len) that a copy is about to fill, with one system
 * call instead of one page fault per page. A caller's buffer is often memory its allocator has just
 * obtained from the kernel (every page untouched); filling it page by page took a fault each, and those
 * faults were most of the time of a large read. Only pages that lie entirely inside the range are touched,
 * and their contents are not changed. A range of fewer than 8 such pages, or whose first such page is
 * already there (a reused buffer), is left alone. Best effort: on kernels before 5.14 it does nothing. */
void mz_prefault_for_copy(void *dst, size_t len);

/* copy.c */
#define MZ_COPY_THREADS_MAX 16u
/* Copies len bytes into buf, faulting buf's pages in first, split over up to `threads` threads (the
 * caller's included; 0 = $MMZIP_COPY_THREADS, else the CPUs this process may run on, at most 4) in
 * page-aligned pieces of at least 1 MiB: read from file fd at offset off, or if fd is negative copied from
 * src. Returns 0, or -1 with errno set by the first read that failed. */
int mz_copy_split(int fd, const void *src, void *buf, size_t len, uint64_t off, unsigned threads);

#define MZ_NONE UINT32_MAX
enum { MZ_COMMITTED = 0, MZ_PENDING = 1 };
enum {
    MZ_MARK_SHADOWED = 1,   /* committed, but replaced or removed by a pending change */
    MZ_MARK_DEAD = 2,       /* pending, superseded by a later pending put or a removal */
    MZ_MARK_RESERVED = 4,   /* pending reservation, not yet patched */
    MZ_MARK_VERIFY = 8,     /* committed tail entry whose CRC has not been verified yet */
    MZ_MARK_BAD = 16,       /* verified and found torn */
    MZ_MARK_NONAME = 32,    /* committed entry whose name is empty or holds a NUL: kept, never looked up */
    MZ_MARK_CRC_OK = 64,    /* stored entry whose CRC-32 was verified, its local header agreeing (only an edit in
                             * place changes its bytes, and its header's CRC-32 with them: mz_changed_in_place) */
    MZ_MARK_EDITING = 128   /* read-only stores: an undo journal beside the archive restores this entry (it is
                             * being edited in place, or was when its writer died): its bytes are not handed out */
};

typedef int (*mz_read_fn)(void *ctx, void *buf, size_t len, uint64_t off); /* 0 or -1 with errno */

typedef struct mz_source {
    mz_read_fn read;
    void *ctx;
    uint64_t size;
    const char *name;      /* for messages */
    int fd;                /* for skipping holes while scanning back, or -1 */
} mz_source;

typedef struct mz_cd {
    uint8_t *image;        /* the directory bytes */
    uint64_t image_len;
    mz_entry *entries;
    uint32_t count;
    uint32_t duplicates;   /* names that appear more than once (the last one wins) */
    uint32_t unnamed;      /* entries with an empty or NUL-holding name (MZ_MARK_NONAME) */
    int wrapped;           /* more records than the 16-bit count of plain end records says (it wrapped) */
    uint64_t count_recorded; /* lenient: the end record's entry count, when it is not the records' number */
    uint32_t comment_cut;  /* lenient: bytes by which the last record's comment ran past the directory */
    uint32_t comment_cut_rec; /* and which record that was */
} mz_cd;

/*
 * Finds the archive's trailer and loads its central directory. First the trailer that ends exactly at the
 * end of the file; if there is none, or its directory does not parse, and scan_back is set, the last
 * self-consistent trailer before the end (what a writer killed mid-commit leaves). t->end < src->size tells
 * that the trailer was found by scanning back.
 */
int mz_locate(const mz_source *src, int scan_back, mz_trailer *t, mz_cd *cd);
void mz_trailer_free(mz_trailer *t);

/* Reads and validates the central directory described by t: every record, name and range check that a
 * hostile archive could trip. On success, fills *cd (entries in directory order, offsets absolute). */
int mz_cd_load(const mz_source *src, const mz_trailer *t, mz_cd *cd);
/* Validates that the name is one we accept (no NUL, no leading '/', no '..' component, not empty). */
int mz_name_ok(const char *name, size_t len);
/* An entry name for a message: printable ASCII and valid UTF-8 as they are, other bytes and '\\' as \\xNN; cut to
 * fit outlen (zip_format.c). */
void mz_quote_name(char *out, size_t outlen, const void *name, size_t len);
void mz_cd_free(mz_cd *cd);

/* ---------------------------------------------------------------------------------------------------- */
/* Mapping                                                                                               */

typedef struct mz_mapping {
    uint8_t *base;         /* read-only view of the file, inside a reservation of `reserved` bytes */
    uint64_t reserved;
    uint64_t mapped;       /* bytes of the file overlaid at base (a multiple of the page size) */
    uint8_t *wbase;        /* writable alias reservation (reservations only), or NULL */
    struct mz_retired { void *addr; size_t len; } *retired;
    int n_retired;
    uint64_t file_dev, file_ino; /* the file overlaid: a released reservation is kept for it (mapping.c) */
    int map_fd;            /* the unlocked descriptor the overlay maps through (keep), or -1: the caller's */
    int keep;              /* MMZIP_KEEP_MAPPING: the overlay outlives the store, for the next of this file */
    uint64_t stale_overlay; /* mz_map_init only: bytes of another file's overlay left in a reused reservation */
    uint32_t path_hash;    /* mz_hash of the path the file was opened by (a kept reservation's key, mapping.c) */
    int warm;              /* the overlay was kept from an earlier store of this file: its touched pages are
                            * present, where a new one's first touches cost faults and page tables (copy.c) */
} mz_mapping;

extern size_t mz_page_size;
/* mz_map_init's how: keep the overlay past mz_map_free (MMZIP_KEEP_MAPPING); reserve may be exceeded (a
 * read-only store's reservation is a guess, a writer's is max_file_size). fd_stat: fd's fstat if the caller
 * has just made it, or NULL. */
enum { MZ_MAP_KEEP = 1, MZ_MAP_AT_LEAST = 2 };
int mz_map_init(mz_mapping *m, int fd, const struct stat *fd_stat, uint64_t file_size, uint64_t reserve,
                unsigned how, const char *name);
int mz_map_cover(mz_mapping *m, int fd, uint64_t file_size, const char *name);
int mz_map_writable(mz_mapping *m, int fd, uint64_t off, uint64_t len, uint8_t **view, const char *name);
int mz_map_seal(mz_mapping *m, uint64_t off, uint64_t len);
void mz_map_drop_writable(mz_mapping *m, uint64_t off, uint64_t len);
void mz_map_free(mz_mapping *m);

/* ---------------------------------------------------------------------------------------------------- */
/* I/O with crash points                                                                                 */

int mz_pread_full(int fd, void *buf, size_t len, uint64_t off);
int mz_read_fd(void *ctx, void *buf, size_t len, uint64_t off); /* mz_read_fn over (int)(intptr_t)ctx */
/* The end records, a small directory and the slack's last block lie in the last page of an archive: an open
 * reads it once (the end-record search reads that much first anyway) instead of five times. */
#define MZ_TAIL_CACHE 4096u
#define MZ_NEAR_CACHE 512u
/* fsync() of the directory holding path, so that a rename or link into it is durable. 0 or -1. */
int mz_fsync_dir_of(const char *path);

struct mz_store;
int mz_io_write(struct mz_store *s, const void *buf, size_t len, uint64_t off, const char *what);
int mz_io_writev(struct mz_store *s, const struct mmzip_iovec *iov, int n, uint64_t off, const char *what);
/* A write to another file of the archive (the undo journal, journal.c), with the same crash modes, traced as
 * MZ_OP_JWRITE; mz_io_trace_journal reports the journal's other operations (MZ_OP_J*). */
int mz_io_write_fd(struct mz_store *s, int fd, const void *buf, size_t len, uint64_t off, const char *what);
void mz_io_trace_journal(struct mz_store *s, int op, uint64_t off, const char *what);
/* What every write and punch of the archive does first (reader_grace.c): waits if [off, off + len) is the
 * directory a relocation just left without keeping it, traced as MZ_OP_WAIT. Also for bytes the caller is about
 * to write through a mapping (a reservation). */
void mz_io_grace(struct mz_store *s, uint64_t off, uint64_t len);
/* Where the last data extent of [lo, hi) of the archive ends (lo if none; hi where holes cannot be told). */
uint64_t mz_written_end(struct mz_store *s, uint64_t lo, uint64_t hi);
int mz_io_zero(struct mz_store *s, uint64_t off, uint64_t len, const char *what);
void mz_io_trace_mapped(struct mz_store *s, uint64_t off, uint64_t len, const char *what);
int mz_io_truncate(struct mz_store *s, uint64_t size, const char *what);
/* Durable mode only: data (fdatasync) or full (fsync) barrier. A no-op otherwise. */
/* Writes the gathered small puts (see mz_store.wbuf) where they belong. Call with s->wmu held. */
int mz_flush_writes(struct mz_store *s);
int mz_io_barrier(struct mz_store *s, int full, const char *what);
/* A named point in the protocol where the test build can kill the process. */
void mz_crashpoint(const char *name);

/* ---------------------------------------------------------------------------------------------------- */
/* Locks                                                                                                 */

/* 0 on success, MMZIP_EBUSY if another open file description holds it, 1 if locks are unsupported. */
int mz_lock_writer(int fd);
/* The writer lock, waiting in turn behind the writers already waiting (a turnstile byte taken first, let go
 * once the writer lock is held), for at most wait_ms (MMZIP_WAIT_FOREVER: no limit). 0, MMZIP_EBUSY when the
 * wait ran out, 1 if the file system has no OFD locks, or -errno. */
int mz_lock_writer_in_turn(int fd, uint32_t wait_ms);
void mz_unlock_writer(int fd);
int mz_writer_lock_held(int fd);  /* 1 held by someone else, 0 free, -1 unknown */
/* 1 if another open file description of fd's file exists, in any process (or a mapping of one), or if that
 * cannot be told (no leases on this file system, a file this user does not own); 0 if none does. */
int mz_open_elsewhere(int fd);
void mz_lock_commit(int fd, int exclusive); /* blocking; silently skipped if unsupported */
pid_t mz_current_pid(void); /* getpid(), cached; reset in a forked child (locks.c: who owns a store) */
void mz_unlock_commit(int fd);
/* The edit lock of the entry whose local header is at lfh_off: 0 taken, 1 held by another open file
 * description, -1 unsupported (no exclusion). */
int mz_lock_entry(int fd, int exclusive, uint64_t lfh_off);
void mz_unlock_entry(int fd, uint64_t lfh_off);
/* 1 if another open file description holds the entry's lock (either way). */
int mz_entry_lock_taken(int fd, uint64_t lfh_off);

/* ---------------------------------------------------------------------------------------------------- */
/* The store                                                                                             */

/* Decoded copies of deflated entries, kept for the life of the store, found by local-header offset (stable
 * across refreshes, unlike entry indices) in an open-addressing table. */
typedef struct mz_decoded {
    uint64_t lfh_off;
    void *data;
    uint64_t size;
} mz_decoded;

/* A stored entry being edited through a writable view (edit.c, MMZIP_EDIT_MAP): what a commit needs to publish
 * its CRC (commit.c). */
typedef struct mz_view {
    uint64_t lfh_off;      /* identifies the version of the entry being edited */
    uint8_t *view;
    uint64_t len;
    int open;              /* still writable; 0 once ended (read-only) */
    int stale;             /* ended since the last commit: its CRC still needs the final refresh */
} mz_view;

typedef struct mz_store {
    struct mz_store *next;         /* the per-process registry */
    char *path;
    dev_t dev;
    ino_t ino;
    int fd;
    pid_t owner;                   /* the process that opened it (a forked child must not reuse it) */
    int writable;
    int refs;
    int writer_handles;
    int locks_supported;
    mmzip_options opts;
    pthread_mutex_t wmu;           /* serialises writes */
    pthread_rwlock_t rw;           /* table readers vs. commit / refresh */
    uint64_t generation;           /* mmzip_generation: bumped (under rw, written) at every change of the table */
    pthread_mutex_t decode_mu;

    mz_mapping map;

    /* On-disk state. */
    uint64_t file_size;
    uint64_t cd_pos, cd_size;      /* the committed directory, where the trailer at EOF points */
    uint64_t trailer_len;          /* length of the end records at EOF (a relocation writes ZIP64 ones) */
    uint8_t *comment;
    uint16_t comment_len;
    int zip64;
    int compact;                   /* the file is exactly [entries][directory][trailer] */
    int clean;                     /* [entries][slack][directory][trailer], the slack a hole: what commits leave */
    int end_follows_cd;            /* the end records follow their directory and end the file */
    int slack_hole;                /* nothing but a hole between the last entry and the directory */
    int settling;                  /* mz_settle_at_rest is committing: its crash points are close.* */
    int cd_adjacent;               /* the directory ends where the end records begin */
    uint64_t concat;               /* bytes prepended after the archive was written */
    int old_fd;                    /* publish-on-commit over an existing file: its writer lock, or -1 */
    uint64_t prefix;               /* bytes prepended to the archive after it was written */
    uint64_t data_end;             /* end of the last committed entry's bytes */
    uint64_t session_added;        /* bytes the commits of this store added after the data (entries, room):
                                    * the close keeps 16 times that much slack, within 1 % (mz_at_rest_keep),
                                    * unless this store created the archive (created) */
    int created;                   /* this store wrote the archive's first end record (mz_write_empty) */
    int relocated;                 /* this store has relocated the directory (mz_ensure_room) */
    uint64_t pending_end;          /* end of the last pending entry's bytes */
    uint64_t free_limit;           /* [pending_end, free_limit) is ours to write */
    uint64_t zero_from;            /* [zero_from, free_limit) is known to read as zeros */
    uint64_t neutralized_to;       /* dead local headers before this offset have had their signature cleared */
    uint64_t trailer_key[2];       /* read-only stores: fingerprint of the trailer, for refresh */
    uint32_t cd_crc;               /* read-only stores: CRC-32 of the directory's bytes as installed, for refresh
                                    * (an edit in place changes an entry's CRC and no other field) */
    int cd_crc_known;
    uint64_t cd_crc_pos, cd_crc_len; /* where those bytes were */

    /* Entries. entries[0, n_committed) are the committed directory in order; pending ones follow. */
    mz_entry *e;
    uint32_t n, cap, n_committed;
    uint32_t n_pending_live, n_shadowed, n_dead;
    uint64_t *slots;               /* name hash << 32 | (entry index + 1); 0 = empty. The hash beside the index
                                    * lets a probe skip non-matching slots without touching the entries. */
    uint32_t slot_mask;            /* slots has slot_mask + 1 entries */
    uint8_t *cd;                   /* directory image: committed records, then pending records */
    uint64_t cd_len, cd_cap, cd_committed_len;
    uint64_t (*kept_holes)[2];     /* free space in kept ranges this writer may use, [start, end) each
                                    * (kept_tail.c); built at the first put that looks, emptied by relocations */
    uint32_t n_kept_holes;
    int kept_holes_valid;
    uint64_t grace_from, grace_to; /* the directory and end records the last relocation left without keeping
                                    * them, which a write waits to change (reader_grace.c) until grace_until_ns
                                    * (CLOCK_MONOTONIC; 0: no wait pending) */
    uint64_t grace_until_ns;
    uint64_t kept_to[3];           /* the ends of the ranges this store's last three relocations kept, the
                                    * last first (0: none): the third relocation after the one that kept a
                                    * range releases it, commits never (mz_kept_held) */
    uint32_t *sorted;              /* visible entries sorted by name (lazy), for listing */
    uint32_t n_sorted;
    int sorted_valid;

    /* Small puts are gathered here and written with one pwrite: a system call per 100-byte entry would
     * dominate a batch. Bytes of pending entries below `written_end` are in the file; the rest are here. */
    uint8_t *wbuf;
    size_t wbuf_len, wbuf_cap;
    uint64_t wbuf_off;
    uint64_t written_end;          /* UINT64_MAX when the buffer is empty; read atomically by readers */

    int batch;
    uint32_t open_reservations;
    uint64_t bytes_since_commit;
    mz_decoded *decoded;           /* the table; decoded_mask + 1 slots, empty ones have data == NULL */
    uint32_t decoded_mask, n_decoded;

    /* Publish-on-commit creation. */
    int unpublished;
    int publish_replace;           /* mode "w": replace an existing archive at publication */
    int tmp_is_named;              /* fallback when O_TMPFILE is unavailable */
    char *tmp_path;

    uint64_t recovered_bytes, rolled_back;
    struct mmzip_edit *edit;       /* the journaled edit (edit.c), or NULL */
    uint64_t edit_floor;           /* below this an open journaled edit of the last entry owns the file (0 if
                                    * none): commits put the directory at or after it (edit.c keeps it) */
    uint64_t edit_lfh_off;         /* the entry whose edit lock the journaled edit holds (if s->edit) */

    /* What the last load found that mmzip reads but some other ZIP readers may not (for mmzip check). */
    int count_wrapped;             /* 16-bit entry count that wrapped */
    int count_differs;             /* the end record's entry count is not the directory's (read by its size) */
    uint64_t count_recorded;       /* that count */
    uint32_t comment_cut, comment_cut_rec; /* the last record's comment ran this far past the directory */
    uint16_t comment_declared;     /* the end record's comment length, when it runs past the end of the file */
    uint64_t locate_end;           /* where the end records found at load end (< file_size: bytes follow) */
    uint64_t foreign_hold;         /* writer: nothing below this offset may be overwritten (a foreign tail
                                    * anomaly is kept; new entries go after it), or 0 */

    /* Stored entries being edited through writable views (edit.c, MMZIP_EDIT_MAP), ended ones included: each
     * commit refreshes their CRCs (commit.c). */
    struct mz_view **views;
    uint32_t n_views;
    int cd_changed;                /* committed records were patched (CRC refresh): the next commit writes */
    uint64_t edits_recovered;      /* entries whose unfinished edit the open repaired (recovery.c) */
    uint64_t edits_restored;       /* of those, entries restored from an undo journal */
    uint64_t journal_restored;     /* bytes an undo journal wrote back at open */

    /* What recovery did to the file, for mmzip_recover (recovery.c, mz_recovery_note), and how many writes,
     * zeroings and truncates of the archive file this store made (io.c): recovery's "nothing changed" is
     * believed only when none was made. */
    struct mz_recovery_note *notes;
    uint32_t n_notes;
    uint64_t file_changes;

    /* What the open has read of the file (mz_read_at): its last bytes, and the last small piece read
     * elsewhere (local headers lie together at the start of a small archive). Valid from the load until
     * the open returns or anything is written, whichever comes first. */
    struct mz_open_cache {
        int on;
        uint8_t tail[MZ_TAIL_CACHE], near[MZ_NEAR_CACHE];
        uint64_t tail_off, near_off;
        uint32_t tail_len, near_len;
    } open_cache;

    struct mz_shared *shared;      /* MMZIP_SHARED writable stores (shared_writer.c), or NULL */
} mz_store;

/* Reads [off, off + len) of the archive: while the open cache is on, from it where it covers them, and a
 * small piece it misses is read with what follows it (MZ_NEAR_CACHE bytes) and kept; else with pread. 0, or
 * -1 with errno. */
int mz_read_at(mz_store *s, void *buf, size_t len, uint64_t off);
/* Turns the open cache on with the file's last bytes (s->file_size must be set); turns it off. */
void mz_open_cache_start(mz_store *s);
void mz_open_cache_stop(mz_store *s);

/* Called, with rw held for writing, after every change of the table that lookups can see: moves the counter
 * mmzip_generation() exposes, so that bindings caching lookups drop them. */
static inline void mz_table_changed(mz_store *s) { __atomic_add_fetch(&s->generation, 1, __ATOMIC_RELEASE); }

struct mmzip {
    mz_store *s;
    int writable;
    int verify_get;        /* MMZIP_VERIFY_CRC: mmzip_get checks a stored entry's CRC-32 on first use */
    mmzip_progress_fn progress; /* mmzip_options.progress of the open, per handle (the store is shared) */
    void *progress_ctx;
};
/* Work between two progress reports of a long operation (a multiple of write.c's 2 MiB write block). */
#define MZ_PROGRESS_STEP (64ull << 20)

/* The hash of entry names (entry_table.c's slots) and of archive paths (mapping.c's kept reservations):
 * inline here, below both, so that neither calls the other for it. */
static inline uint32_t mz_hash(const char *name, size_t len) {
    /* 64-bit multiply-mix over 8-byte words; names are short, this is several times faster than FNV. */
    const uint64_t m = 0x9E3779B97F4A7C15ull;
    uint64_t h = 0x243F6A8885A308D3ull ^ (len * m);
    const uint8_t *p = (const uint8_t *)name;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, len);
    h = (h ^ w ^ (uint64_t)len << 56) * m;
    h ^= h >> 32;
    h *= m;
    h ^= h >> 29;
    return (uint32_t)h;
}

/* The offset below which an open journaled edit of the last entry owns the file (0 if none): commits place the
 * directory at or after it. */
static inline uint64_t mz_edit_floor(const mz_store *s) { return s->edit_floor; }

/* entry_table.c */
static inline const char *mz_name(const mz_store *s, const mz_entry *e) {
    return (const char *)s->cd + e->cd_rec + MZ_CDH_FIXED;
}
int mz_table_rebuild(mz_store *s);
int mz_table_insert(mz_store *s, uint32_t idx);
/* The committed entry whose local header is at lfh_off and that has none of the marks in skip, or NULL. */
mz_entry *mz_committed_at(mz_store *s, uint64_t lfh_off, uint8_t skip);
/* The lowest local-header offset of the committed entries (what precedes it is a stub or dead bytes), or
 * UINT64_MAX where there are none. */
uint64_t mz_first_lfh_off(const mz_store *s);
/* The entry visible under name: for the writer, its newest live version; for readers, the committed one. */
mz_entry *mz_lookup(mz_store *s, const char *name, size_t len, int writer_view);
uint32_t mz_lookup_head(mz_store *s, const char *name, size_t len); /* raw head index or MZ_NONE */
/* Marks committed entry e replaced or removed by the pending change (MZ_MARK_SHADOWED), and every earlier
 * committed entry of its name with it, so that the next directory holds none of them. Under s->rw. */
void mz_shadow_committed(mz_store *s, mz_entry *e);
/* The version of a name visible to a view, given its head index (MZ_NONE gives NULL). */
mz_entry *mz_visible_version(mz_store *s, uint32_t head, int writer_view);
int mz_visible(const mz_entry *e, int writer_view);
int mz_sorted_index(mz_store *s, int writer_view);
int mz_cd_reserve(mz_store *s, uint64_t extra);
int mz_entries_reserve(mz_store *s, uint32_t extra);
void mz_table_free(mz_store *s);

int mz_resolve_data(mz_store *s, mz_entry *e); /* entry_table.c: reads the local header; sets e->data_off */

/* read.c */
int mz_verify_crc(mz_store *s, mz_entry *e, const uint8_t *data, uint64_t len);
int mz_entry_bytes(mz_store *s, mz_entry *e, const uint8_t **data, uint64_t *size);
/* Inflates a deflated entry into buf (e->usize bytes) and checks its CRC; messages name the problem. */
int mz_inflate_entry(mz_store *s, mz_entry *e, uint8_t *buf);
uint32_t mz_crc32(uint32_t crc, const void *data, size_t len);
/* crc32_combine.c: the bare remainder (crc0) of data followed by `after` zero bytes; crc(A || B) from crc(A),
 * crc(B) and |B|. */
uint32_t mz_crc0_shifted(const uint8_t *data, size_t len, uint64_t after);
uint32_t mz_crc32_concat(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
/* Decodes a compressed entry of any supported method into buf (e->usize bytes) and checks its CRC-32. */
int mz_decode_entry(mz_store *s, mz_entry *e, uint8_t *buf);
/* Checks a stored entry's CRC-32 once: MZ_MARK_CRC_OK remembers success for the store's life. */
int mz_verify_stored_once(mz_store *s, mz_entry *e);

/* decode.c: the methods table. Decodes an entry of a method with a decoder there (bzip2, LZMA, zstd, xz) into
 * buf (e->usize bytes), no CRC check; for any other, the MMZIP_EUNSUPPORTED error naming it. */
int mz_decode_other(mz_store *s, mz_entry *e, uint8_t *buf);
int mz_method_supported(unsigned method);
int mz_data_end_of(mz_store *s, mz_entry *e, uint64_t *end); /* data end incl. a data descriptor */
/* 1 if the (resolved) entry's local header carries mmzip's 0xA11E alignment field. Such an entry was
 * published only after all its bytes were written, so it cannot be a torn tail: no CRC check at open. */
int mz_written_by_mmzip(mz_store *s, const mz_entry *e);
/* The room after the (resolved) entry e that is really free: its recorded room, clipped at the next local
 * header of any live entry and at the directory. Another writer (zipfile appending where our directory was)
 * may have put entries there; those bytes are theirs whatever the record says. */
uint64_t mz_room_of(mz_store *s, const mz_entry *e);

/* write.c */
/* Adds the table entry (and directory record) of a new pending entry whose bytes are in the file; the
 * previous version of key (head) is superseded. Call with s->wmu held. */
int mz_add_pending(mz_store *s, mz_entry *ne, const char *key, uint32_t head, int reserved, const mz_stamp *stamp);
/* Drops everything pending. Call with s->wmu held. */
int mz_rollback_locked(mz_store *s);
/* Drops e (visible to the writer) at the next commit, as mmzip_remove does, without committing. s->wmu held. */
void mz_remove_locked(mz_store *s, mz_entry *e);

/* kept_tail.c */
/* off rounded up to a multiple of 4 KiB, the page a file system punches and reports holes by. */
uint64_t mz_page_up(uint64_t off);
/* 1 if a relocation for a put whose entry would start at lfh_off may keep the old directory and end records:
 * the file ends in them (ours), the entry starts below them, and the range the put skips, with the bytes kept
 * tails already hold (mz_kept_bytes, set in *kept either way), fits in `budget`. Call before relocating. */
int mz_kept_tail_allowed(mz_store *s, uint64_t lfh_off, uint64_t budget, uint64_t *kept);
/* Free bytes of the recorded ranges: their holes (free for later puts) and the kept directories not released
 * yet. Counted against the allowance at rest, with the slack; the odd partial page at a range's edge that no
 * put can use is dead space, as a replaced entry is. */
uint64_t mz_kept_bytes(mz_store *s);
/* Punches every kept directory of a committed record that is still intact (its end records where the record
 * says), except those this store's last three relocations kept (mz_kept_held). Called by each relocation (the
 * readers of commits three relocations old are done) and by each commit that replaces or removes. */
int mz_release_kept_tails(mz_store *s);
/* 1 if `to` ends a range one of this store's last three relocations kept: not released yet. */
int mz_kept_held(const mz_store *s, uint64_t to);
/* A place for a put of total bytes (header of a name_len-byte name, aligned) in free space of the recorded
 * ranges (holes that no entry of the table covers): 1 and *lfh_out, the space then taken, or 0. The writer
 * keeps the list from its first call until mz_kept_free_forget (a relocation punches new holes). */
int mz_kept_free_place(mz_store *s, size_t name_len, uint64_t total, uint32_t alignment, uint64_t *lfh_out);
void mz_kept_free_forget(mz_store *s);
/* Marks spent the committed ranges whose directory is released and whose holes are all filled (from = to = 0
 * in the directory image), so that the next directory written, a relocation's copy, tells later sessions to
 * skip them: otherwise each session would look at every range an archive ever kept. Not in shared mode. */
void mz_kept_prune(mz_store *s);

/* reader_grace.c */
/* Marks [from, to), the directory and end records a relocation has just left without keeping them, as bytes
 * that third-party readers which read those end records may be reading: the first write there waits
 * (mz_grace_wait, through mz_io_grace). Replaces the mark of an earlier relocation. from == to clears it. */
void mz_grace_guard(mz_store *s, uint64_t from, uint64_t to);
/* Before a write or punch of [off, off + len) of the archive: -1 if it touches no fresh mark. Otherwise waits
 * until MZ_READER_GRACE_NS have passed since the relocation or no other open file description of the archive
 * is left, whichever comes first, clears the mark, sets *waited_us and returns 1 if another open was seen (or
 * could not be ruled out), 0 if not. mz_io_grace calls it and traces the wait. */
int mz_grace_wait(mz_store *s, uint64_t off, uint64_t len, uint64_t *waited_us);

/* commit.c */
/* Makes the slack reach `end` (what the next commit writes ends there), relocating the directory past the end
 * of the file if it does not (protocol.md §3.2). s->wmu held. */
int mz_ensure_room(mz_store *s, uint64_t end);
/* A put's mz_ensure_room, for an entry that would start at lfh_off, where the next commit needs room up to
 * `need`, or up to need_moved if the entry starts at mz_page_up(s->file_size) instead. If the directory must be
 * relocated and the old tail may be kept (mz_kept_tail_allowed), the entry moves there: *lfh_out is that
 * offset, and [*kept_from, *kept_to) the range the entry's record must name (mz_add_cdh_kept). Otherwise
 * *lfh_out = lfh_off. */
int mz_ensure_room_for_put(mz_store *s, uint64_t lfh_off, uint64_t need, uint64_t need_moved, uint64_t *lfh_out,
                           uint64_t *kept_from, uint64_t *kept_to);
/* Writes crc as the committed entry's CRC-32, in its local header and the directory image (the next commit
 * writes that). s->wmu held. */
int mz_set_entry_crc(mz_store *s, mz_entry *e, uint32_t crc);
int mz_commit_locked(mz_store *s, int force_compact);
/* The ZIP readers mmzip check speaks for (tests/interop/test_check_verdict.py compares it with them), as bits. */
enum { MZ_R_ZIPFILE = 1, MZ_R_UNZIP = 2, MZ_R_7ZIP = 4, MZ_R_LIBZIP = 8, MZ_R_ALL = 15 };
/* Why a committed entry is read other than its records say (a field zipfile also reads past: its local header
 * disagrees with its record, or a stored entry's record gives more bytes than its size), in clauses for
 * messages; 1 if there is such a reason, 0 (why empty) if not. all: also the fields mmzip's reading does not
 * depend on but libzip's consistency check compares (version needed, modification time). *refuse and *warn
 * (either may be NULL) get the readers that refuse the archive for it, and those that warn, as observed on
 * Debian 12 (Python 3.11 zipfile, Info-ZIP unzip 6.0, p7zip 16.02, libzip 1.7.3 with ZIP_CHECKCONS); *label a
 * few words for the verdict. */
int mz_entry_anomaly(mz_store *s, const mz_entry *e, int all, char *why, size_t len, unsigned *refuse,
                     unsigned *warn, const char **label);
int mz_anomaly_why(mz_store *s, const mz_entry *e, char *why, size_t len);
/* 1 if e, verified by this store, was since edited in place and committed by another writer (its local header
 * gives another CRC-32 now); mz_fail_changed_in_place says so (MMZIP_ESTALE: refresh or reopen). */
int mz_changed_in_place(mz_store *s, const mz_entry *e);
int mz_fail_changed_in_place(mz_store *s, const mz_entry *e);
/* The bytes before the archive that are no entry of it (a self-extractor's stub, another archive whose comment
 * holds this one): those its offsets do not count (s->prefix), or, where they count them, the bytes before the
 * first entry unless they start with the signature mmzip clears in its dead first entries. mmzip_get_info's
 * prefix_bytes; mmzip_pack keeps them. */
uint64_t mz_stub_len(mz_store *s);
/* The last writer's close: if the slack below the directory is more than the file may keep at rest
 * (mz_at_rest_allowance), a commit of nothing puts the directory mz_at_rest_keep bytes after the last entry
 * and cuts the file there, with the crash points close.*. Call with s->wmu held, everything else committed. */
int mz_settle_at_rest(mz_store *s);
/* The slack mz_settle_at_rest would remove (0: none, or within the allowance). */
uint64_t mz_settle_would_remove(mz_store *s);
/* MMZIP_OK if this process opened s; MMZIP_EBUSY with a message for a store inherited across fork(), whose
 * writer lock (an OFD lock) and shared watch are the parent's: a child writing, editing or refreshing through
 * it would act under the parent's feet (locks.c). */
int mz_refuse_inherited(const mz_store *s);

/* The slack a file of `size` bytes may keep once its last writer has closed: max(64 KiB, 1 %). */
uint64_t mz_at_rest_allowance(uint64_t size);
/* The slack the close leaves below the directory of a file whose data, directory and end records are `size`
 * bytes, after a writer whose commits added `added` bytes of data: 16 times that, at most 1 % of the file,
 * and none if that is less than a page (a small archive at rest is its data to the byte); within the
 * allowance. */
uint64_t mz_at_rest_keep(uint64_t size, uint64_t added);
int mz_write_empty(mz_store *s);
int mz_publish(mz_store *s);
/* Clears the signature of a superseded local header at the very start of the archive (see commit.c). */
int mz_neutralize_dead_start(mz_store *s);
/* 1 if mz_neutralize_dead_start would clear a signature (for mmzip check's dry run). */
int mz_dead_start_pending(mz_store *s);

/* journal.c: what an in-place edit keeps beside the archive for recovery. */
#define MZ_UNDO_HEADER 48u   /* magic 8, nonce 8, lfh_off 8, data_off 8, size 8, crc 4, header crc 4 */
#define MZ_UNDO_REC_HEAD 28u /* magic 4, nonce 8, offset 8, length 4, crc 4 (of the rest of the head + data) */
typedef struct mz_journal_head {
    uint64_t nonce, lfh_off, data_off, size; /* the entry and the committed version (size, crc) it restores */
    uint32_t crc;
} mz_journal_head;
typedef struct mz_journal {
    mz_journal_head h;
    int fd;
    char *path;
    uint64_t end;          /* where the next record goes */
} mz_journal;
char *mz_journal_path(const char *archive); /* <archive>.mmzip-undo, malloc'ed */
/* Creates the journal at j->path for the version j->h names (crash point edit.journal_create; durable: file
 * and directory synced). Removes what it created on failure. */
int mz_journal_create(mz_store *s, mz_journal *j);
/* Starts the journal over for j->h with a new nonce (empty: the file was just created empty). */
int mz_journal_reset(mz_store *s, mz_journal *j, int empty);
/* Appends the committed bytes [off, off+len) of the archive (absolute): `bytes` if the caller has just read
 * them, else read here. */
int mz_journal_save(mz_store *s, mz_journal *j, uint64_t off, uint64_t len, const uint8_t *bytes);
/* Durable mode: fdatasync of the journal, crash point `what` before it. */
int mz_journal_sync(mz_store *s, const mz_journal *j, const char *what);
/* 1 and *jh if fd holds a whole journal header, 0 if not. */
int mz_journal_read_head(int fd, mz_journal_head *jh);
/* Writes every whole record within [lo, hi) of the journal fd back into the archive, in order, and flushes;
 * *written (if not NULL) grows by the bytes written. */
int mz_journal_apply(mz_store *s, int fd, const mz_journal_head *jh, uint64_t lo, uint64_t hi, const char *what,
                     uint64_t *written);
int mz_journal_remove(mz_store *s, const char *jpath);
/* 1 if the journal holds at least one whole record: only then can the entry differ from its committed
 * version (every overwrite follows the record of what it overwrites). */
int mz_journal_has_record(int fd, const mz_journal_head *jh);
/* 1 if the journal restores exactly the version of the entry that the committed directory names. */
int mz_journal_is_hot(mz_store *s, const mz_journal_head *jh);
/* Applies to *crc the change of the committed bytes that the journal's old blocks show against the file: what
 * a publish reads when some write did not note its change. */
int mz_journal_crc_change(mz_store *s, const mz_journal *j, uint32_t *crc);
/* The undo journal beside the archive, if it would restore an entry: 1 with *e (that committed entry) and
 * *journal_bytes (the journal's size); 0 if there is none, or it would restore nothing. Does not write. */
int mz_journal_pending(mz_store *s, mz_entry **e, uint64_t *journal_bytes);
/* Read-only stores: marks the entry that a hot undo journal beside the archive would restore (MZ_MARK_EDITING). */
void mz_journal_mark(mz_store *s);
/* The marker file of mapped edits, <archive>.mmzip-inplace (new_one: the .new file it is written as). */
char *mz_marks_path(const char *archive, int new_one);
typedef struct mz_mark {
    const char *key;
    uint64_t lfh_off;      /* identifies the version of the entry being edited */
    uint32_t crc;          /* its CRC when the edit began */
} mz_mark;
/* Replaces the marker file with these marks, whole (written beside, renamed over; durable: fsynced), or
 * removes it if count is 0. */
int mz_marks_write(mz_store *s, const mz_mark *marks, uint32_t count);
/* Reads the marker file at path, checked: MMZIP_ENOENT if there is none, MMZIP_ESTALE if it belongs to another
 * file than s's archive (one replaced since, by "w" or pack, or a copy), MMZIP_ECORRUPT (with a message) if it
 * is not a complete marker file. */
int mz_marks_read(mz_store *s, const char *path, uint8_t **buf, size_t *len);
typedef struct mz_mark_rec {
    uint64_t lfh_off;
    uint32_t crc;
    uint16_t name_len;
    const uint8_t *name;
} mz_mark_rec;
/* The next record of a marker file read by mz_marks_read (*at starts at 0); 0 at the end. */
int mz_marks_next(const uint8_t *buf, size_t len, size_t *at, mz_mark_rec *m);
/* Marker entries ".mmzip/edit/<key>" that older versions of mmzip committed: 1 if me is one; its target's
 * local-header offset (0 if it names none readable). */
#define MZ_EDIT_PREFIX ".mmzip/edit/"
#define MZ_EDIT_PREFIX_LEN 12u
int mz_legacy_marker(mz_store *s, const mz_entry *me);
int mz_legacy_marker_target(mz_store *s, mz_entry *me, uint64_t *lfh_off);
/* Calls fn for each committed entry that a marker names as being modified in place (the marker file of this
 * archive, or an older mmzip's marker entry), with `how` saying which marker; a non-zero return of fn stops
 * the walk and is returned. Returns the number of such entries, or a negative status (an unreadable marker
 * file). Writes nothing. */
typedef int (*mz_marked_fn)(mz_store *s, mz_entry *e, const char *how, void *ctx);
int mz_marked_each(mz_store *s, mz_marked_fn fn, void *ctx);

/* hold.c: 1 if an editor (this process or another) holds the edit lock of the entry at lfh_off now. */
int mz_edit_lock_held(mz_store *s, uint64_t lfh_off);

/* edit.c */
/* Ends the open journaled edit, undoing what was not published. Call with s->wmu held. */
int mz_edit_end_locked(mz_store *s);
/* Ends every mapped edit (views read-only, CRCs refreshed by the next commit, after which the caller calls
 * mz_edit_maps_sync to drop the marker file). */
void mz_edit_maps_end_all(mz_store *s);
/* Rewrites the marker file from the mapped edits open now (removes it if none). */
int mz_edit_maps_sync(mz_store *s);
/* Edits open now (mmzip_info.edits_open). */
uint64_t mz_edits_open(const mz_store *s);
/* Frees the edit state without touching the file (the store is going away). */
void mz_edit_free(mz_store *s);

/* read.c: why e's bytes are not at a commit (an unfinished in-place edit, killed or in progress), as a clause
 * for a message naming the archive and what to do; "" if they are. */
const char *mz_unfinished_why(mz_store *s, mz_entry *e, char *buf, size_t len);

/* recovery.c */
int mz_recover_locked(mz_store *s);
/* Writable store just opened (and registered): the entries a killed writer's mapped edits left marked get
 * their CRCs recomputed and committed, and the markers go. */
int mz_recover_marked(mz_store *s);
/* One thing recovery did (mmzip_recovery_action without the pointers' lifetime problems). */
struct mz_recovery_note {
    int kind;
    char *entry;
    uint64_t bytes, offset;
    char *message;
};
/* Records what recovery did (kind: mmzip_recovery_kind; entry may be NULL; message a printf format). Best
 * effort: out of memory drops the note, never the repair (file_changes still says the file changed). */
void mz_recovery_note(mz_store *s, int kind, const char *entry, size_t entry_len, uint64_t bytes, uint64_t offset,
                      const char *fmt, ...) __attribute__((format(printf, 7, 8)));
void mz_recovery_notes_free(mz_store *s);
/* Notes the directory moved back behind the last entry by a commit of recovery (the file was `before` bytes). */
void mz_recovery_note_directory(mz_store *s, uint64_t before);
/* What recovery would do to the loaded state of s, decided without writing anything; report (if not NULL)
 * gets one sentence per action or kept foreign anomaly. Used by the writable open and by mmzip check. */
typedef struct mz_recovery_plan {
    int ours;              /* the end records were written by mmzip */
    int cut;               /* cut the bytes after the end records (mmzip's debris) */
    int move_directory;    /* write the directory back behind the last entry */
    uint64_t hold;         /* a foreign anomaly is kept: new entries go after this offset (0: none) */
} mz_recovery_plan;
int mz_plan_recovery(mz_store *s, mz_recovery_plan *p, mmzip_report_fn report, void *ctx);
/* Removes <archive>.mmzip-pack-<pid> and <archive>.mmzip-new-<pid> of processes that are gone (recovery.c). */
void mz_remove_stale_temps(const char *archive_path, mmzip_recovery_fn fn, void *ctx);

/* store.c */
/* Reads the archive's state. fd_stat: the descriptor's fstat, if nobody can have changed the file since it was
 * made (the caller holds the writer lock), else NULL: a reader's size is taken under the commit lock. */
int mz_load_state(mz_store *s, int allow_scan_back, const struct stat *fd_stat, mz_trailer *t_out);
int mz_store_install(mz_store *s, const mz_trailer *t, mz_cd *cd);
void mz_store_describe_layout(mz_store *s);
/* The last writer's close, alone in its process: the bytes of entries removed from the end of the data
 * become slack if no other process has the file open (store.c). */
int mz_release_removed_tail(mz_store *s);

/* shared_writer.c: hooks of shared appending (MMZIP_SHARED). Each is a no-op for a store without it. */
/* Options of an open: MMZIP_SHARED with NO_LOCK is refused; PUBLISH_ON_COMMIT is dropped (the open publishes). */
int mz_shared_check_options(const char *path, mmzip_options *o, int writable);
/* Sets s->shared up for a writable store opened with MMZIP_SHARED. */
int mz_shared_attach(mz_store *s);
/* open_locked's lock: shared stores wait for it (lock_wait_ms) where others fail at once. As mz_lock_writer, but
 * a shared store fails (MMZIP_EUNSUPPORTED, message set) where the file system has no locks (1). */
int mz_shared_lock_writer(mz_store *s, int fd);
/* The writable open (recovery included) is done: the store lets the writer lock go. */
int mz_shared_opened(mz_store *s);
/* Before a write that starts a transaction (s->wmu held): takes the writer lock if the store does not hold
 * it, and brings the store up to date (reload, recovery). MMZIP_EBUSY on timeout, MMZIP_ESTALE if the path
 * names another file now. */
int mz_shared_enter(mz_store *s);
/* Before s->wmu is released by a write function: lets the writer lock go if nothing is pending, no batch is
 * open and no reservation waits. */
void mz_shared_leave(mz_store *s);
/* mmzip_refresh of a writable store: shared stores outside a transaction reload; others do nothing. */
int mz_shared_refresh(mz_store *s);
/* MMZIP_OK for a store without MMZIP_SHARED; MMZIP_EUNSUPPORTED with a message naming `what` for a shared one
 * (in-place edits are refused: they keep state across transactions). */
int mz_shared_refuse(mz_store *s, const char *what);
/* The full reload of a shared store's view and the repair of a writable open, made when other writers changed
 * more than they added (st: the file's fstat, the writer lock held, nothing pending). store.c installs it at
 * the open: it needs store.c and recovery.c, which are above this layer. */
typedef int (*mz_shared_reload_fn)(mz_store *s, const struct stat *st);
void mz_shared_set_reload(mz_store *s, mz_shared_reload_fn fn);
/* After such a reload: remembers the directory and end records as they are now, read whole. */
int mz_shared_remember(mz_store *s);
void mz_shared_free(mz_store *s);

/* Test builds (MMZIP_TESTING) export hooks to observe every write, truncate and sync. */
typedef void (*mmzip_io_trace_fn)(void *ctx, int op, uint64_t off, const void *data, uint64_t len,
                                  const char *what);
enum { MZ_OP_WRITE = 1, MZ_OP_TRUNCATE = 2, MZ_OP_DATASYNC = 3, MZ_OP_FULLSYNC = 4,
       /* the undo journal beside the archive (journal.c): a write, its emptying, a data sync, its removal
        * (durable: with the directory synced), and its creation (durable: ditto) */
       MZ_OP_JWRITE = 5, MZ_OP_JTRUNCATE = 6, MZ_OP_JSYNC = 7, MZ_OP_JREMOVE = 8, MZ_OP_JCREATE = 9,
       /* reported before a write whose source has pages not in memory (len: how many); the kernel's first copy
        * of such a write comes up short (see relocation_buffer in commit.c) */
       MZ_OP_SOURCE_NOT_RESIDENT = 10,
       /* a write that waited for third-party readers (reader_grace.c): off 1 if another open of the file was
        * seen (or could not be ruled out), len the microseconds waited */
       MZ_OP_WAIT = 11 };

#endif

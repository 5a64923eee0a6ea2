/*
 * mmzip.h - a memory-mapped, append-only, crash-safe ZIP store.
 *
 * THE MODEL
 *
 * One archive is one ZIP file. A process maps it once. Every stored (method 0) entry is handed out as a
 * pointer into that one shared, read-only mapping: no copy, no per-entry file descriptor. Writes append:
 * new entries, and new versions of existing keys, are written after the last entry. The old central
 * directory is superseded, never edited in place. The archive is a valid ZIP after every commit: Python
 * `zipfile`, Info-ZIP `unzip`, 7-Zip and libzip read it as it stands.
 *
 * One writer at a time, many readers.
 *   - By default, at most one writable handle per archive exists at a time, across all processes (an advisory
 *     OFD lock on the archive file; a second writer gets MMZIP_EBUSY at once, it never waits and never
 *     corrupts). With MMZIP_SHARED, any number of handles, in any processes and threads, write one archive
 *     in turn: each holds that lock only for one transaction (SHARED MODE below).
 *   - Readers never block the writer for longer than one central-directory copy, and never see a state
 *     that was not committed: every byte of every entry they list is final.
 *   - Within one process, all opens of one file share one store (reference counted). Read-only handles
 *     opened beside the writer see only committed entries; the writer's handle also sees its own pending
 *     (uncommitted) entries.
 *
 * Commits. A put is published by a commit: after each put (MMZIP_COMMIT_EACH, the default), at
 * mmzip_commit() after mmzip_begin(), or by the amortized policy. A commit costs one central-directory
 * write, so batching N small puts into few commits keeps the total cost O(N).
 *
 * Crash safety. Killing the writer at any instruction leaves a file whose last commit is intact. The next
 * writable open repairs the file to that commit, losing only uncommitted entries. A read-only open of an
 * unrepaired file sees the last commit, or fails with MMZIP_ENOTZIP / MMZIP_ECORRUPT and a message; it
 * never hands out bytes that were not committed. With MMZIP_DURABLE, every commit that returned also
 * survives a power loss or kernel crash (docs/protocol.md argues why).
 *
 * Pointers. A pointer returned by mmzip_get() or mmzip_get_typed() for a committed entry stays valid and
 * unmoved for the life of the handle, across any number of later appends, however much they grow the
 * file. The memory is read-only: a stray write faults instead of corrupting the archive. A pointer to a
 * pending entry is valid until that entry is committed (then it stays valid) or rolled back (then it must
 * not be used). Pointers into a deflated entry point at a decoded copy owned by the store.
 *
 * SHARED MODE (MMZIP_SHARED)
 *
 * For many processes appending to one archive (Dask and multiprocessing workers, parallel jobs, `mmzip put
 * --wait`). A handle opened writable with MMZIP_SHARED does not keep the writer lock. Its first write of a
 * transaction (put, reserve, remove) takes it, waiting behind other writers for at most
 * mmzip_options.lock_wait_ms (then MMZIP_EBUSY, naming the archive and the wait); brings the handle's view
 * up to date with the commits other writers made meanwhile, and repairs what a writer killed while holding
 * the lock left, as a writable open does (docs/protocol.md §6; the CRCs of mapped edits, MMZIP_EDIT_MAP, a
 * killed single writer left are refreshed by the next writable open, shared or not, not by a transaction);
 * writes; and the commit that publishes the transaction (each put under MMZIP_COMMIT_EACH, mmzip_commit()
 * after mmzip_begin()) or mmzip_rollback() lets the lock go. Waiters are served in turn (none can be passed over
 * again and again by a writer that commits and comes straight back). What each mode guarantees:
 *   - both: every commit is atomic and the file is a valid ZIP after it, readers see only committed states,
 *     a killed writer loses only what it had not committed, and an archive never holds two entries of one
 *     name: a put of a name that another writer committed meanwhile replaces that entry (the last commit
 *     wins), as a put of an existing name does in one writer.
 *   - single writer (the default): the handle's view is the archive, always; no wait, no reload per
 *     transaction (the faster mode for one process); in-place edits (mmzip_edit_*) are allowed.
 *   - shared: between its transactions the handle sees the archive as of its last transaction, or
 *     mmzip_refresh(); a transaction costs the lock, a comparison of the directory with the one the handle
 *     last saw (in memory, through the mapping), and, if other writers committed meanwhile, the records they
 *     added (when they only added names) or a reload of the whole directory. Refused in shared mode:
 *     mmzip_edit_begin, journaled or mapped (MMZIP_EUNSUPPORTED: an edit keeps state across transactions),
 *     MMZIP_NO_LOCK and file systems without OFD locks (MMZIP_EINVAL / MMZIP_EUNSUPPORTED: without the lock nothing
 *     orders the writers). MMZIP_PUBLISH_ON_COMMIT is ignored: a new archive ("w", or "w+" of a missing
 *     file) is published by the open, so that other writers can open it. Each shared writable open has its
 *     own store (descriptor and mapping), so that handles in one process exclude each other as processes
 *     do; it takes the lock (waiting) only for the recovery of the open. A single-writer handle opened beside
 *     shared ones holds the lock from open to close: the shared ones wait (and time out) meanwhile. The close
 *     of a shared handle commits what is pending, and, under the lock, removes a slack beyond what the file
 *     may keep at rest (protocol.md §3.6); it never replaces the file (an archive emptied of every entry by
 *     shared writers keeps its dead bytes until `mmzip recover` or `mmzip pack`).
 * A handle that keeps a transaction open (a batch, MMZIP_COMMIT_AMORTIZED or MANUAL puts not yet committed,
 * an unpatched reservation) holds the lock meanwhile: every other writer waits.
 *
 * THREADS
 *
 * All functions are thread-safe. Reads (get, stat, list, read) on one store run concurrently. Writes
 * (put, reserve, patch, commit, ...) are serialised per store. mmzip_close() must not race with other
 * calls on the same handle. The last-error message (mmzip_last_error()) is per thread.
 *
 * The library's own threads: a large mmzip_read() or mmzip_copy() may be shared by helper threads
 * (mmzip_options.copy_threads), created for that call with every signal blocked and joined before it
 * returns. No other thread is ever started, and none outlives a call.
 *
 * ERRORS
 *
 * Functions return MMZIP_OK (0) or a negative mmzip_status. On failure, mmzip_last_error() gives a message
 * that names the archive, the entry when there is one, and the problem; mmzip_strerror() names the code.
 *
 * CAVEATS
 *
 *   - Modifying an open archive with another tool (zip, Python zipfile in append mode) while mmzip has it
 *     mapped is unsupported: the other tool may truncate the file under the mapping (SIGBUS).
 *   - Locks are Linux OFD locks; on network file systems that do not support them, mmzip runs without
 *     cross-process exclusion and says so in mmzip_info().
 *   - Third-party readers (zipfile, unzip, libzip) take no lock: a poll that overlaps a move of the directory
 *     can fail cleanly and needs a retry (docs/reliability.md §3). To make that rarer, the first write (a put's
 *     entry, say) over the directory a move has just left (one the move could not keep aside, protocol §3.8) waits
 *     until 20 ms have passed since the move while the archive is open elsewhere (another open file, in any
 *     process; a write lease, taken and let go at once, tells; a writer alone never waits). The probe sets the
 *     descriptor's lease signal to SIGURG: a process that handles SIGURG may see it if another opens the
 *     archive in that instant.
 *   - Entry names are bytes, at most 65535, without NUL, leading '/', or '..' components. A new name has no
 *     empty or '.' component either ('a//b', './a', 'a/./b': other readers extract them to the file of the
 *     name without it); such names in another writer's archive are read, replaced and removed. A name that is
 *     valid UTF-8 is written with the ZIP UTF-8 flag; one that is not (a foreign archive's CP437 name, say)
 *     is written without it, so that other readers decode it as CP437 instead of refusing the archive.
 */
#ifndef MMZIP_H
#define MMZIP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MMZIP_API __attribute__((visibility("default")))
#else
#define MMZIP_API
#endif

#define MMZIP_VERSION_MAJOR 0
#define MMZIP_VERSION_MINOR 1
#define MMZIP_VERSION_PATCH 0
#define MMZIP_VERSION_STRING "0.1.0"

/* Status codes. Every function that can fail returns one of these. */
typedef enum mmzip_status {
    MMZIP_OK = 0,
    MMZIP_ENOTFOUND = -1,     /* no entry with that name */
    MMZIP_EIO = -2,           /* the operating system refused a read, write, map or sync (errno in message) */
    MMZIP_ENOMEM = -3,        /* out of memory or address space */
    MMZIP_EINVAL = -4,        /* invalid argument: bad mode, bad name, bad alignment, NULL pointer */
    MMZIP_ENOTZIP = -5,       /* no valid end-of-central-directory record: not a ZIP archive */
    MMZIP_ECORRUPT = -6,      /* structurally invalid or hostile archive (offsets out of range, overlaps) */
    MMZIP_EUNSUPPORTED = -7,  /* compression method, encryption or multi-disk archive not supported */
    MMZIP_ECRC = -8,          /* CRC-32 mismatch */
    MMZIP_EBUSY = -9,         /* another writer holds the archive, or a reservation is still unpatched */
    MMZIP_EREADONLY = -10,    /* write through a read-only handle */
    MMZIP_ETOOBIG = -11,      /* the archive would grow past max_file_size, or a size limit was hit */
    MMZIP_ENOENT = -12,       /* the archive file does not exist (and the mode does not create it) */
    MMZIP_ESTALE = -13,       /* the archive was replaced on disk (e.g. by pack); reopen it */
    MMZIP_EEXIST = -14        /* a new archive could not be published: another process created the file */
} mmzip_status;

/* Flags for mmzip_options.flags. */
enum {
    /* Order every commit with fdatasync/fsync so that a commit that returned survives a power loss. */
    MMZIP_DURABLE = 1u << 0,
    /* Modes "w"/"w+" that create the file: the file appears on disk (atomically, by rename) only at the
     * first commit. A writer killed before then leaves no file, and "w" on an existing archive leaves it
     * untouched. Used by the netCDF plugin so that a killed nccopy leaves nothing behind, and by mmzip put.
     * A writable open of an existing archive with no entries (its 22-byte end record alone) is treated as a
     * creation too: the new archive replaces it at the first commit, so that the empty one stays as every
     * reader accepts it while the writer fills the new one, and if the writer dies. */
    MMZIP_PUBLISH_ON_COMMIT = 1u << 1,
    /* Do not take the cross-process writer lock (for file systems without OFD locks). Dangerous. */
    MMZIP_NO_LOCK = 1u << 2,
    /* mmzip_get and mmzip_get_typed on this handle check the CRC-32 of a stored entry before handing out its
     * first pointer (once per entry: the store remembers entries found good, whose bytes never change).
     * Costs one pass over the entry's bytes, see mmzip_get. */
    MMZIP_VERIFY_CRC = 1u << 3,
    /* For a caller that opens and closes the same archive many times (the HDF5 driver: one open per HDF5
     * session). After the last handle is closed, the process keeps the archive mapped (read-only, through a
     * descriptor of its own that takes no lock) until it opens another archive or exits, and the next open
     * of the same file takes that mapping over instead of mapping the file again and faulting its pages in.
     * The address space of such a store may also be reused by the next store of another archive opened
     * with this flag. So the caller must keep no pointer past mmzip_close(): one would read that archive's
     * bytes, or another's, instead of faulting. The process holds the file (one descriptor; a file deleted
     * meanwhile keeps its space until then); it is not kept if the file has no name left at the close.
     * Locks are not affected: the next writer, in this process or another, may open the archive at once. */
    MMZIP_KEEP_MAPPING = 1u << 4,
    /* Writable opens: shared appending, the writer lock held per transaction only (SHARED MODE above).
     * Ignored by read-only opens. */
    MMZIP_SHARED = 1u << 5
};

/* mmzip_options.lock_wait_ms: wait for the writer lock without limit (MMZIP_SHARED). */
#define MMZIP_WAIT_FOREVER UINT32_MAX

/* When puts outside a mmzip_begin()/mmzip_commit() batch are committed. */
typedef enum mmzip_commit_policy {
    MMZIP_COMMIT_EACH = 0,      /* every put, reserve+patch and remove commits before it returns */
    MMZIP_COMMIT_AMORTIZED = 1, /* commit when the bytes written since the last commit reach the size of
                                 * the central directory (so commits cost at most as much as the data), or
                                 * when max_pending_entries / max_pending_bytes is reached; and at close */
    MMZIP_COMMIT_MANUAL = 2     /* only mmzip_commit() and mmzip_close() commit */
} mmzip_commit_policy;

/*
 * Progress of a long operation: called now and then by the puts of 64 MiB or more and by mmzip_check of a
 * handle opened with it, and by mmzip_pack, with done out of total units of work (done grows and reaches
 * total at the end; only the ratio means something). For progress bars (`mmzip put`, `check`, `pack` on a
 * terminal). It must not call into the store.
 */
typedef void (*mmzip_progress_fn)(uint64_t done, uint64_t total, void *ctx);

typedef struct mmzip_options {
    uint64_t max_file_size;        /* writable opens reserve this much address space; 0 = 1 TiB */
    uint32_t alignment;            /* data alignment of new entries, power of two, 1..32768 and at most the
                                    * page size; 0 = 64 */
    uint32_t flags;                /* MMZIP_DURABLE | MMZIP_PUBLISH_ON_COMMIT | MMZIP_NO_LOCK | MMZIP_VERIFY_CRC |
                                    * MMZIP_KEEP_MAPPING | MMZIP_SHARED */
    uint32_t commit_policy;        /* mmzip_commit_policy */
    uint32_t max_pending_entries;  /* MMZIP_COMMIT_AMORTIZED: commit at this many pending entries (0 = no limit) */
    uint64_t max_pending_bytes;    /* MMZIP_COMMIT_AMORTIZED: commit at this many pending bytes (0 = no limit) */
    uint64_t max_decoded_size;     /* largest deflated entry that will be decoded; 0 = 16 GiB */
    uint32_t copy_threads;         /* threads one large mmzip_read() may use, the caller's included, 1..16;
                                    * 0 = automatic: $MMZIP_COPY_THREADS if set, else the CPUs the process
                                    * may run on, at most 4 (see mmzip_read) */
    uint32_t lock_wait_ms;         /* MMZIP_SHARED: how long a transaction (or the open) waits for the writer
                                    * lock before MMZIP_EBUSY; 0 = 60 000 (one minute); MMZIP_WAIT_FOREVER =
                                    * no limit. Unused without MMZIP_SHARED (a second writer fails at once) */
    mmzip_progress_fn progress;    /* NULL, or called during long operations: see mmzip_progress_fn */
    void *progress_ctx;            /* passed to progress */
    uint64_t reserved_[1];         /* zero */
} mmzip_options;

/* Fills *opts with the defaults described above. */
MMZIP_API void mmzip_options_init(mmzip_options *opts);

typedef struct mmzip mmzip_t; /* a handle on an open store */

/*
 * Opens the archive at path.
 *
 *   mode "r"   read-only; the archive must exist.
 *   mode "r+"  read/write; the archive must exist.
 *   mode "w+"  read/write; an empty archive is created if the file is missing.
 *   mode "w"   read/write; any existing archive is discarded and an empty one created.
 *
 * opts may be NULL for defaults. A writable open takes the writer lock (MMZIP_EBUSY if another process or
 * another handle in this process writes the archive), then recovers the file to its last commit if a
 * writer died mid-commit. With MMZIP_SHARED it waits for the lock instead (lock_wait_ms), recovers, and lets
 * the lock go before it returns (see SHARED MODE). A read-only open never writes. If this process already has
 * the file open, the new handle shares that store: a read-only open beside a writer is allowed; a writable
 * open beside a read-only one fails with MMZIP_EBUSY (close the readers first). A shared writable open has a
 * store of its own instead.
 *
 * Returns MMZIP_OK and sets *out, or an error (MMZIP_ENOENT, MMZIP_ENOTZIP, MMZIP_ECORRUPT, MMZIP_EBUSY,
 * MMZIP_EIO, MMZIP_ENOMEM, MMZIP_EINVAL, MMZIP_EUNSUPPORTED for multi-disk archives).
 */
MMZIP_API int mmzip_open(const char *path, const char *mode, const mmzip_options *opts, mmzip_t **out);

/*
 * Commits pending entries (unless the policy is MANUAL and nothing was committed explicitly - pending
 * entries are still committed: close never discards data that was put), drops unpatched reservations, and
 * releases the handle. Pointers obtained through this handle become invalid when the last handle of the
 * store is closed: the file is unmapped, and the addresses are left reserved and inaccessible (a stray read
 * faults) for the next open of the same file in this process, which saves rebuilding page tables; another
 * file never gets them. Returns the status of the final commit; the handle is released either way.
 */
MMZIP_API int mmzip_close(mmzip_t *h);

/*
 * Releases the handle without committing: pending entries, replacements, removals and reservations are
 * dropped, as by mmzip_rollback(). A store created with MMZIP_PUBLISH_ON_COMMIT that never committed is not
 * published: no file appears, and mode "w" leaves the archive it was to replace untouched. For what giving up
 * looks like (netCDF's nc_abort, a failed create). Returns MMZIP_OK; the handle is released either way.
 */
MMZIP_API int mmzip_discard(mmzip_t *h);

/* ---------------------------------------------------------------------------------------------------- */
/* Reading                                                                                                */

typedef struct mmzip_entry_info {
    const char *name;          /* not NUL-terminated in mmzip_list_ex callbacks; NUL-terminated by mmzip_stat
                                * only in name_buf */
    size_t name_len;
    uint64_t size;             /* uncompressed size */
    uint64_t compressed_size;  /* bytes stored in the archive */
    uint64_t header_offset;    /* offset of the local file header */
    uint64_t data_offset;      /* offset of the first data byte (0 if the local header is unreadable) */
    uint32_t crc32;
    uint16_t method;           /* 0 stored, 8 deflate, ... */
    uint16_t flags;            /* general-purpose bit flags */
    uint32_t alignment;        /* largest power of two (<= 32768) dividing data_offset */
    int pending;               /* 1 if not yet committed (writer handle only) */
} mmzip_entry_info;

/* Number of entries visible through this handle. */
MMZIP_API size_t mmzip_count(mmzip_t *h);

/* 1 if key names a visible entry, 0 if not. */
MMZIP_API int mmzip_exists(mmzip_t *h, const char *key);

/* Fills *info for key. info->name points at key. MMZIP_ENOTFOUND if absent. */
MMZIP_API int mmzip_stat(mmzip_t *h, const char *key, mmzip_entry_info *info);

/* Uncompressed size of key in *size. MMZIP_ENOTFOUND if absent. */
MMZIP_API int mmzip_size(mmzip_t *h, const char *key, uint64_t *size);

/*
 * Zero-copy read. Sets *data and *size to the entry's bytes. For a stored entry, *data points into the
 * shared read-only mapping. For a compressed entry (deflate 8, bzip2 12, LZMA 14, zstd 93, xz 95), the
 * entry is decoded once, its CRC checked, and *data points at the decoded copy held by the store until it
 * closes. Other methods fail with MMZIP_EUNSUPPORTED naming the method; encrypted entries likewise. A
 * zero-length entry gives a non-NULL *data and *size 0.
 *
 * What is checked. Every read path checks the entry's place and local header against the central
 * directory. Compressed entries: always the CRC-32 (at decoding). Stored entries: the CRC-32 only if the
 * handle was opened with MMZIP_VERIFY_CRC (then once per entry, before the first pointer is handed out;
 * it costs one pass over the bytes, about what a copy of them costs (0.1 ms per MiB on the development
 * machine, first-touch page faults included); the computation alone is about 0.04 ms per MiB with ISA-L's
 * crc32 on x86 with VPCLMULQDQ, 0.1-0.2 ms with libdeflate's (used when the build found no ISA-L) - see
 * docs/reliability.md), or if the entry is the physically last one of an archive another writer wrote (it
 * may be a torn tail). Otherwise a stored entry is handed out unread: zero-copy means no pass over the
 * data. mmzip_verify() checks one entry on demand; mmzip_read() of a whole entry checks it always.
 * A mismatch is MMZIP_ECRC with a message naming the entry.
 */
MMZIP_API int mmzip_get(mmzip_t *h, const char *key, const void **data, uint64_t *size);

/*
 * Typed zero-copy view: returns a pointer to the entry's data if it is stored (method 0), its size is
 * exactly count * elem_size, and its address is a multiple of elem_align (a power of two). Returns NULL
 * otherwise (absent, compressed, wrong size, misaligned); the caller then falls back to mmzip_read().
 * The bindings make these checks in their own terms (numpy's frombuffer); this is the C application's way
 * to take an array in place without a copy, as the README's tour and the user guide show.
 */
MMZIP_API const void *mmzip_get_typed(mmzip_t *h, const char *key, size_t elem_size, size_t elem_align,
                                      uint64_t count);

/*
 * Checks the CRC-32 of key's bytes against its central-directory record: a stored entry is read in place, a
 * compressed one decoded into a scratch buffer that is freed again (unless mmzip_get already decoded and
 * checked it). Returns MMZIP_OK, MMZIP_ECRC naming the entry, MMZIP_ENOTFOUND, MMZIP_ECORRUPT (its local
 * header or stream is wrong), MMZIP_EUNSUPPORTED (method, encryption) or MMZIP_ENOMEM. A stored entry
 * found good is remembered for the store's life (its bytes never change), so later checks cost nothing.
 */
MMZIP_API int mmzip_verify(mmzip_t *h, const char *key);

/*
 * Copies up to len bytes of the entry, starting at offset, into buf; *nread gets the count (short only at
 * the end of the entry). Works for every supported method. A read of the whole entry (offset 0, len at
 * least its size) checks the CRC-32 of a stored entry too, on the bytes copied, and fails with MMZIP_ECRC
 * naming the entry (buf then holds the bytes read); once an entry was found good it is not checked again.
 * A partial read of a stored entry checks no CRC (it cannot); compressed entries are always checked.
 *
 * Copies of 2 MiB or more from a committed stored entry are split into page-aligned pieces of at least
 * 1 MiB that helper threads read at the same time as the caller (mmzip_options.copy_threads; the helpers
 * start with every signal blocked and are joined before this returns). Whole pages of buf that are not yet
 * in memory are faulted in at once rather than one fault per page. Neither changes what buf holds
 * afterwards: bytes of buf outside the copied range are untouched.
 */
MMZIP_API int mmzip_read(mmzip_t *h, const char *key, uint64_t offset, void *buf, size_t len, size_t *nread);

/*
 * Copies len bytes from src to dst the way mmzip_read() fills its buffer: whole pages of dst that are not
 * yet in memory are faulted in at once (8 pages or more), and a copy of 2 MiB or more is split into
 * page-aligned pieces that helper threads copy beside the caller (mmzip_options.copy_threads of h's store;
 * h may be NULL for one thread). For zero-copy readers that must hand a copy to someone else, typically
 * from a pointer mmzip_get() returned into memory the application has just allocated: the HDF5 driver
 * copies into HDF5's buffers this way. Any readable src works. dst and src must not overlap. Cannot fail.
 *
 * If h's store is open for writing and its mapping is new, a copy of less than 64 KiB out of the mapping
 * (the bytes of the archive file, as mmzip_get() and mmzip_edit_begin() point at them) is read from the file
 * with pread instead: the same bytes, since the mapping shares the file's page cache, without touching the
 * mapping. An editing session reads a few small pieces once, and in a new process a first touch of a page of
 * the mapping costs a page fault and the page tables above it, more than the read (0.2 ms in all for an HDF5
 * attribute edit on this project's VM). A mapping kept from an earlier store of the same file
 * (MMZIP_KEEP_MAPPING) has the pages that store touched present, and stores open read-only always copy
 * through the mapping.
 */
MMZIP_API void mmzip_copy(mmzip_t *h, void *dst, const void *src, size_t len);

/*
 * mmzip_release_kept() gives back what the process keeps of closed stores for the next open: the address
 * reservation of the last store closed and, if it was opened with MMZIP_KEEP_MAPPING, its mapping of the
 * archive and the descriptor that mapping holds. Afterwards the process holds nothing of any closed archive
 * (a deleted one's space is freed, a file system can be unmounted), and the next open maps its file anew,
 * as the first open of a new process does. Stores still open are not affected. Thread-safe; cannot fail.
 */
MMZIP_API void mmzip_release_kept(void);

/*
 * Calls fn once per visible entry whose name starts with prefix (NULL or "" for all), in name order.
 * info->name is valid only during the call. A non-zero return from fn stops the walk and is returned.
 * fn must not call write functions on the same store.
 *
 * flags 0, or MMZIP_LIST_NO_DATA_OFFSET, which leaves data_offset and alignment 0: finding an entry's data
 * means reading its local header, which for a listing of a large archive that was just opened is one page
 * fault per entry (8 000 entries of 64 KiB: about 25 ms, and as much again to unmap at close). Callers that
 * want names, sizes and CRCs (the netCDF plugin scanning for metadata) should pass it. Other bits:
 * MMZIP_EINVAL.
 */
typedef int (*mmzip_list_fn)(const mmzip_entry_info *info, void *ctx);
enum { MMZIP_LIST_NO_DATA_OFFSET = 1u << 0 };
MMZIP_API int mmzip_list_ex(mmzip_t *h, const char *prefix, unsigned flags, mmzip_list_fn fn, void *ctx);

/*
 * Bulk listing for bindings, where a callback per entry is costly (Python's ctypes: about 3 us each, most of
 * a second for 200 000 entries). Writes the names of the visible entries starting with prefix (NULL or ""
 * for all), in name order, each followed by a NUL byte, into buf (cap bytes); *needed gets the bytes the
 * whole list takes and *count (if not NULL) the number of names.
 *
 * With MMZIP_NAMES_CHILDREN, one name per distinct child of prefix instead, without the prefix: for prefix
 * "g/" and entries "g/a", "g/b/0", "g/b/1", the names "a" and "b/" (a child that has entries below it ends
 * with '/'; a name can appear both ways, "a" and "a/", when both exist). The subtree of each child is
 * skipped by binary search, so listing the children of a prefix costs O(children x log entries), not a walk
 * of every chunk below. prefix should end with '/' (or be empty) for this to mean directory children.
 *
 * If the names do not fit, returns MMZIP_ETOOBIG with *needed set and buf's content unspecified: call again
 * with a buffer of *needed bytes (buf may be NULL with cap 0 to ask for the size first; the archive can
 * change between two calls on a writer's handle, so loop). Other errors: MMZIP_EINVAL (NULL handle or
 * needed, unknown flag), MMZIP_ENOMEM.
 */
enum { MMZIP_NAMES_CHILDREN = 1u << 0 };
MMZIP_API int mmzip_list_names(mmzip_t *h, const char *prefix, unsigned flags, char *buf, size_t cap,
                               size_t *needed, size_t *count);

/*
 * Read-only handles: picks up commits made since open by a writer in another process. Pointers handed out
 * earlier stay valid. Returns MMZIP_ESTALE if the file was replaced (pack); then reopen. A no-op for the
 * writer's own store, except in shared mode (MMZIP_SHARED) outside a transaction: then it takes the writer
 * lock (waiting as a write does, MMZIP_EBUSY after lock_wait_ms), reloads the directory as the next
 * transaction would, and lets the lock go; MMZIP_EBUSY at once for a shared handle inherited across fork()
 * (it shares the parent's lock), as for its writes.
 */
MMZIP_API int mmzip_refresh(mmzip_t *h);

/*
 * The address of a counter that changes whenever what lookups through h answer may have changed: a commit
 * (of this store, or of a writer sharing it in this process), a refresh that found a newer commit, and on a
 * writer's handle every put, patch, remove or rollback. For bindings that cache lookups (the Python
 * package's ZarrStore keeps name -> place of the entries it has read): a cached answer is current while
 * the counter holds the value it had before the lookup was made and after. Read it with an atomic load
 * (an aligned 64-bit word); it only grows. Valid for the life of the handle (NULL gives a counter that
 * stays 0).
 */
MMZIP_API const uint64_t *mmzip_generation(mmzip_t *h);

/* ---------------------------------------------------------------------------------------------------- */
/* Writing                                                                                                */

/*
 * Appends an entry named key holding size bytes of data, stored (method 0), its data aligned to
 * `alignment` (0 = the archive's default). A key that exists is replaced: the new entry is appended and
 * the old one leaves the central directory at the next commit. Putting byte-identical content under an
 * existing key whose data already lies at that alignment writes nothing (no byte of the file changes, and
 * the entry keeps its time and mode); at another alignment it writes the bytes again, aligned. This
 * holds for mmzip_put and mmzip_putv, not for mmzip_reserve + mmzip_patch, which always
 * append a new version (the caller's view must keep reading what it wrote). Committed before return under
 * MMZIP_COMMIT_EACH.
 *
 * Each entry records the time of the call as its modification time (the DOS time and date, in local
 * time, and Info-ZIP's extended timestamp field "UT" with the Unix time, in both headers) and the Unix mode
 * 0644 in its external attributes (version made by: Unix); a key ending in '/' is a folder entry, mode
 * 040755 plus the MS-DOS directory bit, as Info-ZIP zip writes them, and holds no data: a key ending in '/'
 * with size > 0 (here, or in mmzip_patch of a reservation) is MMZIP_EINVAL, since unzip and 7-Zip would make a
 * folder of it and drop the bytes. If $SOURCE_DATE_EPOCH is set (a
 * decimal count of seconds since 1970, reproducible-builds.org), it replaces the time of the call, later
 * times given through mmzip_putv are lowered to it, and the DOS fields are UTC: archives built from the
 * same puts are then identical byte for byte.
 */
MMZIP_API int mmzip_put(mmzip_t *h, const char *key, const void *data, uint64_t size, uint32_t alignment);

/*
 * MMZIP_OK if mmzip_put(h, key, data, size > 0, ...) would accept key as a name, on any handle (read-only
 * ones too): not empty, absolute, over 65,535 bytes or holding a ".." component, and, for a name h does not
 * hold yet, no empty or "." component; not ending in '/'. Otherwise MMZIP_EINVAL with put's message, so that
 * a caller that writes later (the HDF5 driver creating a member) can refuse the name at once. Writes nothing.
 */
MMZIP_API int mmzip_check_name(mmzip_t *h, const char *key);

/*
 * Like mmzip_put, but the data comes from count buffers, concatenated (the Python package writes a .npy
 * header and its array without joining them), and the entry's modification time and Unix mode may be given
 * (attr NULL: the defaults of mmzip_put). mtime is in seconds since 1970 (the extended timestamp holds 1970 to 2038 and the DOS fields
 * 1980 to 2107: times outside are clamped). mode is st_mode: the type bits S_IFREG or S_IFDIR and the
 * permission bits 07777; 0 gives the default of the name (0644, or 040755 for a name ending in '/'), and
 * permission bits without a type take the type from the name. `mmzip put` passes each file's time and mode,
 * so that unzip restores them as it would from `zip -r`.
 */
typedef struct mmzip_iovec {
    const void *base;
    uint64_t len;
} mmzip_iovec;
typedef struct mmzip_attr {
    int64_t mtime;
    uint32_t mode;
    uint32_t reserved_; /* zero */
} mmzip_attr;
MMZIP_API int mmzip_putv(mmzip_t *h, const char *key, const mmzip_iovec *iov, int count, uint32_t alignment,
                         const mmzip_attr *attr);

/*
 * Drops key from the archive's directory at the next commit (its bytes stay until mmzip_pack), and every
 * earlier record of the same name that another writer left (zipfile, zarr's ZipStore), so that no older value
 * comes back. The bytes of entries removed from the end of the data go at the close of the last writer only
 * if no other process has the archive open then (a reader of an older commit may be reading them); otherwise
 * they stay, and later writers append after them while another process has the file open. MMZIP_ENOTFOUND if
 * absent.
 */
MMZIP_API int mmzip_remove(mmzip_t *h, const char *key);

/*
 * Two-phase append for large entries that are produced in place (dated at the reservation, mode 0644, see
 * mmzip_put). Reserves `capacity` bytes for key and
 * sets *data to a writable view of them (zero-filled). The entry is pending and invisible to other
 * handles. Fill the view, then call mmzip_patch() with the final size: it computes the CRC-32, writes the
 * local header and makes the entry ready; it is published at the next commit (at once under
 * MMZIP_COMMIT_EACH). A crash before the commit leaves the archive at its previous commit. After
 * mmzip_patch() the view stays valid but becomes read-only. Other entries may be put, patched and committed
 * while a reservation is open.
 */
/*
 * flags 0, or MMZIP_RESERVE_ROOM for an entry that is expected to grow after it is published (an HDF5 file that
 * later sessions extend in place, mmzip_edit_*): what mmzip_patch() leaves of the capacity stays the entry's
 * room. The room is recorded in the entry's central-directory record (a private extra field, 0x6D52, that
 * other ZIP readers skip), reads as zeros, uses no disk (a hole), and later entries go after it; an in-place
 * edit grows the entry into it without moving it. mmzip_info() reports it as reserved_bytes; mmzip_pack()
 * reclaims it. A caller that moves an entry which outgrew its place doubles its capacity, so that an entry
 * growing in every session is moved O(log n) times over n sessions. Other bits: MMZIP_EINVAL.
 */
enum { MMZIP_RESERVE_ROOM = 1u << 0 };
MMZIP_API int mmzip_reserve(mmzip_t *h, const char *key, uint64_t capacity, uint32_t alignment, unsigned flags,
                            void **data);

/*
 * Grows (or shrinks) the capacity of the reservation for key, which must be the most recent pending entry.
 * The view keeps its address: *data is set to the same pointer. MMZIP_EBUSY if another entry was appended
 * after it.
 */
MMZIP_API int mmzip_reserve_resize(mmzip_t *h, const char *key, uint64_t capacity, void **data);

/* Completes the reservation of key with its final size (<= capacity). See mmzip_reserve(). */
MMZIP_API int mmzip_patch(mmzip_t *h, const char *key, uint64_t size);

/*
 * Abandons the open (unpatched) reservation of key, leaving every other pending entry and reservation as it
 * is: key reads as before the reservation, its view becomes invalid at once, and its space is dead until
 * mmzip_pack() (or reused, if it was the last thing written). For giving up on one of several entries being
 * produced in place; mmzip_rollback() drops them all. MMZIP_EINVAL if key has no open reservation.
 */
MMZIP_API int mmzip_unreserve(mmzip_t *h, const char *key);

/* Starts a batch: puts are not committed until mmzip_commit(). Batches do not nest. */
MMZIP_API int mmzip_begin(mmzip_t *h);

/*
 * Publishes every pending entry, replacement and removal with one central-directory write, and ends a
 * batch. Reservations not yet patched stay pending: their space is kept (the new directory goes after it)
 * and a later commit publishes them once patched; such a reservation can no longer be resized. A commit with
 * nothing pending writes nothing.
 */
MMZIP_API int mmzip_commit(mmzip_t *h);

/* Discards every pending entry, replacement, removal and reservation; ends a batch. */
MMZIP_API int mmzip_rollback(mmzip_t *h);

/* ---------------------------------------------------------------------------------------------------- */
/* Editing an entry in place                                                                              */

/*
 * Everything else appends; an edit changes a committed, stored entry where it lies, at the cost of the change
 * rather than of the entry. For files that their own library rewrites in place (HDF5: superblock, object
 * headers, B-trees) and for arrays an application updates where they lie (the Python package's r+ arrays).
 * docs/protocol.md ("In-place edits") specifies the protocol and argues why it is crash-safe.
 *
 * One model: mmzip_edit_begin() gives an edit handle; the bytes change through it, by mmzip_edit_write() or
 * through the writable view of mmzip_edit_map(); mmzip_edit_publish() makes them the entry's committed version
 * with one commit; mmzip_edit_end() ends the edit. Its flags choose what a crash does to unpublished changes:
 *
 *   Journaled (flags 0): the changes are undone. Each committed 4 KiB block is copied to the undo journal
 *     beside the archive (<archive>.mmzip-undo) before its first change after a publish; bytes past the
 *     committed size (the entry's growth) need no copy. The view of mmzip_edit_map() is read-only; change
 *     bytes with mmzip_edit_write(), grow with mmzip_edit_grow(). One journaled edit at a time per archive.
 *   Mapped (MMZIP_EDIT_MAP): the changes are kept. The caller writes through a shared writable view of the
 *     entry (no copy, no system call), which cannot be journaled: the entry is named in the marker file
 *     beside the archive (<archive>.mmzip-inplace, docs/format.md section 9) before the view is handed out,
 *     and a crash leaves the bytes written so far (each page old or new) with a stale CRC, which recovery
 *     recomputes over them. The size cannot change. Any number of entries at a time.
 *
 * What it guarantees.
 *   - Publishing. A publish, and every commit while a mapped edit is open (mmzip_commit, the commit of a put,
 *     close), writes the entry's new CRC-32 into its local header in place and into a new directory: each
 *     commit publishes bytes and a CRC that agree, as of the moment of the commit (synchronising writers of a
 *     view with the commit is the caller's business). Other pending entries are committed with it.
 *   - Crash (SIGKILL at any instruction) and, with MMZIP_DURABLE, power loss: the next writable open (so
 *     mmzip_recover and `mmzip recover`) repairs before anything else. A journaled edit's entry is restored to
 *     its last published version from the journal (MMZIP_RECOVERY_JOURNAL); a mapped edit's entry keeps its
 *     bytes as left and gets their CRC (MMZIP_RECOVERY_INPLACE). mmzip_info().edits_recovered counts such
 *     entries, edits_restored those restored from a journal, journal_restored the bytes written back. The
 *     journal and the marker file go with the archive: copy or move them with it, or recover first. Marker
 *     entries ".mmzip/edit/<key>" that older versions of mmzip committed are recovered the same way and
 *     removed.
 *   - Readers. Other entries are never touched. Of the entry itself, readers in other processes would see
 *     bytes change under their pointers: a reader that must not takes a hold (mmzip_hold), which a journaled
 *     edit cannot begin against (MMZIP_EBUSY) and which cannot be taken while one is open. Readers of a mapped
 *     edit's entry see its writes as they happen (no isolation) and the new CRC after their next refresh.
 *     Until the repair: a journaled edit's entry is refused by mmzip_get(), mmzip_read() and mmzip_hold()
 *     (MMZIP_EBUSY, naming the journal and `mmzip recover`), since its bytes may be half written; a mapped
 *     edit's entry reads as left and CRC checks (mmzip_check, unzip -t, zipfile.testzip) report a mismatch
 *     naming the marker and `mmzip recover`: never a silent pass. mmzip_unfinished_edits() lists both.
 *
 * mmzip_edit_begin() opens key (committed and stored; journaled edits also need a ZIP64 local header as
 * mmzip writes them). Refused: pending entries and an entry already being edited (MMZIP_EBUSY), compressed,
 * encrypted or data-descriptor entries and, journaled, foreign local headers (MMZIP_EUNSUPPORTED: write a new
 * version instead), a held entry or a second journaled edit (MMZIP_EBUSY), names of older marker entries
 * (MMZIP_EINVAL). A journaled begin takes the entry's edit lock (an exclusive OFD lock) and creates the
 * journal. A mapped begin first commits everything pending (and ends a batch), checks the entry's bytes
 * against its CRC-32 (MMZIP_ECRC naming it: the commit's new CRC would otherwise make earlier damage look
 * valid), then writes the marker file. *out is valid until mmzip_edit_end() or the close of the store's last
 * writable handle, which ends every edit as mmzip_edit_end() does (mmzip_discard too: a mapped edit's changes
 * are in the file and are published). Replacing or removing the key during an edit leaves the edit writing
 * into the superseded bytes.
 */
typedef struct mmzip_edit mmzip_edit_t;
enum { MMZIP_EDIT_MAP = 1u << 0 };
MMZIP_API int mmzip_edit_begin(mmzip_t *h, const char *key, unsigned flags, mmzip_edit_t **out);

/*
 * The entry's bytes as the edit sees them: *view (writable for MMZIP_EDIT_MAP, read-only otherwise; it reflects
 * every change and stays valid until the edit ends - a mapped view then stays mapped read-only until the store
 * closes), *size the last published size, *room the bytes the entry may grow to in place: for a journaled edit
 * UINT64_MAX if it is the physically last entry (room is made by moving the directory), else the distance to
 * the next entry or the end of its recorded room (MMZIP_RESERVE_ROOM); for a mapped edit its size. Any output
 * may be NULL.
 */
MMZIP_API int mmzip_edit_map(mmzip_edit_t *ed, void **view, uint64_t *size, uint64_t *room);

/*
 * Journaled edits: changes len bytes at offset (committed bytes are first copied to the journal, once per 4 KiB
 * block and per published version; bytes past the committed size are written directly; bytes equal to what is
 * there are not written). Growing past the room fails with MMZIP_ETOOBIG: the caller then copies the entry into
 * a new version (mmzip_reserve) and ends the edit. mmzip_edit_grow() makes room for capacity bytes ahead of
 * writing them, with the same rule. Both are MMZIP_EINVAL on a mapped edit (write through its view).
 */
MMZIP_API int mmzip_edit_write(mmzip_edit_t *ed, uint64_t offset, const void *data, size_t len);
MMZIP_API int mmzip_edit_grow(mmzip_edit_t *ed, uint64_t capacity);

/*
 * Makes the first `size` bytes the entry's committed version with one commit of the archive (new CRC and sizes
 * in the local header and the directory; other pending entries are committed with it; a batch stays open). The
 * edit stays open for more changes. A mapped edit's size cannot change: size must be its size (MMZIP_EINVAL).
 */
MMZIP_API int mmzip_edit_publish(mmzip_edit_t *ed, uint64_t size);

/*
 * Ends the edit; ed must not be used afterwards. Journaled: what was not published is undone, the journal
 * removed and the lock released. Mapped: the view becomes read-only (a later write faults; it stays mapped
 * until the store closes), the final CRC is committed, then the entry leaves the marker file (removed with its
 * last entry). If undoing or committing fails, the status says so and recovery finishes the job at the next
 * writable open (the journal, or the marker, stays).
 */
MMZIP_API int mmzip_edit_end(mmzip_edit_t *ed);

/*
 * A reader's claim on one entry against in-place edits: a shared OFD lock on the entry's edit lock (its
 * own open file description, so it also excludes editors in this process). MMZIP_EBUSY with a message if
 * the entry is being edited, or was when its writer was killed (until recovery); MMZIP_ENOTFOUND if absent.
 * Holds on a version of an entry do not outlive it being replaced: a new version lies elsewhere.
 * mmzip_release() drops the hold (NULL is ignored).
 */
typedef struct mmzip_hold mmzip_hold_t;
MMZIP_API int mmzip_hold(mmzip_t *h, const char *key, mmzip_hold_t **out);
MMZIP_API void mmzip_release(mmzip_hold_t *hold);

/* ---------------------------------------------------------------------------------------------------- */
/* Maintenance                                                                                            */

typedef struct mmzip_info {
    uint64_t entries;          /* entries in the committed central directory */
    uint64_t pending;          /* pending entries (writer handle) */
    uint64_t file_size;        /* bytes on disk */
    uint64_t live_bytes;       /* local headers + data of committed entries */
    uint64_t dead_bytes;       /* bytes no committed entry or directory refers to (pack reclaims them) */
    uint64_t directory_bytes;  /* central directory + end records */
    uint64_t prefix_bytes;     /* data before the first entry (self-extractor stubs and the like) */
    uint32_t alignment;        /* default alignment for new entries */
    uint32_t min_alignment;    /* smallest alignment of any stored entry's data (1 for unaligned archives) */
    int writable;              /* this handle can write */
    int writer_locked;         /* some handle (here or in another process) holds the writer lock */
    int locks_supported;       /* the file system supports the OFD locks mmzip uses */
    int zip64;                 /* the archive ends with ZIP64 end records */
    int durable;               /* MMZIP_DURABLE is in effect */
    uint64_t recovered_bytes;  /* bytes discarded by the recovery done at open (0 if none) */
    uint64_t rolled_back;      /* always 0: recovery no longer drops entries (kept for compatibility) */
    uint64_t torn_tail;        /* entries whose local header is missing or disagrees with the directory (a
                                * writer that publishes its directory first was interrupted, or damage); they
                                * are hidden from lookups and listings but kept in the directory: mmzip never
                                * drops what it did not write */
    uint64_t append_from;      /* writable handles: the open found a foreign anomaly (bytes after the end
                                * records, gaps around the directory) and kept it; new entries go at or after
                                * this offset so that nothing other readers read is overwritten. 0 if none */
    uint64_t unnamed;          /* entries whose name is empty or holds a NUL: unreachable by name, not listed,
                                * kept (mmzip check reports them) */
    uint64_t edits_recovered;  /* entries whose in-place edit a writer that died left unfinished, repaired by
                                * this writable open: restored from an undo journal (edits_restored of them) or
                                * kept as left with their CRC recomputed (mapped edits) */
    uint64_t edits_open;       /* in-place edits this store has open now (mmzip_edit_begin) */
    uint64_t free_bytes;       /* bytes between the last entry and the directory: the slack a writer leaves
                                * for its next commits (a hole, no disk used; pack removes it), or unreferenced
                                * bytes of a foreign archive. Not counted in dead_bytes */
    int end_follows_directory; /* the end records sit right after the directory they describe and are the
                                * last bytes of the file, with nothing prepended: the layout every ZIP reader
                                * accepts (Python's zipfile requires it). Every state mmzip's writer leaves has
                                * it; a file with bytes after its end records, or a forwarding trailer of an
                                * older mmzip, does not */
    uint64_t reserved_bytes;   /* room kept after entries for their in-place growth (an HDF5 member moved to
                                * make room is given as much again, so that it moves O(log n) times over n
                                * sessions of growth): neither live nor dead, a hole on disk; pack reclaims it */
    uint64_t journal_restored; /* writable handles: bytes of committed data the open wrote back from an undo
                                * journal (a journaled edit whose writer died: the entry is at its last commit
                                * again); 0 if none */
    uint64_t edits_unfinished; /* entries with an unfinished in-place edit of another handle or process, as
                                * mmzip_unfinished_edits() lists them (read-only handles: those a writable
                                * open would repair, unless their writer is still at work) */
    uint64_t edits_restored;   /* of edits_recovered, the entries restored from an undo journal */
    uint64_t kept_bytes;       /* bytes below the data that directory relocations left: the directory the
                                * last one moved away from, kept for third-party readers that were reading
                                * it, until the next relocation; and the free space (holes, and zeros of
                                * partial pages: every byte of those ranges no entry covers) later puts fill
                                * before relocating again. With free_bytes, within max(64 KiB, 1 % of the
                                * file) once the last writer has closed; not counted in dead_bytes */
    uint64_t spare[3];         /* zero; fields added later take their place, so that the struct's size (which
                                * callers in other languages mirror) no longer changes */
} mmzip_info;

MMZIP_API int mmzip_get_info(mmzip_t *h, mmzip_info *info);

/*
 * Verifies the whole archive: structure, every local header against the central directory, every CRC
 * (decoding compressed entries). Returns MMZIP_OK, or the first problem (MMZIP_ECRC, MMZIP_ECORRUPT,
 * MMZIP_EUNSUPPORTED) after calling report (if not NULL) for each problem found.
 *
 * Each message passed to report starts with its kind:
 *   "error: "    something mmzip cannot read (the return status says the first);
 *   "interop: "  something mmzip reads but some other ZIP reader refuses or reads differently (end records
 *                not right after the directory, bytes after them, a 16-bit entry count that wrapped, a
 *                comment running past the end, names that cannot be looked up, duplicates...);
 *   "recover: "  what `mmzip recover` (or any writable open) would do to this file, without doing it: write an
 *                undo journal back (naming the entry and the bytes), keep an entry modified in place and
 *                recompute its CRC (naming it), cut an interrupted mmzip write, move the directory back, or
 *                keep a foreign anomaly and append after it; "recover: nothing to do" if none of these. Every
 *                "error:" that recovery would fix has its "recover:" line. On a writable handle the open has
 *                already done it, so there is none.
 * An archive with no "error:" is valid for mmzip; one with no "error:" and no "interop:" is valid for every
 * ZIP reader mmzip is tested against (Python zipfile, Info-ZIP unzip, 7-Zip, libzip).
 */
typedef void (*mmzip_report_fn)(const char *message, void *ctx);
MMZIP_API int mmzip_check(mmzip_t *h, mmzip_report_fn report, void *ctx);

/*
 * The warnings of an open archive, without verifying any data: fields of its records that are wrong but that
 * mmzip reads past as Python zipfile does, each reported once through report as one sentence starting with
 * "warning: " and naming the archive, the field and the entry. They are: an end record's entry count that is
 * not the number of records its directory size holds (the records are read); the last directory record's
 * comment running past the directory (it is cut there); a stored entry whose recorded compressed size is
 * larger than its size (its first `size` bytes are the entry); a local header whose compression method
 * disagrees with the directory (the directory's is used). Values are never guessed: the entries concerned
 * are checked against their CRC-32 before any byte is handed out, and refused (MMZIP_ECRC, naming the field)
 * if they do not match. The same findings appear in mmzip_check as "interop: " lines. Returns MMZIP_OK, or
 * MMZIP_EINVAL for a NULL argument.
 */
MMZIP_API int mmzip_warnings(mmzip_t *h, mmzip_report_fn report, void *ctx);

/*
 * Repairs the archive at path to its last commit without otherwise changing it: an entry whose in-place edit
 * a killed writer left unfinished is restored from its undo journal (a journaled edit) or kept as left with its
 * CRC recomputed (a mapped edit, MMZIP_EDIT_MAP), bytes a killed mmzip writer left after its end records are
 * removed and a relocated directory moved back behind the data. Only what mmzip's own protocol leaves,
 * recognized by the records only mmzip writes, is touched: anything else (a wrong CRC, a missing local header,
 * bytes after foreign end records, gaps around a foreign directory) is kept byte for byte, and mmzip_check
 * reports it. Equivalent to a writable open followed by close, and it also removes the temporary files of
 * packs and creations killed before they renamed them (<path>.mmzip-pack-<pid>, <path>.mmzip-new-<pid>, of
 * processes that are gone), which a writable open leaves.
 *
 * It says what it did: fn (if not NULL) is called once per thing done or deliberately kept, in the order done,
 * and *changed (if not NULL) gets 1 if the archive file's bytes or size may have changed, 0 if it is byte for
 * byte as it was (then no action other than MMZIP_RECOVERY_KEPT and MMZIP_RECOVERY_TEMP_FILE is reported). What
 * an action's fields mean, by kind:
 *   MMZIP_RECOVERY_JOURNAL      entry: the entry an undo journal restored to its last committed version (an
 *                               journaled edit whose writer died before publishing); bytes: the
 *                               committed bytes written back; offset: the entry's local header.
 *   MMZIP_RECOVERY_JOURNAL_GONE the undo journal was removed with nothing to write back (its edit had published,
 *                               or changed nothing before the kill); entry: the entry it named, or NULL.
 *   MMZIP_RECOVERY_INPLACE      entry: an entry edited through a view (MMZIP_EDIT_MAP) by a writer that died: its
 *                               bytes are kept as that writer left them (possibly only part of its changes),
 *                               its CRC-32 recomputed over them and its marker removed; bytes: its size;
 *                               offset: 1 if the CRC had to change, 0 if it was right already. Also (entry
 *                               NULL) a marker that named an entry no longer there, or a marker file of
 *                               another file, removed with nothing to refresh.
 *   MMZIP_RECOVERY_CUT          bytes after the last commit's end records (an interrupted mmzip write) were
 *                               removed: bytes: how many; offset: where the file now ends.
 *   MMZIP_RECOVERY_DIRECTORY    the directory was rewritten behind the last entry (at offset); bytes: by how
 *                               much the file shrank (removed entries' bytes, an interrupted relocation or
 *                               free slack, never a committed entry's).
 *   MMZIP_RECOVERY_DEAD_HEADER  the signatures of superseded local headers from offset, before the first live
 *                               entry, were neutralized (as every commit does), so that readers that scan
 *                               local headers from the start skip those dead entries (bytes: 4).
 *   MMZIP_RECOVERY_TEMP_FILE    entry: a temporary file of a killed pack or creation beside the archive, removed.
 *   MMZIP_RECOVERY_KEPT         something not mmzip's to repair, kept byte for byte (bytes after foreign end
 *                               records, gaps around a foreign directory, an entry whose local header is
 *                               missing: entry names it); new entries are appended after offset (0: n/a).
 *
 * message is one sentence naming the archive, and the entry if any, that says what was done and why. The
 * action and its strings are valid during the call only. Returns MMZIP_OK or the status of the open, repair or
 * close that failed (MMZIP_ENOENT, MMZIP_EBUSY while a writer holds the archive, ...); fn is called for what was
 * done before a failure too.
 */
typedef enum mmzip_recovery_kind {
    MMZIP_RECOVERY_JOURNAL = 1,
    MMZIP_RECOVERY_JOURNAL_GONE = 2,
    MMZIP_RECOVERY_INPLACE = 3,
    MMZIP_RECOVERY_CUT = 4,
    MMZIP_RECOVERY_DIRECTORY = 5,
    MMZIP_RECOVERY_DEAD_HEADER = 6,
    MMZIP_RECOVERY_TEMP_FILE = 7,
    MMZIP_RECOVERY_KEPT = 8
} mmzip_recovery_kind;

typedef struct mmzip_recovery_action {
    int kind;              /* mmzip_recovery_kind */
    const char *entry;     /* NUL-terminated, or NULL */
    uint64_t bytes;
    uint64_t offset;
    const char *message;
} mmzip_recovery_action;

typedef void (*mmzip_recovery_fn)(const mmzip_recovery_action *action, void *ctx);
MMZIP_API int mmzip_recover(const char *path, mmzip_recovery_fn fn, void *ctx, int *changed);

/*
 * Entries with an unfinished in-place edit that does not belong to this handle's store: what a killed writer
 * leaves for recovery (or what a writer in another process is doing now). Calls fn once per such entry and
 * returns how many there are (fn may be NULL to count), or a negative status. For each:
 *
 *   kind MMZIP_UNFINISHED_UNDO     an undo journal beside the archive (<archive>.mmzip-undo) restores the
 *                                  entry's committed version (a journaled edit): until then mmzip_get and
 *                                  mmzip_hold refuse the entry (MMZIP_EBUSY), since its bytes may be half
 *                                  written; mmzip_list_ex and mmzip_stat give its committed size and CRC.
 *   kind MMZIP_UNFINISHED_INPLACE  named by the in-place marker file <archive>.mmzip-inplace (or an older
 *                                  mmzip's marker entry) of a mapped edit: the entry's bytes are what the
 *                                  writer wrote so far, its CRC-32 is stale (checks report a mismatch);
 *                                  readers get the bytes as they are.
 *   writer_alive                   1 if a writer holds the entry (UNDO) or the archive (INPLACE) now: the edit
 *                                  is in progress, and recovery will not happen until that writer is gone.
 *   journal_bytes                  UNDO: the size of the undo journal; 0 otherwise.
 *
 * A writable handle's open has repaired what killed writers left, so it lists nothing (its own edits are not
 * listed). The strings are valid during the call only. A non-zero return from fn stops the walk and is
 * returned.
 */
enum { MMZIP_UNFINISHED_UNDO = 1, MMZIP_UNFINISHED_INPLACE = 2 };
typedef struct mmzip_unfinished_edit {
    const char *key;       /* NUL-terminated */
    int kind;
    int writer_alive;
    uint64_t journal_bytes;
} mmzip_unfinished_edit;
typedef int (*mmzip_unfinished_fn)(const mmzip_unfinished_edit *edit, void *ctx);
MMZIP_API int mmzip_unfinished_edits(mmzip_t *h, mmzip_unfinished_fn fn, void *ctx);

/*
 * Rewrites the archive with only its live entries, compact and aligned, reclaiming the space of replaced
 * and removed entries. Writes to a temporary file beside the target (out_path if not NULL, otherwise path)
 * that is fsynced and renamed over it, so that a crash or a failure leaves either the old or the new file
 * (and, if it came between naming the temporary file and the rename, that file, which the next mmzip_pack or
 * mmzip_recover of the archive removes); an existing out_path is replaced only by a complete archive. Holds
 * the writer lock throughout (MMZIP_SHARED in opts is ignored; shared writers wait meanwhile, and those that
 * had the old file open get MMZIP_ESTALE at their next transaction). Readers in other processes that have the
 * old file open keep reading it; in this process, pack opens the archive for writing as mmzip_open does, so it
 * fails (MMZIP_EBUSY, saying so) while a read-only handle of the same archive is open here: close those first.
 * Every stored entry's CRC-32 is checked as it is copied: a mismatch fails with MMZIP_ECRC naming
 * the entry, and nothing is changed (compressed entries are copied with their CRC, unchecked; entries kept
 * only because mmzip drops nothing, torn or unnamed, are copied as they are).
 */
MMZIP_API int mmzip_pack(const char *path, const char *out_path, const mmzip_options *opts);

/* ---------------------------------------------------------------------------------------------------- */
/* Names of the form "archive#/member"                                                                   */

/*
 * The HDF5 driver, the netCDF storage map and the Python package accept "archive.zip#/path" for a member
 * or a sub-dataset inside an archive. '#' and even "#/" are legal in file names too, so they, and the CLI,
 * read every name by this one rule, deciding from what exists on disk:
 *
 *   - a name without "#/" is the file it names (no system call is made);
 *   - a name that exists as written (fstatat, not following a last symbolic link) is that file;
 *   - "A#/M" is the member M of the archive A only if A is an archive: an existing regular file that is a
 *     ZIP (it starts with a ZIP record, or has an end-of-central-directory record in its last 64 KiB + 22
 *     bytes); with MMZIP_NAME_CREATE_ARCHIVE also a path A that does not exist, whose directory exists,
 *     when "A#" does not exist either (an archive to be created for the member: a name that walks into an
 *     existing directory "A#" means something in that directory, not a new A);
 *   - with MMZIP_NAME_CREATE, the name as written is also a reading when it does not exist and its
 *     directory does (a file to be created);
 *   - every "#/" of the name is a candidate separator. If two readings are valid (the file as written and
 *     an archive, or two archives), the name is ambiguous: MMZIP_EINVAL, and mmzip_last_error() names both
 *     readings. The caller must then open or create nothing.
 *   - if a name holding "#/" has no valid reading: MMZIP_ENOENT, the message naming the name and the
 *     archive it looked for.
 *
 * On MMZIP_OK, *archive_len is the length of the file's path within name: strlen(name) for the file as
 * written, or the offset of the "#/" that separates archive from member (the member starts at
 * name + *archive_len + 2 and may be empty: "a.zip#/" is the archive itself). A name containing "#/"
 * costs a few stat() calls and, per candidate archive, one open and a read of its first 4 bytes (or its last
 * 64 KiB). No lock is taken and nothing is created. Thread-safe. MMZIP_EINVAL also for a NULL argument or
 * an unknown flag. A route that creates only whole archives (it cannot address a member) passes
 * MMZIP_NAME_CREATE alone; one that also creates an archive for a new member passes both. Examples, with
 * both flags: "d#/x.zip" where the directory "d#" exists is the file d#/x.zip (created if missing), never a
 * new archive "d"; "d#/x.zip#/g" where d#/x.zip is a ZIP is its member g; "new.zip#/g" where neither
 * new.zip nor new.zip# exists is the member g of a new archive new.zip; "a.zip#/g" where a.zip is a ZIP and
 * a directory "a.zip#" exists is ambiguous (the file a.zip#/g, existing or to be created, or a.zip's g).
 */
#define MMZIP_NAME_CREATE 1u         /* the caller creates the file as written if it does not exist */
#define MMZIP_NAME_CREATE_ARCHIVE 2u /* the caller creates an archive for "A#/M" if A does not exist */
MMZIP_API int mmzip_split_name(const char *name, unsigned flags, size_t *archive_len);

/* ---------------------------------------------------------------------------------------------------- */
/* Errors and versions                                                                                   */

/* The last error message of the calling thread ("" if none). */
MMZIP_API const char *mmzip_last_error(void);

/*
 * The errno of the calling thread's last failure when it came from the operating system (EACCES, ENOSPC,
 * EISDIR, ...; ENOENT for MMZIP_ENOENT), 0 when it did not (a corrupt archive, a missing entry) or nothing
 * failed. Set with the message: valid until the thread's next mmzip call. For callers that raise the
 * system's own kinds of error (the Python package's PermissionError, FileNotFoundError).
 */
MMZIP_API int mmzip_last_errno(void);

/* A short name for a status code ("MMZIP_ECRC: CRC mismatch"). */
MMZIP_API const char *mmzip_strerror(int status);

/* The name of a ZIP compression method ("stored", "deflate", "bzip2", ...; "unknown" for unassigned ones). */
MMZIP_API const char *mmzip_method_name(unsigned method);

/* The library version, e.g. "0.1.0". */
MMZIP_API const char *mmzip_version(void);

/* The archive path of a handle. */
MMZIP_API const char *mmzip_path(mmzip_t *h);

#ifdef __cplusplus
}
#endif

#endif /* MMZIP_H */

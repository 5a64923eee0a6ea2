/*
 * h5mz_internal.h - the pieces of the mmzip HDF5 driver and how they fit.
 *
 *   h5fd_mmzip.c        the HDF5 side: the driver class, its callbacks, the FAPL, registration, plugin hooks
 *   member_image.c      one member as HDF5 sees it: the committed version, the draft version being written,
 *                       the logical end of file, and publishing a draft with one commit
 *   archive_registry.c  the archives this process has open through the driver, shared between files
 *   member_locator.c    "archive.zip#/member" names, the HDF5 signature search, finding the only HDF5 member
 *   tool_shims.c        what makes unmodified HDF5/netCDF programs use the driver under `mmzip run`
 *   plain_file.c        an HDF5 file beside the archive that a member refers to (VDS source, external link)
 *   errors.c            the per-thread error message that the HDF5 side turns into an error-stack entry
 *
 * Everything here except the HDF5 callbacks uses the mmzip status codes (MMZIP_OK or a negative
 * mmzip_status) and leaves a message for h5mz_last_error(); nothing here talks to HDF5's error stack.
 */
#ifndef H5MZ_INTERNAL_H
#define H5MZ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mmzip.h"

#define H5MZ_HIDDEN __attribute__((visibility("hidden")))

/* The one status of the driver's own that the core has no code for: a member to be created exists. */
#define H5MZ_EEXIST (-100)

/* ---------------------------------------------------------------------------------------------------- */
/* errors.c                                                                                               */

/* Records a message (printf-style) for the calling thread and returns code. */
H5MZ_HIDDEN int h5mz_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like h5mz_fail, appending ": " and the mmzip core's own message for its last error. */
H5MZ_HIDDEN int h5mz_fail_core(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread's last message ("" if none). */
H5MZ_HIDDEN const char *h5mz_last_error(void);
/* The message of the calling thread's last failed open of a file by the driver (vfd_open), kept apart from
 * the last message, which later failures that are handled may replace; h5mz_clear_open_failure() forgets it
 * before an open, so that what is there after it is that open's. */
H5MZ_HIDDEN void h5mz_note_open_failure(int status);
H5MZ_HIDDEN const char *h5mz_open_failure(void);
/* The status of the failure noted (MMZIP_OK if none): the shims tell a missing member from other failures. */
H5MZ_HIDDEN int h5mz_open_failure_status(void);
H5MZ_HIDDEN void h5mz_clear_open_failure(void);

/* ---------------------------------------------------------------------------------------------------- */
/* member_locator.c                                                                                       */

/* The 8-byte HDF5 format signature, "\211HDF\r\n\032\n". */
extern const unsigned char h5mz_hdf5_signature[8];

/* A file name taken apart: the archive's path and, if one was named, the member inside it. */
typedef struct h5mz_target {
    char *archive;
    char *member; /* NULL: not named */
} h5mz_target;

/*
 * Splits name ("a.zip" or "a.zip#/dir/x.h5") by mmzip_split_name's rule (MMZIP_NAME_CREATE if creating:
 * the file or member is to be created) and reconciles it with member_hint (from the FAPL; NULL or "" if
 * none). A leading '/' of either member spelling is dropped. Fails with mmzip_split_name's status for a
 * name that is ambiguous (MMZIP_EINVAL, both readings in the message) or means nothing (MMZIP_ENOENT), and
 * with MMZIP_EINVAL if both spellings name a member and they differ.
 */
H5MZ_HIDDEN int h5mz_target_parse(const char *name, const char *member_hint, int creating, h5mz_target *out);
H5MZ_HIDDEN void h5mz_target_free(h5mz_target *t);
/* Resolves the "." and ".." components of a member path in place ("dir/../x.h5" -> "x.h5"). Returns 0 if it
 * climbs above the archive's root or is left empty (path then unspecified), else 1. */
H5MZ_HIDDEN int h5mz_member_path_normalize(char *path);

/* 1 if name looks like a path into an archive: it contains ".zip#/" or ends in ".zip" (ASCII case-blind). */
H5MZ_HIDDEN int h5mz_names_archive(const char *name);
/* 1 if name contains the "#/" member separator after ".zip" (ASCII case-blind). */
H5MZ_HIDDEN int h5mz_names_member(const char *name);

/* 1 if data holds the HDF5 signature at one of the offsets where HDF5 looks for it (0, 512, 1024, ...);
 * *at (if not NULL) gets the first such offset. */
H5MZ_HIDDEN int h5mz_find_signature(const uint8_t *data, uint64_t size, uint64_t *at);

/* If data is a netCDF-3 file (classic, 64-bit offset or CDF-5: "CDF" and 1, 2 or 5), its format's name;
 * else NULL. Such members are not HDF5 and the driver cannot serve them. */
H5MZ_HIDDEN const char *h5mz_netcdf3_kind(const uint8_t *data, uint64_t size);

/*
 * Finds the archive's HDF5 members: stored members that carry the signature, and deflated ones whose name
 * ends like an HDF5 or netCDF file (.h5 .hdf5 .he5 .hdf .nc .nc4 .cdf) and carry it once decoded (decoding
 * every deflated member to look would be ruinous in a large Zarr archive). Sets *member to a copy of the
 * only one. MMZIP_ENOTFOUND if there is none, MMZIP_EINVAL if there are several (the message lists them).
 */
H5MZ_HIDDEN int h5mz_find_only_hdf5_member(mmzip_t *archive, const char *archive_path, char **member);

/* ---------------------------------------------------------------------------------------------------- */
/* archive_registry.c                                                                                    */

/* An archive opened through the driver, shared by every file the driver has open in it in this process. */
typedef struct h5mz_archive h5mz_archive;

enum {
    H5MZ_ARCHIVE_WRITE = 1u << 0,   /* the archive must be writable */
    H5MZ_ARCHIVE_CREATE = 1u << 1,  /* create an empty archive if the path does not exist (with WRITE) */
    H5MZ_ARCHIVE_DURABLE = 1u << 2  /* MMZIP_DURABLE commits (with WRITE) */
};

/*
 * Returns the shared handle on the archive at path, opening it if this process has no driver file in it
 * yet. A read-only archive is refreshed, so that a file opened now sees the latest commit of a writer in
 * another process. MMZIP_EBUSY if write access is wanted and the archive is shared read-only (or without
 * the requested durability); otherwise the mmzip_open() errors.
 */
H5MZ_HIDDEN int h5mz_archive_acquire(const char *path, unsigned how, h5mz_archive **out);
/* Drops one reference; the last closes the mmzip handle. Returns the status of that close (MMZIP_OK if
 * others still hold the archive). */
H5MZ_HIDDEN int h5mz_archive_release(h5mz_archive *a);

H5MZ_HIDDEN mmzip_t *h5mz_archive_handle(const h5mz_archive *a);
H5MZ_HIDDEN const char *h5mz_archive_path(const h5mz_archive *a);
H5MZ_HIDDEN int h5mz_archive_writable(const h5mz_archive *a);
/* The archive file's identity, for telling two names of one file apart. */
H5MZ_HIDDEN void h5mz_archive_identity(const h5mz_archive *a, dev_t *dev, ino_t *ino);

/*
 * Members written through one archive handle share its pending area. claim() counts a member opened for
 * writing, disclaim() uncounts it; writers() tells whether others than the caller have drafts that an
 * archive-wide rollback would destroy.
 */
H5MZ_HIDDEN void h5mz_archive_claim_writer(h5mz_archive *a);
H5MZ_HIDDEN void h5mz_archive_disclaim_writer(h5mz_archive *a);
H5MZ_HIDDEN int h5mz_archive_writers(h5mz_archive *a);

/* ---------------------------------------------------------------------------------------------------- */
/* member_image.c                                                                                        */

/* How a member is opened (from HDF5's H5F_ACC_* flags). */
enum {
    H5MZ_OPEN_WRITE = 1u << 0,    /* read/write */
    H5MZ_OPEN_CREATE = 1u << 1,   /* create the member if it is missing */
    H5MZ_OPEN_TRUNCATE = 1u << 2, /* start the member empty (its old version stays until the first flush) */
    H5MZ_OPEN_EXCLUSIVE = 1u << 3 /* fail if the member exists */
};

typedef struct h5mz_member {
    h5mz_archive *archive;
    char *name;                 /* the entry name */
    unsigned how;               /* H5MZ_OPEN_* */
    /* The version that readers of the archive see: the committed entry (a pointer into the shared
     * read-only mapping, or the decoded copy of a deflated entry), or after a failed commit the sealed
     * version that awaits one. NULL when the member is new or truncated. */
    const uint8_t *committed;
    uint64_t committed_size;
    /* The draft: a reserved, writable new version of the member at the end of the archive, holding the
     * committed bytes plus every write since. NULL until the first write after an open or a publish. */
    uint8_t *draft;
    uint64_t draft_capacity;
    int draft_room;             /* the draft keeps its unused capacity as room after it (MMZIP_RESERVE_ROOM):
                                 * it was moved because it outgrew its place */
    uint64_t eof;               /* HDF5's end of file: the size the member will have when published */
    int deflated;               /* the committed version is a decoded copy */
    int unpublished;            /* there are changes that no commit has published yet */
    int sealed;                 /* `committed` is a patched version whose commit failed: the next publish
                                 * retries the commit, the next write drafts on top of it */
    int claimed;                /* opened for writing (counted by h5mz_archive_claim_writer) */
    /* Editing in place (a journaled mmzip_edit_*): the committed entry itself is being changed, each change
     * journaled by the core; `inplace` is its read-only view, valid for `inplace_room` bytes (grown on demand). */
    mmzip_edit_t *edit;
    const uint8_t *inplace;
    uint64_t inplace_room;
    /* A reader's hold on the entry (mmzip_hold): no in-place edit can change it while this file is open. */
    mmzip_hold_t *hold;
} h5mz_member;

/* Opens member name of archive as `how` says. On failure *m is left empty (safe to ignore). */
H5MZ_HIDDEN int h5mz_member_open(h5mz_member *m, h5mz_archive *archive, const char *name, unsigned how);
/* Copies [addr, addr+size) into buf; bytes at or past the end of file read as zeros. */
H5MZ_HIDDEN void h5mz_member_read(const h5mz_member *m, uint64_t addr, size_t size, void *buf);
/* Writes buf at addr, starting a draft if there is none; grows the end of file. */
H5MZ_HIDDEN int h5mz_member_write(h5mz_member *m, uint64_t addr, size_t size, const void *buf);
/* Sets the end of file (HDF5's truncate). Never shrinks the archive, only what will be published. */
H5MZ_HIDDEN int h5mz_member_set_eof(h5mz_member *m, uint64_t eof);
/* Publishes the draft, if any, as the member's new committed version with one commit of the archive. */
H5MZ_HIDDEN int h5mz_member_publish(h5mz_member *m);
/* Publishes what is unpublished; if that fails, discards it (the member stays at its last commit).
 * Releases the writer claim and frees *m; the archive reference is the caller's. */
H5MZ_HIDDEN int h5mz_member_close(h5mz_member *m);

/* ---------------------------------------------------------------------------------------------------- */
/* plain_file.c                                                                                          */

/* An HDF5 file outside the archive, served as sec2 would (pread/pwrite). */
typedef struct h5mz_plain {
    int fd;
    int writable;
    uint64_t eof;
    dev_t dev;
    ino_t ino;
    char *path;
} h5mz_plain;

/* 1 if path is an existing regular file that HDF5 would take for an HDF5 file and that is not a ZIP
 * archive (an archive's aligned member, even a dead one, may carry the signature at 512 or 4096: a file
 * with an end record that mmzip opens as an archive is one). */
H5MZ_HIDDEN int h5mz_plain_is_hdf5(const char *path);
/* The path of member as a file beside the archive (in the archive's directory); NULL if out of memory. */
H5MZ_HIDDEN char *h5mz_beside_archive(const char *archive, const char *member);
H5MZ_HIDDEN int h5mz_plain_open(h5mz_plain *p, const char *path, int writable);
/* Bytes at or past the end of file read as zeros. */
H5MZ_HIDDEN int h5mz_plain_read(const h5mz_plain *p, uint64_t addr, size_t size, void *buf);
H5MZ_HIDDEN int h5mz_plain_write(h5mz_plain *p, uint64_t addr, size_t size, const void *buf);
/* HDF5's truncate: the file takes the size (sec2 does the same). */
H5MZ_HIDDEN int h5mz_plain_set_eof(h5mz_plain *p, uint64_t eof);
H5MZ_HIDDEN void h5mz_plain_close(h5mz_plain *p);

/* ---------------------------------------------------------------------------------------------------- */
/* tool_shims.c                                                                                          */

/* 1 if this process runs under `mmzip run` (the driver library is in LD_PRELOAD): only then do the
 * shims divert anything. */
H5MZ_HIDDEN int h5mz_shims_active(void);

#endif /* H5MZ_INTERNAL_H */

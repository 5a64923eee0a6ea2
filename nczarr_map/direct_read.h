/*
 * direct_read.h - copying large archived objects with pread(2) instead of through the mapping.
 *
 * NCZarr reads every chunk into a buffer of its own, so a copy cannot be avoided. Copying from the shared
 * mapping first maps each page of the page cache into the process (a page fault per 64 KiB with the
 * kernel's fault-around) and then copies; pread copies from the page cache directly. For chunks of a few
 * MiB that is about 5% less CPU for a full read (tests/bench/nccopy_bench.py); for small objects it makes
 * no difference and the mapping is used.
 *
 * The descriptor must name the same file as the store's mapping: it is opened right after the store,
 * then mmzip_refresh() proves the file was not replaced in between (it reports MMZIP_ESTALE otherwise) -
 * only a read-only session's file can be replaced at all (by mmzip pack; a writer holds the lock that pack
 * needs). A session that creates its archive has no file under its name yet, or still the one it
 * replaces, and never uses the descriptor.
 */
#ifndef MZN_DIRECT_READ_H
#define MZN_DIRECT_READ_H

#include <stddef.h>
#include <stdint.h>

#include "mmzip.h"

/* Objects at least this large are read with pread. */
#define MZN_DIRECT_READ_MIN ((uint64_t)1 << 20)

/* Opens a descriptor on the archive file of the store `archive` (opened at `path`); -1 if that cannot be
 * done safely (the caller then always uses the mapping). */
int mzn_direct_open(mmzip_t *archive, const char *path);

/*
 * Copies bytes [start, start + count) of the committed, stored (method 0) entry `name` into buf with pread.
 * Returns 1 when done, 0 when the entry must be read through the mapping instead (pending, compressed,
 * small, fd < 0), or a negative mmzip status for an I/O error.
 */
int mzn_direct_copy(int fd, mmzip_t *archive, const char *name, uint64_t start, uint64_t count, void *buf);

#endif

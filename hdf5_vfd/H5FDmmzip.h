/*
 * H5FDmmzip.h - the HDF5 virtual file driver "mmzip": HDF5 and netCDF-4 files stored as members of a ZIP
 * archive, opened in place.
 *
 * THE MODEL
 *
 * An HDF5 file that is a member of an mmzip archive (or of any ZIP archive) is opened without extracting
 * it. The file name is the archive path, optionally followed by "#/" and the member's path inside the
 * archive:
 *
 *     H5Fopen("run.zip#/results/day1.h5", H5F_ACC_RDONLY, fapl)
 *
 * or the archive path alone with the member named in the file access property list
 * (H5Pset_fapl_mmzip). If neither names a member, the archive must hold exactly one HDF5 member (a member
 * with the HDF5 signature at its offset 0, 512, 1024, 2048, ...), and that one is opened.
 *
 * Reads are copies straight out of the archive's shared read-only memory mapping: no read(2) or pread(2)
 * per HDF5 read. A deflated member is decoded once, when it is opened, and is then read-only.
 *
 * Writes never touch the committed bytes of the member. The first write after an open, and the first
 * after each flush, starts a new version of the member at the end of the archive (a copy of the current
 * bytes, with room to grow); HDF5 then writes into that version through a writable mapping. H5Fflush()
 * and H5Fclose() publish the new version with one atomic commit of the archive. So:
 *   - the archive is a valid ZIP after every flush and close (and at every instant in between);
 *   - a writer killed at any moment leaves the member exactly as it was at its last flush or close;
 *   - the member stays one contiguous stored entry: `unzip` extracts a valid HDF5 file;
 *   - other entries of the archive never move and never change.
 * The price: each flush that follows a write copies the whole member once, and the replaced version stays
 * in the archive as dead space until `mmzip pack` reclaims it. Flush rarely when members are large.
 * HDF5's truncate-on-flush only sets the member's logical size: the driver never shrinks the archive.
 *
 * One writer per archive, across processes (the mmzip writer lock; a second writable open fails at once).
 * Readers in other processes may open the archive while it is written: they see the member as of the last
 * commit before their open, never a half-written one. Within one process, all files the driver opens in
 * one archive share one mmzip handle; several members of one archive may be open for writing at once (each
 * has its own draft, and a flush publishes only its own member), and an archive that this process has open
 * read-only through the driver cannot be opened for writing until those files are closed.
 *
 * The driver sets no superblock status flags (it has no `lock` callback): cross-process exclusion comes
 * from the archive's writer lock, and a crash never leaves a member that needs `h5clear`.
 *
 * UNMODIFIED TOOLS
 *
 * HDF5 1.10 cannot load third-party drivers by name. Preloading this library (`mmzip run h5dump ...`, which
 * sets LD_PRELOAD) makes h5dump, h5ls, ncdump and other HDF5/netCDF programs open names that contain
 * ".zip#/" or end in ".zip" through this driver (see docs/hdf5-guide.md). With HDF5 >= 1.13.2 the library is
 * also a dynamically loadable VFD plugin: HDF5_DRIVER=mmzip HDF5_PLUGIN_PATH=<libdir>; the member may then
 * be given in HDF5_DRIVER_CONFIG.
 *
 * THREADS
 *
 * The driver's callbacks are reentrant and guard their shared state with a mutex; HDF5 itself must be the
 * thread-safe build for concurrent HDF5 calls (Debian's is). One HDF5 file must not be used from two
 * threads at once, as with every driver.
 */
#ifndef H5FD_MMZIP_H
#define H5FD_MMZIP_H

#include <hdf5.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define H5FD_MMZIP_API __attribute__((visibility("default")))
#else
#define H5FD_MMZIP_API
#endif

/* The driver's name, as HDF5_DRIVER, H5Pset_driver_by_name() and h5py's register_driver() know it. */
#define H5FD_MMZIP_NAME "mmzip"

/* The driver's class value for H5Pset_driver_by_value() (HDF5 >= 1.13.2). HDF5 leaves 256-511 free for
 * drivers that are not registered with The HDF Group; this one is not. */
#define H5FD_MMZIP_VALUE 437

/* Flags for H5Pset_fapl_mmzip(). */
enum {
    /* Make every flush and close durable: the archive's commits are ordered and flushed to the disk with
     * fdatasync/fsync, so a published member version survives a power loss, not only a process crash. */
    H5FD_MMZIP_DURABLE = 1u << 0,
    /* Check the CRC-32 of an existing member once when it is opened (mmzip_verify: one pass over its bytes,
     * nothing if this process already found it good), and fail the open if it does not match, naming the
     * archive, the member and both CRCs. Without it the member's pages are read only as HDF5 asks for them,
     * and nothing checks them (mmzip check does). A member created or truncated by the open is not checked. */
    H5FD_MMZIP_VERIFY = 1u << 1
};

/* The driver's identifier, registering the driver with HDF5 on first use (and again after H5close()).
 * Returns a negative value, with an error on HDF5's error stack, if registration fails.
 * Thread-safe. */
#define H5FD_MMZIP (H5FD_mmzip_init())
H5FD_MMZIP_API hid_t H5FD_mmzip_init(void);

/*
 * Selects the mmzip driver on the file access property list fapl.
 *
 *   member  the member's path inside the archive ("results/day1.h5"; a leading '/' is ignored), or NULL
 *           (or "") to take it from the file name ("archive.zip#/results/day1.h5") or, failing that, to
 *           open the archive's only HDF5 member. If both the file name and member name one, the open fails
 *           unless they agree. Creating a member (H5Fcreate) needs a name. Names of new members must be
 *           valid entry names (relative, no ".." component); the open reports one that is not.
 *   flags   0, or H5FD_MMZIP_DURABLE and/or H5FD_MMZIP_VERIFY.
 *
 * The settings are copied: the caller keeps ownership of member.
 * Returns a non-negative value on success; a negative value if fapl is not a file access property list or
 * flags has unknown bits, with the reason on HDF5's error stack.
 * Thread-safe.
 */
H5FD_MMZIP_API herr_t H5Pset_fapl_mmzip(hid_t fapl, const char *member, unsigned flags);

/*
 * Reads back what H5Pset_fapl_mmzip() stored. *member (if not NULL) gets a copy of the member name, or NULL
 * when none was given; the caller frees it with free(). *flags (if not NULL) gets the flags. Returns a
 * negative value if fapl does not use the mmzip driver.
 * Thread-safe.
 */
H5FD_MMZIP_API herr_t H5Pget_fapl_mmzip(hid_t fapl, char **member, unsigned *flags);

#ifdef __cplusplus
}
#endif

#endif /* H5FD_MMZIP_H */

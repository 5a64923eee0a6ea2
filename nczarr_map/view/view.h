/*
 * view.h - the netCDF-C 4.9 compatibility view: the seam between the storage map (the sources in nczarr_map/)
 * and the translation of archives that Debian's netCDF-C 4.9.0 cannot read as they are (../../docs/compat-view.md).
 *
 * The storage map asks the view about every key before it serves it from the archive. The view never
 * changes the archive: translated bytes live in memory, owned by the view.
 *
 * What the view presents (each translation is listed in docs/compat-view.md):
 *   - .zarray documents in the form 4.9.0 reads: decompressed (compressor/filters null), little-endian,
 *     C order, strings as one-byte chars ("<U1") with a trailing length dimension (netCDF-C 4.9.3+: as
 *     fixed-width "|S<n>" strings, view_release.h), bool as "|u1",
 *     float16 as "<f4", 0-d and empty arrays as length-1 arrays, chunks no longer than the shape;
 *   - .zattrs with _ARRAY_DIMENSIONS naming every dimension (DataAxesFormats axes, xarray names, or
 *     4.9.0's anonymous names) and attribute values 4.9.0 cannot type rewritten (view_attrs.h); a
 *     .zattrs is presented even where the archive has none;
 *   - chunks translated to match, under the keys 4.9.0 computes from the presented shape (a trailing
 *     length dimension adds a ".0" to every chunk key); missing chunks of translated arrays as fill.
 *
 * Contract:
 *   - Keys are NCZarr keys: '/'-separated, starting with '/', e.g. "/.zgroup", "/axes/cell/.zarray",
 *     "/axes/cell/0". The view maps them to archive entries by prepending `prefix` (the dataset directory of
 *     NCZarr's own layout, "" for keys at the archive root; a missing trailing '/' is added) and dropping
 *     the leading '/'.
 *   - mzv_open analyses the archive once: it reads every .zarray/.zattrs/.zgroup, and the chunks of
 *     string arrays (their presented width is the longest string).
 *   - All functions return 0 or a negative netCDF error code (NC_E...), never crash on malformed input.
 *     Every error also prints "mmzip view: <archive>: <entry>: <problem>" on stderr (once per entry) and is
 *     kept for mzv_last_error().
 *   - A view opened with enabled == 0 translates nothing (the raw archive; the user switched it off).
 *   - Not thread-safe: NCZarr calls the map from one thread at a time. Different views are independent.
 */
#ifndef MMZIP_NCZARR_VIEW_H
#define MMZIP_NCZARR_VIEW_H

#include <stddef.h>

#include "mmzip.h"
#include "json.h"

typedef struct mzv_view mzv_view;

/*
 * Analyses `archive` (entries under `prefix`) and builds the view. `enabled` 0 gives a pass-through view.
 * A dataset with a root zarr.json is read as Zarr v3 and presented in the v2 form (docs/compat-view.md
 * section 10); writes to it are always refused. Returns 0 and sets *out, NC_ENOMEM, or NC_ENCZARR when a
 * metadata object of the archive is not valid JSON / Zarr v2 / a Zarr v3 node the view can model (the
 * message names the entry). The archive handle must outlive the view.
 * The chunk cache holds at most $MMZIP_NCZARR_VIEW_CACHE_MB MiB of translated chunks (default 256).
 */
int mzv_open(mmzip_t *archive, const char *prefix, int enabled, mzv_view **out);

/*
 * mzv_open for a dataset netCDF-C opens in plain Zarr mode (pure_zarr 1: "#mode=zarr", "xarray"), where it
 * lists groups by their keys and ignores NCZarr's listings; mzv_open is pure_zarr 0 (NCZarr mode), where an
 * array or group of an NCZarr dataset that its group's listing does not name is refused, naming it (netCDF-C
 * would leave it out).
 */
int mzv_open_mode(mmzip_t *archive, const char *prefix, int enabled, int pure_zarr, mzv_view **out);

/*
 * Looks up key. Returns 1 and sets *data and *len if the view serves the object itself; 0 if the key is not
 * translated (the map serves the archive entry as is, or reports it missing); a negative NC_ error if the
 * key belongs to an array that cannot be presented (an undecodable filter, a corrupt chunk: an error,
 * never raw bytes).
 *
 * A key the view serves may not exist in the archive: a .zattrs the archive lacks, the chunk keys of an
 * array with a trailing length dimension, and missing chunks of translated arrays (served as fill).
 *
 * Lifetime of *data: metadata (.zarray/.zattrs/.zgroup) until mzv_close; a chunk until the next mzv_get
 * or mzv_check_write on this view (copy it, or call mzv_get again: translated chunks are cached).
 * *data may point into the archive's mapping (a renamed but unchanged chunk).
 */
int mzv_get(mzv_view *v, const char *key, const void **data, size_t *len);

/*
 * Called before the map stores a write of key during a write session. Returns:
 *   0  the write may be stored as is (the view then stops presenting that key: later reads must return
 *      what was written);
 *   1  the write is a no-op and must not be stored: the bytes are what the view presents for the key
 *      (compared as JSON values for metadata, modulo the normalisations 4.9.0 applies when it writes
 *      metadata back - see docs/compat-view.md), or a chunk of fill values for a chunk the archive does
 *      not hold. The archive keeps its original object byte for byte;
 *   <0 the write would store a translated form or change a translated array: refused with NC_EPERM (the
 *      archive keeps its original metadata and chunks), or NC_ENOMEM.
 */
int mzv_check_write(mzv_view *v, const char *key, const void *data, size_t len);
/*
 * mzv_check_write for a chunk the session's own puts wrote into (written != 0): a chunk of the array's fill
 * the archive does not hold is then data, stored (for an array whose fill_value is null, netCDF's default fill
 * values are data like any other: an outside review found such a write dropped and read back as zeros).
 * Otherwise as mzv_check_write.
 */
int mzv_check_chunk_write(mzv_view *v, const char *key, const void *data, size_t len, int written);
/*
 * (continued, mzv_check_write) and, for a .zattrs only:
 *   2  the object is presented translated and netCDF changed attributes in it: store mzv_replacement's bytes
 *      instead - the archive's own attributes with only netCDF's changes applied (attributes added, given
 *      another value, or deleted relative to what the view presented). What the view made up (added
 *      attributes, rewritten values, dimension names, type tables) is not taken. The view then serves the
 *      archive's form for that key. A change of _FillValue on a translated array is still refused.
 */

/*
 * 1 if written is how netCDF-C writes back the attribute value archived (read in the session and not changed):
 * the same value, or its rendering by the running release (doubles with "%lg", a one-element list as a
 * scalar, booleans as integers, NaN as a bare NaN or "NaN"). Pure; thread-safe.
 */
int mzv_written_value_matches(const mzj_value *archived, const mzj_value *written);

/* The bytes of the last 2 from mzv_check_write (pure-ASCII JSON), valid until the next call on this view. */
const void *mzv_replacement(const mzv_view *v, size_t *len);

/*
 * Calls fn(ctx, path) for every group and array of a Zarr v3 dataset (paths relative to the dataset, e.g.
 * "axes/cell"), and for the v2 metadata keys the view presents for them ("axes/cell/.zarray", ".zgroup" for
 * the root...), so that the map's listing also shows the nodes known only from the root's consolidated
 * metadata and the ".z" keys netCDF-C 4.9.3+ look for before they take a dataset for Zarr. Does nothing for
 * Zarr v2 datasets (their nodes are the archive's own entries).
 */
void mzv_for_each_node(const mzv_view *v, void (*fn)(void *ctx, const char *path), void *ctx);

/* 1 if any array is translated (its chunks or shape differ from the archive's). */
int mzv_active(const mzv_view *v);

/*
 * 1 if the view's root is a group below an NCZarr dataset's root ("a.zip#/lung/sub" of an archive netCDF-C
 * wrote), presented as an NCZarr root of its own: dimension references re-rooted, the dimensions of
 * ancestor groups declared at the presented root. Writes through such a view would store those re-rooted
 * forms, so the map refuses write sessions on it.
 */
int mzv_nested_nczarr(const mzv_view *v);

/* The message of the last error this view reported ("" if none). Valid until the next call. */
const char *mzv_last_error(const mzv_view *v);

void mzv_close(mzv_view *v);

#endif

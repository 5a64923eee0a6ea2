/*
 * view.h - the netCDF-C 4.9 compatibility view: the seam between the storage map (nczarr_map/*.c) and the
 * translation of archives that Debian's netCDF-C 4.9.0 cannot read as they are (../../docs/compat-view.md).
 *
 * The storage map asks the view about every key before it serves it from the archive. The view never
 * changes the archive: translated bytes live in memory, owned by the view.
 *
 * Contract:
 *   - Keys are NCZarr keys: '/'-separated, starting with '/', e.g. "/.zgroup", "/axes/cell/.zarray",
 *     "/axes/cell/0". The view maps them to archive entries by prepending `prefix` (the dataset directory of
 *     NCZarr's own layout, "" for keys at the archive root) and dropping the leading '/'.
 *   - mzv_open analyses the archive once (it may read every .zarray/.zattrs/.zgroup).
 *   - All functions return 0 or a negative netCDF error code (NC_E...), never crash on malformed input.
 *   - A view opened with enabled == 0 translates nothing (the raw archive; the user switched it off).
 *   - Not thread-safe: NCZarr calls the map from one thread at a time.
 */
#ifndef MMZIP_NCZARR_VIEW_H
#define MMZIP_NCZARR_VIEW_H

#include <stddef.h>

#include "mmzip.h"

typedef struct mzv_view mzv_view;

/* Analyses `archive` (entries under `prefix`) and builds the view. `enabled` 0 gives a pass-through view. */
int mzv_open(mmzip_t *archive, const char *prefix, int enabled, mzv_view **out);

/*
 * Looks up key. Returns 1 and sets *data/*len (memory owned by the view, valid until mzv_close) if the view
 * serves a translated object for it; 0 if the key is not translated (the map serves the archive entry as
 * is, or reports it missing); a negative NC_ error if the key belongs to an array that cannot be presented
 * (an undecodable filter: an error, never raw bytes). A translated key that does not exist in the archive
 * (e.g. a chunk NCZarr asks for beyond the data) returns 0 and the map reports it missing.
 */
int mzv_get(mzv_view *v, const char *key, const void **data, size_t *len);

/*
 * Called before the map stores a write of key during a write session. Returns 0 if the write may be stored
 * as is; 1 if the key belongs to a translated array and the bytes equal what the view presents (the write is
 * a no-op: the original stays byte for byte); a negative NC_ error if the write would store a translated
 * form or change a translated array (refused: the archive keeps its original metadata and chunks).
 */
int mzv_check_write(mzv_view *v, const char *key, const void *data, size_t len);

/* 1 if any array is translated. */
int mzv_active(const mzv_view *v);

void mzv_close(mzv_view *v);

#endif

/*
 * codec_table.h - the codecs the view can decode, found by the name an array's metadata gives them: its
 * numcodecs id in a Zarr v2 .zarray, its codec name in a Zarr v3 zarr.json. The table itself, one row per
 * codec, is codec_table.c; each codec's code is a file of its own (codec.h says what it implements).
 *
 * A name that is not in the table, or is there for another role (a filter named as the compressor), is
 * not a codec the view decodes: the format readers then record why in the array's chain, and every read of
 * its chunks fails with a message naming the array and the codec - never raw bytes, never another codec.
 * The table is constant: lookups are reentrant.
 */
#ifndef MMZIP_VIEW_CODEC_TABLE_H
#define MMZIP_VIEW_CODEC_TABLE_H

#include <stddef.h>

#include "codec.h"

/* The codec whose Zarr v2 id (v3 name) is exactly `name` (NULL: none; also for a NULL name). */
const mzv_codec *mzv_codec_find_v2(const char *name);
const mzv_codec *mzv_codec_find_v3(const char *name);

/* Configures codec c from its metadata (see mzv_codec.configure; format 2 or 3) into *out. 0, or -1 with a
 * message in err. */
int mzv_codec_configure(const mzv_codec *c, const mzj_value *config, int format, mzv_step *out, char *err,
                        size_t err_len);

/* The rows of the table, for listing them (i < mzv_codec_count()). */
size_t mzv_codec_count(void);
const mzv_codec *mzv_codec_at(size_t i);

#endif

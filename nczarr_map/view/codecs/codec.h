/*
 * codec.h - what one codec is to the view, and what each codec file implements.
 *
 * A codec is a row of the codec table (codec_table.c): its Zarr v2 id (numcodecs), its Zarr v3 name, its
 * role, and the two functions of its file (blosc.c, zlib.c, delta.c, ...): configure, which reads the
 * codec's parameters from the metadata into a step, and decode, which undoes the codec on one chunk.
 * A configured codec is a step; an array's decoding pipeline is a list of steps (view_codecs.h).
 *
 * Every decoder refuses to produce more than `limit` bytes (decompression bombs, corrupt headers), checks
 * that the input is what the format requires, and never returns partial output as a success. Codecs are
 * reentrant: no library global state (blosc through its _ctx API, one thread). The Zarr v3 codecs that
 * change the layout of a chunk rather than its bytes (bytes, transpose, sharding_indexed) are not here:
 * they are the v3 reader's (v3/v3_array.c, v3/v3_chunks.c).
 */
#ifndef MMZIP_VIEW_CODEC_H
#define MMZIP_VIEW_CODEC_H

#include <stddef.h>

#include "json.h"
#include "view_zarr.h"

/* A malloc'ed byte buffer handed from one decoding step to the next. */
typedef struct mzv_bytes {
    unsigned char *data;
    size_t len;
} mzv_bytes;

/* Where a codec may stand in an array's metadata. */
typedef enum mzv_codec_role {
    MZV_CODEC_COMPRESSOR, /* v2: the "compressor"; v3: a bytes-to-bytes codec */
    MZV_CODEC_FILTER,     /* v2: an entry of "filters"; v3: a bytes-to-bytes codec */
    MZV_CODEC_OBJECT      /* v2: the object codec, first of "filters"; v3: the array-to-bytes codec of a
                           * variable-length data type. Decoded to items by view_strings.h, not by a step. */
} mzv_codec_role;

typedef enum mzv_object_codec { MZV_OBJECT_NONE, MZV_OBJECT_VLEN_UTF8, MZV_OBJECT_VLEN_BYTES } mzv_object_codec;

typedef struct mzv_codec mzv_codec;

/* A configured codec: one step of a decoding pipeline. */
typedef struct mzv_step {
    const mzv_codec *codec;
    size_t elementsize;   /* shuffle */
    mzv_dtype decoded;    /* delta/quantize/fixedscaleoffset "dtype", astype "decode_dtype" */
    mzv_dtype encoded;    /* delta/quantize/fixedscaleoffset "astype", astype "encode_dtype" */
    double scale, offset; /* fixedscaleoffset */
    int variant;          /* lzma: 1 .xz, 2 .lzma ("alone") */
} mzv_step;

struct mzv_codec {
    const char *v2_id;   /* numcodecs id in a .zarray, NULL if Zarr v2 arrays cannot name it */
    const char *v3_name; /* codec name in a zarr.json, NULL if Zarr v3 arrays cannot name it */
    mzv_codec_role role;
    mzv_object_codec object; /* MZV_CODEC_OBJECT only */
    /* Reads the parameters into s (s->codec is set, the rest zeroed). config is v2's whole {"id": ...}
     * object, or v3's "configuration" (NULL when there is none); format is 2 or 3. 0, or -1 with a message
     * in err for parameters that cannot be decoded exactly. NULL: the codec has no parameters that matter
     * to decoding. */
    int (*configure)(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len);
    /* Decodes len bytes at in into out->data (malloc'ed, the caller's on success). 0, or -1 with a message
     * in err naming the codec and the problem (out->data is then NULL or freed by the caller). NULL for
     * object codecs. */
    int (*decode)(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err,
                  size_t err_len);
};

/* The prototypes of a codec file's functions. The file declares them with these before it defines them, and
 * codec_table.c declares them with these for its rows, so that the compiler checks both against one type. */
#define MZV_CODEC_DECODER(name)                                                                              \
    int name(const mzv_step *s, const unsigned char *in, size_t len, size_t limit, mzv_bytes *out, char *err, \
             size_t err_len)
#define MZV_CODEC_CONFIGURE(name) int name(const mzj_value *config, int format, mzv_step *s, char *err, size_t err_len)

/* Helpers of the codec files (codec_util.c). */

/* The codec's name for messages: its v2 id, or its v3 name if it has none. */
const char *mzv_codec_label(const mzv_codec *c);
/* Writes "<codec> decoding failed: <problem>" into err (if err_len); returns -1. */
int mzv_codec_fail(const mzv_step *s, char *err, size_t err_len, const char *problem);
/* Writes "<codec>: <problem>" into err (if err_len); returns -1. */
int mzv_step_fail(const mzv_step *s, char *err, size_t err_len, const char *problem);
/* Writes the formatted message into err (if err_len); returns -1. */
int mzv_codec_failf(char *err, size_t err_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Allocates out for len bytes (at least 1 allocated), refusing more than limit. 0, or -1 with err. */
int mzv_codec_alloc(mzv_bytes *out, size_t len, size_t limit, char *err, size_t err_len);
/* A numeric numpy dtype string parameter of a filter (e.g. delta's "dtype") into *out. 0, or -1 with err. */
int mzv_codec_dtype_param(const mzj_value *config, const char *key, mzv_dtype *out, char *err, size_t err_len);
/* The "dtype" parameter into s->decoded and "astype" into s->encoded, or the dtype again without one (delta,
 * quantize, fixedscaleoffset). 0, or -1 with err. */
int mzv_codec_dtype_and_astype(const mzj_value *config, mzv_step *s, char *err, size_t err_len);
/* For an elementwise filter from s->encoded to s->decoded items: *n items of len bytes, and out allocated for
 * their decoded size (within limit). 0, or -1 with err. */
int mzv_codec_items(const mzv_step *s, size_t len, size_t limit, mzv_bytes *out, size_t *n, char *err, size_t err_len);

/* An output buffer that grows geometrically up to a hard limit, for the streaming formats whose decoded
 * size is not in a header. */
typedef struct mzv_grow_buf {
    unsigned char *data;
    size_t len, cap, limit;
} mzv_grow_buf;
/* Makes room for at least one more byte; 0, or -1 when the limit is reached or memory runs out. */
int mzv_grow(mzv_grow_buf *g);
/* Hands the bytes over to out (an empty buffer still gets one allocated byte). 0, or -1 out of memory. */
int mzv_grow_finish(mzv_grow_buf *g, mzv_bytes *out);

#endif

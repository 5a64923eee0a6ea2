/*
 * view_internal.h - the structures shared by the modules of the compatibility view. Not part of view.h.
 *
 * Module map, in layers: a file calls only files below it (tests/tools/call_circles.py fails on a circle).
 *   view.c            mzv_open/mzv_get/mzv_close: runs the format reader, presents, routes keys
 *   view_write.c      mzv_check_write: keeping write sessions from storing a translated form
 *   view_structure.c  structures that cannot be presented     view_subdataset.c  a view rooted below NCZarr's root
 *   view_present.c    the presentation plan of one array or group: what netCDF-C 4.9.0 is shown
 *   view_chunks.c     translating one chunk (find it, decode, convert, re-layout) and the chunk cache
 *   v2/               Zarr v2: .zarray/.zattrs/.zgroup into the catalog (v2_read.c, v2_zarray.c), the pipeline
 *                     from "compressor" and "filters" (v2_chain.c), where chunks are stored (v2_chunks.c)
 *   v3/               Zarr v3: zarr.json into the catalog (v3_read.c, v3_array.c: data types, codecs, the
 *                     layout codecs bytes/transpose/sharding_indexed), where chunks are stored: chunk key
 *                     encodings and shards (v3_chunks.c). Sharding is known here only.
 *   view_catalog.c    the arrays and groups found: lookups by path, archive entry names, JSON entries
 *   view_diag.c       error messages (stderr and the last-error buffer)
 *   codecs/           the decoding pipeline of an array (view_codecs.c); the codec table, the one place
 *                     that names codecs (codec_table.c); one file per codec (blosc.c, zlib.c, delta.c, ...,
 *                     codec.h says what each implements) and their shared helpers (codec_util.c);
 *                     string elements and vlen items (view_strings.c)
 *   view_attrs.c      attributes in the form 4.9.0 reads     view_dims.c     dimension names
 *   view_layout.c     F->C order, clamping of chunks         view_release.c  what each netCDF-C release reads
 *   view_zarr.c       the array and dtype model              view_convert.c  numeric element conversions
 *   ../json/          the JSON parser and 4.9.0-safe writer, shared with the storage map (json.h)
 */
#ifndef MMZIP_VIEW_INTERNAL_H
#define MMZIP_VIEW_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mmzip.h"
#include "view.h"
#include "view_codecs.h"
#include "view_dims.h"
#include "json.h"
#include "view_zarr.h"

/* How decoded elements become presented elements. */
typedef enum mzv_conversion {
    MZV_CONV_NONE,     /* same bytes */
    MZV_CONV_BYTESWAP, /* big-endian to little-endian, per component of swap_size bytes */
    MZV_CONV_HALF,     /* float16 to float32 */
    MZV_CONV_UCS4,     /* numpy unicode to UTF-8 rows of row_width bytes */
    MZV_CONV_VLEN      /* vlen-utf8 / vlen-bytes items to UTF-8 rows of row_width bytes */
} mzv_conversion;

/* A presented metadata object: its bytes, and whether they differ from the archive entry. */
typedef struct mzv_meta {
    char *text;               /* NULL: the view does not present this key */
    size_t len;
    mzj_value *json;          /* the presented value, for comparing writes */
    const mzj_value *archive; /* what the archive holds (borrowed), NULL if it has no such entry */
    int superseded;           /* a write session stored a new version: serve the archive/pending form */
} mzv_meta;

typedef struct mzv_array {
    char *path;                /* relative to the dataset root, e.g. "axes/cell" */
    mzv_zarray z;              /* the archive's .zarray */
    mzj_value *attrs;          /* the archive's .zattrs, NULL if there is none */
    mzv_codec_chain chain;

    /* Presentation (view_present.c). */
    int prank;                 /* presented rank: z.rank, 1 for 0-d, +1 with an extra trailing dimension */
    uint64_t pshape[MZV_MAX_RANK + 1];
    uint64_t pchunks[MZV_MAX_RANK + 1];
    int extra_dim;             /* a trailing dimension was added (string length, complex parts, record bytes) */
    int fixed_strings;         /* netCDF-C 4.9.3+: the "<U1" rows (with their trailing length dimension, if
                                * any) are shown as one fixed-width "|S<n>" string per element instead (those
                                * releases read no "U" dtype); the chunk bytes are the same */
    int inner_nul;             /* 4.9.3+ only: a bytes string holds a NUL before its end (an NC_STRING
                                * would end there), so its rows are shown as ubyte instead */
    int zero_d;                /* the archive array has shape [] */
    int empty;                 /* some archive dimension has length 0 */
    char pdtype[24];           /* presented dtype, e.g. "<f4", "<U1" */
    mzv_conversion conversion;
    size_t swap_size;          /* MZV_CONV_BYTESWAP: bytes per swapped component */
    size_t row_width;          /* strings: bytes per presented row */
    size_t elem_out;           /* presented bytes per archive element (extra dimension included) */
    uint64_t chunk_elements;   /* archive elements per (archive) chunk */
    size_t chunk_bytes;        /* bytes of one presented chunk */
    int data_translated;       /* chunks are served by the view (else the map serves the archive's) */
    int translated;            /* 4.9.0 sees another dtype, shape or data than the archive holds: writes
                                * that would change the array are refused */
    int nczarr_scalar;         /* NCZarr's own scalar form, which 4.9.0 cannot read back */
    const char *dim_names[MZV_MAX_RANK + 1]; /* owned by the view's dimension registry */
    char *broken;              /* chunks cannot be presented: every chunk read fails with this */
    unsigned char *fill_chunk; /* a presented chunk of fill values, built on first need */

    mzv_meta zarray, zattrs;
} mzv_array;

typedef struct mzv_group {
    char *path;                /* "" for the root */
    mzj_value *zgroup_json;    /* the archive's .zgroup (NULL if the group only exists as a directory) */
    mzj_value *attrs;          /* the archive's .zattrs, NULL if there is none */
    mzv_meta zgroup, zattrs;
} mzv_group;

/* One translated chunk held by the cache. */
typedef struct mzv_cached_chunk {
    char *key;
    unsigned char *data;       /* owned, unless borrowed */
    size_t len;
    int borrowed;              /* data points into the archive mapping */
    uint64_t last_use;
} mzv_cached_chunk;

struct mzv_view {
    mmzip_t *archive;
    char *prefix;              /* entry-name prefix of the dataset, "" or ending in '/' */
    int enabled;
    int nczarr_format;         /* the dataset is in NCZarr 4.9.0's own format (_NCZARR_SUPERBLOCK) */
    int pure_zarr;             /* netCDF-C opens it in plain Zarr mode: NCZarr listings are not used */
    int sub_datasets_noted;    /* the sub-datasets outside the dataset were named on stderr */
    int nested_nczarr;         /* the root is a group below an NCZarr root, presented as a root of its own */
    int zarr_v3;               /* the dataset is Zarr v3 (a root zarr.json): presented as v2, never written */

    mzv_array *arrays;         /* sorted by path */
    size_t array_count;
    mzv_group *groups;         /* sorted by path */
    size_t group_count;
    mzv_dims *dims;
    int any_translated;

    mzv_cached_chunk *cache;
    size_t cache_count, cache_cap;
    size_t cache_bytes, cache_budget;
    uint64_t clock;

    char last_error[1024];
    char *replacement;         /* mzv_check_write's 2: the bytes to store instead (view_write.c) */
    size_t replacement_len;
};

/* view_present.c: fills the presentation fields and metadata of one array / group. 0, or a netCDF error
 * (only NC_ENOMEM: a problem with the array itself is recorded in a->broken and presented). */
int mzv_present_array(mzv_view *v, mzv_array *a);
/* zgroup / attrs: the archive's parsed .zgroup and .zattrs of the group (attrs NULL if it has none). */
int mzv_present_group(mzv_view *v, mzv_group *g, const mzj_value *zgroup, const mzj_value *attrs);
/* NCZarr's own format: the root .zgroup declares the "_scalar_" dimension that the presented scalars use. */
int mzv_present_nczarr_root(mzv_view *v, mzv_group *root, const mzj_value *zgroup);

/* NCZarr's own format: presents doc (an archive object that the view otherwise serves as it is) as the same
 * JSON with non-ASCII characters as raw UTF-8, when it has any: the archive stores them as \uXXXX escapes
 * (zarr-python reads only ASCII), which netCDF-C 4.9.0 does not decode. 0 or NC_ENOMEM. */
int mzv_present_decoded(mzv_meta *m, const mzj_value *doc);

/* view_subdataset.c: a view rooted at a group below an NCZarr root ("a.zip#/lung/sub"). */
/* The nearest ancestor directory of the view's prefix holding the NCZarr superblock of the running release's
 * form (4.9.0: _NCZARR_SUPERBLOCK in .zgroup; 4.9.3+: _nczarr_superblock in .zattrs or .zgroup), when the
 * view's own root has none: *root_dir ("" or "a/") and a copy of its superblock, both malloc'ed; both NULL
 * if there is no such ancestor. 0 or NC_ENOMEM. */
int mzv_find_nczarr_ancestor(mzv_view *v, mzj_value **superblock, char **root_dir);
/* Presents the view's root as an NCZarr root of its own (superblock, dimensions of ancestor groups) and
 * re-roots every array's dimension references. 0, NC_ENOMEM, or NC_ENCZARR (reported) when two dimensions
 * would take the same name. */
int mzv_present_nested_nczarr(mzv_view *v, const mzj_value *superblock, const char *root_dir);

/* view_structure.c: NC_ENCZARR (with a message naming the object) when the dataset's structure cannot be
 * presented: no root .zgroup while it holds Zarr objects, a root that is an array, Zarr v3 metadata, an
 * array or group below a directory without .zgroup. 0 otherwise. */
int mzv_check_structure(mzv_view *v);
/* With the view off: refuses a dataset netCDF-C alone would show as empty with exit status 0 (Zarr v3, or
 * Zarr objects without a .zgroup at the dataset root), naming it and the way out (view_structure.c). */
int mzv_check_raw(mzv_view *v);

/* view_chunks.c */
/* Serves chunk `chunk_key` (relative to the array, e.g. "0.0.0") of array a. Returns 1 with data, 0 when
 * the map should serve the archive entry itself, or a netCDF error. */
int mzv_chunk_get(mzv_view *v, mzv_array *a, const char *chunk_key, const void **data, size_t *len);
/* Parses a presented chunk key into archive grid indices; 0, or -1 if it is not a chunk key of a. */
int mzv_chunk_key_parse(const mzv_array *a, const char *chunk_key, uint64_t *index);
/* The presented chunk of fill values of a (built once); NULL on allocation failure. */
const unsigned char *mzv_fill_chunk(mzv_array *a);
/* Decodes the chunk at grid index (its object is the archive entry `entry`) into presented bytes
 * (malloc'ed). 0, 1 (missing: fill), or a netCDF error (reported). */
int mzv_chunk_translate(mzv_view *v, mzv_array *a, const uint64_t *index, const char *entry, unsigned char **out,
                        size_t *out_len);
/* Runs the codec pipeline on the stored chunk at grid index (an entry, or an inner chunk of a shard): the
 * decoded bytes before element conversion into *dec (malloc'ed). 0, 1 (no such chunk: fill), or -1 with a
 * message in err (nothing is reported: the caller decides). */
int mzv_chunk_decode_at(mzv_view *v, const mzv_array *a, const uint64_t *index, mzv_bytes *dec, char *err,
                        size_t err_len);
void mzv_cache_free(mzv_view *v);

/* view_diag.c: records "<archive>: <entry>: <problem>" as the last error, prints it on stderr, returns
 * code. */
int mzv_fail(mzv_view *v, int code, const char *entry, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The catalog (view_catalog.c). */
typedef enum mzv_meta_kind { MZV_META_ZARRAY, MZV_META_ZATTRS, MZV_META_ZGROUP, MZV_META_OTHER } mzv_meta_kind;
/* The kind of a key relative to the dataset (e.g. "a/b/.zarray"); *dir_len is the length of its directory. */
mzv_meta_kind mzv_classify(const char *rel, size_t *dir_len);
/* Reads the metadata entry rel (relative to the dataset) and parses it into *out (if out), or just maps it
 * into *text and *len (if text). 0, or NC_ENCZARR/NC_ENOMEM with a message naming the entry. */
int mzv_load_json(mzv_view *v, const char *rel, mzj_value **out, const char **text, size_t *len);
/* Finds or adds the group at path (length len). NULL when memory runs out. The catalog is unsorted until
 * mzv_sort_catalog: mzv_find_* need it sorted. */
mzv_group *mzv_group_slot(mzv_view *v, const char *path, size_t len);
void mzv_sort_catalog(mzv_view *v);
/* The archive entry name of a key relative to the dataset ("axes/cell/0"), malloc'ed. */
char *mzv_entry_name(const mzv_view *v, const char *relative_key);
mzv_array *mzv_find_array(mzv_view *v, const char *path, size_t path_len);
mzv_group *mzv_find_group(mzv_view *v, const char *path, size_t path_len);
/* The array owning chunk key rel (relative to the dataset, e.g. "a/b/0.1"); *chunk_key points into rel. */
mzv_array *mzv_find_chunk_owner(mzv_view *v, const char *rel, const char **chunk_key);

/* view_write.c: 1 if written (a .zarray/.zattrs/.zgroup by kind) changes nothing: each member is as the
 * view presents it (presented, may be NULL) or as the archive holds it (archive, may be NULL), allowing for
 * how 4.9.0 writes metadata back. */
int mzv_metadata_unchanged(const char *kind, const mzj_value *presented, const mzj_value *archive,
                           const mzj_value *written);

#endif

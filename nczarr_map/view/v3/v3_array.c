/* v3_array.c - a Zarr v3 array's zarr.json parsed into the view's array model and codec pipeline
 * (see v3_read.h; the translations are listed in docs/compat-view.md). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_table.h"
#include "v3_read.h"
#include "view_convert.h"

static int failf(char *err, size_t err_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int failf(char *err, size_t err_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && err_len) vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Data types                                                                                             */

/* The model of a v3 data_type (a name, or {"name", "configuration"}). Byte order comes later, from the
 * bytes codec. */
static int parse_data_type(const mzj_value *dt, mzv_dtype *out, char *err, size_t err_len) {
    static const struct {
        const char *name;
        mzv_dtype_class cls;
        size_t size;
    } simple[] = {{"bool", MZV_DT_BOOL, 1},      {"int8", MZV_DT_INT, 1},     {"int16", MZV_DT_INT, 2},
                  {"int32", MZV_DT_INT, 4},      {"int64", MZV_DT_INT, 8},    {"uint8", MZV_DT_UINT, 1},
                  {"uint16", MZV_DT_UINT, 2},    {"uint32", MZV_DT_UINT, 4},  {"uint64", MZV_DT_UINT, 8},
                  {"float16", MZV_DT_FLOAT, 2},  {"float32", MZV_DT_FLOAT, 4}, {"float64", MZV_DT_FLOAT, 8},
                  {"complex64", MZV_DT_COMPLEX, 8}, {"complex128", MZV_DT_COMPLEX, 16}};
    memset(out, 0, sizeof *out);
    const char *name = mzj_string(dt);
    const mzj_value *config = NULL;
    if (!name && dt && dt->kind == MZJ_OBJECT) {
        name = mzj_string(mzj_get(dt, "name"));
        config = mzj_get(dt, "configuration");
    }
    if (!name) return failf(err, err_len, "data_type is neither a name nor an object with a \"name\"");
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(name, simple[i].name) == 0) {
            out->cls = simple[i].cls;
            out->itemsize = simple[i].size;
            return 0;
        }
    if (strcmp(name, "string") == 0 || strcmp(name, "variable_length_utf8") == 0) {
        out->cls = MZV_DT_OBJECT; /* stored through vlen-utf8 */
        return 0;
    }
    if (strcmp(name, "bytes") == 0 || strcmp(name, "variable_length_bytes") == 0) {
        out->cls = MZV_DT_OBJECT; /* stored through vlen-bytes */
        out->width = 1;           /* marks bytes rather than text (checked against the codec) */
        return 0;
    }
    uint64_t n;
    if (strcmp(name, "fixed_length_utf32") == 0 || strcmp(name, "null_terminated_bytes") == 0) {
        if (!mzj_as_uint64(mzj_get(config, "length_bytes"), &n) || n > (1u << 24))
            return failf(err, err_len, "data_type %s: no valid configuration.length_bytes", name);
        if (strcmp(name, "fixed_length_utf32") == 0) {
            if (n % 4) return failf(err, err_len, "data_type %s: length_bytes is not a multiple of 4", name);
            out->cls = MZV_DT_UNICODE, out->width = (size_t)n / 4;
        } else {
            out->cls = MZV_DT_BYTES, out->width = (size_t)n;
        }
        out->itemsize = (size_t)n;
        return 0;
    }
    if (name[0] == 'r' && name[1] >= '1' && name[1] <= '9') {
        char *end;
        unsigned long bits = strtoul(name + 1, &end, 10);
        if (*end || bits % 8 || bits > (1ul << 24)) return failf(err, err_len, "data_type \"%s\" is not r<bits>", name);
        out->cls = MZV_DT_OPAQUE;
        out->itemsize = bits / 8;
        return 0;
    }
    if (strcmp(name, "numpy.datetime64") == 0 || strcmp(name, "numpy.timedelta64") == 0) {
        const char *unit = mzj_string(mzj_get(config, "unit"));
        uint64_t scale = 1;
        const mzj_value *s = mzj_get(config, "scale_factor");
        if (!unit || strlen(unit) > 4 || (s && (!mzj_as_uint64(s, &scale) || scale == 0 || scale > 1000000)))
            return failf(err, err_len, "data_type %s: no valid unit / scale_factor", name);
        out->cls = strcmp(name, "numpy.datetime64") == 0 ? MZV_DT_DATETIME : MZV_DT_TIMEDELTA;
        out->itemsize = 8;
        if (scale == 1) snprintf(out->unit, sizeof out->unit, "%s", unit);
        else snprintf(out->unit, sizeof out->unit, "%" PRIu64 "%s", scale, unit);
        return 0;
    }
    return failf(err, err_len, "data_type \"%s\" is not one the view can present", name);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Fill value                                                                                             */

/* A float fill value as JSON the v2 code reads: numbers stay, "NaN"/"Infinity"/"-Infinity" stay, the
 * hexadecimal spelling ("0x7fc00000", the IEEE bits) becomes the number. NULL (with err) if invalid. */
static mzj_value *float_fill(const mzj_value *f, size_t size, char *err, size_t err_len) {
    double d;
    const char *s = mzj_string(f);
    if (s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        char *end;
        size_t digits = strlen(s + 2);
        unsigned long long bits = strtoull(s + 2, &end, 16);
        if (*end || digits != 2 * size) {
            failf(err, err_len, "fill_value \"%s\" is not %zu hexadecimal digits", s, 2 * size);
            return NULL;
        }
        if (size == 2) {
            d = mzv_half_to_float((uint16_t)bits);
        } else if (size == 4) {
            uint32_t b = (uint32_t)bits;
            float x;
            memcpy(&x, &b, 4);
            d = x;
        } else {
            uint64_t b = bits;
            memcpy(&d, &b, 8);
        }
        if (isnan(d)) return mzj_new_cstring("NaN");
        if (isinf(d)) return mzj_new_cstring(d > 0 ? "Infinity" : "-Infinity");
        return mzj_new_real(d);
    }
    if (!mzj_as_double(f, &d)) {
        failf(err, err_len, "fill_value is not a number, \"NaN\", \"Infinity\", \"-Infinity\" or hexadecimal");
        return NULL;
    }
    return mzj_clone(f);
}

static mzj_value *normalise_fill(const mzj_value *f, const mzv_dtype *d, char *err, size_t err_len) {
    if (!f) {
        failf(err, err_len, "no fill_value");
        return NULL;
    }
    if (f->kind == MZJ_NULL) return mzj_new_null();
    switch (d->cls) {
    case MZV_DT_FLOAT: return float_fill(f, d->itemsize, err, err_len);
    case MZV_DT_COMPLEX: {
        if (f->kind != MZJ_ARRAY || f->u.array.count != 2) {
            failf(err, err_len, "complex fill_value is not [real, imaginary]");
            return NULL;
        }
        mzj_value *pair = mzj_new_array();
        for (int k = 0; pair && k < 2; k++) {
            mzj_value *part = float_fill(f->u.array.items[k], d->itemsize / 2, err, err_len);
            if (!part || mzj_array_push(pair, part) != 0) {
                mzj_free(pair);
                return NULL;
            }
        }
        return pair;
    }
    case MZV_DT_DATETIME:
    case MZV_DT_TIMEDELTA: {
        const char *s = mzj_string(f);
        if (s && strcmp(s, "NaT") == 0) return mzj_new_int(INT64_MIN);
        return mzj_clone(f);
    }
    default: return mzj_clone(f);
    }
}

/* ---------------------------------------------------------------------------------------------------- */
/* Codecs                                                                                                 */

/* A codec entry: a name, or {"name", "configuration"}. */
static const char *codec_name(const mzj_value *c, const mzj_value **config) {
    *config = NULL;
    if (c && c->kind == MZJ_STRING) return mzj_string(c);
    if (!c || c->kind != MZJ_OBJECT) return NULL;
    *config = mzj_get(c, "configuration");
    return mzj_string(mzj_get(c, "name"));
}

static int set_unsupported(mzv_codec_chain *c, const char *fmt, const char *a) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a ? a : "");
    if (c->unsupported) return 0; /* the first reason is the one reported */
    c->unsupported = strdup(msg);
    return c->unsupported ? 0 : -1;
}

/* The bytes codec's byte order into *big_endian. 0, or -1 with err. */
static int parse_endian(const mzj_value *config, int *big_endian, char *err, size_t err_len) {
    const mzj_value *e = mzj_get(config, "endian");
    const char *s = mzj_string(e);
    *big_endian = 0;
    if (!e || e->kind == MZJ_NULL) return 0;
    if (s && strcmp(s, "little") == 0) return 0;
    if (s && strcmp(s, "big") == 0) return *big_endian = 1, 0;
    return failf(err, err_len, "bytes codec: endian is neither \"little\" nor \"big\"");
}

/* Reads a transpose order (a permutation, or the older "C"/"F") into t. 0, or -1 with err. */
static int parse_transpose(const mzj_value *config, int rank, int *t, char *err, size_t err_len) {
    const mzj_value *o = mzj_get(config, "order");
    const char *s = mzj_string(o);
    if (s && (strcmp(s, "C") == 0 || strcmp(s, "F") == 0)) {
        for (int k = 0; k < rank; k++) t[k] = s[0] == 'C' ? k : rank - 1 - k;
        return 0;
    }
    if (!o || o->kind != MZJ_ARRAY || (int)o->u.array.count != rank)
        return failf(err, err_len, "transpose codec: order is not a permutation of the %d dimensions", rank);
    int seen[MZV_MAX_RANK] = {0};
    for (int k = 0; k < rank; k++) {
        int64_t v;
        if (!mzj_as_int64(o->u.array.items[k], &v) || v < 0 || v >= rank || seen[v])
            return failf(err, err_len, "transpose codec: order is not a permutation of the %d dimensions", rank);
        seen[v] = 1;
        t[k] = (int)v;
    }
    return 0;
}

/* Builds the pipeline of `codecs` for chunks of `rank` dimensions into chain and the dtype's byte order /
 * the transpose into z. `inner` is set inside sharding_indexed (no nested sharding). 0, or -1 with err for
 * a malformed list; codecs the view cannot decode go to chain->unsupported. */
static int build_chain(const mzj_value *codecs, mzv_zarray *z, mzv_codec_chain *chain, int inner, char *err,
                       size_t err_len);

static int parse_sharding(const mzj_value *config, mzv_zarray *z, mzv_codec_chain *chain, char *err, size_t err_len) {
    mzv_sharding *sh = calloc(1, sizeof *sh);
    if (!sh) return failf(err, err_len, "out of memory");
    z->sharding = sh;
    memcpy(sh->shard_shape, z->chunks, sizeof sh->shard_shape);
    int rank;
    if (mzv_parse_shape(mzj_get(config, "chunk_shape"), "sharding_indexed chunk_shape", z->chunks, &rank, err,
                        err_len) != 0)
        return -1;
    if (rank != z->rank) return failf(err, err_len, "sharding_indexed: chunk_shape has %d dimensions, the array %d", rank, z->rank);
    for (int i = 0; i < rank; i++)
        if (z->chunks[i] == 0 ? sh->shard_shape[i] != 0 : sh->shard_shape[i] % z->chunks[i] != 0)
            return failf(err, err_len, "sharding_indexed: chunk_shape does not divide the shard shape");
    const char *loc = mzj_string(mzj_get(config, "index_location"));
    if (loc && strcmp(loc, "start") != 0 && strcmp(loc, "end") != 0)
        return failf(err, err_len, "sharding_indexed: index_location is neither \"start\" nor \"end\"");
    sh->index_at_start = loc && strcmp(loc, "start") == 0;
    /* The index codecs: bytes, then optionally crc32c (the only fixed-size pipeline in use). */
    const mzj_value *ic = mzj_get(config, "index_codecs");
    if (!ic || ic->kind != MZJ_ARRAY || ic->u.array.count < 1 || ic->u.array.count > 2)
        return set_unsupported(chain, "sharding_indexed: index_codecs other than [bytes] or [bytes, crc32c]%s", NULL);
    const mzj_value *cfg;
    const char *first = codec_name(ic->u.array.items[0], &cfg);
    if (!first || strcmp(first, "bytes") != 0)
        return set_unsupported(chain, "sharding_indexed: index codec \"%s\" cannot be decoded by the view", first ? first : "?");
    if (parse_endian(cfg, &sh->index_big_endian, err, err_len) != 0) return -1;
    if (ic->u.array.count == 2) {
        const char *second = codec_name(ic->u.array.items[1], &cfg);
        if (!second || strcmp(second, "crc32c") != 0)
            return set_unsupported(chain, "sharding_indexed: index codec \"%s\" cannot be decoded by the view", second ? second : "?");
        sh->index_crc32c = 1;
    }
    return build_chain(mzj_get(config, "codecs"), z, chain, 1, err, err_len);
}

static int build_chain(const mzj_value *codecs, mzv_zarray *z, mzv_codec_chain *chain, int inner, char *err,
                       size_t err_len) {
    if (!codecs || codecs->kind != MZJ_ARRAY) return failf(err, err_len, "codecs is not a list");
    int order[MZV_MAX_RANK];
    for (int k = 0; k < MZV_MAX_RANK; k++) order[k] = k;
    int stage = 0; /* 0: array-to-array, 1: after the array-to-bytes codec */
    size_t n = codecs->u.array.count;
    mzv_step *bytes_steps = calloc(n ? n : 1, sizeof *bytes_steps);
    size_t nsteps = 0;
    if (!bytes_steps) return failf(err, err_len, "out of memory");
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0 && !chain->unsupported; i++) {
        const mzj_value *config;
        const char *name = codec_name(codecs->u.array.items[i], &config);
        if (!name) {
            rc = failf(err, err_len, "a codec is neither a name nor an object with a \"name\"");
            break;
        }
        /* The codecs that lay chunks out are this reader's; the others are rows of the codec table. */
        int layout = strcmp(name, "transpose") == 0 || strcmp(name, "bytes") == 0 ||
                     strcmp(name, "sharding_indexed") == 0;
        const mzv_codec *codec = layout ? NULL : mzv_codec_find_v3(name);
        int to_bytes = layout ? strcmp(name, "transpose") != 0 : codec && codec->role == MZV_CODEC_OBJECT;
        if (stage == 1 && (layout || to_bytes)) {
            rc = failf(err, err_len, "codecs: \"%s\" after the array-to-bytes codec", name);
        } else if (strcmp(name, "transpose") == 0) {
            int t[MZV_MAX_RANK], next[MZV_MAX_RANK];
            if ((rc = parse_transpose(config, z->rank, t, err, err_len)) != 0) break;
            for (int k = 0; k < z->rank; k++) next[k] = order[t[k]];
            memcpy(order, next, sizeof order);
        } else if (strcmp(name, "bytes") == 0) {
            rc = parse_endian(config, &z->dtype.big_endian, err, err_len);
            if (z->dtype.cls == MZV_DT_OBJECT) rc = set_unsupported(chain, "the bytes codec cannot store a variable-length data type%s", NULL);
            stage = 1;
        } else if (strcmp(name, "sharding_indexed") == 0) {
            if (inner) rc = set_unsupported(chain, "sharding_indexed inside sharding_indexed cannot be decoded by the view%s", NULL);
            else if (i > 0) rc = set_unsupported(chain, "array-to-array codecs before sharding_indexed cannot be decoded by the view%s", NULL);
            else if (i + 1 < n) rc = set_unsupported(chain, "bytes-to-bytes codecs after sharding_indexed cannot be decoded by the view%s", NULL);
            else rc = parse_sharding(config, z, chain, err, err_len);
            stage = 1;
            if (rc == 0 && !chain->unsupported) {
                free(bytes_steps);
                return 0; /* the inner pipeline is the array's */
            }
        } else if (!codec) {
            rc = set_unsupported(chain, "codec \"%s\" cannot be decoded by the view", name);
        } else if (to_bytes) {
            if (z->dtype.cls != MZV_DT_OBJECT) rc = set_unsupported(chain, "codec \"%s\" on a fixed-size data type", name);
            chain->object_codec = codec->object;
            stage = 1;
        } else if (stage == 0) {
            rc = failf(err, err_len, "codecs: \"%s\" before the array-to-bytes codec", name);
        } else if (mzv_codec_configure(codec, config, 3, &bytes_steps[nsteps], err, err_len) != 0) {
            rc = set_unsupported(chain, "%s", err);
        } else {
            nsteps++;
        }
    }
    if (rc == 0 && !chain->unsupported && stage == 0)
        rc = failf(err, err_len, "codecs: no array-to-bytes codec (bytes, vlen-utf8, vlen-bytes, sharding_indexed)");
    /* Decoding runs the bytes-to-bytes codecs backwards. */
    for (size_t i = nsteps; rc == 0 && i-- > 0;)
        if (mzv_chain_push(chain, &bytes_steps[i]) != 0) rc = failf(err, err_len, "out of memory");
    free(bytes_steps);
    if (rc != 0) return -1;
    int identity = 1, reversed = 1;
    for (int k = 0; k < z->rank; k++) {
        if (order[k] != k) identity = 0;
        if (order[k] != z->rank - 1 - k) reversed = 0;
    }
    if (!identity && reversed) z->fortran_order = 1;
    else if (!identity) z->transposed = 1, memcpy(z->order, order, sizeof order);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The document                                                                                           */

static int parse_key_encoding(const mzj_value *e, mzv_zarray *z, char *err, size_t err_len) {
    const mzj_value *config;
    const char *name = codec_name(e, &config);
    if (!name) return failf(err, err_len, "chunk_key_encoding is missing or has no name");
    int is_default = strcmp(name, "default") == 0;
    if (!is_default && strcmp(name, "v2") != 0)
        return failf(err, err_len, "chunk_key_encoding \"%s\" is neither \"default\" nor \"v2\"", name);
    z->key_prefix_c = is_default;
    z->separator = is_default ? '/' : '.';
    const mzj_value *sep = mzj_get(config, "separator");
    if (sep) {
        const char *s = mzj_string(sep);
        if (!s || (strcmp(s, ".") != 0 && strcmp(s, "/") != 0))
            return failf(err, err_len, "chunk_key_encoding separator is neither \".\" nor \"/\"");
        z->separator = s[0];
    }
    return 0;
}

/* Members an array document may have; others must be extensions with "must_understand": false. */
static int known_array_member(const char *key) {
    static const char *const known[] = {"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
                                        "chunk_key_encoding", "fill_value", "codecs", "attributes",
                                        "dimension_names", "storage_transformers"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(key, known[i]) == 0) return 1;
    return 0;
}

int mzv_v3_array_parse(const mzj_value *doc, mzv_zarray *out, mzv_codec_chain *chain, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    memset(chain, 0, sizeof *chain);
    out->format = 3;
    if (!(out->json = mzj_clone(doc))) return failf(err, err_len, "out of memory");
    const mzj_value *j = out->json;
    for (size_t i = 0; i < j->u.object.count; i++) {
        const mzj_member *m = &j->u.object.members[i];
        const mzj_value *mu = mzj_get(m->value, "must_understand");
        if (!known_array_member(m->key) && !(mu && mu->kind == MZJ_BOOL && !mu->u.boolean)) {
            failf(err, err_len, "extension \"%s\" must be understood, and the view does not know it", m->key);
            goto fail;
        }
    }
    const mzj_value *st = mzj_get(j, "storage_transformers");
    if (st && !(st->kind == MZJ_ARRAY && st->u.array.count == 0)) {
        failf(err, err_len, "storage_transformers are not supported by the view");
        goto fail;
    }
    if (mzv_parse_shape(mzj_get(j, "shape"), "shape", out->shape, &out->rank, err, err_len) != 0) goto fail;
    const mzj_value *grid_config;
    const char *grid = codec_name(mzj_get(j, "chunk_grid"), &grid_config);
    if (!grid || strcmp(grid, "regular") != 0) {
        failf(err, err_len, "chunk_grid \"%s\" is not \"regular\"", grid ? grid : "(missing)");
        goto fail;
    }
    int chunk_rank;
    if (mzv_parse_shape(mzj_get(grid_config, "chunk_shape"), "chunk_shape", out->chunks, &chunk_rank, err, err_len) != 0)
        goto fail;
    if (chunk_rank != out->rank) {
        failf(err, err_len, "chunk_shape and shape have different lengths");
        goto fail;
    }
    for (int i = 0; i < out->rank; i++)
        if (out->chunks[i] == 0 && out->shape[i] != 0) {
            failf(err, err_len, "a chunk length is 0 for a non-empty dimension");
            goto fail;
        }
    out->dtype_json = mzj_get(j, "data_type");
    if (parse_data_type(out->dtype_json, &out->dtype, err, err_len) != 0) goto fail;
    if (parse_key_encoding(mzj_get(j, "chunk_key_encoding"), out, err, err_len) != 0) goto fail;
    if (build_chain(mzj_get(j, "codecs"), out, chain, 0, err, err_len) != 0) goto fail;
    if (out->dtype.cls == MZV_DT_OBJECT && !chain->unsupported) {
        int wants_bytes = out->dtype.width == 1;
        if (chain->object_codec == MZV_OBJECT_NONE ||
            (chain->object_codec == MZV_OBJECT_VLEN_BYTES) != wants_bytes) {
            if (set_unsupported(chain, "data type \"%s\" without its vlen codec", wants_bytes ? "bytes" : "string") != 0) goto oom;
        }
    }
    out->dtype.width = out->dtype.cls == MZV_DT_OBJECT ? 0 : out->dtype.width;
    mzj_value *fill = normalise_fill(mzj_get(j, "fill_value"), &out->dtype, err, err_len);
    if (!fill) goto fail;
    if (mzj_object_set(out->json, "fill_value", fill) != 0) goto oom;
    out->fill_value = mzj_get(out->json, "fill_value");
    out->dtype_json = mzj_get(out->json, "data_type");
    return 0;
oom:
    failf(err, err_len, "out of memory");
fail:
    mzv_chain_free(chain);
    mzv_zarray_free(out);
    return -1;
}

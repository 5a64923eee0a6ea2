/*
 * json.h - a small strict JSON parser and writer for Zarr metadata, shared by the compatibility view
 * (nczarr_map/view) and the storage map (nczarr_map).
 *
 * Why our own: the view must read what zarr-python, xarray, Zarr.jl and NCZarr write (RFC 8259 plus the
 * NaN / Infinity / -Infinity literals that Python's json module emits) and must write JSON that netCDF-C
 * 4.9.0's own parser (libdispatch/ncjson.c) reads back exactly. That parser does not decode \uXXXX
 * escapes, so the writer emits raw UTF-8 and escapes only what 4.9.0 understands.
 *
 * The storage map uses it too (metadata_guard.c, publish.c), which is why it offers mzj_merge: netCDF-C
 * rewrites metadata with the same meaning in other bytes (its key order, one line, numbers as it prints
 * them), so the map compares documents with mzj_equal instead of bytes, and merges netCDF-C's lossy
 * rewrites into what the archive holds. It is a folder and a library (mmzip_json) of its own, below both
 * the view and the map, so that neither reaches into the other for it; it depends on nothing but libc.
 *
 * Values form a tree owned by its root: mzj_free() on the root frees everything. Strings are stored with
 * their length (they may contain NUL after \u0000) and are always NUL-terminated as well.
 *
 * Numbers: integers that fit in [-(2^64-1), 2^64-1] are kept exactly (MZJ_INT); every other number is a
 * double (MZJ_REAL) that also keeps its source text, so that re-emitting it does not change its digits.
 *
 * Thread-safety: functions are reentrant; a value tree must not be modified by two threads at once.
 */
#ifndef MMZIP_JSON_H
#define MMZIP_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum mzj_kind { MZJ_NULL, MZJ_BOOL, MZJ_INT, MZJ_REAL, MZJ_STRING, MZJ_ARRAY, MZJ_OBJECT } mzj_kind;

typedef struct mzj_value mzj_value;

typedef struct mzj_member {
    char *key;
    size_t key_len;
    mzj_value *value;
} mzj_member;

struct mzj_value {
    mzj_kind kind;
    union {
        int boolean;
        struct {
            int negative;       /* the value is -magnitude */
            uint64_t magnitude;
        } integer;
        struct {
            double value;
            char *text;         /* the source lexeme, or NULL for values built in memory */
        } real;
        struct {
            char *bytes;
            size_t len;
        } string;
        struct {
            mzj_value **items;
            size_t count;
        } array;
        struct {
            mzj_member *members;  /* in source order; a repeated key keeps only its last value */
            size_t count;
        } object;
    } u;
};

/* Deepest nesting the parser accepts; Zarr metadata is shallow, hostile input is not. */
#define MZJ_MAX_DEPTH 64

/*
 * Parses len bytes of text (UTF-8, no NUL needed) into *out. Surrounding whitespace is allowed, and so are
 * NUL bytes after the value (some writers store the C string's terminator); anything else after the value
 * is an error. Returns 0, or -1 with a message in err (position and problem; err may be NULL) and *out
 * NULL. Invalid UTF-8, unpaired surrogates, control characters in strings, trailing commas, comments and
 * nesting deeper than MZJ_MAX_DEPTH are errors.
 */
int mzj_parse(const char *text, size_t len, mzj_value **out, char *err, size_t err_len);

void mzj_free(mzj_value *v);

/* Deep copy; NULL on allocation failure. */
mzj_value *mzj_clone(const mzj_value *v);

/* Constructors; each returns NULL on allocation failure. mzj_new_string copies len bytes. */
mzj_value *mzj_new_null(void);
mzj_value *mzj_new_bool(int b);
mzj_value *mzj_new_int(int64_t i);
mzj_value *mzj_new_uint(uint64_t u);
mzj_value *mzj_new_real(double d);
mzj_value *mzj_new_string(const char *s, size_t len);
mzj_value *mzj_new_cstring(const char *s);
mzj_value *mzj_new_array(void);
mzj_value *mzj_new_object(void);

/* Appends item to an array (taking ownership). Returns 0, or -1 on allocation failure (item is freed). */
int mzj_array_push(mzj_value *array, mzj_value *item);

/* Sets key in an object to value (taking ownership), replacing an existing member in place or appending.
 * Returns 0, or -1 on allocation failure or if object is not an object (value is freed). A NULL value is
 * refused with -1, so that mzj_object_set(o, k, mzj_clone(v)) sets a copy and reports a failed clone. */
int mzj_object_set(mzj_value *object, const char *key, mzj_value *value);

/*
 * Deep merge of overlay into base, both objects: every member of overlay replaces (with a copy) the member
 * of the same name in base, except that when both values are objects they are merged recursively; members
 * only in base are kept, in place; new members are appended in overlay's order. Returns 0, or -1 on
 * allocation failure (base may then be partly merged) or if either is not an object.
 */
int mzj_merge(mzj_value *base, const mzj_value *overlay);

/* Removes key from an object if present. */
void mzj_object_remove(mzj_value *object, const char *key);

/* The member value for key (NUL-terminated), or NULL if absent or v is not an object. */
const mzj_value *mzj_get(const mzj_value *v, const char *key);

/* 1 if v is an integer that fits in int64_t / uint64_t, storing it; 0 otherwise. */
int mzj_as_int64(const mzj_value *v, int64_t *out);
int mzj_as_uint64(const mzj_value *v, uint64_t *out);

/* The value of a number (INT or REAL) or of a string spelling NaN / Infinity / -Infinity, as a double.
 * Returns 1 on success, 0 if v is not such a value. */
int mzj_as_double(const mzj_value *v, double *out);

/* The string's bytes, or NULL if v is not a string. */
const char *mzj_string(const mzj_value *v);

/*
 * Semantic equality: same kind and value; numbers compare by value (1 == 1.0; NaN equals NaN); objects
 * compare as unordered maps. Returns 1 if equal.
 */
int mzj_equal(const mzj_value *a, const mzj_value *b);

/* A growable byte buffer, the target of the writer. */
typedef struct mzj_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;  /* an allocation failed; data is incomplete */
} mzj_buf;

void mzj_buf_init(mzj_buf *b);
void mzj_buf_free(mzj_buf *b);
void mzj_buf_append(mzj_buf *b, const char *s, size_t n);
void mzj_buf_puts(mzj_buf *b, const char *s);

/*
 * Appends v as JSON. Strings are written as raw UTF-8 with only '"', '\\' and control characters escaped
 * (\b \f \n \r \t, others as \u00XX), which netCDF-C 4.9.0 reads back unchanged. A byte that is not part
 * of valid UTF-8 is written as \ufffd, so the text always parses. Non-finite doubles are
 * written as the bare words NaN, Infinity, -Infinity (what Python's json writes, and 4.9.0 reads).
 */
void mzj_write(mzj_buf *b, const mzj_value *v);

/* v as a freshly allocated NUL-terminated JSON text (*len without the NUL), or NULL on allocation failure. */
char *mzj_to_text(const mzj_value *v, size_t *len);

/*
 * As mzj_to_text, but pure ASCII: every non-ASCII character is written as \uXXXX (a UTF-16 surrogate pair
 * beyond the BMP), as Python's json module writes by default. This is the form stored in archives: zarr-python
 * 2.13 decodes metadata as ASCII and fails on raw UTF-8 (netCDF-C 4.9.0 cannot decode the escapes, which is
 * why the view presents it the raw form).
 */
char *mzj_to_ascii_text(const mzj_value *v, size_t *len);

/*
 * As mzj_to_text, for netCDF-C's own JSON parser (the view's presented documents): it decodes only the escapes
 * \b \f \n \r \t \" \\ and reads any other byte up to a string's closing quote as it is, so the other control
 * characters are written raw, not as \u00XX (which 4.9.0 reads as the text "u00XX"), and a string ends at a
 * NUL character, as it does in netCDF. Not JSON for other parsers.
 */
char *mzj_to_netcdf_text(const mzj_value *v, size_t *len);

/* 1 if the len bytes at s are valid UTF-8 (no overlong form, surrogate or code point above U+10FFFF). */
int mzj_valid_utf8(const char *s, size_t len);

#endif

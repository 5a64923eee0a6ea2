/*
 * json.h - the small JSON document model the plugin needs to reason about Zarr metadata objects
 * (.zgroup, .zarray, .zattrs): parse, compare for meaning, merge, and print.
 *
 * Why not compare bytes: zarr-python indents its JSON and sorts keys, netCDF-C prints it on one line in its
 * own key order, so a rewrite by netCDF-C of unchanged metadata differs in bytes but not in meaning, and
 * must not cost an entry in the archive.
 *
 * Numbers keep their source text, so printing a parsed document does not change how its numbers are
 * written. NaN, Infinity and -Infinity (which Python's json module writes for float fill values) are
 * accepted as numbers. Strings are decoded to UTF-8 (\u escapes and surrogate pairs included).
 * Not thread-safe per document; distinct documents are independent.
 */
#ifndef MZN_JSON_H
#define MZN_JSON_H

#include <stddef.h>

typedef enum mzn_json_kind {
    MZN_JSON_NULL,
    MZN_JSON_FALSE,
    MZN_JSON_TRUE,
    MZN_JSON_NUMBER,
    MZN_JSON_STRING,
    MZN_JSON_ARRAY,
    MZN_JSON_OBJECT
} mzn_json_kind;

typedef struct mzn_json mzn_json;
struct mzn_json {
    mzn_json_kind kind;
    char *text;         /* NUMBER: the source token; STRING: the decoded bytes (NUL-terminated) */
    size_t text_len;    /* length of text (a decoded string may contain NUL bytes) */
    size_t count;       /* ARRAY: elements; OBJECT: members */
    mzn_json **items;   /* ARRAY: elements; OBJECT: member values */
    char **keys;        /* OBJECT: member names (decoded, NUL-terminated) */
};

/*
 * Parses len bytes of text. Returns the document (free with mzn_json_free), or NULL if the text is not
 * one valid JSON value (trailing non-space bytes, nesting deeper than 256, bad escapes, out of memory).
 */
mzn_json *mzn_json_parse(const char *text, size_t len);

void mzn_json_free(mzn_json *j);

/* A deep copy, or NULL if out of memory. */
mzn_json *mzn_json_copy(const mzn_json *j);

/*
 * 1 if a and b mean the same: same kinds; numbers equal as integers when both are integer literals, else
 * as doubles (or identical text, which makes NaN equal to NaN); strings byte-equal; arrays element-wise;
 * objects with the same member names and equal values, in any order. 0 otherwise.
 */
int mzn_json_equal(const mzn_json *a, const mzn_json *b);

/* The value of member `name` of an object (the last one if repeated), or NULL. */
mzn_json *mzn_json_member(const mzn_json *object, const char *name);

/* Sets member `name` of an object to a copy of value (replacing the last member of that name, or
 * appending). Returns 0, or -1 if out of memory or if object is not an object. */
int mzn_json_set(mzn_json *object, const char *name, const mzn_json *value);

/*
 * Deep merge of overlay into base, both objects: every member of overlay replaces the member of the same
 * name in base, except that when both values are objects they are merged recursively; members only in
 * base are kept. Returns 0, or -1 if out of memory (base may then be partly merged) or if either is not an
 * object.
 */
int mzn_json_merge(mzn_json *base, const mzn_json *overlay);

/*
 * Prints j in netCDF-C's compact style ({"a": 1, "b": [1,2]}). Returns a malloc'ed NUL-terminated string
 * and its length in *len (if not NULL), or NULL if out of memory.
 */
char *mzn_json_print(const mzn_json *j, size_t *len);

#endif

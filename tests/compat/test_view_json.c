/*
 * test_view_json.c - the JSON of the compatibility view and of the storage map (nczarr_map/json/json.h):
 * parsing what zarr-python, xarray and netCDF-C write, refusing hostile input, writing what netCDF-C 4.9.0 reads back
 * with numbers as they were written, meaning-based equality, deep merge, and building documents.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nczarr_ctest.h"
#include "json.h"

static mzj_value *parse_n(const char *text, size_t len) {
    mzj_value *v;
    char err[200];
    if (mzj_parse(text, len, &v, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
    return v;
}

static mzj_value *parse(const char *text) { return parse_n(text, strlen(text)); }

static int parses(const char *text, size_t len) {
    mzj_value *v;
    char err[200];
    int ok = mzj_parse(text, len, &v, err, sizeof err) == 0;
    /* A refusal always says why and leaves nothing behind. */
    if (!ok) CHECK(v == NULL && err[0] != '\0');
    mzj_free(v);
    return ok;
}

/* The text parsed and written again must be want (the parser's message is shown if it fails). */
static void check_roundtrip(const char *text, const char *want) {
    mzj_value *v;
    char err[200];
    char *out = mzj_parse(text, strlen(text), &v, err, sizeof err) == 0 ? mzj_to_text(v, NULL) : strdup(err);
    CHECK_STR(out, want);
    free(out);
    mzj_free(v);
}

static int equal_texts(const char *a, const char *b) {
    mzj_value *x = parse(a), *y = parse(b);
    int eq = x && y && mzj_equal(x, y);
    mzj_free(x);
    mzj_free(y);
    return eq;
}

static void check_written(const mzj_value *v, const char *want) {
    size_t len;
    char *text = mzj_to_text(v, &len);
    CHECK_STR(text, want);
    CHECK_EQ_U64(len, text ? strlen(text) : 0);
    free(text);
}

static void test_parse_values(void) {
    mzj_value *j = parse("{\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\u00e9\\n\\\"\", \"o\": {}}");
    CHECK(j && j->kind == MZJ_OBJECT && j->u.object.count == 3);
    const mzj_value *a = mzj_get(j, "a");
    CHECK(a && a->kind == MZJ_ARRAY && a->u.array.count == 5);
    if (a && a->u.array.count == 5) {
        mzj_value **items = a->u.array.items;
        int64_t one = 0;
        CHECK(mzj_as_int64(items[0], &one) && one == 1);
        CHECK(items[1]->kind == MZJ_REAL && items[1]->u.real.value == -2500.0);
        CHECK_STR(items[1]->u.real.text, "-2.5e3");
        CHECK(items[2]->kind == MZJ_BOOL && items[2]->u.boolean && items[3]->kind == MZJ_BOOL &&
              !items[3]->u.boolean && items[4]->kind == MZJ_NULL);
    }
    const mzj_value *s = mzj_get(j, "s");
    CHECK_STR(mzj_string(s), "x\xc3\xa9\n\"");
    CHECK_EQ_U64(s ? s->u.string.len : 0, 5);
    CHECK(mzj_get(j, "missing") == NULL);
    CHECK(mzj_get(mzj_get(j, "o"), "missing") == NULL);
    mzj_free(j);

    /* Surrogate pairs decode to one 4-byte UTF-8 sequence; \u0000 stays inside the string. */
    j = parse("\"\\ud83d\\ude00\"");
    CHECK(j && j->u.string.len == 4 && memcmp(j->u.string.bytes, "\xf0\x9f\x98\x80", 4) == 0);
    mzj_free(j);
    j = parse("\"a\\u0000b\"");
    CHECK(j && j->u.string.len == 3 && memcmp(j->u.string.bytes, "a\0b", 4) == 0);
    mzj_free(j);

    /* Python's json writes NaN and Infinity for float fill values. */
    j = parse("{\"fill_value\": NaN, \"b\": -Infinity, \"c\": Infinity}");
    double d = 0;
    CHECK(j && mzj_get(j, "fill_value")->kind == MZJ_REAL && mzj_as_double(mzj_get(j, "fill_value"), &d) &&
          isnan(d));
    CHECK(j && mzj_as_double(mzj_get(j, "b"), &d) && isinf(d) && d < 0);
    CHECK(j && mzj_as_double(mzj_get(j, "c"), &d) && isinf(d) && d > 0);
    mzj_free(j);

    /* Integers are exact over the whole int64 and uint64 ranges. */
    j = parse("[18446744073709551615, -9223372036854775808, 9223372036854775808]");
    uint64_t u = 0;
    int64_t i = 0;
    CHECK(j && mzj_as_uint64(j->u.array.items[0], &u) && u == UINT64_MAX);
    CHECK(j && !mzj_as_int64(j->u.array.items[0], &i));
    CHECK(j && mzj_as_int64(j->u.array.items[1], &i) && i == INT64_MIN);
    CHECK(j && !mzj_as_uint64(j->u.array.items[1], &u));
    CHECK(j && !mzj_as_int64(j->u.array.items[2], &i));
    mzj_free(j);

    /* What some writers add around the value: a byte order mark, the C string's terminator. */
    CHECK(parses("\xEF\xBB\xBF{\"a\": 1}", 11));
    CHECK(parses("{\"a\":1}\0", 8));
    CHECK(parses("{\"a\":1}\n\0\0", 10));
    CHECK(!parses("{\"a\":1}\0x", 9));
}

static void test_parse_rejects(void) {
    static const char *const bad[] = {
        "", " ", "{", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "[1, 2,]", "tru", "nul", "\"abc", "01x", "01", "1.", ".5",
        "+1", "-", "1e", "nan", "inf", "-NaN", "\"\\q\"", "{} {}", "[1] x", "1 2", "\"\\u12\"",
        "\"bad \xff utf8\"", "\"overlong \xc0\xaf\"", "\"\\ud800 unpaired\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "// comment\n1", "{1: 2}", "[1 2]", "{\"a\": 1 \"b\": 2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int accepted = parses(bad[i], strlen(bad[i]));
        if (accepted) fprintf(stderr, "accepted invalid JSON: %s\n", bad[i]);
        CHECK(!accepted);
    }
    /* Control characters raw in a string are not JSON, but netCDF-C 4.9.0 writes them so: read as the
     * characters (and written back escaped, test_write), as json.loads(strict=False) does. A NUL is not. */
    CHECK(parses("\"a\tb\"", 5) && parses("\"raw\ncontrol\x01\x1f\"", 15));
    CHECK(!parses("\"nul\0here\"", 10));

    /* Nesting deep enough to exhaust a naive parser's stack is refused with a reason, not crashed on. */
    size_t n = 100000;
    char *deep = malloc(2 * n);
    CHECK(deep != NULL);
    if (!deep) return;
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    mzj_value *v;
    char err[100];
    CHECK(mzj_parse(deep, 2 * n, &v, err, sizeof err) != 0 && v == NULL && strstr(err, "nesting"));
    CHECK(mzj_parse(deep + n - 100, 200, &v, err, sizeof err) != 0 && strstr(err, "nesting"));
    /* Within the limit it parses. */
    CHECK(mzj_parse(deep + n - MZJ_MAX_DEPTH, 2 * MZJ_MAX_DEPTH, &v, err, sizeof err) == 0);
    mzj_free(v);
    free(deep);

    /* A caller that does not want the message may pass none. */
    CHECK(mzj_parse("[1,", 3, &v, NULL, 0) != 0 && v == NULL);
}

static void test_write(void) {
    check_roundtrip("{\"a\": [1, -2, 3.5e0, true, null, \"x\"]}", "{\"a\": [1, -2, 3.5e0, true, null, \"x\"]}");
    /* netCDF-C's one-line form and zarr-python's indented one come out alike. */
    check_roundtrip("{\n    \"shape\": [\n        3,\n        4\n    ],\n    \"order\": \"C\"\n}",
                    "{\"shape\": [3, 4], \"order\": \"C\"}");
    /* \u escapes become raw UTF-8: netCDF-C 4.9.0 does not decode them. */
    check_roundtrip("\"caf\\u00e9 \\ud83d\\ude00\"", "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    check_roundtrip("[NaN, Infinity, -Infinity]", "[NaN, Infinity, -Infinity]");
    check_roundtrip("\"tab\\tquote\\\"back\\\\slash\\u0001\\b\\f\\/\"",
                    "\"tab\\tquote\\\"back\\\\slash\\u0001\\b\\f/\"");
    check_roundtrip("{\"k\": 1, \"k\": 2}", "{\"k\": 2}");
    /* Reals keep their digits; integers beyond 64 bits are reals, so they do too. */
    check_roundtrip("[0.1000000000000000055511, 1E+2, -0.0, 1e400, -1e400]",
                    "[0.1000000000000000055511, 1E+2, -0.0, 1e400, -1e400]");
    check_roundtrip("123456789012345678901234567890", "123456789012345678901234567890");
    check_roundtrip("[18446744073709551615, -9223372036854775808, -0]",
                    "[18446744073709551615, -9223372036854775808, 0]");

    /* Strings with quotes, backslashes and control bytes read back as they were. */
    mzj_value *v = parse("[\"a\\\"b\\\\c\\u0001\\t\\u001f\\r\\n\"]");
    char *text = mzj_to_text(v, NULL);
    mzj_value *back = text ? parse(text) : NULL;
    CHECK(v && back && mzj_equal(v, back));
    free(text);
    mzj_free(v);
    mzj_free(back);

    /* Reals built in memory stay reals when read back, and non-finite ones use Python's words. */
    v = mzj_new_array();
    mzj_array_push(v, mzj_new_real(1.0));
    mzj_array_push(v, mzj_new_real(0.1));
    mzj_array_push(v, mzj_new_real(NAN));
    mzj_array_push(v, mzj_new_real(-INFINITY));
    mzj_array_push(v, mzj_new_int(INT64_MIN));
    mzj_array_push(v, mzj_new_uint(UINT64_MAX));
    check_written(v, "[1.0, 0.10000000000000001, NaN, -Infinity, -9223372036854775808, 18446744073709551615]");
    mzj_free(v);
}

static void test_equality(void) {
    /* zarr-python's indented, sorted form against netCDF-C's one-line form of the same .zarray. */
    const char *zarr_python = "{\n    \"chunks\": [\n        2,\n        2\n    ],\n    \"compressor\": null,\n"
                              "    \"dtype\": \"<i4\",\n    \"fill_value\": 0,\n    \"filters\": null,\n"
                              "    \"order\": \"C\",\n    \"shape\": [\n        3,\n        4\n    ],\n"
                              "    \"zarr_format\": 2\n}";
    const char *netcdf = "{\"zarr_format\": 2, \"shape\": [3,4], \"dtype\": \"<i4\", \"chunks\": [2,2], "
                         "\"fill_value\": 0, \"order\": \"C\", \"compressor\": null, \"filters\": null}";
    CHECK(equal_texts(zarr_python, netcdf));
    CHECK(equal_texts("{\"x\": [1, 2.0], \"y\": NaN}", "{\"y\": NaN, \"x\": [1.0, 2]}"));
    CHECK(equal_texts("{\"v\": 1.0}", "{\"v\": 1}"));
    CHECK(equal_texts("{\"v\": 1e2}", "{\"v\": 100}"));
    CHECK(equal_texts("[0]", "[-0]"));
    CHECK(equal_texts("[-0.0]", "[0]"));
    CHECK(equal_texts("[NaN]", "[NaN]"));
    CHECK(equal_texts("[1e400]", "[Infinity]"));
    CHECK(equal_texts("{\"a\":1,\"a\":2}", "{\"a\":2}")); /* the last duplicate wins */
    CHECK(equal_texts("\"\\u00e9\"", "\"\xc3\xa9\""));
    CHECK(!equal_texts("{\"v\": 9007199254740993}", "{\"v\": 9007199254740992}")); /* exact integers */
    CHECK(!equal_texts("[18446744073709551615]", "[18446744073709551614]"));
    CHECK(!equal_texts("[1]", "[-1]"));
    CHECK(!equal_texts("{\"v\": 1}", "{\"v\": \"1\"}"));
    CHECK(!equal_texts("[NaN]", "[\"NaN\"]"));
    CHECK(!equal_texts("[NaN]", "[0]"));
    CHECK(!equal_texts("{\"a\": 1}", "{\"a\": 1, \"b\": 2}"));
    CHECK(!equal_texts("{\"a\": 1, \"b\": 2}", "{\"a\": 1, \"c\": 2}"));
    CHECK(!equal_texts("[1, 2]", "[2, 1]"));
    CHECK(!equal_texts("[1]", "[1, 1]"));
    CHECK(!equal_texts("{\"dtype\": \"<i4\"}", "{\"dtype\": \">i4\"}"));
    CHECK(!equal_texts("\"a\\u0000b\"", "\"a\""));
    CHECK(!equal_texts("[null]", "[false]"));
    CHECK(!equal_texts("[true]", "[false]"));
    CHECK(!equal_texts("[[]]", "[{}]"));
    mzj_value *one = mzj_new_int(1);
    CHECK(!mzj_equal(one, NULL) && !mzj_equal(NULL, one) && mzj_equal(NULL, NULL));
    mzj_free(one);
}

static void test_merge(void) {
    mzj_value *base = parse("{\"units\": \"m\", \"_NCZARR_ATTR\": {\"types\": {\"units\": \"<U1\"}}, \"n\": 1}");
    mzj_value *overlay = parse("{\"_ARRAY_DIMENSIONS\": [\"x\"], \"_NCZARR_ATTR\": {}, \"n\": 2}");
    CHECK(mzj_merge(base, overlay) == 0);
    check_written(base, "{\"units\": \"m\", \"_NCZARR_ATTR\": {\"types\": {\"units\": \"<U1\"}}, \"n\": 2, "
                        "\"_ARRAY_DIMENSIONS\": [\"x\"]}");
    /* base holds copies: it outlives the overlay. */
    mzj_free(overlay);
    char *text = mzj_to_text(base, NULL);
    mzj_value *again = text ? parse(text) : NULL;
    CHECK(again && mzj_equal(again, base));
    free(text);
    mzj_free(again);
    mzj_free(base);

    /* Objects merge at every depth; anything else replaces, whichever side is the object. */
    base = parse("{\"a\": {\"b\": {\"c\": 1, \"d\": 2}, \"e\": 3}, \"f\": {\"g\": 4}, \"h\": 5}");
    overlay = parse("{\"a\": {\"b\": {\"d\": 20, \"i\": 6}}, \"f\": [7], \"h\": {\"j\": 8}}");
    CHECK(mzj_merge(base, overlay) == 0);
    check_written(base, "{\"a\": {\"b\": {\"c\": 1, \"d\": 20, \"i\": 6}, \"e\": 3}, \"f\": [7], \"h\": {\"j\": 8}}");
    mzj_free(base);
    mzj_free(overlay);

    /* Merging into or from a non-object is refused and changes nothing. */
    mzj_value *arr = parse("[1]"), *obj = parse("{\"a\": 1}");
    CHECK(mzj_merge(arr, obj) != 0);
    CHECK(mzj_merge(obj, arr) != 0);
    CHECK(mzj_merge(obj, NULL) != 0 && mzj_merge(NULL, obj) != 0);
    check_written(obj, "{\"a\": 1}");
    check_written(arr, "[1]");
    mzj_free(arr);
    mzj_free(obj);
}

static void test_build(void) {
    /* set replaces a member in place or appends it. */
    mzj_value *doc = parse("{\"a\": 1, \"b\": 2}"), *val = parse("[3]");
    CHECK(mzj_object_set(doc, "a", mzj_clone(val)) == 0 && mzj_object_set(doc, "c", mzj_clone(val)) == 0);
    check_written(doc, "{\"a\": [3], \"b\": 2, \"c\": [3]}");
    /* Refused: a target that is not an object (the value is freed), and a missing value (a failed clone). */
    CHECK(mzj_object_set(val, "x", mzj_clone(doc)) != 0);
    CHECK(mzj_object_set(doc, "d", NULL) != 0);
    CHECK(mzj_array_push(doc, mzj_new_null()) != 0);
    mzj_object_remove(doc, "b");
    mzj_object_remove(doc, "missing");
    check_written(doc, "{\"a\": [3], \"c\": [3]}");
    mzj_free(val);

    /* A clone is deep and independent of its source. */
    mzj_value *copy = mzj_clone(doc);
    CHECK(copy && mzj_equal(copy, doc));
    mzj_free(doc);
    check_written(copy, "{\"a\": [3], \"c\": [3]}");
    mzj_free(copy);

    /* Growth past the initial slots keeps order. */
    mzj_value *list = mzj_new_array(), *map = mzj_new_object();
    for (int i = 0; i < 40; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        CHECK(mzj_array_push(list, mzj_new_int(i)) == 0);
        CHECK(mzj_object_set(map, key, mzj_new_int(i)) == 0);
    }
    int64_t last = -1;
    CHECK(list->u.array.count == 40 && mzj_as_int64(list->u.array.items[39], &last) && last == 39);
    CHECK(map->u.object.count == 40 && mzj_as_int64(mzj_get(map, "k39"), &last) && last == 39);
    CHECK_STR(map->u.object.members[39].key, "k39");
    mzj_free(list);
    mzj_free(map);

    mzj_value *str = mzj_new_string("a\"\0b", 4);
    check_written(str, "\"a\\\"\\u0000b\"");
    mzj_free(str);
}

int main(void) {
    RUN(test_parse_values);
    RUN(test_parse_rejects);
    RUN(test_write);
    RUN(test_equality);
    RUN(test_merge);
    RUN(test_build);
    return ctest_result();
}

/*
 * test_json.c - the JSON model the plugin compares and merges Zarr metadata with: parsing (including what
 * zarr-python and netCDF-C write, and hostile input), meaning-based equality, deep merge, printing.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "nczarr_ctest.h"

static mzn_json *parse(const char *s) { return mzn_json_parse(s, strlen(s)); }

static int equal_texts(const char *a, const char *b) {
    mzn_json *x = parse(a), *y = parse(b);
    int eq = x && y && mzn_json_equal(x, y);
    mzn_json_free(x);
    mzn_json_free(y);
    return eq;
}

static void test_parse_values(void) {
    mzn_json *j = parse("{\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\u00e9\\n\\\"\", \"o\": {}}");
    CHECK(j && j->kind == MZN_JSON_OBJECT && j->count == 3);
    mzn_json *a = mzn_json_member(j, "a");
    CHECK(a && a->kind == MZN_JSON_ARRAY && a->count == 5);
    CHECK_STR(a->items[1]->text, "-2.5e3");
    CHECK(a->items[2]->kind == MZN_JSON_TRUE && a->items[4]->kind == MZN_JSON_NULL);
    mzn_json *s = mzn_json_member(j, "s");
    CHECK_STR(s->text, "x\xc3\xa9\n\"");
    CHECK_EQ_U64(s->text_len, 5);
    CHECK(mzn_json_member(j, "missing") == NULL);
    mzn_json_free(j);
    /* Surrogate pairs decode to one 4-byte UTF-8 sequence. */
    j = parse("\"\\ud83d\\ude00\"");
    CHECK(j && j->text_len == 4 && memcmp(j->text, "\xf0\x9f\x98\x80", 4) == 0);
    mzn_json_free(j);
    /* Python's json writes NaN and Infinity for float fill values. */
    j = parse("{\"fill_value\": NaN, \"b\": -Infinity}");
    CHECK(j && mzn_json_member(j, "fill_value")->kind == MZN_JSON_NUMBER);
    mzn_json_free(j);
}

static void test_parse_rejects(void) {
    static const char *const bad[] = {"", "{", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "tru", "\"abc", "01x",
                                      "\"\\q\"", "{} {}", "[1] x", "\"\\u12\"", "\"a\tb\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mzn_json *j = parse(bad[i]);
        if (j) fprintf(stderr, "accepted invalid JSON: %s\n", bad[i]);
        CHECK(j == NULL);
        mzn_json_free(j);
    }
    /* Nesting deep enough to exhaust a naive parser's stack is refused, not crashed on. */
    size_t n = 100000;
    char *deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    CHECK(parse(deep) == NULL);
    free(deep);
    /* A trailing NUL counted in the length (as some writers store it) is tolerated. */
    mzn_json *j = mzn_json_parse("{\"a\":1}\0", 8);
    CHECK(j != NULL);
    mzn_json_free(j);
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
    CHECK(equal_texts("{\"v\": 1.0}", "{\"v\": 1}"));
    CHECK(equal_texts("{\"v\": 1e2}", "{\"v\": 100}"));
    CHECK(equal_texts("[NaN]", "[NaN]"));
    CHECK(equal_texts("{\"a\":1,\"a\":2}", "{\"a\":2}")); /* the last duplicate wins */
    CHECK(!equal_texts("{\"v\": 9007199254740993}", "{\"v\": 9007199254740992}")); /* exact integers */
    CHECK(!equal_texts("{\"v\": 1}", "{\"v\": \"1\"}"));
    CHECK(!equal_texts("{\"a\": 1}", "{\"a\": 1, \"b\": 2}"));
    CHECK(!equal_texts("[1, 2]", "[2, 1]"));
    CHECK(!equal_texts("{\"dtype\": \"<i4\"}", "{\"dtype\": \">i4\"}"));
    CHECK(!equal_texts("[null]", "[false]"));
}

static void test_merge_and_print(void) {
    mzn_json *base = parse("{\"units\": \"m\", \"_NCZARR_ATTR\": {\"types\": {\"units\": \"<U1\"}}, \"n\": 1}");
    mzn_json *overlay = parse("{\"_ARRAY_DIMENSIONS\": [\"x\"], \"_NCZARR_ATTR\": {}, \"n\": 2}");
    CHECK(mzn_json_merge(base, overlay) == 0);
    size_t len;
    char *text = mzn_json_print(base, &len);
    CHECK_STR(text, "{\"units\": \"m\", \"_NCZARR_ATTR\": {\"types\": {\"units\": \"<U1\"}}, \"n\": 2, "
                    "\"_ARRAY_DIMENSIONS\": [\"x\"]}");
    CHECK_EQ_U64(len, strlen(text));
    /* What is printed parses back to the same document. */
    mzn_json *again = mzn_json_parse(text, len);
    CHECK(mzn_json_equal(again, base));
    free(text);
    mzn_json_free(again);
    mzn_json_free(base);
    mzn_json_free(overlay);
    /* Strings with quotes, backslashes and control bytes survive a print/parse round trip. */
    mzn_json *s = parse("[\"a\\\"b\\\\c\\u0001\\t\"]");
    text = mzn_json_print(s, NULL);
    mzn_json *back = parse(text);
    CHECK(mzn_json_equal(s, back));
    free(text);
    mzn_json_free(s);
    mzn_json_free(back);
    /* set replaces a member in place or appends it. */
    mzn_json *doc = parse("{\"a\": 1, \"b\": 2}"), *val = parse("[3]");
    CHECK(mzn_json_set(doc, "a", val) == 0 && mzn_json_set(doc, "c", val) == 0);
    text = mzn_json_print(doc, NULL);
    CHECK_STR(text, "{\"a\": [3], \"b\": 2, \"c\": [3]}");
    free(text);
    CHECK(mzn_json_set(val, "x", doc) != 0);
    mzn_json_free(doc);
    mzn_json_free(val);
    /* Merging into a non-object is refused. */
    mzn_json *arr = parse("[1]"), *obj = parse("{}");
    CHECK(mzn_json_merge(arr, obj) != 0);
    mzn_json_free(arr);
    mzn_json_free(obj);
}

int main(void) {
    RUN(test_parse_values);
    RUN(test_parse_rejects);
    RUN(test_equality);
    RUN(test_merge_and_print);
    return ctest_result();
}

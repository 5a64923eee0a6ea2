/* json.c - strict JSON parser and 4.9.0-safe writer (see json.h). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------------- */
/* Constructors and destruction                                                                          */

static mzj_value *new_value(mzj_kind kind) {
    mzj_value *v = calloc(1, sizeof *v);
    if (v) v->kind = kind;
    return v;
}

mzj_value *mzj_new_null(void) { return new_value(MZJ_NULL); }

mzj_value *mzj_new_bool(int b) {
    mzj_value *v = new_value(MZJ_BOOL);
    if (v) v->u.boolean = b ? 1 : 0;
    return v;
}

mzj_value *mzj_new_int(int64_t i) {
    mzj_value *v = new_value(MZJ_INT);
    if (!v) return NULL;
    v->u.integer.negative = i < 0;
    /* Negating INT64_MIN overflows; go through unsigned arithmetic. */
    v->u.integer.magnitude = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
    return v;
}

mzj_value *mzj_new_uint(uint64_t u) {
    mzj_value *v = new_value(MZJ_INT);
    if (v) v->u.integer.magnitude = u;
    return v;
}

mzj_value *mzj_new_real(double d) {
    mzj_value *v = new_value(MZJ_REAL);
    if (v) v->u.real.value = d;
    return v;
}

mzj_value *mzj_new_string(const char *s, size_t len) {
    mzj_value *v = new_value(MZJ_STRING);
    if (!v) return NULL;
    v->u.string.bytes = malloc(len + 1);
    if (!v->u.string.bytes) {
        free(v);
        return NULL;
    }
    if (len) memcpy(v->u.string.bytes, s, len);
    v->u.string.bytes[len] = '\0';
    v->u.string.len = len;
    return v;
}

mzj_value *mzj_new_cstring(const char *s) { return mzj_new_string(s, strlen(s)); }

mzj_value *mzj_new_array(void) { return new_value(MZJ_ARRAY); }

mzj_value *mzj_new_object(void) { return new_value(MZJ_OBJECT); }

void mzj_free(mzj_value *v) {
    if (!v) return;
    switch (v->kind) {
    case MZJ_REAL: free(v->u.real.text); break;
    case MZJ_STRING: free(v->u.string.bytes); break;
    case MZJ_ARRAY:
        for (size_t i = 0; i < v->u.array.count; i++) mzj_free(v->u.array.items[i]);
        free(v->u.array.items);
        break;
    case MZJ_OBJECT:
        for (size_t i = 0; i < v->u.object.count; i++) {
            free(v->u.object.members[i].key);
            mzj_free(v->u.object.members[i].value);
        }
        free(v->u.object.members);
        break;
    default: break;
    }
    free(v);
}

/* Arrays and objects carry no capacity field: they hold 4 slots, then double whenever the count reaches
 * a power of two, so that building a long list stays linear. */
static int needs_growth(size_t count) { return count == 0 || (count >= 4 && (count & (count - 1)) == 0); }

int mzj_array_push(mzj_value *array, mzj_value *item) {
    if (!item) return -1;
    if (!array || array->kind != MZJ_ARRAY) {
        mzj_free(item);
        return -1;
    }
    size_t n = array->u.array.count;
    if (needs_growth(n)) {
        size_t cap = n ? 2 * n : 4;
        mzj_value **items = realloc(array->u.array.items, cap * sizeof *items);
        if (!items) {
            mzj_free(item);
            return -1;
        }
        array->u.array.items = items;
    }
    array->u.array.items[n] = item;
    array->u.array.count = n + 1;
    return 0;
}

static mzj_member *find_member(const mzj_value *object, const char *key, size_t key_len) {
    if (!object || object->kind != MZJ_OBJECT) return NULL;
    for (size_t i = 0; i < object->u.object.count; i++) {
        mzj_member *m = &object->u.object.members[i];
        if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0) return m;
    }
    return NULL;
}

static int object_set_n(mzj_value *object, const char *key, size_t key_len, mzj_value *value) {
    if (!value) return -1;
    if (!object || object->kind != MZJ_OBJECT) {
        mzj_free(value);
        return -1;
    }
    mzj_member *m = find_member(object, key, key_len);
    if (m) {
        mzj_free(m->value);
        m->value = value;
        return 0;
    }
    size_t n = object->u.object.count;
    if (needs_growth(n)) {
        size_t cap = n ? 2 * n : 4;
        mzj_member *members = realloc(object->u.object.members, cap * sizeof *members);
        if (!members) {
            mzj_free(value);
            return -1;
        }
        object->u.object.members = members;
    }
    char *k = malloc(key_len + 1);
    if (!k) {
        mzj_free(value);
        return -1;
    }
    memcpy(k, key, key_len);
    k[key_len] = '\0';
    object->u.object.members[n] = (mzj_member){k, key_len, value};
    object->u.object.count = n + 1;
    return 0;
}

int mzj_object_set(mzj_value *object, const char *key, mzj_value *value) {
    return object_set_n(object, key, strlen(key), value);
}

void mzj_object_remove(mzj_value *object, const char *key) {
    mzj_member *m = find_member(object, key, strlen(key));
    if (!m) return;
    free(m->key);
    mzj_free(m->value);
    size_t idx = (size_t)(m - object->u.object.members);
    memmove(m, m + 1, (object->u.object.count - idx - 1) * sizeof *m);
    object->u.object.count--;
}

const mzj_value *mzj_get(const mzj_value *v, const char *key) {
    mzj_member *m = find_member(v, key, strlen(key));
    return m ? m->value : NULL;
}

mzj_value *mzj_clone(const mzj_value *v) {
    if (!v) return NULL;
    mzj_value *c = NULL;
    switch (v->kind) {
    case MZJ_NULL: return mzj_new_null();
    case MZJ_BOOL: return mzj_new_bool(v->u.boolean);
    case MZJ_INT:
        c = new_value(MZJ_INT);
        if (c) c->u.integer = v->u.integer;
        return c;
    case MZJ_REAL:
        c = mzj_new_real(v->u.real.value);
        if (c && v->u.real.text && !(c->u.real.text = strdup(v->u.real.text))) {
            mzj_free(c);
            return NULL;
        }
        return c;
    case MZJ_STRING: return mzj_new_string(v->u.string.bytes, v->u.string.len);
    case MZJ_ARRAY:
        c = mzj_new_array();
        for (size_t i = 0; c && i < v->u.array.count; i++) {
            if (mzj_array_push(c, mzj_clone(v->u.array.items[i])) != 0) {
                mzj_free(c);
                return NULL;
            }
        }
        return c;
    case MZJ_OBJECT:
        c = mzj_new_object();
        for (size_t i = 0; c && i < v->u.object.count; i++) {
            const mzj_member *m = &v->u.object.members[i];
            if (object_set_n(c, m->key, m->key_len, mzj_clone(m->value)) != 0) {
                mzj_free(c);
                return NULL;
            }
        }
        return c;
    }
    return NULL;
}

int mzj_merge(mzj_value *base, const mzj_value *overlay) {
    if (!base || !overlay || base->kind != MZJ_OBJECT || overlay->kind != MZJ_OBJECT) return -1;
    for (size_t i = 0; i < overlay->u.object.count; i++) {
        const mzj_member *m = &overlay->u.object.members[i];
        mzj_member *mine = find_member(base, m->key, m->key_len);
        if (mine && mine->value->kind == MZJ_OBJECT && m->value->kind == MZJ_OBJECT) {
            if (mzj_merge(mine->value, m->value) != 0) return -1;
        } else if (object_set_n(base, m->key, m->key_len, mzj_clone(m->value)) != 0) {
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Accessors                                                                                              */

int mzj_as_int64(const mzj_value *v, int64_t *out) {
    if (!v || v->kind != MZJ_INT) return 0;
    uint64_t m = v->u.integer.magnitude;
    if (v->u.integer.negative) {
        if (m > (uint64_t)INT64_MAX + 1) return 0;
        *out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    } else {
        if (m > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)m;
    }
    return 1;
}

int mzj_as_uint64(const mzj_value *v, uint64_t *out) {
    if (!v || v->kind != MZJ_INT || (v->u.integer.negative && v->u.integer.magnitude != 0)) return 0;
    *out = v->u.integer.magnitude;
    return 1;
}

int mzj_as_double(const mzj_value *v, double *out) {
    if (!v) return 0;
    switch (v->kind) {
    case MZJ_INT:
        *out = v->u.integer.negative ? -(double)v->u.integer.magnitude : (double)v->u.integer.magnitude;
        return 1;
    case MZJ_REAL: *out = v->u.real.value; return 1;
    case MZJ_STRING:
        /* zarr-python writes non-finite fill values as these strings. */
        if (strcmp(v->u.string.bytes, "NaN") == 0) *out = NAN;
        else if (strcmp(v->u.string.bytes, "Infinity") == 0) *out = INFINITY;
        else if (strcmp(v->u.string.bytes, "-Infinity") == 0) *out = -INFINITY;
        else return 0;
        return 1;
    default: return 0;
    }
}

const char *mzj_string(const mzj_value *v) { return v && v->kind == MZJ_STRING ? v->u.string.bytes : NULL; }

static int numbers_equal(const mzj_value *a, const mzj_value *b) {
    if (a->kind == MZJ_INT && b->kind == MZJ_INT)
        return a->u.integer.magnitude == b->u.integer.magnitude &&
               (a->u.integer.negative == b->u.integer.negative || a->u.integer.magnitude == 0);
    double x, y;
    mzj_as_double(a, &x);
    mzj_as_double(b, &y);
    if (isnan(x) && isnan(y)) return 1;
    return x == y;
}

int mzj_equal(const mzj_value *a, const mzj_value *b) {
    if (!a || !b) return a == b;
    int a_num = a->kind == MZJ_INT || a->kind == MZJ_REAL;
    int b_num = b->kind == MZJ_INT || b->kind == MZJ_REAL;
    if (a_num && b_num) return numbers_equal(a, b);
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case MZJ_NULL: return 1;
    case MZJ_BOOL: return a->u.boolean == b->u.boolean;
    case MZJ_STRING:
        return a->u.string.len == b->u.string.len && memcmp(a->u.string.bytes, b->u.string.bytes, a->u.string.len) == 0;
    case MZJ_ARRAY:
        if (a->u.array.count != b->u.array.count) return 0;
        for (size_t i = 0; i < a->u.array.count; i++)
            if (!mzj_equal(a->u.array.items[i], b->u.array.items[i])) return 0;
        return 1;
    case MZJ_OBJECT:
        if (a->u.object.count != b->u.object.count) return 0;
        for (size_t i = 0; i < a->u.object.count; i++) {
            const mzj_member *m = &a->u.object.members[i];
            const mzj_member *o = find_member(b, m->key, m->key_len);
            if (!o || !mzj_equal(m->value, o->value)) return 0;
        }
        return 1;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------------------------------------- */
/* Parser                                                                                                 */

typedef struct parser {
    const unsigned char *p, *end, *start;
    char *err;
    size_t err_len;
    int failed;
} parser;

static void fail(parser *ps, const char *fmt, ...) {
    if (ps->failed) return;
    ps->failed = 1;
    if (!ps->err || !ps->err_len) return;
    int n = snprintf(ps->err, ps->err_len, "JSON error at byte %zu: ", (size_t)(ps->p - ps->start));
    if (n < 0 || (size_t)n >= ps->err_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->err_len - (size_t)n, fmt, ap);
    va_end(ap);
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

/* Appends the UTF-8 encoding of code point cp. */
static size_t put_utf8(unsigned char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid (overlong, surrogate, > U+10FFFF). */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static int hex4(parser *ps, uint32_t *out) {
    if (ps->end - ps->p < 4) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = ps->p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    ps->p += 4;
    *out = v;
    return 1;
}

/* Parses a string after its opening quote into a fresh buffer. */
static char *parse_string_body(parser *ps, size_t *len_out) {
    /* The decoded form is never longer than the source: escapes shrink, UTF-8 is copied. */
    const unsigned char *close = ps->p;
    while (close < ps->end && *close != '"') close += (*close == '\\' && close + 1 < ps->end) ? 2 : 1;
    size_t cap = (size_t)(close - ps->p) + 1;
    unsigned char *out = malloc(cap);
    size_t n = 0;
    if (!out) {
        fail(ps, "out of memory");
        return NULL;
    }
    for (;;) {
        if (ps->p >= ps->end) {
            fail(ps, "unterminated string");
            break;
        }
        unsigned char c = *ps->p;
        if (c == '"') {
            ps->p++;
            out[n] = '\0';
            *len_out = n;
            return (char *)out;
        }
        if (c == 0) {
            fail(ps, "NUL character in a string");
            break;
        }
        /* Other control characters raw in a string are not JSON, but netCDF-C 4.9.0 writes them so (its
         * escape() leaves them) and reads them back; Python's json.loads(strict=False) reads them too. Taken
         * as the characters, so that metadata netCDF-C wrote is stored again as JSON with \u00XX escapes
         * (mzj_to_ascii_text), which zarr-python reads: refused, it was stored as netCDF-C wrote it, which
         * nothing but netCDF-C could read again (an outside review). */
        if (c == '\\') {
            ps->p++;
            if (ps->p >= ps->end) {
                fail(ps, "unterminated escape");
                break;
            }
            c = *ps->p++;
            switch (c) {
            case '"': out[n++] = '"'; continue;
            case '\\': out[n++] = '\\'; continue;
            case '/': out[n++] = '/'; continue;
            case 'b': out[n++] = '\b'; continue;
            case 'f': out[n++] = '\f'; continue;
            case 'n': out[n++] = '\n'; continue;
            case 'r': out[n++] = '\r'; continue;
            case 't': out[n++] = '\t'; continue;
            case 'u': {
                uint32_t cp, lo;
                if (!hex4(ps, &cp)) {
                    fail(ps, "bad \\u escape");
                    goto error;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (!(ps->end - ps->p >= 2 && ps->p[0] == '\\' && ps->p[1] == 'u')) {
                        fail(ps, "unpaired surrogate \\u%04X", cp);
                        goto error;
                    }
                    ps->p += 2;
                    if (!hex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        fail(ps, "bad low surrogate after \\u%04X", cp);
                        goto error;
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    fail(ps, "unpaired surrogate \\u%04X", cp);
                    goto error;
                }
                /* A 6-byte escape decodes to at most 4 bytes and a 12-byte pair to 4: it fits. */
                n += put_utf8(out + n, cp);
                continue;
            }
            default: fail(ps, "bad escape \\%c", c); goto error;
            }
        }
        size_t seq = utf8_sequence(ps->p, ps->end);
        if (!seq) {
            fail(ps, "invalid UTF-8 in a string");
            break;
        }
        memcpy(out + n, ps->p, seq);
        n += seq;
        ps->p += seq;
    }
error:
    free(out);
    return NULL;
}

static mzj_value *parse_number(parser *ps) {
    const unsigned char *s = ps->p;
    int negative = 0, is_int = 1;
    if (ps->p < ps->end && *ps->p == '-') negative = 1, ps->p++;
    if (literal(ps, "Infinity")) {
        mzj_value *v = mzj_new_real(negative ? -INFINITY : INFINITY);
        if (v && !(v->u.real.text = strdup(negative ? "-Infinity" : "Infinity"))) mzj_free(v), v = NULL;
        return v;
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
        fail(ps, "bad number");
        return NULL;
    }
    if (*ps->p == '0') {
        ps->p++;
        if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            fail(ps, "leading zero in a number");
            return NULL;
        }
    } else {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && *ps->p == '.') {
        is_int = 0;
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
            fail(ps, "no digits after the decimal point");
            return NULL;
        }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        is_int = 0;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
            fail(ps, "no digits in the exponent");
            return NULL;
        }
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    size_t n = (size_t)(ps->p - s);
    char text[512];
    if (n >= sizeof text) {
        fail(ps, "number too long");
        return NULL;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    if (is_int) {
        errno = 0;
        unsigned long long m = strtoull(text + negative, NULL, 10);
        if (errno == 0) {
            mzj_value *v = new_value(MZJ_INT);
            if (v) v->u.integer.negative = negative, v->u.integer.magnitude = m;
            return v;
        }
        /* Beyond 64 bits: keep it as a double with its exact text. */
    }
    mzj_value *v = mzj_new_real(strtod(text, NULL));
    if (v && !(v->u.real.text = strdup(text))) mzj_free(v), v = NULL;
    return v;
}

static mzj_value *parse_value(parser *ps, int depth);

static mzj_value *parse_array(parser *ps, int depth) {
    mzj_value *a = mzj_new_array();
    if (!a) return fail(ps, "out of memory"), NULL;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return a;
    }
    for (;;) {
        mzj_value *item = parse_value(ps, depth + 1);
        if (!item || mzj_array_push(a, item) != 0) {
            if (item) fail(ps, "out of memory");
            break;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return a;
        }
        fail(ps, "expected ',' or ']' in an array");
        break;
    }
    mzj_free(a);
    return NULL;
}

static mzj_value *parse_object(parser *ps, int depth) {
    mzj_value *o = mzj_new_object();
    if (!o) return fail(ps, "out of memory"), NULL;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return o;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            fail(ps, "expected a string key in an object");
            break;
        }
        ps->p++;
        size_t klen;
        char *key = parse_string_body(ps, &klen);
        if (!key) break;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            free(key);
            fail(ps, "expected ':' after an object key");
            break;
        }
        ps->p++;
        mzj_value *value = parse_value(ps, depth + 1);
        if (!value) {
            free(key);
            break;
        }
        /* Python's json keeps the last of repeated keys; so do we. */
        int rc = object_set_n(o, key, klen, value);
        free(key);
        if (rc != 0) {
            fail(ps, "out of memory");
            break;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return o;
        }
        fail(ps, "expected ',' or '}' in an object");
        break;
    }
    mzj_free(o);
    return NULL;
}

static mzj_value *parse_value(parser *ps, int depth) {
    if (depth > MZJ_MAX_DEPTH) {
        fail(ps, "nesting deeper than %d", MZJ_MAX_DEPTH);
        return NULL;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of text");
        return NULL;
    }
    unsigned char c = *ps->p;
    mzj_value *v = NULL;
    switch (c) {
    case '{': ps->p++; return parse_object(ps, depth);
    case '[': ps->p++; return parse_array(ps, depth);
    case '"': {
        ps->p++;
        size_t len;
        char *s = parse_string_body(ps, &len);
        if (!s) return NULL;
        v = new_value(MZJ_STRING);
        if (!v) {
            free(s);
            fail(ps, "out of memory");
            return NULL;
        }
        v->u.string.bytes = s;
        v->u.string.len = len;
        return v;
    }
    case 't':
        if (literal(ps, "true")) v = mzj_new_bool(1);
        break;
    case 'f':
        if (literal(ps, "false")) v = mzj_new_bool(0);
        break;
    case 'n':
        if (literal(ps, "null")) v = mzj_new_null();
        break;
    case 'N':
        if (literal(ps, "NaN")) {
            v = mzj_new_real(NAN);
            if (v && !(v->u.real.text = strdup("NaN"))) mzj_free(v), v = NULL;
        }
        break;
    case 'I':
    case '-':
    default:
        if (c == '-' || c == 'I' || (c >= '0' && c <= '9')) return parse_number(ps);
        break;
    }
    if (!v && !ps->failed) fail(ps, "unexpected character '%c'", c >= 0x20 && c < 0x7f ? c : '?');
    return v;
}

int mzj_parse(const char *text, size_t len, mzj_value **out, char *err, size_t err_len) {
    /* NULL + 0 is undefined behaviour; an empty buffer may come as NULL. */
    if (!text) text = "", len = 0;
    parser ps = {(const unsigned char *)text, (const unsigned char *)text + len, (const unsigned char *)text,
                 err, err_len, 0};
    if (err && err_len) err[0] = '\0';
    *out = NULL;
    /* A UTF-8 byte order mark is not JSON, but some writers emit it; tolerate exactly that. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ps.p += 3;
    mzj_value *v = parse_value(&ps, 0);
    if (v) {
        skip_ws(&ps);
        while (ps.p < ps.end && *ps.p == '\0') ps.p++;
        if (ps.p != ps.end) {
            fail(&ps, "trailing characters after the JSON value");
            mzj_free(v);
            return -1;
        }
        *out = v;
        return 0;
    }
    if (!ps.failed) fail(&ps, "invalid JSON");
    return -1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Writer                                                                                                 */

void mzj_buf_init(mzj_buf *b) { memset(b, 0, sizeof *b); }

void mzj_buf_free(mzj_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

void mzj_buf_append(mzj_buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void mzj_buf_puts(mzj_buf *b, const char *s) { mzj_buf_append(b, s, strlen(s)); }

/* Appends "\uXXXX" for one UTF-16 code unit. */
static void write_u16_escape(mzj_buf *b, unsigned unit) {
    char hex[8];
    snprintf(hex, sizeof hex, "\\u%04x", unit & 0xffffu);
    mzj_buf_puts(b, hex);
}

/* The forms of write_string: JSON as Python writes it by default (ASCII, \uXXXX escapes), as it is (UTF-8
 * raw), and for netCDF-C's parser (4.9.0's ncjson), which decodes only \b \f \n \r \t \" \\ and turns any
 * other escape into its letter ("\u0001" into "u0001"): control characters raw there (its string scanner
 * takes any byte up to the closing quote), and a NUL ends the string, as it would in netCDF. */
enum { FORM_RAW = 0, FORM_ASCII = 1, FORM_NETCDF = 2 };

/* ascii: FORM_ASCII escapes every non-ASCII character as \uXXXX (a surrogate pair beyond the BMP), as Python's
 * json module does by default. Invalid UTF-8 (never in parsed strings, but a constructed string may hold an
 * archive's raw bytes) is escaped byte by byte as U+FFFD in both forms, so that printed text always parses. */
static void write_string(mzj_buf *b, const char *s, size_t len, int ascii) {
    if (ascii == FORM_NETCDF) {
        const char *nul = memchr(s, '\0', len);
        if (nul) len = (size_t)(nul - s);
    }
    mzj_buf_append(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        if (c >= 0x80) {
            size_t n = utf8_sequence((const unsigned char *)s + i, (const unsigned char *)s + len);
            if (ascii != FORM_ASCII && n) { /* valid UTF-8 is written as it is */
                i += n - 1;
                continue;
            }
            mzj_buf_append(b, s + run, i - run);
            uint32_t cp = 0xfffd;
            if (n == 2) cp = (uint32_t)(c & 0x1f) << 6 | (s[i + 1] & 0x3f);
            else if (n == 3) cp = (uint32_t)(c & 0x0f) << 12 | (uint32_t)(s[i + 1] & 0x3f) << 6 | (s[i + 2] & 0x3f);
            else if (n == 4)
                cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3f) << 12 |
                     (uint32_t)(s[i + 2] & 0x3f) << 6 | (s[i + 3] & 0x3f);
            if (n == 0) n = 1;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                write_u16_escape(b, 0xd800 + (cp >> 10));
                write_u16_escape(b, 0xdc00 + (cp & 0x3ff));
            } else {
                write_u16_escape(b, cp);
            }
            i += n - 1;
            run = i + 1;
            continue;
        }
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20 && ascii != FORM_NETCDF) {
                snprintf(hex, sizeof hex, "\\u%04x", c);
                esc = hex;
            }
            break;
        }
        if (!esc) continue;
        mzj_buf_append(b, s + run, i - run);
        mzj_buf_puts(b, esc);
        run = i + 1;
    }
    mzj_buf_append(b, s + run, len - run);
    mzj_buf_append(b, "\"", 1);
}

static void write_real(mzj_buf *b, const mzj_value *v) {
    /* The source text first: 1e400 stays 1e400, not the Infinity it reads as. */
    if (v->u.real.text) {
        mzj_buf_puts(b, v->u.real.text);
        return;
    }
    double d = v->u.real.value;
    if (isnan(d)) {
        mzj_buf_puts(b, "NaN");
        return;
    }
    if (isinf(d)) {
        mzj_buf_puts(b, d < 0 ? "-Infinity" : "Infinity");
        return;
    }
    char num[64];
    snprintf(num, sizeof num, "%.17g", d);
    /* Keep it a JSON real: "1" would read back as an integer. */
    if (!strpbrk(num, ".eEn")) strncat(num, ".0", sizeof num - strlen(num) - 1);
    mzj_buf_puts(b, num);
}

static void write_value(mzj_buf *b, const mzj_value *v, int ascii) {
    char num[32];
    switch (v->kind) {
    case MZJ_NULL: mzj_buf_puts(b, "null"); break;
    case MZJ_BOOL: mzj_buf_puts(b, v->u.boolean ? "true" : "false"); break;
    case MZJ_INT:
        snprintf(num, sizeof num, "%s%llu", v->u.integer.negative && v->u.integer.magnitude ? "-" : "",
                 (unsigned long long)v->u.integer.magnitude);
        mzj_buf_puts(b, num);
        break;
    case MZJ_REAL: write_real(b, v); break;
    case MZJ_STRING: write_string(b, v->u.string.bytes, v->u.string.len, ascii); break;
    case MZJ_ARRAY:
        mzj_buf_puts(b, "[");
        for (size_t i = 0; i < v->u.array.count; i++) {
            if (i) mzj_buf_puts(b, ", ");
            write_value(b, v->u.array.items[i], ascii);
        }
        mzj_buf_puts(b, "]");
        break;
    case MZJ_OBJECT:
        mzj_buf_puts(b, "{");
        for (size_t i = 0; i < v->u.object.count; i++) {
            if (i) mzj_buf_puts(b, ", ");
            write_string(b, v->u.object.members[i].key, v->u.object.members[i].key_len, ascii);
            mzj_buf_puts(b, ": ");
            write_value(b, v->u.object.members[i].value, ascii);
        }
        mzj_buf_puts(b, "}");
        break;
    }
}

void mzj_write(mzj_buf *b, const mzj_value *v) { write_value(b, v, 0); }

static char *to_text(const mzj_value *v, size_t *len, int ascii) {
    mzj_buf b;
    mzj_buf_init(&b);
    write_value(&b, v, ascii);
    if (b.failed || !b.data) {
        mzj_buf_free(&b);
        return NULL;
    }
    if (len) *len = b.len;
    return b.data;
}

char *mzj_to_text(const mzj_value *v, size_t *len) { return to_text(v, len, 0); }

int mzj_valid_utf8(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t n = utf8_sequence(p, end);
        if (!n) return 0;
        p += n;
    }
    return 1;
}

char *mzj_to_ascii_text(const mzj_value *v, size_t *len) { return to_text(v, len, FORM_ASCII); }

char *mzj_to_netcdf_text(const mzj_value *v, size_t *len) { return to_text(v, len, FORM_NETCDF); }

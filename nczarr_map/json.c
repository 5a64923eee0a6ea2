/* json.c - recursive-descent JSON parser, semantic comparison, deep merge and printer. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256

typedef struct parser {
    const char *p;
    const char *end;
} parser;

static void skip_space(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static mzn_json *new_node(mzn_json_kind kind) {
    mzn_json *j = calloc(1, sizeof *j);
    if (j) j->kind = kind;
    return j;
}

void mzn_json_free(mzn_json *j) {
    if (!j) return;
    for (size_t i = 0; i < j->count; i++) {
        mzn_json_free(j->items[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    free(j->text);
    free(j);
}

/* Appends a member (key may be NULL for arrays); takes ownership of key and value. */
static int push_item(mzn_json *j, char *key, mzn_json *value) {
    if ((j->count & (j->count - 1)) == 0) { /* grow at powers of two */
        size_t cap = j->count ? j->count * 2 : 4;
        mzn_json **items = realloc(j->items, cap * sizeof *items);
        if (!items) return -1;
        j->items = items;
        if (j->kind == MZN_JSON_OBJECT) {
            char **keys = realloc(j->keys, cap * sizeof *keys);
            if (!keys) return -1;
            j->keys = keys;
        }
    }
    if (j->kind == MZN_JSON_OBJECT) j->keys[j->count] = key;
    j->items[j->count++] = value;
    return 0;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(parser *ps, unsigned *out) {
    if (ps->end - ps->p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_value(ps->p[i]);
        if (h < 0) return -1;
        v = v * 16 + (unsigned)h;
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string literal at ps->p (the opening quote); returns the decoded bytes. */
static char *parse_string(parser *ps, size_t *len_out) {
    ps->p++; /* opening quote */
    const char *start = ps->p;
    /* Find the closing quote first: the decoded form is never longer than the escaped source. */
    while (ps->p < ps->end && *ps->p != '"') ps->p += *ps->p == '\\' ? 2 : 1;
    if (ps->p >= ps->end) return NULL;
    size_t cap = (size_t)(ps->p - start) + 1;
    ps->p = start;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t n = 0;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) goto bad;
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        char e = *ps->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (read_hex4(ps, &cp)) goto bad;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                parser look = {ps->p + 2, ps->end};
                unsigned lo;
                if (read_hex4(&look, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p = look.p;
                }
            }
            /* "\uXXXX" is 6 source bytes and at most 4 decoded ones, so the buffer is large enough. */
            n += put_utf8(out + n, cp);
            break;
        }
        default: goto bad;
        }
    }
    ps->p++; /* closing quote */
    out[n] = '\0';
    *len_out = n;
    return out;
bad:
    free(out);
    return NULL;
}

static int is_number_char(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static mzn_json *parse_value(parser *ps, int depth);

static mzn_json *parse_number(parser *ps) {
    const char *start = ps->p;
    static const char *const specials[] = {"NaN", "Infinity", "-Infinity"};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        size_t l = strlen(specials[i]);
        if ((size_t)(ps->end - ps->p) >= l && memcmp(ps->p, specials[i], l) == 0) {
            ps->p += l;
            goto make;
        }
    }
    while (ps->p < ps->end && is_number_char(*ps->p)) ps->p++;
    {
        /* Validate with strtod on a bounded copy: the token must be consumed entirely. */
        size_t l = (size_t)(ps->p - start);
        char buf[128];
        if (l == 0 || l >= sizeof buf) return NULL;
        memcpy(buf, start, l);
        buf[l] = '\0';
        char *endp;
        (void)strtod(buf, &endp);
        if (*endp) return NULL;
    }
make:;
    mzn_json *j = new_node(MZN_JSON_NUMBER);
    if (!j) return NULL;
    j->text_len = (size_t)(ps->p - start);
    j->text = malloc(j->text_len + 1);
    if (!j->text) {
        free(j);
        return NULL;
    }
    memcpy(j->text, start, j->text_len);
    j->text[j->text_len] = '\0';
    return j;
}

static mzn_json *parse_container(parser *ps, int depth, int object) {
    mzn_json *j = new_node(object ? MZN_JSON_OBJECT : MZN_JSON_ARRAY);
    if (!j) return NULL;
    char close = object ? '}' : ']';
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return j;
    }
    for (;;) {
        char *key = NULL;
        skip_space(ps);
        if (object) {
            size_t klen;
            if (ps->p >= ps->end || *ps->p != '"' || !(key = parse_string(ps, &klen))) goto bad;
            skip_space(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                goto bad;
            }
            ps->p++;
        }
        mzn_json *v = parse_value(ps, depth + 1);
        if (!v || push_item(j, key, v) != 0) {
            free(key);
            mzn_json_free(v);
            goto bad;
        }
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return j;
        }
        goto bad;
    }
bad:
    mzn_json_free(j);
    return NULL;
}

static int match_word(parser *ps, const char *w) {
    size_t l = strlen(w);
    if ((size_t)(ps->end - ps->p) < l || memcmp(ps->p, w, l) != 0) return 0;
    ps->p += l;
    return 1;
}

static mzn_json *parse_value(parser *ps, int depth) {
    if (depth > MAX_DEPTH) return NULL;
    skip_space(ps);
    if (ps->p >= ps->end) return NULL;
    char c = *ps->p;
    if (c == '{') return parse_container(ps, depth, 1);
    if (c == '[') return parse_container(ps, depth, 0);
    if (c == '"') {
        size_t len;
        char *s = parse_string(ps, &len);
        if (!s) return NULL;
        mzn_json *j = new_node(MZN_JSON_STRING);
        if (!j) {
            free(s);
            return NULL;
        }
        j->text = s;
        j->text_len = len;
        return j;
    }
    if (match_word(ps, "null")) return new_node(MZN_JSON_NULL);
    if (match_word(ps, "true")) return new_node(MZN_JSON_TRUE);
    if (match_word(ps, "false")) return new_node(MZN_JSON_FALSE);
    return parse_number(ps);
}

mzn_json *mzn_json_parse(const char *text, size_t len) {
    if (!text) return NULL;
    parser ps = {text, text + len};
    mzn_json *j = parse_value(&ps, 0);
    if (!j) return NULL;
    skip_space(&ps);
    /* A NUL terminator counted in len is tolerated, nothing else after the value. */
    while (ps.p < ps.end && *ps.p == '\0') ps.p++;
    if (ps.p != ps.end) {
        mzn_json_free(j);
        return NULL;
    }
    return j;
}

mzn_json *mzn_json_copy(const mzn_json *j) {
    if (!j) return NULL;
    mzn_json *c = new_node(j->kind);
    if (!c) return NULL;
    if (j->text) {
        c->text = malloc(j->text_len + 1);
        if (!c->text) goto bad;
        memcpy(c->text, j->text, j->text_len + 1);
        c->text_len = j->text_len;
    }
    for (size_t i = 0; i < j->count; i++) {
        char *key = NULL;
        if (j->kind == MZN_JSON_OBJECT && !(key = strdup(j->keys[i]))) goto bad;
        mzn_json *v = mzn_json_copy(j->items[i]);
        if (!v || push_item(c, key, v) != 0) {
            free(key);
            mzn_json_free(v);
            goto bad;
        }
    }
    return c;
bad:
    mzn_json_free(c);
    return NULL;
}

mzn_json *mzn_json_member(const mzn_json *object, const char *name) {
    if (!object || object->kind != MZN_JSON_OBJECT) return NULL;
    for (size_t i = object->count; i-- > 0;)
        if (strcmp(object->keys[i], name) == 0) return object->items[i];
    return NULL;
}

static int is_integer_literal(const char *s) {
    if (*s == '-') s++;
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int numbers_equal(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return 1;
    if (is_integer_literal(a) && is_integer_literal(b)) {
        /* Exact for the whole int64/uint64 range, where doubles would round. */
        if ((*a == '-') != (*b == '-')) return strtod(a, NULL) == 0 && strtod(b, NULL) == 0;
        errno = 0;
        unsigned long long x = strtoull(a + (*a == '-'), NULL, 10);
        unsigned long long y = strtoull(b + (*b == '-'), NULL, 10);
        if (errno == 0) return x == y;
    }
    double x = strtod(a, NULL), y = strtod(b, NULL);
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    return x == y;
}

int mzn_json_equal(const mzn_json *a, const mzn_json *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case MZN_JSON_NULL:
    case MZN_JSON_TRUE:
    case MZN_JSON_FALSE: return 1;
    case MZN_JSON_NUMBER: return numbers_equal(a->text, b->text);
    case MZN_JSON_STRING: return a->text_len == b->text_len && memcmp(a->text, b->text, a->text_len) == 0;
    case MZN_JSON_ARRAY:
        if (a->count != b->count) return 0;
        for (size_t i = 0; i < a->count; i++)
            if (!mzn_json_equal(a->items[i], b->items[i])) return 0;
        return 1;
    case MZN_JSON_OBJECT: {
        /* Same names (last occurrence wins on both sides) with equal values. */
        size_t distinct_a = 0, distinct_b = 0;
        for (size_t i = 0; i < a->count; i++) {
            if (mzn_json_member(a, a->keys[i]) != a->items[i]) continue; /* an earlier duplicate */
            distinct_a++;
            if (!mzn_json_equal(a->items[i], mzn_json_member(b, a->keys[i]))) return 0;
        }
        for (size_t i = 0; i < b->count; i++)
            if (mzn_json_member(b, b->keys[i]) == b->items[i]) distinct_b++;
        return distinct_a == distinct_b;
    }
    }
    return 0;
}

int mzn_json_set(mzn_json *object, const char *name, const mzn_json *value) {
    if (!object || object->kind != MZN_JSON_OBJECT) return -1;
    mzn_json *copy = mzn_json_copy(value);
    if (!copy) return -1;
    for (size_t k = object->count; k-- > 0;)
        if (strcmp(object->keys[k], name) == 0) {
            mzn_json_free(object->items[k]);
            object->items[k] = copy;
            return 0;
        }
    char *key = strdup(name);
    if (!key || push_item(object, key, copy) != 0) {
        free(key);
        mzn_json_free(copy);
        return -1;
    }
    return 0;
}

int mzn_json_merge(mzn_json *base, const mzn_json *overlay) {
    if (!base || !overlay || base->kind != MZN_JSON_OBJECT || overlay->kind != MZN_JSON_OBJECT) return -1;
    for (size_t i = 0; i < overlay->count; i++) {
        const char *name = overlay->keys[i];
        const mzn_json *v = overlay->items[i];
        mzn_json *mine = mzn_json_member(base, name);
        if (mine && mine->kind == MZN_JSON_OBJECT && v->kind == MZN_JSON_OBJECT) {
            if (mzn_json_merge(mine, v) != 0) return -1;
            continue;
        }
        if (mzn_json_set(base, name, v) != 0) return -1;
    }
    return 0;
}

typedef struct outbuf {
    char *p;
    size_t len, cap;
    int failed;
} outbuf;

static void out_bytes(outbuf *o, const char *s, size_t n) {
    if (o->failed) return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (o->len + n + 1 > cap) cap *= 2;
        char *p = realloc(o->p, cap);
        if (!p) {
            o->failed = 1;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void out_str(outbuf *o, const char *s) { out_bytes(o, s, strlen(s)); }

static void out_quoted(outbuf *o, const char *s, size_t n) {
    out_bytes(o, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\n') esc = "\\n";
        else if (c == '\t') esc = "\\t";
        else if (c == '\r') esc = "\\r";
        else if (c < 0x20) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        }
        if (!esc) {
            run++;
            continue;
        }
        out_bytes(o, s + i - run, run);
        run = 0;
        out_str(o, esc);
    }
    out_bytes(o, s + n - run, run);
    out_bytes(o, "\"", 1);
}

static void print_value(outbuf *o, const mzn_json *j) {
    switch (j->kind) {
    case MZN_JSON_NULL: out_str(o, "null"); break;
    case MZN_JSON_TRUE: out_str(o, "true"); break;
    case MZN_JSON_FALSE: out_str(o, "false"); break;
    case MZN_JSON_NUMBER: out_bytes(o, j->text, j->text_len); break;
    case MZN_JSON_STRING: out_quoted(o, j->text, j->text_len); break;
    case MZN_JSON_ARRAY:
        out_str(o, "[");
        for (size_t i = 0; i < j->count; i++) {
            if (i) out_str(o, ",");
            print_value(o, j->items[i]);
        }
        out_str(o, "]");
        break;
    case MZN_JSON_OBJECT:
        out_str(o, "{");
        for (size_t i = 0; i < j->count; i++) {
            if (i) out_str(o, ", ");
            out_quoted(o, j->keys[i], strlen(j->keys[i]));
            out_str(o, ": ");
            print_value(o, j->items[i]);
        }
        out_str(o, "}");
        break;
    }
}

char *mzn_json_print(const mzn_json *j, size_t *len) {
    outbuf o = {NULL, 0, 0, 0};
    print_value(&o, j);
    if (o.failed || !o.p) {
        free(o.p);
        return NULL;
    }
    if (len) *len = o.len;
    return o.p;
}
